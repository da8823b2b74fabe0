//! Every endpoint against the real engine: the JSON shapes Camunda clients read, and
//! the state changes behind them.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, create, deploy_one_task, message_process, one_task_process};

async fn activate(gateway: &TestGateway, job_type: &str, max: i32) -> Vec<Value> {
    let reply = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": job_type, "timeout": 30000, "maxJobsToActivate": max,
                   "worker": "test", "requestTimeout": -1}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body["jobs"].as_array().expect("jobs").clone()
}

#[tokio::test]
async fn deploy_create_work_and_read_a_finished_instance() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;

    let deployment = deploy_one_task(&gateway, "order", "pack").await;
    assert!(
        deployment["deploymentKey"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .is_ok()
    );
    assert_eq!(deployment["tenantId"], "<default>");
    let definition = &deployment["deployments"][0]["processDefinition"];
    assert_eq!(definition["processDefinitionId"], "order");
    assert_eq!(definition["processDefinitionVersion"], 1);
    assert_eq!(definition["resourceName"], "order.bpmn");
    assert_eq!(definition["tenantId"], "<default>");
    let definition_key = definition["processDefinitionKey"]
        .as_str()
        .unwrap()
        .to_owned();

    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "order", "variables": {"orderId": "o-1", "total": 12.5}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["processDefinitionId"], "order");
    assert_eq!(reply.body["processDefinitionVersion"], 1);
    assert_eq!(reply.body["processDefinitionKey"], definition_key.as_str());
    let instance = reply.body["processInstanceKey"]
        .as_str()
        .unwrap()
        .to_owned();

    let state = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(state.status, 200, "{:?}", state.body);
    assert_eq!(state.body["state"], "ACTIVE");
    assert_eq!(state.body["hasIncident"], false);
    assert_eq!(state.body["processInstanceKey"], instance.as_str());
    assert_eq!(state.body["endDate"], Value::Null);
    assert!(state.body["startDate"].as_str().unwrap().ends_with('Z'));

    let jobs = activate(&gateway, "pack", 5).await;
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job["type"], "pack");
    assert_eq!(job["processInstanceKey"], instance.as_str());
    assert_eq!(job["elementId"], "task");
    assert_eq!(job["retries"], 3);
    assert_eq!(job["worker"], "test");
    assert_eq!(job["variables"]["orderId"], "o-1");
    assert!(job["deadline"].as_i64().unwrap() > 0);
    let job_key = job["jobKey"].as_str().unwrap().to_owned();

    let done = gateway
        .post(
            &format!("/v2/jobs/{job_key}/completion"),
            json!({"variables": {"packed": true}}),
        )
        .await;
    assert_eq!(done.status, 204, "{:?}", done.body);

    let state = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(state.body["state"], "COMPLETED", "{:?}", state.body);
    assert!(state.body["endDate"].as_str().is_some());

    // Completing the same job again: it is gone.
    let again = gateway
        .post(&format!("/v2/jobs/{job_key}/completion"), json!({}))
        .await;
    let path = format!("/v2/jobs/{job_key}/completion");
    again.assert_problem(404, "NOT_FOUND", &path, &["COMPLETE", &job_key]);
    gateway.stop().await;
}

#[tokio::test]
async fn create_by_key_and_specific_version() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let first = deploy_one_task(&gateway, "versioned", "a").await;
    let second_xml = one_task_process("versioned", "b");
    let second = gateway
        .deploy(&[("versioned-2.bpmn", second_xml.as_bytes())])
        .await;
    assert_eq!(
        second.body["deployments"][0]["processDefinition"]["processDefinitionVersion"],
        2
    );

    let by_version = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "versioned", "processDefinitionVersion": 1}),
        )
        .await;
    assert_eq!(
        by_version.body["processDefinitionVersion"], 1,
        "{:?}",
        by_version.body
    );

    let key = first["deployments"][0]["processDefinition"]["processDefinitionKey"].clone();
    let by_key = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionKey": key}),
        )
        .await;
    assert_eq!(by_key.status, 200, "{:?}", by_key.body);
    assert_eq!(by_key.body["processDefinitionVersion"], 1);

    let latest = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "versioned"}),
        )
        .await;
    assert_eq!(latest.body["processDefinitionVersion"], 2);
    gateway.stop().await;
}

