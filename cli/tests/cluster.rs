//! Cluster tests against real `rill broker` processes on loopback: a broker catching up
//! from a snapshot, a network cut, a rolling restart, messages correlating across
//! partitions, a signal caught on every partition, message start events and call
//! activities. Every test checks that every acknowledged instance finishes. Then the
//! start of a broker: two brokers with one node id, ports in use, peers that are not up
//! yet. Leader kills are in `failover.rs`.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Api, Brokers, RillProcess, Workload, deploy, free_port};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Waits until the series of metric `name` on `node` satisfy `done`; returns them.
async fn wait_metric(
    node: &RillProcess,
    name: &str,
    timeout: Duration,
    done: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, f64> {
    let deadline = Instant::now() + timeout;
    loop {
        let values = node.metric(name).await;
        if done(&values) {
            return values;
        }
        assert!(
            Instant::now() < deadline,
            "{name} is {values:?} after {timeout:?}\n{}",
            node.log_text()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A broker is down while the others take snapshots and purge their logs; it comes back
/// and catches up from a snapshot. Then one of the others is frozen (SIGSTOP, as a
/// network cut looks to its peers): the rejoined broker and the third carry on, and the
/// frozen one catches up once it is let go.
#[test]
fn a_broker_catches_up_from_a_snapshot_and_after_a_network_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let options = ["data.snapshot-period=1s", "raft.log-retention-entries=50"];
        let mut brokers = Brokers::start(dir.path(), 3, 2, 3, &options);
        brokers.wait_ready(Duration::from_secs(60)).await;
        deploy(&brokers.api(0), &["two-rest-calls.bpmn"]).await;
        // The deployment must be on both partitions before the load: until it reaches
        // partition 2, creates meant for it land on partition 1, and a fast load could
        // leave partition 2 with nothing to purge.
        brokers
            .api(0)
            .create_on_every_partition("two-rest-calls", 2, 2, || brokers.logs())
            .await;

        // Where broker 2's replicas stand when it goes down (the deployment is applied
        // on every partition, so each has its gauge).
        let left_at = wait_metric(
            &brokers.nodes[2],
            "rill_raft_applied_index",
            Duration::from_secs(30),
            |values| values.len() == 2 && values.values().all(|v| *v > 0.0),
        )
        .await;
        brokers.nodes[2].kill9();
        let apis = vec![brokers.api(0), brokers.api(1)];
        let workload = Workload::start(apis, 300);
        workload
            .progress(400, Duration::from_secs(90), &brokers)
            .await;
        let before = workload
            .finish(&brokers.api(0), Duration::from_secs(90), &brokers)
            .await;
        // The others purge their logs past what broker 2 has, so only a snapshot can
        // bring it up to date. The margin covers entries broker 2 had appended but not
        // yet applied when it was killed.
        for node in 0..2 {
            wait_metric(
                &brokers.nodes[node],
                "rill_raft_purged_index",
                Duration::from_secs(90),
                |purged| {
                    left_at
                        .iter()
                        .all(|(p, at)| purged.get(p).is_some_and(|v| *v > at + 50.0))
                },
            )
            .await;
        }
        brokers.nodes[2].restart();
        brokers.wait_ready(Duration::from_secs(60)).await;
        // It did catch up from a snapshot, on every partition.
        wait_metric(
            &brokers.nodes[2],
            "rill_raft_snapshots_installed_total",
            Duration::from_secs(60),
            |installed| {
                left_at
                    .keys()
                    .all(|p| installed.get(p).is_some_and(|n| *n >= 1.0))
            },
        )
        .await;

        // Broker 1 is cut off: 0 and 2 form the quorum, so 2 must hold everything.
        brokers.nodes[1].signal("STOP");
        let apis = vec![brokers.api(0), brokers.api(2)];
        let workload = Workload::start(apis, 100);
        let after = workload
            .finish(&brokers.api(2), Duration::from_secs(90), &brokers)
            .await;
        for key in before.iter().take(20) {
            let (status, body) = brokers
                .api(2)
                .get(&format!("/v2/process-instances/{key}"))
                .await
                .expect("query");
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["state"], "COMPLETED", "{body}");
        }
        assert_eq!(after.len(), 100);

        // Let broker 1 go: it catches up and serves again.
        brokers.nodes[1].signal("CONT");
        brokers.wait_ready(Duration::from_secs(60)).await;
        brokers.nodes[0].kill9();
        let key = &after[after.len() - 1];
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok((200, body)) = brokers
                .api(1)
                .get(&format!("/v2/process-instances/{key}"))
                .await
            {
                assert_eq!(body["state"], "COMPLETED", "{body}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "broker 1 did not serve after catching up\n{}",
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

/// Every broker is restarted in turn (SIGTERM, then started again) under load; no
/// instance is lost.
#[test]
fn a_rolling_restart_loses_no_instance() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 2, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<Api> = (0..3).map(|i| brokers.api(i)).collect();
        deploy(&apis[0], &["two-rest-calls.bpmn"]).await;
        let workload = Workload::start(apis.clone(), 1500);
        for i in 0..3 {
            workload
                .progress(60, Duration::from_secs(60), &brokers)
                .await;
            assert!(
                brokers.nodes[i].terminate(Duration::from_secs(30)),
                "broker {i} stops gracefully\n{}",
                brokers.logs()
            );
            // Long polls from the other brokers' gateways are answered, not waited out.
            let log = brokers.nodes[i].log_text();
            assert!(
                !log.contains("still running after the shutdown grace"),
                "broker {i} left transport tasks running\n{log}"
            );
            brokers.nodes[i].restart();
            brokers.wait_ready(Duration::from_secs(60)).await;
        }
        assert!(workload.created().await > 0);
        let keys = workload
            .finish(&apis[1], Duration::from_secs(120), &brokers)
            .await;
        assert_eq!(keys.len(), 1500);
    });
}

/// Messages correlate to instances on other partitions, in a cluster, while instances
/// are created and worked.
#[test]
fn messages_correlate_across_partitions_in_a_cluster() {
    const ORDERS: usize = 30;
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 1, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let api = brokers.api(0);
        deploy(&api, &["order-fulfilment.bpmn"]).await;

        let mut instances = Vec::new();
        for order in 0..ORDERS {
            let variables = json!({"order": {"id": format!("order-{order}"), "total": 20,
                "customer": {"id": "c-1"}}});
            let body = json!({"processDefinitionId": "order-fulfilment", "variables": variables});
            let (s, b) = api.post("/v2/process-instances", body).await.unwrap();
            assert_eq!(s, 200, "create: {b}");
            instances.push(b["processInstanceKey"].as_str().unwrap().to_owned());
            // Half the messages wait for their instance (buffered by their TTL).
            if order % 2 == 0 {
                let body = json!({"name": "shipment-confirmed",
                    "correlationKey": format!("order-{order}"), "timeToLive": 60000});
                let (s, b) = api.post("/v2/messages/publication", body).await.unwrap();
                assert_eq!(s, 200, "publish: {b}");
            }
        }
        let mut done = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while done < 3 * ORDERS {
            assert!(Instant::now() < deadline, "only {done} jobs done");
            for job_type in ["charge-card", "pack", "invoice"] {
                let request = json!({"type": job_type, "timeout": 30000,
                    "maxJobsToActivate": 32, "requestTimeout": 200});
                let (s, b) = api.post("/v2/jobs/activation", request).await.unwrap();
                assert_eq!(s, 200, "activate: {b}");
                for job in b["jobs"].as_array().cloned().unwrap_or_default() {
                    let key = job["jobKey"].as_str().unwrap();
                    let body = json!({"variables": {"transactionId": "t-1"}});
                    let (s, b) = api
                        .post(&format!("/v2/jobs/{key}/completion"), body)
                        .await
                        .unwrap();
                    assert_eq!(s, 204, "complete: {b}");
                    done += 1;
                }
            }
        }
        for order in (1..ORDERS).step_by(2) {
            let body = json!({"name": "shipment-confirmed",
                "correlationKey": format!("order-{order}"), "timeToLive": 60000});
            let (s, b) = api.post("/v2/messages/publication", body).await.unwrap();
            assert_eq!(s, 200, "publish: {b}");
        }
        api.wait_completed(&instances, Duration::from_secs(60), || brokers.logs())
            .await;
    });
}

