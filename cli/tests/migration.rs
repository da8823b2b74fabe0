//! Process instance migration against a real `rill standalone` (two partitions):
//! Camunda's REST `POST /v2/process-instances/{key}/migration` and Zeebe's gRPC
//! `MigrateProcessInstance` move an instance waiting at a task of version 1 to version
//! 2, where it goes on; bad requests are refused with the status each API uses, and
//! change nothing.

mod support;

use std::time::{Duration, Instant};

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::migrate_process_instance_request::{
    MappingInstruction, MigrationPlan,
};
use rill_gateway::grpc::proto::*;
use serde_json::{Value, json};
use support::{Api, Standalone, run_client_script};
use tonic::Code;
use tonic::transport::Channel;

fn model(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="Definitions" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="migrate-me" isExecutable="true">
    <bpmn:startEvent id="start" />
    {body}
  </bpmn:process>
</bpmn:definitions>"#
    )
}

fn task(id: &str, job_type: &str) -> String {
    format!(
        r#"<bpmn:serviceTask id="{id}"><bpmn:extensionElements><zeebe:taskDefinition type="{job_type}" /></bpmn:extensionElements></bpmn:serviceTask>"#
    )
}

/// Version 1: start → A (`mig-a`) → end.
fn version_1() -> String {
    model(&format!(
        r#"{}<bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="A" />
    <bpmn:sequenceFlow id="f2" sourceRef="A" targetRef="end" />"#,
        task("A", "mig-a")
    ))
}

/// Version 2: start → A2 (`mig-a`) → B (`mig-b`) → end.
fn version_2() -> String {
    model(&format!(
        r#"{}{}<bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="A2" />
    <bpmn:sequenceFlow id="f2" sourceRef="A2" targetRef="B" />
    <bpmn:sequenceFlow id="f3" sourceRef="B" targetRef="end" />"#,
        task("A2", "mig-a"),
        task("B", "mig-b")
    ))
}

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

/// Deploys one model file; returns its process definition key.
async fn deploy(api: &Api, path: &std::path::Path) -> String {
    let (s, b) = api.deploy(&[path]).await.unwrap();
    assert_eq!(s, 200, "{b}");
    b["deployments"][0]["processDefinition"]["processDefinitionKey"]
        .as_str()
        .unwrap_or_else(|| panic!("no definition key in {b}"))
        .to_owned()
}

/// Activates the `mig-a` jobs of both instances (waiting for them); returns them in the
/// order of `instances`.
async fn jobs_at_a(api: &Api, instances: [&str; 2]) -> [Value; 2] {
    let mut found: Vec<Value> = Vec::new();
    while found.len() < 2 {
        found.push(one_job(api, "mig-a").await);
    }
    let of = |instance: &str| {
        found
            .iter()
            .find(|job| job["processInstanceKey"] == instance)
            .unwrap_or_else(|| panic!("no job of {instance} in {found:?}"))
            .clone()
    };
    let jobs = [of(instances[0]), of(instances[1])];
    for job in &jobs {
        assert_eq!(job["elementId"], "A");
    }
    jobs
}

async fn definition_of(api: &Api, instance: &str) -> Value {
    let (s, b) = api
        .get(&format!("/v2/process-instances/{instance}"))
        .await
        .unwrap();
    assert_eq!(s, 200, "{b}");
    b["processDefinitionKey"].clone()
}

