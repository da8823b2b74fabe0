//! `flow-control.write` against the real binary: a leader admits at most `limit` new
//! commands per second, refusing the rest with 503 RESOURCE_EXHAUSTED that names the
//! setting, while commands that finish work pass and are not counted.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Api, Standalone, deploy};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_leader_admits_at_most_the_write_limit_per_second() {
    const LIMIT: usize = 20;
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut rill = Standalone::start(
            &dir.path().join("data"),
            &[
                "cluster.partitions-count=1",
                "flow-control.write.enabled=true",
                &format!("flow-control.write.limit={LIMIT}"),
            ],
        );
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        // A fresh second of tokens.
        tokio::time::sleep(Duration::from_millis(1100)).await;

        let create = json!({"processDefinitionId": "two-rest-calls"});
        let started = Instant::now();
        let (mut accepted, mut refusal) = (0, None);
        while started.elapsed() < Duration::from_secs(3) {
            let (status, body) = api
                .post("/v2/process-instances", create.clone())
                .await
                .expect("create");
            match status {
                200 => accepted += 1,
                503 => refusal = Some(body),
                _ => panic!("create answered {status} {body}"),
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        // The bucket holds a second of the rate at most: 20 at once, 20 a second after.
        let most = LIMIT as f64 * (seconds + 1.0);
        assert!(
            accepted as f64 <= most && accepted >= 2 * LIMIT,
            "{accepted} creates taken in {seconds:.1} s with a limit of {LIMIT} per second"
        );
        let refusal = refusal.expect("creates beyond the limit are refused");
        assert_eq!(refusal["title"], "RESOURCE_EXHAUSTED", "{refusal}");
        let detail = refusal["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains(&format!("flow-control.write.limit = {LIMIT}")),
            "{detail}"
        );

        // Finishing work is never refused: every job of the accepted instances completes,
        // far faster than the limit allows new commands.
        let mut completed = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while completed < accepted {
            let (status, jobs) = api
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "restCall", "maxJobsToActivate": 100, "timeout": 60000}),
                )
                .await
                .expect("activate");
            if status == 503 {
                // Activation is not work that finishes: it takes a token too.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            assert_eq!(status, 200, "{jobs}");
            for job in jobs["jobs"].as_array().expect("jobs") {
                let key = job["jobKey"].as_str().expect("a key");
                let (status, body) = api
                    .post(&format!("/v2/jobs/{key}/completion"), json!({}))
                    .await
                    .expect("complete");
                assert_eq!(status, 204, "completion refused: {body}");
                completed += 1;
            }
            assert!(Instant::now() < deadline, "{completed} of {accepted} jobs");
        }
        assert!(rill.terminate(Duration::from_secs(30)), "clean shutdown");
    });
}
