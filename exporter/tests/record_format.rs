//! The documents are Zeebe's record JSON: envelope and value field names per value type.

mod common;

use std::collections::BTreeSet;

use rill_exporter::record_document;
use rill_protocol::value::{RecordValue, TreePath};
use rill_protocol::{Record, RecordType, ValueType};
use serde_json::{Value, json};

use common::{key, record, value_of};

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// Zeebe's field names of each value type that Rill has (from Zeebe's record value
/// interfaces and its exporter's templates).
fn zeebe_value_fields(value_type: ValueType) -> BTreeSet<String> {
    let job = [
        "type",
        "elementId",
        "elementInstanceKey",
        "bpmnProcessId",
        "processDefinitionVersion",
        "processDefinitionKey",
        "processInstanceKey",
        "worker",
        "retries",
        "retryBackoff",
        "recurringTime",
        "deadline",
        "timeout",
        "errorMessage",
        "errorCode",
        "customHeaders",
        "variables",
        "tenantId",
        "jobKind",
        "jobListenerEventType",
        "result",
        "rootProcessInstanceKey",
        "tags",
    ];
    set(match value_type {
        ValueType::Deployment => &[
            "resources",
            "processesMetadata",
            "decisionsMetadata",
            "decisionRequirementsMetadata",
            "tenantId",
            "formMetadata",
            "resourceMetadata",
        ],
        ValueType::Decision => &[
            "decisionId",
            "decisionName",
            "version",
            "decisionKey",
            "decisionRequirementsId",
            "decisionRequirementsKey",
            "duplicate",
            "tenantId",
            "deploymentKey",
            "versionTag",
        ],
        ValueType::DecisionRequirements => &[
            "decisionRequirementsId",
            "decisionRequirementsName",
            "decisionRequirementsVersion",
            "decisionRequirementsKey",
            "namespace",
            "resourceName",
            "checksum",
            "resource",
            "duplicate",
            "tenantId",
        ],
        ValueType::DecisionEvaluation => &[
            "decisionKey",
            "decisionId",
            "decisionName",
            "decisionVersion",
            "decisionRequirementsId",
            "decisionRequirementsKey",
            "decisionOutput",
            "variables",
            "bpmnProcessId",
            "processDefinitionKey",
            "processInstanceKey",
            "elementId",
            "elementInstanceKey",
            "evaluatedDecisions",
            "evaluationFailureMessage",
            "failedDecisionId",
            "tenantId",
            "rootProcessInstanceKey",
        ],
        ValueType::Process => &[
            "bpmnProcessId",
            "version",
            "processDefinitionKey",
            "resourceName",
            "checksum",
            "resource",
            "duplicate",
            "tenantId",
            "versionTag",
        ],
        ValueType::ProcessInstance => &[
            "bpmnElementType",
            "elementId",
            "bpmnProcessId",
            "version",
            "processDefinitionKey",
            "processInstanceKey",
            "flowScopeKey",
            "bpmnEventType",
            "parentProcessInstanceKey",
            "parentElementInstanceKey",
            "tenantId",
            "rootProcessInstanceKey",
            "tags",
            "elementInstancePath",
            "processDefinitionPath",
            "callingElementPath",
        ],
        ValueType::ProcessInstanceCreation => &[
            "bpmnProcessId",
            "version",
            "processDefinitionKey",
            "processInstanceKey",
            "variables",
            "fetchVariables",
            "tenantId",
            "tags",
        ],
        ValueType::ProcessInstanceModification => &[
            "processInstanceKey",
            "terminateInstructions",
            "activateInstructions",
            "ancestorScopeKeys",
            "tenantId",
        ],
        ValueType::ResourceDeletion => &["resourceKey", "tenantId"],
        ValueType::ProcessEvent => &[
            "scopeKey",
            "targetElementId",
            "variables",
            "processDefinitionKey",
            "processInstanceKey",
            "tenantId",
        ],
        ValueType::ProcessInstanceMigration => &[
            "processInstanceKey",
            "targetProcessDefinitionKey",
            "mappingInstructions",
            "tenantId",
        ],
        ValueType::AdHocSubProcessInstruction => &[
            "adHocSubProcessInstanceKey",
            "activateElements",
            "cancelRemainingInstances",
            "completionConditionFulfilled",
            "tenantId",
        ],
        ValueType::ProcessInstanceResult => &[
            "bpmnProcessId",
            "version",
            "processDefinitionKey",
            "processInstanceKey",
            "variables",
            "tenantId",
        ],
        ValueType::Job => &job,
        ValueType::JobBatch => &[
            "type",
            "worker",
            "timeout",
            "maxJobsToActivate",
            "jobKeys",
            "jobs",
            "truncated",
            "tenantIds",
        ],
        ValueType::Variable => &[
            "name",
            "value",
            "scopeKey",
            "processInstanceKey",
            "processDefinitionKey",
            "bpmnProcessId",
            "tenantId",
            "rootProcessInstanceKey",
        ],
        ValueType::VariableDocument => &["scopeKey", "updateSemantics", "variables", "tenantId"],
        ValueType::Incident => &[
            "errorType",
            "errorMessage",
            "bpmnProcessId",
            "processDefinitionKey",
            "processInstanceKey",
            "elementId",
            "elementInstanceKey",
            "jobKey",
            "variableScopeKey",
            "tenantId",
            "elementInstancePath",
            "processDefinitionPath",
            "callingElementPath",
            "rootProcessInstanceKey",
        ],
        ValueType::Message => &[
            "name",
            "correlationKey",
            "messageId",
            "timeToLive",
            "deadline",
            "variables",
            "tenantId",
        ],
        ValueType::MessageSubscription => &[
            "processInstanceKey",
            "elementInstanceKey",
            "bpmnProcessId",
            "messageName",
            "correlationKey",
            "messageKey",
            "variables",
            "interrupting",
            "tenantId",
        ],
        ValueType::ProcessMessageSubscription => &[
            "subscriptionPartitionId",
            "processInstanceKey",
            "elementInstanceKey",
            "bpmnProcessId",
            "elementId",
            "messageName",
            "correlationKey",
            "messageKey",
            "variables",
            "interrupting",
            "tenantId",
        ],
        ValueType::Timer => &[
            "elementInstanceKey",
            "processInstanceKey",
            "processDefinitionKey",
            "dueDate",
            "targetElementId",
            "repetitions",
            "tenantId",
        ],
        ValueType::Error => &[
            "exceptionMessage",
            "stacktrace",
            "errorEventPosition",
            "processInstanceKey",
        ],
        ValueType::CommandDistribution => &["partitionId", "valueType", "intent"],
        ValueType::Signal => &["signalName", "variables", "tenantId"],
        ValueType::SignalSubscription => &[
            "processDefinitionKey",
            "bpmnProcessId",
            "catchEventId",
            "catchEventInstanceKey",
            "signalName",
            "tenantId",
        ],
        ValueType::CompensationSubscription => &[
            "tenantId",
            "processInstanceKey",
            "processDefinitionKey",
            "compensableActivityId",
            "throwEventId",
            "throwEventInstanceKey",
            "compensationHandlerId",
            "compensationHandlerInstanceKey",
            "compensableActivityScopeKey",
            "compensableActivityInstanceKey",
            "variables",
        ],
        ValueType::Escalation => &[
            "processInstanceKey",
            "escalationCode",
            "throwElementId",
            "catchElementId",
            "tenantId",
        ],
        ValueType::MessageStartEventSubscription => &[
            "processDefinitionKey",
            "bpmnProcessId",
            "messageName",
            "startEventId",
            "processInstanceKey",
            "messageKey",
            "correlationKey",
            "variables",
            "tenantId",
        ],
        ValueType::UserTask => &[
            "userTaskKey",
            "assignee",
            "candidateGroupsList",
            "candidateUsersList",
            "dueDate",
            "followUpDate",
            "formKey",
            "externalFormReference",
            "variables",
            "customHeaders",
            "bpmnProcessId",
            "processDefinitionVersion",
            "processDefinitionKey",
            "processInstanceKey",
            "elementId",
            "elementInstanceKey",
            "tenantId",
            "changedAttributes",
            "action",
            "creationTimestamp",
            "priority",
            "rootProcessInstanceKey",
            "tags",
        ],
        ValueType::Form => &[
            "formId",
            "version",
            "formKey",
            "resourceName",
            "checksum",
            "resource",
            "duplicate",
            "tenantId",
            "deploymentKey",
            "versionTag",
        ],
        ValueType::Resource => &[
            "resourceId",
            "version",
            "versionTag",
            "resourceKey",
            "checksum",
            "resourceName",
            "duplicate",
            "tenantId",
            "deploymentKey",
            "resourceProp",
        ],
        // No `password`: records never carry the hash, and documents leave the field out.
        ValueType::User => &["userKey", "username", "name", "email"],
    })
}

