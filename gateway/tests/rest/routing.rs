//! Routing over several partitions and the mapping of broker failures, with the
//! scripted backend (the real engine runs one partition without deployment
//! distribution, and never fails on purpose).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rill_config::GatewayConfig;
use rill_gateway::PartitionRole;
use rill_protocol::value::{JobBatchRecord, MessageRecord, ProcessInstanceCreationRecord};
use rill_protocol::{
    Command, CommandResponse, Intent, JsonValue, Key, PartitionId, RecordValue, Rejection,
    RejectionType, message_partition,
};
use serde_json::json;

use crate::support::scripted_backend::ScriptedBackend;
use crate::support::{TestGateway, test_config};

fn created(partition: PartitionId) -> CommandResponse {
    let key = Key::new(partition, 10);
    CommandResponse::Accepted {
        key,
        intent: Intent::Created,
        value: RecordValue::ProcessInstanceCreation(ProcessInstanceCreationRecord {
            bpmn_process_id: "p".into(),
            version: 1,
            process_definition_key: Key::new(PartitionId(1), 1).get(),
            process_instance_key: key.get(),
            variables: JsonValue::empty_object(),
            fetch_variables: Vec::new(),
            tenant_id: "<default>".into(),
            await_request_id: None,
            tags: Vec::new(),
        }),
    }
}

fn empty_batch() -> CommandResponse {
    CommandResponse::Accepted {
        key: Key::NONE,
        intent: Intent::Activated,
        value: RecordValue::JobBatch(JobBatchRecord {
            job_type: "t".into(),
            worker: String::new(),
            timeout: 1000,
            max_jobs_to_activate: 1,
            job_keys: Vec::new(),
            jobs: Vec::new(),
            truncated: false,
            tenant_ids: Vec::new(),
        }),
    }
}

/// Accepts everything with a plausible record.
fn accept(
    partition: PartitionId,
    command: &Command,
) -> Result<CommandResponse, rill_client::Error> {
    Ok(match command.inner() {
        Command::CreateProcessInstance(_) => created(partition),
        Command::ActivateJobs(_) => empty_batch(),
        Command::PublishMessage(m) => CommandResponse::Accepted {
            key: Key::new(partition, 3),
            intent: Intent::Published,
            value: RecordValue::Message(MessageRecord {
                name: m.name.clone(),
                correlation_key: m.correlation_key.clone(),
                message_id: m.message_id.clone(),
                time_to_live: m.time_to_live,
                deadline: -1,
                variables: m.variables.clone(),
                tenant_id: "<default>".into(),
            }),
        },
        _ => CommandResponse::Accepted {
            key: Key::new(partition, 2),
            intent: Intent::Completed,
            value: empty_batch_value(),
        },
    })
}

fn empty_batch_value() -> RecordValue {
    match empty_batch() {
        CommandResponse::Accepted { value, .. } => value,
        CommandResponse::Rejected(_) => unreachable!(),
    }
}

/// A backend whose partitions all stay without a leader ("electing a leader").
fn leaderless(partitions: u16) -> Arc<ScriptedBackend> {
    ScriptedBackend::new(partitions, |partition, _| {
        Err(rill_client::Error::Unavailable {
            partition,
            reason: "electing a leader".into(),
        })
    })
}

/// A gateway configuration that gives up on a request after 400 ms.
fn short_timeout() -> GatewayConfig {
    let mut config = test_config();
    config.request_timeout = Duration::from_millis(400);
    config
}

