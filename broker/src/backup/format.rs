//! The data files of a backup: one column family's keys and values in key order, split
//! into files of at most [`FILE_LIMIT`] bytes, each with its SHA-256 in the manifest.
//!
//! ```text
//! file:   magic "RILLKV1\n" | records
//! record: u32 key length | key | u32 value length | value      (little endian)
//! ```

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use ring::digest::{Context, SHA256};

use super::store::{FileEntry, sync_dir};

const MAGIC: &[u8; 8] = b"RILLKV1\n";

/// A data file is closed once it holds this much (and a new one begun).
pub(super) const FILE_LIMIT: u64 = 64 << 20;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes one column family's entries into `<prefix>-<n>.kv` files in `dir`.
pub(super) struct KvWriter {
    dir: PathBuf,
    prefix: String,
    limit: u64,
    open: Option<OpenFile>,
    next_number: u32,
    written: Vec<FileEntry>,
}

struct OpenFile {
    name: String,
    temporary: PathBuf,
    out: BufWriter<File>,
    digest: Context,
    size: u64,
}

impl OpenFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes)?;
        self.digest.update(bytes);
        self.size += bytes.len() as u64;
        Ok(())
    }
}

impl KvWriter {
    pub(super) fn new(dir: &Path, prefix: &str, limit: u64) -> KvWriter {
        KvWriter {
            dir: dir.to_path_buf(),
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
        let record = (|| {
            file.write(&(key.len() as u32).to_le_bytes())?;
            file.write(key)?;
            file.write(&(value.len() as u32).to_le_bytes())?;
            file.write(value)
        })();
        record.map_err(|e| format!("cannot write {}: {e}", file.temporary.display()))
    }

    fn begin(&mut self) -> Result<(), String> {
        let name = format!("{}-{:04}.kv", self.prefix, self.next_number);
        self.next_number += 1;
        let temporary = self.dir.join(format!(".{name}.tmp"));
        let out = File::create(&temporary)
            .map_err(|e| format!("cannot create {}: {e}", temporary.display()))?;
        let mut file = OpenFile {
            name,
            temporary,
            out: BufWriter::with_capacity(1 << 20, out),
            digest: Context::new(&SHA256),
            size: 0,
        };
        file.write(MAGIC)
            .map_err(|e| format!("cannot write {}: {e}", file.temporary.display()))?;
        self.open = Some(file);
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        let Some(mut file) = self.open.take() else {
            return Ok(());
        };
        let path = self.dir.join(&file.name);
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        file.out.flush().map_err(fail)?;
        file.out.get_ref().sync_all().map_err(fail)?;
        std::fs::rename(&file.temporary, &path).map_err(fail)?;
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
        sync_dir(&self.dir)?;
        Ok(self.written)
    }
}

/// Checks that `dir/entry.name` has the size and SHA-256 the manifest gives; the error
/// names the file.
pub(super) fn verify(dir: &Path, entry: &FileEntry) -> Result<(), String> {
    let path = dir.join(&entry.name);
    let mut file = File::open(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut digest = Context::new(&SHA256);
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        digest.update(&buf[..n]);
        size += n as u64;
    }
    let sha256 = hex(digest.finish().as_ref());
    if size != entry.size || sha256 != entry.sha256 {
        return Err(format!(
            "{} is damaged: {size} bytes with SHA-256 {sha256}, but the manifest says {} \
             bytes with SHA-256 {}",
            path.display(),
            entry.size,
            entry.sha256
        ));
    }
    Ok(())
}

/// Calls `visit` with every key and value of a data file, in order.
pub(super) fn read_file(
    path: &Path,
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let fail = |what: &str| format!("{} {what}", path.display());
    let file = File::open(path).map_err(|e| fail(&format!("cannot be read: {e}")))?;
    let mut input = BufReader::with_capacity(1 << 20, file);
    let mut magic = [0u8; 8];
    input
        .read_exact(&mut magic)
        .map_err(|_| fail("is too short for a backup data file"))?;
    if &magic != MAGIC {
        return Err(fail("is not a backup data file"));
    }
    let (mut key, mut value) = (Vec::new(), Vec::new());
    loop {
        let mut len = [0u8; 4];
        match input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(fail(&format!("cannot be read: {e}"))),
        }
        read_field(&mut input, u32::from_le_bytes(len), &mut key)
            .map_err(|_| fail("ends inside a key"))?;
        input
            .read_exact(&mut len)
            .map_err(|_| fail("ends before a value"))?;
        read_field(&mut input, u32::from_le_bytes(len), &mut value)
            .map_err(|_| fail("ends inside a value"))?;
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

    #[test]
    fn entries_come_back_in_order_across_files_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = KvWriter::new(dir.path(), "default", 100);
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
            verify(dir.path(), file).unwrap();
            read_file(&dir.path().join(&file.name), |k, v| {
                read.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(read, entries);

        let victim = dir.path().join(&files[1].name);
        let mut bytes = std::fs::read(&victim).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&victim, bytes).unwrap();
        let error = verify(dir.path(), &files[1]).unwrap_err();
        assert!(error.contains(&files[1].name), "{error}");
    }

    #[test]
    fn an_empty_column_family_has_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let files = KvWriter::new(dir.path(), "export", FILE_LIMIT)
            .finish()
            .unwrap();
        assert_eq!(files.len(), 1);
        let mut count = 0;
        read_file(&dir.path().join(&files[0].name), |_, _| {
            count += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(count, 0);
    }
}
