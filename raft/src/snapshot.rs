//! Snapshots: a RocksDB checkpoint of the state database at an applied log id, kept as a
//! directory in `snapshots/` and streamed by openraft, in chunks, to replicas that are
//! behind the purged log. On the wire a snapshot is an archive (see `archive`), read
//! from the checkpoint's files on one side and written into files on the other: neither
//! side copies the state into an archive file first.
//!
//! In `snapshots/`:
//! - `snapshot-<index>-<term>-<node>/`, the newest only: `layout` (how to read it as an
//!   archive) and `files/`, the checkpoint. Its SST files are hard links to the state
//!   database's (built here) or to the files the state database was made of (received),
//!   so a snapshot takes disk space only for what compaction has rewritten since;
//! - `build-<n>/`, `unpack-<n>/`: being built or received (removed on open);
//! - `snapshot-<index>-<term>-<node>.snap`: an archive file as older Rill versions kept
//!   snapshots; unpacked into a directory on open.

use std::fs;
use std::future::{Future, poll_fn};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use rill_protocol::codec;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::archive::{self, ArchiveReader, Layout, Unpacker};
use crate::error::{Error, Result};
use crate::state_store::{StateStore, checkpoint_applied_state, sync_dir};
use crate::types::{LogId, SnapshotMeta};

/// In a snapshot directory: its layout, and the checkpoint.
const LAYOUT: &str = "layout";
const FILES: &str = "files";
/// The most one blocking read or write of a snapshot moves (a chunk is 8 MiB).
const MAX_IO: usize = 16 << 20;

/// A value whose blocking I/O runs on the io runtime's blocking pool, one operation at a
/// time, as `tokio::fs::File` does for a file.
struct Offloaded<T> {
    io: Handle,
    slot: Slot<T>,
}

enum Slot<T> {
    Idle(Box<T>),
    Busy(JoinHandle<(Box<T>, io::Result<Vec<u8>>)>),
    /// A blocking operation panicked.
    Lost,
}

fn lost() -> io::Error {
    io::Error::other("a snapshot operation failed on the blocking pool")
}

impl<T: Send + 'static> Offloaded<T> {
    fn new(io: Handle, value: T) -> Offloaded<T> {
        Offloaded {
            io,
            slot: Slot::Idle(Box::new(value)),
        }
    }

    /// Waits for the operation in flight, if any: what it read (`None` if none ran).
    fn poll_done(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Vec<u8>>>> {
        let Slot::Busy(task) = &mut self.slot else {
            return Poll::Ready(match self.slot {
                Slot::Lost => Err(lost()),
                _ => Ok(None),
            });
        };
        let finished = ready!(Pin::new(task).poll(cx));
        Poll::Ready(match finished {
            Ok((value, result)) => {
                self.slot = Slot::Idle(value);
                result.map(Some)
            }
            Err(_) => {
                self.slot = Slot::Lost;
                Err(lost())
            }
        })
    }

    fn start(
        &mut self,
        op: impl FnOnce(&mut T) -> io::Result<Vec<u8>> + Send + 'static,
    ) -> io::Result<()> {
        match std::mem::replace(&mut self.slot, Slot::Lost) {
            Slot::Idle(mut value) => {
                self.slot = Slot::Busy(self.io.spawn_blocking(move || {
                    let result = op(&mut value);
                    (value, result)
                }));
                Ok(())
            }
            other => {
                self.slot = other;
                Err(io::Error::other("a snapshot operation is still running"))
            }
        }
    }

    fn idle(&mut self) -> io::Result<&mut T> {
        match &mut self.slot {
            Slot::Idle(value) => Ok(value),
            Slot::Busy(_) => Err(io::Error::other("a snapshot operation is still running")),
            Slot::Lost => Err(lost()),
        }
    }

    /// The value, once the operation in flight is done.
    async fn into_inner(mut self) -> io::Result<Box<T>> {
        poll_fn(|cx| self.poll_done(cx)).await?;
        match self.slot {
            Slot::Idle(value) => Ok(value),
            _ => Err(lost()),
        }
    }
}