#[tokio::test]
async fn requests_go_to_the_right_partition() {
    let backend = ScriptedBackend::new(3, accept);
    let gateway = TestGateway::start(backend.clone()).await;

    // Creates go round-robin, by id and by key alike.
    for _ in 0..3 {
        let reply = gateway
            .post("/v2/process-instances", json!({"processDefinitionId": "p"}))
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
    }
    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionKey": Key::new(PartitionId(1), 1).get().to_string()}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let mut used = backend.partitions_used();
    used.sort();
    assert_eq!(
        used,
        [1, 1, 2, 3],
        "three creates cover all partitions, plus one more"
    );
    backend.submitted.lock().unwrap().clear();

    // Keyed operations go to the key's partition.
    for partition in [2_u16, 3, 1] {
        let job = Key::new(PartitionId(partition), 77);
        let reply = gateway
            .post(&format!("/v2/jobs/{job}/completion"), json!({}))
            .await;
        assert_eq!(reply.status, 204, "{:?}", reply.body);
        let instance = Key::new(PartitionId(partition), 78);
        let reply = gateway
            .post(
                &format!("/v2/process-instances/{instance}/cancellation"),
                json!({}),
            )
            .await;
        assert_eq!(reply.status, 204);
        let incident = Key::new(PartitionId(partition), 79);
        let reply = gateway
            .post(&format!("/v2/incidents/{incident}/resolution"), json!({}))
            .await;
        assert_eq!(reply.status, 204);
        let element = Key::new(PartitionId(partition), 80);
        let reply = gateway
            .put(
                &format!("/v2/element-instances/{element}/variables"),
                json!({"variables": {"a": 1}}),
            )
            .await;
        assert_eq!(reply.status, 204);
    }
    assert_eq!(
        backend.partitions_used(),
        [2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1]
    );
    backend.submitted.lock().unwrap().clear();

    // Messages go by the correlation key's hash; deployments to partition 1.
    for correlation_key in ["order-1", "order-2", "order-3", "äöü"] {
        let reply = gateway
            .post(
                "/v2/messages/publication",
                json!({"name": "m", "correlationKey": correlation_key}),
            )
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        let expected = message_partition(correlation_key, 3).get();
        assert_eq!(backend.partitions_used().last(), Some(&expected));
    }
    backend.submitted.lock().unwrap().clear();
    let reply = gateway.deploy(&[("p.bpmn", b"<xml/>")]).await;
    // The scripted backend answers a deployment with the wrong record: that is a 500
    // (a broker bug), and it still went to partition 1.
    assert_eq!(reply.status, 500);
    assert_eq!(backend.partitions_used(), [1]);
    match &backend.commands()[0] {
        Command::Deploy { resources } => {
            assert_eq!(resources[0].name, "p.bpmn");
            assert_eq!(resources[0].content.0, b"<xml/>");
        }
        other => panic!("expected a deployment, got {other:?}"),
    }

    // A key from a partition the cluster does not have never reaches a broker.
    backend.submitted.lock().unwrap().clear();
    let job = Key::new(PartitionId(9), 1);
    let reply = gateway
        .post(&format!("/v2/jobs/{job}/completion"), json!({}))
        .await;
    assert_eq!(reply.status, 404);
    assert!(backend.partitions_used().is_empty());
    gateway.stop().await;
}

/// Workers polling for jobs between creates do not bias where the instances go: with
/// one poll after every create, creates still take the partitions in turn.
#[tokio::test]
async fn job_polls_between_creates_leave_the_instances_spread() {
    let backend = ScriptedBackend::new(2, accept);
    let gateway = TestGateway::start(backend.clone()).await;
    for _ in 0..6 {
        let reply = gateway
            .post("/v2/process-instances", json!({"processDefinitionId": "p"}))
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        let reply = gateway
            .post(
                "/v2/jobs/activation",
                json!({"type": "t", "timeout": 1000, "maxJobsToActivate": 1, "requestTimeout": -1}),
            )
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
    }
    let creates: Vec<u16> = backend
        .submitted
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, c)| matches!(c.inner(), Command::CreateProcessInstance(_)))
        .map(|(p, _)| p.get())
        .collect();
    assert_eq!(creates, [1, 2, 1, 2, 1, 2]);
    gateway.stop().await;
}

