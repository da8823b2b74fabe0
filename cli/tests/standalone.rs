//! End-to-end tests against the real `rill` binary: what a new user runs.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Standalone, examples, job_completions, run_client_script};
use tokio::sync::Mutex;

const INSTANCES: usize = 1000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// 1,000 instances of a two-task process worked over REST, with `kill -9` halfway and a
/// restart: every instance the gateway acknowledged finishes, and no job completion is
/// applied twice (checked against the engine's records, exported as JSON lines).
#[test]
fn instances_survive_kill_9_and_finish_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let records = dir.path().join("records.jsonl");
    let export = format!("exporters.jsonl.path={}", records.display());
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &[&export]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        let (status, body) = api
            .deploy(&[
                &examples().join("two-rest-calls.bpmn"),
                &examples().join("order-fulfilment.bpmn"),
                &examples().join("payment-retry.bpmn"),
                &examples().join("wait-timer.bpmn"),
            ])
            .await
            .expect("deploy");
        assert_eq!(status, 200, "deploy: {body}");
        assert_eq!(
            body["deployments"].as_array().map(Vec::len),
            Some(4),
            "{body}"
        );

        let created: Arc<Mutex<Vec<String>>> = Arc::default();
        let completions_ok = Arc::new(AtomicUsize::new(0));
        let second_tasks_done = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));

        // Starters: create instances, retrying while the node is down.
        let next = Arc::new(AtomicUsize::new(0));
        let mut starters = Vec::new();
        for _ in 0..4 {
            let (api, created, next) = (api.clone(), created.clone(), next.clone());
            starters.push(tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < INSTANCES {
                    loop {
                        let body = json!({"processDefinitionId": "two-rest-calls",
                                          "variables": {"n": 1}});
                        match api.post("/v2/process-instances", body).await {
                            Ok((200, v)) => {
                                let key = v["processInstanceKey"].as_str().unwrap().to_owned();
                                created.lock().await.push(key);
                                break;
                            }
                            // The node is down or restarting, or busy: try again.
                            Err(_) | Ok((502..=504, _)) => {
                                tokio::time::sleep(Duration::from_millis(50)).await
                            }
                            Ok((status, v)) => panic!("create failed with {status}: {v}"),
                        }
                    }
                }
            }));
        }

        // Workers: activate and complete `restCall` jobs.
        let mut workers = Vec::new();
        for w in 0..4 {
            let (api, ok, second, stop) = (
                api.clone(),
                completions_ok.clone(),
                second_tasks_done.clone(),
                stop.clone(),
            );
            workers.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let request = json!({"type": "restCall", "worker": format!("w{w}"),
                        "timeout": 5000, "maxJobsToActivate": 32, "requestTimeout": 500});
                    let jobs = match api.post("/v2/jobs/activation", request).await {
                        Ok((200, v)) => v["jobs"].as_array().cloned().unwrap_or_default(),
                        _ => {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    for job in jobs {
                        let key = job["jobKey"].as_str().unwrap().to_owned();
                        let path = format!("/v2/jobs/{key}/completion");
                        // A completion may be lost with the process: the job then times out
                        // and is activated again, so one attempt is enough here.
                        if let Ok((204, _)) = api.post(&path, json!({"variables": {}})).await {
                            ok.fetch_add(1, Ordering::Relaxed);
                            if job["elementId"] == "Rest2" {
                                second.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            }));
        }

        // Kill the node without warning once about half the instances are done.
        let halfway = Instant::now();
        while second_tasks_done.load(Ordering::Relaxed) < INSTANCES / 2 {
            assert!(
                halfway.elapsed() < Duration::from_secs(120),
                "no progress: {} instances done\n{}",
                second_tasks_done.load(Ordering::Relaxed),
                rill.log_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        rill.restart();
        rill.wait_ready(Duration::from_secs(60)).await;

        for s in starters {
            s.await.expect("starter");
        }
        let keys: Vec<String> = created.lock().await.clone();
        assert_eq!(keys.len(), INSTANCES);
        assert_eq!(
            keys.iter().collect::<BTreeSet<_>>().len(),
            INSTANCES,
            "keys are unique"
        );

        // Every acknowledged instance completes.
        let deadline = Instant::now() + Duration::from_secs(180);
        let mut pending: Vec<String> = keys.clone();
        while !pending.is_empty() {
            assert!(
                Instant::now() < deadline,
                "{} instances did not finish, e.g. {}",
                pending.len(),
                pending[0]
            );
            let mut still = Vec::new();
            for key in pending {
                match api.get(&format!("/v2/process-instances/{key}")).await {
                    Ok((200, v)) if v["state"] == "COMPLETED" => {}
                    _ => still.push(key),
                }
            }
            pending = still;
            if !pending.is_empty() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.await.expect("worker");
        }

        // Each instance has two jobs. A completion whose answer was lost in the crash was
        // applied but not counted by the worker; a job completed twice would be counted
        // twice. So successful completions are at most two per instance (plus those of
        // instances created by requests whose answer was lost).
        let ok = completions_ok.load(Ordering::Relaxed);
        assert!(
            ok <= 2 * INSTANCES + 2 * 4,
            "{ok} completions acknowledged for {INSTANCES} instances"
        );
        assert!(
            ok >= 2 * INSTANCES - 4 * 32,
            "{ok} completions acknowledged"
        );

        // The engine's own account: every job of these instances completed exactly once.
        // The export is at least once, so lines are de-duplicated by partition and
        // position first.
        let created: BTreeSet<&str> = keys.iter().map(String::as_str).collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let completions = job_completions(std::slice::from_ref(&records), Some(&created));
            let total: usize = completions.values().sum();
            let twice: Vec<_> = completions.iter().filter(|(_, n)| **n > 1).collect();
            assert!(twice.is_empty(), "jobs completed twice: {twice:?}");
            if total == 2 * INSTANCES {
                // Acknowledged completions include those of instances whose creation
                // answer was lost in the crash.
                let applied: usize = job_completions(std::slice::from_ref(&records), None)
                    .values()
                    .sum();
                assert!(ok <= applied, "{ok} acknowledged, {applied} applied");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{total} job completions exported for {INSTANCES} instances"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(rill.terminate(Duration::from_secs(20)), "graceful stop");
    });
}

/// Bad requests get a clear 4xx problem, change nothing, and the server keeps serving.
#[test]
fn bad_input_gets_a_clear_problem_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &["gateway.max-message-size=64KB"]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());

        let check = |status: u16, body: &Value, want: u16, fragment: &str| {
            assert_eq!(status, want, "{body}");
            let detail = body["detail"].as_str().unwrap_or_default();
            assert!(
                detail.to_lowercase().contains(&fragment.to_lowercase()),
                "detail {detail:?} should mention {fragment:?}"
            );
        };

        // Malformed JSON.
        let response = api
            .http
            .post(format!("{}/v2/process-instances", api.base))
            .header("content-type", "application/json")
            .body("{\"processDefinitionId\": ")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400);
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );

        // Wrong type.
        let (s, b) = api
            .post("/v2/process-instances", json!({"processDefinitionId": 7}))
            .await
            .unwrap();
        check(s, &b, 400, "processDefinitionId");

        // Unknown process id.
        let (s, b) = api
            .post("/v2/process-instances", json!({"processDefinitionId": "nope"}))
            .await
            .unwrap();
        check(s, &b, 404, "nope");

        // Variables that are not an object.
        let (s, b) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "x", "variables": [1, 2]}),
            )
            .await
            .unwrap();
        check(s, &b, 400, "variables");

        // Invalid BPMN: every finding listed, nothing deployed.
        let bad = dir.path().join("bad.bpmn");
        std::fs::write(
            &bad,
            r#"<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:process id="bad" isExecutable="true">
    <bpmn:startEvent id="Start"><bpmn:outgoing>F1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="NoType"><bpmn:incoming>F1</bpmn:incoming></bpmn:serviceTask>
    <bpmn:complexGateway id="Complex" />
    <bpmn:sequenceFlow id="F1" sourceRef="Start" targetRef="NoType" />
    <bpmn:sequenceFlow id="F2" sourceRef="NoType" targetRef="Nowhere" />
  </bpmn:process>
</bpmn:definitions>"#,
        )
        .unwrap();
        let (s, b) = api.deploy(&[&bad]).await.unwrap();
        assert_eq!(s, 400, "{b}");
        let detail = b["detail"].as_str().unwrap_or_default();
        for fragment in ["NoType", "Complex", "Nowhere"] {
            assert!(detail.contains(fragment), "{detail} should name {fragment}");
        }
        let (s, b) = api
            .post("/v2/process-instances", json!({"processDefinitionId": "bad"}))
            .await
            .unwrap();
        check(s, &b, 404, "bad");

        // A payload over the limit.
        let big = "x".repeat(100 * 1024);
        let (s, _) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "x", "variables": {"big": big}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 413);

        // Unknown fields and wrong key formats.
        let (s, b) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "x", "colour": "blue"}),
            )
            .await
            .unwrap();
        check(s, &b, 400, "colour");
        let (s, b) = api.get("/v2/process-instances/not-a-key").await.unwrap();
        assert_eq!(s, 400, "{b}");

        // Completing a job twice.
        let (s, b) = api
            .deploy(&[&examples().join("two-rest-calls.bpmn")])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let mut instance = String::new();
        for _ in 0..2 {
            // Created round-robin: one instance per partition, so both have jobs.
            let (s, b) = api
                .post(
                    "/v2/process-instances",
                    json!({"processDefinitionId": "two-rest-calls"}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            instance = b["processInstanceKey"].as_str().unwrap().to_owned();
        }
        let (s, b) = api
            .post(
                "/v2/jobs/activation",
                json!({"type": "restCall", "timeout": 10000, "maxJobsToActivate": 1, "requestTimeout": 2000}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let job = b["jobs"][0]["jobKey"].as_str().expect("a job").to_owned();
        let path = format!("/v2/jobs/{job}/completion");
        let (s, _) = api.post(&path, json!({})).await.unwrap();
        assert_eq!(s, 204);
        let (s, b) = api.post(&path, json!({})).await.unwrap();
        check(s, &b, 404, &job);

        // Still serving.
        let (s, b) = api.get("/v2/topology").await.unwrap();
        assert_eq!(s, 200, "{b}");
        let (s, b) = api.get(&format!("/v2/process-instances/{instance}")).await.unwrap();
        assert_eq!(s, 200, "{b}");
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// SIGTERM stops the node gracefully, and the data is there after a restart.
#[test]
fn sigterm_stops_gracefully_and_state_survives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &[]);
        rill.wait_ready(Duration::from_secs(30)).await;
        // The server turns transparent huge pages off for itself (cli/src/memory.rs).
        let status = std::fs::read_to_string(format!("/proc/{}/status", rill.pid())).unwrap();
        if let Some(thp) = status.lines().find(|l| l.starts_with("THP_enabled:")) {
            assert_eq!(thp.split_whitespace().nth(1), Some("0"), "{thp}");
        }
        let api = Api::new(rill.rest());
        let (s, b) = api
            .deploy(&[&examples().join("wait-timer.bpmn")])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let key = b["deployments"][0]["processDefinition"]["processDefinitionKey"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            rill.terminate(Duration::from_secs(20)),
            "exit code 0 on SIGTERM"
        );
        assert!(rill.log_text().contains("stopped"), "{}", rill.log_text());

        rill.restart();
        rill.wait_ready(Duration::from_secs(30)).await;
        let (s, b) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionKey": key}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "the deployment survived the restart: {b}");
    });
}

