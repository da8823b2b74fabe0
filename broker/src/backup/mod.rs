//! Backups of a running cluster (docs/decisions/backup.md, docs/operations.md).
//!
//! ```text
//!   POST /actuator/backups {backupId} ── api ──► each partition's leader:
//!        CoreCommand::Checkpoint{backup_id} through the partition's log
//!        (also proposed by a leader that takes a command from another partition, or
//!        an acknowledgement, carrying a checkpoint id above its own: ahead of it)
//!                │ applied on every replica: latest checkpoint id and position in
//!                │ state (a backup id not above the latest is refused)
//!                ▼ the leader, right after writing the entry that carries it
//!   take: a RocksDB snapshot of the state at the cut (no stall: no flush, no copy)
//!        └─► a thread of its own writes every column family into the store (a
//!            directory or S3, `store::BackupStore`):
//!            <base>/<backupId>/partition-<p>/  status.json  manifest.json  *.kv
//!   restore (`rill restore`): checks the backup's shape and every file's checksum,
//!        loads the state into empty data directories, the log starting after the cut
//! ```

pub mod api;
mod format;
mod restore;
mod s3;
mod schedule;
mod sigv4;
mod store;
mod take;

use rill_protocol::{Position, Timestamp};

pub use api::{BackupPartitions, router};
pub use restore::{RestoreError, Restored, RestoredPartition, restore};
pub use s3::{Environment as S3Environment, S3Store};
pub use schedule::spawn as spawn_scheduler;
pub use store::{
    BackupState, BackupStore, FileEntry, FileSink, FilesystemStore, PartitionBackupStatus,
    PartitionManifest, Store, configured_store, latest_completed,
};
pub(crate) use take::{BackupJob, start as start_backup};

/// What applying a checkpoint did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum CheckpointOutcome {
    /// Recorded: the backup's cut is the entry at `log_index`, after the record at
    /// `position`.
    Created { position: Position, log_index: u64 },
    /// Refused: the partition's latest checkpoint is `latest`, not below the id asked.
    Refused { latest: u64 },
}

/// A checkpoint a batch carried.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointApplied {
    pub backup_id: u64,
    /// The entry's timestamp (the leader's clock when it proposed the checkpoint).
    pub timestamp: Timestamp,
    pub outcome: CheckpointOutcome,
}

/// How the backup API records checkpoints: through this broker's replica when it leads,
/// else through the leader on another broker (`ClusterState::checkpoint`); a broker
/// alone leads every partition.
pub struct LocalPartitions<E: rill_engine_api::Engine> {
    pub partitions: crate::partition::PartitionMap<E>,
    pub cluster: crate::cluster::ClusterState,
}

impl<E: rill_engine_api::Engine> api::BackupPartitions for LocalPartitions<E> {
    fn partition_count(&self) -> u16 {
        self.cluster.current().routing.partitions
    }

    fn checkpoint(
        &self,
        partition: rill_protocol::PartitionId,
        backup_id: u64,
    ) -> futures::future::BoxFuture<'static, Result<CheckpointOutcome, String>> {
        let local = self.partitions.get(&partition);
        let cluster = self.cluster.clone();
        Box::pin(async move {
            // A broker of several reaches the leaders elsewhere; one alone leads them all.
            if cluster.runs_changes() {
                return cluster.checkpoint(partition, backup_id).await;
            }
            match local {
                Some(partition) => partition
                    .checkpoint(backup_id)
                    .await
                    .map_err(|e| e.to_string()),
                None => Err(format!(
                    "partition {partition} has no replica on this broker"
                )),
            }
        })
    }

    fn leads(&self, partition: rill_protocol::PartitionId) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|p| p.status().role == crate::partition::Role::Leader)
    }
}
