//! Search filters end to end on a real `rill standalone` and on three brokers: every operator Camunda's v2
//! search defines (`$eq $neq $in $notIn $exists $like $gt $gte $lt $lte`) and a date
//! range, against instances whose answer the test knows; and `history.retention`
//! removing finished instances (with their jobs, variables and element instances) while
//! active ones stay.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers, Standalone, examples};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A start→end process; `name` makes another version of it.
fn quick(dir: &Path, name: &str) -> std::path::PathBuf {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="quick-defs" targetNamespace="http://rill.test">
  <bpmn:process id="quick" name="{name}" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>flow</bpmn:outgoing></bpmn:startEvent>
    <bpmn:sequenceFlow id="flow" sourceRef="start" targetRef="end"/>
    <bpmn:endEvent id="end"><bpmn:incoming>flow</bpmn:incoming></bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>
"#
    );
    let path = dir.join(format!("quick-{name}.bpmn"));
    std::fs::write(&path, xml).expect("write the model");
    path
}

async fn deploy(api: &Api, file: &Path) -> Value {
    let (s, b) = api.deploy(&[file]).await.unwrap();
    assert_eq!(s, 200, "{b}");
    b
}

async fn search(api: &Api, path: &str, filter: Value) -> Value {
    let body = json!({"filter": filter, "page": {"limit": 1000}});
    let (s, b) = api.post(path, body.clone()).await.unwrap();
    assert_eq!(s, 200, "{body}: {b}");
    b
}

fn keys_of(page: &Value, field: &str) -> BTreeSet<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i[field].as_str().expect(field).to_owned())
        .collect()
}

/// The instances a filter finds (checked against the count).
async fn found(api: &Api, filter: Value) -> BTreeSet<String> {
    let page = search(api, "/v2/process-instances/search", filter).await;
    let keys = keys_of(&page, "processInstanceKey");
    assert_eq!(page["page"]["totalItems"].as_u64(), Some(keys.len() as u64));
    keys
}

fn set(keys: &[&String]) -> BTreeSet<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

#[test]
fn every_filter_operator_and_a_date_range_select_what_they_say() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(60)).await;
        every_operator(&Api::new(rill.rest()), dir.path()).await;
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

#[test]
fn every_filter_operator_selects_the_same_on_three_brokers() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        // Any broker's gateway fans out to every partition.
        every_operator(&brokers.api(2), dir.path()).await;
    });
}

