//! openraft's state machine, adapted to a partition: committed entries go in batches to
//! an [`ApplyHandler`] (the broker's partition, which runs the engine), snapshots are
//! checkpoints of the state database.

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use rocksdb::WriteBatch;

use crate::error::{Error, Result, storage};
use crate::faults::WriteFaults;
use crate::snapshot::{SnapshotFile, SnapshotStore};
use crate::state_store::{StateStore, put_applied};
use crate::types::{
    Entry, EntryResponse, LogId, Snapshot, SnapshotMeta, StorageError, StoredMembership, TypeConfig,
};

/// One committed entry as the handler sees it.
#[derive(Clone, Debug)]
pub struct CommittedEntry {
    pub log_id: LogId,
    /// The proposer's bytes; `None` for raft's own entries (blank, membership change).
    pub data: Option<Bytes>,
}

/// Committed entries to apply, in log order.
#[derive(Clone, Debug)]
pub struct ApplyBatch {
    pub entries: Vec<CommittedEntry>,
    last_applied: LogId,
    membership: Option<StoredMembership>,
}

impl ApplyBatch {
    /// Builds a batch from entries (for handlers tested without openraft).
    pub fn new(
        entries: Vec<CommittedEntry>,
        membership: Option<StoredMembership>,
    ) -> Option<ApplyBatch> {
        let last_applied = entries.last()?.log_id;
        Some(ApplyBatch {
            entries,
            last_applied,
            membership,
        })
    }

    pub fn last_applied(&self) -> LogId {
        self.last_applied
    }

    /// Splits the batch after its first `count` entries (at least one, fewer than all),
    /// so that each part is applied and written on its own: the state between them is
    /// the state at the last entry of the first part. The membership change goes with
    /// the part holding its entry.
    pub fn split_after(self, count: usize) -> (ApplyBatch, Option<ApplyBatch>) {
        if count == 0 || count >= self.entries.len() {
            return (self, None);
        }
        let mut first = self.entries;
        let rest = first.split_off(count);
        let boundary = first.last().map(|e| e.log_id.index).unwrap_or_default();
        let in_first = self
            .membership
            .as_ref()
            .and_then(|m| *m.log_id())
            .is_some_and(|id| id.index <= boundary);
        let (first_membership, rest_membership) = if in_first {
            (self.membership, None)
        } else {
            (None, self.membership)
        };
        let first = ApplyBatch::new(first, first_membership).expect("count >= 1 entries");
        (first, ApplyBatch::new(rest, rest_membership))
    }

    /// Adds the applied log id (and membership change) to the handler's write batch, so
    /// state and applied log id become durable together and nothing is applied twice.
    pub fn mark_applied(&self, batch: &mut WriteBatch) -> Result<()> {
        put_applied(batch, &self.last_applied, self.membership.as_ref())
    }
}

/// The partition side of the state machine.
pub trait ApplyHandler: Send + Sync + 'static {
    /// Applies the batch: writes its state changes together with
    /// [`ApplyBatch::mark_applied`] in one write, and returns one response per entry.
    /// [`Error::DiskWrite`] says that nothing was written for an I/O error: the same
    /// batch comes again after a backoff.
    fn apply(&self, batch: ApplyBatch) -> BoxFuture<'static, Result<Vec<EntryResponse>>>;

    /// The state database was replaced by a snapshot: reload whatever was derived from it.
    fn snapshot_installed(&self, meta: SnapshotMeta) -> BoxFuture<'static, Result<()>>;
}

/// openraft's `RaftStateMachine` for a partition.
pub struct PartitionStateMachine {
    state: Arc<StateStore>,
    snapshots: Arc<SnapshotStore>,
    handler: Arc<dyn ApplyHandler>,
    faults: WriteFaults,
}

impl PartitionStateMachine {
    pub fn new(
        state: Arc<StateStore>,
        snapshots: Arc<SnapshotStore>,
        handler: Arc<dyn ApplyHandler>,
    ) -> Self {
        PartitionStateMachine {
            state,
            snapshots,
            handler,
            faults: WriteFaults::default(),
        }
    }

    /// Reports (and retries) failing writes through `faults`, the log's.
    pub fn with_faults(mut self, faults: WriteFaults) -> Self {
        self.faults = faults;
        self
    }
}

