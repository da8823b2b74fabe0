//! Loops on the real binary: one that deploy-time validation sees is refused; one it
//! cannot see (a retry through an error boundary event, around a script task): the command that runs into it stops at `engine.max-records-per-command` with an
//! incident, other requests are answered meanwhile, and memory stays bounded
//! (docs/decisions/command-limits.md).

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Standalone, deploy};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn engine_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/tests/fixtures")
        .join(name)
}

/// The resident memory of a process, in MB.
fn rss_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb / 1024
}

/// The open incidents of an instance, once the history store shows at least one.
async fn incidents(api: &Api, instance: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = api
            .post(
                "/v2/incidents/search",
                json!({"filter": {"processInstanceKey": instance, "state": "ACTIVE"}}),
            )
            .await
            .expect("search");
        assert_eq!(status, 200, "{body}");
        let items = body["items"].as_array().cloned().unwrap_or_default();
        if !items.is_empty() {
            return items;
        }
        assert!(Instant::now() < deadline, "no incident on {instance}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_script_task_loop_stops_with_an_incident_and_the_broker_keeps_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        // One partition, so that the request sent while the loop runs waits for it; a
        // limit a tenth of the default, so that a debug build stops the loop well within
        // the second (the default's 200,000 records take about 2.5 s unoptimised).
        let mut rill = Standalone::start(
            &dir.path().join("data"),
            &[
                "cluster.partitions-count=1",
                "engine.max-records-per-command=20000",
            ],
        );
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let (status, body) = api
            .deploy(&[&engine_fixture("elements/script-loop.bpmn")])
            .await
            .expect("deploy");
        assert_eq!(status, 200, "{body}");
        // A loop that validation sees is refused at deploy, naming its elements.
        let (status, body) = api
            .deploy(&[&engine_fixture("loops/two-task-loop.bpmn")])
            .await
            .expect("deploy");
        assert_eq!(status, 400, "{body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("straight-through processing loop"),
            "{detail}"
        );
        let before = rss_mb(rill.pid());

        // The loop runs in one command; a request sent while it runs, to the same
        // partition, is answered once the command stops at its limit.
        let looping = {
            let api = Api::new(rill.rest());
            tokio::spawn(async move {
                let started = Instant::now();
                let key = api
                    .create(
                        "script-loop",
                        json!({"counter": 0, "target": 1_000_000_000}),
                    )
                    .await;
                (key, started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let asked = Instant::now();
        let other = api.create("two-rest-calls", json!({})).await;
        let answered = asked.elapsed();
        assert!(!other.is_empty());
        let (looping, loop_took) = looping.await.expect("the looping create");
        assert!(
            answered < Duration::from_secs(1),
            "the next request took {answered:?}"
        );

        let found = incidents(&api, &looping).await;
        assert_eq!(found.len(), 1, "{found:?}");
        let incident = &found[0];
        assert_eq!(incident["errorType"], "MESSAGE_SIZE_EXCEEDED", "{incident}");
        let message = incident["errorMessage"].as_str().unwrap_or_default();
        assert!(
            message.contains("engine.max-records-per-command (20000)"),
            "{message}"
        );
        let element = incident["elementId"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("element '{element}'")),
            "{message}"
        );

        // Resolving goes on in a new command, which stops again; memory stays bounded
        // however often it runs.
        let mut resident = vec![rss_mb(rill.pid())];
        for round in 0..8 {
            let key = incident_key(&api, &looping).await;
            let (status, body) = api
                .post(&format!("/v2/incidents/{key}/resolution"), json!({}))
                .await
                .expect("resolve");
            assert_eq!(status, 204, "round {round}: {body}");
            resident.push(rss_mb(rill.pid()));
        }
        let _ = incident_key(&api, &looping).await;
        let after = rss_mb(rill.pid());
        eprintln!(
            "the looping create took {loop_took:?}, the request sent meanwhile {answered:?}; \
             resident memory {before} MB before the loop, then after each stop {resident:?} MB"
        );
        assert!(
            after < before + 600,
            "resident memory grew from {before} MB to {after} MB"
        );
        let (status, _) = api.get("/v2/topology").await.expect("topology");
        assert_eq!(status, 200);
    });
}

/// The key of the instance's open incident, once there is one again.
async fn incident_key(api: &Api, instance: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = incidents(api, instance).await;
        if let Some(key) = found[0]["incidentKey"].as_str() {
            return key.to_owned();
        }
        assert!(Instant::now() < deadline, "no incident key: {found:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
