//! The raft log on RocksDB.
//!
//! One database per partition (`log/`) with two column families: `log` (entries keyed by
//! big-endian index) and `meta` (vote, committed log id, last purged log id).
//!
//! Durability: an append writes its entries in one `WriteBatch` without waiting for the
//! disk, so they are readable at once; the partition's log-sync thread then syncs the WAL
//! (`FlushWAL(sync)`) and only then reports the append durable. Appends that arrive while
//! a sync runs are covered by the next one, so a burst of appends costs one fsync (group
//! commit). The sync is on every commit's path (the leader's and a follower's), so it has
//! a thread of its own: handing it to the io runtime's blocking pool from a task woke two
//! more threads per sync. The vote is written with a synchronous WAL write before
//! `save_vote` returns.
//!
//! A write or sync that fails with an I/O error (a full disk) is retried until it
//! succeeds, and reported meanwhile through [`WriteFaults`]: an error returned to
//! openraft would stop the raft group for good (docs/decisions/disk-full.md). Nothing
//! is reported durable before its sync succeeded.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogId, RaftLogReader};
use rill_protocol::codec;
use rocksdb::{
    ColumnFamilyDescriptor, DB, Direction, IteratorMode, Options, ReadOptions, WriteBatch,
    WriteOptions,
};
use tokio::runtime::Handle;

use crate::closing::{AllClosed, OpenDatabases, OpenToken};
use crate::error::{Error, Result, storage};
use crate::faults::WriteFaults;
use crate::types::{Entry, LogId, StorageError, TypeConfig, Vote};

const CF_LOG: &str = "log";
const CF_META: &str = "meta";
const KEY_VOTE: &[u8] = b"vote";
const KEY_COMMITTED: &[u8] = b"committed";
const KEY_LAST_PURGED: &[u8] = b"last-purged";
/// The most bytes of entries one append request carries (the internal transport's
/// frames hold 16 MiB).
pub const APPEND_REQUEST_BYTES: usize = 8 << 20;

/// Counters about the log's disk work, for metrics and the benchmark.
#[derive(Debug, Default)]
pub struct LogStats {
    /// Appends reported durable.
    pub appends: AtomicU64,
    /// WAL syncs done for appends (each may cover several appends).
    pub syncs: AtomicU64,
    /// Index of the last purged entry (0: nothing purged since the store was opened).
    pub purged: AtomicU64,
}

/// The log database, with its open token dropped after it (see `closing`).
struct LogDb {
    db: DB,
    _open: OpenToken,
}

impl std::ops::Deref for LogDb {
    type Target = DB;

    fn deref(&self) -> &DB {
        &self.db
    }
}

/// The RocksDB raft log of one partition.
pub struct LogStore {
    db: Arc<LogDb>,
    open: OpenDatabases,
    io: Handle,
    /// Appends waiting for a sync; `None` once the store is being dropped.
    flush_tx: Option<std::sync::mpsc::Sender<LogFlushed<TypeConfig>>>,
    sync_thread: Option<std::thread::JoinHandle<()>>,
    stats: Arc<LogStats>,
    /// A reclaim of purged entries' disk space runs.
    reclaiming: Arc<AtomicBool>,
    /// Writes that fail and are retried.
    faults: WriteFaults,
}

/// A reader of the log for openraft's replication tasks.
#[derive(Clone)]
pub struct LogReader {
    db: Arc<LogDb>,
}

/// Stops the log-sync thread and waits for it, so the database it holds is released
/// before the store is gone (a thread left running could close RocksDB while the
/// process exits and its statics are torn down).
impl Drop for LogStore {
    fn drop(&mut self) {
        // A sync still retrying gives up: nothing waits for it any more.
        self.faults.close();
        self.flush_tx = None;
        if let Some(thread) = self.sync_thread.take() {
            let _ = thread.join();
        }
    }
}

