//! DMN on a cluster of real `rill broker` processes (3 brokers, 3 partitions,
//! replication 3): a DMN and the process that calls it deployed through one broker;
//! decisions evaluated through every broker until evaluations ran on every partition;
//! business-rule-task instances on every partition, their results checked against the
//! evaluation API's; decision instances searched across the partitions; then the
//! unmodified npm SDK's flow (DMN included) against the cluster.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers, examples};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn partition_of(key: &str) -> u64 {
    key.parse::<u64>().unwrap() >> 51
}

async fn evaluate(api: &Api, month: u32, guests: u32) -> Value {
    let (s, b) = api
        .post(
            "/v2/decision-definitions/evaluation",
            json!({"decisionDefinitionId": "dish", "variables": {"month": month, "guestCount": guests}}),
        )
        .await
        .unwrap();
    assert_eq!(s, 200, "{b}");
    b
}

/// Polls a search until `done` holds for its answer (failing after 30 seconds).
async fn search_until(api: &Api, path: &str, body: Value, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, b) = api.post(path, body.clone()).await.unwrap();
        assert_eq!(s, 200, "{body}: {b}");
        if done(&b) {
            return b;
        }
        assert!(Instant::now() < deadline, "{path} {body}: {b}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn decisions_are_evaluated_and_run_on_every_partition_of_a_cluster() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start_with(dir.path(), 3, 3, 3, &[], |_| {
            vec![format!("gateway.grpc-port={}", support::free_port())]
        });
        brokers.wait_ready(Duration::from_secs(60)).await;
        let (status, deployed) = brokers
            .api(0)
            .deploy(&[&examples().join("dinner.bpmn"), &examples().join("dish.dmn")])
            .await
            .unwrap();
        assert_eq!(status, 200, "{deployed}");

        // Evaluations through every broker until they ran on every partition (a
        // partition evaluates once the deployment reached it).
        let mut evaluated_on = BTreeSet::new();
        let mut evaluations = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        while evaluated_on.len() < 3 {
            assert!(
                Instant::now() < deadline,
                "evaluations never reached every partition: {evaluated_on:?}\n{}",
                brokers.logs()
            );
            let answer = evaluate(&brokers.api(evaluations % 3), 1, 4).await;
            evaluations += 1;
            if answer["failureMessage"] != "" {
                // Not on this partition yet.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            assert_eq!(answer["output"], "\"Roastbeef\"", "{answer}");
            evaluated_on.insert(partition_of(answer["decisionEvaluationKey"].as_str().unwrap()));
        }

        // Business rule task instances on every partition, each month of the year.
        let mut instances: Vec<(String, u32)> = Vec::new();
        while instances.len() < 12
            || instances
                .iter()
                .map(|(k, _)| partition_of(k))
                .collect::<BTreeSet<_>>()
                .len()
                < 3
        {
            assert!(instances.len() < 60, "creates never reached every partition");
            let n = instances.len();
            let month = (n % 12) as u32 + 1;
            let key = brokers
                .api(n % 3)
                .create("dinner", json!({"month": month, "guestCount": 4}))
                .await;
            instances.push((key, month));
        }
        let mut cooked = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while cooked < instances.len() {
            assert!(Instant::now() < deadline, "cooked {cooked} of {}", instances.len());
            let (s, b) = brokers
                .api(cooked % 3)
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "cook", "timeout": 30000, "maxJobsToActivate": 10, "requestTimeout": 1000}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            for job in b["jobs"].as_array().unwrap() {
                let (s, b) = brokers
                    .api(1)
                    .post(
                        &format!("/v2/jobs/{}/completion", job["jobKey"].as_str().unwrap()),
                        json!({}),
                    )
                    .await
                    .unwrap();
                assert_eq!(s, 204, "{b}");
                cooked += 1;
            }
        }
        let keys: Vec<String> = instances.iter().map(|(k, _)| k.clone()).collect();
        let logs = || brokers.logs();
        brokers
            .api(2)
            .wait_completed(&keys, Duration::from_secs(30), logs)
            .await;

        // Each instance's dish is what the evaluation API gives for its month.
        let mut expected: BTreeMap<u32, Value> = BTreeMap::new();
        for month in 1..=12 {
            expected.insert(month, evaluate(&brokers.api(0), month, 4).await["output"].clone());
        }
        for (key, month) in &instances {
            let found = search_until(
                &brokers.api(1),
                "/v2/variables/search",
                json!({"filter": {"processInstanceKey": key, "name": "dish"}}),
                |b| b["page"]["totalItems"] == 1,
            )
            .await;
            assert_eq!(found["items"][0]["value"], expected[month], "month {month}");
        }

        // Decision instances of the business rule tasks, searched across partitions.
        let found = search_until(
            &brokers.api(2),
            "/v2/decision-instances/search",
            json!({"filter": {"decisionDefinitionId": "dish", "processDefinitionKey": deployed["deployments"][0]["processDefinition"]["processDefinitionKey"]}, "page": {"limit": 100}}),
            |b| b["page"]["totalItems"] == instances.len(),
        )
        .await;
        let on: BTreeSet<u64> = found["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| partition_of(i["decisionEvaluationKey"].as_str().unwrap()))
            .collect();
        assert_eq!(on.len(), 3, "decision instances on every partition: {found}");

        // The unmodified npm SDK's flow (it installs the SDK on first use).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let output = std::process::Command::new("bash")
            .arg(root.join("tests/clients/node/run.sh"))
            .env("RILL_REST_ADDRESS", brokers.nodes[1].rest())
            .env(
                "RILL_NODE_DIR",
                std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("node-clients"),
            )
            .output()
            .expect("run the npm SDK flow (needs bash and node)");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("all checks passed"),
            "the npm SDK flow failed on the cluster:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    });
}
