//! Table prefixes and big-endian key encodings, so that scans come out in order.
//!
//! Prefix `0x00` belongs to the partition core. Numbers are written big-endian with the
//! sign bit flipped (so negative timestamps would still sort first); strings carry a
//! length prefix so that one string is never a prefix of another's encoding.

use rill_protocol::Key;

/// One byte per table. Never reuse a retired value.
pub(crate) mod table {
    pub const PROCESS: u8 = 0x10;
    pub const PROCESS_VERSION: u8 = 0x11;
    pub const PROCESS_LATEST: u8 = 0x12;
    pub const DEPLOYMENT: u8 = 0x13;
    /// Process definition key -> the key of the deployment that created it.
    pub const PROCESS_DEPLOYMENT: u8 = 0x14;
    /// (deployment key, process id) -> the definition key that deployment deployed
    /// (a new version, or the existing one for a duplicate).
    pub const DEPLOYMENT_PROCESS: u8 = 0x15;
    /// Decision key -> DECISION record.
    pub const DECISION: u8 = 0x16;
    /// (decision id, version) -> decision key.
    pub const DECISION_VERSION: u8 = 0x17;
    /// Decision id -> (latest version, its key).
    pub const DECISION_LATEST: u8 = 0x18;
    /// Decision requirements key -> DECISION_REQUIREMENTS record (with the resource).
    pub const DECISION_REQUIREMENTS: u8 = 0x19;
    /// Decision requirements id -> (latest version, its key).
    pub const DECISION_REQUIREMENTS_LATEST: u8 = 0x1A;
    /// (deployment key, decision id) -> the decision key that deployment deployed.
    pub const DEPLOYMENT_DECISION: u8 = 0x1B;
    /// (decision requirements id, version) -> decision requirements key.
    pub const DECISION_REQUIREMENTS_VERSION: u8 = 0x1C;
    /// Decision requirements id -> the highest version ever deployed (deleted or not).
    pub const DECISION_REQUIREMENTS_HIGHEST: u8 = 0x1D;
    /// Decision id -> the highest version ever deployed (deleted or not).
    pub const DECISION_HIGHEST: u8 = 0x1E;
    /// (decision requirements key, decision key) -> marker: the decisions of a DRG.
    pub const DECISION_BY_REQUIREMENTS: u8 = 0x1F;
    pub const ELEMENT_INSTANCE: u8 = 0x20;
    pub const ELEMENT_CHILD: u8 = 0x21;
    pub const JOIN_TOKEN: u8 = 0x22;
    /// Multi-instance bodies: how many inner instances were created and completed.
    pub const MULTI_INSTANCE_BODY: u8 = 0x23;
    /// Multi-instance inner instances: their loop counter.
    pub const LOOP_COUNTER: u8 = 0x24;
    /// Multi-instance bodies: the output element of each completed inner instance, by
    /// loop counter.
    pub const MULTI_INSTANCE_OUTPUT: u8 = 0x25;
    pub const VARIABLE: u8 = 0x30;
    pub const JOB: u8 = 0x40;
    pub const JOB_ACTIVATABLE: u8 = 0x41;
    pub const JOB_DEADLINE: u8 = 0x42;
    pub const JOB_BACKOFF: u8 = 0x43;
    pub const TIMER: u8 = 0x50;
    pub const TIMER_DUE: u8 = 0x51;
    pub const TIMER_BY_ELEMENT: u8 = 0x52;
    pub const MESSAGE: u8 = 0x60;
    pub const MESSAGE_BY_NAME: u8 = 0x61;
    pub const MESSAGE_DEADLINE: u8 = 0x62;
    pub const MESSAGE_ID: u8 = 0x63;
    pub const MESSAGE_CORRELATED: u8 = 0x64;
    /// (message name, process id) -> the message start event of the process's latest
    /// version that this message name starts.
    pub const MESSAGE_START: u8 = 0x65;
    /// (process id, message name) -> marker: the message start events of a process.
    pub const MESSAGE_START_BY_PROCESS: u8 = 0x66;
    /// (process id, correlation key) -> the active instance a message started.
    pub const MESSAGE_START_LOCK: u8 = 0x67;
    pub const MESSAGE_SUBSCRIPTION: u8 = 0x70;
    pub const PROCESS_MESSAGE_SUBSCRIPTION: u8 = 0x71;
    /// (signal name, subscription key) -> a signal subscription.
    pub const SIGNAL_SUBSCRIPTION: u8 = 0x74;
    /// (holder key, subscription key) -> its signal name. The holder is the element
    /// instance that holds the catch event, or the definition key of a signal start
    /// event.
    pub const SIGNAL_SUBSCRIPTION_BY_HOLDER: u8 = 0x75;
    /// The signal broadcast last on this partition, with its key: what a distribution
    /// of it to another partition carries.
    pub const SIGNAL_LAST_BROADCAST: u8 = 0x76;
    /// (process instance key, subscription key) -> a compensation subscription: a
    /// completed activity that can be compensated.
    pub const COMPENSATION_SUBSCRIPTION: u8 = 0x77;
    pub const INCIDENT: u8 = 0x80;
    pub const INCIDENT_BY_INSTANCE: u8 = 0x81;
    pub const INCIDENT_BY_ELEMENT: u8 = 0x82;
    pub const INCIDENT_BY_JOB: u8 = 0x83;
    // 0x90 and 0x91 held finished instances' summaries for readers and their end dates;
    // the history store answers reads now. Not to be reused: a state written by an
    // earlier build may still have entries there.
    pub const AWAIT_RESULT: u8 = 0x92;
    pub const OUTBOX: u8 = 0xA0;
    pub const OUTBOX_SEQUENCE: u8 = 0xA1;
    pub const INBOX: u8 = 0xA2;
    /// Camunda user tasks by key.
    pub const USER_TASK: u8 = 0xC0;
    /// Deployed forms by key.
    pub const FORM: u8 = 0xC1;
    /// (form id, version) -> form key.
    pub const FORM_VERSION: u8 = 0xC2;
    /// Form id -> (latest version, its key).
    pub const FORM_LATEST: u8 = 0xC3;
    /// (deployment key, form id) -> the form key that deployment deployed.
    pub const DEPLOYMENT_FORM: u8 = 0xC4;
    /// Form id -> the highest version ever deployed (deleted or not).
    pub const FORM_HIGHEST: u8 = 0xC5;
    /// Resource deletion key -> its RESOURCE_DELETION record (what its distribution
    /// carries).
    pub const RESOURCE_DELETION: u8 = 0xC6;
    /// Process id -> the highest version ever deployed (deleted or not).
    pub const PROCESS_HIGHEST: u8 = 0xC7;
    /// Process definition key -> how many of its instances are active on this partition.
    pub const PROCESS_RUNNING: u8 = 0xC8;
    /// Process definition key -> marker: deleted, kept until its last instance ends.
    pub const PROCESS_DELETING: u8 = 0xC9;
    /// (holder key, process event key) -> an interrupting event trigger waiting for a
    /// termination that canceling task listeners hold up (PROCESS_EVENT TRIGGERING
    /// until TRIGGERED, or until the holder is terminated).
    pub const PENDING_TRIGGER: u8 = 0xCA;
    /// Deployed resources (RPA scripts) by key: RESOURCE records.
    pub const RESOURCE: u8 = 0xCB;
    /// (resource id, version) -> resource key.
    pub const RESOURCE_VERSION: u8 = 0xCC;
    /// Resource id -> (latest version, its key).
    pub const RESOURCE_LATEST: u8 = 0xCD;
    /// (deployment key, resource id) -> the resource key that deployment deployed (a new
    /// version, or the existing one for a duplicate).
    pub const DEPLOYMENT_RESOURCE: u8 = 0xCE;
    /// Username -> USER record with its password hash (the one place it is kept).
    pub const USER: u8 = 0xD0;
    /// User key -> username.
    pub const USER_BY_KEY: u8 = 0xD1;
}