impl LogStore {
    /// Opens (or creates) the log database in `dir`, and starts its log-sync thread. The
    /// vote's synchronous writes run on `io`'s blocking pool.
    pub fn open(dir: &Path, io: Handle) -> Result<LogStore> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        // Entries are deleted in ranges on purge; keep the WAL small so old files go.
        opts.set_max_total_wal_size(64 << 20);
        let cfs =
            [CF_LOG, CF_META].map(|name| ColumnFamilyDescriptor::new(name, Options::default()));
        let db =
            DB::open_cf_descriptors(&opts, dir, cfs).map_err(Error::rocks("open the raft log"))?;
        let open = OpenDatabases::new();
        let db = Arc::new(LogDb {
            db,
            _open: open.token(),
        });
        let stats = Arc::new(LogStats::default());
        let (flush_tx, flush_rx) = std::sync::mpsc::channel();
        let faults = WriteFaults::default();
        let (sync_db, sync_stats, sync_faults) = (db.clone(), stats.clone(), faults.clone());
        // Ends when the store (the only sender) is dropped, which then waits for it.
        let sync_thread = std::thread::Builder::new()
            .name("rill-log-sync".to_owned())
            .spawn(move || sync_loop(&sync_db, &flush_rx, &sync_stats, &sync_faults))
            .map_err(|e| Error::Task(format!("start the log-sync thread: {e}")))?;
        Ok(LogStore {
            db,
            open,
            io,
            flush_tx: Some(flush_tx),
            sync_thread: Some(sync_thread),
            stats,
            reclaiming: Arc::default(),
            faults,
        })
    }

    pub fn stats(&self) -> Arc<LogStats> {
        self.stats.clone()
    }

    /// The log's failing writes, shared with whoever reports the partition's health
    /// (and with its state machine, which retries its own writes through it).
    pub fn faults(&self) -> WriteFaults {
        self.faults.clone()
    }

    /// Tells when the database has been closed: every user (this store, its readers,
    /// the flusher) let go of it and RocksDB finished closing it.
    pub fn closed_signal(&self) -> AllClosed {
        self.open.all_closed()
    }

    fn reader(&self) -> LogReader {
        LogReader {
            db: self.db.clone(),
        }
    }

    fn meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>> {
        read_meta(&self.db, key)
    }

    /// Frees the disk space of the entries purged up to `upto`, in the background. The
    /// range delete of a purge only hides them: their files stay until a compaction
    /// reaches them, which in a log no longer written to never happens. Files of purged
    /// entries only, below level 0, are dropped; the rest of the purged range is
    /// compacted. One run at a time: a purge during a run is covered by the next one.
    fn reclaim(&self, upto: u64) {
        if self.reclaiming.swap(true, Ordering::AcqRel) {
            return;
        }
        let (db, reclaiming) = (self.db.clone(), self.reclaiming.clone());
        self.io.spawn_blocking(move || {
            let reclaimed = cf(&db, CF_LOG).and_then(|log| {
                db.delete_file_in_range_cf(log, index_key(0), index_key(upto.saturating_add(1)))
                    .map_err(Error::rocks("delete the files of purged entries"))?;
                // Both ends included.
                db.compact_range_cf(log, Some(index_key(0)), Some(index_key(upto)));
                Ok(())
            });
            if let Err(e) = reclaimed {
                tracing::warn!(error = %e, "purged log entries stay on disk until a compaction");
            }
            reclaiming.store(false, Ordering::Release);
        });
    }

    /// Writes `batch`, retrying while it fails with an I/O error.
    async fn write(&self, batch: WriteBatch, action: &'static str) -> Result<()> {
        // The batch is consumed by a write: a retry writes a copy.
        let data = batch.data().to_vec();
        let mut first = Some(batch);
        self.faults
            .retry(action, || {
                let batch = first.take().unwrap_or_else(|| WriteBatch::from_data(&data));
                let written = self
                    .db
                    .write_opt(batch, &WriteOptions::default())
                    .map_err(Error::rocks(action));
                std::future::ready(written)
            })
            .await
    }

    /// Writes `batch` with a synced WAL, on the io runtime, retrying while it fails with
    /// an I/O error.
    async fn write_synced(&self, batch: WriteBatch, action: &'static str) -> Result<()> {
        let data = Arc::new(batch.data().to_vec());
        self.faults
            .retry(action, || {
                let (db, data) = (self.db.clone(), data.clone());
                let written = self.io.spawn_blocking(move || {
                    let mut opts = WriteOptions::default();
                    opts.set_sync(true);
                    db.write_opt(WriteBatch::from_data(&data), &opts)
                        .map_err(Error::rocks(action))
                });
                async move { written.await.map_err(|e| Error::Task(e.to_string()))? }
            })
            .await
    }
}

