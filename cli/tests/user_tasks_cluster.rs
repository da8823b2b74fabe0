//! User tasks on a cluster of real `rill broker` processes (3 brokers, 3 partitions,
//! replication 3): a process deployed with its form, tasks created on every partition,
//! searched through any broker's gateway (the search spans the partitions), assigned and
//! completed through other brokers; then the unmodified Python SDK flow against it.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers};

const REVIEW: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="review-defs" targetNamespace="http://rill.test">
  <bpmn:process id="review" name="Review" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="approve" name="Approve">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:formDefinition formId="approval" />
        <zeebe:assignmentDefinition candidateGroups="reviewers" />
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

const FORM: &str =
    r#"{"id": "approval", "type": "default", "components": [{"key": "ok", "type": "checkbox"}]}"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Polls a search until `done` holds for its answer (failing after 20 seconds).
async fn search_until(api: &Api, body: Value, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, b) = api
            .post("/v2/user-tasks/search", body.clone())
            .await
            .unwrap();
        assert_eq!(s, 200, "{body}: {b}");
        if done(&b) {
            return b;
        }
        assert!(Instant::now() < deadline, "{body}: {b}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn user_tasks_are_searched_across_partitions_and_worked_through_any_broker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bpmn = dir.path().join("review.bpmn");
    std::fs::write(&bpmn, REVIEW).unwrap();
    let form = dir.path().join("approval.form");
    std::fs::write(&form, FORM).unwrap();
    runtime().block_on(async {
        // Each broker's gateway on a gRPC port of its own (the default one may be taken).
        let mut brokers = Brokers::start_with(dir.path(), 3, 3, 3, &[], |_| {
            vec![format!("gateway.grpc-port={}", support::free_port())]
        });
        brokers.wait_ready(Duration::from_secs(60)).await;
        let (status, deployed) = brokers.api(0).deploy(&[&bpmn, &form]).await.unwrap();
        assert_eq!(status, 200, "{deployed}");
        assert_eq!(deployed["deployments"][1]["form"]["formId"], "approval");
        let form_key = deployed["deployments"][1]["form"]["formKey"].clone();

        let instances = brokers
            .api(0)
            .create_on_every_partition("review", 6, 3, || brokers.logs())
            .await;
        let partition_of = |key: &str| key.parse::<u64>().unwrap() >> 51;
        let count = instances.len();
        let all = search_until(&brokers.api(1), json!({"page": {"limit": 100}}), |b| {
            b["page"]["totalItems"] == count
        })
        .await;
        let tasks: Vec<&Value> = all["items"].as_array().unwrap().iter().collect();
        let partitions: BTreeSet<u64> = tasks
            .iter()
            .map(|t| partition_of(t["userTaskKey"].as_str().unwrap()))
            .collect();
        assert_eq!(partitions.len(), 3, "tasks on every partition: {all}");
        assert!(
            tasks
                .iter()
                .all(|t| t["formKey"] == form_key && t["state"] == "CREATED")
        );

        // Assign through broker 2, complete through broker 0; every task's form is found
        // on its own partition.
        for task in &tasks {
            let key = task["userTaskKey"].as_str().unwrap();
            let (s, b) = brokers
                .api(2)
                .get(&format!("/v2/user-tasks/{key}/form"))
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            assert_eq!(b["formId"], "approval");
            let (s, b) = brokers
                .api(2)
                .post(
                    &format!("/v2/user-tasks/{key}/assignment"),
                    json!({"assignee": "demo"}),
                )
                .await
                .unwrap();
            assert_eq!(s, 204, "{b}");
            let (s, b) = brokers
                .api(1)
                .post(
                    &format!("/v2/user-tasks/{key}/assignment"),
                    json!({"assignee": "other", "allowOverride": false}),
                )
                .await
                .unwrap();
            assert_eq!(
                (s, b["title"].as_str()),
                (409, Some("INVALID_STATE")),
                "{b}"
            );
            let (s, b) = brokers
                .api(0)
                .post(
                    &format!("/v2/user-tasks/{key}/completion"),
                    json!({"variables": {"ok": true}}),
                )
                .await
                .unwrap();
            assert_eq!(s, 204, "{b}");
        }
        let logs = || brokers.logs();
        brokers
            .api(1)
            .wait_completed(&instances, Duration::from_secs(30), logs)
            .await;
        let done = search_until(
            &brokers.api(2),
            json!({"filter": {"state": "COMPLETED", "assignee": "demo"}}),
            |b| b["page"]["totalItems"] == count,
        )
        .await;
        assert_eq!(done["items"].as_array().unwrap().len(), count);

        // The unmodified Python SDK's flow (it installs the SDK on first use).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let output = std::process::Command::new("bash")
            .arg(root.join("tests/clients/python/run.sh"))
            .env("RILL_REST_ADDRESS", brokers.nodes[0].rest())
            .env(
                "RILL_PY_VENV",
                std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-clients"),
            )
            .output()
            .expect("run the Python SDK flow (needs bash and python3)");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("all checks passed"),
            "the Python SDK flow failed on the cluster:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    });
}
