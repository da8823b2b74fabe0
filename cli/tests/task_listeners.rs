//! User task listeners through the REST API of a real `rill standalone`: a client's
//! assignment and completion wait for the listener jobs a worker activates and
//! completes over REST; the worker corrects the assignee, denies a completion (the
//! client gets a 409 with the reason), and lets the next one through.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Standalone};

const REVIEW: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://rill.test">
  <bpmn:process id="review" name="Review" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="approve" name="Approve">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:assignmentDefinition candidateGroups="reviewers" />
        <zeebe:taskListeners>
          <zeebe:taskListener eventType="assigning" type="check-assignee" />
          <zeebe:taskListener eventType="completing" type="check-completion" retries="2" />
        </zeebe:taskListeners>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Activates the one job of `job_type` (polling up to 20 seconds) and returns it.
async fn activate(api: &Api, job_type: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, b) = api
            .post(
                "/v2/jobs/activation",
                json!({"type": job_type, "timeout": 30000, "maxJobsToActivate": 1, "worker": "w"}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        if let Some(job) = b["jobs"].as_array().and_then(|jobs| jobs.first()) {
            return job.clone();
        }
        assert!(Instant::now() < deadline, "no '{job_type}' job");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `GET path` until `done` holds for its answer.
async fn get_until(api: &Api, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, b) = api.get(path).await.unwrap();
        if s == 200 && done(&b) {
            return b;
        }
        assert!(Instant::now() < deadline, "{path}: {s} {b}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_worker_corrects_an_assignment_and_denies_a_completion_over_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bpmn = dir.path().join("review.bpmn");
    std::fs::write(&bpmn, REVIEW).unwrap();
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &[]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, deployed) = api.deploy(&[&bpmn]).await.unwrap();
        assert_eq!(s, 200, "{deployed}");
        let instance = api.create("review", json!({"amount": 12})).await;

        let found = loop {
            let (s, b) = api
                .post(
                    "/v2/user-tasks/search",
                    json!({"filter": {"processInstanceKey": instance}}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            if b["page"]["totalItems"] == 1 {
                break b;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let task_key = found["items"][0]["userTaskKey"]
            .as_str()
            .unwrap()
            .to_owned();

        // The assignment waits for the assigning listener, which corrects the assignee.
        let assigning = tokio::spawn({
            let api = api.clone();
            let path = format!("/v2/user-tasks/{task_key}/assignment");
            async move { api.post(&path, json!({"assignee": "bob"})).await.unwrap() }
        });
        let job = activate(&api, "check-assignee").await;
        assert_eq!(job["kind"], "TASK_LISTENER");
        assert_eq!(job["listenerEventType"], "ASSIGNING");
        assert_eq!(job["userTask"]["assignee"], "bob");
        assert_eq!(job["userTask"]["userTaskKey"], task_key.as_str());
        assert_eq!(job["userTask"]["candidateGroups"], json!(["reviewers"]));
        assert_eq!(job["customHeaders"]["io.camunda.zeebe:assignee"], "bob");
        assert_eq!(job["variables"]["amount"], 12);
        assert!(!assigning.is_finished(), "the assignment waits for its listener");
        let job_key = job["jobKey"].as_str().unwrap();
        let (s, b) = api
            .post(
                &format!("/v2/jobs/{job_key}/completion"),
                json!({"variables": {"x": 1}, "result": {"type": "userTask", "denied": true}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "a listener's job takes no variables: {b}");
        let (s, b) = api
            .post(
                &format!("/v2/jobs/{job_key}/completion"),
                json!({"result": {"type": "userTask", "corrections": {"assignee": "carl", "priority": 70, "dueDate": null}}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");
        let (s, b) = assigning.await.unwrap();
        assert_eq!(s, 204, "{b}");
        let task = get_until(&api, &format!("/v2/user-tasks/{task_key}"), |t| {
            t["assignee"] == "carl"
        })
        .await;
        assert_eq!(task["priority"], 70);

        // A denied completion: the client hears the listener's reason.
        let completing = tokio::spawn({
            let api = api.clone();
            let path = format!("/v2/user-tasks/{task_key}/completion");
            async move { api.post(&path, json!({"variables": {"approved": false}})).await.unwrap() }
        });
        let job = activate(&api, "check-completion").await;
        assert_eq!(job["listenerEventType"], "COMPLETING");
        assert_eq!(job["retries"], 2);
        let (s, b) = api
            .post(
                &format!("/v2/jobs/{}/completion", job["jobKey"].as_str().unwrap()),
                json!({"result": {"type": "userTask", "denied": true, "deniedReason": "approve or reject first"}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");
        let (s, b) = completing.await.unwrap();
        assert_eq!(s, 409, "{b}");
        assert!(
            b["detail"]
                .as_str()
                .is_some_and(|d| d.contains("approve or reject first")),
            "{b}"
        );

        // The next completion goes through.
        let completing = tokio::spawn({
            let api = api.clone();
            let path = format!("/v2/user-tasks/{task_key}/completion");
            async move { api.post(&path, json!({"variables": {"approved": true}})).await.unwrap() }
        });
        let job = activate(&api, "check-completion").await;
        let (s, b) = api
            .post(
                &format!("/v2/jobs/{}/completion", job["jobKey"].as_str().unwrap()),
                json!({}),
            )
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");
        let (s, b) = completing.await.unwrap();
        assert_eq!(s, 204, "{b}");
        api.wait_completed(std::slice::from_ref(&instance), Duration::from_secs(20), || {
            rill.log_text()
        })
        .await;
        let (s, variables) = api
            .post(
                "/v2/variables/search",
                json!({"filter": {"processInstanceKey": instance, "name": "approved"}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{variables}");
        assert_eq!(variables["items"][0]["value"], "true");
    });
}