/// Every request that takes Camunda's `operationReference` sends its command with it,
/// to the partition of its key; without one the command goes as it is, and 0 or less
/// never reaches a broker.
#[tokio::test]
async fn operation_references_travel_with_the_command() {
    let backend = ScriptedBackend::new(3, accept);
    let gateway = TestGateway::start(backend.clone()).await;
    let on = |n: u64| Key::new(PartitionId(2), n);
    let definition = Key::new(PartitionId(1), 1).get().to_string();
    let requests: Vec<(String, serde_json::Value, u16)> = vec![
        (
            "/v2/process-instances".into(),
            json!({"processDefinitionId": "p", "operationReference": 11}),
            200,
        ),
        (
            format!("/v2/process-instances/{}/cancellation", on(1)),
            json!({"operationReference": 12}),
            204,
        ),
        (
            format!("/v2/process-instances/{}/modification", on(2)),
            json!({"operationReference": 13, "activateInstructions": [{"elementId": "a"}]}),
            204,
        ),
        (
            format!("/v2/process-instances/{}/migration", on(3)),
            json!({"operationReference": 14, "targetProcessDefinitionKey": definition,
                   "mappingInstructions": []}),
            204,
        ),
        (
            format!("/v2/incidents/{}/resolution", on(4)),
            json!({"operationReference": "15"}),
            204,
        ),
        (
            format!("/v2/jobs/{}", on(5)),
            json!({"operationReference": 16, "changeset": {"retries": 2}}),
            204,
        ),
        (
            format!("/v2/resources/{}/deletion", on(6)),
            json!({"operationReference": 17}),
            200,
        ),
    ];
    for (path, body, status) in &requests {
        let reply = if path.starts_with("/v2/jobs/") {
            gateway.patch(path, body.clone()).await
        } else {
            gateway.post(path, body.clone()).await
        };
        assert_eq!(reply.status, *status, "{path}: {:?}", reply.body);
    }
    let reply = gateway
        .put(
            &format!("/v2/element-instances/{}/variables", on(7)),
            json!({"variables": {"a": 1}, "operationReference": 18}),
        )
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);

    let submitted = backend.submitted.lock().unwrap().clone();
    let references: Vec<Option<u64>> = submitted
        .iter()
        .map(|(_, c)| c.operation_reference())
        .collect();
    assert_eq!(references, (11..=18).map(Some).collect::<Vec<_>>());
    // Keyed commands still go to their key's partition, found through the wrapper.
    for (partition, command) in &submitted[1..] {
        assert_eq!(*partition, PartitionId(2), "{command:?}");
        assert_eq!(
            command.target_key().map(|k| k.partition()),
            Some(PartitionId(2))
        );
    }
    assert!(matches!(
        submitted[0].1.inner(),
        Command::CreateProcessInstance(_)
    ));
    assert!(matches!(
        submitted[1].1.inner(),
        Command::CancelProcessInstance { .. }
    ));
    backend.submitted.lock().unwrap().clear();

    // None given: the command as it is.
    let reply = gateway
        .post(
            &format!("/v2/process-instances/{}/cancellation", on(1)),
            json!({}),
        )
        .await;
    assert_eq!(reply.status, 204);
    assert!(matches!(
        backend.commands()[0],
        Command::CancelProcessInstance { .. }
    ));
    backend.submitted.lock().unwrap().clear();

    // 0 or less: a 400 naming the field, nothing sent.
    for reference in [0, -3] {
        let reply = gateway
            .post(
                &format!("/v2/incidents/{}/resolution", on(4)),
                json!({"operationReference": reference}),
            )
            .await;
        reply.assert_problem(
            400,
            "INVALID_ARGUMENT",
            &format!("/v2/incidents/{}/resolution", on(4)),
            &["operationReference", "must be > 0"],
        );
    }
    assert!(backend.commands().is_empty());
}

