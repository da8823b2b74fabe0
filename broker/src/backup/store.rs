//! Backup stores: what taking, restoring and the API need of a place backups are kept
//! ([`BackupStore`]), with a directory ([`FilesystemStore`]) and S3-compatible object
//! storage (`super::s3::S3Store`) behind it. Both lay a backup out the same way:
//!
//! ```text
//! <base>/<backupId>/partition-<p>/
//!   status.json     state (IN_PROGRESS, COMPLETED, FAILED), failure reason, sizes
//!   manifest.json   the cut, the cluster's shape, every data file with size and SHA-256
//!   <cf>-<n>.kv     the state's column families at the cut (see `format`)
//! ```
//! A reader sees a whole file or none (a rename in a directory, one object in S3).
//! `status.json` is written last as COMPLETED, after the manifest and the data are
//! stored.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The state of a backup, or of one partition's part of it (Zeebe's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BackupState {
    Completed,
    InProgress,
    Failed,
    /// Some partitions have their part, others none (the checkpoint did not reach them,
    /// or the leader that applied it did not take it).
    Incomplete,
    DoesNotExist,
}

/// One data file of a partition's part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub name: String,
    pub size: u64,
    /// Lower-case hex.
    pub sha256: String,
}

/// What a partition's part holds and where it was cut.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionManifest {
    pub backup_id: u64,
    pub partition_id: u16,
    /// The broker that took it (the partition's leader).
    pub node_id: u32,
    /// The partition count in the partition's state at the cut.
    pub partition_count: u16,
    /// `rill_broker::DATA_FORMAT` of the broker that took it.
    pub data_format: u32,
    pub broker_version: String,
    /// The last record position before the checkpoint.
    pub checkpoint_position: u64,
    /// The raft index of the entry carrying the checkpoint.
    pub log_index: u64,
    /// The checkpoint entry's timestamp (epoch milliseconds).
    pub checkpoint_timestamp: i64,
    pub files: Vec<FileEntry>,
}

/// The status of a partition's part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionBackupStatus {
    pub backup_id: u64,
    pub partition_id: u16,
    pub node_id: u32,
    pub state: BackupState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub checkpoint_position: u64,
    /// The checkpoint entry's timestamp (epoch milliseconds).
    pub created_at: i64,
    /// When the status was last written (epoch milliseconds, the broker's clock).
    pub last_updated: i64,
    /// Bytes of data files written so far.
    pub size_bytes: u64,
    pub file_count: u64,
    pub broker_version: String,
}

pub(super) const STATUS: &str = "status.json";
pub(super) const MANIFEST: &str = "manifest.json";

/// A backup store as taking, restoring and the API use it.
pub type Store = std::sync::Arc<dyn BackupStore>;

/// What taking, restoring and the backup API need of a place backups are kept. Errors
/// are messages that name the file or object and what went wrong.
///
/// Calls block: they run on the backup's own threads, `spawn_blocking` or the restore's
/// thread, never on a runtime's worker.
pub trait BackupStore: Send + Sync + std::fmt::Debug {
    /// Where the backups are, for messages: a directory, or `s3://bucket/prefix`.
    fn location(&self) -> String;

    /// Checks that the store can be used (at start): the error names the setting to fix.
    fn check(&self) -> Result<(), String>;

    /// Writes a part's status; with `sync`, durably before it returns.
    fn write_status(&self, status: &PartitionBackupStatus, sync: bool) -> Result<(), String>;

    /// Writes a part's manifest, durably.
    fn write_manifest(&self, manifest: &PartitionManifest) -> Result<(), String>;

    fn status(
        &self,
        backup_id: u64,
        partition: u16,
    ) -> Result<Option<PartitionBackupStatus>, String>;

    fn manifest(&self, backup_id: u64, partition: u16)
    -> Result<Option<PartitionManifest>, String>;

    /// The ids of the backups in the store, ascending.
    fn backup_ids(&self) -> Result<Vec<u64>, String>;

    /// The partitions that have a part of `backup_id`, ascending.
    fn partitions(&self, backup_id: u64) -> Result<Vec<u16>, String>;

