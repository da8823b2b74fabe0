//! Leadership rebalancing with real `rill broker` processes (issue 43): 3 brokers, 3
//! partitions, replication factor 3, so partition `p` prefers broker `p - 1` (the first
//! of its replicas).
//!
//! - With `raft.auto-rebalance=false`, a rolling restart leaves partitions led by
//!   brokers that are not their preferred replica. `POST /actuator/rebalance?dryRun=true`
//!   (and `rill cluster rebalance --dry-run`) answers the plan and moves nothing;
//!   `POST /actuator/rebalance` moves each such partition to its preferred broker and
//!   says so (TRANSFERRED); afterwards every partition is led by its preferred broker.
//!   A load runs through all of it and loses no acknowledged instance.
//! - With the default (`raft.auto-rebalance` on), a broker that restarts leads its
//!   partition again within 30 s, with no one asking.
//! - With five replicas (one partition), the preferred replica needs votes beyond the
//!   old leader's: it stands again once the other voters' leases ran out, and leads.
//! - A standalone answers that its partitions are led where they should be, and a bad
//!   `dryRun` is refused with the parameter named.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers, RillProcess, replica_roles, rill_cluster};

const BROKERS: usize = 3;
const PARTITIONS: u64 = 3;
/// Issue 43's bar for leaders back on their preferred brokers after a restart.
const AUTOMATIC_BAR: Duration = Duration::from_secs(30);

/// A process that ends as soon as it starts: an acknowledged create is a finished
/// instance, easy to look for afterwards.
const PROBE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    id="rebalance-definitions" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="rebalance-probe" name="Rebalance probe" isExecutable="true">
    <bpmn:startEvent id="requested" name="Requested">
      <bpmn:outgoing>to-done</bpmn:outgoing>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="to-done" sourceRef="requested" targetRef="done" />
    <bpmn:endEvent id="done" name="Done">
      <bpmn:incoming>to-done</bpmn:incoming>
    </bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>
"#;