/// `rill config validate` lists every mistake and fails; a good file passes.
#[test]
fn config_validate_reports_every_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[cluster]\nreplication-factor = 3\nnode-id = 5\n[threads]\ncpu-thread-count = 0\n",
    )
    .unwrap();
    let output = std::process::Command::new(support::rill_binary())
        .args(["config", "validate"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for field in [
        "cluster.replication-factor",
        "cluster.node-id",
        "threads.cpu-thread-count",
    ] {
        assert!(stderr.contains(field), "{stderr} should name {field}");
    }
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[cluster]\npartitions-count = 4\n").unwrap();
    let output = std::process::Command::new(support::rill_binary())
        .args(["config", "validate"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

/// Messages correlate to instances on either partition: a message lives on the
/// partition its correlation key hashes to, the instance on the one it was created on,
/// and the subscription between them crosses partitions. Half the messages are
/// published before the instances wait for them (buffered by their time to live).
#[test]
fn messages_correlate_across_partitions() {
    const ORDERS: usize = 8;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &[]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api
            .deploy(&[&examples().join("order-fulfilment.bpmn")])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");

        let publish = |order: usize| {
            let api = api.clone();
            async move {
                let body = json!({"name": "shipment-confirmed",
                    "correlationKey": format!("order-{order}"), "timeToLive": 60000});
                let (s, b) = api.post("/v2/messages/publication", body).await.unwrap();
                assert_eq!(s, 200, "publish: {b}");
            }
        };
        for order in 0..ORDERS / 2 {
            publish(order).await;
        }
        let mut instances = Vec::new();
        for order in 0..ORDERS {
            let variables = json!({"order": {"id": format!("order-{order}"), "total": 20,
                "customer": {"id": "c-1"}}});
            let (s, b) = api
                .post(
                    "/v2/process-instances",
                    json!({"processDefinitionId": "order-fulfilment", "variables": variables}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "create: {b}");
            instances.push(b["processInstanceKey"].as_str().unwrap().to_owned());
        }
        let partitions: BTreeSet<u64> = instances
            .iter()
            .map(|k| k.parse::<u64>().unwrap() >> 51)
            .collect();
        assert_eq!(partitions.len(), 2, "instances on both partitions");

        // Work the three tasks of every order.
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
                    let (s, b) = api
                        .post(
                            &format!("/v2/jobs/{key}/completion"),
                            json!({"variables": {"transactionId": "t-1"}}),
                        )
                        .await
                        .unwrap();
                    assert_eq!(s, 204, "complete: {b}");
                    done += 1;
                }
            }
        }
        for order in ORDERS / 2..ORDERS {
            publish(order).await;
        }

        api.wait_completed(&instances, Duration::from_secs(60), || rill.log_text())
            .await;
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// Execution listeners through the real REST API: listener jobs are handed out by
/// `POST /v2/jobs/activation` to workers of their type, with `kind` and
/// `listenerEventType`, one at a time and in order, before and after the element.
#[test]
fn execution_listener_jobs_are_activated_over_rest_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/tests/fixtures/elements/execution-listeners.bpmn");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &[]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api.deploy(&[&model]).await.unwrap();
        assert_eq!(s, 200, "{b}");
        let (s, b) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "execution-listeners",
                    "variables": {"orderId": "o-1", "region": "eu"}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "create: {b}");
        let instance = b["processInstanceKey"].as_str().unwrap().to_owned();

        let steps = [
            ("process-start", "EXECUTION_LISTENER", "START", json!({})),
            (
                "prepare",
                "EXECUTION_LISTENER",
                "START",
                json!({"token": "t-1"}),
            ),
            ("check-eu", "EXECUTION_LISTENER", "START", json!({})),
            (
                "work",
                "BPMN_ELEMENT",
                "UNSPECIFIED",
                json!({"result": "ok"}),
            ),
            ("audit", "EXECUTION_LISTENER", "END", json!({})),
            (
                "decide",
                "EXECUTION_LISTENER",
                "START",
                json!({"approved": true}),
            ),
            ("process-end", "EXECUTION_LISTENER", "END", json!({})),
        ];
        for (job_type, kind, event, variables) in steps {
            let request = json!({"type": job_type, "timeout": 30000,
                "maxJobsToActivate": 5, "requestTimeout": 5000});
            let (s, b) = api.post("/v2/jobs/activation", request).await.unwrap();
            assert_eq!(s, 200, "activate {job_type}: {b}");
            let jobs = b["jobs"].as_array().cloned().unwrap_or_default();
            assert_eq!(jobs.len(), 1, "{job_type}: {b}");
            assert_eq!(jobs[0]["kind"], kind, "{job_type}");
            assert_eq!(jobs[0]["listenerEventType"], event, "{job_type}");
            if job_type == "work" {
                assert_eq!(jobs[0]["variables"]["token"], "t-1");
            }
            let key = jobs[0]["jobKey"].as_str().unwrap();
            let (s, b) = api
                .post(
                    &format!("/v2/jobs/{key}/completion"),
                    json!({"variables": variables}),
                )
                .await
                .unwrap();
            assert_eq!(s, 204, "complete {job_type}: {b}");
        }
        api.wait_completed(&[instance], Duration::from_secs(30), || rill.log_text())
            .await;
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// Camunda's own Python SDK (`camunda-orchestration-sdk`, unmodified, pinned in
/// `tests/clients/python/requirements.txt`) against the real binary: deploy, create,
/// activate and complete jobs, see the instance finish (`tests/clients/python/sdk_flow.py`).
#[test]
fn the_camunda_python_sdk_runs_a_process_on_the_real_binary() {
    run_client_script("python/run.sh", "RILL_PY_VENV", "python-clients");
}

/// Camunda's npm SDK (`@camunda8/orchestration-cluster-api`, unmodified, pinned in
/// `tests/clients/node/package.json`) against the real binary
/// (`tests/clients/node/sdk_flow.mjs`), searches included.
#[test]
fn the_camunda_npm_sdk_runs_a_process_on_the_real_binary() {
    run_client_script("node/run.sh", "RILL_NODE_DIR", "node-clients");
}

/// pyzeebe 4.7 (Zeebe's Python gRPC client, unmodified, pinned in
/// `tests/clients/pyzeebe/requirements.txt`) over the gRPC port: topology, deploy, create
/// with result, polling and streaming workers, a published message correlating
/// (`tests/clients/pyzeebe/flow.py`).
#[test]
fn pyzeebe_runs_processes_over_grpc_on_the_real_binary() {
    run_client_script("pyzeebe/run.sh", "RILL_PYZEEBE_VENV", "pyzeebe-clients");
}

/// `@camunda8/sdk` 8.8's `ZeebeGrpcClient` (unmodified, pinned in
/// `tests/clients/zeebe-node/package.json`): topology, deploy, create with result with a
/// polling worker and with a `streamJobs` worker, a DMN deployed and evaluated
/// (`tests/clients/zeebe-node/grpc_flow.mjs`).
#[test]
fn the_camunda_npm_grpc_client_runs_processes_on_the_real_binary() {
    run_client_script(
        "zeebe-node/run.sh",
        "RILL_ZEEBE_NODE_DIR",
        "zeebe-node-clients",
    );
}

/// zeebe-node 8.3 (the older npm client, unmodified, pinned in
/// `tests/clients/zeebe-node-8.3/package.json`): topology, deploy, create with result with
/// a polling and a batch worker, a buffered message and its refused duplicate, cancel, and
/// a job failed without retries whose incident is resolved
/// (`tests/clients/zeebe-node-8.3/flow.mjs`).
#[test]
fn the_zeebe_node_8_3_client_runs_processes_on_the_real_binary() {
    run_client_script(
        "zeebe-node-8.3/run.sh",
        "RILL_ZEEBE_NODE_83_DIR",
        "zeebe-node-8.3-clients",
    );
}

/// Signals through the real REST API: `POST /v2/signals/broadcast` answers with the
/// signal's key; one broadcast reaches the waiting instances on both partitions and
/// starts exactly one instance of a process with a signal start event.
#[test]
fn a_signal_broadcast_reaches_every_partition() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/elements");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &[]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api
            .deploy(&[
                &fixtures.join("signal-catch.bpmn"),
                &fixtures.join("signal-start.bpmn"),
            ])
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");

        let (s, b) = api.post("/v2/signals/broadcast", json!({})).await.unwrap();
        assert_eq!(s, 400, "a broadcast without a name: {b}");

        let mut instances = Vec::new();
        for _ in 0..6 {
            instances.push(api.create("signal-catch", json!({})).await);
        }
        let partitions: BTreeSet<u64> = instances
            .iter()
            .map(|k| k.parse::<u64>().unwrap() >> 51)
            .collect();
        assert_eq!(partitions.len(), 2, "instances on both partitions");
        // A create is answered after the command that entered the catch event: each
        // instance waits for the signal now.

        let (s, b) = api
            .post(
                "/v2/signals/broadcast",
                json!({"signalName": "go", "variables": {"speed": 3}, "tenantId": "<default>"}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["tenantId"], "<default>");
        assert!(
            b["signalKey"].as_str().unwrap().parse::<u64>().is_ok(),
            "{b}"
        );

        let mut done = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        while done < instances.len() {
            assert!(Instant::now() < deadline, "only {done} instances went on");
            let request = json!({"type": "after-go", "timeout": 30000,
                "maxJobsToActivate": 10, "requestTimeout": 500});
            let (s, b) = api.post("/v2/jobs/activation", request).await.unwrap();
            assert_eq!(s, 200, "activate: {b}");
            for job in b["jobs"].as_array().cloned().unwrap_or_default() {
                assert_eq!(job["variables"]["speed"], 3, "{job}");
                let key = job["jobKey"].as_str().unwrap();
                let (s, b) = api
                    .post(&format!("/v2/jobs/{key}/completion"), json!({}))
                    .await
                    .unwrap();
                assert_eq!(s, 204, "complete: {b}");
                done += 1;
            }
        }
        api.wait_completed(&instances, Duration::from_secs(30), || rill.log_text())
            .await;

        // A signal start event: one instance for the broadcast, not one per partition.
        let (s, b) = api
            .post(
                "/v2/signals/broadcast",
                json!({"signalName": "order-arrived", "variables": {"orderId": 5}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{b}");
        let request = json!({"type": "handle", "timeout": 30000,
            "maxJobsToActivate": 10, "requestTimeout": 5000});
        let (s, b) = api.post("/v2/jobs/activation", request).await.unwrap();
        assert_eq!(s, 200, "{b}");
        let jobs = b["jobs"].as_array().cloned().unwrap_or_default();
        assert_eq!(jobs.len(), 1, "{b}");
        assert_eq!(jobs[0]["variables"]["orderId"], 5);
        let request = json!({"type": "handle", "timeout": 30000,
            "maxJobsToActivate": 10, "requestTimeout": 1500});
        let (_, b) = api.post("/v2/jobs/activation", request).await.unwrap();
        assert_eq!(b["jobs"].as_array().map(Vec::len), Some(0), "{b}");
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// Compensation through the real REST API: a model Zeebe refuses is refused with the
/// element and the reason; the travel booking's handlers are handed out as jobs once the
/// throw event is reached, newest booking first, and the instance goes on only after
/// both; the exported `COMPENSATION_SUBSCRIPTION` records have Zeebe's shape.
#[test]
fn compensation_handlers_run_as_jobs_over_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let records = dir.path().join("records.jsonl");
    let export = format!("exporters.jsonl.path={}", records.display());
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/elements");
    let travel = fixtures.join("compensation-travel.bpmn");
    let refused = dir.path().join("no-wait.bpmn");
    let xml = std::fs::read_to_string(&travel)
        .unwrap()
        .replace(
            r#"<bpmn:compensateEventDefinition id="CompensateEventDefinition_3" />"#,
            r#"<bpmn:compensateEventDefinition id="CompensateEventDefinition_3" waitForCompletion="false" />"#,
        )
        .replace("travel-booking", "travel-no-wait");
    std::fs::write(&refused, xml).unwrap();
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &[&export]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api.deploy(&[&refused]).await.unwrap();
        assert_eq!(s, 400, "{b}");
        let detail = b["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("UndoAll") && detail.contains("waitForCompletion"),
            "{b}"
        );
        let (s, b) = api.deploy(&[&travel]).await.unwrap();
        assert_eq!(s, 200, "{b}");
        let instance = api.create("travel-booking", json!({"trip": 7})).await;

        let work = |job_type: &'static str, wait: u64| {
            let api = &api;
            async move {
                let request = json!({"type": job_type, "timeout": 30000,
                    "maxJobsToActivate": 5, "requestTimeout": wait});
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
        };
        assert_eq!(work("book-hotel", 5000).await.len(), 1);
        assert_eq!(work("book-flight", 5000).await.len(), 1);
        let flight = work("cancel-flight", 5000).await;
        assert_eq!(flight.len(), 1);
        assert_eq!(flight[0]["elementId"], "CancelFlight");
        assert_eq!(flight[0]["variables"]["trip"], 7);
        // The instance waits for the other handler.
        assert!(work("notify", 1000).await.is_empty());
        assert_eq!(work("cancel-hotel", 5000).await.len(), 1);
        assert_eq!(work("notify", 5000).await.len(), 1);
        api.wait_completed(
            std::slice::from_ref(&instance),
            Duration::from_secs(30),
            || rill.log_text(),
        )
        .await;

        let deadline = Instant::now() + Duration::from_secs(20);
        let subscriptions = loop {
            let text = std::fs::read_to_string(&records).unwrap_or_default();
            let found: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|r| r["valueType"] == "COMPENSATION_SUBSCRIPTION")
                .collect();
            if found.len() >= 6 || Instant::now() > deadline {
                break found;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let steps: Vec<(String, String)> = subscriptions
            .iter()
            .map(|r| {
                (
                    r["intent"].as_str().unwrap_or_default().to_owned(),
                    r["value"]["compensableActivityId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = [
            ("CREATED", "BookHotel"),
            ("CREATED", "BookFlight"),
            ("TRIGGERED", "BookFlight"),
            ("TRIGGERED", "BookHotel"),
            ("COMPLETED", "BookFlight"),
            ("COMPLETED", "BookHotel"),
        ]
        .iter()
        .map(|(i, a)| ((*i).to_owned(), (*a).to_owned()))
        .collect();
        assert_eq!(steps, expected);
        let triggered = &subscriptions[3]["value"];
        assert_eq!(triggered["throwEventId"], "UndoAll");
        assert_eq!(triggered["compensationHandlerId"], "CancelHotel");
        assert_eq!(
            triggered["processInstanceKey"]
                .to_string()
                .trim_matches('"'),
            instance
        );
        let fields: BTreeSet<&str> = triggered
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let zeebe: BTreeSet<&str> = [
            "tenantId",
            "processInstanceKey",
            "processDefinitionKey",
            "compensableActivityId",
            "throwEventId",
            "throwEventInstanceKey",
            "compensationHandlerId",
            "compensationHandlerInstanceKey",
            "compensableActivityScopeKey",
            "compensableActivityInstanceKey",
            "variables",
        ]
        .into_iter()
        .collect();
        assert_eq!(fields, zeebe);
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}

/// A published message starts an instance at a message start event: the export has
/// Zeebe's `PROCESS_EVENT` `TRIGGERING` (with the message's variables) and `TRIGGERED`,
/// and the instance's records name it as their own root.
#[test]
fn a_message_start_is_exported_as_a_process_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let records = dir.path().join("records.jsonl");
    let export = format!("exporters.jsonl.path={}", records.display());
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/tests/fixtures/elements/message-start-event.bpmn");
    runtime().block_on(async {
        let mut rill = Standalone::start(&data, &[&export]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        let (s, b) = api.deploy(&[&model]).await.unwrap();
        assert_eq!(s, 200, "{b}");
        let body = json!({"name": "order-placed", "correlationKey": "order-9",
            "variables": {"orderId": 9}});
        let (s, b) = api.post("/v2/messages/publication", body).await.unwrap();
        assert_eq!(s, 200, "{b}");

        let deadline = Instant::now() + Duration::from_secs(20);
        let (events, instance_records) = loop {
            let text = std::fs::read_to_string(&records).unwrap_or_default();
            let all: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|r| r["recordType"] == "EVENT")
                .collect();
            let of = |value_type: &str| -> Vec<Value> {
                all.iter()
                    .filter(|r| r["valueType"] == value_type)
                    .cloned()
                    .collect()
            };
            let (events, instance_records) = (of("PROCESS_EVENT"), of("PROCESS_INSTANCE"));
            if (events.len() >= 2 && !instance_records.is_empty()) || Instant::now() > deadline {
                break (events, instance_records);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let intents: Vec<&str> = events
            .iter()
            .map(|r| r["intent"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(intents, ["TRIGGERING", "TRIGGERED"], "{events:#?}");
        assert_eq!(events[0]["key"], events[1]["key"]);
        let triggering = &events[0]["value"];
        assert_eq!(triggering["targetElementId"], "OrderPlaced");
        assert_eq!(triggering["variables"], json!({"orderId": 9}));
        assert_eq!(triggering["scopeKey"], triggering["processDefinitionKey"]);
        let fields: BTreeSet<&str> = triggering
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let zeebe: BTreeSet<&str> = [
            "scopeKey",
            "targetElementId",
            "variables",
            "processDefinitionKey",
            "processInstanceKey",
            "tenantId",
        ]
        .into_iter()
        .collect();
        assert_eq!(fields, zeebe);
        let instance = &triggering["processInstanceKey"];
        for record in &instance_records {
            assert_eq!(&record["value"]["processInstanceKey"], instance, "{record}");
            assert_eq!(
                &record["value"]["rootProcessInstanceKey"], instance,
                "{record}"
            );
        }
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}
