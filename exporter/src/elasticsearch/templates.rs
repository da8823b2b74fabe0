//! The component template (the record envelope) and one index template per value type
//! (the value object), all with strict mappings: a field the mapping does not know is
//! refused rather than guessed. Field types follow Zeebe's templates (keys are `long`,
//! names `keyword`, messages `text`, variables and payloads not indexed).

use rill_config::ElasticsearchExporterConfig;
use rill_protocol::ValueType;
use serde_json::{Map, Value, json};

use super::index::IndexRouter;

/// Bumped whenever a mapping changes, so an operator can see which one is installed.
const TEMPLATE_VERSION: u32 = 1;
/// Above Elasticsearch's built-in templates, as Zeebe's.
const INDEX_TEMPLATE_PRIORITY: u32 = 20;

/// The component template named `<prefix>`: settings and the envelope's mapping.
pub fn component_template(config: &ElasticsearchExporterConfig) -> Value {
    let mut settings = Map::new();
    settings.insert("index.queries.cache.enabled".into(), json!(false));
    if config.retention.is_some() {
        settings.insert(
            "index.lifecycle.name".into(),
            json!(config.retention_policy_name),
        );
    }
    json!({
        "version": TEMPLATE_VERSION,
        "template": {
            "settings": settings,
            "mappings": {
                "dynamic": "strict",
                "properties": {
                    "partitionId": {"type": "integer"},
                    "key": {"type": "long"},
                    "position": {"type": "long"},
                    "timestamp": {"type": "date"},
                    "recordType": {"type": "keyword"},
                    "intent": {"type": "keyword"},
                    "valueType": {"type": "keyword"},
                    "rejectionType": {"type": "keyword"},
                    "rejectionReason": {"type": "text"},
                    "brokerVersion": {"type": "keyword"},
                    "sourceRecordPosition": {"type": "long"},
                    "operationReference": {"type": "long"},
                    "recordVersion": {"type": "integer"}
                }
            }
        }
    })
}

/// The index template `<prefix>_<value-type>_<version>` for one value type.
pub fn index_template(router: &IndexRouter, value_type: ValueType, version: &str) -> Value {
    json!({
        "index_patterns": [router.index_pattern_for(value_type, version)],
        "composed_of": [router.prefix()],
        "priority": INDEX_TEMPLATE_PRIORITY,
        "version": TEMPLATE_VERSION,
        "template": {
            "aliases": { router.alias_for(value_type): {} },
            "mappings": {
                "properties": {
                    "value": {"dynamic": "strict", "properties": value_properties(value_type)}
                }
            }
        }
    })
}

/// The ILM policy that deletes an index once it is `retention` old.
pub fn retention_policy(retention: std::time::Duration) -> Value {
    json!({
        "policy": {
            "phases": {
                "delete": {
                    "min_age": format!("{}s", retention.as_secs().max(1)),
                    "actions": {"delete": {}}
                }
            }
        }
    })
}

fn keyword() -> Value {
    json!({"type": "keyword"})
}
fn text() -> Value {
    json!({"type": "text"})
}
fn long() -> Value {
    json!({"type": "long"})
}
fn integer() -> Value {
    json!({"type": "integer"})
}
fn boolean() -> Value {
    json!({"type": "boolean"})
}
/// Kept in `_source`, not indexed: variables, payloads, checksums.
fn not_indexed() -> Value {
    json!({"enabled": false})
}

fn object(fields: &[(&str, Value)]) -> Value {
    let properties: Map<String, Value> = fields
        .iter()
        .map(|(name, mapping)| ((*name).to_owned(), mapping.clone()))
        .collect();
    Value::Object(properties)
}