/// Creates through every gateway until stopped, noting each acknowledged instance and
/// when it was acknowledged.
struct Load {
    acknowledged: Arc<Mutex<Vec<(String, Instant)>>>,
    stop: Arc<AtomicBool>,
    creators: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(apis: &[Api]) -> Load {
        let acknowledged: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let creators = (0..2)
            .map(|c| {
                let (apis, acknowledged, stop) =
                    (apis.to_vec(), acknowledged.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut turn = c;
                    while !stop.load(Ordering::Relaxed) {
                        turn += 1;
                        let body = json!({"processDefinitionId": "rebalance-probe"});
                        if let Ok((200, v)) = apis[turn % apis.len()]
                            .post("/v2/process-instances", body)
                            .await
                            && let Some(key) = v["processInstanceKey"].as_str()
                        {
                            acknowledged
                                .lock()
                                .unwrap()
                                .push((key.to_owned(), Instant::now()));
                        }
                        tokio::time::sleep(Duration::from_millis(40)).await;
                    }
                })
            })
            .collect();
        Load {
            acknowledged,
            stop,
            creators,
        }
    }

    fn count(&self) -> usize {
        self.acknowledged.lock().unwrap().len()
    }

    /// Waits until `more` further creates were acknowledged.
    async fn progress(&self, more: usize, timeout: Duration, brokers: &Brokers) {
        let target = self.count() + more;
        let deadline = Instant::now() + timeout;
        while self.count() < target {
            assert!(
                Instant::now() < deadline,
                "creates stalled at {}\n{}",
                self.count(),
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The longest time between two acknowledged creates within `from..to`.
    fn largest_gap(&self, from: Instant, to: Instant) -> Duration {
        let mut times: Vec<Instant> = self
            .acknowledged
            .lock()
            .unwrap()
            .iter()
            .map(|(_, at)| *at)
            .filter(|at| *at >= from && *at <= to)
            .collect();
        times.sort();
        let mut edges = vec![from];
        edges.extend(times);
        edges.push(to);
        edges
            .windows(2)
            .map(|w| w[1].duration_since(w[0]))
            .max()
            .unwrap_or_default()
    }

    /// Stops creating and checks that every acknowledged instance is there, completed.
    async fn finish(self, api: &Api) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        for creator in self.creators {
            creator.await.expect("creator");
        }
        let keys: Vec<String> = self
            .acknowledged
            .lock()
            .unwrap()
            .iter()
            .map(|(key, _)| key.clone())
            .collect();
        let distinct: BTreeSet<&String> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len(), "instance keys are unique");
        for key in &keys {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let answer = api.get(&format!("/v2/process-instances/{key}")).await.ok();
                if let Some((200, body)) = &answer {
                    assert_eq!(body["state"], "COMPLETED", "{body}");
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "acknowledged instance {key} is not found: {answer:?}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        keys.len()
    }
}

/// Deploys the probe through `api`.
async fn deploy_probe(api: &Api, dir: &std::path::Path) {
    let model = dir.join("rebalance-probe.bpmn");
    std::fs::write(&model, PROBE).expect("write the model");
    let (status, body) = api.deploy(&[&model]).await.expect("deploy");
    assert_eq!(status, 200, "{body}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The preferred broker of `partition`: the first of its replicas, placed round-robin.
fn preferred(partition: u64) -> u64 {
    (partition - 1) % BROKERS as u64
}

/// Who claims to lead each partition, by the brokers' own `GET /actuator/partitions`.
async fn leaders(brokers: &Brokers) -> BTreeMap<u64, Vec<u64>> {
    let mut found: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (i, node) in brokers.nodes.iter().enumerate() {
        if !node.is_running() {
            continue;
        }
        for (partition, _, role) in replica_roles(node).await.unwrap_or_default() {
            if role == "LEADER" {
                found.entry(partition).or_default().push(i as u64);
            }
        }
    }
    found
}

/// Waits until every partition has exactly one leader, and answers them.
async fn settled_leaders(brokers: &Brokers, timeout: Duration) -> BTreeMap<u64, u64> {
    let deadline = Instant::now() + timeout;
    loop {
        let found = leaders(brokers).await;
        if (1..=PARTITIONS).all(|p| found.get(&p).is_some_and(|l| l.len() == 1)) {
            return found.into_iter().map(|(p, l)| (p, l[0])).collect();
        }
        assert!(
            Instant::now() < deadline,
            "no single leader per partition within {timeout:?}: {found:?}\n{}",
            brokers.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `POST /actuator/rebalance` on broker `via`'s management port.
async fn rebalance(brokers: &Brokers, via: usize, dry_run: bool) -> Value {
    let query = if dry_run { "?dryRun=true" } else { "" };
    let (status, body) = post_rebalance(&brokers.nodes[via], query).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// `POST /actuator/rebalance{query}` on `node`'s management port: status and body.
async fn post_rebalance(node: &RillProcess, query: &str) -> (u16, Value) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let response = client
        .post(format!("{}/actuator/rebalance{query}", node.monitoring()))
        .send()
        .await
        .expect("rebalance answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON answer"))
}

/// The result the rebalance answer gives `partition`.
fn result_of(answer: &Value, partition: u64) -> String {
    answer["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["partitionId"] == partition)
        .and_then(|p| p["result"].as_str())
        .unwrap_or_else(|| panic!("no line for partition {partition}: {answer}"))
        .to_owned()
}

#[test]
fn a_rebalance_after_a_rolling_restart_puts_every_leader_back_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(
            dir.path(),
            BROKERS as u32,
            PARTITIONS as u16,
            3,
            &["raft.auto-rebalance=false"],
        );
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<_> = (0..BROKERS).map(|i| brokers.api(i)).collect();
        deploy_probe(&apis[0], dir.path()).await;
        let load = Load::start(&apis);
        load.progress(20, Duration::from_secs(60), &brokers).await;

        // A rolling restart, as a StatefulSet does it: each broker in turn stops, and the
        // next goes once the restarted one is ready.
        for victim in [2, 1, 0] {
            assert!(
                brokers.nodes[victim].terminate(Duration::from_secs(30)),
                "broker {victim} stops cleanly"
            );
            let moved = Instant::now();
            loop {
                let found = leaders(&brokers).await;
                if (1..=PARTITIONS).all(|p| found.get(&p).is_some_and(|l| !l.is_empty())) {
                    break;
                }
                assert!(
                    moved.elapsed() < Duration::from_secs(30),
                    "partitions without a leader after broker {victim} stopped: {found:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            brokers.nodes[victim].launch();
            brokers.wait_ready(Duration::from_secs(60)).await;
            load.progress(10, Duration::from_secs(60), &brokers).await;
        }
        let before = settled_leaders(&brokers, Duration::from_secs(30)).await;
        let misplaced: Vec<u64> = (1..=PARTITIONS)
            .filter(|&p| before[&p] != preferred(p))
            .collect();
        assert!(
            !misplaced.is_empty(),
            "the rolling restart left every partition on its preferred broker: {before:?}"
        );
        eprintln!("REBALANCE leaders after the rolling restart: {before:?}");

        // The dry run plans and moves nothing.
        let plan = rebalance(&brokers, 0, true).await;
        assert_eq!(plan["dryRun"], true, "{plan}");
        for p in 1..=PARTITIONS {
            let want = if misplaced.contains(&p) {
                "PLANNED"
            } else {
                "ALREADY_LEADER"
            };
            assert_eq!(result_of(&plan, p), want, "partition {p}: {plan}");
        }
        // The same through `rill cluster rebalance --dry-run`.
        let (ok, out, err) = rill_cluster(&brokers.nodes[2], &["rebalance", "--dry-run"]);
        assert!(ok, "{out}{err}");
        assert!(out.contains("PLANNED") && out.contains("dry run"), "{out}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            settled_leaders(&brokers, Duration::from_secs(10)).await,
            before,
            "a dry run moved a leader"
        );

        // The rebalance, asked on a broker that leads nothing it should not.
        let asked_at = Instant::now();
        let done = rebalance(&brokers, 1, false).await;
        let answered_at = Instant::now();
        load.progress(20, Duration::from_secs(60), &brokers).await;
        let gap = load.largest_gap(asked_at, answered_at);
        eprintln!(
            "REBALANCE answer after {:?}, largest create gap meanwhile {gap:?}: {done}",
            answered_at.duration_since(asked_at)
        );
        // A hand-over stops intake for a round trip and an election, not a failover.
        assert!(
            gap < Duration::from_secs(3),
            "creates paused {gap:?} during the rebalance"
        );
        assert_eq!(done["dryRun"], false, "{done}");
        for p in 1..=PARTITIONS {
            let want = if misplaced.contains(&p) {
                "TRANSFERRED"
            } else {
                "ALREADY_LEADER"
            };
            assert_eq!(
                result_of(&done, p),
                want,
                "partition {p}: {done}\n{}",
                brokers.logs()
            );
        }
        let after = settled_leaders(&brokers, Duration::from_secs(10)).await;
        for p in 1..=PARTITIONS {
            assert_eq!(
                after[&p],
                preferred(p),
                "leader of partition {p}: {after:?}"
            );
        }
        // Asked again, there is nothing left to move.
        let again = rebalance(&brokers, 2, true).await;
        for p in 1..=PARTITIONS {
            assert_eq!(result_of(&again, p), "ALREADY_LEADER", "{again}");
        }

        let acknowledged = load.finish(&apis[0]).await;
        eprintln!("REBALANCE {acknowledged} acknowledged instances, all completed");
    });
}

#[test]
fn a_restarted_broker_gets_its_partition_back_by_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), BROKERS as u32, PARTITIONS as u16, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<_> = (0..BROKERS).map(|i| brokers.api(i)).collect();
        deploy_probe(&apis[0], dir.path()).await;
        let load = Load::start(&apis);
        load.progress(20, Duration::from_secs(60), &brokers).await;

        // Broker 1 (partition 2's preferred) goes away; partition 2 moves on.
        assert!(brokers.nodes[1].terminate(Duration::from_secs(30)));
        let moved = Instant::now();
        loop {
            let found = leaders(&brokers).await;
            if found.get(&2).is_some_and(|l| !l.is_empty()) {
                break;
            }
            assert!(moved.elapsed() < Duration::from_secs(30), "{found:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        brokers.nodes[1].launch();
        let restarted = Instant::now();
        brokers.wait_ready(Duration::from_secs(60)).await;
        loop {
            let found = leaders(&brokers).await;
            if (1..=PARTITIONS).all(|p| found.get(&p) == Some(&vec![preferred(p)])) {
                break;
            }
            assert!(
                restarted.elapsed() < AUTOMATIC_BAR,
                "leaders not back on their preferred brokers {AUTOMATIC_BAR:?} after the \
                 restart: {found:?}\n{}",
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!(
            "REBALANCE automatic: leaders back {:?} after the restart",
            restarted.elapsed()
        );
        load.progress(20, Duration::from_secs(60), &brokers).await;
        load.finish(&apis[0]).await;
    });
}

#[test]
fn a_standalone_is_balanced_and_a_bad_dry_run_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut standalone = RillProcess::start(&dir.path().join("data"), &[]);
        standalone.wait_ready(Duration::from_secs(60)).await;
        let (status, body) = post_rebalance(&standalone, "").await;
        assert_eq!(status, 200, "{body}");
        let lines = body["partitions"].as_array().expect("partitions");
        assert!(!lines.is_empty(), "{body}");
        for line in lines {
            assert_eq!(line["result"], "ALREADY_LEADER", "{body}");
            assert_eq!(line["currentLeader"], line["desiredLeader"], "{body}");
        }
        let (status, body) = post_rebalance(&standalone, "?dryRun=maybe").await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("dryRun"),
            "{body}"
        );
    });
}

#[test]
fn with_five_replicas_the_preferred_one_takes_over_once_the_leases_ran_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 5, 1, 5, &["raft.auto-rebalance=false"]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<_> = (0..5).map(|i| brokers.api(i)).collect();
        deploy_probe(&apis[0], dir.path()).await;
        let load = Load::start(&apis);
        load.progress(20, Duration::from_secs(60), &brokers).await;

        // Broker 0, partition 1's preferred replica, restarts: another one leads.
        assert!(brokers.nodes[0].terminate(Duration::from_secs(30)));
        let moved = Instant::now();
        loop {
            if leaders(&brokers)
                .await
                .get(&1)
                .is_some_and(|l| !l.is_empty())
            {
                break;
            }
            assert!(moved.elapsed() < Duration::from_secs(30));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        brokers.nodes[0].launch();
        brokers.wait_ready(Duration::from_secs(60)).await;
        load.progress(20, Duration::from_secs(60), &brokers).await;

        let asked_at = Instant::now();
        let done = rebalance(&brokers, 3, false).await;
        let answered_at = Instant::now();
        load.progress(20, Duration::from_secs(60), &brokers).await;
        let gap = load.largest_gap(asked_at, answered_at);
        eprintln!(
            "REBALANCE five replicas: answer after {:?}, largest create gap {gap:?}: {done}",
            answered_at.duration_since(asked_at)
        );
        assert_eq!(
            result_of(&done, 1),
            "TRANSFERRED",
            "{done}\n{}",
            brokers.logs()
        );
        let found = leaders(&brokers).await;
        assert_eq!(found.get(&1), Some(&vec![0]), "{found:?}");
        // One lease (half of the 1 s election timeout), not a failover.
        assert!(gap < Duration::from_secs(3), "creates paused {gap:?}");
        load.finish(&apis[0]).await;
    });
}
