//! Every served search and get answers in Camunda 8.8's shapes: real responses (the
//! engine over two partitions, with the history store) checked against schemas written
//! here from the facts of the 8.8 spec (`rest-api.yaml`: field names, types, required
//! fields, enums, nullability).

use serde_json::{Value, json};

use crate::support::engine_backend::EngineBackend;
use crate::support::schema::assert_matches;
use crate::support::{TestGateway, create};

pub(crate) fn key() -> Value {
    json!({"type": "string", "format": "key"})
}

pub(crate) fn text() -> Value {
    json!({"type": "string"})
}

pub(crate) fn date() -> Value {
    json!({"type": "string", "format": "date-time"})
}

pub(crate) fn integer() -> Value {
    json!({"type": "integer"})
}

pub(crate) fn boolean() -> Value {
    json!({"type": "boolean"})
}

pub(crate) fn one_of(names: &[&str]) -> Value {
    json!({"type": "string", "enum": names})
}

/// `SearchQueryResponse` with `items` of `item` (`items` required where the spec says).
pub(crate) fn search_result(item: Value, items_required: bool) -> Value {
    let required = if items_required {
        json!(["page", "items"])
    } else {
        json!(["page"])
    };
    json!({
        "type": "object",
        "required": required,
        "properties": {
            "items": {"type": "array", "items": item},
            "page": {
                "type": "object",
                "required": ["totalItems"],
                "properties": {
                    "totalItems": integer(),
                    "hasMoreTotalItems": boolean(),
                    "startCursor": {"type": "string", "format": "base64"},
                    "endCursor": {"type": "string", "format": "base64"}
                }
            }
        }
    })
}

const INSTANCE_STATES: &[&str] = &["ACTIVE", "COMPLETED", "TERMINATED"];

pub(crate) fn process_instance() -> Value {
    json!({
        "type": "object",
        "required": ["processDefinitionId", "processDefinitionName", "processDefinitionVersion",
                     "startDate", "state", "hasIncident", "tenantId", "processInstanceKey",
                     "processDefinitionKey"],
        "properties": {
            "processDefinitionId": text(),
            "processDefinitionName": text(),
            "processDefinitionVersion": integer(),
            "processDefinitionVersionTag": text(),
            "startDate": date(),
            "endDate": date(),
            "state": one_of(INSTANCE_STATES),
            "hasIncident": boolean(),
            "tenantId": text(),
            "processInstanceKey": key(),
            "processDefinitionKey": key(),
            "parentProcessInstanceKey": key(),
            "parentElementInstanceKey": key(),
            "tags": {"type": "array", "items": text()}
        }
    })
}

pub(crate) fn job() -> Value {
    json!({
        "type": "object",
        "required": ["customHeaders", "elementId", "elementInstanceKey", "jobKey", "kind",
                     "listenerEventType", "processDefinitionId", "processDefinitionKey",
                     "processInstanceKey", "retries", "state", "tenantId", "type", "worker"],
        "properties": {
            "customHeaders": {"type": "object"},
            "deadline": {"type": "string", "format": "date-time", "nullable": true},
            "deniedReason": {"type": "string", "nullable": true},
            "elementId": text(),
            "elementInstanceKey": key(),
            "endTime": date(),
            "errorCode": {"type": "string", "nullable": true},
            "errorMessage": {"type": "string", "nullable": true},
            "hasFailedWithRetriesLeft": boolean(),
            "isDenied": {"type": "boolean", "nullable": true},
            "jobKey": key(),
            "kind": one_of(&["BPMN_ELEMENT", "EXECUTION_LISTENER", "TASK_LISTENER",
                             "AD_HOC_SUB_PROCESS"]),
            "listenerEventType": one_of(&["ASSIGNING", "CANCELING", "COMPLETING", "CREATING",
                                          "END", "START", "UNSPECIFIED", "UPDATING"]),
            "processDefinitionId": text(),
            "processDefinitionKey": key(),
            "processInstanceKey": key(),
            "retries": integer(),
            "state": one_of(&["CANCELED", "COMPLETED", "CREATED", "ERROR_THROWN", "FAILED",
                              "MIGRATED", "RETRIES_UPDATED", "TIMED_OUT"]),
            "tenantId": text(),
            "type": text(),
            "worker": text()
        }
    })
}