fn cf<'a>(db: &'a DB, name: &str) -> Result<&'a rocksdb::ColumnFamily> {
    db.cf_handle(name)
        .ok_or_else(|| Error::corrupt("raft log", format!("column family {name} is missing")))
}

fn read_meta<T: serde::de::DeserializeOwned>(db: &DB, key: &[u8]) -> Result<Option<T>> {
    let meta = cf(db, CF_META)?;
    match db
        .get_pinned_cf(&meta, key)
        .map_err(Error::rocks("read raft metadata"))?
    {
        Some(bytes) => Ok(Some(codec::decode(&bytes)?)),
        None => Ok(None),
    }
}

fn put_meta<T: serde::Serialize>(
    db: &DB,
    batch: &mut WriteBatch,
    key: &[u8],
    value: &T,
) -> Result<()> {
    let meta = cf(db, CF_META)?;
    batch.put_cf(meta, key, codec::encode(value)?);
    Ok(())
}

/// Syncs the WAL for waiting appends, all that arrived since the last sync at once. A
/// failing sync is retried: the appends are reported durable only once it succeeds.
fn sync_loop(
    db: &LogDb,
    rx: &std::sync::mpsc::Receiver<LogFlushed<TypeConfig>>,
    stats: &LogStats,
    faults: &WriteFaults,
) {
    let mut waiting = Vec::new();
    while let Ok(first) = rx.recv() {
        waiting.push(first);
        waiting.extend(rx.try_iter());
        let result = faults
            .retry_blocking("sync the raft log", || {
                db.flush_wal(true)
                    .map_err(Error::rocks("sync the raft log"))
            })
            .map_err(|e| e.to_string());
        stats.syncs.fetch_add(1, Ordering::Relaxed);
        stats
            .appends
            .fetch_add(waiting.len() as u64, Ordering::Relaxed);
        for callback in waiting.drain(..) {
            let result = result.clone().map_err(std::io::Error::other);
            callback.log_io_completed(result);
        }
    }
}

fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// Entries `start..end`, as many as fit in `max_bytes` (as stored), at least one.
fn read_entries(db: &DB, start: u64, end: u64, max_bytes: usize) -> Result<Vec<Entry>> {
    if start >= end {
        return Ok(Vec::new());
    }
    let log = cf(db, CF_LOG)?;
    let mut opts = ReadOptions::default();
    opts.set_iterate_upper_bound(index_key(end).to_vec());
    let start_key = index_key(start);
    let iter = db.iterator_cf_opt(
        &log,
        opts,
        IteratorMode::From(&start_key, Direction::Forward),
    );
    let mut entries = Vec::new();
    let mut bytes = 0usize;
    for item in iter {
        let (_, value) = item.map_err(Error::rocks("read log entries"))?;
        bytes = bytes.saturating_add(value.len());
        if bytes > max_bytes && !entries.is_empty() {
            break;
        }
        entries.push(codec::decode::<Entry>(&value)?);
    }
    Ok(entries)
}

