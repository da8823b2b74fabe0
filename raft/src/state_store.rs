//! The partition's state database: what the stream processor writes, next to the
//! raft log but separate from it.
//!
//! It holds three column families: `default` for the engine's tables and the core's
//! reserved prefix `0x00` (applied log id, membership, positions), `export` for
//! records keyed by position, and `history` for the history store. Writes skip the WAL: the raft log is the durable part, and a
//! restarted replica re-applies the log after the applied log id stored here (in the
//! same write batch as the state it describes). Both column families are flushed
//! together (`atomic_flush`), so what is on disk is always one applied log id's state;
//! a checkpoint flushes first, so the log behind a snapshot is never needed again.
//!
//! A snapshot install replaces the whole database. To do so safely while readers may
//! still hold the old one, each database lives in its own generation directory
//! (`state/gen-N`); `state/CURRENT` names the live one, and an old generation is deleted
//! when its last user lets go of it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;
use rill_protocol::codec;
use rocksdb::{ColumnFamilyDescriptor, DB, Options, WriteBatch, WriteOptions};

use crate::closing::{AllClosed, OpenDatabases, OpenToken};
use crate::error::{Error, Result};
use crate::types::{LogId, StoredMembership};

/// The column family that holds records for export, keyed by big-endian position.
pub const CF_EXPORT: &str = "export";
/// The column family of the history store (`rill-history`), fed from the applied records
/// in the same write batch.
pub const CF_HISTORY: &str = "history";
/// Where the last applied log id is kept (reserved core prefix `0x00`).
pub const KEY_APPLIED: &[u8] = b"\x00raft/applied";
/// Where the last applied membership is kept.
pub const KEY_MEMBERSHIP: &[u8] = b"\x00raft/membership";

const CURRENT: &str = "CURRENT";
const GEN_PREFIX: &str = "gen-";

fn db_options() -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    // Writes skip the WAL (see the module comment), so the two column families must be
    // flushed together to stay consistent with the applied log id.
    opts.set_atomic_flush(true);
    opts
}

/// Values from this size up are kept in blob files (docs/decisions/rocksdb-tuning.md).
const MIN_BLOB_SIZE: u64 = 4 << 10;

/// The block cache of [`StateOptions::default`]; a broker sizes its own from
/// `data.state-cache-size`.
pub const DEFAULT_STATE_CACHE_SIZE: usize = 512 << 20;

/// What the state databases of one broker share: a single cache for the blocks and blob
/// values they read, so the memory they hold is bounded by the configuration, however
/// many partitions (and snapshot generations) the broker opens.
#[derive(Clone)]
pub struct StateOptions {
    cache: rocksdb::Cache,
}

impl StateOptions {
    /// A new cache of `bytes` (LRU), for the databases opened with these options.
    pub fn with_cache_size(bytes: usize) -> StateOptions {
        StateOptions {
            cache: rocksdb::Cache::new_lru_cache(bytes),
        }
    }

    /// Bytes the shared cache holds now.
    pub fn cache_usage(&self) -> usize {
        self.cache.get_usage()
    }

    fn column_families(&self) -> Vec<ColumnFamilyDescriptor> {
        vec![
            ColumnFamilyDescriptor::new("default", self.large_values()),
            // Records live here only until they are exported: most are deleted while
            // still in the memtable, and a flush drops them.
            ColumnFamilyDescriptor::new(CF_EXPORT, self.cached()),
            ColumnFamilyDescriptor::new(CF_HISTORY, self.large_values()),
        ]
    }

    /// Options of a column family whose blocks go to the shared cache.
    fn cached(&self) -> Options {
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&self.cache);
        let mut opts = Options::default();
        opts.set_block_based_table_factory(&table);
        opts
    }

    /// Options of a column family that holds variable documents: large values go to
    /// blob files, written once at flush instead of again by every compaction that
    /// passes them, and read through the shared cache.
    fn large_values(&self) -> Options {
        let mut opts = self.cached();
        opts.set_enable_blob_files(true);
        opts.set_min_blob_size(MIN_BLOB_SIZE);
        opts.set_enable_blob_gc(true);
        opts.set_blob_cache(&self.cache);
        opts
    }
}