pub(crate) fn incident() -> Value {
    json!({
        "type": "object",
        "properties": {
            "processDefinitionId": text(),
            "errorType": one_of(&["UNSPECIFIED", "UNKNOWN", "IO_MAPPING_ERROR", "JOB_NO_RETRIES",
                "EXECUTION_LISTENER_NO_RETRIES", "TASK_LISTENER_NO_RETRIES",
                "AD_HOC_SUB_PROCESS_NO_RETRIES", "CONDITION_ERROR", "EXTRACT_VALUE_ERROR",
                "CALLED_ELEMENT_ERROR", "UNHANDLED_ERROR_EVENT", "MESSAGE_SIZE_EXCEEDED",
                "CALLED_DECISION_ERROR", "DECISION_EVALUATION_ERROR", "FORM_NOT_FOUND",
                "RESOURCE_NOT_FOUND"]),
            "errorMessage": text(),
            "elementId": text(),
            "creationTime": date(),
            "state": one_of(&["ACTIVE", "MIGRATED", "RESOLVED", "PENDING"]),
            "tenantId": text(),
            "incidentKey": key(),
            "processDefinitionKey": key(),
            "processInstanceKey": key(),
            "elementInstanceKey": key(),
            "jobKey": key()
        }
    })
}

/// `VariableSearchResult`; `VariableResult` (a get) has no `isTruncated`.
pub(crate) fn variable() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": text(),
            "value": text(),
            "isTruncated": boolean(),
            "tenantId": text(),
            "variableKey": key(),
            "scopeKey": key(),
            "processInstanceKey": key()
        }
    })
}

pub(crate) fn element_instance() -> Value {
    json!({
        "type": "object",
        "required": ["processDefinitionId", "startDate", "elementId", "elementName", "type",
                     "state", "hasIncident", "tenantId", "elementInstanceKey",
                     "processInstanceKey", "processDefinitionKey"],
        "properties": {
            "processDefinitionId": text(),
            "startDate": date(),
            "endDate": date(),
            "elementId": text(),
            "elementName": text(),
            "type": one_of(&["UNSPECIFIED", "PROCESS", "SUB_PROCESS", "EVENT_SUB_PROCESS",
                "AD_HOC_SUB_PROCESS", "AD_HOC_SUB_PROCESS_INNER_INSTANCE", "START_EVENT",
                "INTERMEDIATE_CATCH_EVENT", "INTERMEDIATE_THROW_EVENT", "BOUNDARY_EVENT",
                "END_EVENT", "SERVICE_TASK", "RECEIVE_TASK", "USER_TASK", "MANUAL_TASK", "TASK",
                "EXCLUSIVE_GATEWAY", "INCLUSIVE_GATEWAY", "PARALLEL_GATEWAY",
                "EVENT_BASED_GATEWAY", "SEQUENCE_FLOW", "MULTI_INSTANCE_BODY", "CALL_ACTIVITY",
                "BUSINESS_RULE_TASK", "SCRIPT_TASK", "SEND_TASK", "UNKNOWN"]),
            "state": one_of(INSTANCE_STATES),
            "hasIncident": boolean(),
            "tenantId": text(),
            "elementInstanceKey": key(),
            "processInstanceKey": key(),
            "processDefinitionKey": key(),
            "incidentKey": key()
        }
    })
}

pub(crate) fn process_definition() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": text(),
            "resourceName": text(),
            "version": integer(),
            "versionTag": text(),
            "processDefinitionId": text(),
            "tenantId": text(),
            "processDefinitionKey": key(),
            "hasStartForm": boolean()
        }
    })
}

pub(crate) fn element_statistics() -> Value {
    json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "elementId": text(),
                        "active": integer(),
                        "canceled": integer(),
                        "incidents": integer(),
                        "completed": integer()
                    }
                }
            }
        }
    })
}

/// `MessageSubscriptionResult`. The spec types `correlationKey` as a message
/// correlation key (a long key): a spec slip, correlation keys are any string.
pub(crate) fn message_subscription() -> Value {
    json!({
        "type": "object",
        "properties": {
            "messageSubscriptionKey": key(),
            "processDefinitionId": text(),
            "processDefinitionKey": key(),
            "processInstanceKey": key(),
            "elementId": text(),
            "elementInstanceKey": key(),
            "messageSubscriptionState": one_of(&["CORRELATED", "CREATED", "DELETED", "MIGRATED"]),
            "lastUpdatedDate": date(),
            "messageName": text(),
            "correlationKey": text(),
            "tenantId": text()
        }
    })
}

