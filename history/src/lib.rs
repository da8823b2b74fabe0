//! A partition's history store: what happened to its process instances, element
//! instances, variables, jobs, incidents and message subscriptions, and the process
//! definitions deployed, kept after they finish (for `history.retention`) and indexed so that the
//! common searches read only what they return and count. See
//! docs/decisions/history-store.md.
//!
//! It is fed from the records the stream processor writes, on every replica, in the same
//! write batch as the state and records (the broker keeps it in the state database's
//! `history` column family), so it is at the same applied index as everything else,
//! survives restarts and failovers, and travels in snapshots. Nothing here reads a clock:
//! dates are the records' timestamps, and expiry takes its cutoff from a replicated
//! command.
//!
//! Layout (keys big-endian, so scans come out in key order; every kind of entry is a
//! [`Table`]: a primary table of entries and secondary indexes of field values):
//!
//! ```text
//! 10 | key                          -> HistoricProcessInstance (rill codec)
//! 11 | state | key                  -> ()   by state
//! 12 | process id | key             -> ()   by BPMN process id
//! 13 | process id | state | key     -> ()
//! 14 | definition key | key         -> ()   by process definition key
//! 15 | definition key | state | key -> ()
//! 16 | end date | key               -> ()   finished instances, oldest first (retention)
//! 20 | key                          -> HistoricJob
//! 21 | type | state | key           -> ()
//! 22 | type | key                   -> ()
//! 23 | state | key                  -> ()
//! 24 | process instance key | key   -> ()   (also: retention with the instance)
//! 30 | key                          -> HistoricIncident
//! 31 | process instance key | state | key -> ()
//! 32 | process instance key | key   -> ()   (also: retention with the instance)
//! 33 | state | key                  -> ()
//! 40 | key                          -> HistoricVariable
//! 41 | process instance key | name | key -> ()
//! 42 | process instance key | key   -> ()   (also: retention with the instance)
//! 43 | scope key | key              -> ()
//! 44 | name | key                   -> ()
//! 50 | key                          -> HistoricElementInstance
//! 51 | process instance key | state | key -> ()
//! 52 | process instance key | key   -> ()   (also: retention with the instance)
//! 53 | flow scope key | key         -> ()
//! 60 | key                          -> HistoricProcessDefinition
//! 61 | key                          -> the definition's XML (bytes as deployed)
//! 62 | process id | key             -> ()
//! 63 | key                          -> the definition's element names (id -> name)
//! 70 | key                          -> HistoricMessageSubscription
//! 71 | process instance key | key   -> ()   (also: retention with the instance)
//! 72 | message name | key           -> ()
//! 73 | state | key                  -> ()
//! A0 | key                          -> HistoricUserTask
//! A1 | process instance key | key   -> ()   (also: retention with the instance)
//! A2 | state | key                  -> ()
//! A3 | assignee | key               -> ()
//! A4 | element instance key | key   -> ()
//! A8 | key                          -> HistoricForm
//! A9 | key                          -> HistoricResource (an RPA script, with its content)
//! 80 | key                          -> HistoricDecisionDefinition
//! 81 | decision id | key            -> ()
//! 82 | key                          -> HistoricDecisionRequirements
//! 83 | key                          -> the DMN resource (bytes as deployed)
//! 84 | key                          -> HistoricDecisionInstance
//! 85 | process instance key | key   -> ()
//! B0 | key                          -> HistoricUser (never a password or its hash)
//! B1 | username | key              -> ()
//! ```
//! Keys and numbers are 8 bytes, sign-flipped; texts (ids, states, types) their length
//! (u16) and bytes, so no text is a prefix of another.

mod answer;
mod model;
mod search;
mod store;
mod table;

pub use answer::answer;
pub use search::{
    definition_xml, element_statistics, get, process_instance, search, search_process_instances,
};
pub use store::{HistoryRead, HistoryWriter, MemoryHistory, ScanVisitor, oldest_finished};
pub use table::Table;

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

/// Entries (instances, and the jobs and incidents that go with them) removed per expiry
/// command at most, so that one command never holds up the partition.
pub const EXPIRE_LIMIT: usize = 1_000;

pub(crate) mod keys {
    use rill_protocol::history::FieldValue;
    use rill_protocol::{Key, Timestamp};