    /// Removes a backup. Returns whether there was one.
    fn delete(&self, backup_id: u64) -> Result<bool, String>;

    /// A new data file of a part: written in order, stored whole by `finish`.
    fn create_file(
        &self,
        backup_id: u64,
        partition: u16,
        name: &str,
    ) -> Result<Box<dyn FileSink>, String>;

    /// Reads a data file of a part, in order. `what` is how errors name it.
    fn open_file(
        &self,
        backup_id: u64,
        partition: u16,
        name: &str,
    ) -> Result<(Box<dyn std::io::Read + Send>, String), String>;

    /// Every data file of a part is finished: makes them durable together.
    fn files_finished(&self, _backup_id: u64, _partition: u16) -> Result<(), String> {
        Ok(())
    }

    /// Marks the parts `node` left `IN_PROGRESS` as `FAILED`: called when the broker
    /// starts, when none of its parts can still be running (an upload does not survive
    /// a restart: the state it read is gone). Returns the parts marked.
    fn fail_interrupted(&self, node: u32, now: i64) -> Result<Vec<(u64, u16)>, String> {
        let mut marked = Vec::new();
        for backup_id in self.backup_ids()? {
            for partition in self.partitions(backup_id)? {
                let Some(mut status) = self.status(backup_id, partition)? else {
                    continue;
                };
                if status.state != BackupState::InProgress || status.node_id != node {
                    continue;
                }
                status.state = BackupState::Failed;
                status.failure_reason = Some(format!(
                    "broker {node} stopped while it took this part; take a new backup"
                ));
                status.last_updated = now;
                self.write_status(&status, true)?;
                marked.push((backup_id, partition));
            }
        }
        Ok(marked)
    }
}

/// A data file being written into a store.
pub trait FileSink: Send {
    fn write(&mut self, bytes: &[u8]) -> Result<(), String>;
    /// Stores the file whole: no reader sees a part of it.
    fn finish(self: Box<Self>) -> Result<(), String>;
}

/// The configured store, if any (`backup.store`). The S3 store is checked for access
/// only by [`BackupStore::check`].
pub fn configured_store(config: &rill_config::BackupConfig) -> Result<Option<Store>, String> {
    Ok(match config.store {
        rill_config::BackupStoreKind::Filesystem => config
            .filesystem
            .base_path
            .clone()
            .map(|base| std::sync::Arc::new(FilesystemStore::new(base)) as Store),
        rill_config::BackupStoreKind::S3 => Some(std::sync::Arc::new(
            super::s3::S3Store::from_config(&config.s3, &super::s3::Environment::process())?,
        ) as Store),
        rill_config::BackupStoreKind::None => None,
    })
}

/// Backups under one directory (`backup.filesystem.base-path`).
#[derive(Clone, Debug)]
pub struct FilesystemStore {
    base: PathBuf,
}

impl FilesystemStore {
    pub fn new(base: impl Into<PathBuf>) -> FilesystemStore {
        FilesystemStore { base: base.into() }
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    pub fn backup_dir(&self, backup_id: u64) -> PathBuf {
        self.base.join(backup_id.to_string())
    }

    pub fn partition_dir(&self, backup_id: u64, partition: u16) -> PathBuf {
        self.backup_dir(backup_id)
            .join(format!("partition-{partition}"))
    }
}

impl BackupStore for FilesystemStore {
    fn location(&self) -> String {
        self.base.display().to_string()
    }

    fn check(&self) -> Result<(), String> {
        // Created when the first backup is written; a path that exists must be a
        // directory.
        match std::fs::metadata(&self.base) {
            Ok(meta) if !meta.is_dir() => Err(format!(
                "backup.filesystem.base-path: {} is not a directory",
                self.base.display()
            )),
            _ => Ok(()),
        }
    }

    fn write_status(&self, status: &PartitionBackupStatus, sync: bool) -> Result<(), String> {
        let dir = self.partition_dir(status.backup_id, status.partition_id);
        write_json(&dir, STATUS, status, sync)
    }