/// `ActivatedJobResult`: `userTask` is an object (not nullable) and only for user task
/// listener jobs.
fn activated_job() -> Value {
    json!({
        "type": "object",
        "required": ["type", "processDefinitionId", "processDefinitionVersion", "elementId",
                     "customHeaders", "worker", "retries", "deadline", "variables", "tenantId",
                     "jobKey", "processInstanceKey", "processDefinitionKey",
                     "elementInstanceKey", "kind", "listenerEventType"],
        "properties": {
            "type": text(),
            "processDefinitionId": text(),
            "processDefinitionVersion": integer(),
            "elementId": text(),
            "customHeaders": {"type": "object"},
            "worker": text(),
            "retries": integer(),
            "deadline": integer(),
            "variables": {"type": "object"},
            "tenantId": text(),
            "jobKey": key(),
            "processInstanceKey": key(),
            "processDefinitionKey": key(),
            "elementInstanceKey": key(),
            "kind": one_of(&["BPMN_ELEMENT", "EXECUTION_LISTENER", "TASK_LISTENER",
                             "AD_HOC_SUB_PROCESS"]),
            "listenerEventType": one_of(&["ASSIGNING", "CANCELING", "COMPLETING", "CREATING",
                                          "END", "START", "UNSPECIFIED", "UPDATING"]),
            "userTask": {"type": "object"},
            "tags": {"type": "array", "items": text()}
        }
    })
}

/// `CreateProcessInstanceResult`.
fn created_instance() -> Value {
    json!({
        "type": "object",
        "required": ["processDefinitionId", "processDefinitionVersion", "tenantId",
                     "variables", "processDefinitionKey", "processInstanceKey"],
        "properties": {
            "processDefinitionId": text(),
            "processDefinitionVersion": integer(),
            "tenantId": text(),
            "variables": {"type": "object"},
            "processDefinitionKey": key(),
            "processInstanceKey": key(),
            "tags": {"type": "array", "items": text()}
        }
    })
}

/// Fields of `value` that `schema` does not name: a later API's (8.10's `businessId`,
/// `rootProcessInstanceKey`...), which an 8.8 client has no use for.
#[track_caller]
fn assert_no_unknown_fields(what: &str, schema: &Value, value: &Value) {
    let known = schema["properties"].as_object().unwrap();
    let unknown: Vec<&String> = value
        .as_object()
        .unwrap()
        .keys()
        .filter(|name| !known.contains_key(*name))
        .collect();
    assert!(
        unknown.is_empty(),
        "{what} has fields 8.8 lacks: {unknown:?} in {value:#}"
    );
}

/// A named, version-tagged process: a service task, then a message catch.
pub(crate) const ORDER_PROCESS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="shaped" name="Shaped order" isExecutable="true">
    <bpmn:extensionElements><zeebe:versionTag value="v2.1" /></bpmn:extensionElements>
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="work" name="Do the work">
      <bpmn:extensionElements><zeebe:taskDefinition type="shaped-work" retries="1" /></bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:intermediateCatchEvent id="paid">
      <bpmn:incoming>f2</bpmn:incoming><bpmn:outgoing>f3</bpmn:outgoing>
      <bpmn:messageEventDefinition messageRef="payment" />
    </bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="end"><bpmn:incoming>f3</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="paid" />
    <bpmn:sequenceFlow id="f3" sourceRef="paid" targetRef="end" />
  </bpmn:process>
  <bpmn:message id="payment" name="shaped-paid">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements>
  </bpmn:message>
</bpmn:definitions>"#;

/// The first item's `field` (a key) of a search answer.
fn first(reply: &Value, field: &str) -> String {
    reply["items"][0][field]
        .as_str()
        .unwrap_or_else(|| panic!("no items[0].{field} in {reply}"))
        .to_owned()
}

/// What `populated` made: the definition's key and the three instances' keys.
pub(crate) struct Populated {
    pub definition: String,
    pub waiting: String,
    pub failing: String,
    pub canceled: String,
}