/// Builds snapshots off the apply path (openraft runs it in its own task).
pub struct SnapshotBuilder {
    state: Arc<StateStore>,
    snapshots: Arc<SnapshotStore>,
    faults: WriteFaults,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    /// A build that fails with an I/O error is tried again (an error here stops raft).
    async fn build_snapshot(&mut self) -> Result<Snapshot, StorageError> {
        let (meta, file) = self
            .faults
            .retry("build a snapshot", || {
                let (snapshots, state) = (self.snapshots.clone(), self.state.clone());
                async move { snapshots.build(&state).await }
            })
            .await
            .map_err(storage::write_snapshot)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(file),
        })
    }
}

impl RaftStateMachine<TypeConfig> for PartitionStateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        self.state.applied_state().map_err(storage::read_sm)
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<EntryResponse>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut committed = Vec::new();
        let mut membership = None;
        for entry in entries {
            let data = match entry.payload {
                EntryPayload::Blank => None,
                EntryPayload::Normal(data) => Some(data.0),
                EntryPayload::Membership(m) => {
                    membership = Some(StoredMembership::new(Some(entry.log_id), m));
                    None
                }
            };
            committed.push(CommittedEntry {
                log_id: entry.log_id,
                data,
            });
        }
        let count = committed.len();
        let Some(batch) = ApplyBatch::new(committed, membership) else {
            return Ok(Vec::new());
        };
        let handler = &self.handler;
        let responses = self
            .faults
            .retry("apply committed entries", || handler.apply(batch.clone()))
            .await
            .map_err(storage::write_sm)?;
        if responses.len() != count {
            return Err(storage::write_sm(Error::Handler(format!(
                "{} responses for {count} entries",
                responses.len()
            ))));
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder {
            state: self.state.clone(),
            snapshots: self.snapshots.clone(),
            faults: self.faults.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotFile>, StorageError> {
        let snapshots = &self.snapshots;
        let file = self
            .faults
            .retry("receive a snapshot", move || snapshots.begin_receiving())
            .await
            .map_err(storage::write_snapshot)?;
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<SnapshotFile>,
    ) -> Result<(), StorageError> {
        self.snapshots
            .install(meta, *snapshot, &self.state)
            .await
            .map_err(storage::write_snapshot)?;
        self.handler
            .snapshot_installed(meta.clone())
            .await
            .map_err(storage::write_snapshot)
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        let current = self
            .snapshots
            .current()
            .await
            .map_err(storage::read_snapshot)?;
        Ok(current.map(|(meta, file)| Snapshot {
            meta,
            snapshot: Box::new(file),
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use rill_protocol::Term;

    use super::*;
    use crate::types::log_id;

    fn entries(indexes: std::ops::RangeInclusive<u64>) -> Vec<CommittedEntry> {
        indexes
            .map(|index| CommittedEntry {
                log_id: log_id(Term(1), 0, index),
                data: None,
            })
            .collect()
    }

    fn membership_at(index: u64) -> StoredMembership {
        let voters = BTreeSet::from([0u64]);
        let nodes = BTreeMap::from([(0u64, openraft::BasicNode::new("127.0.0.1:26502"))]);
        StoredMembership::new(
            Some(log_id(Term(1), 0, index)),
            openraft::Membership::new(vec![voters], nodes),
        )
    }

    #[test]
    fn a_split_batch_applies_up_to_the_cut_and_the_membership_goes_with_its_entry() {
        let batch = ApplyBatch::new(entries(1..=5), Some(membership_at(2))).unwrap();
        let (first, rest) = batch.split_after(3);
        let rest = rest.unwrap();
        assert_eq!(first.last_applied().index, 3);
        assert_eq!(first.entries.len(), 3);
        assert!(first.membership.is_some());
        assert_eq!(rest.last_applied().index, 5);
        assert!(rest.membership.is_none());

        let batch = ApplyBatch::new(entries(1..=5), Some(membership_at(4))).unwrap();
        let (first, rest) = batch.split_after(3);
        assert!(first.membership.is_none());
        assert!(rest.unwrap().membership.is_some());

        // Nothing to split: the whole batch.
        let batch = ApplyBatch::new(entries(1..=2), None).unwrap();
        let (first, rest) = batch.split_after(2);
        assert_eq!(first.entries.len(), 2);
        assert!(rest.is_none());
    }
}