/// Creates instances whose answers are known, then checks every operator against them.
async fn every_operator(api: &Api, dir: &Path) {
    deploy(api, &examples().join("two-rest-calls.bpmn")).await;
    deploy(api, &quick(dir, "first")).await;
    // Four of version 1, three of version 2 (all complete at once), then three that
    // wait for jobs, one of them cancelled.
    let mut v1 = Vec::new();
    for _ in 0..4 {
        v1.push(api.create("quick", json!({"x": 1})).await);
    }
    let second = deploy(api, &quick(dir, "second")).await;
    assert_eq!(
        second["deployments"][0]["processDefinition"]["processDefinitionVersion"], 2,
        "{second}"
    );
    // Named by version: a create on a partition the new version has not reached yet
    // would start version 1 (deployments reach the other partitions asynchronously).
    let mut v2 = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while v2.len() < 3 {
        let body = json!({"processDefinitionId": "quick", "processDefinitionVersion": 2});
        match api.post("/v2/process-instances", body).await.unwrap() {
            (200, b) => {
                assert_eq!(b["processDefinitionVersion"], 2, "{b}");
                v2.push(b["processInstanceKey"].as_str().unwrap().to_owned());
            }
            (404, _) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            (s, b) => panic!("create version 2: {s} {b}"),
        }
    }
    let mut rest = Vec::new();
    for _ in 0..3 {
        rest.push(api.create("two-rest-calls", json!({"x": 1})).await);
    }
    let (s, b) = api
        .post(
            &format!("/v2/process-instances/{}/cancellation", rest[0]),
            json!({}),
        )
        .await
        .unwrap();
    assert_eq!(s, 204, "{b}");
    let all: Vec<&String> = v1.iter().chain(&v2).chain(&rest).collect();
    let quick_all: Vec<&String> = v1.iter().chain(&v2).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while found(api, json!({"state": {"$neq": "ACTIVE"}})).await.len() < 8 {
        assert!(Instant::now() < deadline, "the instances did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Equality and its negation, lists, existence, patterns.
    assert_eq!(
        found(api, json!({"state": {"$eq": "COMPLETED"}})).await,
        set(&quick_all)
    );
    assert_eq!(
        found(api, json!({"state": {"$neq": "COMPLETED"}})).await,
        set(&rest.iter().collect::<Vec<_>>())
    );
    assert_eq!(
        found(api, json!({"state": {"$in": ["ACTIVE", "TERMINATED"]}, "processDefinitionId": {"$in": ["two-rest-calls", "nothing"]}})).await,
        set(&rest.iter().collect::<Vec<_>>())
    );
    assert_eq!(
        found(
            api,
            json!({"processDefinitionId": {"$notIn": ["two-rest-calls"]}})
        )
        .await,
        set(&quick_all)
    );
    assert_eq!(
        found(
            api,
            json!({"state": {"$notIn": ["COMPLETED", "TERMINATED"]}})
        )
        .await,
        set(&[&rest[1], &rest[2]])
    );
    assert_eq!(
        found(api, json!({"endDate": {"$exists": false}})).await,
        set(&[&rest[1], &rest[2]])
    );
    let ended: Vec<&String> = quick_all.iter().copied().chain([&rest[0]]).collect();
    assert_eq!(
        found(api, json!({"endDate": {"$exists": true}})).await,
        set(&ended)
    );
    assert_eq!(
        found(api, json!({"parentProcessInstanceKey": {"$exists": true}})).await,
        BTreeSet::new()
    );
    assert_eq!(
        found(api, json!({"processDefinitionId": {"$like": "two-*"}})).await,
        set(&rest.iter().collect::<Vec<_>>())
    );
    assert_eq!(
        found(api, json!({"processDefinitionId": {"$like": "qu?ck"}})).await,
        set(&quick_all)
    );
    assert_eq!(
        found(api, json!({"processDefinitionId": {"$like": "*x*"}})).await,
        BTreeSet::new()
    );

    // Ranges on a number and on keys.
    assert_eq!(
        found(api, json!({"processDefinitionVersion": {"$gt": 1}})).await,
        set(&v2.iter().collect::<Vec<_>>())
    );
    assert_eq!(
        found(
            api,
            json!({"processDefinitionVersion": {"$gte": 2}, "processDefinitionId": "quick"})
        )
        .await,
        set(&v2.iter().collect::<Vec<_>>())
    );
    let first_versions: Vec<&String> = v1.iter().chain(&rest).collect();
    assert_eq!(
        found(api, json!({"processDefinitionVersion": {"$lt": 2}})).await,
        set(&first_versions)
    );
    assert_eq!(
        found(api, json!({"processDefinitionVersion": {"$lte": 1}})).await,
        set(&first_versions)
    );
    let mut numbers: Vec<u64> = all.iter().map(|k| k.parse().unwrap()).collect();
    numbers.sort();
    let (low, high) = (numbers[2], numbers[7]);
    let between: Vec<String> = numbers
        .iter()
        .filter(|&&k| k > low && k <= high)
        .map(u64::to_string)
        .collect();
    assert_eq!(between.len(), 5);
    assert_eq!(
        found(
            api,
            json!({"processInstanceKey": {"$gt": low.to_string(), "$lte": high.to_string()}})
        )
        .await,
        between.into_iter().collect()
    );

    // A date range: the start dates of version 2's instances, both ends included,
    // found by start date alone; and end dates before the first of them.
    let page = search(
        api,
        "/v2/process-instances/search",
        json!({"processInstanceKey": {"$in": v2}}),
    )
    .await;
    let mut starts: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["startDate"].as_str().unwrap().to_owned())
        .collect();
    starts.sort();
    let everything = search(api, "/v2/process-instances/search", json!({})).await;
    let in_range: BTreeSet<String> = everything["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| {
            let start = i["startDate"].as_str().unwrap();
            // RFC 3339 in UTC with a fixed number of digits: text order is time order.
            assert_eq!(start.len(), starts[0].len(), "{start}");
            start >= starts[0].as_str() && start <= starts[2].as_str()
        })
        .map(|i| i["processInstanceKey"].as_str().unwrap().to_owned())
        .collect();
    assert!(set(&v2.iter().collect::<Vec<_>>()).is_subset(&in_range));
    assert!(
        v1.iter().all(|k| !in_range.contains(k)) || starts[0] == starts[2],
        "the versions started apart"
    );
    assert_eq!(
        found(
            api,
            json!({"startDate": {"$gte": starts[0], "$lte": starts[2]}})
        )
        .await,
        in_range
    );
    let before_v2 = found(api, json!({"endDate": {"$lt": starts[0]}})).await;
    assert!(
        before_v2.is_subset(&set(&v1.iter().collect::<Vec<_>>())),
        "{before_v2:?}"
    );
    assert!(
        !before_v2.is_empty(),
        "version 1's instances ended before version 2's started"
    );

    // Operators on another entity: jobs of the instances still waiting.
    let jobs = search(api, "/v2/jobs/search", json!({"retries": {"$gte": 1}, "state": {"$in": ["CREATED"]}, "processInstanceKey": {"$neq": rest[1]}})).await;
    assert_eq!(keys_of(&jobs, "processInstanceKey"), set(&[&rest[2]]));

    // An operator a field does not have is refused, naming it.
    let (s, b) = api
        .post(
            "/v2/process-instances/search",
            json!({"filter": {"state": {"$gt": "ACTIVE"}}}),
        )
        .await
        .unwrap();
    assert_eq!(s, 400, "{b}");
    assert!(
        b["detail"].as_str().unwrap().contains("filter.state.$gt"),
        "{b}"
    );
}