fn job_properties() -> Value {
    object(&[
        ("type", keyword()),
        ("elementId", text()),
        ("elementInstanceKey", long()),
        ("bpmnProcessId", keyword()),
        ("processDefinitionVersion", integer()),
        ("processDefinitionKey", long()),
        ("processInstanceKey", long()),
        ("worker", keyword()),
        ("retries", long()),
        ("retryBackoff", long()),
        ("recurringTime", long()),
        ("deadline", long()),
        ("timeout", long()),
        ("errorMessage", text()),
        ("errorCode", text()),
        ("customHeaders", not_indexed()),
        ("variables", not_indexed()),
        ("tenantId", keyword()),
        ("jobKind", keyword()),
        ("jobListenerEventType", keyword()),
        ("rootProcessInstanceKey", long()),
        (
            "result",
            json!({"properties": object(&[
                ("type", keyword()),
                ("denied", boolean()),
                ("deniedReason", text()),
                ("correctedAttributes", keyword()),
                (
                    "corrections",
                    json!({"properties": object(&[
                        ("assignee", keyword()),
                        ("dueDate", keyword()),
                        ("followUpDate", keyword()),
                        ("candidateUsersList", keyword()),
                        ("candidateGroupsList", keyword()),
                        ("priority", integer()),
                    ])}),
                ),
                (
                    "activateElements",
                    json!({"properties": object(&[
                        ("elementId", keyword()),
                        ("variables", not_indexed()),
                    ])}),
                ),
                ("completionConditionFulfilled", boolean()),
                ("cancelRemainingInstances", boolean()),
            ])}),
        ),
        ("tags", keyword()),
    ])
}

fn decision_properties() -> Value {
    object(&[
        ("decisionId", keyword()),
        ("decisionName", text()),
        ("version", long()),
        ("decisionKey", long()),
        ("decisionRequirementsId", keyword()),
        ("decisionRequirementsKey", long()),
        ("duplicate", boolean()),
        ("tenantId", keyword()),
        ("deploymentKey", long()),
        ("versionTag", keyword()),
    ])
}

/// A DECISION_REQUIREMENTS value; a deployment's metadata entries have no resource.
fn decision_requirements_properties(with_resource: bool) -> Value {
    let mut fields = vec![
        ("decisionRequirementsId", keyword()),
        ("decisionRequirementsName", text()),
        ("decisionRequirementsVersion", long()),
        ("decisionRequirementsKey", long()),
        ("namespace", keyword()),
        ("resourceName", text()),
        ("checksum", not_indexed()),
        ("duplicate", boolean()),
        ("tenantId", keyword()),
    ];
    if with_resource {
        fields.push(("resource", not_indexed()));
    }
    object(&fields)
}