#[tokio::test]
async fn await_completion_returns_the_variables() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "awaited", "calc").await;

    let worker = {
        let client = gateway.client.clone();
        let base = gateway.base.clone();
        tokio::spawn(async move {
            loop {
                let reply: Value = client
                    .post(format!("{base}/v2/jobs/activation"))
                    .json(
                        &json!({"type": "calc", "timeout": 10000, "maxJobsToActivate": 1,
                                  "requestTimeout": 2000}),
                    )
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                if let Some(job) = reply["jobs"].as_array().and_then(|j| j.first()) {
                    let key = job["jobKey"].as_str().unwrap();
                    let status = client
                        .post(format!("{base}/v2/jobs/{key}/completion"))
                        .json(&json!({"variables": {"result": 42}}))
                        .send()
                        .await
                        .unwrap()
                        .status();
                    assert_eq!(status.as_u16(), 204);
                    return;
                }
            }
        })
    };

    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "awaited", "variables": {"input": 1},
                   "awaitCompletion": true, "requestTimeout": 5000}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["variables"]["result"], 42);
    assert_eq!(reply.body["variables"]["input"], 1);
    worker.await.unwrap();

    // fetchVariables narrows what comes back; nobody works the job, so it times out.
    let started = Instant::now();
    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "awaited", "awaitCompletion": true,
                   "requestTimeout": 300}),
        )
        .await;
    reply.assert_problem(
        504,
        "DEADLINE_EXCEEDED",
        "/v2/process-instances",
        &["timed out"],
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    gateway.stop().await;
}