#[test]
fn finished_instances_leave_the_history_after_the_retention() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(
        &dir.path().join("data"),
        &["cluster.partitions-count=2", "history.retention=3s"],
    );
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        deploy(&api, &examples().join("two-rest-calls.bpmn")).await;
        deploy(&api, &quick(dir.path(), "first")).await;
        let mut finished = Vec::new();
        for _ in 0..4 {
            finished.push(api.create("quick", json!({"x": 1})).await);
        }
        let cancelled = api.create("two-rest-calls", json!({"x": 1})).await;
        let waiting = api.create("two-rest-calls", json!({"x": 1})).await;
        finished.push(cancelled.clone());
        let (s, b) = api
            .post(
                &format!("/v2/process-instances/{cancelled}/cancellation"),
                json!({}),
            )
            .await
            .unwrap();
        assert_eq!(s, 204, "{b}");

        // First all there, finished and not; then the finished ones go.
        let of = |key: &str| json!({"processInstanceKey": key});
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen_all = false;
        loop {
            let ended = found(&api, json!({"endDate": {"$exists": true}})).await;
            if ended.len() == finished.len() {
                seen_all = true;
                assert_eq!(ended, finished.iter().cloned().collect());
                let jobs = search(&api, "/v2/jobs/search", of(&cancelled)).await;
                assert_eq!(jobs["items"][0]["state"], "CANCELED", "{jobs}");
                break;
            }
            // On a slow machine they may be gone before they were all seen finished.
            if ended.is_empty() && Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while !found(&api, json!({"endDate": {"$exists": true}}))
            .await
            .is_empty()
        {
            assert!(
                Instant::now() < deadline,
                "finished instances were not removed\n{}",
                rill.log_text()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(seen_all, "the finished instances were never all found");
        // Everything of the cancelled instance went with it.
        for path in [
            "/v2/jobs/search",
            "/v2/variables/search",
            "/v2/element-instances/search",
            "/v2/incidents/search",
        ] {
            let page = search(&api, path, of(&cancelled)).await;
            assert_eq!(page["page"]["totalItems"], 0, "{path}: {page}");
        }
        let (s, b) = api
            .get(&format!("/v2/process-instances/{cancelled}"))
            .await
            .unwrap();
        assert_eq!(s, 404, "{b}");
        // The waiting instance and its entries stay, however old.
        assert_eq!(
            found(&api, json!({})).await,
            BTreeSet::from([waiting.clone()])
        );
        let jobs = search(&api, "/v2/jobs/search", of(&waiting)).await;
        assert_eq!(jobs["page"]["totalItems"], 1, "{jobs}");
        let variables = search(&api, "/v2/variables/search", of(&waiting)).await;
        assert_eq!(
            keys_of(&variables, "name"),
            BTreeSet::from(["x".to_owned()])
        );
        let (s, b) = api
            .get(&format!("/v2/process-instances/{waiting}"))
            .await
            .unwrap();
        assert_eq!((s, b["state"].as_str()), (200, Some("ACTIVE")), "{b}");
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}