/// A signal broadcast through one broker is caught on every partition of a 3-broker
/// cluster: instances waiting at a signal catch event on all three partitions go on.
#[test]
fn a_signal_is_caught_on_every_partition_of_a_cluster() {
    const MIN_INSTANCES: usize = 9;
    let dir = tempfile::tempdir().expect("tempdir");
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/tests/fixtures/elements/signal-catch.bpmn");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 1, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let api = brokers.api(0);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match api.deploy(&[&model]).await {
                Ok((200, _)) => break,
                other => assert!(Instant::now() < deadline, "deploy failed: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let instances = api
            .create_on_every_partition("signal-catch", MIN_INSTANCES, 3, || brokers.logs())
            .await;

        // Broadcast through another broker than the one that created them.
        let (s, b) = brokers
            .api(1)
            .post("/v2/signals/broadcast", json!({"signalName": "go"}))
            .await
            .unwrap();
        assert_eq!(s, 200, "broadcast: {b}");

        let mut done = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while done < instances.len() {
            assert!(
                Instant::now() < deadline,
                "only {done} instances caught the signal\n{}",
                brokers.logs()
            );
            let request = json!({"type": "after-go", "timeout": 30000,
                "maxJobsToActivate": 32, "requestTimeout": 500});
            let (s, b) = api.post("/v2/jobs/activation", request).await.unwrap();
            assert_eq!(s, 200, "activate: {b}");
            for job in b["jobs"].as_array().cloned().unwrap_or_default() {
                let key = job["jobKey"].as_str().unwrap();
                let (s, b) = api
                    .post(&format!("/v2/jobs/{key}/completion"), json!({}))
                    .await
                    .unwrap();
                assert_eq!(s, 204, "complete: {b}");
                done += 1;
            }
        }
        api.wait_completed(&instances, Duration::from_secs(60), || brokers.logs())
            .await;
    });
}

