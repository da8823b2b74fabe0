//! The data files of a backup: one column family's keys and values in key order, split
//! into files of at most [`FILE_LIMIT`] bytes, each with its SHA-256 in the manifest.
//!
//! ```text
//! file:   magic "RILLKV1\n" | records
//! record: u32 key length | key | u32 value length | value      (little endian)
//! ```

use std::io::{BufReader, Read};

use ring::digest::{Context, SHA256};

use super::store::{BackupStore, FileEntry, FileSink};

const MAGIC: &[u8; 8] = b"RILLKV1\n";

/// A data file is closed once it holds this much (and a new one begun).
pub(super) const FILE_LIMIT: u64 = 64 << 20;

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes one column family's entries into `<prefix>-<n>.kv` files of a part.
pub(super) struct KvWriter<'a> {
    store: &'a dyn BackupStore,
    backup_id: u64,
    partition: u16,
    prefix: String,
    limit: u64,
    open: Option<OpenFile>,
    next_number: u32,
    written: Vec<FileEntry>,
}

struct OpenFile {
    name: String,
    sink: Box<dyn FileSink>,
    /// Written to the sink in pieces of about this size.
    buffer: Vec<u8>,
    digest: Context,
    size: u64,
}

/// How much a data file buffers before it hands bytes to the store.
const WRITE_BUFFER: usize = 1 << 20;

impl OpenFile {
    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.digest.update(bytes);
        self.size += bytes.len() as u64;
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= WRITE_BUFFER {
            self.sink.write(&self.buffer)?;
            self.buffer.clear();
        }
        Ok(())
    }
}

impl<'a> KvWriter<'a> {
    pub(super) fn new(
        store: &'a dyn BackupStore,
        backup_id: u64,
        partition: u16,
        prefix: &str,
        limit: u64,
    ) -> KvWriter<'a> {
        KvWriter {
            store,
            backup_id,
            partition,
            prefix: prefix.to_owned(),
            limit,
            open: None,
            next_number: 0,
            written: Vec::new(),
        }
    }

    pub(super) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        if self.open.as_ref().is_some_and(|f| f.size >= self.limit) {
            self.close()?;
        }
        if self.open.is_none() {
            self.begin()?;
        }
        let file = self.open.as_mut().expect("opened above");
        file.write(&(key.len() as u32).to_le_bytes())?;
        file.write(key)?;
        file.write(&(value.len() as u32).to_le_bytes())?;
        file.write(value)
    }

    fn begin(&mut self) -> Result<(), String> {
        let name = format!("{}-{:04}.kv", self.prefix, self.next_number);
        self.next_number += 1;
        let sink = self
            .store
            .create_file(self.backup_id, self.partition, &name)?;
        let mut file = OpenFile {
            name,
            sink,
            buffer: Vec::with_capacity(WRITE_BUFFER + 4096),
            digest: Context::new(&SHA256),
            size: 0,
        };
        file.write(MAGIC)?;
        self.open = Some(file);
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        let Some(mut file) = self.open.take() else {
            return Ok(());
        };
        if !file.buffer.is_empty() {
            file.sink.write(&file.buffer)?;
        }
        file.sink.finish()?;
        self.written.push(FileEntry {
            name: file.name,
            size: file.size,
            sha256: hex(file.digest.finish().as_ref()),
        });
        Ok(())
    }

    /// Closes the last file (an empty column family still gets one, so that every
    /// column family is named in the manifest) and returns the files written.
    pub(super) fn finish(mut self) -> Result<Vec<FileEntry>, String> {
        if self.open.is_none() && self.written.is_empty() {
            self.begin()?;
        }
        self.close()?;
        Ok(self.written)
    }
}

/// A reader that counts and hashes what passes through it, and at the end checks both
/// against the manifest's entry: a file that differs is an error naming it.
pub(super) struct Verified<R> {
    inner: R,
    what: String,
    expected_size: u64,
    expected_sha256: String,
    digest: Option<Context>,
    size: u64,
}

impl<R: Read> Verified<R> {
    pub(super) fn new(inner: R, what: String, entry: &FileEntry) -> Verified<R> {
        Verified {
            inner,
            what,
            expected_size: entry.size,
            expected_sha256: entry.sha256.clone(),
            digest: Some(Context::new(&SHA256)),
            size: 0,
        }
    }

    fn damaged(&self, detail: String) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is damaged: {detail}", self.what),
        )
    }
}

impl<R: Read> Read for Verified<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let Some(digest) = self.digest.as_mut() else {
            return Ok(n);
        };
        digest.update(&buf[..n]);
        self.size += n as u64;
        if self.size > self.expected_size {
            return Err(self.damaged(format!(
                "it is longer than the {} bytes the manifest says",
                self.expected_size
            )));
        }
        if n == 0 && !buf.is_empty() {
            let sha256 = hex(self.digest.take().expect("checked above").finish().as_ref());
            if self.size != self.expected_size || sha256 != self.expected_sha256 {
                return Err(self.damaged(format!(
                    "{} bytes with SHA-256 {sha256}, but the manifest says {} bytes with \
                     SHA-256 {}",
                    self.size, self.expected_size, self.expected_sha256
                )));
            }
        }
        Ok(n)
    }
}

