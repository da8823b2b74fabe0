//! The raft log in memory: openraft's `RaftLogStorage`, as Rill's RocksDB `LogStore`
//! implements it (entries by index, the vote, the committed id, the purged id), without
//! the disk and without the log-sync thread, whose timing no seed could decide. An
//! append is durable when openraft is told so, after a delay the seed chooses.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::time::Duration;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogId, RaftLogReader};
use parking_lot::Mutex;
use rill_raft::{Entry, LogId, StorageError, TypeConfig, Vote};
use tokio::time::Instant;

use crate::world::SharedWorld;

#[derive(Default)]
struct Log {
    entries: BTreeMap<u64, Entry>,
    vote: Option<Vote>,
    committed: Option<LogId>,
    last_purged: Option<LogId>,
}

#[derive(Clone)]
pub struct MemLogStore {
    log: Arc<Mutex<Log>>,
    world: SharedWorld,
    /// The longest a sync takes (0: reported durable at once).
    max_sync_ms: u64,
    /// When the last sync asked for is done: syncs finish in the order they were asked
    /// for, as on the log-sync thread.
    synced_until: Arc<Mutex<Instant>>,
}

impl MemLogStore {
    pub fn new(world: SharedWorld, max_sync_ms: u64) -> MemLogStore {
        MemLogStore {
            log: Arc::default(),
            world,
            max_sync_ms,
            synced_until: Arc::new(Mutex::new(Instant::now())),
        }
    }
}

impl RaftLogReader<TypeConfig> for MemLogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let log = self.log.lock();
        Ok(log.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for MemLogStore {
    type LogReader = MemLogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let log = self.log.lock();
        let last = log.entries.values().next_back().map(|e| *e.get_log_id());
        Ok(LogState {
            last_purged_log_id: log.last_purged,
            last_log_id: last.or(log.last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> MemLogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        self.log.lock().vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.log.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        self.log.lock().committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.log.lock().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        {
            let mut log = self.log.lock();
            for entry in entries {
                log.entries.insert(entry.get_log_id().index, entry);
            }
        }
        let sync = Duration::from_millis(self.world.lock().rng.below(self.max_sync_ms + 1));
        let done = {
            let mut until = self.synced_until.lock();
            // Strictly after the previous one, so the timers fire in this order.
            *until = (Instant::now() + sync).max(*until + Duration::from_millis(1));
            *until
        };
        tokio::spawn(async move {
            tokio::time::sleep_until(done).await;
            callback.log_io_completed(Ok(()));
        });
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.log.lock().entries.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut log = self.log.lock();
        log.entries = log.entries.split_off(&(log_id.index + 1));
        log.last_purged = Some(log_id);
        Ok(())
    }
}
