//! Job activation with long polling: waits for jobs, wakes when they appear, gives up
//! at the request timeout, and ends early when the server shuts down.

use std::time::{Duration, Instant};

use rill_gateway::{JobsAvailable, JobsNotice};
use rill_protocol::PartitionId;
use serde_json::json;

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, create, deploy_one_task};

#[tokio::test]
async fn a_waiting_activation_wakes_when_a_job_appears() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "later", "late-job").await;
    let poll = spawn_activation(&gateway, "late-job", 10_000);
    // Let the poll find nothing and start waiting (the gauge says when it does).
    wait_for_metric(&gateway, "rill_gateway_long_polling_waiting 1").await;
    assert!(!poll.is_finished(), "the activation waits for jobs");

    let created = create(&gateway, "later", json!({})).await;
    assert_woken_with_the_job(poll.await.unwrap(), &created);
    assert!(
        gateway
            .metrics_text()
            .contains("rill_gateway_long_polling_waiting 0")
    );
    gateway.stop().await;
}

/// A new job wakes one waiting activation, which asks only the partition the job is on;
/// the others keep waiting instead of each sending an activation that finds nothing.
#[tokio::test]
async fn a_job_wakes_one_of_several_waiting_activations() {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    deploy_one_task(&gateway, "later", "shared-job").await;
    let polls: Vec<_> = (0..3)
        .map(|_| spawn_activation(&gateway, "shared-job", 3000))
        .collect();
    wait_for_metric(&gateway, "rill_gateway_long_polling_waiting 3").await;
    // Each poll asked both partitions once and found nothing.
    let metrics = gateway.metrics_text();
    assert!(
        metrics.contains(r#"rill_gateway_job_activation_commands_total{outcome="empty"} 6"#),
        "{metrics}"
    );

    let created = create(&gateway, "later", json!({})).await;
    wait_for_metric(&gateway, "rill_gateway_long_polling_waiting 2").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let metrics = gateway.metrics_text();
    assert!(
        metrics.contains(r#"rill_gateway_job_activation_commands_total{outcome="jobs"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"rill_gateway_job_activation_commands_total{outcome="empty"} 6"#),
        "nobody else asked: {metrics}"
    );
    assert!(
        metrics.contains("rill_gateway_long_polling_waiting 2"),
        "{metrics}"
    );

    let mut found = 0;
    for poll in polls {
        let (_, reply) = poll.await.unwrap();
        let jobs = reply["jobs"].as_array().unwrap();
        if let Some(job) = jobs.first() {
            assert_eq!(job["processInstanceKey"], created);
        }
        found += jobs.len();
    }
    assert_eq!(found, 1, "exactly one activation got the job");
    gateway.stop().await;
}

/// One activation of up to three `job_type` jobs that may wait `request_timeout_ms`;
/// yields how long it took and the answer.
fn spawn_activation(
    gateway: &TestGateway,
    job_type: &str,
    request_timeout_ms: u64,
) -> tokio::task::JoinHandle<(Duration, serde_json::Value)> {
    let client = gateway.client.clone();
    let url = gateway.url("/v2/jobs/activation");
    let body = json!({"type": job_type, "timeout": 5000, "maxJobsToActivate": 3,
                      "requestTimeout": request_timeout_ms});
    tokio::spawn(async move {
        let started = Instant::now();
        let reply: serde_json::Value = client
            .post(url)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (started.elapsed(), reply)
    })
}

/// The activation was woken well before its timeout and got the instance's one job.
fn assert_woken_with_the_job((elapsed, reply): (Duration, serde_json::Value), instance: &str) {
    assert_eq!(reply["jobs"].as_array().unwrap().len(), 1, "{reply}");
    assert_eq!(&reply["jobs"][0]["processInstanceKey"], instance);
    assert!(elapsed < Duration::from_secs(5), "woken early: {elapsed:?}");
}

async fn wait_for_metric(gateway: &TestGateway, line: &str) {
    for _ in 0..150 {
        if gateway.metrics_text().contains(line) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no `{line}` in\n{}", gateway.metrics_text());
}

/// Notifications that never arrived (a broker dropped them) are announced as missed:
/// every waiting activation then looks again, and finds the job nobody announced.
#[tokio::test]
async fn missed_notifications_wake_every_waiting_activation() {
    let backend = EngineBackend::new(1);
    let gateway = TestGateway::start(backend.clone()).await;
    deploy_one_task(&gateway, "later", "unannounced-job").await;
    let poll = spawn_activation(&gateway, "unannounced-job", 10_000);
    wait_for_metric(&gateway, "rill_gateway_long_polling_waiting 1").await;

    backend.mute_notifications(true);
    let created = create(&gateway, "later", json!({})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!poll.is_finished(), "nothing announced the job yet");

    backend.notify(JobsNotice::Missed);
    assert_woken_with_the_job(poll.await.unwrap(), &created);
    gateway.stop().await;
}

#[tokio::test]
async fn activation_answers_empty_at_the_timeout_or_at_once() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;

    // A notification for another job type does not end the wait.
    let waited = {
        let started = Instant::now();
        let reply = gateway
            .post(
                "/v2/jobs/activation",
                json!({"type": "nothing", "timeout": 1000, "maxJobsToActivate": 1,
                       "requestTimeout": 400}),
            )
            .await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body["jobs"], json!([]));
        started.elapsed()
    };
    assert!(waited >= Duration::from_millis(380), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");

    // requestTimeout < 0: no long polling.
    let started = Instant::now();
    let reply = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "nothing", "timeout": 1000, "maxJobsToActivate": 1,
                   "requestTimeout": -1}),
        )
        .await;
    assert_eq!(reply.body["jobs"], json!([]));
    assert!(started.elapsed() < Duration::from_millis(600));

    // requestTimeout 0 (what SDK workers send): the gateway's default (800 ms in tests).
    let started = Instant::now();
    let reply = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "nothing", "timeout": 1000, "maxJobsToActivate": 1,
                   "requestTimeout": 0}),
        )
        .await;
    assert_eq!(reply.body["jobs"], json!([]));
    assert!(started.elapsed() >= Duration::from_millis(750));
    gateway.stop().await;
}