/// Activates and completes every job of a type it can get through `api`; returns the
/// jobs.
async fn work_jobs(api: &Api, job_type: &str, wait_ms: u64) -> Vec<serde_json::Value> {
    let request = json!({"type": job_type, "timeout": 30000,
        "maxJobsToActivate": 32, "requestTimeout": wait_ms});
    let (s, b) = api.post("/v2/jobs/activation", request).await.unwrap();
    assert_eq!(s, 200, "activate {job_type}: {b}");
    let jobs = b["jobs"].as_array().cloned().unwrap_or_default();
    for job in &jobs {
        let key = job["jobKey"].as_str().unwrap();
        let (s, b) = api
            .post(&format!("/v2/jobs/{key}/completion"), json!({}))
            .await
            .unwrap();
        assert_eq!(s, 204, "complete {job_type}: {b}");
    }
    jobs
}

fn partition_of(key: &str) -> u64 {
    key.parse::<u64>().unwrap() >> 51
}

/// Message start events in a 3-broker cluster: a message published through any broker
/// starts an instance on its correlation key's partition (the partitions that received
/// the deployment by distribution have the subscription too), at most one active
/// instance per correlation key (a second message waits until the first instance
/// ends). Call activities: parents created through another broker call their child,
/// which is created on the parent's partition (as in Zeebe) and hands back to it.
#[test]
fn message_start_events_and_call_activities_in_a_cluster() {
    const KEYS: usize = 9;
    let dir = tempfile::tempdir().expect("tempdir");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/elements");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 1, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let api = brokers.api(0);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let models = [
                fixtures.join("message-start-event.bpmn"),
                fixtures.join("call-activity-child.bpmn"),
                fixtures.join("call-activity.bpmn"),
            ];
            let paths: Vec<&std::path::Path> = models.iter().map(|m| m.as_path()).collect();
            match api.deploy(&paths).await {
                Ok((200, _)) => break,
                other => assert!(Instant::now() < deadline, "deploy failed: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // The deploy answers once partition 1 has it; a message published on a partition
        // the deployment has not reached yet would only be buffered. A create of the
        // message-started process is refused there as unknown, elsewhere as having no
        // none start event; creates go round-robin, so three of those in a row mean
        // every partition has it.
        let mut known_in_a_row = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        while known_in_a_row < 3 {
            let (_, body) = api
                .post(
                    "/v2/process-instances",
                    json!({"processDefinitionId": "order-intake"}),
                )
                .await
                .unwrap();
            let detail = body["detail"].as_str().unwrap_or_default();
            if detail.contains("none start event") {
                known_in_a_row += 1;
            } else {
                known_in_a_row = 0;
                assert!(Instant::now() < deadline, "never distributed: {body}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }

        // Published through another broker; "o-0" twice.
        let publisher = brokers.api(1);
        for n in (0..KEYS).chain([0]) {
            let body = json!({"name": "order-placed", "correlationKey": format!("o-{n}"),
                "timeToLive": 60000, "variables": {"n": n}});
            let (s, b) = publisher
                .post("/v2/messages/publication", body)
                .await
                .unwrap();
            assert_eq!(s, 200, "publish: {b}");
        }
        let mut started: Vec<(String, i64)> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while started.len() < KEYS {
            assert!(
                Instant::now() < deadline,
                "only {} instances started\n{}",
                started.len(),
                brokers.logs()
            );
            let batch = work_jobs(&api, "check", 500).await;
            // Both "o-0" instances are never active at once.
            let zeros = batch.iter().filter(|j| j["variables"]["n"] == 0).count();
            assert!(zeros <= 1, "{batch:?}");
            for job in batch {
                started.push((
                    job["processInstanceKey"].as_str().unwrap().to_owned(),
                    job["variables"]["n"].as_i64().unwrap(),
                ));
            }
        }
        let partitions: std::collections::BTreeSet<u64> =
            started.iter().map(|(k, _)| partition_of(k)).collect();
        assert!(
            partitions.len() >= 2,
            "instances on one partition: {started:?}"
        );
        // The second "o-0" starts an instance once the first one ended.
        let deadline = Instant::now() + Duration::from_secs(60);
        while started.len() < KEYS + 1 {
            assert!(Instant::now() < deadline, "the second o-0 never started");
            let batch = work_jobs(&api, "check", 500).await;
            // Both "o-0" instances are never active at once.
            let zeros = batch.iter().filter(|j| j["variables"]["n"] == 0).count();
            assert!(zeros <= 1, "{batch:?}");
            for job in batch {
                started.push((
                    job["processInstanceKey"].as_str().unwrap().to_owned(),
                    job["variables"]["n"].as_i64().unwrap(),
                ));
            }
        }
        let mut numbers: Vec<i64> = started.iter().map(|(_, n)| *n).collect();
        numbers.sort();
        let mut expected: Vec<i64> = (0..KEYS as i64).collect();
        expected.insert(0, 0);
        assert_eq!(numbers, expected);
        let keys: Vec<String> = started.into_iter().map(|(k, _)| k).collect();
        api.wait_completed(&keys, Duration::from_secs(60), || brokers.logs())
            .await;

        // Call activities, created through the third broker.
        let creator = brokers.api(2);
        let mut parents = Vec::new();
        for _ in 0..6 {
            parents.push(creator.create("order", json!({"orderId": 1})).await);
        }
        let parent_partitions: std::collections::BTreeSet<u64> =
            parents.iter().map(|k| partition_of(k)).collect();
        assert!(parent_partitions.len() >= 2, "{parents:?}");
        let mut children = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while children < parents.len() {
            assert!(
                Instant::now() < deadline,
                "only {children} children worked\n{}",
                brokers.logs()
            );
            for job in work_jobs(&api, "pack", 500).await {
                let child = job["processInstanceKey"].as_str().unwrap();
                // The history store may show the child a moment after its job.
                let seen = Instant::now() + Duration::from_secs(20);
                let parent = loop {
                    let (s, b) = api
                        .get(&format!("/v2/process-instances/{child}"))
                        .await
                        .unwrap();
                    let parent = b["parentProcessInstanceKey"]
                        .to_string()
                        .trim_matches('"')
                        .to_owned();
                    if s == 200 && parents.contains(&parent) {
                        break parent;
                    }
                    assert!(Instant::now() < seen, "child {child}: {s} {b}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                };
                assert_eq!(partition_of(child), partition_of(&parent), "{child}");
                children += 1;
            }
        }
        api.wait_completed(&parents, Duration::from_secs(60), || brokers.logs())
            .await;
    });
}

/// A second broker started with the configuration of one that runs (same node id, same
/// contact points) refuses to start and names the setting to fix; the first carries on.
#[test]
fn a_second_broker_with_the_same_node_id_refuses_to_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::prepare(dir.path(), 3, 1, 3, &[], |_| Vec::new());
        brokers.nodes[1].launch();
        brokers.nodes[1]
            .wait_log(Duration::from_secs(60), |log| {
                log.contains("Rill broker is running")
            })
            .await;

        // Only the command port differs, so the node id is the one clash.
        let mut options = brokers.options[1].clone();
        options.push(format!("cluster.command-port={}", free_port()));
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let mut twin = RillProcess::start_role("broker", &dir.path().join("twin"), &options);
        let status = twin.wait_exit(Duration::from_secs(60)).await;
        let log = twin.log_text();
        assert!(
            status.is_some_and(|s| !s.success()),
            "the twin exits with an error: {status:?}\n{log}"
        );
        let expected = format!(
            "another broker already runs as node 1 at {}: give each broker its own \
             cluster.node-id",
            brokers.internal[1]
        );
        assert!(log.contains(&expected), "{log}");

        assert!(
            brokers.nodes[1].wait_exit(Duration::ZERO).await.is_none(),
            "the first broker still runs\n{}",
            brokers.nodes[1].log_text()
        );
    });
}

/// A broker whose internal or command port is taken exits with an error naming the
/// setting and the address.
#[test]
fn a_port_in_use_is_named_by_its_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let command_port = free_port();
        let mut brokers = Brokers::prepare(dir.path(), 3, 1, 3, &[], |i| {
            if i == 1 {
                vec![format!("cluster.command-port={command_port}")]
            } else {
                Vec::new()
            }
        });
        // Held by something that is not Rill: it accepts connections and never answers.
        let internal = brokers.internal[0].clone();
        let command = format!("127.0.0.1:{command_port}");
        let _held = [
            std::net::TcpListener::bind(&internal).expect("hold the internal port"),
            std::net::TcpListener::bind(&command).expect("hold the command port"),
        ];
        brokers.nodes[0].launch();
        brokers.nodes[1].launch();
        for (node, setting, address) in [
            (0, "cluster.internal-port", &internal),
            (1, "cluster.command-port", &command),
        ] {
            let status = brokers.nodes[node].wait_exit(Duration::from_secs(60)).await;
            let log = brokers.nodes[node].log_text();
            assert!(
                status.is_some_and(|s| !s.success()),
                "broker {node} exits with an error: {status:?}\n{log}"
            );
            let expected =
                format!("cannot listen on {address} for {setting}: the address is in use");
            assert!(log.contains(&expected), "{log}");
        }
        // Checked before any partition started (which would have made its directory).
        let partition_dir = dir.path().join("broker-1").join("partition-1");
        assert!(
            !partition_dir.exists(),
            "{} exists",
            partition_dir.display()
        );
    });
}

