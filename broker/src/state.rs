//! Partition state on RocksDB as the engine sees it ([`StateRead`]), the core's own keys
//! under the reserved prefix `0x00`, and reading records back from the export column
//! family.

use rill_engine_api::{ScanVisitor, StateError, StateRead, StateTxn};
use rill_protocol::{Position, Record, Timestamp, codec};
use rill_raft::StateDb;
use rocksdb::{DB, ReadOptions, WriteBatch};

use crate::error::Result;

/// Position of the last record written (dense, from 1).
const KEY_LAST_POSITION: &[u8] = b"\x00core/last-position";
/// Timestamp of the last applied entry, so apply-time timestamps never go back.
const KEY_LAST_TIMESTAMP: &[u8] = b"\x00core/last-timestamp";
/// The replicated engine version.
const KEY_ENGINE_VERSION: &[u8] = b"\x00core/engine-version";

/// The data format the state was written in (`crate::DATA_FORMAT`): a snapshot carries
/// it to the replica that installs it.
const KEY_DATA_FORMAT: &[u8] = b"\x00core/data-format";

/// The engine version a new partition starts with.
pub const INITIAL_ENGINE_VERSION: u32 = 1;

/// Read access to the state database's engine column family.
pub struct RocksState<'a> {
    db: &'a DB,
}

impl<'a> RocksState<'a> {
    pub fn new(db: &'a StateDb) -> Self {
        RocksState { db: db.db() }
    }
}

impl StateRead for RocksState<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.db
            .get_pinned(key)
            .map(|value| value.map(|v| v.to_vec()))
            .map_err(|e| StateError::storage("read", e))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        visit: &mut ScanVisitor<'_>,
    ) -> Result<(), StateError> {
        let mut opts = ReadOptions::default();
        if !end.is_empty() {
            opts.set_iterate_upper_bound(end.to_vec());
        }
        let mut iter = self.db.raw_iterator_opt(opts);
        iter.seek(start);
        while iter.valid() {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            if visit(key, value).is_break() {
                return Ok(());
            }
            iter.next();
        }
        iter.status().map_err(|e| StateError::storage("scan", e))
    }
}

/// Where the stream processor stands; kept in state next to what it describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub last_position: Position,
    pub last_timestamp: Timestamp,
    pub engine_version: u32,
}

fn read_u64(state: &dyn StateRead, key: &[u8]) -> Result<Option<u64>, StateError> {
    match state.get(key)? {
        None => Ok(None),
        Some(bytes) => {
            let raw: [u8; 8] = bytes.as_slice().try_into().map_err(|e| {
                StateError::corrupt(
                    format!("{} has {} bytes", String::from_utf8_lossy(key), bytes.len()),
                    e,
                )
            })?;
            Ok(Some(u64::from_be_bytes(raw)))
        }
    }
}

impl Cursor {
    pub fn load(state: &dyn StateRead) -> Result<Cursor, StateError> {
        Ok(Cursor {
            last_position: Position(read_u64(state, KEY_LAST_POSITION)?.unwrap_or(0)),
            last_timestamp: Timestamp(read_u64(state, KEY_LAST_TIMESTAMP)?.unwrap_or(0) as i64),
            engine_version: read_u64(state, KEY_ENGINE_VERSION)?
                .map_or(INITIAL_ENGINE_VERSION, |v| v as u32),
        })
    }

    pub fn write(&self, batch: &mut WriteBatch) {
        batch.put(KEY_LAST_POSITION, self.last_position.get().to_be_bytes());
        batch.put(
            KEY_LAST_TIMESTAMP,
            (self.last_timestamp.millis() as u64).to_be_bytes(),
        );
        batch.put(
            KEY_ENGINE_VERSION,
            u64::from(self.engine_version).to_be_bytes(),
        );
        batch.put(KEY_DATA_FORMAT, u64::from(crate::DATA_FORMAT).to_be_bytes());
    }
}

/// Refuses state (of a data directory, or of a snapshot from another replica) written
/// in another data format than this build's: `what` names it. State without the mark
/// was written by a build of this format before the mark existed.
pub(crate) fn check_data_format(state: &dyn StateRead, what: &str) -> Result<(), String> {
    let found = read_u64(state, KEY_DATA_FORMAT).map_err(|e| e.to_string())?;
    match found {
        Some(found) if found != u64::from(crate::DATA_FORMAT) => Err(format!(
            "{what} is in data format {found}, and this broker (Rill {}) reads data format \
             {} only: run the Rill version that wrote it, or start this broker on an empty \
             data.directory (docs/decisions/data-format.md)",
            rill_protocol::BROKER_VERSION,
            crate::DATA_FORMAT
        )),
        _ => Ok(()),
    }
}

