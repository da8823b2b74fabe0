//! A partition's history store: what happened to its process instances, kept after they
//! finish (for `history.retention`) and indexed so that searches by process, definition
//! and state read only what they return and count. See docs/decisions/history-store.md.
//!
//! It is fed from the records the stream processor writes, on every replica, in the same
//! write batch as the state and records (the broker keeps it in the state database's
//! `history` column family), so it is at the same applied index as everything else,
//! survives restarts and failovers, and travels in snapshots. Nothing here reads a clock:
//! dates are the records' timestamps, and expiry takes its cutoff from a replicated
//! command.
//!
//! Layout (keys big-endian, so scans come out in key order):
//!
//! ```text
//! 10 | key                          -> HistoricProcessInstance (rill codec)
//! 11 | state | key                  -> ()   by state
//! 12 | process id | key             -> ()   by BPMN process id
//! 13 | process id | state | key     -> ()
//! 14 | definition key | key         -> ()   by process definition key
//! 15 | definition key | state | key -> ()
//! 16 | end date | key               -> ()   finished instances, oldest first (retention)
//! ```
//! A process id is written as its length (u16) and bytes, so no id is a prefix of another.

mod search;
mod store;

pub use search::{process_instance, search_process_instances};
pub use store::{HistoryRead, HistoryWriter, MemoryHistory, ScanVisitor, oldest_finished};

/// Why the history store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history store: {0}")]
    Storage(String),
    #[error("history store: corrupt entry {key}: {reason}")]
    Corrupt { key: String, reason: String },
}

pub type Result<T, E = HistoryError> = std::result::Result<T, E>;

/// Matches counted per partition at most: past it a search says there are more
/// (`hasMoreTotalItems`), as Camunda's search backends do at 10,000.
pub const COUNT_LIMIT: u32 = 10_000;

/// Finished instances removed per expiry command at most, so that one command never
/// holds up the partition.
pub const EXPIRE_LIMIT: usize = 1_000;

pub(crate) mod keys {
    use rill_protocol::{Key, ProcessInstanceState, Timestamp};

    pub const INSTANCE: u8 = 0x10;
    pub const BY_STATE: u8 = 0x11;
    pub const BY_PROCESS: u8 = 0x12;
    pub const BY_PROCESS_STATE: u8 = 0x13;
    pub const BY_DEFINITION: u8 = 0x14;
    pub const BY_DEFINITION_STATE: u8 = 0x15;
    pub const BY_END: u8 = 0x16;

    pub fn state_byte(state: ProcessInstanceState) -> u8 {
        match state {
            ProcessInstanceState::Active => 1,
            ProcessInstanceState::Completed => 2,
            ProcessInstanceState::Terminated => 3,
        }
    }

    /// A signed number whose bytes sort in numeric order.
    pub fn int(value: i64) -> [u8; 8] {
        ((value as u64) ^ (1 << 63)).to_be_bytes()
    }

    pub fn read_int(bytes: &[u8]) -> Option<i64> {
        let raw: [u8; 8] = bytes.try_into().ok()?;
        Some((u64::from_be_bytes(raw) ^ (1 << 63)) as i64)
    }

    pub fn text(out: &mut Vec<u8>, text: &str) {
        let len = u16::try_from(text.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&text.as_bytes()[..usize::from(len)]);
    }

    pub fn instance(key: Key) -> Vec<u8> {
        let mut out = vec![INSTANCE];
        out.extend_from_slice(&int(key.get()));
        out
    }

    /// Prefixes of the indexes: (table, what the prefix names), with the key after.
    pub fn by_state(state: Option<ProcessInstanceState>) -> Vec<u8> {
        let mut out = vec![BY_STATE];
        out.extend(state.map(state_byte));
        out
    }

    pub fn by_process(id: &str, state: Option<ProcessInstanceState>) -> Vec<u8> {
        let mut out = vec![if state.is_some() {
            BY_PROCESS_STATE
        } else {
            BY_PROCESS
        }];
        text(&mut out, id);
        out.extend(state.map(state_byte));
        out
    }

    pub fn by_definition(definition: Key, state: Option<ProcessInstanceState>) -> Vec<u8> {
        let mut out = vec![if state.is_some() {
            BY_DEFINITION_STATE
        } else {
            BY_DEFINITION
        }];
        out.extend_from_slice(&int(definition.get()));
        out.extend(state.map(state_byte));
        out
    }

    pub fn by_end(end: Timestamp, key: Key) -> Vec<u8> {
        let mut out = vec![BY_END];
        out.extend_from_slice(&int(end.millis()));
        out.extend_from_slice(&int(key.get()));
        out
    }

    pub fn with_key(mut prefix: Vec<u8>, key: Key) -> Vec<u8> {
        prefix.extend_from_slice(&int(key.get()));
        prefix
    }

    /// The instance key at the end of an index key.
    pub fn trailing_key(index_key: &[u8]) -> Option<Key> {
        let at = index_key.len().checked_sub(8)?;
        read_int(&index_key[at..]).map(Key)
    }
}

#[cfg(test)]
mod tests;
