//! A running cluster grows and shrinks through the cluster management API, with real
//! `rill broker` processes under load: 3 brokers (3 partitions, 3 replicas each) grow to
//! 5 while instances are created and completed; partition 1's leader, which runs the
//! change, is killed with SIGKILL in the middle of it, and the next leader of partition 1
//! resumes it. Every acknowledged instance completes, each once; every partition ends
//! with exactly 3 replicas, one leader, and the new brokers hold replicas. Then the
//! cluster shrinks back to 3 brokers, moving the replicas off the brokers that go.

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

async fn request(
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> Option<(u16, Value)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let mut builder = client.request(method, url);
    if let Some(body) = body {
        builder = builder.json(&body);
    }
    let response = builder.send().await.ok()?;
    let status = response.status().as_u16();
    let text = response.text().await.ok()?;
    Some((
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    ))
}

/// `GET /actuator/cluster` of `node`, if it answers.
async fn configuration(node: &RillProcess) -> Option<Value> {
    match request(
        reqwest::Method::GET,
        format!("{}/actuator/cluster", node.monitoring()),
        None,
    )
    .await
    {
        Some((200, body)) => Some(body),
        _ => None,
    }
}

/// The replicas and leaders of every partition as broker `via`'s gateway reports them
/// (`GET /v2/topology`): partition → (nodes holding it, nodes leading it).
async fn placement(brokers: &Brokers, via: usize) -> Option<BTreeMap<u64, (Vec<u64>, Vec<u64>)>> {
    let (status, topology) = brokers.api(via).get("/v2/topology").await.ok()?;
    if status != 200 {
        return None;
    }
    let mut placed: BTreeMap<u64, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for broker in topology["brokers"].as_array()? {
        let node = broker["nodeId"].as_u64()?;
        for partition in broker["partitions"].as_array()? {
            let entry = placed
                .entry(partition["partitionId"].as_u64()?)
                .or_default();
            entry.0.push(node);
            if partition["role"] == "leader" {
                entry.1.push(node);
            }
        }
    }
    Some(placed)
}

