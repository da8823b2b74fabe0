//! Partitions are added to a running cluster through the cluster management API, with
//! real `rill broker` processes under load: 3 brokers with 2 partitions grow to 3
//! partitions (`rill cluster scale --partitions 3`) while instances are created and
//! their jobs completed; partition 1's leader, which runs the change, is killed with
//! SIGKILL while the new partition is bootstrapped, and restarted. The change completes;
//! the new partition has every deployment made before it existed and takes new
//! instances, whose jobs workers complete; messages published before, during and after
//! the change (buffered ones too, met by instances created after it, also on the new
//! partition) correlate exactly once, and message start events start one instance per
//! message, because messages stay routed over the original 2 partitions. A gRPC job
//! stream opened before the change gets the new partition's jobs pushed too.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::{CompleteJobRequest, StreamActivatedJobsRequest};
use serde_json::{Value, json};
use support::{Api, Brokers, RillProcess, Workload, deploy, extra_broker, rill_cluster};

const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="http://bpmn.io/schema/bpmn">"#;

/// Waits at a message `go` correlated by the `key` variable.
fn await_go() -> String {
    format!(
        r#"{HEADER}
  <bpmn:process id="await-go" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition messageRef="go" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
  <bpmn:message id="go" name="go"><bpmn:extensionElements><zeebe:subscription correlationKey="=key" /></bpmn:extensionElements></bpmn:message>
</bpmn:definitions>"#
    )
}

/// Started by a message `kickoff`.
fn kickoff() -> String {
    format!(
        r#"{HEADER}
  <bpmn:process id="kickoff-flow" isExecutable="true">
    <bpmn:startEvent id="s"><bpmn:messageEventDefinition messageRef="kickoff" /></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
  <bpmn:message id="kickoff" name="kickoff" />
</bpmn:definitions>"#
    )
}