enum Inner {
    /// A stored snapshot, read as its archive.
    Reading {
        reader: Offloaded<ArchiveReader>,
        /// Read ahead and not handed out yet, from `pos`.
        buf: Vec<u8>,
        pos: usize,
    },
    /// A snapshot arriving from a leader, unpacked as it comes.
    Receiving {
        unpacker: Offloaded<Unpacker>,
        /// The length of the write in flight, answered once it is on disk (so an error
        /// is reported for the chunk that caused it).
        writing: Option<usize>,
    },
}

/// Snapshot data as openraft handles it: a stored snapshot it reads, or one it writes as
/// it arrives.
pub struct SnapshotFile {
    path: PathBuf,
    inner: Inner,
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, what.to_owned())
}

impl std::fmt::Debug for SnapshotFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.inner {
            Inner::Reading { .. } => "stored",
            Inner::Receiving { .. } => "receiving",
        };
        write!(f, "SnapshotFile({kind} {})", self.path.display())
    }
}

impl SnapshotFile {
    fn reading(path: PathBuf, reader: ArchiveReader, io: Handle) -> SnapshotFile {
        SnapshotFile {
            path,
            inner: Inner::Reading {
                reader: Offloaded::new(io, reader),
                buf: Vec::new(),
                pos: 0,
            },
        }
    }

    /// The snapshot's directory (being received: where it is unpacked).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AsyncRead for SnapshotFile {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let Inner::Reading { reader, buf, pos } = &mut self.get_mut().inner else {
            return Poll::Ready(Err(unsupported("a snapshot being received is not read")));
        };
        loop {
            if *pos < buf.len() {
                let n = dst.remaining().min(buf.len() - *pos);
                dst.put_slice(&buf[*pos..*pos + n]);
                *pos += n;
                return Poll::Ready(Ok(()));
            }
            if let Some(data) = ready!(reader.poll_done(cx))? {
                (*buf, *pos) = (data, 0);
                if buf.is_empty() {
                    return Poll::Ready(Ok(())); // the end
                }
                continue;
            }
            let want = dst.remaining().min(MAX_IO);
            if want == 0 {
                return Poll::Ready(Ok(()));
            }
            reader.start(move |reader| {
                let mut data = vec![0; want];
                let mut filled = 0;
                while filled < want {
                    match reader.read(&mut data[filled..])? {
                        0 => break,
                        n => filled += n,
                    }
                }
                data.truncate(filled);
                Ok(data)
            })?;
        }
    }
}