/// A broker refuses a data directory written in another data format before it opens
/// anything, naming the directory and both formats, and leaves the data as it was.
#[test]
fn a_data_directory_in_another_format_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::prepare(dir.path(), 1, 1, 1, &[], |_| Vec::new());
        let data = dir.path().join("broker-0");
        let other_format = rill_broker::DATA_FORMAT + 1;
        std::fs::create_dir_all(data.join("partition-1")).expect("data");
        std::fs::write(data.join("DATA_FORMAT"), format!("{other_format}\n")).expect("marker");
        brokers.nodes[0].launch();
        let status = brokers.nodes[0].wait_exit(Duration::from_secs(60)).await;
        let log = brokers.nodes[0].log_text();
        assert!(status.is_some_and(|s| !s.success()), "{status:?}\n{log}");
        let expected = format!(
            "the data directory {} holds data in format {other_format}, and Rill",
            data.display()
        );
        assert!(log.contains(&expected), "{log}");
        let marker = std::fs::read_to_string(data.join("DATA_FORMAT")).expect("marker");
        assert_eq!(marker.trim(), other_format.to_string());
        let partition = std::fs::read_dir(data.join("partition-1")).expect("partition");
        assert_eq!(
            partition.count(),
            0,
            "the partition directory was written to"
        );
    });
}

