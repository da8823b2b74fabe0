//! openraft's storage conformance suite against the RocksDB log store and the partition
//! state machine (with a handler that applies nothing but the applied marks), plus
//! durability checks of our own.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{EntryPayload, RaftLogReader};
use rill_protocol::Term;
use rill_raft::{
    ApplyBatch, ApplyHandler, Entry, EntryData, EntryResponse, LogStore, PartitionStateMachine,
    PartitionStorage, SnapshotMeta, StateStore, StorageError, TypeConfig, log_id,
};
use rocksdb::WriteBatch;
use tempfile::TempDir;
use tokio::runtime::Handle;

/// Applies only what the raft layer itself needs: the applied log id and membership.
struct MarkOnly {
    state: Arc<StateStore>,
}

impl ApplyHandler for MarkOnly {
    fn apply(
        &self,
        batch: ApplyBatch,
    ) -> BoxFuture<'static, rill_raft::Result<Vec<EntryResponse>>> {
        let state = self.state.clone();
        Box::pin(async move {
            let mut wb = WriteBatch::default();
            batch.mark_applied(&mut wb)?;
            state.current().write(wb)?;
            Ok(vec![EntryResponse::default(); batch.entries.len()])
        })
    }

    fn snapshot_installed(&self, _meta: SnapshotMeta) -> BoxFuture<'static, rill_raft::Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, PartitionStateMachine, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, PartitionStateMachine), StorageError> {
        let dir = tempfile::tempdir().expect("temp dir");
        let storage = PartitionStorage::open(dir.path(), Handle::current(), &Default::default())
            .expect("open partition storage");
        let handler = Arc::new(MarkOnly {
            state: storage.state.clone(),
        });
        let sm =
            PartitionStateMachine::new(storage.state.clone(), storage.snapshots.clone(), handler);
        Ok((dir, storage.log, sm))
    }
}

#[test]
fn openraft_storage_suite_passes() {
    Suite::test_all(Builder).expect("storage suite");
}

fn normal(term: u64, index: u64, bytes: &'static [u8]) -> Entry {
    Entry {
        log_id: log_id(Term(term), 0, index),
        payload: EntryPayload::Normal(EntryData(bytes::Bytes::from_static(bytes))),
    }
}

/// Appends through the public API and waits until openraft would call it durable.
async fn append_durably(store: &mut LogStore, entries: Vec<Entry>) {
    tokio::time::timeout(Duration::from_secs(10), store.blocking_append(entries))
        .await
        .expect("durable in time")
        .expect("append succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appended_entries_survive_reopen_and_purge_keeps_no_hole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    {
        let mut store = LogStore::open(&path, Handle::current()).unwrap();
        let entries = (1..=20).map(|i| normal(1, i, b"cmd")).collect();
        append_durably(&mut store, entries).await;
        store.purge(log_id(Term(1), 0, 5)).await.unwrap();
        store.truncate(log_id(Term(1), 0, 18)).await.unwrap();
        append_durably(&mut store, vec![normal(2, 18, b"new")]).await;
        let closed = store.closed_signal();
        drop(store);
        // The flusher lets go of the database once its channel closes; RocksDB then
        // closes it on the flusher's thread. Reopening before that finished is refused.
        tokio::time::timeout(Duration::from_secs(30), closed.wait())
            .await
            .expect("the log database closes");
    }
    let mut store = LogStore::open(&path, Handle::current()).unwrap();
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(Term(1), 0, 5)));
    assert_eq!(state.last_log_id, Some(log_id(Term(2), 0, 18)));
    let entries = store.try_get_log_entries(0..100).await.unwrap();
    let indexes: Vec<u64> = entries.iter().map(|e| e.log_id.index).collect();
    assert_eq!(indexes, (6..=18).collect::<Vec<_>>());
    assert!(
        matches!(&entries.last().unwrap().payload, EntryPayload::Normal(d) if d.0.as_ref() == b"new")
    );
}
