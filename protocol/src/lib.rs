//! The record model everyone in Rill shares: identifiers, records and their values,
//! commands, the command API between gateways and brokers (queries and their views
//! included), and the codec that turns them into bytes.

pub mod codec;
mod command;
mod command_api;
pub mod history;
mod ids;
mod json;
mod query;
mod record;
pub mod tags;
pub mod value;
mod value_types;
pub mod version;

pub use codec::CodecError;
pub use command::{
    ActivateAdHocSubProcessActivities, ActivateInstruction, ActivateJobs, BroadcastSignal, Command,
    CommandResponse, CreateProcessInstance, DecisionSelector, EvaluateDecision, FailJob,
    InterPartitionCommand, MigrateProcessInstance, ModifyProcessInstance, ProcessSelector,
    PublishMessage, Rejection, Resource, SetVariables, ThrowError, UpdateJob, UserCommand,
    UserTaskChanges, UserTaskCommand, VariableInstruction,
};
pub use command_api::{
    ApiAnswer, ApiError, ApiRequest, JOBS_POLL_TIMEOUT, JobsNews, JobsPoll, NodeTopology,
    ReplicaRole, ReplicaView,
};
pub use ids::{
    KEY_LOCAL_BITS, Key, MAX_PARTITION_ID, NodeId, PartitionId, Position, Term, Timestamp,
    civil_from_days,
};
pub use json::{Blob, JsonTextError, JsonValue, MAX_JSON_DEPTH};
pub use query::{IncidentView, ProcessInstanceState, ProcessInstanceView, Query, QueryResult};
pub use record::{
    Intent, NO_OPERATION_REFERENCE, Record, RecordDraft, RecordType, RejectionType, ValueType,
};
pub use value::RecordValue;
pub use value_types::TypedValue;

/// The version string records carry in `brokerVersion`.
pub const BROKER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Zeebe's message partition for a correlation key: a Java `String.hashCode`-style hash
/// over the key's UTF-8 bytes as signed bytes (`31 * h + b`), then `|h % count| + 1`.
pub fn message_partition(correlation_key: &str, partition_count: u16) -> PartitionId {
    let mut hash: i32 = 0;
    for &byte in correlation_key.as_bytes() {
        hash = hash.wrapping_mul(31).wrapping_add(byte as i8 as i32);
    }
    let count = i32::from(partition_count.max(1));
    PartitionId((hash % count).unsigned_abs() as u16 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_partition_is_stable_and_in_range() {
        // "order-1": hash computed by hand with Java's String.hashCode rule on ASCII.
        let mut h: i32 = 0;
        for c in "order-1".chars() {
            h = h.wrapping_mul(31).wrapping_add(c as i32);
        }
        let expected = (h % 3).unsigned_abs() as u16 + 1;
        assert_eq!(message_partition("order-1", 3), PartitionId(expected));
        for key in ["", "a", "ü-non-ascii", "very long key with spaces"] {
            let p = message_partition(key, 5).get();
            assert!((1..=5).contains(&p), "{key} -> {p}");
        }
        assert_eq!(message_partition("anything", 1), PartitionId(1));
    }

    #[test]
    fn non_ascii_bytes_count_as_signed() {
        // 'é' is 0xC3 0xA9 in UTF-8; as signed bytes -61 and -87.
        let h = (-61_i32).wrapping_mul(31).wrapping_add(-87);
        assert_eq!(
            message_partition("é", 7),
            PartitionId((h % 7).unsigned_abs() as u16 + 1)
        );
    }
}
