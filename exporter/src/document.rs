//! A record as the JSON document Zeebe's exporters write: the envelope fields at the top,
//! the value object under `value`. The Elasticsearch exporter indexes it as `_source`, the
//! JSON-lines exporter writes it as one line.

use rill_protocol::value::{ProcessInstanceCreationRecord, RecordValue};
use rill_protocol::{Intent, JsonValue, Record, RecordType, RejectionType, ValueType};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Version of the record layout, Zeebe's `recordVersion` (1 for every value type so far).
const RECORD_VERSION: u16 = 1;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordDocument<'a> {
    partition_id: u16,
    value: ValueDocument<'a>,
    key: i64,
    position: u64,
    timestamp: i64,
    record_type: RecordType,
    intent: Intent,
    value_type: ValueType,
    rejection_type: RejectionType,
    rejection_reason: &'a str,
    broker_version: &'a str,
    source_record_position: i64,
    /// The client's reference for the command the record belongs to; -1 for none.
    operation_reference: i64,
    record_version: u16,
}

fn document(record: &Record) -> RecordDocument<'_> {
    RecordDocument {
        partition_id: record.partition_id.get(),
        value: ValueDocument(record),
        key: record.key.get(),
        position: record.position.get(),
        timestamp: record.timestamp.millis(),
        record_type: record.record_type,
        intent: record.intent,
        value_type: record.value_type,
        rejection_type: record.rejection_type,
        rejection_reason: &record.rejection_reason,
        broker_version: &record.broker_version,
        // Zeebe writes -1 when a record does not follow from a command.
        source_record_position: record
            .source_record_position
            .map_or(-1, |p| i64::try_from(p.get()).unwrap_or(i64::MAX)),
        operation_reference: record.operation_reference,
        record_version: RECORD_VERSION,
    }
}

/// The record as Zeebe's JSON document.
pub fn record_document(record: &Record) -> Value {
    // Serializing a struct of numbers, strings and a Value into a Value cannot fail.
    serde_json::to_value(document(record)).unwrap_or(Value::Null)
}

/// Appends the record's JSON document (one line, no newline) to `out`.
pub fn write_record_document(record: &Record, out: &mut Vec<u8>) {
    // Writing into a Vec cannot fail, and the document has no non-string map keys.
    let _ = serde_json::to_writer(out, &document(record));
}

/// The record's value as Zeebe writes it. Most values serialize straight from Rill's
/// structs; the few with fields to rename or drop go through a `Value` first.
struct ValueDocument<'a>(&'a Record);

impl Serialize for ValueDocument<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0.value {
            RecordValue::ProcessInstanceCreation(v) => {
                CreationDocument::from(v).serialize(serializer)
            }
            RecordValue::User(v) => UserDocument {
                user_key: v.user_key,
                username: &v.username,
                name: &v.name,
                email: &v.email,
            }
            .serialize(serializer),
            RecordValue::Form(_)
            | RecordValue::Resource(_)
            | RecordValue::Deployment(_)
            | RecordValue::Decision(_)
            | RecordValue::DecisionRequirements(_)
            | RecordValue::Process(_)
            | RecordValue::MessageSubscription(_)
            | RecordValue::ProcessMessageSubscription(_) => {
                zeebe_value(self.0).serialize(serializer)
            }
            value => value.serialize_untagged(serializer),
        }
    }
}

/// A user without its `password`: records never carry the hash (the field is always
/// empty), and the document leaves the field out altogether.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UserDocument<'a> {
    user_key: i64,
    username: &'a str,
    name: &'a str,
    email: &'a str,
}

/// A creation record without Rill's `awaitRequestId`, borrowed: its variables are the
/// largest part of many records and are written as they are.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreationDocument<'a> {
    bpmn_process_id: &'a str,
    version: i32,
    process_definition_key: i64,
    process_instance_key: i64,
    variables: &'a JsonValue,
    fetch_variables: &'a [String],
    tenant_id: &'a str,
    tags: &'a [String],
}

impl<'a> From<&'a ProcessInstanceCreationRecord> for CreationDocument<'a> {
    fn from(r: &'a ProcessInstanceCreationRecord) -> Self {
        CreationDocument {
            bpmn_process_id: &r.bpmn_process_id,
            version: r.version,
            process_definition_key: r.process_definition_key,
            process_instance_key: r.process_instance_key,
            variables: &r.variables,
            fetch_variables: &r.fetch_variables,
            tenant_id: &r.tenant_id,
            tags: &r.tags,
        }
    }
}

/// The value object with Zeebe's field names. Rill's value structs already use them,
/// except where Zeebe's JSON drops the `is` of a boolean getter; fields only Rill has for
/// its own bookkeeping are left out (the strict mappings would refuse them).
fn zeebe_value(record: &Record) -> Value {
    let mut value = record.value.to_json();
    match record.value_type {
        ValueType::Process
        | ValueType::Form
        | ValueType::Resource
        | ValueType::Decision
        | ValueType::DecisionRequirements => rename(&mut value, "isDuplicate", "duplicate"),
        ValueType::Deployment => {
            for list in [
                "processesMetadata",
                "formMetadata",
                "decisionsMetadata",
                "decisionRequirementsMetadata",
                "resourceMetadata",
            ] {
                if let Some(Value::Array(entries)) = value.get_mut(list) {
                    for entry in entries {
                        rename(entry, "isDuplicate", "duplicate");
                    }
                }
            }
        }
        ValueType::MessageSubscription | ValueType::ProcessMessageSubscription => {
            rename(&mut value, "isInterrupting", "interrupting")
        }
        _ => {}
    }
    value
}

fn rename(object: &mut Value, from: &str, to: &str) {
    if let Value::Object(map) = object
        && let Some(field) = map.shift_remove(from)
    {
        map.insert(to.to_owned(), field);
    }
}
