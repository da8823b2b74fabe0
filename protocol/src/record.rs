//! The record envelope: what every applied command produces, in Zeebe's shape.

use serde::{Deserialize, Serialize};

use crate::ids::{Key, PartitionId, Position, Timestamp};
use crate::value::RecordValue;

/// Command, event, or the rejection of a command (Zeebe's `RecordType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RecordType {
    Command,
    Event,
    CommandRejection,
}

macro_rules! define_value_type {
    ($($(#[$doc:meta])* $variant:ident($record:ident): $zeebe:tt, $kebab:tt, $field:ident;)*) => {
        /// What a record is about (Zeebe's `ValueType` names). Generated from the one
        /// table of value types, [`value_types!`](crate::value_types).
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        pub enum ValueType {
            $($(#[$doc])* #[serde(rename = $zeebe)] $variant,)*
        }

        impl ValueType {
            /// Every value type, in encoding order.
            pub const ALL: [ValueType; [$($zeebe),*].len()] = [$(ValueType::$variant),*];

            /// Zeebe's name, e.g. `PROCESS_INSTANCE`.
            pub fn name(self) -> &'static str {
                match self {
                    $(ValueType::$variant => $zeebe,)*
                }
            }

            /// The name in kebab case, e.g. `process-instance`: the exporters' index and
            /// alias names and their filter settings use it.
            pub fn kebab_name(self) -> &'static str {
                match self {
                    $(ValueType::$variant => $kebab,)*
                }
            }
        }
    };
}

crate::value_types!(define_value_type);

/// What happened (or is asked for). One flat list of Zeebe's intent names; which ones
/// apply to a value type follows Zeebe's per-type intent enums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Intent {
    // Commands
    Create,
    CreateWithAwaitingResult,
    Cancel,
    ActivateElement,
    CompleteElement,
    TerminateElement,
    Activate,
    Complete,
    Fail,
    ThrowError,
    TimeOut,
    UpdateRetries,
    UpdateTimeout,
    RecurAfterBackoff,
    Update,
    Resolve,
    Publish,
    Expire,
    Correlate,
    Reject,
    Delete,
    Trigger,
    Distribute,
    Acknowledge,
    // Events
    Created,
    Creating,
    Canceled,
    SequenceFlowTaken,
    ElementActivating,
    ElementActivated,
    ElementCompleting,
    ElementCompleted,
    ElementTerminating,
    ElementTerminated,
    Activated,
    Completed,
    Failed,
    ErrorThrown,
    TimedOut,
    RetriesUpdated,
    TimeoutUpdated,
    RecurredAfterBackoff,
    Updated,
    Resolved,
    Published,
    Expired,
    Correlating,
    Correlated,
    Rejected,
    Deleting,
    Deleted,
    Triggered,
    Distributing,
    Distributed,
    Acknowledged,
    FullyDistributed,
    // Added later; encoded by variant index, so new ones go at the end.
    Broadcast,
    Broadcasted,
    Escalated,
    NotEscalated,
    // User tasks (encoded by variant index: new intents go at the end).
    Assign,
    Assigning,
    Assigned,
    Claim,
    Completing,
    Canceling,
    Updating,
    // DECISION_EVALUATION
    Evaluate,
    Evaluated,
    // PROCESS_INSTANCE_MODIFICATION
    Modify,
    Modified,
    // USER_TASK with task listeners
    CompleteTaskListener,
    DenyTaskListener,
    CompletionDenied,
    Corrected,
    AssignmentDenied,
    UpdateDenied,
    // PROCESS_EVENT (with `Triggered`)
    Triggering,
    /// USER_TASK: a claim (an assignment without override) begins, as Zeebe 8.8 writes
    /// it instead of `ASSIGNING`.
    Claiming,
    // PROCESS_INSTANCE_MIGRATION, and the MIGRATED events of what a migration moves
    Migrate,
    Migrated,
    ElementMigrated,
    // JOB: an activated job handed back unworked (a job stream that went away)
    Yield,
    Yielded,
}

impl Intent {
    /// Zeebe's name, e.g. `ELEMENT_ACTIVATED`.
    pub fn name(self) -> String {
        // serde_json writes a unit variant as a bare string; strip the quotes.
        let quoted = serde_json::to_string(&self).unwrap_or_default();
        quoted.trim_matches('"').to_owned()
    }
}

/// Why a command was rejected (Zeebe's `RejectionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RejectionType {
    /// Not a rejection; the value Zeebe writes on commands and events.
    NullVal,
    InvalidArgument,
    NotFound,
    AlreadyExists,
    InvalidState,
    ProcessingError,
    ExceededBatchRecordSize,
    Unauthorized,
}

/// What a record's `operation_reference` holds when the client gave none (Zeebe's -1).
pub const NO_OPERATION_REFERENCE: i64 = -1;

