//! The snapshot archive: how a state checkpoint travels to another replica, as one byte
//! stream that openraft sends in chunks.
//!
//! ```text
//! "RILLSNP1" | u32 meta length | meta (codec) | u32 file count |
//!   per file: u16 name length | name | u64 size | bytes
//! | u32 CRC-32 of everything before it
//! ```
//! All integers are little endian. Neither side writes the archive down: the sender reads
//! it from the checkpoint's files ([`ArchiveReader`]), the receiver writes the files as
//! their bytes arrive ([`Unpacker`]). A [`Layout`] (meta, files in archive order, CRC)
//! is all that is kept beside a checkpoint to read it as an archive again, byte for byte.
//! Archives arrive from the network, so unpacking checks every name and length and the
//! checksum, and never panics.

use std::fs::{self, File};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"RILLSNP1";
const MAX_META: u32 = 16 << 20;
const MAX_FILES: u32 = 1 << 20;

/// What makes a checkpoint directory readable as an archive: the metadata, the files in
/// archive order with their sizes, and the checksum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Layout {
    pub meta: Vec<u8>,
    pub files: Vec<(String, u64)>,
    pub crc: u32,
}

impl Layout {
    /// The layout of `dir`, a flat checkpoint directory, with `meta`: its regular files
    /// sorted by name. Reads every file once for the checksum.
    pub(crate) fn scan(dir: &Path, meta: Vec<u8>) -> Result<Layout> {
        let mut files = Vec::new();
        for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
            let entry = entry.map_err(Error::io(dir))?;
            let kind = entry.file_type().map_err(Error::io(entry.path()))?;
            if !kind.is_file() {
                return Err(Error::corrupt(
                    "checkpoint",
                    format!("{} is not a regular file", entry.path().display()),
                ));
            }
            let size = entry.metadata().map_err(Error::io(entry.path()))?.len();
            files.push((entry.file_name().to_string_lossy().into_owned(), size));
        }
        files.sort();
        let mut layout = Layout {
            meta,
            files,
            crc: 0,
        };
        let reader = ArchiveReader::open(dir, &layout)?;
        let mut crc = crc32fast::Hasher::new();
        // Everything but the checksum itself.
        let body_len = reader.len() - 4;
        let mut body = reader.take(body_len);
        let mut buf = vec![0; 1 << 20];
        loop {
            let n = body.read(&mut buf).map_err(Error::io(dir))?;
            if n == 0 {
                break;
            }
            crc.update(&buf[..n]);
        }
        layout.crc = crc.finalize();
        Ok(layout)
    }

    /// The archive's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        let header = MAGIC.len() as u64 + 4 + self.meta.len() as u64 + 4;
        let files: u64 = self
            .files
            .iter()
            .map(|(name, size)| 2 + name.len() as u64 + 8 + size)
            .sum();
        header + files + 4
    }
}

enum Segment {
    Bytes(Vec<u8>),
    File(File),
}

/// Reads a checkpoint directory as its archive. Every file is opened up front, so the
/// archive stays readable when the directory is removed meanwhile (a newer snapshot
/// replaced it while this one was being sent).
pub(crate) struct ArchiveReader {
    segments: Vec<(u64, Segment)>,
    len: u64,
    pos: u64,
}