/// Waits until broker `via`'s gateway shows every partition on exactly the `expected`
/// nodes, with one leader among them.
async fn wait_placement(
    brokers: &Brokers,
    via: usize,
    expected: &BTreeMap<u64, Vec<u64>>,
    logs: impl Fn() -> String,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let placed = placement(brokers, via).await;
        let matches = placed.as_ref().is_some_and(|placed| {
            placed.len() == expected.len()
                && expected.iter().all(|(p, nodes)| {
                    placed.get(p).is_some_and(|(held, leaders)| {
                        let mut held = held.clone();
                        held.sort_unstable();
                        held == *nodes && leaders.len() == 1 && nodes.contains(&leaders[0])
                    })
                })
        });
        if matches {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "partitions placed {placed:?}, expected {expected:?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the change `id` completed, as broker `via` reports it.
async fn wait_change_completed(via: &RillProcess, id: u64, logs: impl Fn() -> String) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let reported = configuration(via).await;
        if let Some(reported) = &reported
            && reported.get("pendingChange").is_none()
            && reported["lastChange"]["id"] == id
        {
            assert_eq!(reported["lastChange"]["status"], "COMPLETED", "{reported}");
            return reported.clone();
        }
        assert!(
            Instant::now() < deadline,
            "change {id} did not complete: {reported:?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn partitions_of(reported: &Value, broker: u64) -> Vec<u64> {
    reported["brokers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == broker)
        .map(|b| {
            b["partitions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["id"].as_u64().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

fn all_logs(brokers: &Brokers, new_brokers: &[RillProcess]) -> String {
    let mut text = brokers.logs();
    for (i, node) in new_brokers.iter().enumerate() {
        text.push_str(&format!("--- broker {} ---\n{}", i + 3, node.log_text()));
    }
    text
}

#[test]
fn a_cluster_grows_to_five_brokers_through_a_kill_and_shrinks_back_to_three() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        deploy(&brokers.api(0), &["two-rest-calls.bpmn"]).await;
        let new_brokers = [
            extra_broker(&brokers, dir.path(), 3),
            extra_broker(&brokers, dir.path(), 4),
        ];
        for joining in &new_brokers {
            joining
                .wait_log(Duration::from_secs(60), |log| {
                    log.contains("not a member of the cluster")
                })
                .await;
        }
        let apis = vec![brokers.api(0), brokers.api(1), brokers.api(2)];
        let workload = Workload::start(apis.clone(), 150);
        workload
            .progress(20, Duration::from_secs(60), &brokers)
            .await;

        // Grow to 5 brokers and 6 partitions with the CLI, on a broker that may or may not
        // lead partition 1.
        let (ok, out, err) = rill_cluster(
            &brokers.nodes[1],
            &["scale", "--brokers", "5", "--partitions", "6"],
        );
        assert!(ok, "{err}\n{}", all_logs(&brokers, &new_brokers));
        assert!(out.starts_with("change 2 started:"), "{out}");
        assert!(out.contains("BROKER_ADD broker 3"), "{out}");
        assert!(out.contains("PARTITION_JOIN broker 4 partition 3"), "{out}");
        assert!(
            out.contains("PARTITION_LEAVE broker 0 partition 2"),
            "{out}"
        );
        assert!(out.contains("PARTITION_BOOTSTRAP"), "{out}");

        // Kill partition 1's leader, the coordinator, while the change runs.
        let coordinator = brokers
            .wait_leader(1, Duration::from_secs(30))
            .await
            .expect("partition 1 has a leader") as usize;
        let survivor = (coordinator + 1) % 3;
        let at_kill = configuration(&brokers.nodes[survivor])
            .await
            .expect("the management API answers");
        brokers.nodes[coordinator].kill9();
        assert!(at_kill.get("pendingChange").is_some(), "{at_kill}");
        let (ok, out, err) = rill_cluster(&brokers.nodes[survivor], &["status"]);
        assert!(ok, "{err}");
        assert!(out.contains("change 2 in progress"), "{out}");

        // Without it, the next leader of partition 1 goes on with the change: steps are
        // completed after the kill (times are RFC 3339 in UTC, so they sort as text).
        #[allow(clippy::disallowed_methods)] // compared with the times the broker reports
        let killed_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let reported = configuration(&brokers.nodes[survivor]).await;
            let completed_since = |c: &Value| {
                let steps = c["pendingChange"]["completed"].as_array().cloned();
                steps.unwrap_or_default().iter().any(|s| {
                    s["completedAt"]
                        .as_str()
                        .is_some_and(|at| at > killed_at.as_str())
                })
            };
            let completed = |c: &Value| {
                c.get("pendingChange").is_none()
                    && c["lastChange"]["completedAt"]
                        .as_str()
                        .is_some_and(|at| at > killed_at.as_str())
            };
            if reported
                .as_ref()
                .is_some_and(|c| completed_since(c) || completed(c))
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the change did not resume after the coordinator died: {reported:?}\n{}",
                all_logs(&brokers, &new_brokers)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        brokers.nodes[coordinator].restart();
        let grown = wait_change_completed(&brokers.nodes[survivor], 2, || {
            all_logs(&brokers, &new_brokers)
        })
        .await;

        // Every partition, old and new, has 3 replicas, the new brokers among them, and
        // one leader: partition p on brokers p-1, p and p+1 (mod 5).
        assert_eq!(grown["brokers"].as_array().unwrap().len(), 5, "{grown}");
        assert_eq!(partitions_of(&grown, 3), [2, 3, 4], "{grown}");
        assert_eq!(partitions_of(&grown, 4), [3, 4, 5], "{grown}");
        let expected: BTreeMap<u64, Vec<u64>> = BTreeMap::from([
            (1, vec![0, 1, 2]),
            (2, vec![1, 2, 3]),
            (3, vec![2, 3, 4]),
            (4, vec![0, 3, 4]),
            (5, vec![0, 1, 4]),
            (6, vec![0, 1, 2]),
        ]);
        wait_placement(&brokers, survivor, &expected, || {
            all_logs(&brokers, &new_brokers)
        })
        .await;
        // New instances land on the new partitions too.
        let mut seen = std::collections::BTreeSet::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !(4..=6).all(|p| seen.contains(&p)) {
            assert!(
                Instant::now() < deadline,
                "no new instance on partitions 4-6 yet: {seen:?}"
            );
            let body = json!({"processDefinitionId": "two-rest-calls"});
            if let Ok((200, created)) = brokers
                .api(survivor)
                .post("/v2/process-instances", body)
                .await
                && let Some(key) = created["processInstanceKey"].as_str()
            {
                seen.insert(key.parse::<u64>().expect("a key") >> 51);
            }
        }
        // The gateway's topology follows: five brokers, without a restart.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, topology) = brokers.api(survivor).get("/v2/topology").await.unwrap();
            if topology["clusterSize"] == 5 {
                break;
            }
            assert!(Instant::now() < deadline, "{topology}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The replicas that moved off are gone from disk, also on the broker that was
        // killed in the middle.
        let deadline = Instant::now() + Duration::from_secs(30);
        let left = [
            dir.path().join("broker-0/partition-2"),
            dir.path().join("broker-0/partition-3"),
            dir.path().join("broker-1/partition-3"),
        ];
        while left.iter().any(|p| p.exists()) {
            assert!(
                Instant::now() < deadline,
                "left replicas still on disk: {left:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(dir.path().join("broker-3/partition-2").exists());
        assert!(dir.path().join("broker-4/partition-3").exists());

        // Every acknowledged instance completed, each once.
        let keys = workload
            .finish(&brokers.api(survivor), Duration::from_secs(120), &brokers)
            .await;
        assert_eq!(keys.len(), 150);

        // Shrink back to 3 brokers under load: brokers 3 and 4 hand their replicas back.
        let workload = Workload::start(apis, 60);
        let (status, planned) = request(
            reqwest::Method::PATCH,
            format!("{}/actuator/cluster", new_brokers[0].monitoring()),
            Some(json!({"brokers": {"remove": [3, 4]}})),
        )
        .await
        .expect("the management API answers");
        assert_eq!(status, 202, "{planned}");
        let id = planned["changeId"].as_u64().unwrap();
        let steps = planned["plannedChanges"].as_array().unwrap();
        assert_eq!(
            steps.last().unwrap(),
            &json!({"operation": "BROKER_REMOVE", "brokerId": 4})
        );
        let shrunk =
            wait_change_completed(&brokers.nodes[0], id, || all_logs(&brokers, &new_brokers)).await;
        let ids: Vec<&Value> = shrunk["brokers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| &b["id"])
            .collect();
        assert_eq!(ids, [&json!(0), &json!(1), &json!(2)]);
        let expected: BTreeMap<u64, Vec<u64>> = (1..=6).map(|p| (p, vec![0, 1, 2])).collect();
        wait_placement(&brokers, 0, &expected, || all_logs(&brokers, &new_brokers)).await;
        workload
            .finish(&brokers.api(0), Duration::from_secs(120), &brokers)
            .await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let left = [
            dir.path().join("broker-3/partition-2"),
            dir.path().join("broker-3/partition-3"),
            dir.path().join("broker-4/partition-3"),
        ];
        while left.iter().any(|p| p.exists()) {
            assert!(
                Instant::now() < deadline,
                "left replicas still on disk: {left:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (ok, out, err) = rill_cluster(&brokers.nodes[2], &["status"]);
        assert!(ok, "{err}");
        assert!(out.contains("no change in progress"), "{out}");
        assert!(
            out.contains(&format!("last change {id}: COMPLETED")),
            "{out}"
        );
    });
}

/// A gateway apart (`rill gateway`) knows only its contact points; it follows the
/// brokers that changes add and remove. Three partitions with one replica each on two
/// brokers: growing to three brokers moves partition 3, and with it its only leader, to
/// broker 2, which the gateway was never told of. It routes there without a restart, and
/// forgets broker 2 again when the cluster shrinks back.
#[test]
fn a_gateway_apart_follows_the_brokers_changes_add_and_remove() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 2, 3, 1, &[]);
        let contacts: Vec<String> = brokers
            .options
            .iter()
            .map(|options| {
                let port = options
                    .iter()
                    .find_map(|o| o.strip_prefix("cluster.command-port="))
                    .expect("a command port");
                format!("127.0.0.1:{port}")
            })
            .collect();
        let contact = format!("gateway.contact-points={}", contacts.join(","));
        let mut gateway =
            RillProcess::start_role("gateway", &dir.path().join("gateway"), &[&contact]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        gateway.wait_ready(Duration::from_secs(60)).await;
        let apart = support::Api::new(gateway.rest());
        deploy(&apart, &["two-rest-calls.bpmn"]).await;
        let joining = extra_broker(&brokers, dir.path(), 2);
        joining
            .wait_log(Duration::from_secs(60), |log| {
                log.contains("not a member of the cluster")
            })
            .await;
        let logs = || {
            format!(
                "{}--- broker 2 ---\n{}--- gateway ---\n{}",
                brokers.logs(),
                joining.log_text(),
                gateway.log_text()
            )
        };

        let (ok, out, err) = rill_cluster(&brokers.nodes[0], &["scale", "--brokers", "3"]);
        assert!(ok, "{err}\n{}", logs());
        let id: u64 = out
            .strip_prefix("change ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        wait_change_completed(&brokers.nodes[0], id, logs).await;

        // The gateway's topology lists broker 2 as partition 3's leader, and instances
        // created through it land on partition 3 too and complete.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, topology) = apart.get("/v2/topology").await.expect("topology");
            let leads_3 = topology["brokers"].as_array().is_some_and(|brokers| {
                brokers.iter().any(|b| {
                    b["nodeId"] == 2
                        && b["partitions"].as_array().is_some_and(|ps| {
                            ps.iter()
                                .any(|p| p["partitionId"] == 3 && p["role"] == "leader")
                        })
                })
            });
            if leads_3 {
                break;
            }
            assert!(Instant::now() < deadline, "{topology}\n{}", logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let workload = Workload::start(vec![apart.clone()], 30);
        let keys = workload
            .finish(&apart, Duration::from_secs(120), &brokers)
            .await;
        let partition_3 = keys
            .iter()
            .filter(|key| key.parse::<u64>().is_ok_and(|k| k >> 51 == 3))
            .count();
        assert!(partition_3 > 0, "no instance on partition 3: {keys:?}");
        assert!(
            gateway
                .log_text()
                .contains("a cluster change added a broker")
        );

        // Shrinking back: partition 3 returns to broker 0, and the gateway no longer
        // asks broker 2 (which still runs, outside the cluster).
        // Asked of broker 0, whose view has seen the first change complete.
        let (ok, out, err) = rill_cluster(&brokers.nodes[0], &["scale", "--brokers", "2"]);
        assert!(ok, "{err}\n{}", logs());
        let id: u64 = out
            .strip_prefix("change ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        wait_change_completed(&brokers.nodes[0], id, logs).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, topology) = apart.get("/v2/topology").await.expect("topology");
            let nodes: Vec<&Value> = topology["brokers"]
                .as_array()
                .map(|brokers| brokers.iter().map(|b| &b["nodeId"]).collect())
                .unwrap_or_default();
            if nodes == [&json!(0), &json!(1)] {
                break;
            }
            assert!(Instant::now() < deadline, "{topology}\n{}", logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let workload = Workload::start(vec![apart.clone()], 12);
        workload
            .finish(&apart, Duration::from_secs(120), &brokers)
            .await;
        assert!(
            gateway
                .log_text()
                .contains("a cluster change removed a broker"),
            "{}",
            gateway.log_text()
        );
    });
}