#[test]
fn envelope_has_zeebes_fields_and_values() {
    let rec = record(7, RecordType::Event, value_of(ValueType::ProcessInstance));
    let doc = record_document(&rec);
    assert_eq!(
        keys(&doc),
        set(&[
            "partitionId",
            "value",
            "key",
            "position",
            "timestamp",
            "recordType",
            "intent",
            "valueType",
            "rejectionType",
            "rejectionReason",
            "brokerVersion",
            "sourceRecordPosition",
            "operationReference",
            "recordVersion",
        ])
    );
    assert_eq!(doc["position"], 7);
    assert_eq!(doc["sourceRecordPosition"], 6);
    assert_eq!(doc["partitionId"], 1);
    assert_eq!(doc["key"], rec.key.get());
    assert_eq!(doc["timestamp"], rec.timestamp.millis());
    assert_eq!(doc["recordType"], "EVENT");
    assert_eq!(doc["valueType"], "PROCESS_INSTANCE");
    assert_eq!(doc["intent"], "ELEMENT_ACTIVATED");
    assert_eq!(doc["rejectionType"], "NULL_VAL");
    assert_eq!(doc["rejectionReason"], "");
    assert_eq!(doc["brokerVersion"], rill_protocol::BROKER_VERSION);
    assert_eq!(doc["recordVersion"], 1);
    assert_eq!(doc["value"]["bpmnElementType"], "SERVICE_TASK");
    // No reference given: Zeebe writes -1.
    assert_eq!(doc["operationReference"], -1);
    let referenced = Record {
        operation_reference: 42,
        ..rec.clone()
    };
    assert_eq!(record_document(&referenced)["operationReference"], 42);

    // A client command follows from nothing: Zeebe writes -1.
    let first = record(1, RecordType::Command, value_of(ValueType::Job));
    assert_eq!(record_document(&first)["sourceRecordPosition"], -1);
    let rejection = record(2, RecordType::CommandRejection, value_of(ValueType::Job));
    let doc = record_document(&rejection);
    assert_eq!(doc["recordType"], "COMMAND_REJECTION");
    assert_eq!(doc["rejectionType"], "INVALID_STATE");
    assert_eq!(doc["rejectionReason"], "not allowed");
}