impl ArchiveReader {
    pub(crate) fn open(dir: &Path, layout: &Layout) -> Result<ArchiveReader> {
        let mut segments = Vec::new();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(layout.meta.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&layout.meta);
        bytes.extend_from_slice(&(layout.files.len() as u32).to_le_bytes());
        let mut at = 0;
        for (name, size) in &layout.files {
            bytes.extend_from_slice(&(name.len() as u16).to_le_bytes());
            bytes.extend_from_slice(name.as_bytes());
            bytes.extend_from_slice(&size.to_le_bytes());
            let path = dir.join(name);
            let file = File::open(&path).map_err(Error::io(&path))?;
            let actual = file.metadata().map_err(Error::io(&path))?.len();
            if actual != *size {
                return Err(Error::corrupt(
                    "snapshot",
                    format!("{} has {actual} bytes, {size} expected", path.display()),
                ));
            }
            let header = std::mem::take(&mut bytes);
            let header_len = header.len() as u64;
            segments.push((at, Segment::Bytes(header)));
            at += header_len;
            if *size > 0 {
                segments.push((at, Segment::File(file)));
                at += size;
            }
        }
        bytes.extend_from_slice(&layout.crc.to_le_bytes());
        let tail_len = bytes.len() as u64;
        segments.push((at, Segment::Bytes(bytes)));
        Ok(ArchiveReader {
            segments,
            len: at + tail_len,
            pos: 0,
        })
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

impl Read for ArchiveReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let index = self
            .segments
            .partition_point(|(start, _)| *start <= self.pos)
            - 1;
        let (start, segment) = &self.segments[index];
        let end = self
            .segments
            .get(index + 1)
            .map_or(self.len, |(next, _)| *next);
        let offset = self.pos - start;
        let want = buf.len().min((end - self.pos) as usize);
        let n = match segment {
            Segment::Bytes(bytes) => {
                let offset = offset as usize;
                buf[..want].copy_from_slice(&bytes[offset..offset + want]);
                want
            }
            Segment::File(file) => {
                let mut file: &File = file;
                file.seek(SeekFrom::Start(offset))?;
                let n = file.read(&mut buf[..want])?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "a snapshot file shrank while it was being read",
                    ));
                }
                n
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for ArchiveReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
        };
        self.pos = target.ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek before the archive")
        })?;
        Ok(self.pos)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Where the unpacker is in the archive: each header field is collected whole (its
/// length in bytes), file contents are written as they come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Magic,
    MetaLen,
    Meta(usize),
    Count,
    NameLen,
    Name(usize),
    Size,
    Data(u64),
    Trailer,
    End,
}

impl Stage {
    fn field_len(self) -> usize {
        match self {
            Stage::Magic => MAGIC.len(),
            Stage::MetaLen | Stage::Count | Stage::Trailer => 4,
            Stage::Meta(len) | Stage::Name(len) => len,
            Stage::NameLen => 2,
            Stage::Size => 8,
            Stage::Data(_) | Stage::End => 0,
        }
    }
}

fn invalid(reason: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, reason.into())
}

/// Writes an archive's files into a new directory as the archive's bytes arrive, in
/// order. Each file is synced once complete. Dropped before [`Unpacker::finish`], it
/// removes the directory.
pub(crate) struct Unpacker {
    dest: PathBuf,
    started: Instant,
    parse: Parse,
    /// Start over at the next write (a seek back to the archive's start).
    reset: bool,
    /// A write failed: nothing more is taken until a reset.
    failed: bool,
    kept: bool,
}

/// How far an unpacker got.
struct Parse {
    stage: Stage,
    field: Vec<u8>,
    crc: crc32fast::Hasher,
    meta: Vec<u8>,
    files_left: u32,
    files: Vec<(String, u64)>,
    /// The file being written, its name and size.
    current: Option<(File, String, u64)>,
    /// Bytes of the archive taken so far.
    written: u64,
    /// The archive offset of the next byte handed in: below `written` after a seek back
    /// (a chunk sent again), and such bytes are skipped.
    at: u64,
}

impl Parse {
    fn new() -> Parse {
        Parse {
            stage: Stage::Magic,
            field: Vec::new(),
            crc: crc32fast::Hasher::new(),
            meta: Vec::new(),
            files_left: 0,
            files: Vec::new(),
            current: None,
            written: 0,
            at: 0,
        }
    }
}

impl Unpacker {
    /// An unpacker into `dest`, which must not exist yet.
    pub(crate) fn new(dest: &Path) -> Result<Unpacker> {
        fs::create_dir(dest).map_err(Error::io(dest))?;
        Ok(Unpacker {
            dest: dest.to_path_buf(),
            started: Instant::now(),
            parse: Parse::new(),
            reset: false,
            failed: false,
            kept: false,
        })
    }

    /// When it was created.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// Bytes of the archive taken so far.
    pub(crate) fn written(&self) -> u64 {
        self.parse.written
    }