/// A rejection of a referenced command names the command's own intent.
#[tokio::test]
async fn a_referenced_commands_rejection_names_its_intent() {
    let backend = ScriptedBackend::new(1, |_, _| {
        Ok(CommandResponse::Rejected(Rejection::new(
            RejectionType::NotFound,
            "no such instance",
        )))
    });
    let gateway = TestGateway::start(backend.clone()).await;
    let instance = Key::new(PartitionId(1), 5);
    let path = format!("/v2/process-instances/{instance}/cancellation");
    let reply = gateway.post(&path, json!({"operationReference": 3})).await;
    reply.assert_problem(
        404,
        "NOT_FOUND",
        &path,
        &[
            "Command 'CANCEL' rejected with code 'NOT_FOUND'",
            "no such instance",
        ],
    );
    assert_eq!(backend.commands()[0].operation_reference(), Some(3));
}

#[tokio::test]
async fn request_fields_reach_the_command() {
    let backend = ScriptedBackend::new(1, accept);
    let gateway = TestGateway::start(backend.clone()).await;
    let job = Key::new(PartitionId(1), 5);

    gateway
        .post(
            &format!("/v2/jobs/{job}/failure"),
            // int64 fields as strings of digits, as Camunda's npm SDK sends them.
            json!({"retries": 2, "errorMessage": "boom", "retryBackOff": "1500",
                   "variables": {"attempt": 1}}),
        )
        .await;
    gateway
        .post(
            &format!("/v2/jobs/{job}/error"),
            json!({"errorCode": "E1", "errorMessage": "bad", "variables": null}),
        )
        .await;
    gateway
        .patch(
            &format!("/v2/jobs/{job}"),
            json!({"changeset": {"retries": 4, "timeout": 6000}}),
        )
        .await;
    gateway
        .post(
            "/v2/messages/publication",
            json!({"name": "m", "correlationKey": "c", "timeToLive": 60000, "messageId": "id-1"}),
        )
        .await;
    gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "p", "processDefinitionVersion": 3,
                   "variables": {"x": 1}, "awaitCompletion": true,
                   "fetchVariables": ["x"], "requestTimeout": 1000}),
        )
        .await;
    gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "t", "worker": "w1", "timeout": "2500", "maxJobsToActivate": 7,
                   "fetchVariable": ["a", "b"], "requestTimeout": "-1"}),
        )
        .await;

    let commands = backend.commands();
    let Command::FailJob(fail) = &commands[0] else {
        panic!("{:?}", commands[0])
    };
    assert_eq!((fail.retries, fail.retry_backoff), (2, 1500));
    assert_eq!(fail.error_message, "boom");
    assert_eq!(fail.variables.to_value(), json!({"attempt": 1}));
    let Command::ThrowError(error) = &commands[1] else {
        panic!("{:?}", commands[1])
    };
    assert_eq!(
        (error.error_code.as_str(), error.error_message.as_str()),
        ("E1", "bad")
    );
    let Command::UpdateJob(update) = &commands[2] else {
        panic!("{:?}", commands[2])
    };
    assert_eq!((update.retries, update.timeout), (Some(4), Some(6000)));
    let Command::PublishMessage(message) = &commands[3] else {
        panic!("{:?}", commands[3])
    };
    assert_eq!(
        (message.time_to_live, message.message_id.as_str()),
        (60000, "id-1")
    );
    let Command::CreateProcessInstance(create) = &commands[4] else {
        panic!("{:?}", commands[4])
    };
    assert!(create.await_result);
    assert_eq!(create.fetch_variables, ["x"]);
    assert_eq!(
        create.process,
        rill_protocol::ProcessSelector::ById {
            bpmn_process_id: "p".into(),
            version: Some(3)
        }
    );
    let Command::ActivateJobs(activate) = &commands[5] else {
        panic!("{:?}", commands[5])
    };
    assert_eq!(
        (
            activate.worker.as_str(),
            activate.timeout,
            activate.max_jobs
        ),
        ("w1", 2500, 7)
    );
    assert_eq!(activate.fetch_variables, ["a", "b"]);
    gateway.stop().await;
}