impl Default for StateOptions {
    fn default() -> Self {
        StateOptions::with_cache_size(DEFAULT_STATE_CACHE_SIZE)
    }
}

/// Deletes a generation directory once it is obsolete and its database is closed.
struct GenerationDir {
    path: PathBuf,
    obsolete: AtomicBool,
}

impl Drop for GenerationDir {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire)
            && let Err(e) = fs::remove_dir_all(&self.path)
        {
            tracing::warn!(path = %self.path.display(), error = %e, "could not delete an old state generation");
        }
    }
}

/// One open generation of the state database.
pub struct StateDb {
    // Field order matters: the database closes before its directory may be deleted, and
    // both happen before the store counts it as closed.
    db: DB,
    dir: GenerationDir,
    _open: OpenToken,
}

impl StateDb {
    fn open(path: &Path, open: &OpenDatabases, options: &StateOptions) -> Result<StateDb> {
        let db = DB::open_cf_descriptors(&db_options(), path, options.column_families())
            .map_err(Error::rocks("open the state database"))?;
        Ok(StateDb {
            db,
            dir: GenerationDir {
                path: path.to_path_buf(),
                obsolete: AtomicBool::new(false),
            },
            _open: open.token(),
        })
    }

    pub fn db(&self) -> &DB {
        &self.db
    }

    pub fn path(&self) -> &Path {
        &self.dir.path
    }

    /// The column family of records kept for export.
    pub fn export_cf(&self) -> Result<&rocksdb::ColumnFamily> {
        self.db
            .cf_handle(CF_EXPORT)
            .ok_or_else(|| Error::corrupt("state database", "the export column family is missing"))
    }

    /// The column family of the history store.
    pub fn history_cf(&self) -> Result<&rocksdb::ColumnFamily> {
        self.db
            .cf_handle(CF_HISTORY)
            .ok_or_else(|| Error::corrupt("state database", "the history column family is missing"))
    }

    /// Writes a batch, without the WAL (see the module comment).
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        let mut opts = WriteOptions::default();
        opts.disable_wal(true);
        self.db
            .write_opt(batch, &opts)
            .map_err(Error::rocks("write partition state"))
    }

    /// The last applied log id and membership, as stored by [`put_applied`].
    pub fn applied_state(&self) -> Result<(Option<LogId>, StoredMembership)> {
        read_applied_state(&self.db)
    }

    /// Writes a consistent copy of the database to `path` (hard links where possible).
    pub fn checkpoint(&self, path: &Path) -> Result<()> {
        let checkpoint = rocksdb::checkpoint::Checkpoint::new(&self.db)
            .map_err(Error::rocks("prepare a checkpoint"))?;
        checkpoint
            .create_checkpoint(path)
            .map_err(Error::rocks("create a checkpoint"))
    }
}

fn read_applied_state(db: &DB) -> Result<(Option<LogId>, StoredMembership)> {
    let applied = match db
        .get_pinned(KEY_APPLIED)
        .map_err(Error::rocks("read the applied log id"))?
    {
        Some(bytes) => Some(codec::decode::<LogId>(&bytes)?),
        None => None,
    };
    let membership = match db
        .get_pinned(KEY_MEMBERSHIP)
        .map_err(Error::rocks("read the applied membership"))?
    {
        Some(bytes) => codec::decode::<StoredMembership>(&bytes)?,
        None => StoredMembership::default(),
    };
    Ok((applied, membership))
}

/// Reads the applied state of a checkpoint directory without keeping it open.
pub(crate) fn checkpoint_applied_state(path: &Path) -> Result<(Option<LogId>, StoredMembership)> {
    let db = DB::open_cf_for_read_only(&Options::default(), path, ["default", CF_EXPORT], false)
        .map_err(Error::rocks("open a checkpoint"))?;
    read_applied_state(&db)
}

/// Adds the applied log id (and a membership change, if the batch had one) to a batch
/// of state changes, so they become visible together.
pub fn put_applied(
    batch: &mut WriteBatch,
    applied: &LogId,
    membership: Option<&StoredMembership>,
) -> Result<()> {
    batch.put(KEY_APPLIED, codec::encode(applied)?);
    if let Some(membership) = membership {
        batch.put(KEY_MEMBERSHIP, codec::encode(membership)?);
    }
    Ok(())
}