#[tokio::test]
async fn incidents_retries_and_resolution() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "fragile", "flaky").await;
    let instance = create(&gateway, "fragile", json!({})).await;
    let job_key = activate(&gateway, "flaky", 1).await[0]["jobKey"]
        .as_str()
        .unwrap()
        .to_owned();

    let failed = gateway
        .post(
            &format!("/v2/jobs/{job_key}/failure"),
            json!({"retries": 0, "errorMessage": "the printer is on fire"}),
        )
        .await;
    assert_eq!(failed.status, 204, "{:?}", failed.body);

    let state = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(state.body["hasIncident"], true, "{:?}", state.body);

    let search = gateway
        .post(
            "/v2/incidents/search",
            json!({"filter": {"processInstanceKey": instance}}),
        )
        .await;
    assert_eq!(search.status, 200, "{:?}", search.body);
    assert_eq!(search.body["page"]["totalItems"], 1);
    let incident = &search.body["items"][0];
    assert_eq!(incident["errorType"], "JOB_NO_RETRIES");
    assert_eq!(incident["errorMessage"], "the printer is on fire");
    assert_eq!(incident["jobKey"], job_key.as_str());
    assert_eq!(incident["state"], "ACTIVE");
    assert!(incident["creationTime"].is_string(), "{incident}");
    let incident_key = incident["incidentKey"].as_str().unwrap().to_owned();

    // The same through the instance's own path and by key.
    let by_instance = gateway
        .post(
            &format!("/v2/process-instances/{instance}/incidents/search"),
            json!({}),
        )
        .await;
    assert_eq!(
        by_instance.body["items"][0]["incidentKey"],
        incident_key.as_str()
    );
    let one = gateway.get(&format!("/v2/incidents/{incident_key}")).await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_eq!(one.body["processInstanceKey"], instance.as_str());

    // The task's element instance has the incident; the start event completed.
    let elements = gateway
        .post(
            "/v2/element-instances/search",
            json!({"filter": {"processInstanceKey": instance}, "sort": [{"field": "startDate"}]}),
        )
        .await;
    assert_eq!(elements.status, 200, "{:?}", elements.body);
    let items = elements.body["items"].as_array().unwrap();
    let types: Vec<&str> = items.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["START_EVENT", "SERVICE_TASK"],
        "{:?}",
        elements.body
    );
    assert_eq!(items[0]["state"], "COMPLETED");
    assert!(items[0]["endDate"].is_string());
    assert_eq!(items[1]["state"], "ACTIVE");
    assert_eq!(items[1]["hasIncident"], true);
    assert_eq!(items[1]["incidentKey"], incident_key.as_str());
    let task_key = items[1]["elementInstanceKey"].as_str().unwrap();
    let task = gateway
        .get(&format!("/v2/element-instances/{task_key}"))
        .await;
    assert_eq!(task.status, 200, "{:?}", task.body);
    assert_eq!(task.body["elementId"], items[1]["elementId"]);
    let missing = gateway.get("/v2/element-instances/2251799813685999").await;
    assert_eq!(missing.status, 404, "{:?}", missing.body);

    // Resolving while the job still has no retries raises a new incident in Zeebe; give
    // it retries first.
    let updated = gateway
        .patch(
            &format!("/v2/jobs/{job_key}"),
            json!({"changeset": {"retries": 2}}),
        )
        .await;
    assert_eq!(updated.status, 204, "{:?}", updated.body);
    let resolved = gateway
        .post(
            &format!("/v2/incidents/{incident_key}/resolution"),
            json!({}),
        )
        .await;
    assert_eq!(resolved.status, 204, "{:?}", resolved.body);

    // The resolved incident stays, as RESOLVED; no incident is open.
    let search = gateway
        .post(
            "/v2/incidents/search",
            json!({"filter": {"processInstanceKey": {"$eq": instance}, "state": "ACTIVE"}}),
        )
        .await;
    assert_eq!(search.body["page"]["totalItems"], 0, "{:?}", search.body);
    let one = gateway.get(&format!("/v2/incidents/{incident_key}")).await;
    assert_eq!(one.body["state"], "RESOLVED", "{:?}", one.body);
    // The job's history: failed, then its retries updated.
    let job = gateway
        .post("/v2/jobs/search", json!({"filter": {"jobKey": job_key}}))
        .await;
    assert_eq!(
        job.body["items"][0]["state"], "RETRIES_UPDATED",
        "{:?}",
        job.body
    );
    assert_eq!(
        job.body["items"][0]["errorMessage"],
        "the printer is on fire"
    );
    let jobs = activate(&gateway, "flaky", 1).await;
    assert_eq!(jobs.len(), 1, "the job is activatable again");
    assert_eq!(jobs[0]["retries"], 2);

    // Resolving it again: it no longer exists.
    let path = format!("/v2/incidents/{incident_key}/resolution");
    let again = gateway.post(&path, json!({})).await;
    again.assert_problem(404, "NOT_FOUND", &path, &[&incident_key]);
    gateway.stop().await;
}

#[tokio::test]
async fn throw_error_without_a_catch_raises_an_incident() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "erroring", "err").await;
    let instance = create(&gateway, "erroring", json!({})).await;
    let job_key = activate(&gateway, "err", 1).await[0]["jobKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let thrown = gateway
        .post(
            &format!("/v2/jobs/{job_key}/error"),
            json!({"errorCode": "NO_STOCK", "errorMessage": "none left"}),
        )
        .await;
    assert_eq!(thrown.status, 204, "{:?}", thrown.body);
    let search = gateway
        .post(
            "/v2/incidents/search",
            json!({"filter": {"processInstanceKey": instance}}),
        )
        .await;
    assert_eq!(
        search.body["items"][0]["errorType"], "UNHANDLED_ERROR_EVENT",
        "{:?}",
        search.body
    );
    gateway.stop().await;
}