/// One record of a partition's stream, as exported and as stored for export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub position: Position,
    /// The position of the command this record follows from; `None` for a command
    /// written by a client.
    pub source_record_position: Option<Position>,
    pub key: Key,
    pub timestamp: Timestamp,
    pub record_type: RecordType,
    pub value_type: ValueType,
    pub intent: Intent,
    pub partition_id: PartitionId,
    pub rejection_type: RejectionType,
    pub rejection_reason: String,
    /// The reference a client gave the command this record belongs to (Zeebe's
    /// `operationReference`); -1 when none was given.
    pub operation_reference: i64,
    pub broker_version: String,
    pub value: RecordValue,
}

/// A record as the engine emits it, before the stream processor gives it a position,
/// timestamp and partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordDraft {
    pub key: Key,
    pub record_type: RecordType,
    pub intent: Intent,
    pub rejection_type: RejectionType,
    pub rejection_reason: String,
    /// See [`Record::operation_reference`]; -1: none.
    pub operation_reference: i64,
    pub value: RecordValue,
}

impl RecordDraft {
    pub fn event(key: Key, intent: Intent, value: impl Into<RecordValue>) -> RecordDraft {
        RecordDraft {
            key,
            record_type: RecordType::Event,
            intent,
            rejection_type: RejectionType::NullVal,
            rejection_reason: String::new(),
            operation_reference: NO_OPERATION_REFERENCE,
            value: value.into(),
        }
    }

    pub fn command(key: Key, intent: Intent, value: impl Into<RecordValue>) -> RecordDraft {
        RecordDraft {
            record_type: RecordType::Command,
            ..RecordDraft::event(key, intent, value)
        }
    }

    pub fn rejection(
        key: Key,
        intent: Intent,
        value: impl Into<RecordValue>,
        rejection_type: RejectionType,
        reason: impl Into<String>,
    ) -> RecordDraft {
        RecordDraft {
            key,
            record_type: RecordType::CommandRejection,
            intent,
            rejection_type,
            rejection_reason: reason.into(),
            operation_reference: NO_OPERATION_REFERENCE,
            value: value.into(),
        }
    }

    pub fn value_type(&self) -> ValueType {
        self.value.value_type()
    }

    /// Completes the draft into a record, without the secrets a draft may carry for
    /// the appliers (a user's password hash): records never hold them.
    pub fn into_record(
        mut self,
        position: Position,
        source_record_position: Option<Position>,
        timestamp: Timestamp,
        partition_id: PartitionId,
        broker_version: &str,
    ) -> Record {
        self.value.strip_secrets();
        Record {
            position,
            source_record_position,
            key: self.key,
            timestamp,
            record_type: self.record_type,
            value_type: self.value.value_type(),
            intent: self.intent,
            partition_id,
            rejection_type: self.rejection_type,
            rejection_reason: self.rejection_reason,
            operation_reference: self.operation_reference,
            broker_version: broker_version.to_owned(),
            value: self.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_its_drafts_operation_reference() {
        let mut draft = RecordDraft::command(
            Key(1),
            Intent::Cancel,
            crate::value::SignalRecord {
                signal_name: "s".into(),
                variables: crate::JsonValue::empty_object(),
                tenant_id: String::new(),
            },
        );
        assert_eq!(draft.operation_reference, NO_OPERATION_REFERENCE);
        draft.operation_reference = 12;
        let record = draft.into_record(Position(3), None, Timestamp(0), PartitionId(1), "x");
        assert_eq!(record.operation_reference, 12);
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["operationReference"], 12);
    }

    #[test]
    fn a_written_record_never_carries_a_password_hash() {
        let hash =
            crate::value::PasswordHash("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into());
        let user = crate::value::UserRecord {
            user_key: 5,
            username: "jane".into(),
            name: "Jane".into(),
            email: String::new(),
            password: hash.clone(),
        };
        let draft = RecordDraft::event(Key(5), Intent::Created, user);
        assert!(!format!("{draft:?}").contains("argon2"), "Debug hides it");
        let record = draft.into_record(Position(1), None, Timestamp(0), PartitionId(1), "x");
        let RecordValue::User(written) = &record.value else {
            panic!("{record:?}");
        };
        assert!(written.password.is_empty());
        assert_eq!(written.username, "jane");
        assert!(!serde_json::to_string(&record).unwrap().contains("argon2"));
        let bytes = crate::codec::encode(&record).unwrap();
        assert!(!bytes.windows(6).any(|w| w == b"argon2"));
    }

    #[test]
    fn names_match_zeebe() {
        assert_eq!(Intent::ElementActivated.name(), "ELEMENT_ACTIVATED");
        assert_eq!(
            Intent::CreateWithAwaitingResult.name(),
            "CREATE_WITH_AWAITING_RESULT"
        );
        assert_eq!(ValueType::ProcessInstance.name(), "PROCESS_INSTANCE");
        for vt in ValueType::ALL {
            assert_eq!(
                serde_json::to_string(&vt).unwrap(),
                format!("\"{}\"", vt.name())
            );
        }
        assert_eq!(
            serde_json::to_string(&RejectionType::NullVal).unwrap(),
            "\"NULL_VAL\""
        );
    }
}
