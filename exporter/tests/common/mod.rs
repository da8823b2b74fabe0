//! Fixtures shared by the exporter's integration tests: records of every value type, and
//! a small HTTP helper for the test server's search API.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use rill_config::{ByteSize, ElasticsearchExporterConfig, RecordFilterConfig};
use rill_protocol::value::*;
use rill_protocol::{
    Blob, Intent, JsonValue, Key, PartitionId, Position, Record, RecordType, RejectionType,
    Timestamp, ValueType,
};
use serde_json::{Value, json};

/// 2026-11-30T12:00:00Z.
pub const NOON: i64 = 1_796_040_000_000;

pub fn key(n: u64) -> i64 {
    Key::new(PartitionId(1), n).get()
}

/// A value of each value type, with every field set.
pub fn value_of(value_type: ValueType) -> RecordValue {
    let vars = || JsonValue::from(json!({"orderId": 42, "items": ["a"]}));
    let job = || JobRecord {
        job_type: "payment".into(),
        element_id: "charge".into(),
        element_instance_key: key(5),
        bpmn_process_id: "order".into(),
        process_definition_version: 1,
        process_definition_key: key(1),
        process_instance_key: key(2),
        worker: "w1".into(),
        retries: 3,
        retry_backoff: 0,
        recurring_time: -1,
        deadline: NOON + 300_000,
        timeout: 300_000,
        error_message: String::new(),
        error_code: String::new(),
        custom_headers: BTreeMap::from([("region".to_owned(), "eu".to_owned())]),
        variables: vars(),
        tenant_id: DEFAULT_TENANT.into(),
        job_kind: Default::default(),
        job_listener_event_type: Default::default(),
        result: Default::default(),
        root_process_instance_key: key(2),
        tags: Vec::new(),
    };
    match value_type {
        ValueType::Deployment => DeploymentRecord {
            resources: vec![DeploymentResource {
                resource_name: "order.bpmn".into(),
                resource: Blob(b"<definitions/>".to_vec()),
            }],
            processes_metadata: vec![ProcessMetadata {
                bpmn_process_id: "order".into(),
                version: 1,
                process_definition_key: key(1),
                resource_name: "order.bpmn".into(),
                checksum: Blob(vec![1, 2, 3]),
                is_duplicate: false,
                tenant_id: DEFAULT_TENANT.into(),
                version_tag: "v1".into(),
            }],
            tenant_id: DEFAULT_TENANT.into(),
            form_metadata: vec![FormMetadata {
                form_id: "order-form".into(),
                version: 1,
                form_key: key(9),
                resource_name: "order.form".into(),
                checksum: Blob(vec![4, 5, 6]),
                is_duplicate: false,
                tenant_id: DEFAULT_TENANT.into(),
                deployment_key: key(8),
                version_tag: String::new(),
            }],
            decisions_metadata: vec![decision()],
            decision_requirements_metadata: vec![DecisionRequirementsMetadata {
                decision_requirements_id: "dishes".into(),
                decision_requirements_name: "Dishes".into(),
                decision_requirements_version: 1,
                decision_requirements_key: key(5),
                namespace: "http://camunda.org/schema/1.0/dmn".into(),
                resource_name: "dish.dmn".into(),
                checksum: Blob(vec![4, 5]),
                is_duplicate: false,
                tenant_id: DEFAULT_TENANT.into(),
            }],
            resource_metadata: vec![ResourceMetadata {
                resource_id: "book-invoice".into(),
                version: 1,
                version_tag: "v1".into(),
                resource_key: key(10),
                checksum: Blob(vec![7, 8]),
                resource_name: "book-invoice.rpa".into(),
                is_duplicate: false,
                tenant_id: DEFAULT_TENANT.into(),
                deployment_key: key(8),
            }],
        }
        .into(),
        ValueType::Decision => decision().into(),
        ValueType::DecisionRequirements => DecisionRequirementsRecord {
            decision_requirements_id: "dishes".into(),
            decision_requirements_name: "Dishes".into(),
            decision_requirements_version: 1,
            decision_requirements_key: key(5),
            namespace: "http://camunda.org/schema/1.0/dmn".into(),
            resource_name: "dish.dmn".into(),
            checksum: Blob(vec![4, 5]),
            resource: Blob(b"<definitions/>".to_vec()),
            is_duplicate: false,
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::DecisionEvaluation => DecisionEvaluationRecord {
            decision_key: key(6),
            decision_id: "dish".into(),
            decision_name: "Dish".into(),
            decision_version: 1,
            decision_requirements_id: "dishes".into(),
            decision_requirements_key: key(5),
            decision_output: "\"Stew\"".into(),
            variables: JsonValue::empty_object(),
            bpmn_process_id: "order".into(),
            process_definition_key: key(1),
            process_instance_key: key(2),
            element_id: "decide".into(),
            element_instance_key: key(3),
            evaluated_decisions: vec![EvaluatedDecisionValue {
                decision_id: "dish".into(),
                decision_evaluation_instance_key: key(8).to_string(),
                decision_name: "Dish".into(),
                decision_key: key(6),
                decision_version: 1,
                decision_type: "DECISION_TABLE".into(),
                decision_output: "\"Stew\"".into(),
                evaluated_inputs: vec![EvaluatedInputValue {
                    input_id: "season".into(),
                    input_name: "Season".into(),
                    input_value: "\"Winter\"".into(),
                }],
                matched_rules: vec![MatchedRuleValue {
                    rule_id: "rule-1".into(),
                    rule_index: 1,
                    evaluated_outputs: vec![EvaluatedOutputValue {
                        output_id: "dish".into(),
                        output_name: "dish".into(),
                        output_value: "\"Stew\"".into(),
                    }],
                }],
                tenant_id: DEFAULT_TENANT.into(),
            }],
            evaluation_failure_message: String::new(),
            failed_decision_id: String::new(),
            tenant_id: DEFAULT_TENANT.into(),
            root_process_instance_key: key(2),
        }
        .into(),
        ValueType::Process => ProcessRecord {
            bpmn_process_id: "order".into(),
            version: 1,
            process_definition_key: key(1),
            resource_name: "order.bpmn".into(),
            checksum: Blob(vec![1, 2, 3]),
            resource: Blob(b"<definitions/>".to_vec()),
            is_duplicate: false,
            tenant_id: DEFAULT_TENANT.into(),
            version_tag: "v1".into(),
        }
        .into(),
        ValueType::ProcessInstance => ProcessInstanceRecord {
            bpmn_element_type: BpmnElementType::ServiceTask,
            element_id: "charge".into(),
            bpmn_process_id: "order".into(),
            version: 1,
            process_definition_key: key(1),
            process_instance_key: key(2),
            flow_scope_key: key(2),
            bpmn_event_type: BpmnEventType::Unspecified,
            parent_process_instance_key: -1,
            parent_element_instance_key: -1,
            tenant_id: DEFAULT_TENANT.into(),
            root_process_instance_key: key(2),
            tags: Vec::new(),
            // An ELEMENT_ACTIVATING value: the only one that carries the tree path.
            tree_path: Some(Box::new(TreePath {
                element_instance_path: vec![vec![key(2), key(3)]],
                process_definition_path: vec![key(1)],
                calling_element_path: Vec::new(),
            })),
        }
        .into(),
        ValueType::ProcessInstanceCreation => ProcessInstanceCreationRecord {
            bpmn_process_id: "order".into(),
            version: -1,
            process_definition_key: key(1),
            process_instance_key: key(2),
            variables: vars(),
            fetch_variables: vec!["orderId".into()],
            tenant_id: DEFAULT_TENANT.into(),
            await_request_id: Some(7),
            tags: Vec::new(),
        }
        .into(),
        ValueType::ProcessInstanceModification => ProcessInstanceModificationRecord {
            process_instance_key: key(2),
            terminate_instructions: vec![ModificationTerminateInstruction {
                element_instance_key: key(3),
            }],
            activate_instructions: vec![ModificationActivateInstruction {
                element_id: "ship".into(),
                ancestor_scope_key: -1,
                variable_instructions: vec![ModificationVariableInstruction {
                    variables: vars(),
                    element_id: String::new(),
                }],
                ancestor_scope_keys: vec![key(2)],
            }],
            ancestor_scope_keys: vec![key(2)],
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::ProcessEvent => ProcessEventRecord {
            scope_key: key(1),
            target_element_id: "nightly".into(),
            variables: vars(),
            process_definition_key: key(1),
            process_instance_key: key(2),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::ResourceDeletion => ResourceDeletionRecord {
            resource_key: key(4),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::ProcessInstanceMigration => ProcessInstanceMigrationRecord {
            process_instance_key: key(2),
            target_process_definition_key: key(5),
            mapping_instructions: vec![MigrationMappingInstruction {
                source_element_id: "ship".into(),
                target_element_id: "ship_v2".into(),
            }],
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::AdHocSubProcessInstruction => AdHocSubProcessInstructionRecord {
            ad_hoc_sub_process_instance_key: key(6),
            activate_elements: vec![AdHocSubProcessActivateElement {
                element_id: "research".into(),
                variables: vars(),
            }],
            cancel_remaining_instances: false,
            tenant_id: DEFAULT_TENANT.into(),
            completion_condition_fulfilled: false,
        }
        .into(),
        ValueType::ProcessInstanceResult => ProcessInstanceResultRecord {
            bpmn_process_id: "order".into(),
            version: 1,
            process_definition_key: key(1),
            process_instance_key: key(2),
            variables: vars(),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::Job => job().into(),
        ValueType::JobBatch => JobBatchRecord {
            job_type: "payment".into(),
            worker: "w1".into(),
            timeout: 300_000,
            max_jobs_to_activate: 10,
            job_keys: vec![key(6)],
            jobs: vec![job()],
            truncated: false,
            tenant_ids: vec![DEFAULT_TENANT.into()],
        }
        .into(),
        ValueType::Variable => VariableRecord {
            name: "orderId".into(),
            value: "42".into(),
            scope_key: key(2),
            process_instance_key: key(2),
            process_definition_key: key(1),
            bpmn_process_id: "order".into(),
            tenant_id: DEFAULT_TENANT.into(),
            root_process_instance_key: key(2),
        }
        .into(),
        ValueType::VariableDocument => VariableDocumentRecord {
            scope_key: key(2),
            update_semantics: VariableUpdateSemantics::Propagate,
            variables: vars(),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::Incident => IncidentRecord {
            error_type: IncidentErrorType::JobNoRetries,
            error_message: "no retries left".into(),
            bpmn_process_id: "order".into(),
            process_definition_key: key(1),
            process_instance_key: key(2),
            element_id: "charge".into(),
            element_instance_key: key(5),
            job_key: key(6),
            variable_scope_key: key(5),
            tenant_id: DEFAULT_TENANT.into(),
            element_instance_path: vec![vec![key(2), key(5)]],
            process_definition_path: vec![key(1)],
            calling_element_path: vec![],
            root_process_instance_key: key(2),
        }
        .into(),
        ValueType::Message => MessageRecord {
            name: "paid".into(),
            correlation_key: "order-42".into(),
            message_id: "m1".into(),
            time_to_live: 60_000,
            deadline: NOON + 60_000,
            variables: vars(),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::MessageSubscription => MessageSubscriptionRecord {
            process_instance_key: key(2),
            element_instance_key: key(5),
            bpmn_process_id: "order".into(),
            message_name: "paid".into(),
            correlation_key: "order-42".into(),
            message_key: -1,
            variables: vars(),
            is_interrupting: true,
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::ProcessMessageSubscription => ProcessMessageSubscriptionRecord {
            subscription_partition_id: 1,
            process_instance_key: key(2),
            element_instance_key: key(5),
            bpmn_process_id: "order".into(),
            element_id: "wait".into(),
            message_name: "paid".into(),
            correlation_key: "order-42".into(),
            message_key: -1,
            variables: vars(),
            is_interrupting: true,
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::Timer => TimerRecord {
            element_instance_key: key(5),
            process_instance_key: key(2),
            process_definition_key: key(1),
            due_date: NOON + 10_000,
            target_element_id: "timeout".into(),
            repetitions: 1,
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::Error => ErrorRecord {
            exception_message: "boom".into(),
            stacktrace: "at engine".into(),
            error_event_position: 7,
            process_instance_key: key(2),
        }
        .into(),
        ValueType::CommandDistribution => CommandDistributionRecord {
            partition_id: 2,
            value_type: ValueType::Deployment,
            intent: Intent::Create,
        }
        .into(),
        ValueType::Signal => SignalRecord {
            signal_name: "order-cancelled".into(),
            variables: vars(),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::SignalSubscription => SignalSubscriptionRecord {
            process_definition_key: key(2),
            bpmn_process_id: "order".into(),
            catch_event_id: "cancelled".into(),
            catch_event_instance_key: key(6),
            signal_name: "order-cancelled".into(),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::CompensationSubscription => CompensationSubscriptionRecord {
            tenant_id: DEFAULT_TENANT.into(),
            process_instance_key: key(3),
            process_definition_key: key(2),
            compensable_activity_id: "BookHotel".into(),
            throw_event_id: "UndoAll".into(),
            throw_event_instance_key: key(7),
            compensation_handler_id: "CancelHotel".into(),
            compensation_handler_instance_key: -1,
            compensable_activity_scope_key: key(3),
            compensable_activity_instance_key: key(5),
            variables: vars(),
        }
        .into(),
        ValueType::Escalation => EscalationRecord {
            process_instance_key: key(3),
            escalation_code: "LATE".into(),
            throw_element_id: "RaiseLate".into(),
            catch_element_id: "OnLate".into(),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::MessageStartEventSubscription => MessageStartEventSubscriptionRecord {
            process_definition_key: key(2),
            bpmn_process_id: "order".into(),
            message_name: "order-placed".into(),
            start_event_id: "placed".into(),
            process_instance_key: key(3),
            message_key: key(9),
            correlation_key: "o-1".into(),
            variables: vars(),
            tenant_id: DEFAULT_TENANT.into(),
        }
        .into(),
        ValueType::UserTask => UserTaskRecord {
            user_task_key: key(10),
            assignee: "ann".into(),
            candidate_groups_list: vec!["sales".into()],
            candidate_users_list: Vec::new(),
            due_date: "2026-12-31T17:00:00Z".into(),
            follow_up_date: String::new(),
            form_key: key(9),
            external_form_reference: String::new(),
            variables: vars(),
            custom_headers: BTreeMap::new(),
            bpmn_process_id: "order".into(),
            process_definition_version: 1,
            process_definition_key: key(1),
            process_instance_key: key(2),
            element_id: "review".into(),
            element_instance_key: key(5),
            tenant_id: DEFAULT_TENANT.into(),
            changed_attributes: vec!["assignee".into()],
            action: "assign".into(),
            creation_timestamp: NOON,
            priority: 50,
            root_process_instance_key: key(2),
            tags: Vec::new(),
        }
        .into(),
        ValueType::Form => FormRecord {
            form_id: "order-form".into(),
            version: 1,
            form_key: key(9),
            resource_name: "order.form".into(),
            checksum: Blob(vec![4, 5, 6]),
            resource: Blob(br#"{"id":"order-form"}"#.to_vec()),
            is_duplicate: false,
            tenant_id: DEFAULT_TENANT.into(),
            deployment_key: key(8),
            version_tag: String::new(),
        }
        .into(),
        ValueType::Resource => ResourceRecord {
            resource_id: "book-invoice".into(),
            version: 1,
            version_tag: "v1".into(),
            resource_key: key(10),
            checksum: Blob(vec![7, 8]),
            resource_name: "book-invoice.rpa".into(),
            is_duplicate: false,
            tenant_id: DEFAULT_TENANT.into(),
            deployment_key: key(8),
            resource_prop: r#"{"id":"book-invoice"}"#.into(),
        }
        .into(),
        ValueType::User => UserRecord {
            user_key: key(11),
            username: "jane".into(),
            name: "Jane Doe".into(),
            email: "jane@example.com".into(),
            password: Default::default(),
        }
        .into(),
    }
}

fn decision() -> DecisionRecord {
    DecisionRecord {
        decision_id: "dish".into(),
        decision_name: "Dish".into(),
        version: 1,
        decision_key: key(6),
        decision_requirements_id: "dishes".into(),
        decision_requirements_key: key(5),
        is_duplicate: false,
        tenant_id: DEFAULT_TENANT.into(),
        deployment_key: key(4),
        version_tag: String::new(),
    }
}

/// A plausible intent per value type, so documents look like real history.
pub fn intent_of(value_type: ValueType) -> Intent {
    match value_type {
        ValueType::Deployment | ValueType::Process | ValueType::ProcessInstanceCreation => {
            Intent::Created
        }
        ValueType::ProcessInstance => Intent::ElementActivated,
        ValueType::Job => Intent::Created,
        ValueType::JobBatch => Intent::Activated,
        ValueType::Incident => Intent::Created,
        ValueType::Message => Intent::Published,
        ValueType::Timer => Intent::Triggered,
        ValueType::CommandDistribution => Intent::Distributed,
        ValueType::Signal => Intent::Broadcasted,
        ValueType::Escalation => Intent::Escalated,
        ValueType::CompensationSubscription => Intent::Triggered,
        ValueType::ProcessEvent => Intent::Triggering,
        ValueType::AdHocSubProcessInstruction => Intent::Activated,
        ValueType::DecisionEvaluation => Intent::Evaluated,
        _ => Intent::Created,
    }
}

pub fn record(position: u64, record_type: RecordType, value: RecordValue) -> Record {
    let value_type = value.value_type();
    Record {
        position: Position(position),
        source_record_position: if position > 1 {
            Some(Position(position - 1))
        } else {
            None
        },
        key: Key::new(PartitionId(1), position),
        timestamp: Timestamp(NOON + position as i64),
        record_type,
        value_type,
        intent: intent_of(value_type),
        partition_id: PartitionId(1),
        rejection_type: if record_type == RecordType::CommandRejection {
            RejectionType::InvalidState
        } else {
            RejectionType::NullVal
        },
        rejection_reason: if record_type == RecordType::CommandRejection {
            "not allowed".into()
        } else {
            String::new()
        },
        operation_reference: rill_protocol::NO_OPERATION_REFERENCE,
        broker_version: rill_protocol::BROKER_VERSION.into(),
        value,
    }
}

/// Positions `from..=to`, cycling through the value types that the default filter
/// exports, all events.
pub fn events(from: u64, to: u64) -> Vec<Record> {
    let types: Vec<ValueType> = ValueType::ALL
        .into_iter()
        .filter(|vt| !matches!(vt, ValueType::JobBatch | ValueType::ProcessInstanceResult))
        .collect();
    (from..=to)
        .map(|p| {
            record(
                p,
                RecordType::Event,
                value_of(types[(p as usize) % types.len()]),
            )
        })
        .collect()
}

/// An exporter config for the test server: fast retries, short timeouts.
pub fn es_config(url: &str) -> ElasticsearchExporterConfig {
    ElasticsearchExporterConfig {
        url: url.to_owned(),
        bulk_size: 1000,
        bulk_delay: Duration::from_secs(5),
        bulk_memory_limit: ByteSize(10 * 1024 * 1024),
        request_timeout: Duration::from_secs(2),
        retry_initial_backoff: Duration::from_millis(10),
        retry_max_backoff: Duration::from_millis(100),
        filter: RecordFilterConfig::default(),
        ..Default::default()
    }
}

/// POSTs a query to the test server and returns the JSON answer.
pub async fn post(url: &str, path: &str, body: Value) -> Value {
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{url}/{path}"))
        .json(&body)
        .send()
        .await
        .expect("request to the test server");
    response.json().await.expect("JSON answer")
}

pub async fn count(url: &str, target: &str, query: Value) -> u64 {
    let answer = post(url, &format!("{target}/_count"), json!({ "query": query })).await;
    answer["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("no count in {answer}"))
}

/// Document ids in `target`, via `_search` (sorted by position).
pub async fn ids(url: &str, target: &str) -> Vec<String> {
    let answer = post(
        url,
        &format!("{target}/_search"),
        json!({"query": {"match_all": {}}, "size": 1_000_000, "sort": [{"position": "asc"}]}),
    )
    .await;
    answer["hits"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits in {answer}"))
        .iter()
        .map(|hit| hit["_id"].as_str().unwrap_or_default().to_owned())
        .collect()
}
