//! Process instance tags through the REST API of a real `rill standalone`: instances
//! created with tags, a bad tag refused, the tags on the instance, its job and its user
//! task, and the `tags` filter of the process-instance and user-task searches.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Standalone};

const ORDER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://rill.test">
  <bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="reserve">
      <bpmn:extensionElements><zeebe:taskDefinition type="reserve" /></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:userTask id="approve">
      <bpmn:extensionElements><zeebe:userTask /></bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="reserve" />
    <bpmn:sequenceFlow id="f2" sourceRef="reserve" targetRef="approve" />
    <bpmn:sequenceFlow id="f3" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

/// Searches `path` with `filter` until `count` items match (up to 20 seconds: the history
/// store follows the log), and returns the answer.
async fn search_until(api: &Api, path: &str, filter: Value, count: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, b) = api.post(path, json!({"filter": filter})).await.unwrap();
        assert_eq!(s, 200, "{b}");
        if b["page"]["totalItems"] == count {
            return b;
        }
        assert!(Instant::now() < deadline, "{path} {filter}: {b}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn tagged_instances_carry_their_tags_to_jobs_and_tasks_and_are_found_by_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bpmn = dir.path().join("order.bpmn");
    std::fs::write(&bpmn, ORDER).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &[]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, deployed) = api.deploy(&[&bpmn]).await.unwrap();
        assert_eq!(s, 200, "{deployed}");

        let (s, b) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "order", "tags": ["ok", "not ok"]}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");
        assert_eq!(b["title"], "INVALID_ARGUMENT", "{b}");
        assert!(b["detail"].as_str().unwrap().contains("'not ok'"), "{b}");

        let (s, tagged) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "order", "tags": ["customer:acme", "rush"]}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{tagged}");
        assert_eq!(tagged["tags"], json!(["customer:acme", "rush"]));
        let key = tagged["processInstanceKey"].as_str().unwrap().to_owned();
        api.create("order", json!({})).await;

        let found = search_until(
            &api,
            "/v2/process-instances/search",
            json!({"tags": ["rush"]}),
            1,
        )
        .await;
        assert_eq!(found["items"][0]["processInstanceKey"], key.as_str());
        assert_eq!(found["items"][0]["tags"], json!(["customer:acme", "rush"]));
        search_until(&api, "/v2/process-instances/search", json!({}), 2).await;

        // The reserve jobs: the tagged instance's carries its tags.
        let mut jobs = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while jobs.len() < 2 {
            let (s, b) = api
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "reserve", "timeout": 30000, "maxJobsToActivate": 2, "worker": "w"}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            jobs.extend(b["jobs"].as_array().unwrap().iter().cloned());
            assert!(Instant::now() < deadline, "two reserve jobs: {jobs:?}");
        }
        for job in &jobs {
            let expected = if job["processInstanceKey"] == key.as_str() {
                json!(["customer:acme", "rush"])
            } else {
                json!([])
            };
            assert_eq!(job["tags"], expected, "{job}");
            let (s, b) = api
                .post(
                    &format!("/v2/jobs/{}/completion", job["jobKey"].as_str().unwrap()),
                    json!({}),
                )
                .await
                .unwrap();
            assert_eq!(s, 204, "{b}");
        }

        let tasks = search_until(
            &api,
            "/v2/user-tasks/search",
            json!({"tags": ["customer:acme"]}),
            1,
        )
        .await;
        assert_eq!(tasks["items"][0]["processInstanceKey"], key.as_str());
        assert_eq!(tasks["items"][0]["tags"], json!(["customer:acme", "rush"]));
        search_until(&api, "/v2/user-tasks/search", json!({}), 2).await;

    });
}
