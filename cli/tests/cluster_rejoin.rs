//! Replicas that come back, brokers that lost their data, and changes that get stuck,
//! with real `rill broker` processes:
//!
//! - broker 2 of three is scaled out (its replicas move off and are deleted), loses its
//!   data directory, and starts again: it takes the running cluster's configuration
//!   from its peers, not the initial one of its settings; scaled back in, it gets the
//!   replicas of the cluster as created again, which join the running partitions (they
//!   never start a raft group of their own) and catch up with everything written
//!   before; instances created before complete afterwards, with one leader per
//!   partition;
//! - `rill cluster scale --wait` gives up after `--timeout` on a stuck change, `rill
//!   cluster cancel` cancels it (the steps done stay done), and a new change goes on
//!   from there.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Brokers, RillProcess, Workload, deploy, extra_broker, rill_cluster};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// `GET /actuator/cluster` of `node`, if it answers.
async fn configuration(node: &RillProcess) -> Option<Value> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .ok()?;
    let response = client
        .get(format!("{}/actuator/cluster", node.monitoring()))
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

fn partitions_of(reported: &Value, broker: u64) -> Vec<u64> {
    reported["brokers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["id"] == broker)
        .map(|b| {
            b["partitions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["id"].as_u64())
                .collect()
        })
        .unwrap_or_default()
}

/// The partitions each broker leads by its own account (`rill_raft_role` 3), for the
/// partitions it holds according to `placement` (partition → brokers).
async fn leaders(
    brokers: &Brokers,
    placement: &BTreeMap<u64, Vec<u64>>,
) -> BTreeMap<u64, Vec<u64>> {
    let mut leaders: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (i, node) in brokers.nodes.iter().enumerate() {
        let roles = node.metric("rill_raft_role").await;
        for (partition, holders) in placement {
            if holders.contains(&(i as u64)) && roles.get(&partition.to_string()) == Some(&3.0) {
                leaders.entry(*partition).or_default().push(i as u64);
            }
        }
    }
    leaders
}

/// Waits until every partition of `placement` has exactly one leader among its
/// replicas, by their own account.
async fn wait_one_leader_each(
    brokers: &Brokers,
    placement: &BTreeMap<u64, Vec<u64>>,
    timeout: Duration,
) -> BTreeMap<u64, Vec<u64>> {
    let deadline = Instant::now() + timeout;
    loop {
        let found = leaders(brokers, placement).await;
        if placement
            .keys()
            .all(|p| found.get(p).is_some_and(|l| l.len() == 1))
        {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "leaders {found:?} of {placement:?}\n{}",
            brokers.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn a_broker_scaled_out_and_back_in_rejoins_its_partitions_with_their_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        // 3 brokers, 3 partitions, 2 replicas: 1 on {0,1}, 2 on {1,2}, 3 on {2,0}. With
        // two replicas, every entry needs both: a replica that is not really part of
        // its partition's group stops the partition.
        let mut brokers = Brokers::start(dir.path(), 3, 3, 2, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        // A new cluster: the brokers saw that the others had no configuration either
        // (those that came later may have taken version 1 from one that had decided), and
        // none waited for the discovery timeout.
        let mut creating = 0;
        for node in &brokers.nodes {
            let log = node.log_text();
            if log.contains("the cluster is being created") {
                creating += 1;
            } else {
                assert!(log.contains("adopted version 1 from node"), "{log}");
            }
            assert!(!log.contains("no contact point told one"), "{log}");
        }
        assert!(creating >= 1, "{}", brokers.logs());
        let api = brokers.api(0);
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let mut before = Vec::new();
        for i in 0..24 {
            before.push(brokers.api(i % 3).create("two-rest-calls", json!({})).await);
        }

        // Scale broker 2 out, following the change to its end.
        let (ok, out, err) = rill_cluster(
            &brokers.nodes[0],
            &["scale", "--brokers", "2", "--wait", "--timeout", "60s"],
        );
        assert!(ok, "{out}\n{err}\n{}", brokers.logs());
        assert!(out.starts_with("change 2 started:"), "{out}");
        assert!(out.contains("step(s) done"), "{out}");
        assert!(out.ends_with("change 2 completed\n"), "{out}");
        let shrunk = configuration(&brokers.nodes[0])
            .await
            .expect("configuration");
        assert!(partitions_of(&shrunk, 2).is_empty(), "{shrunk}");
        let broker_2 = dir.path().join("broker-2");
        let deadline = Instant::now() + Duration::from_secs(30);
        while ["partition-2", "partition-3"]
            .iter()
            .any(|p| broker_2.join(p).exists())
        {
            assert!(Instant::now() < deadline, "broker 2 kept its replicas");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // Broker 2 loses its data directory and starts again: it asks its peers and
        // takes their configuration, in which it holds nothing.
        brokers.nodes[2].kill9();
        std::fs::remove_dir_all(&broker_2).expect("wipe broker 2");
        let wiped_at = brokers.nodes[2].log_text().len();
        brokers.nodes[2].restart();
        let version = shrunk["version"].as_u64().unwrap();
        let adopted = format!("adopted version {version} from node");
        let log = brokers.nodes[2]
            .wait_log(Duration::from_secs(30), |log| {
                log[wiped_at..].contains("not a member of the cluster")
            })
            .await;
        let since_wipe = &log[wiped_at..];
        assert!(since_wipe.contains(&adopted), "{since_wipe}");
        assert!(!since_wipe.contains("starting a replica"), "{since_wipe}");
        let reported = configuration(&brokers.nodes[2])
            .await
            .expect("configuration");
        assert_eq!(reported["version"].as_u64(), Some(version), "{reported}");
        let stored = std::fs::read_to_string(broker_2.join("cluster/configuration.json"))
            .expect("a stored configuration");
        assert!(
            stored.contains(&format!("\"version\":{version}")),
            "{stored}"
        );
        assert!(!broker_2.join("partition-2").exists());
        assert!(!broker_2.join("partition-3").exists());

        // Scale it back in: partitions 2 and 3 return to where the cluster created
        // them, and broker 2's replicas join the running groups.
        let (ok, out, err) = rill_cluster(
            &brokers.nodes[1],
            &["scale", "--brokers", "3", "--wait", "--timeout", "90s"],
        );
        assert!(ok, "{out}\n{err}\n{}", brokers.logs());
        assert!(out.contains("PARTITION_JOIN broker 2 partition 3"), "{out}");
        let grown = configuration(&brokers.nodes[1])
            .await
            .expect("configuration");
        assert_eq!(partitions_of(&grown, 2), [2, 3], "{grown}");
        let log = brokers.nodes[2].log_text();
        let since_wipe = &log[wiped_at..];
        for partition in [2, 3] {
            let joins = format!("starting a replica of partition {partition} that joins it");
            assert!(since_wipe.contains(&joins), "{since_wipe}");
            let starts = format!("starting a replica of partition {partition} that may start");
            assert!(!since_wipe.contains(&starts), "{since_wipe}");
        }

        // Broker 2's replicas catch up with what was written before they joined, and
        // every partition takes work again.
        let placement: BTreeMap<u64, Vec<u64>> =
            BTreeMap::from([(1, vec![0, 1]), (2, vec![1, 2]), (3, vec![0, 2])]);
        let led = wait_one_leader_each(&brokers, &placement, Duration::from_secs(30)).await;
        let mut written = BTreeMap::new();
        for partition in [2u64, 3] {
            let leader = led[&partition][0] as usize;
            let applied = brokers.nodes[leader]
                .metric("rill_raft_applied_index")
                .await;
            written.insert(partition.to_string(), applied[&partition.to_string()]);
        }
        let apis = vec![brokers.api(0), brokers.api(1), brokers.api(2)];
        let workload = Workload::start(apis, 24);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let applied = brokers.nodes[2].metric("rill_raft_applied_index").await;
            if written
                .iter()
                .all(|(p, &index)| applied.get(p).is_some_and(|&a| a >= index && a > 0.0))
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "broker 2 applied {applied:?}, the leaders {written:?}\n{}",
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let keys = workload
            .finish(&api, Duration::from_secs(60), &brokers)
            .await;
        assert_eq!(keys.len(), 24);
        // The instances created before complete too.
        api.wait_completed(&before, Duration::from_secs(30), || brokers.logs())
            .await;
        // One leader per partition, among its replicas, the one broker 2's gateway
        // routes to.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let led = wait_one_leader_each(&brokers, &placement, Duration::from_secs(10)).await;
            let mut routed = BTreeMap::new();
            for &partition in led.keys() {
                routed.insert(partition, brokers.leader_of(2, partition).await);
            }
            if led.iter().all(|(p, l)| routed[p] == Some(l[0])) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "leaders {led:?}, broker 2 routes to {routed:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

#[test]
fn a_stuck_change_is_given_up_by_wait_and_cancelled() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        // 2 brokers, 3 partitions, 1 replica each: growing to 3 brokers moves
        // partition 3 to broker 2.
        let mut brokers = Brokers::start(dir.path(), 2, 3, 1, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let joining = extra_broker(&brokers, dir.path(), 2);
        joining
            .wait_log(Duration::from_secs(30), |log| {
                log.contains("not a member of the cluster")
            })
            .await;
        let logs = |joining: &RillProcess| {
            format!("{}--- broker 2 ---\n{}", brokers.logs(), joining.log_text())
        };
        // Broker 2 announced itself; frozen now, it is added but never catches up.
        tokio::time::sleep(Duration::from_secs(2)).await;
        joining.signal("STOP");
        let (ok, out, err) = rill_cluster(
            &brokers.nodes[0],
            &["scale", "--brokers", "3", "--wait", "--timeout", "4s"],
        );
        assert!(!ok, "{out}\n{err}");
        assert!(out.starts_with("change 2 started: 3 step(s)"), "{out}");
        assert!(
            out.contains("change 2: 1/3 step(s) done"),
            "{out}\n{err}\n{}",
            logs(&joining)
        );
        assert!(err.contains("change 2 did not complete within 4s"), "{err}");
        assert!(err.contains("rill cluster cancel 2"), "{err}");

        // Cancelled: broker 2 stays added, partition 3 stays where it was.
        let (ok, out, err) = rill_cluster(&brokers.nodes[1], &["cancel", "2"]);
        assert!(ok, "{out}\n{err}\n{}", logs(&joining));
        assert!(out.starts_with("change 2 cancelled"), "{out}");
        assert!(out.contains("last change 2: CANCELLED"), "{out}");
        let cancelled = configuration(&brokers.nodes[0])
            .await
            .expect("configuration");
        assert!(cancelled.get("pendingChange").is_none(), "{cancelled}");
        assert_eq!(
            cancelled["lastChange"]["status"], "CANCELLED",
            "{cancelled}"
        );
        assert_eq!(cancelled["brokers"].as_array().map(Vec::len), Some(3));
        assert!(partitions_of(&cancelled, 2).is_empty(), "{cancelled}");
        assert_eq!(partitions_of(&cancelled, 0), [1, 3], "{cancelled}");
        // Neither again, nor a change never heard of.
        let (ok, _, err) = rill_cluster(&brokers.nodes[0], &["cancel", "2"]);
        assert!(
            !ok && err.contains("409") && err.contains("not in progress"),
            "{err}"
        );
        let (ok, _, err) = rill_cluster(&brokers.nodes[0], &["cancel", "99"]);
        assert!(!ok && err.contains("404"), "{err}");

        // Broker 2 goes on; a new change plans from where the cancelled one stopped.
        joining.signal("CONT");
        let (ok, out, err) = rill_cluster(
            &brokers.nodes[0],
            &["scale", "--brokers", "3", "--wait", "--timeout", "60s"],
        );
        assert!(ok, "{out}\n{err}\n{}", logs(&joining));
        assert!(!out.contains("BROKER_ADD"), "{out}");
        assert!(out.contains("PARTITION_JOIN broker 2 partition 3"), "{out}");
        assert!(out.ends_with("completed\n"), "{out}");
        let grown = configuration(&brokers.nodes[0])
            .await
            .expect("configuration");
        assert_eq!(partitions_of(&grown, 2), [3], "{grown}");
        assert_eq!(partitions_of(&grown, 0), [1], "{grown}");
        brokers.nodes.push(joining);
        brokers.wait_ready(Duration::from_secs(30)).await;
        deploy(&brokers.api(0), &["two-rest-calls.bpmn"]).await;
        let workload = Workload::start(vec![brokers.api(0), brokers.api(1)], 12);
        workload
            .finish(&brokers.api(0), Duration::from_secs(60), &brokers)
            .await;
    });
}