    /// The archive offset the next byte written is taken for.
    pub(crate) fn position(&self) -> u64 {
        self.parse.at
    }

    /// Moves to archive offset `to`: the start (begin again), or a place already
    /// written (bytes up to what was written are then skipped: a chunk sent again).
    pub(crate) fn seek(&mut self, to: u64) -> io::Result<()> {
        let written = self.parse.written;
        if to == 0 && written > 0 {
            self.reset = true;
            self.parse.at = 0;
        } else if to <= written {
            self.parse.at = to;
        } else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot skip to offset {to} of a snapshot received up to {written}"),
            ));
        }
        Ok(())
    }

    fn take(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if self.reset {
            self.parse.current = None;
            fs::remove_dir_all(&self.dest)?;
            fs::create_dir(&self.dest)?;
            self.parse = Parse::new();
            self.reset = false;
            self.failed = false;
        }
        if self.failed {
            return Err(io::Error::other(
                "an earlier write of this snapshot failed; it must be sent again",
            ));
        }
        let parse = &mut self.parse;
        if parse.at < parse.written {
            let skip = ((parse.written - parse.at) as usize).min(bytes.len());
            parse.at += skip as u64;
            bytes = &bytes[skip..];
        }
        while !bytes.is_empty() {
            let n = match parse.stage {
                Stage::End => return Err(invalid("trailing bytes after the checksum")),
                Stage::Data(left) => {
                    let n = (left as usize).min(bytes.len());
                    let (file, _, _) = parse
                        .current
                        .as_mut()
                        .ok_or_else(|| invalid("file data without a file"))?;
                    file.write_all(&bytes[..n])?;
                    parse.crc.update(&bytes[..n]);
                    parse.stage = Stage::Data(left - n as u64);
                    n
                }
                stage => {
                    let n = (stage.field_len() - parse.field.len()).min(bytes.len());
                    parse.field.extend_from_slice(&bytes[..n]);
                    if stage != Stage::Trailer {
                        parse.crc.update(&bytes[..n]);
                    }
                    n
                }
            };
            bytes = &bytes[n..];
            parse.written += n as u64;
            parse.at += n as u64;
            parse.advance(&self.dest)?;
        }
        Ok(())
    }

    /// Checks that the whole archive arrived, syncs the directory and hands it over with
    /// its layout (the directory is no longer removed on drop).
    pub(crate) fn finish(mut self) -> Result<(PathBuf, Layout)> {
        let what = format!("snapshot received into {}", self.dest.display());
        if self.failed || self.reset {
            return Err(Error::corrupt(what, "a write failed or it was restarted"));
        }
        if self.parse.stage != Stage::End {
            return Err(Error::corrupt(
                what,
                format!("incomplete after {} bytes", self.parse.written),
            ));
        }
        crate::state_store::sync_dir(&self.dest)?;
        self.kept = true;
        let parse = std::mem::replace(&mut self.parse, Parse::new());
        let layout = Layout {
            meta: parse.meta,
            files: parse.files,
            crc: parse.crc.finalize(),
        };
        Ok((self.dest.clone(), layout))
    }
}

impl Parse {
    /// Moves past every stage that is complete (fields of length zero included).
    fn advance(&mut self, dest: &Path) -> io::Result<()> {
        loop {
            let stage = self.stage;
            match stage {
                Stage::End => return Ok(()),
                Stage::Data(0) => self.end_file()?,
                Stage::Data(_) => return Ok(()),
                _ if self.field.len() < stage.field_len() => return Ok(()),
                _ => {
                    let field = std::mem::take(&mut self.field);
                    self.stage = self.parse(stage, field, dest)?;
                }
            }
        }
    }

