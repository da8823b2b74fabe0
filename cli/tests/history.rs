//! The history store end to end: a real `rill standalone` answers process instance
//! searches across its partitions, by state and process, with cursor paging, and reads
//! finished instances (the engine keeps nothing of them); jobs, incidents, variables,
//! element instances, process definitions and message subscriptions are searched too.
//! With the history store off, reads are refused naming the setting, and processing
//! goes on.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Standalone, examples};

fn keys(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["processInstanceKey"].as_str().expect("key").to_owned())
        .collect()
}

/// The runtime each test drives its `rill` process from.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

async fn search(api: &Api, body: Value) -> Value {
    let (s, b) = api
        .post("/v2/process-instances/search", body)
        .await
        .unwrap();
    assert_eq!(s, 200, "{b}");
    b
}

#[test]
fn searches_find_instances_by_state_and_process_and_page_with_cursors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &["cluster.partitions-count=3"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api
            .deploy(&[
                &examples().join("two-rest-calls.bpmn"),
                &examples().join("wait-timer.bpmn"),
            ])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let mut created = Vec::new();
        for i in 0..12 {
            created.push(api.create("two-rest-calls", json!({"i": i})).await);
        }
        let partitions: BTreeSet<u64> = created
            .iter()
            .map(|k| k.parse::<u64>().unwrap() >> 51)
            .collect();
        assert_eq!(partitions.len(), 3, "spread over the partitions: {created:?}");
        // Four cancelled, three completed (both jobs), five left active.
        for key in &created[..4] {
            let (s, b) = api
                .post(&format!("/v2/process-instances/{key}/cancellation"), json!({}))
                .await
                .unwrap();
            assert_eq!(s, 204, "{b}");
        }
        let finish: BTreeSet<String> = created[4..7].iter().cloned().collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let completed = search(
                &api,
                json!({"filter": {"state": "COMPLETED", "processDefinitionId": "two-rest-calls"}}),
            )
            .await;
            if completed["page"]["totalItems"] == 3 {
                let found: BTreeSet<String> = keys(&completed).into_iter().collect();
                assert_eq!(found, finish);
                break;
            }
            assert!(Instant::now() < deadline, "not completed: {completed}");
            let (s, b) = api
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "restCall", "timeout": 600000, "maxJobsToActivate": 50, "requestTimeout": 500}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            for job in b["jobs"].as_array().unwrap() {
                if finish.contains(job["processInstanceKey"].as_str().unwrap()) {
                    let key = job["jobKey"].as_str().unwrap();
                    let (s, b) = api
                        .post(&format!("/v2/jobs/{key}/completion"), json!({}))
                        .await
                        .unwrap();
                    assert_eq!(s, 204, "{b}");
                }
            }
        }

        let terminated = search(&api, json!({"filter": {"state": "TERMINATED"}})).await;
        assert_eq!(terminated["page"]["totalItems"], 4, "{terminated}");
        let found: BTreeSet<String> = keys(&terminated).into_iter().collect();
        assert_eq!(found, created[..4].iter().cloned().collect());
        assert!(terminated["items"][0]["endDate"].is_string());
        let active = search(
            &api,
            json!({"filter": {"state": {"$eq": "ACTIVE"}, "processDefinitionId": {"$like": "two-*"}}}),
        )
        .await;
        assert_eq!(active["page"]["totalItems"], 5, "{active}");
        let other = search(&api, json!({"filter": {"processDefinitionId": "wait-timer"}})).await;
        assert_eq!(other["page"]["totalItems"], 0, "{other}");

        // Paging through all twelve by start date, three at a time, forwards then back.
        let sort = json!([{"field": "startDate", "order": "ASC"}]);
        let mut forward = Vec::new();
        let mut pages = Vec::new();
        let mut page = search(&api, json!({"sort": sort, "page": {"limit": 3}})).await;
        loop {
            assert_eq!(page["page"]["totalItems"], 12, "{page}");
            if keys(&page).is_empty() {
                break;
            }
            forward.extend(keys(&page));
            pages.push(page.clone());
            let end = page["page"]["endCursor"].as_str().unwrap().to_owned();
            page = search(&api, json!({"sort": sort, "page": {"limit": 3, "after": end}})).await;
        }
        assert_eq!(forward, created, "creation order is start-date order");
        let mut backward = Vec::new();
        let mut page = pages.last().unwrap().clone();
        loop {
            backward.splice(0..0, keys(&page));
            let start = page["page"]["startCursor"].as_str().unwrap().to_owned();
            page = search(&api, json!({"sort": sort, "page": {"limit": 3, "before": start}})).await;
            if keys(&page).is_empty() {
                break;
            }
        }
        assert_eq!(backward, created);

        // A finished instance is read from the history store (the engine keeps nothing
        // of it).
        let (s, b) = api.get(&format!("/v2/process-instances/{}", created[4])).await.unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["state"], "COMPLETED");
        assert!(b["endDate"].is_string(), "{b}");

        // A filter Rill cannot serve yet is refused, naming it.
        let (s, b) = api
            .post("/v2/process-instances/search", json!({"filter": {"variables": [{"name": "i", "value": "1"}]}}))
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");
        assert!(b["detail"].as_str().unwrap().contains("filter.variables"), "{b}");
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// Polls a search until `done` holds for its answer (the history is written as the
/// records are applied, so this is quick), failing after ten seconds.
async fn search_until(api: &Api, path: &str, body: Value, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (s, b) = api.post(path, body.clone()).await.unwrap();
        assert_eq!(s, 200, "{path} {body}: {b}");
        if done(&b) {
            return b;
        }
        assert!(Instant::now() < deadline, "{path} {body}: {b}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn total(page: &Value) -> u64 {
    page["page"]["totalItems"].as_u64().expect("totalItems")
}

#[test]
fn jobs_incidents_element_instances_and_variables_are_searched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &["cluster.partitions-count=2"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api
            .deploy(&[&examples().join("two-rest-calls.bpmn")])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let mut instances = Vec::new();
        for i in 0..3 {
            instances.push(api.create("two-rest-calls", json!({"i": i})).await);
        }
        // Activate the three first jobs, complete the first instance's, fail the second's
        // without retries (an incident), leave the third's activated.
        let mut jobs = std::collections::BTreeMap::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while jobs.len() < 3 {
            assert!(Instant::now() < deadline, "jobs: {jobs:?}");
            let (s, b) = api
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "restCall", "worker": "e2e-worker", "timeout": 600000, "maxJobsToActivate": 10, "requestTimeout": 500}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            for job in b["jobs"].as_array().unwrap() {
                jobs.insert(
                    job["processInstanceKey"].as_str().unwrap().to_owned(),
                    job["jobKey"].as_str().unwrap().to_owned(),
                );
            }
        }
        let (done, failing, waiting) = (&instances[0], &instances[1], &instances[2]);
        let (s, b) = api
            .post(&format!("/v2/jobs/{}/completion", jobs[done]), json!({}))
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");
        let (s, b) = api
            .post(
                &format!("/v2/jobs/{}/failure", jobs[failing]),
                json!({"retries": 0, "errorMessage": "boom"}),
            )
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");

        let completed = search_until(
            &api,
            "/v2/jobs/search",
            json!({"filter": {"type": "restCall", "state": "COMPLETED"}}),
            |b| total(b) == 1,
        )
        .await;
        let job = &completed["items"][0];
        assert_eq!(job["jobKey"], jobs[done].as_str());
        assert_eq!(job["worker"], "e2e-worker");
        assert_eq!(job["elementId"], "Rest1");
        assert!(job["endTime"].is_string(), "{job}");
        // The waiting instance's activated job and the completed one's next job.
        let created = search_until(
            &api,
            "/v2/jobs/search",
            json!({"filter": {"type": "restCall", "state": "CREATED"}, "sort": [{"field": "processInstanceKey"}]}),
            |b| total(b) == 2,
        )
        .await;
        let of: BTreeSet<&str> = created["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["processInstanceKey"].as_str().unwrap())
            .collect();
        assert_eq!(of, BTreeSet::from([done.as_str(), waiting.as_str()]));
        let activated = created["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["processInstanceKey"] == waiting.as_str())
            .unwrap();
        assert!(activated["deadline"].is_string(), "{activated}");
        let failed = search_until(
            &api,
            "/v2/jobs/search",
            json!({"filter": {"processInstanceKey": failing}}),
            |b| total(b) == 1 && b["items"][0]["state"] == "FAILED",
        )
        .await;
        assert_eq!(failed["items"][0]["retries"], 0);
        assert_eq!(failed["items"][0]["errorMessage"], "boom");
        assert_eq!(failed["items"][0]["hasFailedWithRetriesLeft"], false);

        // The incident: searched with no filter, by instance, and read by key.
        let incidents = search_until(&api, "/v2/incidents/search", json!({}), |b| total(b) == 1).await;
        let incident = &incidents["items"][0];
        assert_eq!(incident["state"], "ACTIVE");
        assert_eq!(incident["errorType"], "JOB_NO_RETRIES");
        assert_eq!(incident["processInstanceKey"], failing.as_str());
        assert_eq!(incident["jobKey"], jobs[failing].as_str());
        assert!(incident["creationTime"].is_string(), "{incident}");
        let incident_key = incident["incidentKey"].as_str().unwrap().to_owned();
        let (s, b) = api
            .post(&format!("/v2/process-instances/{failing}/incidents/search"), json!({}))
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(total(&b), 1, "{b}");
        let (s, b) = api
            .post(&format!("/v2/process-instances/{done}/incidents/search"), json!({}))
            .await
            .unwrap();
        assert_eq!((s, total(&b)), (200, 0), "{b}");
        let unknown = ((1u64 << 51) + 999_999).to_string();
        let (s, b) = api
            .post(&format!("/v2/process-instances/{unknown}/incidents/search"), json!({}))
            .await
            .unwrap();
        assert_eq!(s, 404, "{b}");
        let (s, b) = api.get(&format!("/v2/incidents/{unknown}")).await.unwrap();
        assert_eq!(s, 404, "{b}");

        // Resolved: retries back, incident resolved; it stays, as RESOLVED.
        let response = api
            .http
            .patch(format!("{}/v2/jobs/{}", api.base, jobs[failing]))
            .json(&json!({"changeset": {"retries": 1}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 204);
        let (s, b) = api
            .post(&format!("/v2/incidents/{incident_key}/resolution"), json!({}))
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");
        search_until(
            &api,
            "/v2/incidents/search",
            json!({"filter": {"state": "RESOLVED"}}),
            |b| total(b) == 1,
        )
        .await;
        let (s, b) = api.get(&format!("/v2/incidents/{incident_key}")).await.unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["state"], "RESOLVED");
        assert!(b["creationTime"].is_string(), "{b}");
        let active = search_until(
            &api,
            "/v2/incidents/search",
            json!({"filter": {"state": "ACTIVE"}}),
            |_| true,
        )
        .await;
        assert_eq!(total(&active), 0, "{active}");
        let retried = search_until(
            &api,
            "/v2/jobs/search",
            json!({"filter": {"jobKey": jobs[failing].as_str()}}),
            |b| total(b) == 1,
        )
        .await;
        assert_eq!(retried["items"][0]["state"], "RETRIES_UPDATED", "{retried}");
        assert_eq!(retried["items"][0]["retries"], 1);

        // Element instances: the failing instance's task is active, its incident gone.
        let tasks = search_until(
            &api,
            "/v2/element-instances/search",
            json!({"filter": {"processInstanceKey": failing, "type": "SERVICE_TASK"}}),
            |b| total(b) == 1 && b["items"][0]["hasIncident"] == false,
        )
        .await;
        assert_eq!(tasks["items"][0]["state"], "ACTIVE");
        assert_eq!(tasks["items"][0]["elementId"], "Rest1");
        let task_key = tasks["items"][0]["elementInstanceKey"].as_str().unwrap();
        let (s, b) = api.get(&format!("/v2/element-instances/{task_key}")).await.unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["processInstanceKey"], failing.as_str());
        let completed_starts = search_until(
            &api,
            "/v2/element-instances/search",
            json!({"filter": {"type": "START_EVENT", "state": "COMPLETED"}}),
            |b| total(b) == 3,
        )
        .await;
        assert!(completed_starts["items"][0]["endDate"].is_string());

        // Variables: searched with no instance named, and read by key.
        let variables = search_until(
            &api,
            "/v2/variables/search",
            json!({"filter": {"name": "i"}, "sort": [{"field": "value"}]}),
            |b| total(b) == 3,
        )
        .await;
        let values: Vec<&str> = variables["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["value"].as_str().unwrap())
            .collect();
        assert_eq!(values, ["0", "1", "2"]);
        let key = variables["items"][1]["variableKey"].as_str().unwrap();
        let (s, b) = api.get(&format!("/v2/variables/{key}")).await.unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!((b["name"].as_str(), b["value"].as_str()), (Some("i"), Some("1")));

        // A state Camunda's jobs do not have is refused, naming the field.
        let (s, b) = api
            .post("/v2/jobs/search", json!({"filter": {"state": "ACTIVATED"}}))
            .await
            .unwrap();
        assert_eq!(s, 400, "{b}");
        assert!(b["detail"].as_str().unwrap().contains("filter.state"), "{b}");
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// A called instance answers `GET /v2/process-instances/{key}` with its parent's keys,
/// and a search by `parentProcessInstanceKey` finds it.
#[test]
fn a_called_instance_names_its_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &["cluster.partitions-count=2"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let fixtures = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../engine/tests/fixtures/elements");
        let (s, b) = api
            .deploy(&[
                &fixtures.join("call-activity.bpmn"),
                &fixtures.join("call-activity-child.bpmn"),
            ])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let (s, b) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "order", "variables": {"orderId": 5}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let parent = b["processInstanceKey"].as_str().expect("key").to_owned();
        let page = search_until(
            &api,
            "/v2/process-instances/search",
            json!({"filter": {"parentProcessInstanceKey": parent}}),
            |b| total(b) == 1,
        )
        .await;
        let child = &page["items"][0];
        assert_eq!(child["processDefinitionId"], "shipping", "{page}");
        let child_key = child["processInstanceKey"].as_str().expect("key");
        let (s, got) = api
            .get(&format!("/v2/process-instances/{child_key}"))
            .await
            .unwrap();
        assert_eq!(s, 200, "{got}");
        assert_eq!(got["parentProcessInstanceKey"], parent.as_str(), "{got}");
        assert!(got["parentElementInstanceKey"].is_string(), "{got}");
        // Both name the parent as the root of their call hierarchy.
        assert_eq!(got["rootProcessInstanceKey"], parent.as_str(), "{got}");
        assert_eq!(child["rootProcessInstanceKey"], parent.as_str(), "{page}");
        let (s, got) = api
            .get(&format!("/v2/process-instances/{parent}"))
            .await
            .unwrap();
        assert_eq!(s, 200, "{got}");
        assert_eq!(got["rootProcessInstanceKey"], parent.as_str(), "{got}");
        // The child's job, elements and variables name the parent as their root too.
        for path in [
            "/v2/jobs/search",
            "/v2/element-instances/search",
            "/v2/variables/search",
        ] {
            let page = search_until(
                &api,
                path,
                json!({"filter": {"processInstanceKey": child_key}}),
                |b| total(b) >= 1,
            )
            .await;
            for item in page["items"].as_array().unwrap() {
                assert_eq!(
                    item["rootProcessInstanceKey"],
                    parent.as_str(),
                    "{path}: {item}"
                );
            }
        }
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// A named, version-tagged process that waits for `paid` correlated by `orderId`.
const WAITING_PROCESS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="awaiting-payment" name="Awaiting payment" isExecutable="true">
    <bpmn:extensionElements><zeebe:versionTag value="2024.1" /></bpmn:extensionElements>
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:intermediateCatchEvent id="paid">
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:messageEventDefinition messageRef="payment" />
    </bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="paid" />
    <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="end" />
  </bpmn:process>
  <bpmn:message id="payment" name="paid">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements>
  </bpmn:message>
</bpmn:definitions>"#;

#[test]
fn definitions_are_listed_once_and_subscriptions_follow_their_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let model = dir.path().join("awaiting-payment.bpmn");
    std::fs::write(&model, WAITING_PROCESS).expect("write the model");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &["cluster.partitions-count=3"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api
            .deploy(&[&model, &examples().join("two-rest-calls.bpmn")])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let definition = b["deployments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| &d["processDefinition"])
            .find(|d| d["processDefinitionId"] == "awaiting-payment")
            .expect("deployed")["processDefinitionKey"]
            .as_str()
            .unwrap()
            .to_owned();

        // Every partition stores both definitions; each is listed once, at once.
        let (s, definitions) = api.post("/v2/process-definitions/search", json!({})).await.unwrap();
        assert_eq!(s, 200, "{definitions}");
        assert_eq!(total(&definitions), 2, "{definitions}");
        let (s, one) = api.get(&format!("/v2/process-definitions/{definition}")).await.unwrap();
        assert_eq!(s, 200, "{one}");
        assert_eq!(one["name"], "Awaiting payment");
        assert_eq!(one["versionTag"], "2024.1");
        assert_eq!(one["resourceName"], "awaiting-payment.bpmn");

        let mut instances = Vec::new();
        for order in ["o-1", "o-2", "o-3", "o-4", "o-5", "o-6"] {
            instances.push(api.create("awaiting-payment", json!({"orderId": order})).await);
        }
        let (s, b) = api.get(&format!("/v2/process-instances/{}", instances[0])).await.unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["processDefinitionName"], "Awaiting payment");
        assert_eq!(b["processDefinitionVersionTag"], "2024.1");
        assert!(b.get("endDate").is_none(), "no null end date: {b}");

        // Subscriptions open on the instances' partitions, their messages' partitions
        // confirming (most of them another partition).
        let open = search_until(
            &api,
            "/v2/message-subscriptions/search",
            json!({"filter": {"messageName": "paid", "messageSubscriptionState": "CREATED"}}),
            |b| total(b) == 6,
        )
        .await;
        let item = &open["items"][0];
        assert_eq!(item["processDefinitionKey"], definition.as_str(), "{item}");
        assert_eq!(item["elementId"], "paid");

        let (s, b) = api
            .post("/v2/messages/publication", json!({"name": "paid", "correlationKey": "o-2", "timeToLive": 0}))
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let correlated = search_until(
            &api,
            "/v2/message-subscriptions/search",
            json!({"filter": {"messageSubscriptionState": "CORRELATED"}}),
            |b| total(b) == 1,
        )
        .await;
        assert_eq!(correlated["items"][0]["processInstanceKey"], instances[1].as_str());
        assert_eq!(correlated["items"][0]["correlationKey"], "o-2");

        // Statistics over all three partitions: five waiting, one through.
        let statistics = search_until(
            &api,
            &format!("/v2/process-definitions/{definition}/statistics/element-instances"),
            json!({}),
            |b| b["items"].as_array().is_some_and(|items| items.iter().any(|i| i["elementId"] == "end")),
        )
        .await;
        let paid = statistics["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["elementId"] == "paid")
            .cloned()
            .unwrap_or_else(|| panic!("{statistics}"));
        assert_eq!(paid, json!({"elementId": "paid", "active": 5, "canceled": 0, "incidents": 0, "completed": 1}));
        let (s, named) = api
            .post("/v2/process-instances/search", json!({"filter": {"processDefinitionName": {"$like": "Awaiting*"}, "state": "ACTIVE"}}))
            .await
            .unwrap();
        assert_eq!(s, 200, "{named}");
        assert_eq!(total(&named), 5, "{named}");
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

#[test]
fn without_history_reads_are_refused_naming_the_setting_and_processing_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("quick.bpmn");
    std::fs::write(
        &model,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="quick-defs" targetNamespace="http://rill.test">
  <bpmn:process id="quick" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>flow</bpmn:outgoing></bpmn:startEvent>
    <bpmn:sequenceFlow id="flow" sourceRef="start" targetRef="end"/>
    <bpmn:endEvent id="end"><bpmn:incoming>flow</bpmn:incoming></bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>
"#,
    )
    .expect("write the model");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &["history.enabled=false"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api.deploy(&[&model]).await.unwrap();
        assert_eq!(s, 200, "{b}");
        let definition = b["deployments"][0]["processDefinition"]["processDefinitionKey"].clone();

        // Create-and-await is answered from the instance's end, not from any read.
        let (s, b) = api
            .post(
                "/v2/process-instances",
                json!({
                    "processDefinitionId": "quick",
                    "variables": {"x": 7, "y": "left out"},
                    "awaitCompletion": true,
                    "fetchVariables": ["x"],
                }),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["processDefinitionId"], "quick", "{b}");
        assert_eq!(b["processDefinitionVersion"], 1, "{b}");
        assert_eq!(b["processDefinitionKey"], definition, "{b}");
        assert_eq!(b["variables"], json!({"x": 7}), "{b}");
        let instance = b["processInstanceKey"].as_str().expect("a key").to_owned();

        let refused = |(s, b): (u16, Value), path: &str| {
            assert_eq!(s, 403, "{path}: {b}");
            assert_eq!(b["title"], "FORBIDDEN", "{path}: {b}");
            let detail = b["detail"].as_str().unwrap_or_default();
            assert!(detail.contains("history.enabled = false"), "{path}: {b}");
        };
        for path in [
            format!("/v2/process-instances/{instance}"),
            format!("/v2/incidents/{instance}"),
        ] {
            refused(api.get(&path).await.unwrap(), &path);
        }
        for path in ["/v2/process-instances/search", "/v2/jobs/search"] {
            refused(api.post(path, json!({})).await.unwrap(), path);
        }
        // Commands go on.
        let second = api.create("quick", json!({})).await;
        assert_ne!(second, instance);
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

#[test]
fn the_removed_engine_instance_retention_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &["engine.instance-retention=1s"]);
    runtime().block_on(async {
        let status = rill.wait_exit(Duration::from_secs(60)).await;
        let log = rill.log_text();
        assert!(
            status.is_some_and(|s| !s.success()),
            "it exits with an error: {status:?}\n{log}"
        );
        assert!(
            log.contains("`engine.instance-retention` was removed"),
            "{log}"
        );
        assert!(log.contains("`history.retention`"), "{log}");
    });
}
