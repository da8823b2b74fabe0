//! Activation answers that come too late for a worker, with the scripted backend: jobs
//! whose timeout is (nearly) over by the time their answer arrives, and answers from a
//! raft term the partition has left, are not handed out; jobs in hand do not wait for a
//! partition without a leader.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rill_gateway::{JobsAvailable, JobsNotice};
use rill_protocol::value::{JobBatchRecord, JobRecord};
use rill_protocol::{
    Command, CommandResponse, Intent, JsonValue, Key, PartitionId, RecordValue, Term,
};
use serde_json::{Value, json};

use crate::support::scripted_backend::ScriptedBackend;
use crate::support::{TestGateway, test_config};

// The test's clock, to build deadlines around now.
#[allow(clippy::disallowed_methods)]
fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as i64
}

fn job(timeout: i64, deadline: i64) -> JobRecord {
    JobRecord {
        job_type: "work".into(),
        element_id: "task".into(),
        element_instance_key: 1,
        bpmn_process_id: "p".into(),
        process_definition_version: 1,
        process_definition_key: 2,
        process_instance_key: 3,
        worker: "w".into(),
        retries: 3,
        retry_backoff: 0,
        recurring_time: -1,
        deadline,
        timeout,
        error_message: String::new(),
        error_code: String::new(),
        custom_headers: Default::default(),
        variables: JsonValue::empty_object(),
        tenant_id: "<default>".into(),
        job_kind: Default::default(),
        job_listener_event_type: Default::default(),
        result: Default::default(),
        root_process_instance_key: 3,
        tags: Vec::new(),
    }
}

/// An activation's answer with `jobs` (key, job), as the engine gives it.
fn batch(jobs: Vec<(Key, JobRecord)>) -> CommandResponse {
    let (job_keys, jobs): (Vec<i64>, Vec<JobRecord>) =
        jobs.into_iter().map(|(key, job)| (key.get(), job)).unzip();
    CommandResponse::Accepted {
        key: Key::NONE,
        intent: Intent::Activated,
        value: RecordValue::JobBatch(JobBatchRecord {
            job_type: "work".into(),
            worker: "w".into(),
            timeout: 5000,
            max_jobs_to_activate: 10,
            job_keys,
            jobs,
            truncated: false,
            tenant_ids: Vec::new(),
        }),
    }
}

fn unexpected(partition: PartitionId) -> Result<CommandResponse, rill_client::Error> {
    Err(rill_client::Error::Internal(format!(
        "only activations are expected (partition {partition})"
    )))
}

/// Activates `work` jobs, waiting up to `request_timeout` ms (negative: not at all).
async fn activate(gateway: &TestGateway, request_timeout: i64) -> Vec<Value> {
    let reply = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "work", "timeout": 5000, "maxJobsToActivate": 10,
                   "requestTimeout": request_timeout}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body["jobs"].as_array().expect("a job list").clone()
}

fn job_keys(jobs: &[Value]) -> Vec<String> {
    jobs.iter()
        .map(|job| job["jobKey"].as_str().expect("a key").to_owned())
        .collect()
}