/// The state database of a partition, across snapshot installs.
pub struct StateStore {
    root: PathBuf,
    current: RwLock<Arc<StateDb>>,
    open: OpenDatabases,
    options: StateOptions,
}

impl StateStore {
    /// Opens the live generation under `root` with a cache of its own (tests and tools;
    /// a broker's partitions share one through [`StateStore::open_with`]).
    pub fn open(root: &Path) -> Result<StateStore> {
        StateStore::open_with(root, &StateOptions::default())
    }

    /// Opens the live generation under `root`, creating the first one if needed, and
    /// removes generations left over from a crash.
    pub fn open_with(root: &Path, options: &StateOptions) -> Result<StateStore> {
        fs::create_dir_all(root).map_err(Error::io(root))?;
        let current_file = root.join(CURRENT);
        let generation = match fs::read_to_string(&current_file) {
            Ok(text) => text.trim().to_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let first = format!("{GEN_PREFIX}{:06}", 1);
                write_current(root, &first)?;
                first
            }
            Err(e) => return Err(Error::io(&current_file)(e)),
        };
        if !generation.starts_with(GEN_PREFIX) || generation.contains(['/', '\\']) {
            return Err(Error::corrupt(
                current_file.display().to_string(),
                format!("names {generation:?}, not a generation directory"),
            ));
        }
        remove_other_entries(root, &generation)?;
        let open = OpenDatabases::new();
        let db = StateDb::open(&root.join(&generation), &open, options)?;
        Ok(StateStore {
            root: root.to_path_buf(),
            current: RwLock::new(Arc::new(db)),
            open,
            options: options.clone(),
        })
    }

    /// Tells when every generation of the database has been closed (the store and
    /// everyone holding a generation let go, and RocksDB finished closing).
    pub fn closed_signal(&self) -> AllClosed {
        self.open.all_closed()
    }

    /// The live database. Cheap; hold it only as long as needed.
    pub fn current(&self) -> Arc<StateDb> {
        self.current.read().clone()
    }

    /// The last applied log id and membership of the live database.
    pub fn applied_state(&self) -> Result<(Option<LogId>, StoredMembership)> {
        self.current().applied_state()
    }

    /// Makes the database in `source` (a directory on the same file system, e.g. an
    /// unpacked snapshot) the live one. Blocking: call from the io runtime.
    pub fn replace_with(&self, source: &Path) -> Result<()> {
        let mut current = self.current.write();
        let next_number = generation_number(current.path()).map_or(1, |n| n + 1);
        let next = format!("{GEN_PREFIX}{next_number:06}");
        let next_path = self.root.join(&next);
        fs::rename(source, &next_path).map_err(Error::io(&next_path))?;
        let db = StateDb::open(&next_path, &self.open, &self.options)?;
        write_current(&self.root, &next)?;
        current.dir.obsolete.store(true, Ordering::Release);
        *current = Arc::new(db);
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

fn generation_number(path: &Path) -> Option<u64> {
    path.file_name()?
        .to_str()?
        .strip_prefix(GEN_PREFIX)?
        .parse()
        .ok()
}

fn write_current(root: &Path, generation: &str) -> Result<()> {
    let tmp = root.join("CURRENT.tmp");
    fs::write(&tmp, generation.as_bytes()).map_err(Error::io(&tmp))?;
    fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(Error::io(&tmp))?;
    let current = root.join(CURRENT);
    fs::rename(&tmp, &current).map_err(Error::io(&current))?;
    sync_dir(root)
}

pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(Error::io(dir))
}