/// Checks that a data file of a part has the size and SHA-256 the manifest gives; the
/// error names the file.
pub(super) fn verify(
    store: &dyn BackupStore,
    backup_id: u64,
    partition: u16,
    entry: &FileEntry,
) -> Result<(), String> {
    let (input, what) = store.open_file(backup_id, partition, &entry.name)?;
    let mut input = Verified::new(input, what.clone(), entry);
    std::io::copy(&mut input, &mut std::io::sink())
        .map(|_| ())
        .map_err(|e| damaged_or_unreadable(&what, e))
}

fn damaged_or_unreadable(what: &str, e: std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::InvalidData {
        e.to_string()
    } else {
        format!("cannot read {what}: {e}")
    }
}

/// Calls `visit` with every key and value of a data file of a part, in order; the file
/// is checked against its entry as it is read (it is an error, after every entry was
/// visited, if it differs).
pub(super) fn read_file(
    store: &dyn BackupStore,
    backup_id: u64,
    partition: u16,
    entry: &FileEntry,
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let (input, what) = store.open_file(backup_id, partition, &entry.name)?;
    let mut input = BufReader::with_capacity(1 << 20, Verified::new(input, what.clone(), entry));
    let fail = |detail: &str| format!("{what} {detail}");
    let mut magic = [0u8; 8];
    input.read_exact(&mut magic).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => fail("is too short for a backup data file"),
        _ => damaged_or_unreadable(&what, e),
    })?;
    if &magic != MAGIC {
        return Err(fail("is not a backup data file"));
    }
    let (mut key, mut value) = (Vec::new(), Vec::new());
    loop {
        let mut len = [0u8; 4];
        match input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                // The end: drain to the end, where the checksum is compared.
                return std::io::copy(&mut input, &mut std::io::sink())
                    .map(|_| ())
                    .map_err(|e| damaged_or_unreadable(&what, e));
            }
            Err(e) => return Err(damaged_or_unreadable(&what, e)),
        }
        read_field(&mut input, u32::from_le_bytes(len), &mut key).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                fail("ends inside a key")
            } else {
                damaged_or_unreadable(&what, e)
            }
        })?;
        input.read_exact(&mut len).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                fail("ends before a value")
            } else {
                damaged_or_unreadable(&what, e)
            }
        })?;
        read_field(&mut input, u32::from_le_bytes(len), &mut value).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                fail("ends inside a value")
            } else {
                damaged_or_unreadable(&what, e)
            }
        })?;
        visit(&key, &value)?;
    }
}

fn read_field(input: &mut impl Read, len: u32, into: &mut Vec<u8>) -> std::io::Result<()> {
    into.clear();
    // Read through `take`, so a damaged length cannot allocate more than the file holds.
    let read = input.take(u64::from(len)).read_to_end(into)?;
    if read != len as usize {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::store::FilesystemStore;

    #[test]
    fn entries_come_back_in_order_across_files_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = FilesystemStore::new(dir.path());
        let mut writer = KvWriter::new(&store, 1, 1, "default", 100);
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0u32..50)
            .map(|i| (i.to_be_bytes().to_vec(), vec![i as u8; i as usize]))
            .collect();
        for (k, v) in &entries {
            writer.put(k, v).unwrap();
        }
        let files = writer.finish().unwrap();
        assert!(files.len() > 1, "the limit splits the entries");
        let mut read = Vec::new();
        for file in &files {
            verify(&store, 1, 1, file).unwrap();
            read_file(&store, 1, 1, file, |k, v| {
                read.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(read, entries);

        let victim = store.partition_dir(1, 1).join(&files[1].name);
        let mut bytes = std::fs::read(&victim).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&victim, bytes).unwrap();
        let error = verify(&store, 1, 1, &files[1]).unwrap_err();
        assert!(
            error.contains(&files[1].name) && error.contains("damaged"),
            "{error}"
        );
        // Reading it whole fails too: the checksum is compared at its end.
        let error = read_file(&store, 1, 1, &files[1], |_, _| Ok(())).unwrap_err();
        assert!(
            error.contains(&files[1].name) && error.contains("damaged"),
            "{error}"
        );
    }

    #[test]
    fn an_empty_column_family_has_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = FilesystemStore::new(dir.path());
        let files = KvWriter::new(&store, 2, 3, "export", FILE_LIMIT)
            .finish()
            .unwrap();
        assert_eq!(files.len(), 1);
        let mut count = 0;
        read_file(&store, 2, 3, &files[0], |_, _| {
            count += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(count, 0);
    }
}