#[tokio::test]
async fn rejections_map_to_camunda_status_codes() {
    let cases = [
        (RejectionType::InvalidArgument, 400, "INVALID_ARGUMENT"),
        (RejectionType::NotFound, 404, "NOT_FOUND"),
        (RejectionType::InvalidState, 409, "INVALID_STATE"),
        (RejectionType::AlreadyExists, 409, "ALREADY_EXISTS"),
        (RejectionType::ProcessingError, 500, "PROCESSING_ERROR"),
    ];
    for (rejection_type, status, title) in cases {
        let backend = ScriptedBackend::new(1, move |_, _| {
            Ok(CommandResponse::Rejected(Rejection::new(
                rejection_type,
                "because the test said so",
            )))
        });
        let gateway = TestGateway::start(backend).await;
        let job = Key::new(PartitionId(1), 5);
        let path = format!("/v2/jobs/{job}/completion");
        let reply = gateway.post(&path, json!({})).await;
        reply.assert_problem(
            status,
            title,
            &path,
            &[&format!(
                "Command 'COMPLETE' rejected with code '{title}': because the test said so"
            )],
        );
        gateway.stop().await;
    }
}

#[tokio::test]
async fn backpressure_is_503_resource_exhausted_with_retry_after() {
    let backend = ScriptedBackend::new(2, |partition, _| {
        Err(rill_client::Error::ResourceExhausted {
            partition,
            limit: 8,
            reason: None,
        })
    });
    let gateway = TestGateway::start(backend.clone()).await;
    let path = "/v2/process-instances";
    let reply = gateway
        .post(path, json!({"processDefinitionId": "p"}))
        .await;
    reply.assert_problem(503, "RESOURCE_EXHAUSTED", path, &["overloaded"]);
    assert_eq!(reply.headers["retry-after"], "1");
    assert_eq!(
        backend.partitions_used().len(),
        1,
        "backpressure is not retried"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn a_missing_leader_is_retried_within_the_timeout() {
    let failures = Arc::new(AtomicU32::new(0));
    let counter = failures.clone();
    let backend = ScriptedBackend::new(1, move |partition, command| {
        if counter.fetch_add(1, Ordering::SeqCst) < 3 {
            Err(rill_client::Error::NotLeader { partition })
        } else {
            accept(partition, command)
        }
    });
    let gateway = TestGateway::start(backend.clone()).await;
    let job = Key::new(PartitionId(1), 5);
    let reply = gateway
        .post(&format!("/v2/jobs/{job}/completion"), json!({}))
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);
    assert_eq!(
        backend.partitions_used().len(),
        4,
        "three retries, then success"
    );
    gateway.stop().await;

    // A partition that stays unavailable: 503 once the request timeout is spent.
    let backend = leaderless(1);
    let gateway = TestGateway::start_with(backend.clone(), short_timeout()).await;
    let started = Instant::now();
    let path = format!("/v2/jobs/{job}/completion");
    let reply = gateway.post(&path, json!({})).await;
    reply.assert_problem(503, "PARTITION_UNAVAILABLE", &path, &["electing a leader"]);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(backend.partitions_used().len() >= 3, "it kept retrying");
    gateway.stop().await;
}

#[tokio::test]
async fn creates_pass_over_a_partition_without_a_leader() {
    // Partition 2 lost its leader: one says it no longer leads, then none is known.
    let asked = Arc::new(AtomicU32::new(0));
    let counter = asked.clone();
    let backend = ScriptedBackend::new(3, move |partition, command| {
        if partition != PartitionId(2) {
            return accept(partition, command);
        }
        if counter.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(rill_client::Error::NotLeader { partition })
        } else {
            Err(rill_client::Error::Unavailable {
                partition,
                reason: "no leader known yet".into(),
            })
        }
    });
    let mut config = test_config();
    // Long enough that waiting on partition 2 would show as retries of it.
    config.request_timeout = Duration::from_secs(30);
    let gateway = TestGateway::start_with(backend.clone(), config).await;
    for _ in 0..6 {
        let reply = gateway
            .post("/v2/process-instances", json!({"processDefinitionId": "p"}))
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        let key: Key = reply.body["processInstanceKey"]
            .as_str()
            .and_then(Key::parse)
            .expect("a process instance key");
        assert_ne!(key.partition(), PartitionId(2), "{:?}", reply.body);
    }
    let used = backend.partitions_used();
    // Each create asked partition 2 at most once, and went on to partition 3 at once.
    for (i, partition) in used.iter().enumerate() {
        if *partition == 2 {
            assert_eq!(used.get(i + 1), Some(&3), "{used:?}");
        }
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2, "{used:?}");
    assert_eq!(
        used.len(),
        8,
        "six creates, two of them after asking partition 2"
    );
    gateway.stop().await;

    // No partition has a leader: every one is tried, again and again, until the timeout.
    let backend = leaderless(3);
    let gateway = TestGateway::start_with(backend.clone(), short_timeout()).await;
    let path = "/v2/process-instances";
    let reply = gateway
        .post(path, json!({"processDefinitionId": "p"}))
        .await;
    reply.assert_problem(503, "PARTITION_UNAVAILABLE", path, &["electing a leader"]);
    let mut used = backend.partitions_used();
    assert!(used.len() >= 6, "it went round more than once: {used:?}");
    used.sort();
    used.dedup();
    assert_eq!(used, [1, 2, 3]);
    gateway.stop().await;
}

