//! Taking a partition's part of a backup, on the leader, right after it wrote the entry
//! carrying the checkpoint.
//!
//! The partition actor hands the live state database to a thread of the backup's own,
//! which takes a RocksDB snapshot (a sequence number: no flush, no copy) and says so;
//! only then does the actor go on applying. The thread then reads every column family
//! at that snapshot and writes it into the store, while the partition keeps processing.

use std::sync::Arc;

use rill_protocol::{BROKER_VERSION, Timestamp};
use rill_raft::{CF_EXPORT, CF_HISTORY, StateDb};
use rocksdb::ReadOptions;

use super::format::{FILE_LIMIT, KvWriter};
use super::store::{BackupState, FileEntry, PartitionBackupStatus, PartitionManifest, Store};

/// The column families of the state database, in the order they are written.
pub(super) const COLUMN_FAMILIES: &[&str] = &["default", CF_EXPORT, CF_HISTORY];

/// A partition's part of a backup, to be taken.
#[derive(Clone, Debug)]
pub(crate) struct BackupJob {
    pub store: Store,
    pub metrics: crate::metrics::BackupMetrics,
    pub backup_id: u64,
    pub partition_id: u16,
    pub node_id: u32,
    pub partition_count: u16,
    pub checkpoint_position: u64,
    pub log_index: u64,
    pub checkpoint_timestamp: Timestamp,
}

impl BackupJob {
    fn status(&self, state: BackupState, files: &[FileEntry]) -> PartitionBackupStatus {
        PartitionBackupStatus {
            backup_id: self.backup_id,
            partition_id: self.partition_id,
            node_id: self.node_id,
            state,
            failure_reason: None,
            checkpoint_position: self.checkpoint_position,
            created_at: self.checkpoint_timestamp.millis(),
            last_updated: crate::clock::now().millis(),
            size_bytes: files.iter().map(|f| f.size).sum(),
            file_count: files.len() as u64,
            broker_version: BROKER_VERSION.to_owned(),
        }
    }
}

/// Starts taking `job` from `db` (the state as the checkpoint's entry left it) and
/// returns once the state is pinned; the rest runs on a thread of its own, which calls
/// `recorded` once the part's status says IN_PROGRESS in the store (a store may be a
/// network away: the partition does not wait for that).
pub(crate) fn start(job: BackupJob, db: Arc<StateDb>, recorded: Box<dyn FnOnce() + Send>) {
    let pausing = std::time::Instant::now();
    let (pinned_tx, pinned_rx) = std::sync::mpsc::sync_channel::<()>(1);
    let thread_job = job.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("rill-backup-{}", job.partition_id))
        .spawn({
            move || {
                let job = thread_job;
                let snapshot = db.db().snapshot();
                let _ = pinned_tx.send(());
                let started = std::time::Instant::now();
                // Not synced: a reader may see it at once; COMPLETED is synced.
                let in_progress = job.status(BackupState::InProgress, &[]);
                if let Err(e) = job.store.write_status(&in_progress, false) {
                    tracing::warn!(backup = job.backup_id, error = %e, "cannot record the backup as in progress");
                }
                recorded();
                let result = write_part(&job, &db, &snapshot);
                drop(snapshot);
                drop(db);
                finish(&job, result, started);
            }
        });
    match spawned {
        Ok(_) => {
            let _ = pinned_rx.recv();
            tracing::info!(
                backup = job.backup_id,
                partition = job.partition_id,
                paused_us = pausing.elapsed().as_micros() as u64,
                "backup state pinned; processing goes on"
            );
        }
        Err(e) => {
            finish(
                &job,
                Err(format!("cannot start the backup thread: {e}")),
                std::time::Instant::now(),
            );
            // `recorded` went with the thread that did not start: whoever waits for
            // it is answered that the partition dropped the request.
        }
    }
}

fn finish(job: &BackupJob, result: Result<Vec<FileEntry>, String>, started: std::time::Instant) {
    let completed = result.is_ok();
    let status = match result {
        Ok(files) => {
            tracing::info!(
                backup = job.backup_id,
                partition = job.partition_id,
                files = files.len(),
                bytes = files.iter().map(|f| f.size).sum::<u64>(),
                ms = started.elapsed().as_millis() as u64,
                "backup part completed"
            );
            job.status(BackupState::Completed, &files)
        }
        Err(reason) => {
            tracing::error!(backup = job.backup_id, partition = job.partition_id, %reason, "backup part failed");
            let mut status = job.status(BackupState::Failed, &[]);
            status.failure_reason = Some(reason);
            status
        }
    };
    let recorded = job.store.write_status(&status, true);
    if let Err(e) = &recorded {
        tracing::error!(backup = job.backup_id, error = %e, "cannot record the backup's outcome");
    }
    job.metrics.part_taken(
        completed && recorded.is_ok(),
        started.elapsed().as_secs_f64(),
        status.last_updated / 1000,
    );
}

/// Writes every column family at `snapshot`, then the manifest.
fn write_part(
    job: &BackupJob,
    db: &StateDb,
    snapshot: &rocksdb::Snapshot<'_>,
) -> Result<Vec<FileEntry>, String> {
    let mut files = Vec::new();
    for name in COLUMN_FAMILIES {
        let cf = db
            .db()
            .cf_handle(name)
            .ok_or_else(|| format!("the state database has no column family {name}"))?;
        let mut options = ReadOptions::default();
        options.set_snapshot(snapshot);
        // A backup reads everything once: keep the partition's cache for its work.
        options.fill_cache(false);
        let mut iter = db.db().raw_iterator_cf_opt(cf, options);
        iter.seek_to_first();
        let mut writer = KvWriter::new(
            job.store.as_ref(),
            job.backup_id,
            job.partition_id,
            name,
            FILE_LIMIT,
        );
        while iter.valid() {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            writer.put(key, value)?;
            iter.next();
        }
        iter.status()
            .map_err(|e| format!("cannot read column family {name}: {e}"))?;
        files.extend(writer.finish()?);
    }
    job.store.files_finished(job.backup_id, job.partition_id)?;
    job.store.write_manifest(&PartitionManifest {
        backup_id: job.backup_id,
        partition_id: job.partition_id,
        node_id: job.node_id,
        partition_count: job.partition_count,
        data_format: crate::DATA_FORMAT,
        broker_version: BROKER_VERSION.to_owned(),
        checkpoint_position: job.checkpoint_position,
        log_index: job.log_index,
        checkpoint_timestamp: job.checkpoint_timestamp.millis(),
        files: files.clone(),
    })?;
    Ok(files)
}