/// The mapping of each value type's fields (the `value` object).
fn value_properties(value_type: ValueType) -> Value {
    match value_type {
        ValueType::Deployment => object(&[
            (
                "resources",
                json!({"properties": object(&[
                    ("resourceName", text()),
                    ("resource", not_indexed()),
                ])}),
            ),
            (
                "processesMetadata",
                json!({"properties": object(&[
                    ("bpmnProcessId", keyword()),
                    ("version", long()),
                    ("processDefinitionKey", long()),
                    ("resourceName", text()),
                    ("checksum", not_indexed()),
                    ("duplicate", boolean()),
                    ("tenantId", keyword()),
                    ("versionTag", keyword()),
                ])}),
            ),
            (
                "decisionsMetadata",
                json!({"properties": decision_properties()}),
            ),
            (
                "decisionRequirementsMetadata",
                json!({"properties": decision_requirements_properties(false)}),
            ),
            (
                "formMetadata",
                json!({"properties": object(&[
                    ("formId", keyword()),
                    ("version", long()),
                    ("formKey", long()),
                    ("resourceName", text()),
                    ("checksum", not_indexed()),
                    ("duplicate", boolean()),
                    ("tenantId", keyword()),
                    ("deploymentKey", long()),
                    ("versionTag", keyword()),
                ])}),
            ),
            (
                "resourceMetadata",
                json!({"properties": resource_properties(false)}),
            ),
            ("tenantId", keyword()),
        ]),
        ValueType::Decision => decision_properties(),
        ValueType::DecisionRequirements => decision_requirements_properties(true),
        ValueType::DecisionEvaluation => object(&[
            ("decisionKey", long()),
            ("decisionId", keyword()),
            ("decisionName", text()),
            ("decisionVersion", integer()),
            ("decisionRequirementsId", keyword()),
            ("decisionRequirementsKey", long()),
            ("decisionOutput", not_indexed()),
            ("variables", not_indexed()),
            ("bpmnProcessId", keyword()),
            ("processDefinitionKey", long()),
            ("processInstanceKey", long()),
            ("elementId", keyword()),
            ("elementInstanceKey", long()),
            (
                "evaluatedDecisions",
                json!({"properties": object(&[
                    ("decisionId", keyword()),
                    ("decisionEvaluationInstanceKey", keyword()),
                    ("decisionName", text()),
                    ("decisionKey", long()),
                    ("decisionVersion", integer()),
                    ("decisionType", keyword()),
                    ("decisionOutput", not_indexed()),
                    (
                        "evaluatedInputs",
                        json!({"properties": object(&[
                            ("inputId", keyword()),
                            ("inputName", text()),
                            ("inputValue", not_indexed()),
                        ])}),
                    ),
                    (
                        "matchedRules",
                        json!({"properties": object(&[
                            ("ruleId", keyword()),
                            ("ruleIndex", integer()),
                            (
                                "evaluatedOutputs",
                                json!({"properties": object(&[
                                    ("outputId", keyword()),
                                    ("outputName", text()),
                                    ("outputValue", not_indexed()),
                                ])}),
                            ),
                        ])}),
                    ),
                    ("tenantId", keyword()),
                ])}),
            ),
            ("evaluationFailureMessage", text()),
            ("failedDecisionId", keyword()),
            ("tenantId", keyword()),
            ("rootProcessInstanceKey", long()),
        ]),
        ValueType::Process => object(&[
            ("bpmnProcessId", keyword()),
            ("version", long()),
            ("processDefinitionKey", long()),
            ("resourceName", text()),
            ("checksum", not_indexed()),
            ("resource", not_indexed()),
            ("duplicate", boolean()),
            ("tenantId", keyword()),
            ("versionTag", keyword()),
        ]),
        ValueType::ProcessInstance => object(&[
            ("bpmnElementType", keyword()),
            ("elementId", keyword()),
            ("bpmnProcessId", keyword()),
            ("version", integer()),
            ("processDefinitionKey", long()),
            ("processInstanceKey", long()),
            ("flowScopeKey", long()),
            ("bpmnEventType", keyword()),
            ("parentProcessInstanceKey", long()),
            ("parentElementInstanceKey", long()),
            ("tenantId", keyword()),
            ("rootProcessInstanceKey", long()),
            ("tags", keyword()),
            // Kept in the source but not indexed, as in Zeebe 8.8's template.
            ("elementInstancePath", not_indexed()),
            ("processDefinitionPath", not_indexed()),
            ("callingElementPath", not_indexed()),
        ]),
        ValueType::ProcessInstanceCreation => object(&[
            ("bpmnProcessId", keyword()),
            ("version", integer()),
            ("processDefinitionKey", long()),
            ("processInstanceKey", long()),
            ("variables", not_indexed()),
            ("fetchVariables", keyword()),
            ("tenantId", keyword()),
            ("tags", keyword()),
        ]),
        ValueType::ProcessInstanceModification => object(&[
            ("processInstanceKey", long()),
            (
                "terminateInstructions",
                json!({"properties": object(&[("elementInstanceKey", long())])}),
            ),
            (
                "activateInstructions",
                json!({"properties": object(&[
                    ("elementId", keyword()),
                    ("ancestorScopeKey", long()),
                    (
                        "variableInstructions",
                        json!({"properties": object(&[
                            ("variables", not_indexed()),
                            ("elementId", keyword()),
                        ])}),
                    ),
                    ("ancestorScopeKeys", long()),
                ])}),
            ),
            ("ancestorScopeKeys", long()),
            ("tenantId", keyword()),
        ]),
        ValueType::ResourceDeletion => object(&[("resourceKey", long()), ("tenantId", keyword())]),
        ValueType::ProcessEvent => object(&[
            ("scopeKey", long()),
            ("targetElementId", keyword()),
            ("variables", not_indexed()),
            ("processDefinitionKey", long()),
            ("processInstanceKey", long()),
            ("tenantId", keyword()),
        ]),
        ValueType::ProcessInstanceMigration => object(&[
            ("processInstanceKey", long()),
            ("targetProcessDefinitionKey", long()),
            (
                "mappingInstructions",
                json!({"properties": object(&[
                    ("sourceElementId", keyword()),
                    ("targetElementId", keyword()),
                ])}),
            ),
            ("tenantId", keyword()),
        ]),
        ValueType::AdHocSubProcessInstruction => object(&[
            ("adHocSubProcessInstanceKey", long()),
            (
                "activateElements",
                json!({"properties": object(&[
                    ("elementId", keyword()),
                    ("variables", not_indexed()),
                ])}),
            ),
            ("cancelRemainingInstances", boolean()),
            ("completionConditionFulfilled", boolean()),
            ("tenantId", keyword()),
        ]),
        ValueType::ProcessInstanceResult => object(&[
            ("bpmnProcessId", keyword()),
            ("version", integer()),
            ("processDefinitionKey", long()),
            ("processInstanceKey", long()),
            ("variables", not_indexed()),
            ("tenantId", keyword()),
        ]),
        ValueType::Job => job_properties(),
        ValueType::JobBatch => object(&[
            ("type", keyword()),
            ("worker", keyword()),
            ("timeout", long()),
            ("maxJobsToActivate", integer()),
            ("jobKeys", long()),
            (
                "jobs",
                json!({"type": "nested", "dynamic": "strict", "properties": job_properties()}),
            ),
            ("truncated", boolean()),
            ("tenantIds", keyword()),
        ]),
        ValueType::Variable => object(&[
            ("name", keyword()),
            ("value", json!({"type": "keyword", "ignore_above": 8191})),
            ("scopeKey", long()),
            ("processInstanceKey", long()),
            ("processDefinitionKey", long()),
            ("bpmnProcessId", keyword()),
            ("tenantId", keyword()),
            ("rootProcessInstanceKey", long()),
        ]),
        ValueType::VariableDocument => object(&[
            ("scopeKey", long()),
            ("updateSemantics", keyword()),
            ("variables", not_indexed()),
            ("tenantId", keyword()),
        ]),
        ValueType::Incident => object(&[
            ("errorType", keyword()),
            ("errorMessage", text()),
            ("bpmnProcessId", keyword()),
            ("processDefinitionKey", long()),
            ("processInstanceKey", long()),
            ("elementId", keyword()),
            ("elementInstanceKey", long()),
            ("jobKey", long()),
            ("variableScopeKey", long()),
            ("tenantId", keyword()),
            // Kept in the source but not indexed, as in Zeebe 8.8's template.
            ("elementInstancePath", not_indexed()),
            ("processDefinitionPath", not_indexed()),
            ("callingElementPath", not_indexed()),
            ("rootProcessInstanceKey", long()),
        ]),
        ValueType::Message => object(&[
            ("name", keyword()),
            ("correlationKey", keyword()),
            ("messageId", keyword()),
            ("timeToLive", long()),
            ("deadline", long()),
            ("variables", not_indexed()),
            ("tenantId", keyword()),
        ]),
        ValueType::MessageSubscription => object(&[
            ("processInstanceKey", long()),
            ("elementInstanceKey", long()),
            ("bpmnProcessId", keyword()),
            ("messageName", keyword()),
            ("correlationKey", text()),
            ("messageKey", long()),
            ("variables", not_indexed()),
            ("interrupting", boolean()),
            ("tenantId", keyword()),
        ]),
        ValueType::ProcessMessageSubscription => object(&[
            ("subscriptionPartitionId", integer()),
            ("processInstanceKey", long()),
            ("elementInstanceKey", long()),
            ("bpmnProcessId", keyword()),
            ("elementId", text()),
            ("messageName", keyword()),
            ("correlationKey", keyword()),
            ("messageKey", long()),
            ("variables", not_indexed()),
            ("interrupting", boolean()),
            ("tenantId", keyword()),
        ]),
        ValueType::Timer => object(&[
            ("elementInstanceKey", long()),
            ("processInstanceKey", long()),
            ("processDefinitionKey", long()),
            ("dueDate", long()),
            ("targetElementId", keyword()),
            ("repetitions", integer()),
            ("tenantId", keyword()),
        ]),
        ValueType::Error => object(&[
            ("exceptionMessage", text()),
            ("stacktrace", text()),
            ("errorEventPosition", long()),
            ("processInstanceKey", long()),
        ]),
        ValueType::CommandDistribution => object(&[
            ("partitionId", integer()),
            ("valueType", keyword()),
            ("intent", keyword()),
        ]),
        ValueType::Signal => object(&[
            ("signalName", keyword()),
            ("variables", not_indexed()),
            ("tenantId", keyword()),
        ]),
        ValueType::SignalSubscription => object(&[
            ("processDefinitionKey", long()),
            ("bpmnProcessId", keyword()),
            ("catchEventId", keyword()),
            ("catchEventInstanceKey", long()),
            ("signalName", keyword()),
            ("tenantId", keyword()),
        ]),
        ValueType::CompensationSubscription => object(&[
            ("tenantId", keyword()),
            ("processInstanceKey", long()),
            ("processDefinitionKey", long()),
            ("compensableActivityId", keyword()),
            ("throwEventId", keyword()),
            ("throwEventInstanceKey", long()),
            ("compensationHandlerId", keyword()),
            ("compensationHandlerInstanceKey", long()),
            ("compensableActivityScopeKey", long()),
            ("compensableActivityInstanceKey", long()),
            ("variables", not_indexed()),
        ]),
        ValueType::Escalation => object(&[
            ("processInstanceKey", long()),
            ("escalationCode", keyword()),
            ("throwElementId", keyword()),
            ("catchElementId", keyword()),
            ("tenantId", keyword()),
        ]),
        ValueType::MessageStartEventSubscription => object(&[
            ("processDefinitionKey", long()),
            ("bpmnProcessId", keyword()),
            ("messageName", keyword()),
            ("startEventId", keyword()),
            ("processInstanceKey", long()),
            ("messageKey", long()),
            ("correlationKey", keyword()),
            ("variables", not_indexed()),
            ("tenantId", keyword()),
        ]),
        ValueType::UserTask => object(&[
            ("userTaskKey", long()),
            ("assignee", keyword()),
            ("candidateGroupsList", keyword()),
            ("candidateUsersList", keyword()),
            ("dueDate", keyword()),
            ("followUpDate", keyword()),
            ("formKey", long()),
            ("externalFormReference", keyword()),
            ("variables", not_indexed()),
            ("customHeaders", not_indexed()),
            ("bpmnProcessId", keyword()),
            ("processDefinitionVersion", integer()),
            ("processDefinitionKey", long()),
            ("processInstanceKey", long()),
            ("elementId", keyword()),
            ("elementInstanceKey", long()),
            ("tenantId", keyword()),
            ("changedAttributes", keyword()),
            ("action", keyword()),
            ("creationTimestamp", long()),
            ("priority", integer()),
            ("rootProcessInstanceKey", long()),
            ("tags", keyword()),
        ]),
        ValueType::Form => object(&[
            ("formId", keyword()),
            ("version", long()),
            ("formKey", long()),
            ("resourceName", text()),
            ("checksum", not_indexed()),
            ("resource", not_indexed()),
            ("duplicate", boolean()),
            ("tenantId", keyword()),
            ("deploymentKey", long()),
            ("versionTag", keyword()),
        ]),
        ValueType::Resource => resource_properties(true),
        ValueType::User => object(&[
            ("userKey", long()),
            ("username", keyword()),
            ("name", keyword()),
            ("email", keyword()),
        ]),
    }
}

/// A deployed resource (an RPA script): the RESOURCE record, with its content, or its
/// entry in a deployment's `resourceMetadata`, without.
fn resource_properties(with_content: bool) -> Value {
    let mut properties = vec![
        ("resourceId", keyword()),
        ("version", long()),
        ("versionTag", keyword()),
        ("resourceKey", long()),
        ("checksum", not_indexed()),
        ("resourceName", text()),
        ("duplicate", boolean()),
        ("tenantId", keyword()),
        ("deploymentKey", long()),
    ];
    if with_content {
        properties.push(("resourceProp", not_indexed()));
    }
    object(&properties)
}