/// A broker started before its peers logs one warning per peer it cannot reach, naming
/// the node and its address, and keeps trying: the cluster forms when the peers come.
#[test]
fn a_broker_whose_peers_are_not_up_says_so_and_the_cluster_forms_when_they_come() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::prepare(dir.path(), 3, 2, 3, &[], |_| Vec::new());
        let started = Instant::now();
        brokers.nodes[0].launch();
        let internal = brokers.internal.clone();
        let unreachable = move |log: &str, node: usize| -> Vec<String> {
            let needle = format!("cannot reach node {node} at {}", internal[node]);
            log.lines()
                .filter(|l| l.contains(&needle))
                .map(str::to_owned)
                .collect()
        };
        let log = brokers.nodes[0]
            .wait_log(Duration::from_secs(60), |log| {
                (1..3).all(|node| !unreachable(log, node).is_empty())
            })
            .await;
        for node in 1..3 {
            for line in unreachable(&log, node) {
                assert!(line.contains("WARN") && line.contains("retrying"), "{line}");
            }
        }

        brokers.nodes[1].launch();
        brokers.nodes[2].launch();
        brokers.wait_ready(Duration::from_secs(90)).await;
        for node in 1..3 {
            let needle = format!("reached node {node} at {}", brokers.internal[node]);
            brokers.nodes[0]
                .wait_log(Duration::from_secs(60), |log| log.contains(&needle))
                .await;
        }
        // Many attempts failed meanwhile (votes, topology requests), but only the
        // transport's warning names the peer, and it is rate-limited: the first failure,
        // then one per 30 s at most.
        let log = brokers.nodes[0].log_text();
        let allowed = 1 + (started.elapsed().as_secs() / 30) as usize;
        for node in 1..3 {
            let lines: Vec<&str> = log
                .lines()
                .filter(|l| l.contains(&brokers.internal[node]))
                .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                .collect();
            assert!(
                lines.len() <= allowed,
                "{} warnings about node {node} within {:?}:\n{}",
                lines.len(),
                started.elapsed(),
                lines.join("\n")
            );
        }
    });
}