impl AsyncWrite for SnapshotFile {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let Inner::Receiving { unpacker, writing } = &mut self.get_mut().inner else {
            return Poll::Ready(Err(unsupported("a stored snapshot is not written")));
        };
        if writing.is_none() {
            ready!(unpacker.poll_done(cx))?;
            let len = data.len().min(MAX_IO);
            let bytes = data[..len].to_vec();
            unpacker.start(move |unpacker| unpacker.write_all(&bytes).map(|()| Vec::new()))?;
            *writing = Some(len);
        }
        let done = ready!(unpacker.poll_done(cx));
        let len = writing.take().unwrap_or_default();
        Poll::Ready(done.map(|_| len))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Receiving { unpacker, .. } => unpacker.poll_done(cx).map_ok(|_| ()),
            Inner::Reading { .. } => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

impl AsyncSeek for SnapshotFile {
    fn start_seek(self: Pin<&mut Self>, to: SeekFrom) -> io::Result<()> {
        match &mut self.get_mut().inner {
            Inner::Reading { reader, buf, pos } => {
                let reader = reader.idle()?;
                // The reader is ahead of the caller by what was read ahead.
                let at = reader.stream_position()? - (buf.len() - *pos) as u64;
                let target = match to {
                    SeekFrom::Current(delta) => SeekFrom::Start(
                        at.checked_add_signed(delta)
                            .ok_or_else(|| unsupported("a seek before the start"))?,
                    ),
                    other => other,
                };
                reader.seek(target)?;
                buf.clear();
                *pos = 0;
                Ok(())
            }
            Inner::Receiving { unpacker, writing } => {
                let unpacker = unpacker.idle()?;
                let target = match to {
                    SeekFrom::Start(at) => Some(at),
                    SeekFrom::Current(delta) => unpacker.position().checked_add_signed(delta),
                    SeekFrom::End(_) => None,
                };
                *writing = None;
                unpacker.seek(target.ok_or_else(|| {
                    unsupported("a snapshot being received is sought from its start only")
                })?)
            }
        }
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        match &mut self.get_mut().inner {
            Inner::Reading { reader, buf, pos } => {
                if let Some(data) = ready!(reader.poll_done(cx))? {
                    (*buf, *pos) = (data, 0);
                }
                let ahead = (buf.len() - *pos) as u64;
                Poll::Ready(reader.idle()?.stream_position().map(|at| at - ahead))
            }
            Inner::Receiving { unpacker, writing } => {
                ready!(unpacker.poll_done(cx))?;
                *writing = None;
                Poll::Ready(Ok(unpacker.idle()?.position()))
            }
        }
    }
}

/// The snapshots of one partition.
pub struct SnapshotStore {
    dir: PathBuf,
    io: Handle,
    next_temp: AtomicU64,
}

/// The directory name of a snapshot at `last`.
fn snapshot_name(last: Option<&LogId>) -> String {
    match last {
        Some(id) => format!(
            "snapshot-{:020}-{}-{}",
            id.index, id.leader_id.term, id.leader_id.node_id
        ),
        None => "snapshot-empty".to_owned(),
    }
}

/// The log index a snapshot (a directory, or an older Rill's `.snap` archive) stands
/// for; `None` for other names.
fn snapshot_index(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("snapshot-")?;
    let rest = rest.strip_suffix(".snap").unwrap_or(rest);
    if rest == "empty" {
        return Some(0);
    }
    rest.split('-').next()?.parse().ok()
}

fn is_archive(name: &str) -> bool {
    name.ends_with(".snap")
}

fn read_layout(snapshot: &Path) -> Result<Layout> {
    let path = snapshot.join(LAYOUT);
    Ok(codec::decode(&fs::read(&path).map_err(Error::io(&path))?)?)
}

/// Writes `layout` into the snapshot directory `snapshot` durably.
fn write_layout(snapshot: &Path, layout: &Layout) -> Result<()> {
    let tmp = snapshot.join("layout.tmp");
    let mut file = fs::File::create(&tmp).map_err(Error::io(&tmp))?;
    file.write_all(&codec::encode(layout)?)
        .and_then(|()| file.sync_all())
        .map_err(Error::io(&tmp))?;
    let path = snapshot.join(LAYOUT);
    fs::rename(&tmp, &path).map_err(Error::io(&path))?;
    sync_dir(snapshot)
}

/// Puts the checkpoint `src` (files of `layout`) into the new directory `dest`: SST and
/// blob files, which RocksDB never changes, as hard links; the others (manifest,
/// options, CURRENT: small, and rewritten or replaced once a database opens) as copies.
fn link_checkpoint(src: &Path, dest: &Path, layout: &Layout) -> Result<()> {
    fs::create_dir(dest).map_err(Error::io(dest))?;
    for (name, _) in &layout.files {
        let (from, to) = (src.join(name), dest.join(name));
        let immutable = name.ends_with(".sst") || name.ends_with(".blob");
        if !(immutable && fs::hard_link(&from, &to).is_ok()) {
            fs::copy(&from, &to).map_err(Error::io(&to))?;
            fs::File::open(&to)
                .and_then(|f| f.sync_all())
                .map_err(Error::io(&to))?;
        }
    }
    sync_dir(dest)
}

/// Whether the checkpoint `dir` has exactly the files of `layout`, by name and size.
fn same_files(dir: &Path, layout: &Layout) -> Result<bool> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
        let entry = entry.map_err(Error::io(dir))?;
        let size = entry.metadata().map_err(Error::io(entry.path()))?.len();
        files.push((entry.file_name().to_string_lossy().into_owned(), size));
    }
    files.sort();
    let mut expected = layout.files.clone();
    expected.sort();
    Ok(files == expected)
}

fn remove(path: &Path) -> Result<()> {
    let removed = if path.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io(path)(e)),
        _ => Ok(()),
    }
}