/// A gateway over the engine on two partitions with a populated history: the order
/// process deployed and three instances of it.
pub(crate) async fn populated() -> (TestGateway, Populated) {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    let deployed = gateway
        .deploy(&[("shaped.bpmn", ORDER_PROCESS.as_bytes())])
        .await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let definition = deployed.body["deployments"][0]["processDefinition"]["processDefinitionKey"]
        .as_str()
        .unwrap()
        .to_owned();

    // One instance waits for its message (job completed), one has an incident (job failed
    // without retries), one is canceled: instances on both partitions, in every state.
    let waiting = create(&gateway, "shaped", json!({"orderId": "o-1"})).await;
    let failing = create(&gateway, "shaped", json!({"orderId": "o-2"})).await;
    let created = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "shaped", "variables": {"orderId": "o-3"}}),
        )
        .await;
    assert_eq!(created.status, 200, "{:?}", created.body);
    assert_matches("created instance", &created_instance(), &created.body);
    assert_no_unknown_fields("created instance", &created_instance(), &created.body);
    let canceled = created.body["processInstanceKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let jobs = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "shaped-work", "timeout": 30000, "maxJobsToActivate": 3,
                   "worker": "shapes", "requestTimeout": -1}),
        )
        .await;
    assert_eq!(jobs.status, 200, "{:?}", jobs.body);
    for job in jobs.body["jobs"].as_array().unwrap() {
        assert_matches("activated job", &activated_job(), job);
        assert_no_unknown_fields("activated job", &activated_job(), job);
        let job_key = job["jobKey"].as_str().unwrap();
        let instance = job["processInstanceKey"].as_str().unwrap();
        let reply = if instance == waiting {
            gateway
                .post(&format!("/v2/jobs/{job_key}/completion"), json!({}))
                .await
        } else if instance == failing {
            gateway
                .post(
                    &format!("/v2/jobs/{job_key}/failure"),
                    json!({"retries": 0, "errorMessage": "broken"}),
                )
                .await
        } else {
            continue;
        };
        assert_eq!(reply.status, 204, "{:?}", reply.body);
    }
    let reply = gateway
        .post(
            &format!("/v2/process-instances/{canceled}/cancellation"),
            json!({}),
        )
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);

    let populated = Populated {
        definition,
        waiting,
        failing,
        canceled,
    };
    (gateway, populated)
}

