//! Rolling upgrades with real `rill broker` processes (issue 43; docs/decisions/versions.md).
//!
//! A broker of the previous release is emulated by a debug build announcing that it
//! applies engine version 1 only (`RILL_DEBUG_ENGINE_VERSIONS=1..=1`, honoured only in
//! debug builds): while it is in the cluster the engine version stays at 1 and a command
//! that needs 2 is refused naming both versions; the brokers are then restarted one at a
//! time as a StatefulSet does, under load, the old one last without the override, and
//! the engine version rises to 2. No acknowledged instance is lost and no create is
//! refused. A broker announcing a release too far away is refused by its peers, both
//! sides logging one line that names both versions.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rill_protocol::version::{DEBUG_ANNOUNCE_VERSION_ENV, DEBUG_ENGINE_VERSIONS_ENV};
use serde_json::{Value, json};
use support::{Api, Brokers, RillProcess, Workload, deploy};

/// Instances the load creates through every broker's gateway.
const INSTANCES: usize = 2000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Each partition's `engineVersion` in `node`'s `GET /actuator/partitions`; `None` if it
/// does not answer.
async fn engine_versions(node: &RillProcess) -> Option<BTreeMap<String, u64>> {
    let body: Value = reqwest::get(format!("{}/actuator/partitions", node.monitoring()))
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    body.as_object()?
        .iter()
        .map(|(id, p)| Some((id.clone(), p["engineVersion"].as_u64()?)))
        .collect()
}

/// Waits until every running broker reports `version` on each of its `partitions`.
async fn wait_engine_version(
    brokers: &Brokers,
    partitions: usize,
    version: u64,
    timeout: Duration,
) {
    let deadline = Instant::now() + timeout;
    loop {
        let mut seen = Vec::new();
        for node in brokers.nodes.iter().filter(|n| n.is_running()) {
            seen.push(engine_versions(node).await);
        }
        let done = seen.iter().all(|versions| {
            versions
                .as_ref()
                .is_some_and(|v| v.len() == partitions && v.values().all(|&found| found == version))
        });
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not every partition at engine version {version} after {timeout:?}: {seen:?}\n{}",
            brokers.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A create with an operation reference (a `Referenced` command, which needs engine
/// version 2): the status and body.
async fn create_with_reference(api: &Api) -> (u16, Value) {
    let body = json!({"processDefinitionId": "two-rest-calls", "operationReference": 7});
    api.post("/v2/process-instances", body)
        .await
        .expect("the gateway answers")
}

#[test]
fn the_engine_version_rises_once_the_old_broker_is_replaced_and_nothing_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::prepare(dir.path(), 3, 2, 3, &[], |_| Vec::new());
        brokers.nodes[2]
            .env
            .push((DEBUG_ENGINE_VERSIONS_ENV.to_owned(), "1..=1".to_owned()));
        for node in &mut brokers.nodes {
            node.launch();
        }
        brokers.wait_ready(Duration::from_secs(60)).await;
        deploy(&brokers.api(0), &["two-rest-calls.bpmn"]).await;
        let apis: Vec<Api> = (0..3).map(|i| brokers.api(i)).collect();
        // Enough that the load still runs when the last broker is replaced (a job whose
        // completion was applied but whose answer was lost in a restart is never counted,
        // so progress is only awaited well before the end).
        let load = Workload::start(apis, INSTANCES);
        load.progress(20, Duration::from_secs(60), &brokers).await;

        // The old broker holds the cluster at engine version 1, however long it runs.
        tokio::time::sleep(Duration::from_secs(4)).await;
        wait_engine_version(&brokers, 2, 1, Duration::from_secs(5)).await;
        brokers.nodes[0]
            .wait_log(Duration::from_secs(10), |log| {
                log.contains("the cluster's engine version stays at most 1 while brokers [2]")
            })
            .await;
        let (status, body) = create_with_reference(&brokers.api(0)).await;
        assert_eq!(status, 409, "{body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("needs engine version 2")
                && detail.contains("the cluster runs engine version 1"),
            "{body}"
        );
        let gauge = brokers.nodes[0].metric("rill_engine_version").await;
        assert!(
            gauge.len() == 2 && gauge.values().all(|&v| v == 1.0),
            "{gauge:?}"
        );

        // The rolling upgrade: one broker at a time, the old one last.
        for i in 0..3 {
            assert!(
                brokers.nodes[i].terminate(Duration::from_secs(30)),
                "broker {i} stops cleanly\n{}",
                brokers.logs()
            );
            load.progress(10, Duration::from_secs(60), &brokers).await;
            brokers.nodes[i].env.clear();
            brokers.nodes[i].launch();
            brokers.nodes[i].wait_ready(Duration::from_secs(60)).await;
            load.progress(10, Duration::from_secs(60), &brokers).await;
        }

        // Every broker now applies 2: it rises within seconds, on its own.
        wait_engine_version(&brokers, 2, 2, Duration::from_secs(30)).await;
        let (status, body) = create_with_reference(&brokers.api(1)).await;
        assert_eq!(status, 200, "{body}");
        let gauge = brokers.nodes[1].metric("rill_engine_version").await;
        assert!(
            gauge.len() == 2 && gauge.values().all(|&v| v == 2.0),
            "{gauge:?}"
        );

        // Every acknowledged create completes (creates were never refused: the load
        // fails on any answer but 200 and a retryable 5xx).
        let keys = load
            .finish(&brokers.api(2), Duration::from_secs(180), &brokers)
            .await;
        assert_eq!(keys.len(), INSTANCES);
    });
}

#[test]
fn a_broker_of_a_release_too_far_away_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::prepare(
            dir.path(),
            3,
            1,
            3,
            &["cluster.configuration-discovery-timeout=2s"],
            |_| Vec::new(),
        );
        brokers.nodes[2]
            .env
            .push((DEBUG_ANNOUNCE_VERSION_ENV.to_owned(), "9.0.0".to_owned()));
        for node in &mut brokers.nodes {
            node.launch();
        }
        // The other two are a quorum and serve.
        brokers.nodes[0].wait_ready(Duration::from_secs(60)).await;
        brokers.nodes[1].wait_ready(Duration::from_secs(60)).await;
        let ours = format!("Rill {}", rill_protocol::BROKER_VERSION);
        for i in [0, 2] {
            let log = brokers.nodes[i]
                .wait_log(Duration::from_secs(30), |log| {
                    log.lines().any(|line| {
                        line.contains("incompatible versions")
                            && line.contains("Rill 9.0.0")
                            && line.contains(&ours)
                    })
                })
                .await;
            assert!(log.contains("major"), "broker {i}:\n{log}");
        }
        let page = support::metrics(&brokers.nodes[0]).await;
        let refused: f64 = page
            .lines()
            .filter(|line| line.starts_with("rill_transport_incompatible_peers_total{"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert!(refused >= 1.0, "{page}");
        // It never counts as a broker that applies engine version 2.
        tokio::time::sleep(Duration::from_secs(3)).await;
        for i in [0, 1] {
            let versions = engine_versions(&brokers.nodes[i]).await.expect("answers");
            assert!(versions.values().all(|&v| v == 1), "{versions:?}");
        }
    });
}