/// The newest complete snapshot directory in `dir`.
fn newest(dir: &Path) -> Result<Option<PathBuf>> {
    let mut best: Option<(u64, PathBuf)> = None;
    for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
        let entry = entry.map_err(Error::io(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(index) = snapshot_index(&name)
            && !is_archive(&name)
            && entry.path().join(LAYOUT).is_file()
            && best.as_ref().is_none_or(|(b, _)| index > *b)
        {
            best = Some((index, entry.path()));
        }
    }
    Ok(best.map(|(_, path)| path))
}

/// Removes the snapshots in `dir` but the newest (work in progress stays).
fn prune(dir: &Path) -> Result<()> {
    let keep = newest(dir)?;
    for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
        let entry = entry.map_err(Error::io(dir))?;
        let path = entry.path();
        if Some(&path) != keep.as_ref()
            && snapshot_index(&entry.file_name().to_string_lossy()).is_some()
        {
            remove(&path)?;
        }
    }
    Ok(())
}

fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

impl SnapshotStore {
    /// Opens `dir`: unpacks an older Rill's archive if it is the newest snapshot, and
    /// removes work in progress and all but the newest snapshot.
    pub fn open(dir: &Path, io: Handle) -> Result<SnapshotStore> {
        fs::create_dir_all(dir).map_err(Error::io(dir))?;
        let store = SnapshotStore {
            dir: dir.to_path_buf(),
            io,
            next_temp: AtomicU64::new(1),
        };
        store.convert_archive()?;
        let newest = newest(dir)?;
        for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
            let path = entry.map_err(Error::io(dir))?.path();
            if Some(&path) != newest.as_ref() {
                remove(&path)?;
            }
        }
        Ok(store)
    }

    /// Unpacks the newest `.snap` archive into a snapshot directory, if no directory is
    /// newer. One that cannot be unpacked is dropped with a warning: it is a copy of the
    /// state, which stays, and the next snapshot replaces it.
    fn convert_archive(&self) -> Result<()> {
        let mut archive: Option<(u64, PathBuf)> = None;
        for entry in fs::read_dir(&self.dir).map_err(Error::io(&self.dir))? {
            let entry = entry.map_err(Error::io(&self.dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(index) = snapshot_index(&name)
                && is_archive(&name)
                && archive.as_ref().is_none_or(|(b, _)| index > *b)
            {
                archive = Some((index, entry.path()));
            }
        }
        let Some((index, archive)) = archive else {
            return Ok(());
        };
        let current = newest(&self.dir)?;
        if current.is_some_and(|c| {
            snapshot_index(&c.file_name().unwrap_or_default().to_string_lossy())
                .is_some_and(|i| i >= index)
        }) {
            return Ok(());
        }
        let build = self.temp_path("build");
        let converted = (|| {
            fs::create_dir(&build).map_err(Error::io(&build))?;
            let layout = archive::unpack(&archive, &build.join(FILES))?;
            let meta: SnapshotMeta = codec::decode(&layout.meta)?;
            write_layout(&build, &layout)?;
            let path = self.dir.join(snapshot_name(meta.last_log_id.as_ref()));
            fs::rename(&build, &path).map_err(Error::io(&path))?;
            sync_dir(&self.dir)?;
            Ok::<_, Error>(path)
        })();
        match converted {
            Ok(path) => tracing::info!(
                archive = %archive.display(),
                snapshot = %path.display(),
                "unpacked a snapshot archive of an older version into a snapshot directory"
            ),
            Err(e) => {
                tracing::warn!(archive = %archive.display(), error = %e, "dropping a snapshot archive that cannot be unpacked");
                remove(&build)?;
            }
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn temp_path(&self, prefix: &str) -> PathBuf {
        let n = self.next_temp.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{prefix}-{n}"))
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.io
            .spawn_blocking(work)
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }

    /// The newest complete snapshot, if any.
    pub async fn current(&self) -> Result<Option<(SnapshotMeta, SnapshotFile)>> {
        let Some(path) = newest(&self.dir)? else {
            return Ok(None);
        };
        let opened = path.clone();
        let (meta, reader) = self
            .blocking(move || {
                let layout = read_layout(&opened)?;
                let meta: SnapshotMeta = codec::decode(&layout.meta)?;
                Ok((meta, ArchiveReader::open(&opened.join(FILES), &layout)?))
            })
            .await?;
        Ok(Some((
            meta,
            SnapshotFile::reading(path, reader, self.io.clone()),
        )))
    }

    /// Builds a snapshot of the live state database: a checkpoint (hard links), read
    /// once for the archive's checksum. When the newest snapshot has the same state in
    /// the same files, that one is returned instead.
    pub async fn build(&self, state: &Arc<StateStore>) -> Result<(SnapshotMeta, SnapshotFile)> {
        let started = Instant::now();
        let build = self.temp_path("build");
        let (state, dir) = (state.clone(), self.dir.clone());
        let (meta, reader, path, bytes, fresh) = self
            .blocking(move || {
                let result = (|| {
                    fs::create_dir(&build).map_err(Error::io(&build))?;
                    let files = build.join(FILES);
                    state.current().checkpoint(&files)?;
                    let (last_log_id, last_membership) = checkpoint_applied_state(&files)?;
                    // The same state in the same files (compaction rewrites files without
                    // changing the state; linking the new ones lets the old ones go).
                    if let Some(newest) = newest(&dir)?
                        && let Ok(layout) = read_layout(&newest)
                        && let Ok(meta) = codec::decode::<SnapshotMeta>(&layout.meta)
                        && meta.last_log_id == last_log_id
                        && meta.last_membership == last_membership
                        && same_files(&files, &layout)?
                    {
                        let reader = ArchiveReader::open(&newest.join(FILES), &layout)?;
                        return Ok((meta, reader, newest, layout.len(), false));
                    }
                    let name = snapshot_name(last_log_id.as_ref());
                    let meta = SnapshotMeta {
                        last_log_id,
                        last_membership,
                        snapshot_id: name.clone(),
                    };
                    let layout = Layout::scan(&files, codec::encode(&meta)?)?;
                    write_layout(&build, &layout)?;
                    let path = dir.join(name);
                    remove(&path)?;
                    fs::rename(&build, &path).map_err(Error::io(&path))?;
                    sync_dir(&dir)?;
                    // Opened before pruning: were a newer snapshot installed meanwhile,
                    // this one stays readable as long as it is sent.
                    let reader = ArchiveReader::open(&path.join(FILES), &layout)?;
                    prune(&dir)?;
                    Ok((meta, reader, path, layout.len(), true))
                })();
                let _ = remove(&build);
                result
            })
            .await?;
        let seconds = started.elapsed().as_secs_f64();
        if fresh {
            tracing::info!(
                snapshot = %meta.snapshot_id,
                bytes,
                seconds,
                "snapshot built: {:.0} MB in {seconds:.1} s",
                megabytes(bytes)
            );
        } else {
            tracing::debug!(snapshot = %meta.snapshot_id, "nothing applied since the last snapshot");
        }
        Ok((meta, SnapshotFile::reading(path, reader, self.io.clone())))
    }

    /// Something to receive a snapshot into: it is unpacked as it arrives.
    pub async fn begin_receiving(&self) -> Result<SnapshotFile> {
        let path = self.temp_path("unpack");
        let dest = path.clone();
        let unpacker = self.blocking(move || Unpacker::new(&dest)).await?;
        Ok(SnapshotFile {
            path,
            inner: Inner::Receiving {
                unpacker: Offloaded::new(self.io.clone(), unpacker),
                writing: None,
            },
        })
    }

    /// Installs a received snapshot: checks it, replaces the state database with it and
    /// keeps it as the current snapshot (hard links to the state's files).
    pub async fn install(
        &self,
        meta: &SnapshotMeta,
        data: SnapshotFile,
        state: &Arc<StateStore>,
    ) -> Result<()> {
        let started = Instant::now();
        let io_error = |path: &Path| Error::io(path.to_path_buf());
        let (received, handed) = match data.inner {
            Inner::Receiving { unpacker, .. } => (
                Some(unpacker.into_inner().await.map_err(io_error(&data.path))?),
                None,
            ),
            Inner::Reading { reader, .. } => (
                None,
                Some(reader.into_inner().await.map_err(io_error(&data.path))?),
            ),
        };
        let unpack = self.temp_path("unpack");
        let build = self.temp_path("build");
        let (state, dir, expected) = (state.clone(), self.dir.clone(), meta.clone());
        let arrival = self
            .blocking(move || {
                let (unpacker, arrival) = match (received, handed) {
                    (Some(unpacker), _) => {
                        let arrival = (unpacker.written(), unpacker.started().elapsed());
                        (*unpacker, Some(arrival))
                    }
                    (None, Some(mut reader)) => {
                        // Handed over in-process (openraft's storage tests): its archive
                        // is unpacked here.
                        let mut unpacker = Unpacker::new(&unpack)?;
                        reader
                            .seek(SeekFrom::Start(0))
                            .map_err(Error::io(&unpack))?;
                        io::copy(&mut *reader, &mut unpacker).map_err(Error::io(&unpack))?;
                        (unpacker, None)
                    }
                    (None, None) => return Err(Error::Task("no snapshot data".into())),
                };
                let (unpacked, layout) = unpacker.finish()?;
                let result = (|| {
                    let packed: SnapshotMeta = codec::decode(&layout.meta)?;
                    if packed.last_log_id != expected.last_log_id
                        || packed.last_membership != expected.last_membership
                    {
                        return Err(Error::corrupt(
                            "received snapshot",
                            format!(
                                "archive is for {:?}, the leader announced {:?}",
                                packed.last_log_id, expected.last_log_id
                            ),
                        ));
                    }
                    let (applied, _) = checkpoint_applied_state(&unpacked)?;
                    if applied != expected.last_log_id {
                        return Err(Error::corrupt(
                            "received snapshot",
                            format!(
                                "state is at {applied:?}, meta says {:?}",
                                expected.last_log_id
                            ),
                        ));
                    }
                    // Kept as this replica's snapshot, linked before the files become
                    // the state (an open database replaces its manifest).
                    fs::create_dir(&build).map_err(Error::io(&build))?;
                    link_checkpoint(&unpacked, &build.join(FILES), &layout)?;
                    write_layout(&build, &layout)?;
                    state.replace_with(&unpacked)?;
                    let keep = dir.join(snapshot_name(expected.last_log_id.as_ref()));
                    remove(&keep)?;
                    fs::rename(&build, &keep).map_err(Error::io(&keep))?;
                    sync_dir(&dir)?;
                    prune(&dir)
                })();
                let _ = remove(&unpacked);
                let _ = remove(&build);
                result.map(|()| arrival)
            })
            .await?;
        if let Some((bytes, took)) = arrival {
            let seconds = took.as_secs_f64();
            tracing::info!(
                snapshot = %meta.snapshot_id,
                bytes,
                seconds,
                "snapshot received: {:.0} MB in {seconds:.1} s",
                megabytes(bytes)
            );
        }
        let seconds = started.elapsed().as_secs_f64();
        tracing::info!(snapshot = %meta.snapshot_id, seconds, "snapshot installed in {seconds:.1} s");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use rill_protocol::Term;
    use rocksdb::WriteBatch;
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::*;
    use crate::state_store::put_applied;
    use crate::types::log_id;

    #[test]
    fn names_sort_by_index() {
        let a = snapshot_name(Some(&log_id(Term(3), 1, 99)));
        assert_eq!(snapshot_index(&a), Some(99));
        assert_eq!(snapshot_index(&format!("{a}.snap")), Some(99));
        assert_eq!(snapshot_index("unpack-3"), None);
        assert_eq!(snapshot_index("snapshot-empty"), Some(0));
        assert_eq!(snapshot_index("snapshot-empty.snap"), Some(0));
    }

    /// 10 KB that do not compress, different for each row.
    fn row(row: u32) -> Vec<u8> {
        let mut x = u64::from(row) * 2_654_435_761 + 1;
        (0..10_000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect()
    }

    /// A state store with `rows` rows of 10 KB written at log index `index`.
    fn state_at(dir: &Path, rows: u32, index: u64) -> Arc<StateStore> {
        let state = Arc::new(StateStore::open(dir).unwrap());
        let mut batch = WriteBatch::default();
        for n in 0..rows {
            batch.put(n.to_be_bytes(), row(n));
        }
        put_applied(&mut batch, &log_id(Term(1), 0, index), None).unwrap();
        state.current().write(batch).unwrap();
        state
    }

    /// Names in `dir`, sorted.
    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// (device, inode) of every SST file under `dir`.
    fn sst_inodes(dir: &Path) -> Vec<(u64, u64)> {
        let mut inodes: Vec<(u64, u64)> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
            .map(|e| {
                let meta = e.metadata().unwrap();
                (meta.dev(), meta.ino())
            })
            .collect();
        inodes.sort();
        inodes
    }

    /// Sends `from` into `to` as openraft's chunked transport does: the length, then
    /// each chunk read at its offset and written at the same offset.
    async fn send(from: &mut SnapshotFile, to: &mut SnapshotFile, chunk: usize) -> u64 {
        let end = from.seek(SeekFrom::End(0)).await.unwrap();
        let mut offset = 0;
        while offset < end {
            from.seek(SeekFrom::Start(offset)).await.unwrap();
            let mut buf = Vec::with_capacity(chunk);
            while buf.len() < chunk && from.read_buf(&mut buf).await.unwrap() > 0 {}
            if to.stream_position().await.unwrap() != offset {
                to.seek(SeekFrom::Start(offset)).await.unwrap();
            }
            to.write_all(&buf).await.unwrap();
            offset += buf.len() as u64;
        }
        to.shutdown().await.unwrap();
        end
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_snapshot_is_a_checkpoint_of_hard_links_and_only_the_newest_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let state = state_at(&dir.path().join("state"), 300, 10);
        let store = SnapshotStore::open(&dir.path().join("snapshots"), Handle::current()).unwrap();
        let (first, _) = store.build(&state).await.unwrap();
        assert_eq!(first.last_log_id, Some(log_id(Term(1), 0, 10)));

        // Nothing applied since: the same snapshot.
        let (again, _) = store.build(&state).await.unwrap();
        assert_eq!(again, first);

        let mut batch = WriteBatch::default();
        batch.put(b"more", b"state");
        put_applied(&mut batch, &log_id(Term(1), 0, 11), None).unwrap();
        state.current().write(batch).unwrap();
        let (second, _) = store.build(&state).await.unwrap();
        assert_eq!(second.last_log_id, Some(log_id(Term(1), 0, 11)));

        // One snapshot on disk, no work in progress, and its SST files are the state
        // database's own (hard links), not copies.
        assert_eq!(entries(store.dir()), ["snapshot-00000000000000000011-1-0"]);
        let kept = store.dir().join("snapshot-00000000000000000011-1-0");
        let linked = sst_inodes(&kept.join(FILES));
        assert!(!linked.is_empty());
        let live = sst_inodes(state.current().path());
        assert!(
            linked.iter().all(|inode| live.contains(inode)),
            "{linked:?} {live:?}"
        );

        let (current, _) = store.current().await.unwrap().unwrap();
        assert_eq!(current, second);

        // Compaction rewrites the files, not the state: the next snapshot links the new
        // files, so the old ones are not kept alive by it.
        let db = state.current();
        db.db().compact_range::<&[u8], &[u8]>(None, None);
        let live = sst_inodes(db.path());
        assert!(
            linked.iter().any(|inode| !live.contains(inode)),
            "compacted"
        );
        let (third, _) = store.build(&state).await.unwrap();
        assert_eq!(third, second);
        let relinked = sst_inodes(&kept.join(FILES));
        assert!(
            relinked.iter().all(|inode| live.contains(inode)),
            "{relinked:?} {live:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_snapshot_received_in_chunks_becomes_the_state_and_the_only_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let leader_state = state_at(&dir.path().join("leader-state"), 500, 42);
        let leader =
            SnapshotStore::open(&dir.path().join("leader-snapshots"), Handle::current()).unwrap();
        let (meta, mut sent) = leader.build(&leader_state).await.unwrap();

        let state = state_at(&dir.path().join("state"), 1, 3);
        let store = SnapshotStore::open(&dir.path().join("snapshots"), Handle::current()).unwrap();
        // An older snapshot of this replica, replaced by the one received.
        store.build(&state).await.unwrap();

        // A transfer given up halfway leaves nothing behind.
        let mut abandoned = store.begin_receiving().await.unwrap();
        let partial = abandoned.path().to_path_buf();
        let mut head = vec![0; 100_000];
        sent.read_exact(&mut head).await.unwrap();
        abandoned.write_all(&head).await.unwrap();
        assert!(partial.exists());
        drop(abandoned);
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while partial.exists() {
            assert!(Instant::now() < deadline, "{partial:?} is left behind");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }

        let mut receiving = store.begin_receiving().await.unwrap();
        let len = send(&mut sent, &mut receiving, 300_000).await;
        store.install(&meta, receiving, &state).await.unwrap();

        assert_eq!(
            state.applied_state().unwrap().0,
            Some(log_id(Term(1), 0, 42))
        );
        let seventh = state.current().db().get(7u32.to_be_bytes()).unwrap();
        assert_eq!(seventh, Some(row(7)));
        assert!(len > 5_000_000, "{len} bytes sent");
        assert_eq!(entries(store.dir()), ["snapshot-00000000000000000042-1-0"]);
        let kept = store.dir().join("snapshot-00000000000000000042-1-0");
        let linked = sst_inodes(&kept.join(FILES));
        assert!(!linked.is_empty());
        let live = sst_inodes(state.current().path());
        assert!(
            linked.iter().all(|inode| live.contains(inode)),
            "{linked:?} {live:?}"
        );

        // The replica sends what it received, byte for byte.
        let (current, mut stored) = store.current().await.unwrap().unwrap();
        assert_eq!(current, meta);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        stored.read_to_end(&mut a).await.unwrap();
        sent.seek(SeekFrom::Start(0)).await.unwrap();
        sent.read_to_end(&mut b).await.unwrap();
        assert_eq!(a.len() as u64, len);
        assert!(
            a == b,
            "the stored snapshot reads as the archive that was sent"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_snapshot_that_does_not_match_its_announcement_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let leader_state = state_at(&dir.path().join("leader-state"), 10, 42);
        let leader =
            SnapshotStore::open(&dir.path().join("leader-snapshots"), Handle::current()).unwrap();
        let (meta, mut sent) = leader.build(&leader_state).await.unwrap();
        let state = state_at(&dir.path().join("state"), 1, 3);
        let store = SnapshotStore::open(&dir.path().join("snapshots"), Handle::current()).unwrap();
        let mut receiving = store.begin_receiving().await.unwrap();
        send(&mut sent, &mut receiving, 1 << 20).await;
        let announced = SnapshotMeta {
            last_log_id: Some(log_id(Term(1), 0, 43)),
            ..meta
        };
        assert!(store.install(&announced, receiving, &state).await.is_err());
        assert_eq!(
            state.applied_state().unwrap().0,
            Some(log_id(Term(1), 0, 3))
        );
        assert!(
            entries(store.dir()).is_empty(),
            "{:?}",
            entries(store.dir())
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_older_versions_archive_is_unpacked_into_a_snapshot_directory_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let state = state_at(&dir.path().join("state"), 50, 7);
        let store = SnapshotStore::open(&dir.path().join("built"), Handle::current()).unwrap();
        let (meta, mut built) = store.build(&state).await.unwrap();
        let mut archive = Vec::new();
        built.read_to_end(&mut archive).await.unwrap();

        // What an older Rill left: its archive, an older one, and a partial transfer.
        let old = dir.path().join("snapshots");
        fs::create_dir(&old).unwrap();
        fs::write(old.join("snapshot-00000000000000000007-1-0.snap"), &archive).unwrap();
        fs::write(old.join("snapshot-00000000000000000005-1-0.snap"), b"older").unwrap();
        fs::write(old.join("receiving-1.part"), b"partial").unwrap();
        let store = SnapshotStore::open(&old, Handle::current()).unwrap();
        assert_eq!(entries(&old), ["snapshot-00000000000000000007-1-0"]);
        let (current, mut stored) = store.current().await.unwrap().unwrap();
        assert_eq!(current, meta);
        let mut again = Vec::new();
        stored.read_to_end(&mut again).await.unwrap();
        assert!(again == archive, "read back as the very same archive");
    }
}