/// Writes buffered state changes into a write batch.
pub(crate) fn write_changes(
    batch: &mut WriteBatch,
    writes: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>>,
) {
    for (key, value) in writes {
        match value {
            Some(value) => batch.put(key, value),
            None => batch.delete(key),
        }
    }
}

const EXPORTED_PREFIX: &[u8] = b"\x00core/exported/";

/// The replicated exported position of every exporter, by id.
pub fn exported_positions(
    state: &dyn StateRead,
) -> Result<std::collections::BTreeMap<String, Position>, StateError> {
    let mut positions = std::collections::BTreeMap::new();
    let mut bad = None;
    state.scan_prefix(EXPORTED_PREFIX, &mut |key, value| {
        let id = String::from_utf8_lossy(&key[EXPORTED_PREFIX.len()..]).into_owned();
        match <[u8; 8]>::try_from(value) {
            Ok(raw) => {
                positions.insert(id, Position(u64::from_be_bytes(raw)));
                std::ops::ControlFlow::Continue(())
            }
            Err(e) => {
                bad = Some((id, e));
                std::ops::ControlFlow::Break(())
            }
        }
    })?;
    match bad {
        Some((id, e)) => Err(StateError::corrupt(
            format!("the exported position of exporter {id} is not 8 bytes"),
            e,
        )),
        None => Ok(positions),
    }
}

/// Applies the exporters' positions (see [`crate::batch::CoreCommand::Exported`]):
/// stores them (never moving one back), forgets exporters no longer configured, and
/// returns the position up to which export entries can be deleted.
pub(crate) fn apply_exported(
    state: &mut dyn StateTxn,
    positions: &[(String, u64)],
    last_position: Position,
) -> Result<Position, StateError> {
    let stored = exported_positions(state)?;
    let key = |id: &str| [EXPORTED_PREFIX, id.as_bytes()].concat();
    for id in stored.keys() {
        if !positions.iter().any(|(p, _)| p == id) {
            state.delete(&key(id));
        }
    }
    let mut floor = last_position;
    for (id, position) in positions {
        let kept = stored
            .get(id)
            .copied()
            .unwrap_or(Position::ZERO)
            .max(Position(*position))
            .min(last_position);
        state.put(&key(id), &kept.get().to_be_bytes());
        floor = floor.min(kept);
    }
    Ok(floor)
}

/// The cluster configuration (JSON), replicated in partition 1's log
/// (docs/decisions/cluster-scaling.md), and its version.
const KEY_CLUSTER_CONFIGURATION: &[u8] = b"\x00core/cluster/configuration";
const KEY_CLUSTER_VERSION: &[u8] = b"\x00core/cluster/version";

/// The cluster configuration stored in this partition's state, with its version.
pub(crate) fn cluster_configuration(
    state: &dyn StateRead,
) -> Result<Option<(u64, String)>, StateError> {
    let Some(version) = read_u64(state, KEY_CLUSTER_VERSION)? else {
        return Ok(None);
    };
    let json = state.get(KEY_CLUSTER_CONFIGURATION)?.unwrap_or_default();
    let json = String::from_utf8(json)
        .map_err(|e| StateError::corrupt("the cluster configuration is not UTF-8", e))?;
    Ok(Some((version, json)))
}

/// Applies a proposed cluster configuration (see
/// [`crate::batch::CoreCommand::ClusterConfiguration`]): stored only if the stored one is
/// still at `expected_version` (the initial version when none is stored), so two
/// coordinators racing cannot both move it on. Returns whether it was stored.
pub(crate) fn apply_cluster_configuration(
    state: &mut dyn StateTxn,
    expected_version: u64,
    version: u64,
    json: &str,
) -> Result<bool, StateError> {
    let stored = read_u64(state, KEY_CLUSTER_VERSION)?.unwrap_or(crate::cluster::INITIAL_VERSION);
    if stored != expected_version || version <= stored {
        return Ok(false);
    }
    state.put(KEY_CLUSTER_VERSION, &version.to_be_bytes());
    state.put(KEY_CLUSTER_CONFIGURATION, json.as_bytes());
    Ok(true)
}

/// The partition count this partition distributes over, once a cluster change raised it
/// (see [`crate::batch::CoreCommand::PartitionCount`]).
const KEY_PARTITION_COUNT: &[u8] = b"\x00core/partition-count";

