//! Snapshots: a RocksDB checkpoint of the state database at an applied log id, packed
//! into one archive file (see `archive`), kept in `snapshots/` and streamed by openraft
//! to replicas that are behind the purged log.
//!
//! Files in `snapshots/`: `snapshot-<index>-<term>-<node>.snap` (complete, newest wins),
//! `receiving-<n>.part` (arriving from a leader), `build-<n>/` and `unpack-<n>/`
//! (temporary directories). Anything but the newest snapshot is removed on open.

use std::fs;
use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use rill_protocol::codec;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::runtime::Handle;

use crate::archive;
use crate::error::{Error, Result};
use crate::state_store::{StateStore, checkpoint_applied_state, sync_dir};
use crate::types::{LogId, SnapshotMeta};

/// Snapshot data as openraft handles it: an archive file and where it lives.
#[derive(Debug)]
pub struct SnapshotFile {
    file: tokio::fs::File,
    path: PathBuf,
    /// When receiving it began (a file being received from a leader).
    receiving_since: Option<Instant>,
}

impl SnapshotFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AsyncRead for SnapshotFile {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.file).poll_read(cx, buf)
    }
}

impl AsyncWrite for SnapshotFile {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.file).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.file).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.file).poll_shutdown(cx)
    }
}

impl AsyncSeek for SnapshotFile {
    fn start_seek(mut self: Pin<&mut Self>, position: SeekFrom) -> std::io::Result<()> {
        Pin::new(&mut self.file).start_seek(position)
    }

    fn poll_complete(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<u64>> {
        Pin::new(&mut self.file).poll_complete(cx)
    }
}

/// The snapshots of one partition.
pub struct SnapshotStore {
    dir: PathBuf,
    io: Handle,
    next_temp: AtomicU64,
}

fn snapshot_name(last: Option<&LogId>) -> String {
    match last {
        Some(id) => format!(
            "snapshot-{:020}-{}-{}.snap",
            id.index, id.leader_id.term, id.leader_id.node_id
        ),
        None => "snapshot-empty.snap".to_owned(),
    }
}

/// The log index a snapshot file name stands for (`None` for other files).
fn snapshot_index(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("snapshot-")?.strip_suffix(".snap")?;
    if rest == "empty" {
        return Some(0);
    }
    rest.split('-').next()?.parse().ok()
}

/// Removes complete snapshots in `dir` other than `keep`.
fn prune(dir: &Path, keep: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
        let entry = entry.map_err(Error::io(dir))?;
        let path = entry.path();
        if path != keep && snapshot_index(&entry.file_name().to_string_lossy()).is_some() {
            fs::remove_file(&path).map_err(Error::io(&path))?;
        }
    }
    Ok(())
}

impl SnapshotStore {
    /// Opens `dir`, cleaning up temporary files and all but the newest snapshot.
    pub fn open(dir: &Path, io: Handle) -> Result<SnapshotStore> {
        fs::create_dir_all(dir).map_err(Error::io(dir))?;
        let store = SnapshotStore {
            dir: dir.to_path_buf(),
            io,
            next_temp: AtomicU64::new(1),
        };
        let newest = store.newest()?;
        for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
            let entry = entry.map_err(Error::io(dir))?;
            let path = entry.path();
            if Some(&path) == newest.as_ref() {
                continue;
            }
            let removed = if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            removed.map_err(Error::io(&path))?;
        }
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn temp_path(&self, prefix: &str) -> PathBuf {
        let n = self.next_temp.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{prefix}-{n}"))
    }

    /// The path of the newest complete snapshot.
    fn newest(&self) -> Result<Option<PathBuf>> {
        let mut best: Option<(u64, PathBuf)> = None;
        for entry in fs::read_dir(&self.dir).map_err(Error::io(&self.dir))? {
            let entry = entry.map_err(Error::io(&self.dir))?;
            let name = entry.file_name();
            if let Some(index) = snapshot_index(&name.to_string_lossy())
                && best.as_ref().is_none_or(|(b, _)| index > *b)
            {
                best = Some((index, entry.path()));
            }
        }
        Ok(best.map(|(_, path)| path))
    }

    async fn open_file(path: PathBuf) -> Result<SnapshotFile> {
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(Error::io(&path))?;
        Ok(SnapshotFile {
            file,
            path,
            receiving_since: None,
        })
    }

    /// The newest complete snapshot, if any.
    pub async fn current(&self) -> Result<Option<(SnapshotMeta, SnapshotFile)>> {
        let Some(path) = self.newest()? else {
            return Ok(None);
        };
        let meta: SnapshotMeta = codec::decode(&archive::read_meta(&path)?)?;
        Ok(Some((meta, Self::open_file(path).await?)))
    }