#[tokio::test]
async fn variables_can_be_set_and_searched() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "vars", "v").await;
    let instance = create(&gateway, "vars", json!({"a": 1, "nested": {"x": [1, 2]}})).await;

    let set = gateway
        .put(
            &format!("/v2/element-instances/{instance}/variables"),
            json!({"variables": {"b": "two"}, "local": true}),
        )
        .await;
    assert_eq!(set.status, 204, "{:?}", set.body);

    let search = gateway
        .post(
            "/v2/variables/search",
            json!({"filter": {"processInstanceKey": instance},
                   "sort": [{"field": "name"}]}),
        )
        .await;
    assert_eq!(search.status, 200, "{:?}", search.body);
    let items = search.body["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", "nested"]);
    assert_eq!(items[1]["value"], "\"two\"");
    assert_eq!(items[2]["value"], r#"{"x":[1,2]}"#);
    assert_eq!(items[0]["scopeKey"], instance.as_str());
    assert!(
        items[0]["variableKey"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .is_ok()
    );

    let one = gateway
        .post(
            "/v2/variables/search",
            json!({"filter": {"processInstanceKey": instance, "name": "b"}}),
        )
        .await;
    assert_eq!(one.body["page"]["totalItems"], 1);
    let key = one.body["items"][0]["variableKey"].as_str().unwrap();
    let read = gateway.get(&format!("/v2/variables/{key}")).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(read.body["name"], "b");
    assert_eq!(read.body["value"], "\"two\"");
    let missing = gateway.get("/v2/variables/2251799813685999").await;
    assert_eq!(missing.status, 404, "{:?}", missing.body);
    // No filter needed: every variable of every instance.
    let all = gateway.post("/v2/variables/search", json!({})).await;
    assert_eq!(all.body["page"]["totalItems"], 3, "{:?}", all.body);

    // The variables reach the job.
    let jobs = activate(&gateway, "v", 1).await;
    assert_eq!(jobs[0]["variables"]["b"], "two");
    gateway.stop().await;
}

#[tokio::test]
async fn cancel_terminates_the_instance() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "cancellable", "never").await;
    let instance = create(&gateway, "cancellable", json!({})).await;
    let path = format!("/v2/process-instances/{instance}/cancellation");
    let cancelled = gateway.post(&path, json!({})).await;
    assert_eq!(cancelled.status, 204, "{:?}", cancelled.body);
    let state = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(state.body["state"], "TERMINATED", "{:?}", state.body);
    // Cancelling a finished instance is rejected.
    let again = gateway.post(&path, json!({})).await;
    again.assert_problem(404, "NOT_FOUND", &path, &["CANCEL", &instance]);
    gateway.stop().await;
}

#[tokio::test]
async fn published_message_completes_a_waiting_instance() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let xml = message_process("shipping", "shipped", "o-7");
    let reply = gateway.deploy(&[("shipping.bpmn", xml.as_bytes())]).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let instance = create(&gateway, "shipping", json!({"orderId": "o-7"})).await;

    let published = gateway
        .post(
            "/v2/messages/publication",
            json!({"name": "shipped", "correlationKey": "o-7", "timeToLive": 0,
                   "variables": {"carrier": "DHL"}}),
        )
        .await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    assert!(
        published.body["messageKey"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .is_ok()
    );
    assert_eq!(published.body["tenantId"], "<default>");

    let state = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(state.body["state"], "COMPLETED", "{:?}", state.body);
    gateway.stop().await;
}