/// One service task of type `streamed`.
fn streamed() -> String {
    format!(
        r#"{HEADER}
  <bpmn:process id="streamed" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t" />
    <bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="streamed" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
</bpmn:definitions>"#
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn partition_of(key: &str) -> u64 {
    key.parse::<u64>().expect("a key") >> 51
}

/// Sends `body` to `path` on the first gateway that takes it (one may be down, or a
/// partition may not have a deployment yet), for 30 s; a 409 (a retried publish that was taken before) counts as taken.
async fn post_anywhere(apis: &[Api], path: &str, body: Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut turn = 0;
    loop {
        turn += 1;
        let api = &apis[turn % apis.len()];
        match api.post(path, body.clone()).await {
            Ok((200 | 409, answer)) => return answer,
            other => assert!(
                Instant::now() < deadline,
                "{path} {body} not taken: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn publish(apis: &[Api], name: &str, key: &str, ttl_ms: u64) {
    let body = json!({"name": name, "correlationKey": key, "timeToLive": ttl_ms,
        "messageId": format!("{name}-{key}")});
    post_anywhere(apis, "/v2/messages/publication", body).await;
}

async fn create_waiting(apis: &[Api], key: &str) -> String {
    let body = json!({"processDefinitionId": "await-go", "processDefinitionVersion": 2,
        "variables": {"key": key}});
    let created = post_anywhere(apis, "/v2/process-instances", body).await;
    created["processInstanceKey"]
        .as_str()
        .expect("an instance key")
        .to_owned()
}

async fn state_of(apis: &[Api], key: &str) -> Option<String> {
    for api in apis {
        if let Ok((200, v)) = api.get(&format!("/v2/process-instances/{key}")).await {
            return v["state"].as_str().map(str::to_owned);
        }
    }
    None
}

async fn wait_completed(apis: &[Api], keys: &[String], logs: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(45);
    let mut pending: Vec<String> = keys.to_vec();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for key in pending {
            if state_of(apis, &key).await.as_deref() != Some("COMPLETED") {
                still.push(key);
            }
        }
        pending = still;
        assert!(
            pending.is_empty() || Instant::now() < deadline,
            "instances not completed: {pending:?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn configuration(node: &RillProcess) -> Option<Value> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let response = client
        .get(format!("{}/actuator/cluster", node.monitoring()))
        .send()
        .await
        .ok()?;
    if response.status() != 200 {
        return None;
    }
    response.json().await.ok()
}

async fn kickoff_instances(apis: &[Api]) -> Option<usize> {
    let search = json!({"filter": {"processDefinitionId": "kickoff-flow"}, "page": {"limit": 100}});
    for api in apis {
        if let Ok((200, v)) = api
            .post("/v2/process-instances/search", search.clone())
            .await
        {
            return v["items"].as_array().map(Vec::len);
        }
    }
    None
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a model");
    path
}

#[test]
fn partitions_are_added_under_load_through_a_kill_and_messages_correlate_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 2, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis = vec![brokers.api(0), brokers.api(1), brokers.api(2)];
        deploy(&apis[0], &["two-rest-calls.bpmn"]).await;
        let models = [
            write(dir.path(), "await-go.bpmn", &await_go()),
            write(dir.path(), "kickoff.bpmn", &kickoff()),
            write(dir.path(), "streamed.bpmn", &streamed()),
        ];
        let paths: Vec<&Path> = models.iter().map(PathBuf::as_path).collect();
        let (status, deployed) = apis[0].deploy(&paths).await.expect("deploy");
        assert_eq!(status, 200, "{deployed}");
        let v1_key = deployed["deployments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["processDefinition"]["processDefinitionId"] == "await-go")
            .map(|d| d["processDefinition"]["processDefinitionKey"].clone())
            .expect("await-go deployed");
        // A second version of await-go: the new partition must get both, with their keys.
        let v2 = write(
            dir.path(),
            "await-go-2.bpmn",
            &await_go().replace(
                r#"<bpmn:endEvent id="e" />"#,
                r#"<bpmn:endEvent id="e" name="v2" />"#,
            ),
        );
        let (status, deployed) = apis[0].deploy(&[v2.as_path()]).await.expect("deploy");
        assert_eq!(status, 200, "{deployed}");
        assert_eq!(
            deployed["deployments"][0]["processDefinition"]["processDefinitionVersion"], 2,
            "{deployed}"
        );

        // Before the change: instances wait for messages (subscriptions opened over 2
        // partitions), some messages are published, some buffered for later instances.
        let mut waiting = Vec::new();
        for i in 0..12 {
            waiting.push(create_waiting(&apis, &format!("a-{i}")).await);
        }
        for i in 0..4 {
            publish(&apis, "go", &format!("a-{i}"), 60_000).await;
        }
        for i in 0..6 {
            publish(&apis, "go", &format!("c-{i}"), 120_000).await;
        }
        // A message start event needs its deployment on the message's partition: a
        // version 2 instance on partition 2 shows that both deployments reached it.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut probe = 0;
        while !waiting.iter().any(|k| partition_of(k) == 2) {
            assert!(Instant::now() < deadline, "{waiting:?}");
            probe += 1;
            waiting.push(create_waiting(&apis, &format!("a-probe-{probe}")).await);
            publish(&apis, "go", &format!("a-probe-{probe}"), 60_000).await;
        }
        for i in 0..2 {
            publish(&apis, "kickoff", &format!("k-{i}"), 60_000).await;
        }
        let workload = Workload::start(apis.clone(), 90);
        workload
            .progress(10, Duration::from_secs(30), &brokers)
            .await;

        // A gRPC job stream, opened before the change on a broker that stays up.
        let coordinator = brokers
            .wait_leader(1, Duration::from_secs(30))
            .await
            .expect("partition 1 has a leader") as usize;
        let survivor = (coordinator + 1) % 3;
        let mut grpc = GatewayClient::connect(brokers.nodes[survivor].grpc())
            .await
            .expect("gRPC");
        let mut jobs = grpc
            .stream_activated_jobs(StreamActivatedJobsRequest {
                r#type: "streamed".to_owned(),
                worker: "streamer".to_owned(),
                timeout: 600_000,
                ..Default::default()
            })
            .await
            .expect("a job stream")
            .into_inner();

        let (ok, out, err) = rill_cluster(&brokers.nodes[1], &["scale", "--partitions", "3"]);
        assert!(ok, "{err}\n{}", brokers.logs());
        assert!(
            out.contains("PARTITION_BOOTSTRAP broker 2 partition 3"),
            "{out}"
        );
        assert!(out.contains("PARTITION_JOIN broker 0 partition 3"), "{out}");
        assert!(out.contains("AWAIT_REDISTRIBUTION_COMPLETION"), "{out}");
        let id: u64 = out
            .strip_prefix("change ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("a change id");

        // Kill partition 1's leader, which runs the change, while partition 3 is
        // bootstrapped; messages go on being published meanwhile.
        let at_kill = configuration(&brokers.nodes[survivor])
            .await
            .expect("the management API answers");
        brokers.nodes[coordinator].kill9();
        let pending = at_kill["pendingChange"]["pending"].clone();
        assert!(
            pending.as_array().is_some_and(|steps| steps.len() >= 2),
            "the change is still bootstrapping partition 3 at the kill: {at_kill}"
        );
        let alive: Vec<Api> = (0..3)
            .filter(|&i| i != coordinator)
            .map(|i| brokers.api(i))
            .collect();
        for i in 4..8 {
            publish(&alive, "go", &format!("a-{i}"), 60_000).await;
        }
        publish(&alive, "kickoff", "k-2", 60_000).await;
        brokers.nodes[coordinator].restart();
        publish(&apis, "kickoff", "k-3", 60_000).await;

        let deadline = Instant::now() + Duration::from_secs(60);
        let done = loop {
            let reported = configuration(&brokers.nodes[survivor]).await;
            if let Some(reported) = &reported
                && reported.get("pendingChange").is_none()
                && reported["lastChange"]["id"] == id
            {
                break reported.clone();
            }
            assert!(
                Instant::now() < deadline,
                "change {id} did not complete: {reported:?}\n{}",
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(done["lastChange"]["status"], "COMPLETED", "{done}");
        assert_eq!(
            done["routing"]["messageCorrelation"],
            json!({"strategy": "HashMod", "partitionCount": 2}),
            "{done}"
        );
        assert_eq!(
            done["routing"]["requestHandling"],
            json!({"strategy": "AllPartitions", "partitionCount": 3}),
            "{done}"
        );

        // Every embedded gateway routes to partition 3 without a restart.
        let deadline = Instant::now() + Duration::from_secs(15);
        for api in &apis {
            loop {
                let (_, topology) = api.get("/v2/topology").await.expect("topology");
                if topology["partitionsCount"] == 3 {
                    break;
                }
                assert!(Instant::now() < deadline, "{topology}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }

        // After: the rest of the messages; new waiting instances (on all three
        // partitions) and instances that meet the messages buffered before the change.
        for i in 8..12 {
            publish(&apis, "go", &format!("a-{i}"), 60_000).await;
        }
        let mut added = Vec::new();
        for i in 0..12 {
            added.push(create_waiting(&apis, &format!("b-{i}")).await);
        }
        for i in 0..12 {
            publish(&apis, "go", &format!("b-{i}"), 60_000).await;
        }
        let mut buffered = Vec::new();
        for i in 0..6 {
            buffered.push(create_waiting(&apis, &format!("c-{i}")).await);
        }
        publish(&apis, "kickoff", "k-4", 60_000).await;
        let logs = || brokers.logs();
        wait_completed(&apis, &waiting, logs).await;
        wait_completed(&apis, &added, logs).await;
        wait_completed(&apis, &buffered, logs).await;
        let on_new: Vec<&String> = added
            .iter()
            .chain(&buffered)
            .filter(|k| partition_of(k) == 3)
            .collect();
        assert!(
            !on_new.is_empty(),
            "no instance on partition 3: {added:?} {buffered:?}"
        );

        // Exactly once: a buffered message correlated to an instance of await-go does
        // not correlate to a second one; each kickoff started one instance.
        let second = create_waiting(&apis, "c-0").await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let started = loop {
            let count = kickoff_instances(&apis).await;
            if count.is_some_and(|c| c >= 5) || Instant::now() > deadline {
                break count;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        if started != Some(5) {
            let search = json!({"filter": {"processDefinitionId": "kickoff-flow"}});
            for api in &apis {
                eprintln!(
                    "{:?}",
                    api.post("/v2/process-instances/search", search.clone())
                        .await
                );
            }
        }
        assert_eq!(started, Some(5));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(state_of(&apis, &second).await.as_deref(), Some("ACTIVE"));
        assert_eq!(kickoff_instances(&apis).await, Some(5));

        // New instances of the two-task process land on partition 3 too, and workers
        // complete their jobs there; every acknowledged instance completes, once.
        let keys = workload
            .finish(&apis[survivor], Duration::from_secs(60), &brokers)
            .await;
        assert_eq!(keys.len(), 90);
        let after = Workload::start(apis.clone(), 30);
        let later = after
            .finish(&apis[0], Duration::from_secs(60), &brokers)
            .await;
        let on_three = later.iter().filter(|k| partition_of(k) == 3).count();
        assert!(
            on_three >= 5,
            "{on_three} of 30 new instances on partition 3"
        );
        // Version 1, deployed before partition 3 existed, runs there with its key.
        let mut v1_partitions = BTreeSet::new();
        for i in 0..6 {
            let body = json!({"processDefinitionId": "await-go", "processDefinitionVersion": 1,
                "variables": {"key": format!("v1-{i}")}});
            let created = post_anywhere(&apis, "/v2/process-instances", body).await;
            assert_eq!(created["processDefinitionKey"], v1_key, "{created}");
            v1_partitions.insert(partition_of(
                created["processInstanceKey"].as_str().unwrap(),
            ));
        }
        assert!(v1_partitions.contains(&3), "{v1_partitions:?}");

        // The stream opened before partition 3 existed gets its jobs pushed too.
        let mut on_three = None;
        let mut streamed = BTreeSet::new();
        for _ in 0..12 {
            let body = json!({"processDefinitionId": "streamed"});
            let created = post_anywhere(&apis, "/v2/process-instances", body).await;
            let key = created["processInstanceKey"].as_str().unwrap().to_owned();
            streamed.insert(key.parse::<i64>().unwrap());
            if partition_of(&key) == 3 {
                on_three = Some(key.parse::<i64>().unwrap());
            }
        }
        let on_three = on_three.expect("a streamed instance on partition 3");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut pushed = BTreeSet::new();
        while !pushed.contains(&on_three) {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let job = tokio::time::timeout(remaining, jobs.message())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no job of partition 3 pushed: {pushed:?}\n{}",
                        brokers.logs()
                    )
                })
                .expect("the stream")
                .expect("open");
            assert!(streamed.contains(&job.process_instance_key), "{job:?}");
            pushed.insert(job.process_instance_key);
            grpc.complete_job(CompleteJobRequest {
                job_key: job.key,
                variables: String::new(),
                result: None,
            })
            .await
            .expect("complete a pushed job");
        }
        wait_completed(&apis, &[on_three.to_string()], || brokers.logs()).await;

        // The gateways show the third partition, led by one of its three replicas.
        let (_, topology) = apis[0].get("/v2/topology").await.expect("topology");
        assert_eq!(topology["partitionsCount"], 3, "{topology}");
        let replicas: BTreeSet<u64> = topology["brokers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| {
                b["partitions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p["partitionId"] == 3)
            })
            .map(|b| b["nodeId"].as_u64().unwrap())
            .collect();
        assert_eq!(replicas, BTreeSet::from([0, 1, 2]), "{topology}");
    });
}

/// A broker added by a change that bootstraps, and so leads, an added partition pushes
/// that partition's jobs to a gRPC job stream opened before either existed: 3 brokers
/// with 2 partitions of one replica grow to 4 brokers and 4 partitions; partition 4
/// starts on broker 3.
#[test]
fn an_added_broker_leading_an_added_partition_pushes_jobs_to_an_open_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 2, 1, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis = vec![brokers.api(0), brokers.api(1), brokers.api(2)];
        let model = write(dir.path(), "streamed.bpmn", &streamed());
        let (status, deployed) = apis[0].deploy(&[model.as_path()]).await.expect("deploy");
        assert_eq!(status, 200, "{deployed}");
        let added = extra_broker(&brokers, dir.path(), 3);
        added
            .wait_log(Duration::from_secs(60), |log| {
                log.contains("not a member of the cluster")
            })
            .await;
        let mut grpc = GatewayClient::connect(brokers.nodes[0].grpc())
            .await
            .expect("gRPC");
        let mut jobs = grpc
            .stream_activated_jobs(StreamActivatedJobsRequest {
                r#type: "streamed".to_owned(),
                worker: "streamer".to_owned(),
                timeout: 600_000,
                ..Default::default()
            })
            .await
            .expect("a job stream")
            .into_inner();

        let (ok, out, err) = rill_cluster(
            &brokers.nodes[0],
            &["scale", "--brokers", "4", "--partitions", "4"],
        );
        assert!(ok, "{err}\n{}", brokers.logs());
        assert!(out.contains("BROKER_ADD broker 3"), "{out}");
        assert!(
            out.contains("PARTITION_BOOTSTRAP broker 3 partition 4"),
            "{out}"
        );
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            let done = configuration(&brokers.nodes[0]).await.is_some_and(|c| {
                c.get("pendingChange").is_none() && c["lastChange"]["status"] == "COMPLETED"
            });
            let routed = match apis[0].get("/v2/topology").await {
                Ok((200, topology)) => topology["partitionsCount"] == 4,
                _ => false,
            };
            if done && routed {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the change did not complete\n{}\n--- broker 3 ---\n{}",
                brokers.logs(),
                added.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(brokers.leader_of(0, 4).await, Some(3));

        // Instances on all four partitions; the stream gets partition 4's job from
        // broker 3.
        let mut on_four = None;
        let mut created = BTreeSet::new();
        for _ in 0..8 {
            let body = json!({"processDefinitionId": "streamed"});
            let instance = post_anywhere(&apis[..1], "/v2/process-instances", body).await;
            let key = instance["processInstanceKey"].as_str().unwrap().to_owned();
            created.insert(key.parse::<i64>().unwrap());
            if partition_of(&key) == 4 {
                on_four = Some(key.parse::<i64>().unwrap());
            }
        }
        let on_four = on_four.expect("an instance on partition 4");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut pushed = BTreeSet::new();
        while !pushed.contains(&on_four) {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let job = tokio::time::timeout(remaining, jobs.message())
                .await
                .unwrap_or_else(|_| panic!("no job of partition 4 pushed: {pushed:?}"))
                .expect("the stream")
                .expect("open");
            assert!(created.contains(&job.process_instance_key), "{job:?}");
            pushed.insert(job.process_instance_key);
            grpc.complete_job(CompleteJobRequest {
                job_key: job.key,
                variables: String::new(),
                result: None,
            })
            .await
            .expect("complete a pushed job");
        }
        wait_completed(&apis, &[on_four.to_string()], || brokers.logs()).await;
    });
}