#[tokio::test]
async fn a_silent_broker_is_a_504_and_shutdown_a_503() {
    let backend = ScriptedBackend::new(1, |_, _| Err(rill_client::Error::Timeout));
    let mut config = test_config();
    config.request_timeout = Duration::from_millis(200);
    let gateway = TestGateway::start_with(backend, config).await;
    let path = "/v2/messages/publication";
    let reply = gateway.post(path, json!({"name": "m"})).await;
    reply.assert_problem(504, "DEADLINE_EXCEEDED", path, &["timed out"]);
    gateway.stop().await;

    let backend = ScriptedBackend::new(1, |_, _| Err(rill_client::Error::Shutdown));
    let gateway = TestGateway::start(backend).await;
    let reply = gateway.post(path, json!({"name": "m"})).await;
    reply.assert_problem(503, "UNAVAILABLE", path, &["shutting down"]);
    gateway.stop().await;
}

#[tokio::test]
async fn status_reflects_partition_leadership() {
    let backend = ScriptedBackend::new(2, accept);
    let gateway = TestGateway::start(backend.clone()).await;
    assert_eq!(gateway.get("/v2/status").await.status, 204);
    *backend.role.lock().unwrap() = PartitionRole::Follower;
    let reply = gateway.get("/v2/status").await;
    reply.assert_problem(503, "UNAVAILABLE", "/v2/status", &["leader"]);
    let topology = gateway.get("/v2/topology").await;
    assert_eq!(
        topology.body["brokers"][0]["partitions"][1]["role"],
        "follower"
    );
    assert_eq!(topology.body["partitionsCount"], 2);
    gateway.stop().await;
}

#[tokio::test]
async fn requests_are_counted_in_metrics() {
    let backend = ScriptedBackend::new(1, accept);
    let gateway = TestGateway::start(backend).await;
    for _ in 0..2 {
        gateway.get("/v2/topology").await;
    }
    gateway.post("/v2/jobs/abc/completion", json!({})).await;
    gateway.get("/v2/unknown").await;
    let text = gateway.metrics_text();
    assert!(
        text.contains(
            r#"rill_gateway_rest_requests_total{endpoint="/v2/topology",method="GET",status="200"} 2"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"rill_gateway_rest_requests_total{endpoint="/v2/jobs/{jobKey}/completion",method="POST",status="400"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"endpoint="unmatched",method="GET",status="404"} 1"#),
        "{text}"
    );
    assert!(text.contains("rill_gateway_rest_request_latency_seconds_count"));
    gateway.stop().await;
}