    fn write_manifest(&self, manifest: &PartitionManifest) -> Result<(), String> {
        let dir = self.partition_dir(manifest.backup_id, manifest.partition_id);
        write_json(&dir, MANIFEST, manifest, true)
    }

    fn status(
        &self,
        backup_id: u64,
        partition: u16,
    ) -> Result<Option<PartitionBackupStatus>, String> {
        read_json(&self.partition_dir(backup_id, partition).join(STATUS))
    }

    fn manifest(
        &self,
        backup_id: u64,
        partition: u16,
    ) -> Result<Option<PartitionManifest>, String> {
        read_json(&self.partition_dir(backup_id, partition).join(MANIFEST))
    }

    fn backup_ids(&self) -> Result<Vec<u64>, String> {
        let entries = match std::fs::read_dir(&self.base) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("cannot list {}: {e}", self.base.display())),
        };
        let mut ids: Vec<u64> = entries
            .flatten()
            .filter(|entry| entry.path().is_dir())
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn partitions(&self, backup_id: u64) -> Result<Vec<u16>, String> {
        let dir = self.backup_dir(backup_id);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
        };
        let mut partitions: Vec<u16> = entries
            .flatten()
            .filter_map(|entry| parse_partition(entry.file_name().to_str()?))
            .collect();
        partitions.sort_unstable();
        Ok(partitions)
    }

    fn delete(&self, backup_id: u64) -> Result<bool, String> {
        let dir = self.backup_dir(backup_id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot remove {}: {e}", dir.display())),
        }
    }

    fn create_file(
        &self,
        backup_id: u64,
        partition: u16,
        name: &str,
    ) -> Result<Box<dyn FileSink>, String> {
        let dir = self.partition_dir(backup_id, partition);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let temporary = dir.join(format!(".{name}.tmp"));
        let file = std::fs::File::create(&temporary)
            .map_err(|e| format!("cannot create {}: {e}", temporary.display()))?;
        Ok(Box::new(DirectoryFile {
            path: dir.join(name),
            temporary,
            out: std::io::BufWriter::with_capacity(1 << 20, file),
        }))
    }

    fn open_file(
        &self,
        backup_id: u64,
        partition: u16,
        name: &str,
    ) -> Result<(Box<dyn std::io::Read + Send>, String), String> {
        let path = self.partition_dir(backup_id, partition).join(name);
        let what = path.display().to_string();
        let file = std::fs::File::open(&path).map_err(|e| format!("cannot read {what}: {e}"))?;
        Ok((Box::new(file), what))
    }

    fn files_finished(&self, backup_id: u64, partition: u16) -> Result<(), String> {
        sync_dir(&self.partition_dir(backup_id, partition))
    }
}

/// `partition-<p>` as `p`.
pub(super) fn parse_partition(name: &str) -> Option<u16> {
    name.strip_prefix("partition-")?.parse().ok()
}

/// A data file written under a temporary name, synced and renamed when finished.
struct DirectoryFile {
    path: PathBuf,
    temporary: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl FileSink for DirectoryFile {
    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.out
            .write_all(bytes)
            .map_err(|e| format!("cannot write {}: {e}", self.temporary.display()))
    }

    fn finish(self: Box<Self>) -> Result<(), String> {
        let DirectoryFile {
            path,
            temporary,
            mut out,
        } = *self;
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        out.flush().map_err(fail)?;
        out.get_ref().sync_all().map_err(fail)?;
        std::fs::rename(&temporary, &path).map_err(fail)
    }
}