#[test]
fn an_instance_moves_to_version_2_over_rest_and_grpc_and_bad_requests_change_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1_file = dir.path().join("migrate-me-v1.bpmn");
    let v2_file = dir.path().join("migrate-me-v2.bpmn");
    std::fs::write(&v1_file, version_1()).expect("write model");
    std::fs::write(&v2_file, version_2()).expect("write model");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let v1 = deploy(&api, &v1_file).await;
        let rest_instance = api.create("migrate-me", json!({})).await;
        let grpc_instance = api.create("migrate-me", json!({})).await;
        let [rest_job, grpc_job] = jobs_at_a(&api, [&rest_instance, &grpc_instance]).await;
        let v2 = deploy(&api, &v2_file).await;
        assert_ne!(v1, v2);

        // REST: each bad request is refused and leaves the instance on version 1.
        let path = format!("/v2/process-instances/{rest_instance}/migration");
        let mapping = json!([{"sourceElementId": "A", "targetElementId": "A2"}]);
        let bad: Vec<(String, Value, u16, &str)> = vec![
            (
                path.clone(),
                json!({"targetProcessDefinitionKey": v2, "mappingInstructions": [{"sourceElementId": "Nope", "targetElementId": "A2"}]}),
                400,
                "non-existing source element id 'Nope'",
            ),
            (
                path.clone(),
                json!({"targetProcessDefinitionKey": v2, "mappingInstructions": []}),
                409,
                "no mapping instruction defined for active element with id 'A'",
            ),
            (
                path.clone(),
                json!({"targetProcessDefinitionKey": v2, "mappingInstructions": [{"sourceElementId": "A", "targetElementId": "end"}]}),
                409,
                "different type 'END_EVENT'",
            ),
            (
                path.clone(),
                json!({"targetProcessDefinitionKey": "2251799813685999", "mappingInstructions": mapping}),
                404,
                "no process definition found with key '2251799813685999'",
            ),
            (
                "/v2/process-instances/2251799813685998/migration".to_owned(),
                json!({"targetProcessDefinitionKey": v2, "mappingInstructions": mapping}),
                404,
                "no process instance found with key '2251799813685998'",
            ),
            (
                path.clone(),
                json!({"targetProcessDefinitionKey": v2, "mappingInstructions": [{"sourceElementId": "", "targetElementId": "A2"}]}),
                400,
                "mappingInstructions[0]",
            ),
            (
                path.clone(),
                json!({"mappingInstructions": mapping}),
                400,
                "targetProcessDefinitionKey",
            ),
        ];
        for (path, body, status, detail) in bad {
            let (s, b) = api.post(&path, body.clone()).await.unwrap();
            assert_eq!(s, status, "{body} → {b}");
            assert!(
                b["detail"].as_str().unwrap_or_default().contains(detail),
                "{body} → {b}"
            );
        }
        assert_eq!(definition_of(&api, &rest_instance).await, v1.as_str());

        let (s, b) = api
            .post(
                &path,
                json!({"targetProcessDefinitionKey": v2, "mappingInstructions": mapping, "operationReference": 3}),
            )
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");
        assert_eq!(definition_of(&api, &rest_instance).await, v2.as_str());
        // The job activated before is the same job, now of A2: completing it leads to B.
        let job_path = format!(
            "/v2/jobs/{}/completion",
            rest_job["jobKey"].as_str().unwrap()
        );
        let (s, b) = api.post(&job_path, json!({})).await.unwrap();
        assert_eq!(s, 204, "{b}");
        let b_job = one_job(&api, "mig-b").await;
        assert_eq!(b_job["processInstanceKey"], rest_instance.as_str());
        assert_eq!(b_job["processDefinitionKey"], v2.as_str());
        let job_path = format!("/v2/jobs/{}/completion", b_job["jobKey"].as_str().unwrap());
        let (s, b) = api.post(&job_path, json!({})).await.unwrap();
        assert_eq!(s, 204, "{b}");
        api.wait_completed(&[rest_instance], Duration::from_secs(20), || {
            rill.log_text()
        })
        .await;

        // gRPC: the same, with Zeebe's status codes for the refusals.
        let mut client = connect(&rill).await;
        let instance_key: i64 = grpc_instance.parse().unwrap();
        let v2_key: i64 = v2.parse().unwrap();
        let request = |target: i64, pairs: &[(&str, &str)]| MigrateProcessInstanceRequest {
            process_instance_key: instance_key,
            migration_plan: Some(MigrationPlan {
                target_process_definition_key: target,
                mapping_instructions: pairs
                    .iter()
                    .map(|(s, t)| MappingInstruction {
                        source_element_id: (*s).into(),
                        target_element_id: (*t).into(),
                    })
                    .collect(),
            }),
            operation_reference: None,
        };
        for (bad, code, text) in [
            (request(v2_key, &[("A", "Nope")]), Code::InvalidArgument, "'Nope'"),
            (request(v2_key, &[]), Code::FailedPrecondition, "'A'"),
            (request(v2_key + 1_000, &[("A", "A2")]), Code::NotFound, "definition"),
            (request(0, &[("A", "A2")]), Code::InvalidArgument, "targetProcessDefinitionKey"),
            (
                MigrateProcessInstanceRequest {
                    migration_plan: None,
                    ..request(v2_key, &[])
                },
                Code::InvalidArgument,
                "migrationPlan",
            ),
        ] {
            let status = client
                .migrate_process_instance(bad.clone())
                .await
                .expect_err("a bad migration");
            assert_eq!(status.code(), code, "{bad:?}: {status:?}");
            assert!(status.message().contains(text), "{bad:?}: {status:?}");
        }
        assert_eq!(definition_of(&api, &grpc_instance).await, v1.as_str());
        client
            .migrate_process_instance(MigrateProcessInstanceRequest {
                operation_reference: Some(9),
                ..request(v2_key, &[("A", "A2")])
            })
            .await
            .expect("migrate over gRPC");
        assert_eq!(definition_of(&api, &grpc_instance).await, v2.as_str());
        let job_path = format!(
            "/v2/jobs/{}/completion",
            grpc_job["jobKey"].as_str().unwrap()
        );
        let (s, b) = api.post(&job_path, json!({})).await.unwrap();
        assert_eq!(s, 204, "{b}");
        let b_job = one_job(&api, "mig-b").await;
        assert_eq!(b_job["processInstanceKey"], grpc_instance.as_str());
    });
}

/// `@camunda8/sdk` 8.8's `ZeebeGrpcClient.migrateProcessInstance` (unmodified, pinned
/// in `tests/clients/zeebe-node/package.json`): an instance moved to version 2 goes on
/// there, bad plans are refused (`tests/clients/zeebe-node/migrate_flow.mjs`).
#[test]
fn the_camunda_npm_grpc_client_migrates_an_instance() {
    run_client_script(
        "zeebe-node/run_migrate.sh",
        "RILL_ZEEBE_NODE_DIR",
        "zeebe-node-clients",
    );
}