    pub const INSTANCE: u8 = 0x10;
    pub const BY_END: u8 = 0x16;
    pub const JOB: u8 = 0x20;
    pub const JOB_BY_INSTANCE: u8 = 0x24;
    pub const INCIDENT: u8 = 0x30;
    pub const INCIDENT_BY_INSTANCE: u8 = 0x32;
    pub const VARIABLE: u8 = 0x40;
    pub const VARIABLE_BY_INSTANCE: u8 = 0x42;
    pub const ELEMENT: u8 = 0x50;
    pub const ELEMENT_BY_INSTANCE: u8 = 0x52;
    pub const INSTANCE_BY_DEFINITION: u8 = 0x14;
    pub const DEFINITION: u8 = 0x60;
    pub const DEFINITION_XML: u8 = 0x61;
    pub const DEFINITION_BY_PROCESS: u8 = 0x62;
    pub const DEFINITION_ELEMENT_NAMES: u8 = 0x63;
    pub const SUBSCRIPTION: u8 = 0x70;
    pub const SUBSCRIPTION_BY_INSTANCE: u8 = 0x71;
    pub const USER_TASK: u8 = 0xA0;
    pub const USER_TASK_BY_INSTANCE: u8 = 0xA1;
    pub const FORM: u8 = 0xA8;
    pub const RESOURCE: u8 = 0xA9;
    pub const DECISION: u8 = 0x80;
    pub const DECISION_BY_ID: u8 = 0x81;
    pub const DECISION_REQUIREMENTS: u8 = 0x82;
    pub const DECISION_XML: u8 = 0x83;
    pub const DECISION_INSTANCE: u8 = 0x84;
    pub const DECISION_INSTANCE_BY_INSTANCE: u8 = 0x85;
    pub const USER: u8 = 0xB0;
    pub const USER_BY_USERNAME: u8 = 0xB1;

    /// A signed number whose bytes sort in numeric order.
    pub fn int(value: i64) -> [u8; 8] {
        ((value as u64) ^ (1 << 63)).to_be_bytes()
    }

    pub fn read_int(bytes: &[u8]) -> Option<i64> {
        let raw: [u8; 8] = bytes.try_into().ok()?;
        Some((u64::from_be_bytes(raw) ^ (1 << 63)) as i64)
    }

    /// Appends a field value as index keys hold it; `None` for a text too long to index.
    pub fn value(out: &mut Vec<u8>, value: &FieldValue) -> Option<()> {
        match value {
            FieldValue::Int(v) => out.extend_from_slice(&int(*v)),
            FieldValue::Bool(b) => out.push(u8::from(*b)),
            FieldValue::Text(text) => {
                let len = u16::try_from(text.len()).ok()?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(text.as_bytes());
            }
        }
        Some(())
    }

    /// An index's value: the field it carries (see `Table::VALUE_FIELD`), tagged by kind.
    pub fn index_value(value: Option<&FieldValue>) -> Vec<u8> {
        let mut out = Vec::new();
        match value {
            None => out.push(0),
            Some(FieldValue::Bool(b)) => out.extend([1, u8::from(*b)]),
            Some(FieldValue::Int(v)) => {
                out.push(2);
                out.extend_from_slice(&int(*v));
            }
            Some(FieldValue::Text(text)) => {
                out.push(3);
                out.extend_from_slice(text.as_bytes());
            }
        }
        out
    }

    /// The field an index value carries; `Err` for bytes `index_value` did not write.
    pub fn read_index_value(bytes: &[u8]) -> Result<Option<FieldValue>, ()> {
        match bytes.split_first() {
            Some((0, [])) => Ok(None),
            Some((1, [b])) => Ok(Some(FieldValue::Bool(*b != 0))),
            Some((2, rest)) => read_int(rest).map(|v| Some(FieldValue::Int(v))).ok_or(()),
            Some((3, rest)) => std::str::from_utf8(rest)
                .map(|text| Some(FieldValue::Text(text.to_owned())))
                .map_err(|_| ()),
            _ => Err(()),
        }
    }

    pub fn entry(table: u8, key: Key) -> Vec<u8> {
        let mut out = vec![table];
        out.extend_from_slice(&int(key.get()));
        out
    }

    pub fn by_end(end: Timestamp, key: Key) -> Vec<u8> {
        let mut out = vec![BY_END];
        out.extend_from_slice(&int(end.millis()));
        out.extend_from_slice(&int(key.get()));
        out
    }

    /// The prefix of the definitions of one process id in their index; `None` for an id
    /// too long to be indexed.
    pub fn definitions_of(process_id: &str) -> Option<Vec<u8>> {
        let mut out = vec![DEFINITION_BY_PROCESS];
        value(&mut out, &FieldValue::Text(process_id.to_owned()))?;
        Some(out)
    }

    pub fn with_key(mut prefix: Vec<u8>, key: Key) -> Vec<u8> {
        prefix.extend_from_slice(&int(key.get()));
        prefix
    }

    /// The entry key at the end of an index key.
    pub fn trailing_key(index_key: &[u8]) -> Option<Key> {
        let at = index_key.len().checked_sub(8)?;
        read_int(&index_key[at..]).map(Key)
    }
}
