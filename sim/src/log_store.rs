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
    /// Indexes appended but not yet synced, with the append that wrote them (an index
    /// written again after a truncation belongs to the later append). Syncs finish in
    /// order, so these are always the log's tail.
    unsynced: BTreeMap<u64, u64>,
    appends: u64,
    /// The power is off: writes vanish and syncs never finish.
    down: bool,
    /// The next sync fails (a disk error).
    fail_next_sync: bool,
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

    /// The next sync fails, as a disk that returns an error.
    pub fn fail_next_sync(&self) {
        self.log.lock().fail_next_sync = true;
    }

    /// The power is back (the node restarts).
    pub fn restore_power(&self) {
        let mut log = self.log.lock();
        log.down = false;
        log.fail_next_sync = false;
    }

    /// A power cut: from now on nothing is written until [`MemLogStore::restore_power`];
    /// entries not yet synced are gone, and the log ends before the first of
    /// them (the committed log id, written after them, is gone too). Entries up to
    /// `applied` stay: the state database, which is not modelled losing writes, already
    /// holds their effects (docs/decisions/simulation.md). Returns how many were lost.
    pub fn cut_power(&self, applied: u64) -> usize {
        let mut log = self.log.lock();
        log.down = true;
        let first_lost = log.unsynced.keys().copied().find(|&index| index > applied);
        log.unsynced.clear();
        let Some(first_lost) = first_lost else {
            return 0;
        };
        let lost = log.entries.split_off(&first_lost).len();
        let last = log.entries.values().next_back().map(|e| *e.get_log_id());
        if log.committed.is_some_and(|c| Some(c) > last) {
            log.committed = last;
        }
        lost
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
        let mut log = self.log.lock();
        if !log.down {
            log.vote = Some(*vote);
        }
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.log.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let mut log = self.log.lock();
        if !log.down {
            log.committed = committed;
        }
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
        let (append, indexes, fails) = {
            let mut log = self.log.lock();
            if log.down {
                // Never reported durable: the machine is off.
                return Ok(());
            }
            let fails = std::mem::take(&mut log.fail_next_sync);
            log.appends += 1;
            let append = log.appends;
            let mut indexes = Vec::new();
            for entry in entries {
                let index = entry.get_log_id().index;
                log.unsynced.insert(index, append);
                log.entries.insert(index, entry);
                indexes.push(index);
            }
            (append, indexes, fails)
        };
        let sync = Duration::from_millis(self.world.lock().rng.below(self.max_sync_ms + 1));
        let done = {
            let mut until = self.synced_until.lock();
            // Strictly after the previous one, so the timers fire in this order.
            *until = (Instant::now() + sync).max(*until + Duration::from_millis(1));
            *until
        };
        let log = self.log.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(done).await;
            {
                let mut log = log.lock();
                if log.down {
                    return;
                }
                if fails {
                    // The entries stay unsynced; raft learns the disk failed.
                    drop(log);
                    callback.log_io_completed(Err(std::io::Error::other("simulated disk failure")));
                    return;
                }
                for index in indexes {
                    if log.unsynced.get(&index) == Some(&append) {
                        log.unsynced.remove(&index);
                    }
                }
            }
            callback.log_io_completed(Ok(()));
        });
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut log = self.log.lock();
        if !log.down {
            log.entries.split_off(&log_id.index);
        }
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut log = self.log.lock();
        if log.down {
            return Ok(());
        }
        log.entries = log.entries.split_off(&(log_id.index + 1));
        log.last_purged = Some(log_id);
        Ok(())
    }
}