fn remove_other_entries(root: &Path, keep: &str) -> Result<()> {
    for entry in fs::read_dir(root).map_err(Error::io(root))? {
        let entry = entry.map_err(Error::io(root))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == keep || name == CURRENT {
            continue;
        }
        let path = entry.path();
        let removed = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.map_err(Error::io(&path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rill_protocol::Term;

    use super::*;
    use crate::types::log_id;

    #[test]
    fn applied_state_is_written_with_the_batch_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = StateStore::open(dir.path()).unwrap();
            assert_eq!(store.applied_state().unwrap().0, None);
            let mut batch = WriteBatch::default();
            batch.put(b"k", b"v");
            put_applied(&mut batch, &log_id(Term(2), 1, 7), None).unwrap();
            store.current().write(batch).unwrap();
        }
        let store = StateStore::open(dir.path()).unwrap();
        assert_eq!(
            store.applied_state().unwrap().0,
            Some(log_id(Term(2), 1, 7))
        );
        assert_eq!(
            store.current().db().get(b"k").unwrap().as_deref(),
            Some(&b"v"[..])
        );
    }

    /// Writes `count` values of `size` bytes under `prefix`, flushes them to files and
    /// reads them back, so their blocks (or blobs) pass through the block cache.
    fn fill_and_read(store: &StateStore, prefix: u8, count: u32, size: usize) {
        let db = store.current();
        let mut batch = WriteBatch::default();
        for i in 0..count {
            let mut key = vec![prefix];
            key.extend_from_slice(&i.to_be_bytes());
            batch.put(key, vec![i as u8; size]);
        }
        db.write(batch).unwrap();
        db.db().flush().unwrap();
        for i in 0..count {
            let mut key = vec![prefix];
            key.extend_from_slice(&i.to_be_bytes());
            assert_eq!(db.db().get(&key).unwrap().map(|v| v.len()), Some(size));
        }
    }

    #[test]
    fn the_partitions_of_a_broker_share_one_bounded_block_cache() {
        let dir = tempfile::tempdir().unwrap();
        let options = StateOptions::with_cache_size(1 << 20);
        let first = StateStore::open_with(&dir.path().join("p1"), &options).unwrap();
        let second = StateStore::open_with(&dir.path().join("p2"), &options).unwrap();
        let opened = options.cache_usage();

        // Small values: data blocks of the first partition.
        fill_and_read(&first, 0x10, 2000, 100);
        let after_first = options.cache_usage();
        assert!(
            after_first > opened + (100 << 10),
            "the first partition's reads went through the cache: {after_first} bytes"
        );
        // Large values (blob files): the second partition's reads land in the same cache.
        fill_and_read(&second, 0x20, 20, 8 << 10);
        let after_second = options.cache_usage();
        assert!(
            after_second > after_first,
            "{after_second} after the second partition, {after_first} before"
        );
        // Far more than the capacity read through it: it stays within it.
        fill_and_read(&second, 0x30, 400, 8 << 10);
        let full = options.cache_usage();
        assert!(full <= 1 << 20, "{full} bytes held by a cache of 1 MiB");
        assert!(full > after_second);
    }

    #[test]
    fn replace_with_swaps_generations_and_deletes_the_old_one_when_released() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::open(&dir.path().join("state")).unwrap();
        let old = store.current();
        let mut batch = WriteBatch::default();
        batch.put(b"k", b"old");
        old.write(batch).unwrap();

        // Build a replacement as a checkpoint of another database.
        let other = StateStore::open(&dir.path().join("other")).unwrap();
        let mut batch = WriteBatch::default();
        batch.put(b"k", b"new");
        put_applied(&mut batch, &log_id(Term(3), 0, 40), None).unwrap();
        other.current().write(batch).unwrap();
        let checkpoint = dir.path().join("checkpoint");
        other.current().checkpoint(&checkpoint).unwrap();
        assert_eq!(
            checkpoint_applied_state(&checkpoint).unwrap().0,
            Some(log_id(Term(3), 0, 40))
        );

        store.replace_with(&checkpoint).unwrap();
        assert_eq!(
            store.current().db().get(b"k").unwrap().as_deref(),
            Some(&b"new"[..])
        );
        // The old generation stays readable for whoever still holds it.
        let old_path = old.path().to_path_buf();
        assert_eq!(old.db().get(b"k").unwrap().as_deref(), Some(&b"old"[..]));
        drop(old);
        assert!(!old_path.exists(), "old generation deleted once released");
        drop(store);
        let reopened = StateStore::open(&dir.path().join("state")).unwrap();
        assert_eq!(
            reopened.applied_state().unwrap().0,
            Some(log_id(Term(3), 0, 40))
        );
    }
}