/// Writes `value` as `dir/name` through a temporary file and a rename; with `sync`, the
/// file and the directory are synced.
fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T, sync: bool) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(name);
    // Unique per writer: two brokers may briefly both believe they lead.
    let temporary = dir.join(format!(
        ".{name}.{}.{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| format!("encode {name}: {e}"))?;
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut file = std::fs::File::create(&temporary).map_err(fail)?;
    file.write_all(&bytes).map_err(fail)?;
    if sync {
        file.sync_all().map_err(fail)?;
    }
    drop(file);
    std::fs::rename(&temporary, &path).map_err(fail)?;
    if sync {
        sync_dir(dir)?;
    }
    Ok(())
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), String> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot sync {}: {e}", dir.display()))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{} is not readable: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// When the latest completed part in `store` was written (epoch milliseconds).
pub fn latest_completed(store: &dyn BackupStore) -> Result<Option<i64>, String> {
    let mut latest = None;
    for backup_id in store.backup_ids()?.into_iter().rev() {
        for partition in store.partitions(backup_id)? {
            if let Some(status) = store.status(backup_id, partition)?
                && status.state == BackupState::Completed
            {
                latest = latest.max(Some(status.last_updated));
            }
        }
    }
    Ok(latest)
}

/// The state of a whole backup from its partitions' states (`None`: no part), as Zeebe
/// sums them up.
pub fn overall_state(parts: &[Option<BackupState>]) -> BackupState {
    let present: Vec<BackupState> = parts.iter().flatten().copied().collect();
    if present.is_empty() {
        BackupState::DoesNotExist
    } else if present.contains(&BackupState::Failed) {
        BackupState::Failed
    } else if present.len() == parts.len() && present.iter().all(|s| *s == BackupState::Completed) {
        BackupState::Completed
    } else if present.len() == parts.len() && present.contains(&BackupState::InProgress) {
        BackupState::InProgress
    } else {
        // A part missing (Camunda 8.10's rule: before in progress), or mixed states.
        BackupState::Incomplete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_is_summed_up_from_its_parts() {
        use BackupState::*;
        assert_eq!(overall_state(&[None, None]), DoesNotExist);
        assert_eq!(
            overall_state(&[Some(Completed), Some(Completed)]),
            Completed
        );
        assert_eq!(overall_state(&[Some(Completed), None]), Incomplete);
        assert_eq!(overall_state(&[Some(InProgress), None]), Incomplete);
        assert_eq!(
            overall_state(&[Some(InProgress), Some(Completed)]),
            InProgress
        );
        assert_eq!(overall_state(&[Some(InProgress), Some(Failed)]), Failed);
    }

    #[test]
    fn ids_and_partitions_are_listed_and_a_backup_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store = FilesystemStore::new(dir.path());
        assert_eq!(store.backup_ids().unwrap(), Vec::<u64>::new());
        let status = |backup_id, partition_id| PartitionBackupStatus {
            backup_id,
            partition_id,
            node_id: 0,
            state: BackupState::InProgress,
            failure_reason: None,
            checkpoint_position: 7,
            created_at: 1,
            last_updated: 2,
            size_bytes: 0,
            file_count: 0,
            broker_version: "test".into(),
        };
        store.write_status(&status(10, 2), false).unwrap();
        store.write_status(&status(10, 1), true).unwrap();
        store.write_status(&status(3, 1), true).unwrap();
        std::fs::create_dir(dir.path().join("not-a-backup")).unwrap();
        assert_eq!(store.backup_ids().unwrap(), vec![3, 10]);
        assert_eq!(store.partitions(10).unwrap(), vec![1, 2]);
        assert_eq!(store.status(10, 2).unwrap(), Some(status(10, 2)));
        assert_eq!(store.status(10, 3).unwrap(), None);
        // A restart of node 0 fails its parts left in progress, and only those.
        let mut other = status(10, 3);
        other.node_id = 1;
        store.write_status(&other, true).unwrap();
        assert_eq!(
            store.fail_interrupted(0, 9).unwrap(),
            vec![(3, 1), (10, 1), (10, 2)]
        );
        let failed = store.status(10, 2).unwrap().unwrap();
        assert_eq!(failed.state, BackupState::Failed);
        assert!(failed.failure_reason.unwrap().contains("broker 0 stopped"));
        assert_eq!(
            store.status(10, 3).unwrap().unwrap().state,
            BackupState::InProgress
        );
        assert_eq!(store.fail_interrupted(0, 10).unwrap(), vec![]);
        assert!(store.delete(10).unwrap());
        assert!(!store.delete(10).unwrap());
        assert_eq!(store.backup_ids().unwrap(), vec![3]);
    }
}