    /// The stage after `stage`, whose whole field is `field`.
    fn parse(&mut self, stage: Stage, field: Vec<u8>, dest: &Path) -> io::Result<Stage> {
        let u32_of = |field: &[u8]| u32::from_le_bytes(field.try_into().unwrap_or_default());
        Ok(match stage {
            Stage::Magic if field != MAGIC => return Err(invalid("not a Rill snapshot archive")),
            Stage::Magic => Stage::MetaLen,
            Stage::MetaLen => match u32_of(&field) {
                len if len > MAX_META => return Err(invalid(format!("metadata of {len} bytes"))),
                len => Stage::Meta(len as usize),
            },
            Stage::Meta(_) => {
                self.meta = field;
                Stage::Count
            }
            Stage::Count => match u32_of(&field) {
                count if count > MAX_FILES => return Err(invalid(format!("{count} files"))),
                0 => Stage::Trailer,
                count => {
                    self.files_left = count;
                    Stage::NameLen
                }
            },
            Stage::NameLen => {
                Stage::Name(u16::from_le_bytes(field.try_into().unwrap_or_default()) as usize)
            }
            Stage::Name(_) => {
                let name =
                    String::from_utf8(field).map_err(|_| invalid("a file name is not UTF-8"))?;
                if !valid_name(&name) {
                    return Err(invalid(format!("invalid file name {name:?}")));
                }
                let file = File::create_new(dest.join(&name))?;
                self.current = Some((file, name, 0));
                Stage::Size
            }
            Stage::Size => {
                let size = u64::from_le_bytes(field.try_into().unwrap_or_default());
                if let Some((_, _, expected)) = self.current.as_mut() {
                    *expected = size;
                }
                Stage::Data(size)
            }
            Stage::Trailer => {
                if u32_of(&field) != self.crc.clone().finalize() {
                    return Err(invalid("checksum mismatch"));
                }
                Stage::End
            }
            Stage::Data(_) | Stage::End => stage,
        })
    }

    fn end_file(&mut self) -> io::Result<()> {
        let (file, name, size) = self
            .current
            .take()
            .ok_or_else(|| invalid("file data without a file"))?;
        file.sync_all()?;
        self.files.push((name, size));
        self.files_left = self.files_left.saturating_sub(1);
        self.stage = if self.files_left == 0 {
            Stage::Trailer
        } else {
            Stage::NameLen
        };
        Ok(())
    }
}