#[tokio::test]
async fn job_timeout_update_and_topology() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "slow", "slow").await;
    create(&gateway, "slow", json!({})).await;
    let job = activate(&gateway, "slow", 1).await.remove(0);
    let key = job["jobKey"].as_str().unwrap();
    let deadline = job["deadline"].as_i64().unwrap();

    // A shorter timeout makes the job activatable again once it passes.
    let updated = gateway
        .patch(
            &format!("/v2/jobs/{key}"),
            json!({"changeset": {"timeout": 100}}),
        )
        .await;
    assert_eq!(updated.status, 204, "{:?}", updated.body);
    let mut again = Vec::new();
    for _ in 0..250 {
        again = activate(&gateway, "slow", 1).await;
        if !again.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(again.len(), 1, "the job timed out and came back");
    assert_eq!(again[0]["jobKey"], key);
    assert!(again[0]["deadline"].as_i64().unwrap() != deadline);

    let topology = gateway.get("/v2/topology").await;
    assert_eq!(topology.status, 200);
    assert_eq!(topology.body["partitionsCount"], 1);
    assert_eq!(topology.body["clusterSize"], 1);
    assert_eq!(
        topology.body["brokers"][0]["partitions"][0]["role"],
        "leader"
    );
    assert_eq!(
        topology.body["brokers"][0]["partitions"][0]["health"],
        "healthy"
    );
    assert!(topology.body["gatewayVersion"].is_string());
    let status = gateway.get("/v2/status").await;
    assert_eq!(status.status, 204);
    gateway.stop().await;
}