#[tokio::test]
async fn other_job_types_do_not_wake_and_shutdown_ends_the_wait() {
    let backend = EngineBackend::new(1);
    let mut gateway = TestGateway::start(backend.clone()).await;
    let poll = {
        let client = gateway.client.clone();
        let url = gateway.url("/v2/jobs/activation");
        tokio::spawn(async move {
            let started = Instant::now();
            let response = client
                .post(url)
                .json(
                    &json!({"type": "mine", "timeout": 5000, "maxJobsToActivate": 1,
                              "requestTimeout": 20000}),
                )
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: serde_json::Value = response.json().await.unwrap();
            (started.elapsed(), status, body)
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Somebody else's jobs: keep waiting.
    backend_notify(&backend, "theirs");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !poll.is_finished(),
        "a notification for another type does not wake"
    );

    gateway.begin_shutdown();
    let (elapsed, status, body) = poll.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["jobs"], json!([]));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    gateway.stop().await;
}

fn backend_notify(backend: &EngineBackend, job_type: &str) {
    backend.notify(JobsNotice::Available(JobsAvailable {
        partition: PartitionId(1),
        job_type: job_type.to_owned(),
    }));
}

/// A client's `requestTimeout` is cut to `gateway.max-request-timeout`: a huge one neither
/// holds the activation (and its permit) nor a create-and-await for longer than that.
#[tokio::test]
async fn huge_request_timeouts_are_capped_by_the_configured_maximum() {
    let config = rill_config::GatewayConfig {
        max_request_timeout: Duration::from_millis(400),
        ..crate::support::test_config()
    };
    let gateway = TestGateway::start_with(EngineBackend::new(1), config).await;
    deploy_one_task(&gateway, "capped", "nobody-works-this").await;

    let started = Instant::now();
    let reply = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "nobody-works-this", "timeout": 5000, "maxJobsToActivate": 1,
                   "requestTimeout": i64::MAX.to_string()}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["jobs"], json!([]));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );

    let started = Instant::now();
    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "capped", "awaitCompletion": true,
                   "requestTimeout": 86_400_000}),
        )
        .await;
    reply.assert_problem(504, "DEADLINE_EXCEEDED", "/v2/process-instances", &[]);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );
    gateway.stop().await;
}