    /// Builds a snapshot of the live state database.
    pub async fn build(
        &self,
        state: &std::sync::Arc<StateStore>,
    ) -> Result<(SnapshotMeta, SnapshotFile)> {
        let started = Instant::now();
        let checkpoint = self.temp_path("build");
        let partial = self.temp_path("packing");
        let state = state.clone();
        let dir = self.dir.clone();
        let built = self
            .io
            .spawn_blocking(move || -> Result<(SnapshotMeta, PathBuf)> {
                let result = (|| {
                    state.current().checkpoint(&checkpoint)?;
                    let (last_log_id, last_membership) = checkpoint_applied_state(&checkpoint)?;
                    let meta = SnapshotMeta {
                        last_log_id,
                        last_membership,
                        snapshot_id: snapshot_name(last_log_id.as_ref()),
                    };
                    archive::pack(&checkpoint, &codec::encode(&meta)?, &partial)?;
                    let path = dir.join(snapshot_name(meta.last_log_id.as_ref()));
                    fs::rename(&partial, &path).map_err(Error::io(&path))?;
                    sync_dir(&dir)?;
                    prune(&dir, &path)?;
                    Ok((meta, path))
                })();
                let _ = fs::remove_dir_all(&checkpoint);
                let _ = fs::remove_file(&partial);
                result
            })
            .await
            .map_err(|e| Error::Task(e.to_string()))??;
        let (meta, path) = built;
        let bytes = fs::metadata(&path).map_or(0, |m| m.len());
        tracing::info!(
            snapshot = %meta.snapshot_id,
            bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "snapshot built: {:.0} MB in {:.1} s",
            bytes as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        Ok((meta, Self::open_file(path).await?))
    }

    /// A new empty file to receive a snapshot into.
    pub async fn begin_receiving(&self) -> Result<SnapshotFile> {
        let path = self.temp_path("receiving").with_extension("part");
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .await
            .map_err(Error::io(&path))?;
        Ok(SnapshotFile {
            file,
            path,
            receiving_since: Some(Instant::now()),
        })
    }

    /// Installs a received snapshot: checks it, replaces the state database with it and
    /// keeps it as the current snapshot.
    pub async fn install(
        &self,
        meta: &SnapshotMeta,
        mut data: SnapshotFile,
        state: &std::sync::Arc<StateStore>,
    ) -> Result<()> {
        use tokio::io::AsyncWriteExt;
        let started = Instant::now();
        if let Some(since) = data.receiving_since {
            tracing::info!(
                snapshot = %meta.snapshot_id,
                elapsed_ms = since.elapsed().as_millis() as u64,
                "snapshot received in {:.1} s",
                since.elapsed().as_secs_f64()
            );
        }
        data.file.flush().await.map_err(Error::io(&data.path))?;
        let final_path = self.dir.join(snapshot_name(meta.last_log_id.as_ref()));
        let received = data.path.clone();
        let ours = received.parent() == Some(self.dir.as_path())
            && received.extension().is_some_and(|e| e == "part");
        let mut source = data.file.into_std().await;
        let unpack_dir = self.temp_path("unpack");
        let copy_path = self.temp_path("copy").with_extension("part");
        let state = state.clone();
        let dir = self.dir.clone();
        let expected = meta.clone();
        let keep = final_path.clone();
        self.io
            .spawn_blocking(move || -> Result<()> {
                let staged = if ours {
                    source.sync_all().map_err(Error::io(&received))?;
                    received.clone()
                } else {
                    // Not a file we received (e.g. handed over in-process): copy it.
                    use std::io::{Seek, Write};
                    source
                        .seek(SeekFrom::Start(0))
                        .map_err(Error::io(&received))?;
                    let mut out = fs::File::create(&copy_path).map_err(Error::io(&copy_path))?;
                    std::io::copy(&mut source, &mut out).map_err(Error::io(&copy_path))?;
                    out.flush().map_err(Error::io(&copy_path))?;
                    out.sync_all().map_err(Error::io(&copy_path))?;
                    copy_path.clone()
                };
                drop(source);
                let result = (|| {
                    let packed: SnapshotMeta =
                        codec::decode(&archive::unpack(&staged, &unpack_dir)?)?;
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
                    let (applied, _) = checkpoint_applied_state(&unpack_dir)?;
                    if applied != expected.last_log_id {
                        return Err(Error::corrupt(
                            "received snapshot",
                            format!(
                                "state is at {applied:?}, meta says {:?}",
                                expected.last_log_id
                            ),
                        ));
                    }
                    state.replace_with(&unpack_dir)?;
                    fs::rename(&staged, &keep).map_err(Error::io(&keep))?;
                    sync_dir(&dir)?;
                    prune(&dir, &keep)
                })();
                let _ = fs::remove_dir_all(&unpack_dir);
                let _ = fs::remove_file(&staged);
                result
            })
            .await
            .map_err(|e| Error::Task(e.to_string()))??;
        tracing::info!(
            snapshot = %meta.snapshot_id,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "snapshot installed in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_index() {
        let a = snapshot_name(Some(&crate::types::log_id(3, 1, 99)));
        assert_eq!(snapshot_index(&a), Some(99));
        assert_eq!(snapshot_index("receiving-3.part"), None);
        assert_eq!(snapshot_index("snapshot-empty.snap"), Some(0));
    }
}