/// A key argument of a state accessor: the engine's [`Key`], or a key field of a record
/// value (records carry keys as raw `i64`s, as Zeebe's do).
pub trait AsKey: Copy {
    fn as_key(self) -> Key;
}

impl AsKey for Key {
    fn as_key(self) -> Key {
        self
    }
}

impl AsKey for i64 {
    fn as_key(self) -> Key {
        Key(self)
    }
}

/// Builds a state key.
#[derive(Clone, Debug)]
pub(crate) struct KeyBuf(Vec<u8>);

impl KeyBuf {
    pub fn new(table: u8) -> KeyBuf {
        let mut bytes = Vec::with_capacity(32);
        bytes.push(table);
        KeyBuf(bytes)
    }

    pub fn i64(mut self, value: i64) -> KeyBuf {
        self.0.extend_from_slice(&encode_i64(value));
        self
    }

    /// An entity key (encoded as its `i64`).
    pub fn key(self, key: impl AsKey) -> KeyBuf {
        self.i64(key.as_key().get())
    }

    pub fn i32(mut self, value: i32) -> KeyBuf {
        self.0
            .extend_from_slice(&((value as u32) ^ (1 << 31)).to_be_bytes());
        self
    }

    pub fn str(mut self, value: &str) -> KeyBuf {
        self.0
            .extend_from_slice(&(value.len() as u32).to_be_bytes());
        self.0.extend_from_slice(value.as_bytes());
        self
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    #[cfg(test)]
    pub fn into_vec(self) -> Vec<u8> {
        self.0
    }
}

impl AsRef<[u8]> for KeyBuf {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

pub(crate) fn encode_i64(value: i64) -> [u8; 8] {
    ((value as u64) ^ (1 << 63)).to_be_bytes()
}

/// Reads an [`encode_i64`] value at `offset`, or `None` if the key is too short.
pub(crate) fn decode_i64(bytes: &[u8], offset: usize) -> Option<i64> {
    let raw: [u8; 8] = bytes.get(offset..offset + 8)?.try_into().ok()?;
    Some((u64::from_be_bytes(raw) ^ (1 << 63)) as i64)
}

/// The last 8 bytes of a key as an [`encode_i64`] value (most indexes end in a key).
pub(crate) fn trailing_i64(bytes: &[u8]) -> Option<i64> {
    bytes
        .len()
        .checked_sub(8)
        .and_then(|at| decode_i64(bytes, at))
}

/// Reads a length-prefixed string at `offset`; returns it and the offset after it.
pub(crate) fn decode_str(bytes: &[u8], offset: usize) -> Option<(&str, usize)> {
    let len: [u8; 4] = bytes.get(offset..offset + 4)?.try_into().ok()?;
    let len = u32::from_be_bytes(len) as usize;
    let start = offset + 4;
    let text = std::str::from_utf8(bytes.get(start..start + len)?).ok()?;
    Some((text, start + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sort_in_numeric_order() {
        let values = [i64::MIN, -5, -1, 0, 1, 7, 1 << 40, i64::MAX];
        let encoded: Vec<_> = values.iter().map(|v| encode_i64(*v)).collect();
        let mut sorted = encoded.clone();
        sorted.sort();
        assert_eq!(encoded, sorted);
        for v in values {
            assert_eq!(decode_i64(&encode_i64(v), 0), Some(v));
        }
    }

    #[test]
    fn strings_round_trip_and_do_not_prefix_each_other() {
        let a = KeyBuf::new(1).str("ab").i64(3).into_vec();
        let b = KeyBuf::new(1).str("abc").i64(3).into_vec();
        assert!(!b.starts_with(&a[..a.len() - 8]));
        assert_eq!(decode_str(&a, 1), Some(("ab", 7)));
        assert_eq!(trailing_i64(&a), Some(3));
    }
}
