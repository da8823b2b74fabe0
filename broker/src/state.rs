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

/// The engine version a new partition starts with.
pub const INITIAL_ENGINE_VERSION: u32 = 1;

fn rocks_error(e: rocksdb::Error) -> StateError {
    StateError(e.to_string())
}

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
            .map_err(rocks_error)
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
        iter.status().map_err(rocks_error)
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
            let raw: [u8; 8] = bytes.as_slice().try_into().map_err(|_| {
                StateError(format!(
                    "{} has {} bytes",
                    String::from_utf8_lossy(key),
                    bytes.len()
                ))
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
            Err(_) => {
                bad = Some(id);
                std::ops::ControlFlow::Break(())
            }
        }
    })?;
    match bad {
        Some(id) => Err(StateError(format!(
            "the exported position of exporter {id} is not 8 bytes"
        ))),
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
