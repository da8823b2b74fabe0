//! Process instance modification against a real `rill standalone` (two partitions):
//! Camunda's REST `POST /v2/process-instances/{key}/modification` and Zeebe's gRPC
//! `ModifyProcessInstance` move a token from one task to the next, and a bad
//! instruction is refused with the status each API uses, changing nothing. The
//! `operationReference` a client gives is on every record its command writes.

mod support;

use std::time::{Duration, Instant};

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::modify_process_instance_request::{
    ActivateInstruction, TerminateInstruction, VariableInstruction,
};
use rill_gateway::grpc::proto::*;
use serde_json::{Value, json};
use support::{Api, Standalone, run_client_script};
use tonic::Code;
use tonic::transport::Channel;

const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="modify-me" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="First"><bpmn:extensionElements><zeebe:taskDefinition type="mod-first" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:serviceTask id="Second"><bpmn:extensionElements><zeebe:taskDefinition type="mod-second" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="First" />
    <bpmn:sequenceFlow id="f2" sourceRef="First" targetRef="Second" />
    <bpmn:sequenceFlow id="f3" sourceRef="Second" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Activates the one job of `job_type` (waiting for it); returns the job.
async fn one_job(api: &Api, job_type: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, b) = api
            .post(
                "/v2/jobs/activation",
                json!({"type": job_type, "timeout": 60000, "maxJobsToActivate": 1, "requestTimeout": 1000}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        if let Some(job) = b["jobs"].as_array().and_then(|jobs| jobs.first()) {
            return job.clone();
        }
        assert!(Instant::now() < deadline, "no job of type {job_type}");
    }
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

#[test]
fn a_token_moves_over_rest_and_grpc_and_bad_instructions_change_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("modify-me.bpmn");
    std::fs::write(&model, MODEL).expect("write model");
    let records = dir.path().join("records.jsonl");
    let export = format!("exporters.jsonl.path={}", records.display());
    runtime().block_on(async {
        let mut rill = Standalone::start(
            &dir.path().join("data"),
            &["cluster.partitions-count=2", &export],
        );
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api.deploy(&[&model]).await.unwrap();
        assert_eq!(s, 200, "{b}");

        // REST: skip First, with a variable for Second.
        let instance = api.create("modify-me", json!({})).await;
        let first = one_job(&api, "mod-first").await;
        assert_eq!(first["processInstanceKey"], instance.as_str());
        let first_instance = first["elementInstanceKey"].as_str().unwrap().to_owned();
        let path = format!("/v2/process-instances/{instance}/modification");

        let (s, b) = api
            .post(
                &path,
                json!({"activateInstructions": [{"elementId": "Nope"}]}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");
        assert!(b["detail"].as_str().unwrap().contains("'Nope'"), "{b}");
        // Refused by the engine: the rejection record carries the reference.
        let (s, b) = api
            .post(
                &path,
                json!({"operationReference": 8, "activateInstructions": [{"elementId": "Nope"}]}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");
        let (s, b) = api
            .post(
                &path,
                json!({"operationReference": 0, "activateInstructions": [{"elementId": "Second"}]}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");
        assert!(
            b["detail"].as_str().unwrap().contains("operationReference"),
            "{b}"
        );
        let (s, b) = api
            .post(
                &path,
                json!({"activateInstructions": [{"elementId": "start"}]}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");
        assert!(b["detail"].as_str().unwrap().contains("START_EVENT"), "{b}");
        let (s, b) = api
            .post(
                "/v2/process-instances/2251799813685999/modification",
                json!({"activateInstructions": [{"elementId": "Second"}]}),
            )
            .await
            .unwrap();
        assert_eq!(s, 404, "{b}");
        let (s, b) = api
            .post(&path, json!({"moveInstructions": []}))
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");

        let (s, b) = api
            .post(
                &path,
                json!({
                    "operationReference": 7,
                    "activateInstructions": [{
                        "elementId": "Second",
                        "ancestorElementInstanceKey": "-1",
                        "variableInstructions": [{"variables": {"fixed": true}}]
                    }],
                    "terminateInstructions": [{"elementInstanceKey": first_instance}]
                }),
            )
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");
        let second = one_job(&api, "mod-second").await;
        assert_eq!(second["processInstanceKey"], instance.as_str());
        assert_eq!(second["variables"]["fixed"], true, "{second}");
        // First's job went with its element instance.
        let path = format!("/v2/jobs/{}/completion", first["jobKey"].as_str().unwrap());
        let (s, b) = api.post(&path, json!({})).await.unwrap();
        assert_eq!(s, 404, "{b}");
        let path = format!("/v2/jobs/{}/completion", second["jobKey"].as_str().unwrap());
        let (s, b) = api.post(&path, json!({})).await.unwrap();
        assert_eq!(s, 204, "{b}");
        let rest_instance = instance.clone();
        api.wait_completed(&[instance], Duration::from_secs(20), || rill.log_text())
            .await;

        // gRPC: the same move, on an instance of the other partition's turn.
        let mut client = connect(&rill).await;
        let instance = api.create("modify-me", json!({})).await;
        let first = one_job(&api, "mod-first").await;
        let instance_key: i64 = instance.parse().unwrap();
        let first_instance: i64 = first["elementInstanceKey"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let status = client
            .modify_process_instance(ModifyProcessInstanceRequest {
                process_instance_key: instance_key,
                activate_instructions: vec![ActivateInstruction {
                    element_id: "Second".into(),
                    ancestor_element_instance_key: instance_key + 1_000_000,
                    variable_instructions: vec![],
                }],
                terminate_instructions: vec![],
                operation_reference: None,
            })
            .await
            .expect_err("an unknown ancestor");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains("ancestor"), "{status:?}");
        let status = client
            .modify_process_instance(ModifyProcessInstanceRequest {
                process_instance_key: instance_key,
                activate_instructions: vec![ActivateInstruction {
                    element_id: "Second".into(),
                    ancestor_element_instance_key: -1,
                    variable_instructions: vec![VariableInstruction {
                        variables: "[1]".into(),
                        scope_id: String::new(),
                    }],
                }],
                terminate_instructions: vec![],
                operation_reference: None,
            })
            .await
            .expect_err("variables that are not an object");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(
            status.message().contains("variableInstructions[0]"),
            "{status:?}"
        );
        let status = client
            .modify_process_instance(ModifyProcessInstanceRequest {
                process_instance_key: instance_key,
                activate_instructions: vec![ActivateInstruction {
                    element_id: "Second".into(),
                    ancestor_element_instance_key: 0,
                    variable_instructions: vec![],
                }],
                terminate_instructions: vec![],
                operation_reference: Some(0),
            })
            .await
            .expect_err("a zero operation reference");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(
            status.message().contains("'operationReference'"),
            "{status:?}"
        );

        client
            .modify_process_instance(ModifyProcessInstanceRequest {
                process_instance_key: instance_key,
                activate_instructions: vec![ActivateInstruction {
                    element_id: "Second".into(),
                    ancestor_element_instance_key: 0,
                    variable_instructions: vec![VariableInstruction {
                        variables: r#"{"via":"grpc"}"#.into(),
                        scope_id: String::new(),
                    }],
                }],
                terminate_instructions: vec![TerminateInstruction {
                    element_instance_key: first_instance,
                }],
                operation_reference: Some(42),
            })
            .await
            .expect("modify over gRPC");
        let second = one_job(&api, "mod-second").await;
        assert_eq!(second["processInstanceKey"], instance.as_str());
        assert_eq!(second["variables"]["via"], "grpc", "{second}");
        let path = format!("/v2/jobs/{}/completion", second["jobKey"].as_str().unwrap());
        let (s, b) = api.post(&path, json!({})).await.unwrap();
        assert_eq!(s, 204, "{b}");
        let grpc_instance = instance.clone();
        api.wait_completed(&[instance], Duration::from_secs(20), || rill.log_text())
            .await;
        check_references(&records, &rest_instance, &grpc_instance).await;

        // Terminating the last element instance ends the instance.
        let instance = api.create("modify-me", json!({})).await;
        let first = one_job(&api, "mod-first").await;
        let status = client
            .modify_process_instance(ModifyProcessInstanceRequest {
                process_instance_key: instance.parse().unwrap(),
                activate_instructions: vec![],
                terminate_instructions: vec![TerminateInstruction {
                    element_instance_key: first["elementInstanceKey"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap(),
                }],
                operation_reference: None,
            })
            .await;
        assert!(status.is_ok(), "{status:?}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (s, b) = api
                .get(&format!("/v2/process-instances/{instance}"))
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            if b["state"] == "TERMINATED" {
                break;
            }
            assert!(Instant::now() < deadline, "not terminated: {b}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// The exported records (JSON lines) of the referenced modifications: each one's command,
/// what followed from it, and the rejection of the refused one carry its reference;
/// records of other commands carry -1.
async fn check_references(records: &std::path::Path, rest_instance: &str, grpc_instance: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let all: Vec<Value> = loop {
        let text = std::fs::read_to_string(records).unwrap_or_default();
        let all: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect();
        let modified = all
            .iter()
            .filter(|r| {
                r["valueType"] == "PROCESS_INSTANCE_MODIFICATION" && r["intent"] == "MODIFIED"
            })
            .count();
        if modified >= 2 {
            break all;
        }
        assert!(Instant::now() < deadline, "modifications not exported");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let shape = |reference: i64| -> Vec<(String, String, String)> {
        all.iter()
            .filter(|r| r["operationReference"] == reference)
            .map(|r| {
                (
                    r["recordType"].as_str().unwrap().to_owned(),
                    r["valueType"].as_str().unwrap().to_owned(),
                    r["intent"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let has =
        |shape: &[(String, String, String)], record_type: &str, value_type: &str, intent: &str| {
            shape
                .iter()
                .any(|(t, v, i)| t == record_type && v == value_type && i == intent)
        };
    for (reference, instance) in [(7, rest_instance), (42, grpc_instance)] {
        let written = shape(reference);
        for (record_type, value_type, intent) in [
            ("COMMAND", "PROCESS_INSTANCE_MODIFICATION", "MODIFY"),
            ("EVENT", "PROCESS_INSTANCE_MODIFICATION", "MODIFIED"),
            ("EVENT", "PROCESS_INSTANCE", "ELEMENT_TERMINATED"),
            ("EVENT", "JOB", "CANCELED"),
            ("EVENT", "PROCESS_INSTANCE", "ELEMENT_ACTIVATED"),
            ("EVENT", "JOB", "CREATED"),
        ] {
            assert!(
                has(&written, record_type, value_type, intent),
                "no {record_type} {value_type} {intent} with reference {reference}: {written:?}"
            );
        }
        let instance: i64 = instance.parse().unwrap();
        for record in all.iter().filter(|r| r["operationReference"] == reference) {
            assert_eq!(record["value"]["processInstanceKey"], instance, "{record}");
        }
        // The instance's other records (creation, the completed job...) carry none.
        assert!(
            all.iter()
                .filter(|r| r["value"]["processInstanceKey"] == instance)
                .filter(|r| r["valueType"] == "JOB" && r["intent"] == "COMPLETED")
                .all(|r| r["operationReference"] == -1)
        );
    }
    let rejected = shape(8);
    assert_eq!(
        rejected,
        vec![(
            "COMMAND_REJECTION".to_owned(),
            "PROCESS_INSTANCE_MODIFICATION".to_owned(),
            "MODIFY".to_owned()
        )]
    );
}

/// `@camunda8/sdk` 8.8's `ZeebeGrpcClient.modifyProcessInstance` (unmodified, pinned in
/// `tests/clients/zeebe-node/package.json`): a token moved with a variable, an unknown
/// element refused (`tests/clients/zeebe-node/modify_flow.mjs`).
#[test]
fn the_camunda_npm_grpc_client_modifies_an_instance() {
    run_client_script(
        "zeebe-node/run_modify.sh",
        "RILL_ZEEBE_NODE_DIR",
        "zeebe-node-clients",
    );
}
