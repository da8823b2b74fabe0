//! Resource deletion against a real `rill standalone` (two partitions): Camunda's REST
//! `POST /v2/resources/{key}/deletion` and Zeebe's gRPC `DeleteResource` delete a
//! decision requirements graph, a form and process definitions on both partitions; an
//! unknown key is not found, changing nothing. A process definition with running
//! instances is deleted while they finish; the previous version is the latest again,
//! with its timer and message start events.

mod support;

use std::time::{Duration, Instant};

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::*;
use serde_json::{Value, json};
use support::{Api, Standalone, examples, run_client_script};
use tonic::Code;
use tonic::transport::Channel;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn entry<'a>(deployment: &'a Value, kind: &str) -> &'a Value {
    deployment["deployments"]
        .as_array()
        .expect("deployments")
        .iter()
        .find_map(|entry| entry.get(kind))
        .unwrap_or_else(|| panic!("no {kind} in {deployment}"))
}

async fn connect(rill: &Standalone) -> GatewayClient<Channel> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match GatewayClient::connect(rill.grpc()).await {
            Ok(client) => return client,
            Err(error) => {
                assert!(Instant::now() < deadline, "cannot connect: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The version of `menu` that evaluations answer with, once every partition (they are
/// taken round-robin) answers `expected`.
async fn wait_menu_version(api: &Api, expected: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut agreeing = 0;
    while agreeing < 4 {
        let (s, b) = api
            .post(
                "/v2/decision-definitions/evaluation",
                json!({"decisionDefinitionId": "menu", "variables": {"month": 1, "guestCount": 12}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        if b["decisionDefinitionVersion"] == expected {
            agreeing += 1;
        } else {
            agreeing = 0;
            assert!(Instant::now() < deadline, "menu stays at {b}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[test]
fn forms_decisions_and_processes_are_deleted_over_rest_and_grpc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let changed_dmn = dir.path().join("dish.dmn");
    let mut dmn = std::fs::read(examples().join("dish.dmn")).expect("dish.dmn");
    dmn.extend_from_slice(b"\n<!-- version 2 -->\n");
    std::fs::write(&changed_dmn, dmn).expect("write dmn");
    let form = dir.path().join("invoice.form");
    std::fs::write(
        &form,
        json!({"id": "invoice", "type": "default", "components": []}).to_string(),
    )
    .expect("write form");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, first) = api
            .deploy(&[
                &examples().join("dinner.bpmn"),
                &examples().join("dish.dmn"),
            ])
            .await
            .unwrap();
        assert_eq!(s, 200, "{first}");
        let process_key = entry(&first, "processDefinition")["processDefinitionKey"]
            .as_str()
            .unwrap()
            .to_owned();
        let (s, second) = api.deploy(&[&changed_dmn, &form]).await.unwrap();
        assert_eq!(s, 200, "{second}");
        let drg = entry(&second, "decisionRequirements");
        assert_eq!(drg["version"], 2);
        let drg_key = drg["decisionRequirementsKey"].as_str().unwrap().to_owned();
        let form_key = entry(&second, "form")["formKey"]
            .as_str()
            .unwrap()
            .to_owned();
        wait_menu_version(&api, 2).await;

        // REST: the DRG v2 goes, on both partitions; version 1 answers again.
        let path = format!("/v2/resources/{drg_key}/deletion");
        let (s, b) = api.post(&path, json!({})).await.unwrap();
        assert_eq!(s, 200, "{b}");
        wait_menu_version(&api, 1).await;
        let (s, b) = api.post(&path, json!({})).await.unwrap();
        assert_eq!(s, 404, "{b}");

        let (s, b) = api
            .post(
                "/v2/resources/2251799813685999/deletion",
                json!({"operationReference": 1}),
            )
            .await
            .unwrap();
        assert_eq!(s, 404, "{b}");
        let (s, b) = api.post(&path, json!({"nope": true})).await.unwrap();
        assert_eq!(s, 400, "{b}");

        // gRPC: the form goes; the process definition is refused the same way.
        let mut client = connect(&rill).await;
        let form_key: i64 = form_key.parse().unwrap();
        client
            .delete_resource(DeleteResourceRequest {
                resource_key: form_key,
                operation_reference: None,
            })
            .await
            .expect("form deleted");
        let again = client
            .delete_resource(DeleteResourceRequest {
                resource_key: form_key,
                operation_reference: None,
            })
            .await
            .unwrap_err();
        assert_eq!(again.code(), Code::NotFound, "{again:?}");
        // The process definition (no instance runs) goes: creating it is not found on
        // every partition once the deletion reached them.
        client
            .delete_resource(DeleteResourceRequest {
                resource_key: process_key.parse().unwrap(),
                operation_reference: None,
            })
            .await
            .expect("process definition deleted");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut not_found = 0;
        while not_found < 4 {
            let (s, b) = api
                .post(
                    "/v2/process-instances",
                    json!({"processDefinitionId": "dinner", "variables": {"month": 1}}),
                )
                .await
                .unwrap();
            if s == 404 {
                not_found += 1;
            } else {
                assert_eq!(s, 200, "{b}");
                not_found = 0;
                assert!(Instant::now() < deadline, "dinner is still created: {b}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }

        // The form's version 1 is not given out again: a new deployment makes version 2.
        let (s, third) = api.deploy(&[&form]).await.unwrap();
        assert_eq!(s, 200, "{third}");
        assert_eq!(entry(&third, "form")["version"], 2);
        rill.terminate(Duration::from_secs(20));
    });
}

/// Version 1 of `del-order`: a none start (job `del-one`), a message start on `del-go`
/// (job `del-by-message`) and a timer start at a date in the past, which fires whenever
/// it is armed (job `del-by-timer`).
const ORDER_V1: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="D1" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="del-order" isExecutable="true">
    <bpmn:startEvent id="Start" />
    <bpmn:startEvent id="Go"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
    <bpmn:startEvent id="Tick"><bpmn:timerEventDefinition><bpmn:timeDate xsi:type="bpmn:tFormalExpression">2020-01-01T00:00:00Z</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:startEvent>
    <bpmn:serviceTask id="One"><bpmn:extensionElements><zeebe:taskDefinition type="del-one" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:serviceTask id="ByMessage"><bpmn:extensionElements><zeebe:taskDefinition type="del-by-message" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:serviceTask id="ByTimer"><bpmn:extensionElements><zeebe:taskDefinition type="del-by-timer" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="E1" />
    <bpmn:endEvent id="E2" />
    <bpmn:endEvent id="E3" />
    <bpmn:sequenceFlow id="f1" sourceRef="Start" targetRef="One" />
    <bpmn:sequenceFlow id="f2" sourceRef="One" targetRef="E1" />
    <bpmn:sequenceFlow id="f3" sourceRef="Go" targetRef="ByMessage" />
    <bpmn:sequenceFlow id="f4" sourceRef="ByMessage" targetRef="E2" />
    <bpmn:sequenceFlow id="f5" sourceRef="Tick" targetRef="ByTimer" />
    <bpmn:sequenceFlow id="f6" sourceRef="ByTimer" targetRef="E3" />
  </bpmn:process>
  <bpmn:message id="M" name="del-go" />
</bpmn:definitions>"#;

/// Version 2 of `del-order`: only a none start, then job `del-two`.
const ORDER_V2: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D2" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="del-order" isExecutable="true">
    <bpmn:startEvent id="Start" />
    <bpmn:serviceTask id="Two"><bpmn:extensionElements><zeebe:taskDefinition type="del-two" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="E" />
    <bpmn:sequenceFlow id="f1" sourceRef="Start" targetRef="Two" />
    <bpmn:sequenceFlow id="f2" sourceRef="Two" targetRef="E" />
  </bpmn:process>
</bpmn:definitions>"#;

/// The jobs of `job_type` activated until `count` were, within `timeout`.
async fn activate(api: &Api, job_type: &str, count: usize, timeout: Duration) -> Vec<Value> {
    let deadline = Instant::now() + timeout;
    let mut jobs = Vec::new();
    while jobs.len() < count {
        let (s, b) = api
            .post(
                "/v2/jobs/activation",
                json!({"type": job_type, "timeout": 60000, "maxJobsToActivate": count - jobs.len(), "requestTimeout": 1000}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        jobs.extend(b["jobs"].as_array().cloned().unwrap_or_default());
        assert!(
            jobs.len() >= count || Instant::now() < deadline,
            "{} '{job_type}' job(s) of {count}: {jobs:?}",
            jobs.len()
        );
    }
    jobs
}

async fn complete(api: &Api, job: &Value) {
    let key = job["jobKey"].as_str().unwrap();
    let (s, b) = api
        .post(&format!("/v2/jobs/{key}/completion"), json!({}))
        .await
        .unwrap();
    assert_eq!(s, 204, "{b}");
}

#[test]
fn a_process_definition_with_running_instances_is_deleted_over_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1_file = dir.path().join("del-order.bpmn");
    let v2_file = dir.path().join("del-order-2.bpmn");
    std::fs::write(&v1_file, ORDER_V1).expect("write v1");
    std::fs::write(&v2_file, ORDER_V2).expect("write v2");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, first) = api.deploy(&[&v1_file]).await.unwrap();
        assert_eq!(s, 200, "{first}");
        let v1 = entry(&first, "processDefinition")["processDefinitionKey"]
            .as_str()
            .unwrap()
            .to_owned();
        // Version 1's timer fired at its deployment.
        let fired = activate(&api, "del-by-timer", 1, Duration::from_secs(20)).await;
        complete(&api, &fired[0]).await;
        let (s, second) = api.deploy(&[&v2_file]).await.unwrap();
        assert_eq!(s, 200, "{second}");
        let v2 = entry(&second, "processDefinition")["processDefinitionKey"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            entry(&second, "processDefinition")["processDefinitionVersion"],
            2
        );

        // Two running instances of version 2 (once it is on both partitions).
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut running = Vec::new();
        while running.len() < 2 {
            let (s, b) = api
                .post(
                    "/v2/process-instances",
                    json!({"processDefinitionId": "del-order"}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            let key = b["processInstanceKey"].as_str().unwrap().to_owned();
            if b["processDefinitionVersion"] == 2 {
                running.push(key);
            } else {
                assert!(
                    Instant::now() < deadline,
                    "version 2 is not the latest: {b}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let old_jobs = activate(&api, "del-two", 2, Duration::from_secs(20)).await;

        // Deleted while they run: accepted.
        let (s, b) = api
            .post(&format!("/v2/resources/{v2}/deletion"), json!({}))
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");

        // Version 1 is the latest again on every partition (creation goes round-robin).
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut agreeing = 0;
        while agreeing < 4 {
            let (s, b) = api
                .post(
                    "/v2/process-instances",
                    json!({"processDefinitionId": "del-order"}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            if b["processDefinitionVersion"] == 1 {
                assert_eq!(b["processDefinitionKey"], v1.as_str());
                agreeing += 1;
            } else {
                agreeing = 0;
                assert!(
                    Instant::now() < deadline,
                    "version 2 is still the latest: {b}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        // No new instance of version 2, by key or by version, on either partition.
        for _ in 0..2 {
            let (s, b) = api
                .post("/v2/process-instances", json!({"processDefinitionKey": v2}))
                .await
                .unwrap();
            assert_eq!(s, 404, "{b}");
            assert!(
                b["detail"].as_str().unwrap().contains("it is deleted")
                    || b["detail"].as_str().unwrap().contains("none found"),
                "{b}"
            );
            let (s, b) = api
                .post(
                    "/v2/process-instances",
                    json!({"processDefinitionId": "del-order", "processDefinitionVersion": 2}),
                )
                .await
                .unwrap();
            assert_eq!(s, 404, "{b}");
        }

        // Version 1's start events are back: its timer fired again, a message starts it.
        let fired = activate(&api, "del-by-timer", 1, Duration::from_secs(20)).await;
        assert_eq!(fired[0]["processDefinitionKey"], v1.as_str());
        let (s, b) = api
            .post(
                "/v2/messages/publication",
                json!({"name": "del-go", "correlationKey": "k-1"}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let started = activate(&api, "del-by-message", 1, Duration::from_secs(20)).await;
        assert_eq!(started[0]["processDefinitionKey"], v1.as_str());

        // The old instances run to their end on version 2.
        for job in &old_jobs {
            assert_eq!(job["processDefinitionKey"], v2.as_str());
            complete(&api, job).await;
        }
        api.wait_completed(&running, Duration::from_secs(20), || rill.log_text())
            .await;
        // Then version 2 is gone: deleting it again finds nothing.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (s, b) = api
                .post(&format!("/v2/resources/{v2}/deletion"), json!({}))
                .await
                .unwrap();
            if s == 404 {
                break;
            }
            assert_eq!(s, 409, "{b}");
            assert!(Instant::now() < deadline, "still deleting: {b}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A new deployment does not reuse the number 2.
        let (s, third) = api.deploy(&[&v2_file]).await.unwrap();
        assert_eq!(s, 200, "{third}");
        assert_eq!(
            entry(&third, "processDefinition")["processDefinitionVersion"],
            3
        );
        rill.terminate(Duration::from_secs(20));
    });
}

/// `@camunda8/sdk` 8.8's `ZeebeGrpcClient.deleteResource` (unmodified, pinned in
/// `tests/clients/zeebe-node/package.json`) deletes a process definition while an
/// instance of it runs (`tests/clients/zeebe-node/delete_flow.mjs`).
#[test]
fn the_camunda_npm_grpc_client_deletes_a_process_definition() {
    run_client_script(
        "zeebe-node/run_delete.sh",
        "RILL_ZEEBE_NODE_DIR",
        "zeebe-node-clients",
    );
}
