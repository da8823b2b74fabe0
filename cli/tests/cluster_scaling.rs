//! The cluster management API against real `rill broker` processes: a broker started
//! with a node id beyond `cluster.size` (as a StatefulSet scale-up starts one) waits,
//! serving nothing, while the cluster keeps completing instances; every broker reports
//! the same configuration in Zeebe's shape; a change is planned (dry run) and an
//! impossible one is refused with what is wrong; `rill cluster status|scale` show both.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Brokers, RillProcess, Workload, deploy, free_port, rill_cluster};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

async fn request(method: reqwest::Method, url: String, body: Option<Value>) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut builder = client.request(method, url);
    if let Some(body) = body {
        builder = builder.json(&body);
    }
    let response = builder.send().await.expect("the monitoring port answers");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn topology(node: &RillProcess) -> Value {
    let (status, body) = request(
        reqwest::Method::GET,
        format!("{}/actuator/cluster", node.monitoring()),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn a_broker_beyond_the_cluster_size_waits_and_changes_are_planned() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        deploy(&brokers.api(0), &["two-rest-calls.bpmn"]).await;
        let apis = vec![brokers.api(0), brokers.api(1), brokers.api(2)];
        let workload = Workload::start(apis, 100);

        // Broker 3: the options of the others but its node id and ports, as a
        // StatefulSet scaled to 4 starts it.
        let mut options: Vec<String> = brokers.options[0]
            .iter()
            .filter(|o| {
                !o.starts_with("cluster.node-id=")
                    && !o.starts_with("cluster.internal-port=")
                    && !o.starts_with("cluster.command-port=")
            })
            .cloned()
            .collect();
        options.push("cluster.node-id=3".to_owned());
        options.push(format!("cluster.internal-port={}", free_port()));
        options.push(format!("cluster.command-port={}", free_port()));
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let joining = RillProcess::start_role("broker", &dir.path().join("broker-3"), &options);
        joining
            .wait_log(Duration::from_secs(60), |log| {
                log.contains("not a member of the cluster")
            })
            .await;
        workload
            .progress(50, Duration::from_secs(60), &brokers)
            .await;
        assert!(joining.is_running(), "{}", joining.log_text());
        // Started, but not ready: it serves nothing.
        let (startup, _) = request(
            reqwest::Method::GET,
            format!("{}/startup", joining.monitoring()),
            None,
        )
        .await;
        assert_eq!(startup, 200);
        let (ready, _) = request(
            reqwest::Method::GET,
            format!("{}/ready", joining.monitoring()),
            None,
        )
        .await;
        assert_eq!(ready, 503, "a broker that is not a member is not ready");

        // Every broker, the waiting one too, reports the same configuration.
        let reported = topology(&brokers.nodes[0]).await;
        assert_eq!(reported["version"], 1);
        let ids: Vec<&Value> = reported["brokers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| &b["id"])
            .collect();
        assert_eq!(ids, [&json!(0), &json!(1), &json!(2)]);
        assert_eq!(
            reported["brokers"][1]["partitions"],
            json!([
                {"id": 1, "state": "ACTIVE", "priority": 2},
                {"id": 2, "state": "ACTIVE", "priority": 3},
                {"id": 3, "state": "ACTIVE", "priority": 1},
            ])
        );
        assert_eq!(
            reported["routing"]["messageCorrelation"]["partitionCount"],
            3
        );
        assert!(reported.get("pendingChange").is_none());
        for node in brokers.nodes.iter().skip(1).chain([&joining]) {
            assert_eq!(topology(node).await, reported);
        }

        // A dry run plans the scale-up and changes nothing.
        let patch = format!("{}/actuator/cluster", brokers.nodes[1].monitoring());
        let (status, planned) = request(
            reqwest::Method::PATCH,
            format!("{patch}?dryRun=true"),
            Some(json!({"brokers": {"add": [3]}})),
        )
        .await;
        assert_eq!(status, 202, "{planned}");
        assert_eq!(planned["changeId"], 2);
        let steps = planned["plannedChanges"].as_array().unwrap();
        assert_eq!(steps[0], json!({"operation": "BROKER_ADD", "brokerId": 3}));
        assert!(
            steps
                .iter()
                .any(|s| s["operation"] == "PARTITION_JOIN" && s["brokerId"] == 3),
            "{planned}"
        );
        assert_eq!(planned["expectedTopology"].as_array().unwrap().len(), 4);
        let (status, planned) = request(
            reqwest::Method::POST,
            format!(
                "{}/actuator/cluster/brokers?dryRun=true",
                brokers.nodes[2].monitoring()
            ),
            Some(json!([0, 1, 2, 3, 4])),
        )
        .await;
        assert_eq!(status, 202, "{planned}");
        assert_eq!(planned["expectedTopology"].as_array().unwrap().len(), 5);

        // Impossible requests: 400, naming what is wrong.
        for (body, expected) in [
            (
                json!({"partitions": {"count": 2}}),
                "partitions.count: is 2, but the cluster has 3",
            ),
            (
                json!({"partitions": {"replicationFactor": 4}}),
                "partitions.replicationFactor: is 4, but the cluster would have 3",
            ),
            (
                json!({"brokers": {"remove": [9]}}),
                "broker 9 is not a member",
            ),
            (json!({"brokers": {"cnt": 4}}), "unknown field `cnt`"),
        ] {
            let (status, answer) = request(reqwest::Method::PATCH, patch.clone(), Some(body)).await;
            assert_eq!(status, 400, "{answer}");
            let message = answer["message"].as_str().unwrap();
            assert!(message.contains(expected), "{message}");
        }
        let (status, answer) = request(
            reqwest::Method::PATCH,
            format!("{patch}?dryRun=maybe"),
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 400);
        assert!(
            answer["message"].as_str().unwrap().contains("dryRun"),
            "{answer}"
        );
        // Adding a partition is planned: bootstrapped, joined, then it takes instances
        // once it has every deployment. A dry run changes nothing.
        let (status, answer) = request(
            reqwest::Method::PATCH,
            format!("{patch}?dryRun=true"),
            Some(json!({"partitions": {"count": 4}})),
        )
        .await;
        assert_eq!(status, 202, "{answer}");
        let steps = answer["plannedChanges"].as_array().unwrap();
        assert_eq!(
            steps[0],
            json!({"operation": "PARTITION_BOOTSTRAP", "brokerId": 0, "partitionId": 4, "priority": 3})
        );
        assert_eq!(
            steps.last().unwrap(),
            &json!({"operation": "AWAIT_REDISTRIBUTION_COMPLETION", "brokerId": 0,
                "desiredPartitionCount": 4})
        );
        assert_eq!(topology(&brokers.nodes[0]).await, reported);

        // The CLI shows the same.
        let (ok, out, err) = rill_cluster(&brokers.nodes[0], &["status"]);
        assert!(ok, "{err}");
        assert!(out.starts_with("version 1\n"), "{out}");
        assert!(out.contains("1       ACTIVE   1:2 2:3 3:1\n"), "{out}");
        assert!(out.contains("no change in progress"), "{out}");
        let (ok, out, err) =
            rill_cluster(&brokers.nodes[0], &["scale", "--brokers", "4", "--dry-run"]);
        assert!(ok, "{err}");
        assert!(out.starts_with("dry run: change 2 would take"), "{out}");
        assert!(out.contains("BROKER_ADD broker 3"), "{out}");
        let (ok, _, err) = rill_cluster(
            &brokers.nodes[0],
            &["scale", "--replication-factor", "4", "--dry-run"],
        );
        assert!(!ok);
        assert!(err.contains("partitions.replicationFactor: is 4"), "{err}");

        // The cluster kept completing instances all along.
        workload
            .finish(&brokers.api(0), Duration::from_secs(90), &brokers)
            .await;
    });
}