#[tokio::test]
async fn a_broadcast_signal_reaches_instances_on_every_partition() {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    let xml = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../engine/tests/fixtures/elements/signal-catch.bpmn"),
    )
    .expect("fixture");
    let reply = gateway
        .deploy(&[("signal-catch.bpmn", xml.as_slice())])
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let mut instances = Vec::new();
    for _ in 0..2 {
        instances.push(create(&gateway, "signal-catch", json!({})).await);
    }
    assert_ne!(
        instances[0].parse::<i64>().unwrap() >> 51,
        instances[1].parse::<i64>().unwrap() >> 51,
        "one instance per partition"
    );

    let path = "/v2/signals/broadcast";
    for body in [
        json!({}),
        json!({"signalName": ""}),
        json!({"signalName": "go", "variables": [1]}),
        json!({"signalName": "go", "tenantId": "other"}),
        json!({"signalName": "go", "correlationKey": "x"}),
    ] {
        let reply = gateway.post(path, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {:?}", reply.body);
    }
    assert!(activate(&gateway, "after-go", 10).await.is_empty());

    let reply = gateway
        .post(path, json!({"signalName": "go", "variables": {"speed": 2}}))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["tenantId"], "<default>");
    assert!(
        reply.body["signalKey"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .is_ok()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut jobs = Vec::new();
    while jobs.len() < 2 {
        assert!(Instant::now() < deadline, "only {} caught it", jobs.len());
        jobs.extend(activate(&gateway, "after-go", 10).await);
    }
    assert!(
        jobs.iter().all(|j| j["variables"]["speed"] == 2),
        "{jobs:?}"
    );
    gateway.stop().await;
}

/// A model as Camunda Modeler saves it: named elements, an unnamed end event, and the
/// diagram interchange section after the process.
const NAMED_ORDER_PROCESS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" xmlns:di="http://www.omg.org/spec/DD/20100524/DI" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:modeler="http://camunda.org/schema/modeler/1.0" id="Definitions_named" targetNamespace="http://bpmn.io/schema/bpmn" exporter="Camunda Modeler" exporterVersion="5.31.0" modeler:executionPlatform="Camunda Cloud" modeler:executionPlatformVersion="8.7.0">
  <bpmn:process id="named-order" name="Order handling" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1" name="Order received">
      <bpmn:outgoing>Flow_1</bpmn:outgoing>
    </bpmn:startEvent>
    <bpmn:serviceTask id="Activity_pack" name="Pack the order">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="named-pack" />
      </bpmn:extensionElements>
      <bpmn:incoming>Flow_1</bpmn:incoming>
      <bpmn:outgoing>Flow_2</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:endEvent id="Event_end">
      <bpmn:incoming>Flow_2</bpmn:incoming>
    </bpmn:endEvent>
    <bpmn:sequenceFlow id="Flow_1" sourceRef="StartEvent_1" targetRef="Activity_pack" />
    <bpmn:sequenceFlow id="Flow_2" sourceRef="Activity_pack" targetRef="Event_end" />
  </bpmn:process>
  <bpmndi:BPMNDiagram id="BPMNDiagram_1">
    <bpmndi:BPMNPlane id="BPMNPlane_1" bpmnElement="named-order">
      <bpmndi:BPMNShape id="StartEvent_1_di" bpmnElement="StartEvent_1">
        <dc:Bounds x="152" y="102" width="36" height="36" />
        <bpmndi:BPMNLabel><dc:Bounds x="133" y="145" width="75" height="14" /></bpmndi:BPMNLabel>
      </bpmndi:BPMNShape>
      <bpmndi:BPMNShape id="Activity_pack_di" bpmnElement="Activity_pack">
        <dc:Bounds x="240" y="80" width="100" height="80" />
      </bpmndi:BPMNShape>
      <bpmndi:BPMNShape id="Event_end_di" bpmnElement="Event_end">
        <dc:Bounds x="392" y="102" width="36" height="36" />
      </bpmndi:BPMNShape>
      <bpmndi:BPMNEdge id="Flow_1_di" bpmnElement="Flow_1">
        <di:waypoint x="188" y="120" /><di:waypoint x="240" y="120" />
      </bpmndi:BPMNEdge>
      <bpmndi:BPMNEdge id="Flow_2_di" bpmnElement="Flow_2">
        <di:waypoint x="340" y="120" /><di:waypoint x="392" y="120" />
      </bpmndi:BPMNEdge>
    </bpmndi:BPMNPlane>
  </bpmndi:BPMNDiagram>
</bpmn:definitions>"#;

#[tokio::test]
async fn element_instances_show_the_names_drawn_in_the_model() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let deployed = gateway
        .deploy(&[("named-order.bpmn", NAMED_ORDER_PROCESS.as_bytes())])
        .await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let instance = create(&gateway, "named-order", json!({})).await;
    let job = activate(&gateway, "named-pack", 1).await;
    let job_key = job[0]["jobKey"].as_str().unwrap();
    let completed = gateway
        .post(&format!("/v2/jobs/{job_key}/completion"), json!({}))
        .await;
    assert_eq!(completed.status, 204, "{:?}", completed.body);

    let elements = gateway
        .post(
            "/v2/element-instances/search",
            json!({"filter": {"processInstanceKey": instance}, "sort": [{"field": "startDate"}]}),
        )
        .await;
    assert_eq!(elements.status, 200, "{:?}", elements.body);
    let items = elements.body["items"].as_array().unwrap();
    let shown: Vec<(&str, &str)> = items
        .iter()
        .map(|e| {
            (
                e["elementId"].as_str().unwrap(),
                e["elementName"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("StartEvent_1", "Order received"),
            ("Activity_pack", "Pack the order"),
            // No name drawn: the id stands in, as Camunda shows it.
            ("Event_end", "Event_end"),
        ],
        "{:?}",
        elements.body
    );

    // The same by key, and a filter on the name.
    let task_key = items[1]["elementInstanceKey"].as_str().unwrap();
    let task = gateway
        .get(&format!("/v2/element-instances/{task_key}"))
        .await;
    assert_eq!(task.status, 200, "{:?}", task.body);
    assert_eq!(task.body["elementName"], "Pack the order");
    let by_name = gateway
        .post(
            "/v2/element-instances/search",
            json!({"filter": {"processInstanceKey": instance, "elementName": "Pack the order"}}),
        )
        .await;
    assert_eq!(by_name.status, 200, "{:?}", by_name.body);
    assert_eq!(by_name.body["page"]["totalItems"], 1, "{:?}", by_name.body);
    assert_eq!(by_name.body["items"][0]["elementId"], "Activity_pack");
    gateway.stop().await;
}