#[tokio::test]
async fn jobs_whose_deadline_passed_before_the_answer_arrived_are_not_handed_out() {
    let p = PartitionId(1);
    let (late, near, fresh) = (Key::new(p, 11), Key::new(p, 12), Key::new(p, 13));
    // The leader's clock is an hour behind the gateway's: lateness is judged by how long
    // the answer took, not by comparing the clocks.
    let hour = 3_600_000;
    let backend = ScriptedBackend::new(1, move |partition, command| {
        let Command::ActivateJobs(_) = command else {
            return unexpected(partition);
        };
        let leader_now = now_millis() - hour;
        Ok(batch(vec![
            // The answer takes 300 ms (below): more than this job's whole timeout.
            (late, job(250, leader_now + 250)),
            // 20 ms left of 320: inside the margin, a worker could not report back.
            (near, job(320, leader_now + 320)),
            (fresh, job(5000, leader_now + 5000)),
        ]))
    });
    *backend.answer_delay.lock().unwrap() = Duration::from_millis(300);
    let gateway = TestGateway::start(backend.clone()).await;

    let jobs = activate(&gateway, -1).await;
    assert_eq!(job_keys(&jobs), [fresh.to_string()]);
    let metrics = gateway.metrics_text();
    assert!(
        metrics.contains(r#"rill_gateway_activated_jobs_dropped_total{reason="deadline"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"rill_gateway_activated_jobs_dropped_total{reason="term"} 0"#),
        "{metrics}"
    );
    assert!(
        metrics.contains("rill_gateway_jobs_activated_total 1"),
        "only the handed-out job counts as activated: {metrics}"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn a_long_poll_that_gets_only_late_jobs_goes_on_waiting() {
    let backend = ScriptedBackend::new(1, |partition, command| {
        let Command::ActivateJobs(_) = command else {
            return unexpected(partition);
        };
        // A job whose timeout is over before its answer arrives (below).
        Ok(batch(vec![(
            Key::new(partition, 21),
            job(40, now_millis() + 40),
        )]))
    });
    *backend.answer_delay.lock().unwrap() = Duration::from_millis(60);
    let gateway = TestGateway::start(backend.clone()).await;
    let started = Instant::now();
    let jobs = activate(&gateway, 300).await;
    assert!(jobs.is_empty(), "{jobs:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "answered before the long poll ended: {:?}",
        started.elapsed()
    );
    gateway.stop().await;
}

#[tokio::test]
async fn an_answer_from_a_term_the_partition_has_left_is_not_handed_out() {
    let key = Key::new(PartitionId(1), 31);
    let backend = ScriptedBackend::new(1, move |partition, command| {
        let Command::ActivateJobs(_) = command else {
            return unexpected(partition);
        };
        Ok(batch(vec![(key, job(5000, now_millis() + 4990))]))
    });
    // The entry was in term 3, and the partition has a leader of term 4 since.
    *backend.answer_term.lock().unwrap() = Some(Term(3));
    *backend.current_term.lock().unwrap() = Some(Term(4));
    let gateway = TestGateway::start(backend.clone()).await;

    assert!(activate(&gateway, -1).await.is_empty());
    let metrics = gateway.metrics_text();
    assert!(
        metrics.contains(r#"rill_gateway_activated_jobs_dropped_total{reason="term"} 1"#),
        "{metrics}"
    );

    // The same answer while term 3 is still the partition's: handed out.
    *backend.current_term.lock().unwrap() = Some(Term(3));
    assert_eq!(job_keys(&activate(&gateway, -1).await), [key.to_string()]);
    gateway.stop().await;
}

#[tokio::test]
async fn jobs_in_hand_do_not_wait_for_a_partition_without_a_leader() {
    let key = Key::new(PartitionId(1), 41);
    // Partition 1 has jobs (of the 5 s the request asks for); partition 2 lost its leader.
    let backend = ScriptedBackend::new(2, move |partition, command| match command {
        Command::ActivateJobs(_) if partition == PartitionId(1) => {
            Ok(batch(vec![(key, job(5000, now_millis() + 5000))]))
        }
        Command::ActivateJobs(_) => Err(rill_client::Error::Unavailable {
            partition,
            reason: "no leader known yet".into(),
        }),
        _ => unexpected(partition),
    });
    // Waiting for partition 2 until the long poll's end would outlast the jobs.
    let mut config = test_config();
    config.request_timeout = Duration::from_secs(6);
    let gateway = TestGateway::start_with(backend.clone(), config).await;

    let started = Instant::now();
    // A fresh gateway starts its round at partition 1.
    let jobs = activate(&gateway, 5000).await;
    assert_eq!(job_keys(&jobs), [key.to_string()]);
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "the jobs waited {:?}",
        started.elapsed()
    );
    assert_eq!(
        backend.partitions_used(),
        [1, 2],
        "partition 2 is asked once, not until it has a leader"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn a_partition_without_a_leader_does_not_hold_up_jobs_on_the_next() {
    let key = Key::new(PartitionId(2), 7);
    // Partition 1, where a fresh gateway starts its round, lost its leader; 2 has jobs.
    let backend = ScriptedBackend::new(2, move |partition, command| match command {
        Command::ActivateJobs(_) if partition == PartitionId(2) => {
            Ok(batch(vec![(key, job(5000, now_millis() + 5000))]))
        }
        Command::ActivateJobs(_) => Err(rill_client::Error::NotLeader { partition }),
        _ => unexpected(partition),
    });
    let gateway = TestGateway::start_with(backend.clone(), test_config()).await;
    let jobs = activate(&gateway, 5000).await;
    assert_eq!(job_keys(&jobs), [key.to_string()]);
    assert_eq!(
        backend.partitions_used(),
        [1, 2],
        "partition 1 is asked once and passed over, not retried first"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn when_no_other_partition_has_jobs_one_without_a_leader_is_waited_for() {
    let key = Key::new(PartitionId(1), 9);
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let asked_in_script = asked.clone();
    // Partition 1 has a leader again from its third request on, with a job; 2 has none.
    let backend = ScriptedBackend::new(2, move |partition, command| match command {
        Command::ActivateJobs(_) if partition == PartitionId(1) => {
            if asked_in_script.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
                Err(rill_client::Error::NotLeader { partition })
            } else {
                Ok(batch(vec![(key, job(5000, now_millis() + 5000))]))
            }
        }
        Command::ActivateJobs(_) => Ok(batch(Vec::new())),
        _ => unexpected(partition),
    });
    let gateway = TestGateway::start_with(backend.clone(), test_config()).await;
    let jobs = activate(&gateway, 5000).await;
    assert_eq!(job_keys(&jobs), [key.to_string()]);
    assert_eq!(backend.partitions_used(), [1, 2, 1, 1]);
    gateway.stop().await;
}

/// A busy partition (large variables make activations slow) answers after the long poll
/// has ended: the answer is still awaited and its jobs handed out, not left activated
/// out of every worker's reach until they time out.
#[tokio::test]
async fn an_answer_slower_than_the_rest_of_the_long_poll_is_still_handed_out() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let backend = ScriptedBackend::new(1, move |partition, command| {
        let Command::ActivateJobs(_) = command else {
            return unexpected(partition);
        };
        // Nothing at first; the job appears with the notification.
        Ok(match counter.fetch_add(1, Ordering::SeqCst) {
            0 => batch(Vec::new()),
            _ => batch(vec![(
                Key::new(partition, 31),
                job(5000, now_millis() + 5000),
            )]),
        })
    });
    let gateway = TestGateway::start(backend.clone()).await;
    let started = Instant::now();
    let poll = tokio::spawn({
        let base = gateway.base.clone();
        async move {
            let client = reqwest::Client::new();
            let reply: Value = client
                .post(format!("{base}/v2/jobs/activation"))
                .json(
                    &json!({"type": "work", "timeout": 5000, "maxJobsToActivate": 10,
                              "requestTimeout": 400}),
                )
                .send()
                .await
                .expect("request")
                .json()
                .await
                .expect("JSON");
            reply
        }
    });
    while asked.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // From now on answers take longer than what is left of the 400 ms long poll.
    *backend.answer_delay.lock().unwrap() = Duration::from_millis(800);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = backend.jobs.send(JobsNotice::Available(JobsAvailable {
        partition: PartitionId(1),
        job_type: "work".into(),
    }));
    let reply = poll.await.expect("the poll");
    let jobs = reply["jobs"].as_array().expect("a job list").clone();
    assert_eq!(job_keys(&jobs), [Key::new(PartitionId(1), 31).to_string()]);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    gateway.stop().await;
}