/// The partition count stored in this partition's state, if a change raised it.
pub(crate) fn partition_count(state: &dyn StateRead) -> Result<Option<u16>, StateError> {
    Ok(read_u64(state, KEY_PARTITION_COUNT)?.map(|count| count as u16))
}

/// Raises the stored partition count to `count` (`default` when none is stored); returns
/// the count before if it was raised.
pub(crate) fn apply_partition_count(
    state: &mut dyn StateTxn,
    count: u16,
    default: u16,
) -> Result<Option<u16>, StateError> {
    let stored = partition_count(state)?.unwrap_or(default);
    if count <= stored {
        return Ok(None);
    }
    state.put(KEY_PARTITION_COUNT, &u64::from(count).to_be_bytes());
    Ok(Some(stored))
}

/// The position up to which every exporter has the records: export entries before the
/// first one left were deleted for that reason (none left: all of them).
pub(crate) fn exported_floor(db: &StateDb, cursor: &Cursor) -> Result<Position> {
    Ok(match read_records(db, Position(1), 1)?.first() {
        Some(first) => Position(first.position.get() - 1),
        None => cursor.last_position,
    })
}

/// Reads up to `limit` records from `from` on, in position order.
pub fn read_records(db: &StateDb, from: Position, limit: usize) -> Result<Vec<Record>> {
    let cf = db.export_cf()?;
    let mut iter = db.db().raw_iterator_cf(&cf);
    iter.seek(from.get().to_be_bytes());
    let mut records = Vec::new();
    while iter.valid() && records.len() < limit {
        if let Some(value) = iter.value() {
            records.push(codec::decode::<Record>(value)?);
        }
        iter.next();
    }
    iter.status().map_err(|e| rill_raft::Error::Rocks {
        action: "read records",
        source: e,
    })?;
    Ok(records)
}

/// The partition's latest checkpoint (a backup's cut): its backup id and the position
/// of the last record before it (docs/decisions/backup.md).
const KEY_CHECKPOINT_ID: &[u8] = b"\x00core/checkpoint/id";
const KEY_CHECKPOINT_POSITION: &[u8] = b"\x00core/checkpoint/position";

/// The latest checkpoint recorded in state: backup id and position.
pub(crate) fn latest_checkpoint(
    state: &dyn StateRead,
) -> Result<Option<(u64, Position)>, StateError> {
    let Some(id) = read_u64(state, KEY_CHECKPOINT_ID)? else {
        return Ok(None);
    };
    let position = read_u64(state, KEY_CHECKPOINT_POSITION)?.unwrap_or(0);
    Ok(Some((id, Position(position))))
}