#[tokio::test]
async fn every_served_search_and_get_answers_in_the_spec_shape() {
    let (
        gateway,
        Populated {
            definition,
            waiting,
            failing,
            canceled,
        },
    ) = populated().await;

    // Process instances: the model's name and version tag, no nulls.
    let instances = gateway
        .post("/v2/process-instances/search", json!({}))
        .await;
    assert_eq!(instances.status, 200, "{:?}", instances.body);
    assert_matches(
        "process instance search",
        &search_result(process_instance(), true),
        &instances.body,
    );
    assert_eq!(instances.body["page"]["totalItems"], 3);
    let one = gateway
        .get(&format!("/v2/process-instances/{waiting}"))
        .await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_matches("process instance", &process_instance(), &one.body);
    assert_eq!(one.body["processDefinitionName"], "Shaped order");
    assert_eq!(one.body["processDefinitionVersionTag"], "v2.1");
    let named = gateway
        .post(
            "/v2/process-instances/search",
            json!({"filter": {"processDefinitionName": "Shaped order",
                              "processDefinitionVersionTag": "v2.1", "state": "TERMINATED"}}),
        )
        .await;
    assert_eq!(named.body["page"]["totalItems"], 1, "{:?}", named.body);
    assert_eq!(first(&named.body, "processInstanceKey"), canceled);

    // Jobs.
    let jobs = gateway.post("/v2/jobs/search", json!({})).await;
    assert_eq!(jobs.status, 200, "{:?}", jobs.body);
    assert_matches("job search", &search_result(job(), true), &jobs.body);

    // Incidents: searched, one read, and the failing instance's.
    let incidents = gateway.post("/v2/incidents/search", json!({})).await;
    assert_eq!(incidents.status, 200, "{:?}", incidents.body);
    assert_matches(
        "incident search",
        &search_result(incident(), false),
        &incidents.body,
    );
    let incident_key = first(&incidents.body, "incidentKey");
    let one = gateway.get(&format!("/v2/incidents/{incident_key}")).await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_matches("incident", &incident(), &one.body);
    let of_instance = gateway
        .post(
            &format!("/v2/process-instances/{failing}/incidents/search"),
            json!({}),
        )
        .await;
    assert_eq!(of_instance.status, 200, "{:?}", of_instance.body);
    assert_matches(
        "process instance incident search",
        &search_result(incident(), false),
        &of_instance.body,
    );

    // Variables.
    let variables = gateway.post("/v2/variables/search", json!({})).await;
    assert_eq!(variables.status, 200, "{:?}", variables.body);
    assert_matches(
        "variable search",
        &search_result(variable(), false),
        &variables.body,
    );
    let variable_key = first(&variables.body, "variableKey");
    let one = gateway.get(&format!("/v2/variables/{variable_key}")).await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_matches("variable", &variable(), &one.body);
    assert!(one.body.get("isTruncated").is_none(), "{:?}", one.body);

    // Element instances.
    let elements = gateway
        .post(
            "/v2/element-instances/search",
            json!({"filter": {"elementId": "work"}}),
        )
        .await;
    assert_eq!(elements.status, 200, "{:?}", elements.body);
    assert_matches(
        "element instance search",
        &search_result(element_instance(), false),
        &elements.body,
    );
    let element_key = first(&elements.body, "elementInstanceKey");
    let one = gateway
        .get(&format!("/v2/element-instances/{element_key}"))
        .await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_matches("element instance", &element_instance(), &one.body);

    // Process definitions: once each, though every partition stores them.
    let definitions = gateway
        .post("/v2/process-definitions/search", json!({}))
        .await;
    assert_eq!(definitions.status, 200, "{:?}", definitions.body);
    assert_matches(
        "process definition search",
        &search_result(process_definition(), false),
        &definitions.body,
    );
    assert_eq!(definitions.body["page"]["totalItems"], 1);
    let one = gateway
        .get(&format!("/v2/process-definitions/{definition}"))
        .await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_matches("process definition", &process_definition(), &one.body);
    assert_eq!(one.body["name"], "Shaped order");
    assert_eq!(one.body["versionTag"], "v2.1");
    let xml = gateway
        .client
        .get(gateway.url(&format!("/v2/process-definitions/{definition}/xml")))
        .send()
        .await
        .unwrap();
    assert_eq!(xml.status(), 200);
    assert!(
        xml.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/xml")
    );
    assert_eq!(xml.text().await.unwrap(), ORDER_PROCESS);
    let statistics = gateway
        .post(
            &format!("/v2/process-definitions/{definition}/statistics/element-instances"),
            json!({}),
        )
        .await;
    assert_eq!(statistics.status, 200, "{:?}", statistics.body);
    assert_matches(
        "element statistics",
        &element_statistics(),
        &statistics.body,
    );
    let work = statistics.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["elementId"] == "work")
        .cloned()
        .unwrap_or_else(|| panic!("no work element in {:?}", statistics.body));
    assert_eq!(
        work,
        json!({"elementId": "work", "active": 1, "canceled": 1, "incidents": 1, "completed": 1})
    );

    // Message subscriptions: the waiting instance's.
    let subscriptions = gateway
        .post("/v2/message-subscriptions/search", json!({}))
        .await;
    assert_eq!(subscriptions.status, 200, "{:?}", subscriptions.body);
    assert_matches(
        "message subscription search",
        &search_result(message_subscription(), false),
        &subscriptions.body,
    );
    assert_eq!(subscriptions.body["page"]["totalItems"], 1);
    let subscription = &subscriptions.body["items"][0];
    assert_eq!(subscription["processInstanceKey"], waiting.as_str());
    assert_eq!(subscription["processDefinitionKey"], definition.as_str());
    assert_eq!(subscription["messageSubscriptionState"], "CREATED");
    assert_eq!(subscription["correlationKey"], "o-1");
    assert_eq!(subscription["messageName"], "shaped-paid");

    // A second version: the latest only, and both.
    let second = ORDER_PROCESS.replace("Shaped order", "Shaped order, again");
    let deployed = gateway.deploy(&[("shaped.bpmn", second.as_bytes())]).await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let latest = gateway
        .post(
            "/v2/process-definitions/search",
            json!({"filter": {"processDefinitionId": "shaped", "isLatestVersion": true}}),
        )
        .await;
    assert_eq!(latest.body["page"]["totalItems"], 1, "{:?}", latest.body);
    assert_eq!(latest.body["items"][0]["version"], 2);
    assert_eq!(latest.body["items"][0]["name"], "Shaped order, again");
    let all = gateway
        .post(
            "/v2/process-definitions/search",
            json!({"sort": [{"field": "version", "order": "DESC"}]}),
        )
        .await;
    assert_eq!(all.body["page"]["totalItems"], 2, "{:?}", all.body);
    assert_eq!(all.body["items"][1]["version"], 1);

    // An empty page has no cursors: 8.8's are optional and not nullable.
    let empty = gateway
        .post(
            "/v2/message-subscriptions/search",
            json!({"filter": {"messageName": "nothing"}}),
        )
        .await;
    assert_matches(
        "empty message subscription search",
        &search_result(message_subscription(), false),
        &empty.body,
    );
    assert_eq!(
        empty.body["page"],
        json!({"totalItems": 0, "hasMoreTotalItems": false})
    );
    gateway.stop().await;
}
