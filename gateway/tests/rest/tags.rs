//! Process instance tags over REST, on two partitions with the history store: given at
//! creation (checked, 400 naming a bad tag), answered by creation, get and search, on
//! activated jobs and user tasks, and used as the `tags` filter of both searches.

use serde_json::{Value, json};

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, one_task_process};

const TASKS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="approval" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:userTask id="approve">
      <bpmn:extensionElements><zeebe:userTask /></bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
    </bpmn:userTask>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

async fn create_tagged(gateway: &TestGateway, process_id: &str, tags: Value) -> Value {
    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": process_id, "tags": tags}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body
}

async fn total(gateway: &TestGateway, path: &str, filter: Value) -> Value {
    let reply = gateway.post(path, json!({"filter": filter})).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body["page"]["totalItems"].clone()
}

#[tokio::test]
async fn tags_are_kept_answered_and_searched() {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    let deployed = gateway
        .deploy(&[
            ("approval.bpmn", TASKS.as_bytes()),
            ("pay.bpmn", one_task_process("pay", "charge").as_bytes()),
        ])
        .await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);

    // Two tagged approvals and one untagged, spread over both partitions.
    let first = create_tagged(&gateway, "approval", json!(["region:eu", "vip"])).await;
    assert_eq!(first["tags"], json!(["region:eu", "vip"]));
    create_tagged(&gateway, "approval", json!(["region:eu"])).await;
    create_tagged(&gateway, "approval", json!([])).await;
    let paid = create_tagged(&gateway, "pay", json!(["vip", "vip"])).await;
    assert_eq!(paid["tags"], json!(["vip"]), "a tag set: once each");

    let instances = "/v2/process-instances/search";
    assert_eq!(total(&gateway, instances, json!({})).await, 4);
    assert_eq!(
        total(&gateway, instances, json!({"tags": ["vip"]})).await,
        2
    );
    assert_eq!(
        total(&gateway, instances, json!({"tags": ["region:eu", "vip"]})).await,
        1
    );
    let key = first["processInstanceKey"].as_str().unwrap();
    let got = gateway.get(&format!("/v2/process-instances/{key}")).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.body["tags"], json!(["region:eu", "vip"]));

    let tasks = "/v2/user-tasks/search";
    assert_eq!(total(&gateway, tasks, json!({})).await, 3);
    assert_eq!(
        total(&gateway, tasks, json!({"tags": ["region:eu"]})).await,
        2
    );
    let vip = gateway
        .post(tasks, json!({"filter": {"tags": ["vip"]}}))
        .await;
    assert_eq!(vip.body["items"][0]["processInstanceKey"], key);
    assert_eq!(vip.body["items"][0]["tags"], json!(["region:eu", "vip"]));

    let activated = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "charge", "timeout": 30000, "maxJobsToActivate": 5,
                   "worker": "test", "requestTimeout": -1}),
        )
        .await;
    assert_eq!(activated.status, 200, "{:?}", activated.body);
    assert_eq!(activated.body["jobs"][0]["tags"], json!(["vip"]));
}

#[tokio::test]
async fn bad_tags_are_refused_naming_the_tag_and_create_nothing() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let deployed = gateway.deploy(&[("approval.bpmn", TASKS.as_bytes())]).await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let eleven: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
    for (tags, named) in [
        (json!(["fine", "-dash-first"]), "'-dash-first'"),
        (json!(["x".repeat(101)]), "100 characters or less"),
        (json!(eleven), "'11'"),
    ] {
        let reply = gateway
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "approval", "tags": tags}),
            )
            .await;
        reply.assert_problem(400, "INVALID_ARGUMENT", "/v2/process-instances", &[named]);
    }
    let reply = gateway
        .post("/v2/process-instances/search", json!({}))
        .await;
    assert_eq!(reply.body["page"]["totalItems"], 0, "{:?}", reply.body);
}