/// Applies [`crate::batch::CoreCommand::Checkpoint`]: records `backup_id` at `position`
/// if it is greater than the latest one. `Err(latest)` when it is not (nothing changes).
pub(crate) fn apply_checkpoint(
    state: &mut dyn StateTxn,
    backup_id: u64,
    position: Position,
) -> Result<std::result::Result<(), u64>, StateError> {
    if let Some((latest, _)) = latest_checkpoint(state)?
        && backup_id <= latest
    {
        return Ok(Err(latest));
    }
    state.put(KEY_CHECKPOINT_ID, &backup_id.to_be_bytes());
    state.put(KEY_CHECKPOINT_POSITION, &position.get().to_be_bytes());
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use std::ops::ControlFlow;

    use rill_raft::StateStore;

    use super::*;

    fn key(table: u8, instance: u64, rest: &[u8]) -> Vec<u8> {
        let mut key = vec![table];
        key.extend_from_slice(&instance.to_be_bytes());
        key.extend_from_slice(rest);
        key
    }

    fn scanned(state: &RocksState<'_>, start: &[u8], end: &[u8]) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        state
            .scan(start, end, &mut |k, _| {
                keys.push(k.to_vec());
                ControlFlow::Continue(())
            })
            .unwrap();
        keys
    }

    /// Scans see exactly the keys in their range, with data spread over several flushed
    /// files, deletions among them, and neighbours on both sides.
    #[test]
    fn scans_within_and_across_prefixes_see_every_key_in_range() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::open(dir.path()).unwrap();
        let db = store.current();
        for instance in 1..=40u64 {
            let mut batch = WriteBatch::default();
            for scope in 0..3u8 {
                batch.put(key(0x30, instance, &[scope, b'a']), b"v");
                batch.put(key(0x30, instance, &[scope, b'b']), b"v");
            }
            batch.put(key(0x20, instance, b""), b"element");
            db.write(batch).unwrap();
            if instance % 10 == 0 {
                db.db().flush().unwrap();
            }
        }
        let mut batch = WriteBatch::default();
        batch.delete(key(0x30, 15, &[1, b'a']));
        db.write(batch).unwrap();
        db.db().flush().unwrap();
        let state = RocksState::new(&db);

        // Within one instance's scope.
        let scope = key(0x30, 15, &[1]);
        assert_eq!(
            scanned(&state, &scope, &key(0x30, 15, &[2])),
            vec![key(0x30, 15, &[1, b'b'])]
        );
        // A whole instance.
        assert_eq!(
            scanned(&state, &key(0x30, 7, b""), &key(0x30, 8, b"")).len(),
            6
        );
        // Across instances and files, and an instance that has nothing.
        assert_eq!(
            scanned(&state, &key(0x30, 5, b""), &key(0x30, 25, b"")).len(),
            119
        );
        assert!(scanned(&state, &key(0x30, 99, &[0]), &key(0x30, 99, &[1])).is_empty());
        // A whole table, with bounds shorter than the keys.
        assert_eq!(scanned(&state, &[0x20], &[0x21]).len(), 40);
        assert_eq!(scanned(&state, &[0x30], &[0x31]).len(), 239);
        // Point reads, present and absent.
        assert!(state.get(&key(0x20, 33, b"")).unwrap().is_some());
        assert!(state.get(&key(0x30, 15, &[1, b'a'])).unwrap().is_none());
        assert!(state.get(&key(0x20, 41, b"")).unwrap().is_none());
    }

    /// The partition count in state only grows: a lower or equal proposal (a leader
    /// that saw an older configuration) changes nothing.
    #[test]
    fn the_partition_count_only_grows() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::open(dir.path()).unwrap();
        let db = store.current();
        let base = RocksState::new(&db);
        let mut state = rill_engine_api::Overlay::new(&base);
        assert_eq!(partition_count(&state).unwrap(), None);
        assert_eq!(apply_partition_count(&mut state, 2, 2).unwrap(), None);
        assert_eq!(apply_partition_count(&mut state, 4, 2).unwrap(), Some(2));
        assert_eq!(apply_partition_count(&mut state, 3, 2).unwrap(), None);
        assert_eq!(apply_partition_count(&mut state, 5, 2).unwrap(), Some(4));
        assert_eq!(partition_count(&state).unwrap(), Some(5));
    }

    #[test]
    fn a_checkpoint_is_recorded_only_above_the_latest() {
        let base = rill_engine_api::MemoryState::default();
        let mut state = rill_engine_api::Overlay::new(&base);
        assert_eq!(latest_checkpoint(&state).unwrap(), None);
        assert_eq!(
            apply_checkpoint(&mut state, 5, Position(40)).unwrap(),
            Ok(())
        );
        assert_eq!(
            apply_checkpoint(&mut state, 5, Position(41)).unwrap(),
            Err(5)
        );
        assert_eq!(
            apply_checkpoint(&mut state, 2, Position(42)).unwrap(),
            Err(5)
        );
        assert_eq!(latest_checkpoint(&state).unwrap(), Some((5, Position(40))));
        assert_eq!(
            apply_checkpoint(&mut state, 6, Position(43)).unwrap(),
            Ok(())
        );
        assert_eq!(latest_checkpoint(&state).unwrap(), Some((6, Position(43))));
    }

    #[test]
    fn state_of_another_data_format_is_refused_naming_both() {
        let base = rill_engine_api::MemoryState::default();
        let mut state = rill_engine_api::Overlay::new(&base);
        // Unmarked: written by this format before the mark existed.
        assert_eq!(check_data_format(&state, "the state"), Ok(()));
        state.put(
            KEY_DATA_FORMAT,
            &u64::from(crate::DATA_FORMAT).to_be_bytes(),
        );
        assert_eq!(check_data_format(&state, "the state"), Ok(()));
        let newer = u64::from(crate::DATA_FORMAT) + 1;
        state.put(KEY_DATA_FORMAT, &newer.to_be_bytes());
        let error = check_data_format(&state, "the snapshot of partition 1").unwrap_err();
        assert!(
            error.starts_with(&format!(
                "the snapshot of partition 1 is in data format {newer}"
            )) && error.contains(&format!("reads data format {} only", crate::DATA_FORMAT)),
            "{error}"
        );
    }
}
