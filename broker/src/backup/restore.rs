//! `rill restore`: a backup into an empty data directory, laid out as the partitions'
//! own storage, so that `rill broker` or `rill standalone` starts from it.
//!
//! Each partition this broker hosts gets the state at the cut (loaded into a new state
//! database), a log that starts after the cut (purged up to the checkpoint's entry), and
//! a snapshot of that state (for replicas that will need one). Nothing is written until
//! the backup's shape and every file's checksum are checked; a restore that fails later
//! removes what it wrote.

use std::path::Path;
use std::time::Duration;

use openraft::storage::RaftLogStorage;
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};
use rill_raft::{PartitionStorage, RaftTerm, StateOptions};
use rocksdb::WriteBatch;

use super::format::{read_file, verify};
use super::store::{BackupState, BackupStore, PartitionManifest};
use super::take::COLUMN_FAMILIES;

/// Why a restore was refused or failed; the message says what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RestoreError(pub String);

/// What a restore laid out.
#[derive(Debug, Clone)]
pub struct RestoredPartition {
    pub partition_id: u16,
    pub log_index: u64,
    pub checkpoint_position: u64,
    pub bytes: u64,
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    /// The directory held this backup's restore already (written by an earlier run):
    /// nothing was done. An init container that runs again on a pod restart relies on it.
    pub already: bool,
    pub partitions: Vec<RestoredPartition>,
}

/// Written last into a restored data directory: the backup id it was restored from.
const RESTORED_MARKER: &str = "RESTORED";

