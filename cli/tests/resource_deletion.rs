//! Resource deletion against a real `rill standalone` (two partitions): Camunda's REST
//! `POST /v2/resources/{key}/deletion` and Zeebe's gRPC `DeleteResource` delete a
//! decision requirements graph and a form on both partitions; a process definition is
//! refused (not supported yet) and an unknown key is not found, changing nothing.

mod support;

use std::time::{Duration, Instant};

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::*;
use serde_json::{Value, json};
use support::{Api, Standalone, examples};
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
fn forms_and_decisions_are_deleted_over_rest_and_grpc_and_processes_are_refused() {
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

        // A process definition: refused, named as not supported yet; it still runs.
        let (s, b) = api
            .post(&format!("/v2/resources/{process_key}/deletion"), json!({}))
            .await
            .unwrap();
        assert_eq!(s, 409, "{b}");
        assert!(
            b["detail"]
                .as_str()
                .unwrap()
                .contains("deleting process definitions is not supported yet"),
            "{b}"
        );
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
        let refused = client
            .delete_resource(DeleteResourceRequest {
                resource_key: process_key.parse().unwrap(),
                operation_reference: None,
            })
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
        assert!(
            refused
                .message()
                .contains("deleting process definitions is not supported yet"),
            "{refused:?}"
        );
        let instance = api.create("dinner", json!({"month": 1})).await;
        assert!(!instance.is_empty());

        // The form's version 1 is not given out again: a new deployment makes version 2.
        let (s, third) = api.deploy(&[&form]).await.unwrap();
        assert_eq!(s, 200, "{third}");
        assert_eq!(entry(&third, "form")["version"], 2);
        rill.terminate(Duration::from_secs(20));
    });
}