#[test]
fn every_value_type_uses_zeebes_field_names() {
    for value_type in ValueType::ALL {
        let doc = record_document(&record(3, RecordType::Event, value_of(value_type)));
        assert_eq!(
            keys(&doc["value"]),
            zeebe_value_fields(value_type),
            "fields of {value_type:?}"
        );
        assert_eq!(doc["valueType"], value_type.name());
    }
}

#[test]
fn nested_values_keep_zeebes_shape() {
    let deployment = record_document(&record(
        1,
        RecordType::Event,
        value_of(ValueType::Deployment),
    ));
    let process = &deployment["value"]["processesMetadata"][0];
    assert_eq!(
        keys(process),
        set(&[
            "bpmnProcessId",
            "version",
            "processDefinitionKey",
            "resourceName",
            "checksum",
            "duplicate",
            "tenantId",
            "versionTag",
        ])
    );
    assert_eq!(process["duplicate"], false);
    // Binary content is base64, as in Zeebe's JSON.
    assert_eq!(
        deployment["value"]["resources"][0]["resource"],
        "PGRlZmluaXRpb25zLz4="
    );

    let job = record_document(&record(1, RecordType::Event, value_of(ValueType::Job)));
    assert_eq!(job["value"]["customHeaders"]["region"], "eu");
    assert_eq!(job["value"]["variables"]["orderId"], 42);
    assert_eq!(job["value"]["type"], "payment");
    // Zeebe 8.8's job result: the user-task fields, then the ad-hoc subprocess ones.
    assert_eq!(
        keys(&job["value"]["result"]),
        set(&[
            "type",
            "denied",
            "deniedReason",
            "correctedAttributes",
            "corrections",
            "activateElements",
            "completionConditionFulfilled",
            "cancelRemainingInstances",
        ])
    );

    let variable = record_document(&record(1, RecordType::Event, value_of(ValueType::Variable)));
    assert_eq!(
        variable["value"]["value"], "42",
        "variable values are JSON text"
    );

    let incident = record_document(&record(1, RecordType::Event, value_of(ValueType::Incident)));
    assert_eq!(incident["value"]["errorType"], "JOB_NO_RETRIES");
    assert_eq!(
        incident["value"]["elementInstancePath"],
        json!([[key(2), key(5)]])
    );
    assert_eq!(incident["value"]["processDefinitionPath"], json!([key(1)]));
    assert_eq!(incident["value"]["callingElementPath"], json!([]));

    let batch = record_document(&record(1, RecordType::Event, value_of(ValueType::JobBatch)));
    assert_eq!(
        keys(&batch["value"]["jobs"][0]),
        zeebe_value_fields(ValueType::Job)
    );
}

#[test]
fn process_instance_tree_path_is_zeebes_json() {
    // An element two call activities below the root: lists of numbers, as Zeebe 8.8
    // writes them (keys as longs, call activity indexes as ints).
    let mut rec = record(1, RecordType::Event, value_of(ValueType::ProcessInstance));
    let RecordValue::ProcessInstance(value) = &mut rec.value else {
        panic!("not a process instance value");
    };
    value.tree_path = Some(Box::new(TreePath {
        element_instance_path: vec![
            vec![key(2), key(5)],
            vec![key(6), key(7), key(9)],
            vec![key(10), key(11)],
        ],
        process_definition_path: vec![key(1), key(4), key(8)],
        calling_element_path: vec![0, 3],
    }));
    let doc = record_document(&rec);
    assert_eq!(
        doc["value"]["elementInstancePath"],
        json!([
            [key(2), key(5)],
            [key(6), key(7), key(9)],
            [key(10), key(11)]
        ])
    );
    assert_eq!(
        doc["value"]["processDefinitionPath"],
        json!([key(1), key(4), key(8)])
    );
    assert_eq!(doc["value"]["callingElementPath"], json!([0, 3]));

    // Every other intent carries empty lists, which Zeebe writes as `[]`.
    if let RecordValue::ProcessInstance(value) = &mut rec.value {
        value.tree_path = None;
    }
    let doc = record_document(&rec);
    for field in [
        "elementInstancePath",
        "processDefinitionPath",
        "callingElementPath",
    ] {
        assert_eq!(doc["value"][field], json!([]), "{field}");
    }
}