/// Restores backup `backup_id` from the store `config` names into `data_dir`, for the
/// broker `config` describes (its node id, the partitions it hosts).
pub fn restore(
    config: &RillConfig,
    backup_id: u64,
    data_dir: &Path,
) -> Result<Restored, RestoreError> {
    let fail = |message: String| RestoreError(message);
    if let Ok(text) = std::fs::read_to_string(data_dir.join(RESTORED_MARKER))
        && text.trim() == backup_id.to_string()
    {
        return Ok(Restored {
            already: true,
            partitions: Vec::new(),
        });
    }
    let store = super::store::configured_store(&config.backup)
        .map_err(fail)?
        .ok_or_else(|| {
            fail(format!(
                "backup.store is {}: set backup.store (and its settings) to the store the \
                 backup was taken to",
                config.backup.store.name()
            ))
        })?;
    check_empty(data_dir)?;
    store.check().map_err(fail)?;
    let store = store.as_ref();
    let manifests = check_backup(store, config, backup_id)?;
    let node = NodeId(config.cluster.node_id);
    let hosted = crate::partitions_of(node, config);
    for partition in &hosted {
        let manifest = &manifests[usize::from(partition.get()) - 1];
        for file in &manifest.files {
            verify(store, backup_id, partition.get(), file).map_err(|e| {
                fail(format!(
                    "backup {backup_id}, partition {partition}: {e}; nothing was restored"
                ))
            })?;
        }
    }
    std::fs::create_dir_all(data_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", data_dir.display())))?;
    let result = lay_out(store, data_dir, node, &hosted, &manifests).and_then(|parts| {
        write_marker(data_dir, backup_id)?;
        Ok(parts)
    });
    match result {
        Ok(partitions) => Ok(Restored {
            already: false,
            partitions,
        }),
        Err(e) => {
            remove_contents(data_dir);
            Err(e)
        }
    }
}

fn write_marker(data_dir: &Path, backup_id: u64) -> Result<(), RestoreError> {
    let path = data_dir.join(RESTORED_MARKER);
    let fail = |e: std::io::Error| RestoreError(format!("cannot write {}: {e}", path.display()));
    let mut file = std::fs::File::create(&path).map_err(fail)?;
    std::io::Write::write_all(&mut file, format!("{backup_id}\n").as_bytes()).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    super::store::sync_dir(data_dir).map_err(RestoreError)
}

fn lay_out(
    store: &dyn BackupStore,
    data_dir: &Path,
    node: NodeId,
    hosted: &[PartitionId],
    manifests: &[PartitionManifest],
) -> Result<Vec<RestoredPartition>, RestoreError> {
    crate::prepare_data_directory(data_dir, rill_protocol::BROKER_VERSION).map_err(RestoreError)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("rill-restore")
        .enable_all()
        .build()
        .map_err(|e| RestoreError(format!("cannot start a runtime: {e}")))?;
    let mut restored = Vec::new();
    for partition in hosted {
        let manifest = &manifests[usize::from(partition.get()) - 1];
        let to = data_dir.join(format!("partition-{partition}"));
        let bytes = runtime
            .block_on(restore_partition(
                store,
                &to,
                manifest,
                node,
                runtime.handle().clone(),
            ))
            .map_err(|e| RestoreError(format!("partition {partition}: {e}")))?;
        tracing::info!(
            partition = partition.get(),
            log_index = manifest.log_index,
            bytes,
            "partition restored"
        );
        restored.push(RestoredPartition {
            partition_id: partition.get(),
            log_index: manifest.log_index,
            checkpoint_position: manifest.checkpoint_position,
            bytes,
        });
    }
    Ok(restored)
}

async fn restore_partition(
    store: &dyn BackupStore,
    to: &Path,
    manifest: &PartitionManifest,
    node: NodeId,
    io: tokio::runtime::Handle,
) -> Result<u64, String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let mut storage = PartitionStorage::open(to, io, &StateOptions::with_cache_size(64 << 20))
        .map_err(|e| e.to_string())?;
    let db = storage.state.current();
    let mut bytes = 0u64;
    for file in &manifest.files {
        let cf_name = file
            .name
            .rsplit_once('-')
            .map(|(cf, _)| cf)
            .filter(|cf| COLUMN_FAMILIES.contains(cf))
            .ok_or_else(|| format!("the manifest names {}, not a data file", file.name))?;
        let cf = db
            .db()
            .cf_handle(cf_name)
            .ok_or_else(|| format!("the state database has no column family {cf_name}"))?;
        let mut batch = WriteBatch::default();
        // Blocking reads on the restore's own thread (`block_on`), verified as read.
        read_file(
            store,
            manifest.backup_id,
            manifest.partition_id,
            file,
            |key, value| {
                batch.put_cf(cf, key, value);
                if batch.size_in_bytes() >= 4 << 20 {
                    db.write(std::mem::take(&mut batch))
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            },
        )?;
        db.write(batch).map_err(|e| e.to_string())?;
        bytes += file.size;
    }
    for name in COLUMN_FAMILIES {
        if let Some(cf) = db.db().cf_handle(name) {
            db.db()
                .flush_cf(cf)
                .map_err(|e| format!("cannot flush the restored state: {e}"))?;
        }
    }
    let (applied, _) = db.applied_state().map_err(|e| e.to_string())?;
    let applied = applied.ok_or("the backup holds no applied log id")?;
    if applied.index != manifest.log_index {
        return Err(format!(
            "the backup's state is at log index {}, but its manifest says {}",
            applied.index, manifest.log_index
        ));
    }
    drop(db);
    // The log starts after the cut.
    storage
        .log
        .purge(applied)
        .await
        .map_err(|e| format!("cannot start the log after the cut: {e}"))?;
    // A vote in the cut's term, so that the next election's term is above every term
    // in the log (openraft counts terms from the vote).
    let vote = rill_raft::Vote::new(applied.term().get(), u64::from(node.0));
    storage
        .log
        .save_vote(&vote)
        .await
        .map_err(|e| format!("cannot record the term of the cut: {e}"))?;
    storage
        .snapshots
        .build(&storage.state)
        .await
        .map_err(|e| format!("cannot build a snapshot of the restored state: {e}"))?;
    let closed = storage.closed_signal();
    drop(storage);
    if !closed.wait(Duration::from_secs(60)).await {
        return Err("the restored databases did not close within 60 s".to_owned());
    }
    Ok(bytes)
}

/// The data directory must be empty or absent (`lost+found`, of a fresh volume, aside).
fn check_empty(data_dir: &Path) -> Result<(), RestoreError> {
    match std::fs::read_dir(data_dir) {
        Ok(entries) => {
            let found: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name != "lost+found")
                .collect();
            if found.is_empty() {
                Ok(())
            } else {
                Err(RestoreError(format!(
                    "the data directory {} is not empty (it holds {}): restore into an empty \
                     directory, so that nothing of the data there is mixed with the backup",
                    data_dir.display(),
                    found.join(", ")
                )))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(RestoreError(format!(
            "cannot list the data directory {}: {e}",
            data_dir.display()
        ))),
    }
}

/// Checks that the backup is complete and has the shape of the cluster `config`
/// describes; returns the manifests of partitions `1..=count`.
fn check_backup(
    store: &dyn BackupStore,
    config: &RillConfig,
    backup_id: u64,
) -> Result<Vec<PartitionManifest>, RestoreError> {
    let fail = |message: String| RestoreError(message);
    let count = config.cluster.partitions_count;
    let parts = store.partitions(backup_id).map_err(fail)?;
    if parts.is_empty() {
        return Err(fail(format!(
            "there is no backup {backup_id} in {} (`rill backup list` shows the backups)",
            store.location()
        )));
    }
    if let Some(extra) = parts.iter().find(|p| **p == 0 || **p > count) {
        return Err(fail(format!(
            "backup {backup_id} has partition {extra}, but cluster.partitions-count is \
             {count}: restore with the partition count the backup was taken with"
        )));
    }
    let mut manifests = Vec::new();
    for partition in 1..=count {
        let status = store.status(backup_id, partition).map_err(fail)?;
        let state = status.as_ref().map(|s| s.state);
        if state != Some(BackupState::Completed) {
            let what = match status {
                None => "has no part".to_owned(),
                Some(s) => match s.failure_reason {
                    Some(reason) => format!("is {:?}: {reason}", s.state),
                    None => format!("is {:?}", s.state),
                },
            };
            return Err(fail(format!(
                "backup {backup_id} is not complete: partition {partition} {what}; restore a \
                 completed backup (`rill backup list`)"
            )));
        }
        let manifest = store
            .manifest(backup_id, partition)
            .map_err(fail)?
            .ok_or_else(|| {
                fail(format!(
                    "backup {backup_id}, partition {partition}: the manifest is missing"
                ))
            })?;
        if manifest.partition_count != count {
            return Err(fail(format!(
                "backup {backup_id} was taken from a cluster of {} partitions, but \
                 cluster.partitions-count is {count}: restore with the partition count the \
                 backup was taken with",
                manifest.partition_count
            )));
        }
        if manifest.data_format != crate::DATA_FORMAT {
            return Err(fail(format!(
                "backup {backup_id} holds data format {}, and this Rill reads format {} \
                 only: restore it with the Rill version that took it ({})",
                manifest.data_format,
                crate::DATA_FORMAT,
                manifest.broker_version
            )));
        }
        manifests.push(manifest);
    }
    Ok(manifests)
}

/// Removes everything in `dir` (a restore that failed half-way).
fn remove_contents(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name() == "lost+found" {
                continue;
            }
            let path = entry.path();
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            if let Err(e) = removed {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a half-restored file");
            }
        }
    }
}