/// A deployment reaches every partition even when the leader of one of them is killed
/// right after the deploy was answered: instances then start on every partition.
#[test]
fn a_deployment_reaches_a_partition_whose_leader_dies_right_after_the_deploy() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        // The broker to kill leads partition 2 or 3, and the deploy goes through another.
        let mut victim = None;
        for partition in [2, 3] {
            if let Some(leader) = brokers
                .wait_leader(partition, Duration::from_secs(30))
                .await
            {
                victim = Some(leader as usize);
                break;
            }
        }
        let victim = victim.expect("a leader of partition 2 or 3");
        let via = (victim + 1) % 3;
        deploy(&brokers.api(via), &["two-rest-calls.bpmn"]).await;
        brokers.nodes[victim].kill9();

        let api = brokers.api(via);
        let mut seen = std::collections::BTreeSet::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen.len() < 3 {
            assert!(
                Instant::now() < deadline,
                "instances started only on partitions {seen:?}\n{}",
                brokers.logs()
            );
            let body = json!({"processDefinitionId": "two-rest-calls"});
            if let Ok((200, created)) = api.post("/v2/process-instances", body).await {
                let key: i64 = created["processInstanceKey"]
                    .as_str()
                    .and_then(|k| k.parse().ok())
                    .expect("a key");
                seen.insert(rill_protocol::Key(key).partition().get());
            } else {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
}
