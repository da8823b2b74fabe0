//! `rill instances`, `rill incidents` and `rill jobs list`: the real binary against a
//! real standalone, as tables and as JSON, walking pages with the cursor.

mod support;

use std::collections::BTreeSet;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Standalone, examples};

fn rill(address: &str, args: &[&str]) -> Output {
    std::process::Command::new(support::rill_binary())
        .arg("--address")
        .arg(address)
        .args(args)
        .output()
        .expect("run rill")
}

/// Runs a client command that must succeed; its stdout.
fn ok(address: &str, args: &[&str]) -> String {
    let out = rill(address, args);
    assert!(
        out.status.success(),
        "rill {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json_items(address: &str, args: &[&str]) -> Vec<Value> {
    let mut args = args.to_vec();
    args.push("--json");
    let text = ok(address, &args);
    match serde_json::from_str(&text) {
        Ok(Value::Array(items)) => items,
        other => panic!("rill {args:?} printed no JSON array: {other:?}\n{text}"),
    }
}

fn field(items: &[Value], name: &str) -> BTreeSet<String> {
    items
        .iter()
        .map(|i| i[name].as_str().expect(name).to_owned())
        .collect()
}

async fn total(api: &Api, path: &str, filter: Value) -> u64 {
    let (s, b) = api.post(path, json!({"filter": filter})).await.unwrap();
    assert_eq!(s, 200, "{b}");
    b["page"]["totalItems"].as_u64().unwrap()
}

async fn wait_total(api: &Api, path: &str, filter: Value, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while total(api, path, filter.clone()).await != want {
        assert!(Instant::now() < deadline, "{path} {filter}: never {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn listings_print_tables_and_json_and_walk_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut standalone =
        Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
    runtime.block_on(standalone.wait_ready(Duration::from_secs(60)));
    let address = standalone.rest();
    let api = Api::new(address.clone());

    // Seven instances: two cancelled, one with a job failed to an incident.
    let deployed = ok(
        &address,
        &[
            "deploy",
            examples().join("two-rest-calls.bpmn").to_str().unwrap(),
        ],
    );
    assert!(deployed.contains("two-rest-calls"), "{deployed}");
    let mut created = Vec::new();
    for i in 0..7 {
        let text = ok(
            &address,
            &[
                "create",
                "two-rest-calls",
                "--variables",
                &format!("{{\"i\": {i}}}"),
            ],
        );
        let answer: Value = serde_json::from_str(&text).expect("create prints JSON");
        created.push(answer["processInstanceKey"].as_str().unwrap().to_owned());
    }
    for key in &created[..2] {
        ok(&address, &["cancel", key]);
    }
    let failing = created[2].clone();
    let failed_job = runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < deadline, "no job of {failing}");
            let (s, b) = api
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "restCall", "worker": "cli-test", "timeout": 600000,
                        "maxJobsToActivate": 10, "requestTimeout": 500}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            let job = b["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["processInstanceKey"] == failing.as_str())
                .cloned();
            if let Some(job) = job {
                break job["jobKey"].as_str().unwrap().to_owned();
            }
        }
    });
    ok(
        &address,
        &[
            "jobs",
            "fail",
            &failed_job,
            "--retries",
            "0",
            "--message",
            "no route",
        ],
    );
    runtime.block_on(async {
        wait_total(
            &api,
            "/v2/process-instances/search",
            json!({"state": "TERMINATED"}),
            2,
        )
        .await;
        wait_total(&api, "/v2/incidents/search", json!({"state": "ACTIVE"}), 1).await;
    });

    // Every instance, as JSON.
    let all = json_items(&address, &["instances", "--limit", "100"]);
    assert_eq!(
        field(&all, "processInstanceKey"),
        created.iter().cloned().collect()
    );
    // Five of them, two at a time: three pages, nothing repeated.
    let some = json_items(
        &address,
        &[
            "instances",
            "--process",
            "two-rest-calls",
            "--limit",
            "5",
            "--page-size",
            "2",
        ],
    );
    assert_eq!(some.len(), 5);
    assert_eq!(field(&some, "processInstanceKey").len(), 5);
    let walked: Vec<&Value> = all.iter().take(5).collect();
    assert_eq!(
        some.iter().collect::<Vec<_>>(),
        walked,
        "paging keeps the search's order"
    );
    assert!(json_items(&address, &["instances", "--process", "no-such-process"]).is_empty());

    // A table: the header, one row per instance, and the count.
    let table = ok(&address, &["instances", "--state", "terminated"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "KEY", "PROCESS", "VERSION", "STATE", "INCIDENT", "START", "END"
        ]
    );
    let mut shown = BTreeSet::new();
    for line in &lines[1..3] {
        let cells: Vec<&str> = line.split_whitespace().collect();
        shown.insert(cells[0].to_owned());
        assert_eq!(
            &cells[1..5],
            ["two-rest-calls", "1", "TERMINATED", "false"],
            "{table}"
        );
        assert_ne!(
            cells[6], "-",
            "a terminated instance has an end date: {table}"
        );
    }
    assert_eq!(shown, created[..2].iter().cloned().collect(), "{table}");
    assert_eq!(lines[3], "2 of 2 process instances");
    let active = ok(
        &address,
        &["instances", "--state", "ACTIVE", "--limit", "2"],
    );
    assert!(active.ends_with("2 of 5 process instances\n"), "{active}");

    // Incidents.
    let incidents = json_items(&address, &["incidents", "--state", "ACTIVE"]);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0]["processInstanceKey"], failing.as_str());
    assert_eq!(incidents[0]["errorType"], "JOB_NO_RETRIES");
    assert_eq!(incidents[0]["errorMessage"], "no route");
    let table = ok(&address, &["incidents", "--process-instance", &failing]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row[0],
        incidents[0]["incidentKey"].as_str().unwrap(),
        "{table}"
    );
    assert_eq!(
        &row[1..6],
        [
            "ACTIVE",
            "JOB_NO_RETRIES",
            "two-rest-calls",
            failing.as_str(),
            "Rest1"
        ],
        "{table}"
    );
    assert!(table.ends_with("no route\n1 of 1 incidents\n"), "{table}");
    assert!(json_items(&address, &["incidents", "--state", "RESOLVED"]).is_empty());

    // Jobs: the failed one, and those of the five instances still running.
    let failed = json_items(
        &address,
        &["jobs", "list", "--type", "restCall", "--state", "failed"],
    );
    assert_eq!(
        field(&failed, "jobKey"),
        BTreeSet::from([failed_job.clone()])
    );
    assert_eq!(failed[0]["retries"], 0);
    let created_jobs = json_items(&address, &["jobs", "list", "--state", "CREATED"]);
    let running: BTreeSet<String> = created[3..].iter().cloned().collect();
    assert_eq!(field(&created_jobs, "processInstanceKey"), running);
    let table = ok(&address, &["jobs", "list", "--process-instance", &failing]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "KEY", "TYPE", "STATE", "RETRIES", "WORKER", "INSTANCE", "ELEMENT"
        ]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        [
            failed_job.as_str(),
            "restCall",
            "FAILED",
            "0",
            "cli-test",
            failing.as_str(),
            "Rest1"
        ],
        "{table}"
    );

    // Mistakes are told plainly: a bad flag value, a filter the gateway refuses, no gateway.
    let out = rill(&address, &["instances", "--state", "RUNNING"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("RUNNING") && err.contains("ACTIVE, COMPLETED, TERMINATED"),
        "{err}"
    );
    let out = rill(&address, &["jobs", "list", "--limit", "0"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = rill(&address, &["incidents", "--process-instance", "not-a-key"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("400") && err.contains("filter.processInstanceKey"),
        "{err}"
    );
    assert!(standalone.terminate(Duration::from_secs(20)));
    let out = rill(&address, &["instances"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the gateway"), "{err}");
}