fn bounds(range: &impl RangeBounds<u64>) -> (u64, u64) {
    let start = match range.start_bound() {
        Bound::Included(&x) => x,
        Bound::Excluded(&x) => x.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&x) => x.saturating_add(1),
        Bound::Excluded(&x) => x,
        Bound::Unbounded => u64::MAX,
    };
    (start, end)
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let (start, end) = bounds(&range);
        read_entries(&self.db, start, end, usize::MAX).map_err(storage::read_logs)
    }

    /// What one append request to a follower carries: at most
    /// `APPEND_REQUEST_BYTES` of entries (at least one). Without a limit openraft reads
    /// and encodes `raft.max-append-entries` entries, finds them too large for a frame
    /// and tries again with fewer, and after ten requests with fewer goes back to all:
    /// with entries of 1 MB, 256 MB read and encoded for nothing every eleventh request.
    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> Result<Vec<Entry>, StorageError> {
        read_entries(&self.db, start, end, APPEND_REQUEST_BYTES).map_err(storage::read_logs)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let (start, end) = bounds(&range);
        read_entries(&self.db, start, end, usize::MAX).map_err(storage::read_logs)
    }
}

impl LogStore {
    fn last_log_id(&self) -> Result<Option<LogId>> {
        let log = cf(&self.db, CF_LOG)?;
        let mut iter = self.db.iterator_cf(log, IteratorMode::End);
        match iter.next() {
            Some(item) => {
                let (_, value) = item.map_err(Error::rocks("read the last log entry"))?;
                let entry: Entry = codec::decode(&value)?;
                Ok(Some(*entry.get_log_id()))
            }
            None => Ok(None),
        }
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged: Option<LogId> = self.meta(KEY_LAST_PURGED).map_err(storage::read_logs)?;
        let last = self.last_log_id().map_err(storage::read_logs)?;
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id: last.or(last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> LogReader {
        self.reader()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let mut batch = WriteBatch::default();
        put_meta(&self.db, &mut batch, KEY_VOTE, vote).map_err(storage::write_vote)?;
        self.write_synced(batch, "save the vote")
            .await
            .map_err(storage::write_vote)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        self.meta(KEY_VOTE).map_err(storage::read_vote)
    }

    // The committed log id is a hint for restart (apply up to it before hearing from a
    // leader). It goes to the WAL without waiting for the disk: it survives a process
    // crash, and the next append's sync makes it durable; losing it to a power cut only
    // means a restarting replica waits for the leader to tell it again.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let mut batch = WriteBatch::default();
        put_meta(&self.db, &mut batch, KEY_COMMITTED, &committed).map_err(storage::write_logs)?;
        self.write(batch, "save the committed log id")
            .await
            .map_err(storage::write_logs)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let stored: Option<Option<LogId>> = self.meta(KEY_COMMITTED).map_err(storage::read_logs)?;
        Ok(stored.flatten())
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
        let log = cf(&self.db, CF_LOG).map_err(storage::write_logs)?;
        let mut batch = WriteBatch::default();
        let mut buf = Vec::with_capacity(256);
        for entry in entries {
            buf.clear();
            codec::encode_into(&entry, &mut buf).map_err(|e| storage::write_logs(e.into()))?;
            batch.put_cf(log, index_key(entry.get_log_id().index), &buf);
        }
        self.write(batch, "append log entries")
            .await
            .map_err(storage::write_logs)?;
        // Durable once the log-sync thread has synced the WAL.
        let queued = self
            .flush_tx
            .as_ref()
            .is_some_and(|tx| tx.send(callback).is_ok());
        if !queued {
            return Err(storage::write_logs(Error::Task(
                "the log-sync thread has stopped".into(),
            )));
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let log = cf(&self.db, CF_LOG).map_err(storage::write_logs)?;
        let mut batch = WriteBatch::default();
        batch.delete_range_cf(log, index_key(log_id.index), index_key(u64::MAX));
        self.write(batch, "truncate the log")
            .await
            .map_err(storage::write_logs)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let log = cf(&self.db, CF_LOG).map_err(storage::write_logs)?;
        let mut batch = WriteBatch::default();
        batch.delete_range_cf(
            &log,
            index_key(0),
            index_key(log_id.index.saturating_add(1)),
        );
        put_meta(&self.db, &mut batch, KEY_LAST_PURGED, &log_id).map_err(storage::write_logs)?;
        self.write(batch, "purge the log")
            .await
            .map_err(storage::write_logs)?;
        self.stats.purged.fetch_max(log_id.index, Ordering::Relaxed);
        self.reclaim(log_id.index);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use openraft::EntryPayload;
    use openraft::storage::RaftLogStorageExt;
    use rill_protocol::Term;

    use super::*;
    use crate::types::{EntryData, log_id};

    /// An entry of 100 KB that do not compress.
    fn entry(index: u64) -> Entry {
        let mut x = index;
        let bytes: Vec<u8> = (0..100_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (x >> 56) as u8
            })
            .collect();
        Entry {
            log_id: log_id(Term(1), 0, index),
            payload: EntryPayload::Normal(EntryData(bytes.into())),
        }
    }

    /// Bytes of the log column family's files.
    fn log_bytes(store: &LogStore) -> usize {
        store
            .db
            .live_files()
            .unwrap()
            .iter()
            .filter(|f| f.column_family_name == CF_LOG)
            .map(|f| f.size)
            .sum()
    }

    async fn wait_reclaimed(store: &LogStore) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while store.reclaiming.load(Ordering::Acquire) {
            assert!(std::time::Instant::now() < deadline, "reclaim never ended");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_append_request_carries_at_most_8_mib_of_entries_and_at_least_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LogStore::open(dir.path(), Handle::current()).unwrap();
        let entries = (1..=200).map(entry).collect::<Vec<_>>();
        store.blocking_append(entries).await.unwrap();
        let mut reader = store.get_log_reader().await;
        // 100 KB each: 83 of them fit in 8 MiB.
        let sent = reader.limited_get_log_entries(1, 201).await.unwrap();
        assert_eq!(sent.len(), 83);
        assert_eq!(sent.first().map(|e| e.log_id.index), Some(1));
        let rest = reader.limited_get_log_entries(190, 201).await.unwrap();
        assert_eq!(rest.len(), 11);
        assert_eq!(reader.try_get_log_entries(1..201).await.unwrap().len(), 200);

        let huge = Entry {
            log_id: log_id(Term(1), 0, 201),
            payload: EntryPayload::Normal(EntryData(vec![1; APPEND_REQUEST_BYTES + 1].into())),
        };
        store.blocking_append([huge]).await.unwrap();
        let alone = reader.limited_get_log_entries(201, 202).await.unwrap();
        assert_eq!(alone.len(), 1, "an entry larger than the limit still goes");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn purging_frees_the_disk_space_of_the_purged_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = LogStore::open(dir.path(), Handle::current()).unwrap();
        // Three files of 1 MB: entries 1-10, 11-20 and 21-30.
        for first in [1, 11, 21] {
            let entries = (first..first + 10).map(entry).collect::<Vec<_>>();
            store.blocking_append(entries).await.unwrap();
            let log = cf(&store.db, CF_LOG).unwrap();
            store.db.flush_cf(log).unwrap();
        }
        assert!(log_bytes(&store) > 3_000_000, "{}", log_bytes(&store));

        store.purge(log_id(Term(1), 0, 20)).await.unwrap();
        wait_reclaimed(&store).await;
        let left = log_bytes(&store);
        assert!(
            left < 1_200_000,
            "{left} bytes left: entries 21-30 and little else"
        );
        let kept = store.try_get_log_entries(0..100).await.unwrap();
        let indexes: Vec<u64> = kept.iter().map(|e| e.log_id.index).collect();
        assert_eq!(indexes, (21..=30).collect::<Vec<_>>());

        // A purge inside a file: its purged entries are hidden and go too.
        store.purge(log_id(Term(1), 0, 25)).await.unwrap();
        wait_reclaimed(&store).await;
        assert!(log_bytes(&store) < 700_000, "{}", log_bytes(&store));
        let kept = store.try_get_log_entries(0..100).await.unwrap();
        let indexes: Vec<u64> = kept.iter().map(|e| e.log_id.index).collect();
        assert_eq!(indexes, (26..=30).collect::<Vec<_>>());
    }
}