impl Write for Unpacker {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let taken = self.take(bytes);
        if taken.is_err() {
            self.failed = true;
        }
        taken.map(|()| bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Unpacker {
    fn drop(&mut self) {
        if !self.kept {
            self.parse.current = None;
            let _ = fs::remove_dir_all(&self.dest);
        }
    }
}

/// Unpacks the archive file `archive` (a snapshot of an older Rill) into the new
/// directory `dest`. On error `dest` is removed.
pub(crate) fn unpack(archive: &Path, dest: &Path) -> Result<Layout> {
    let file = File::open(archive).map_err(Error::io(archive))?;
    let mut unpacker = Unpacker::new(dest)?;
    io::copy(&mut BufReader::with_capacity(1 << 20, file), &mut unpacker)
        .map_err(|e| Error::corrupt(archive.display().to_string(), e.to_string()))?;
    let (_, layout) = unpacker.finish()?;
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(dir: &Path) -> PathBuf {
        let src = dir.join("src");
        fs::create_dir(&src).unwrap();
        fs::write(
            src.join("000012.sst"),
            (0..100_000u32).map(|i| i as u8).collect::<Vec<_>>(),
        )
        .unwrap();
        fs::write(src.join("CURRENT"), b"MANIFEST-1\n").unwrap();
        fs::write(src.join("EMPTY"), b"").unwrap();
        src
    }

    fn archive_bytes(dir: &Path, layout: &Layout) -> Vec<u8> {
        let mut bytes = Vec::new();
        ArchiveReader::open(dir, layout)
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        bytes
    }

    #[test]
    fn a_checkpoint_read_as_an_archive_unpacks_into_the_same_files() {
        let dir = tempfile::tempdir().unwrap();
        let src = checkpoint(dir.path());
        let layout = Layout::scan(&src, b"meta!".to_vec()).unwrap();
        let bytes = archive_bytes(&src, &layout);
        assert_eq!(bytes.len() as u64, layout.len());
        assert_eq!(&bytes[..8], MAGIC);

        // Arriving in pieces of any size.
        for piece in [1, 7, 4096, bytes.len()] {
            let out = dir.path().join(format!("out-{piece}"));
            let mut unpacker = Unpacker::new(&out).unwrap();
            for chunk in bytes.chunks(piece) {
                unpacker.write_all(chunk).unwrap();
            }
            let (path, received) = unpacker.finish().unwrap();
            assert_eq!(path, out);
            assert_eq!(received, layout, "pieces of {piece}");
            for name in ["000012.sst", "CURRENT", "EMPTY"] {
                assert_eq!(
                    fs::read(out.join(name)).unwrap(),
                    fs::read(src.join(name)).unwrap()
                );
            }
            // The unpacked directory reads as the very same archive.
            assert_eq!(archive_bytes(&out, &received), bytes);
        }
    }

    #[test]
    fn chunks_sent_again_are_skipped_and_a_restart_begins_anew() {
        let dir = tempfile::tempdir().unwrap();
        let src = checkpoint(dir.path());
        let layout = Layout::scan(&src, b"m".to_vec()).unwrap();
        let bytes = archive_bytes(&src, &layout);
        let out = dir.path().join("out");
        let mut unpacker = Unpacker::new(&out).unwrap();
        unpacker.write_all(&bytes[..50_000]).unwrap();
        // The chunk at 40,000 again (its answer was lost), then on.
        unpacker.seek(40_000).unwrap();
        unpacker.write_all(&bytes[40_000..60_000]).unwrap();
        assert_eq!(unpacker.position(), 60_000);
        assert!(unpacker.seek(70_000).is_err(), "no skipping ahead");
        // From the start again: what was written is dropped.
        unpacker.seek(0).unwrap();
        unpacker.write_all(&bytes).unwrap();
        let (_, received) = unpacker.finish().unwrap();
        assert_eq!(received, layout);
        assert_eq!(
            fs::read(out.join("000012.sst")).unwrap(),
            fs::read(src.join("000012.sst")).unwrap()
        );
    }

    #[test]
    fn corrupt_or_truncated_archives_are_refused_and_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let src = checkpoint(dir.path());
        let layout = Layout::scan(&src, b"meta".to_vec()).unwrap();
        let mut bytes = archive_bytes(&src, &layout);

        // One flipped byte in the middle: the checksum catches it.
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        let out = dir.path().join("flipped");
        let mut unpacker = Unpacker::new(&out).unwrap();
        assert!(unpacker.write_all(&bytes).is_err());
        assert!(
            unpacker.write_all(b"more").is_err(),
            "a failed unpacker takes nothing"
        );
        assert!(unpacker.finish().is_err());
        assert!(!out.exists(), "removed when dropped");
        bytes[mid] ^= 0xff;

        // Cut anywhere: an error, never a panic, and nothing left.
        for cut in [0, 5, 12, 20, 40, bytes.len() - 3] {
            let out = dir.path().join(format!("cut-{cut}"));
            let mut unpacker = Unpacker::new(&out).unwrap();
            unpacker.write_all(&bytes[..cut]).unwrap();
            assert!(unpacker.finish().is_err(), "cut at {cut}");
            assert!(!out.exists());
        }

        // Bytes after the checksum.
        let mut longer = bytes.clone();
        longer.push(0);
        let mut unpacker = Unpacker::new(&dir.path().join("longer")).unwrap();
        assert!(unpacker.write_all(&longer).is_err());

        // A name that leaves the directory.
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes());
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(b"../x");
        let mut unpacker = Unpacker::new(&dir.path().join("evil")).unwrap();
        assert!(unpacker.write_all(&header).is_err());
        assert!(!dir.path().join("x").exists());
    }

    #[test]
    fn a_file_changed_since_the_layout_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let src = checkpoint(dir.path());
        let layout = Layout::scan(&src, Vec::new()).unwrap();
        fs::write(src.join("CURRENT"), b"MANIFEST-22\n").unwrap();
        assert!(ArchiveReader::open(&src, &layout).is_err());
    }

    #[test]
    fn rejects_path_traversal_names() {
        assert!(!valid_name("../x"));
        assert!(!valid_name("a/b"));
        assert!(!valid_name(".."));
        assert!(valid_name("000012.sst"));
    }
}
