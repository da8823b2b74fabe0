//! The snapshot archive: a state checkpoint directory packed into one file so openraft
//! can stream it to a replica in chunks.
//!
//! ```text
//! "RILLSNP1" | u32 meta length | meta (codec) | u32 file count |
//!   per file: u16 name length | name | u64 size | bytes
//! | u32 CRC-32 of everything before it
//! ```
//! All integers are little endian. Archives arrive from the network, so reading checks
//! every name and length and the checksum, and never panics.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"RILLSNP1";
const MAX_META: u32 = 16 << 20;
const MAX_FILES: u32 = 1 << 20;

struct CrcWriter<W> {
    inner: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct CrcReader<R> {
    inner: R,
    crc: crc32fast::Hasher,
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
}

/// Packs the regular files of `src` (a flat checkpoint directory) with `meta` into
/// `out`, and syncs it.
pub(crate) fn pack(src: &Path, meta: &[u8], out: &Path) -> Result<()> {
    let mut names = Vec::new();
    for entry in fs::read_dir(src).map_err(Error::io(src))? {
        let entry = entry.map_err(Error::io(src))?;
        let kind = entry.file_type().map_err(Error::io(entry.path()))?;
        if !kind.is_file() {
            return Err(Error::corrupt(
                "checkpoint",
                format!("{} is not a regular file", entry.path().display()),
            ));
        }
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();

    let file = File::create(out).map_err(Error::io(out))?;
    let mut w = CrcWriter {
        inner: BufWriter::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
    };
    let write_all = |w: &mut CrcWriter<_>| -> io::Result<()> {
        w.write_all(MAGIC)?;
        w.write_all(&(meta.len() as u32).to_le_bytes())?;
        w.write_all(meta)?;
        w.write_all(&(names.len() as u32).to_le_bytes())?;
        for name in &names {
            let path = src.join(name);
            let mut f = File::open(&path)?;
            let size = f.metadata()?.len();
            w.write_all(&(name.len() as u16).to_le_bytes())?;
            w.write_all(name.as_bytes())?;
            w.write_all(&size.to_le_bytes())?;
            let copied = io::copy(&mut (&mut f).take(size), w)?;
            if copied != size {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{name} shrank while packing"),
                ));
            }
        }
        Ok(())
    };
    write_all(&mut w).map_err(Error::io(out))?;
    let crc = w.crc.clone().finalize();
    let mut inner = w.inner;
    inner
        .write_all(&crc.to_le_bytes())
        .map_err(Error::io(out))?;
    let file = inner
        .into_inner()
        .map_err(|e| Error::io(out)(e.into_error()))?;
    file.sync_all().map_err(Error::io(out))?;
    Ok(())
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_header(r: &mut impl Read, what: &str) -> Result<Vec<u8>> {
    let mut magic = [0; 8];
    r.read_exact(&mut magic)
        .map_err(|e| Error::corrupt(what, format!("no header: {e}")))?;
    if &magic != MAGIC {
        return Err(Error::corrupt(what, "not a Rill snapshot archive"));
    }
    let len = read_u32(r).map_err(|e| Error::corrupt(what, e.to_string()))?;
    if len > MAX_META {
        return Err(Error::corrupt(what, format!("metadata of {len} bytes")));
    }
    let mut meta = vec![0; len as usize];
    r.read_exact(&mut meta)
        .map_err(|e| Error::corrupt(what, format!("truncated metadata: {e}")))?;
    Ok(meta)
}

/// Reads just the metadata of an archive.
pub(crate) fn read_meta(path: &Path) -> Result<Vec<u8>> {
    let file = File::open(path).map_err(Error::io(path))?;
    read_header(&mut BufReader::new(file), &path.display().to_string())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Unpacks `archive` into the new directory `dest`, checking names, sizes and the
/// checksum. Returns the metadata. On error `dest` is removed.
pub(crate) fn unpack(archive: &Path, dest: &Path) -> Result<Vec<u8>> {
    let result = unpack_inner(archive, dest);
    if result.is_err() {
        let _ = fs::remove_dir_all(dest);
    }
    result
}

fn unpack_inner(archive: &Path, dest: &Path) -> Result<Vec<u8>> {
    let what = archive.display().to_string();
    let corrupt = |reason: String| Error::corrupt(what.clone(), reason);
    let file = File::open(archive).map_err(Error::io(archive))?;
    let total = file.metadata().map_err(Error::io(archive))?.len();
    let mut r = CrcReader {
        inner: BufReader::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
    };
    let meta = read_header(&mut r, &what)?;
    fs::create_dir(dest).map_err(Error::io(dest))?;
    let count = read_u32(&mut r).map_err(|e| corrupt(e.to_string()))?;
    if count > MAX_FILES {
        return Err(corrupt(format!("{count} files")));
    }
    for _ in 0..count {
        let mut len = [0; 2];
        r.read_exact(&mut len).map_err(|e| corrupt(e.to_string()))?;
        let mut name = vec![0; u16::from_le_bytes(len) as usize];
        r.read_exact(&mut name)
            .map_err(|e| corrupt(e.to_string()))?;
        let name =
            String::from_utf8(name).map_err(|_| corrupt("a file name is not UTF-8".into()))?;
        if !valid_name(&name) {
            return Err(corrupt(format!("invalid file name {name:?}")));
        }
        let mut size = [0; 8];
        r.read_exact(&mut size)
            .map_err(|e| corrupt(e.to_string()))?;
        let size = u64::from_le_bytes(size);
        if size > total {
            return Err(corrupt(format!("{name} claims {size} bytes")));
        }
        let path = dest.join(&name);
        let mut out = File::create_new(&path).map_err(Error::io(&path))?;
        let copied = io::copy(&mut (&mut r).take(size), &mut out).map_err(Error::io(&path))?;
        if copied != size {
            return Err(corrupt(format!("{name} is truncated")));
        }
        out.sync_all().map_err(Error::io(&path))?;
    }
    let computed = r.crc.clone().finalize();
    let mut stored = [0; 4];
    r.inner
        .read_exact(&mut stored)
        .map_err(|e| corrupt(format!("no checksum: {e}")))?;
    if u32::from_le_bytes(stored) != computed {
        return Err(corrupt("checksum mismatch".into()));
    }
    let mut rest = [0; 1];
    if r.inner.read(&mut rest).map_err(Error::io(archive))? != 0 {
        return Err(corrupt("trailing bytes after the checksum".into()));
    }
    crate::state_store::sync_dir(dest)?;
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_unpacks_and_detects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        fs::create_dir(&src).unwrap();
        fs::write(src.join("a.sst"), vec![7u8; 100_000]).unwrap();
        fs::write(src.join("CURRENT"), b"MANIFEST-1\n").unwrap();
        let archive = dir.path().join("x.snap");
        pack(&src, b"meta!", &archive).unwrap();
        assert_eq!(read_meta(&archive).unwrap(), b"meta!");

        let out = dir.path().join("out");
        assert_eq!(unpack(&archive, &out).unwrap(), b"meta!");
        assert_eq!(fs::read(out.join("a.sst")).unwrap(), vec![7u8; 100_000]);
        assert_eq!(fs::read(out.join("CURRENT")).unwrap(), b"MANIFEST-1\n");

        // Flip one byte in the middle: the checksum catches it, nothing is left behind.
        let mut bytes = fs::read(&archive).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        fs::write(&archive, &bytes).unwrap();
        let out2 = dir.path().join("out2");
        assert!(unpack(&archive, &out2).is_err());
        assert!(!out2.exists());

        // Truncation at any point is an error, not a panic.
        bytes[mid] ^= 0xff;
        for cut in [0, 5, 12, 20, bytes.len() - 3] {
            fs::write(&archive, &bytes[..cut]).unwrap();
            assert!(unpack(&archive, &dir.path().join(format!("cut{cut}"))).is_err());
        }
    }

    #[test]
    fn rejects_path_traversal_names() {
        assert!(!valid_name("../x"));
        assert!(!valid_name("a/b"));
        assert!(!valid_name(".."));
        assert!(valid_name("000012.sst"));
    }
}
