//! Zeebe's gRPC API (`gateway_protocol.Gateway`) on the real `rill standalone` binary,
//! spoken with a tonic client generated from the same `gateway.proto`: the RPCs a Zeebe
//! worker and client use, their error statuses, long polling and job streams, health and
//! reflection. Unmodified Zeebe clients (pyzeebe, @camunda8/sdk) are in `standalone.rs`.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::*;
use serde_json::{Value, json};
use support::{Standalone, examples};
use tonic::Code;
use tonic::transport::Channel;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

async fn connect(rill: &Standalone) -> GatewayClient<Channel> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match GatewayClient::connect(rill.grpc()).await {
            Ok(client) => return client,
            Err(error) => {
                assert!(Instant::now() < deadline, "cannot connect: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

fn resource(file: &str) -> Resource {
    Resource {
        name: file.to_owned(),
        content: std::fs::read(examples().join(file)).expect("read model"),
    }
}

async fn deploy(client: &mut GatewayClient<Channel>, files: &[&str]) -> DeployResourceResponse {
    client
        .deploy_resource(DeployResourceRequest {
            resources: files.iter().map(|f| resource(f)).collect(),
            tenant_id: String::new(),
        })
        .await
        .expect("deploy")
        .into_inner()
}

fn create_request(process: &str, variables: Value) -> CreateProcessInstanceRequest {
    CreateProcessInstanceRequest {
        bpmn_process_id: process.to_owned(),
        version: -1,
        variables: variables.to_string(),
        ..Default::default()
    }
}

fn activation(job_type: &str, max: i32, request_timeout_ms: i64) -> ActivateJobsRequest {
    ActivateJobsRequest {
        r#type: job_type.to_owned(),
        worker: "grpc-test".to_owned(),
        timeout: 30_000,
        max_jobs_to_activate: max,
        request_timeout: request_timeout_ms,
        ..Default::default()
    }
}

/// Every job of one ActivateJobs call, over all its stream messages.
async fn activate(
    client: &mut GatewayClient<Channel>,
    request: ActivateJobsRequest,
) -> Result<Vec<ActivatedJob>, tonic::Status> {
    let mut stream = client.activate_jobs(request).await?.into_inner();
    let mut jobs = Vec::new();
    while let Some(response) = stream.message().await? {
        jobs.extend(response.jobs);
    }
    Ok(jobs)
}

/// A worker: activates `job_type` jobs and completes each with `{"done<n>": true}` until
/// the test ends.
fn spawn_worker(mut client: GatewayClient<Channel>, job_type: &'static str) {
    tokio::spawn(async move {
        loop {
            let Ok(jobs) = activate(&mut client, activation(job_type, 10, 2_000)).await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            for job in jobs {
                let variables: Value = serde_json::from_str(&job.variables).expect("JSON");
                let step = variables["steps"].as_i64().unwrap_or(0) + 1;
                client
                    .complete_job(CompleteJobRequest {
                        job_key: job.key,
                        variables: json!({ "steps": step }).to_string(),
                        result: None,
                    })
                    .await
                    .expect("complete");
            }
        }
    });
}

/// Deploy, topology, create-and-await with a worker answering over long polling, the
/// result's variables filtered by `fetchVariables`, health and reflection.
#[test]
fn a_zeebe_client_deploys_creates_with_result_and_works_jobs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(30)).await;
        let mut client = connect(&rill).await;

        let topology = client
            .topology(TopologyRequest {})
            .await
            .expect("topology")
            .into_inner();
        assert_eq!(topology.cluster_size, 1);
        assert_eq!(topology.partitions_count, 2);
        assert_eq!(topology.brokers.len(), 1);
        let roles: Vec<i32> = topology.brokers[0]
            .partitions
            .iter()
            .map(|p| p.role)
            .collect();
        assert_eq!(
            roles,
            vec![partition::PartitionBrokerRole::Leader as i32; 2]
        );

        let deployed = deploy(
            &mut client,
            &["two-rest-calls.bpmn", "order-fulfilment.bpmn"],
        )
        .await;
        assert!(deployed.key > 0);
        let processes: BTreeSet<String> = deployed
            .deployments
            .iter()
            .filter_map(|d| match &d.metadata {
                Some(deployment::Metadata::Process(p)) => Some(p.bpmn_process_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            processes,
            BTreeSet::from(["order-fulfilment".to_owned(), "two-rest-calls".to_owned()])
        );

        spawn_worker(client.clone(), "restCall");
        for _ in 0..4 {
            let result = client
                .create_process_instance_with_result(CreateProcessInstanceWithResultRequest {
                    request: Some(CreateProcessInstanceRequest {
                        tags: vec!["batch:7".to_owned()],
                        ..create_request("two-rest-calls", json!({"n": 7, "steps": 0}))
                    }),
                    request_timeout: 20_000,
                    fetch_variables: vec!["steps".to_owned()],
                })
                .await
                .expect("create with result")
                .into_inner();
            assert_eq!(result.bpmn_process_id, "two-rest-calls");
            assert!(result.process_instance_key > 0);
            assert_eq!(result.tenant_id, "<default>");
            assert_eq!(result.tags, vec!["batch:7".to_owned()]);
            let variables: Value = serde_json::from_str(&result.variables).expect("JSON");
            // Both tasks ran, and only the fetched variable came back.
            assert_eq!(variables, json!({"steps": 2}));
        }

        // grpc.health.v1 reports the service serving.
        let channel = Channel::from_shared(rill.grpc())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "gateway_protocol.Gateway".to_owned(),
            })
            .await
            .expect("health")
            .into_inner();
        assert_eq!(
            status.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );

        // Server reflection lists the service.
        use tonic_reflection::pb::v1::ServerReflectionRequest;
        use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
        let mut reflection = ServerReflectionClient::new(channel);
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut answers = reflection
            .server_reflection_info(futures::stream::iter([request]))
            .await
            .expect("reflection")
            .into_inner();
        let answer = answers.message().await.expect("answer").expect("one");
        let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
            panic!("unexpected reflection answer: {answer:?}");
        };
        let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        assert!(
            names.contains(&"gateway_protocol.Gateway".to_owned()),
            "{names:?}"
        );
        assert!(
            names.contains(&"grpc.health.v1.Health".to_owned()),
            "{names:?}"
        );
    });
    assert!(rill.terminate(Duration::from_secs(20)));
}

/// Long polling: a waiting ActivateJobs gets a job created after it started; a job goes
/// to one caller only; `requestTimeout` -1 answers at once; an empty long poll ends after
/// its requestTimeout with no jobs.
#[test]
fn activate_jobs_long_polls_and_hands_each_job_out_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(30)).await;
        let mut client = connect(&rill).await;
        deploy(&mut client, &["two-rest-calls.bpmn"]).await;

        let started = Instant::now();
        let none = activate(&mut client, activation("restCall", 5, -1))
            .await
            .unwrap();
        assert!(none.is_empty());
        assert!(started.elapsed() < Duration::from_secs(2));

        let started = Instant::now();
        let none = activate(&mut client, activation("restCall", 5, 500))
            .await
            .unwrap();
        assert!(none.is_empty());
        assert!(
            started.elapsed() >= Duration::from_millis(450),
            "{:?}",
            started.elapsed()
        );

        // Two waiting workers, then three instances: each job reaches exactly one.
        let waiting: Vec<_> = (0..2)
            .map(|_| {
                let mut client = client.clone();
                tokio::spawn(async move {
                    activate(&mut client, activation("restCall", 3, 10_000)).await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        let mut instances = BTreeSet::new();
        for _ in 0..3 {
            let created = client
                .create_process_instance(create_request("two-rest-calls", json!({})))
                .await
                .expect("create")
                .into_inner();
            instances.insert(created.process_instance_key);
        }
        let mut keys = Vec::new();
        let mut seen_instances = BTreeSet::new();
        for worker in waiting {
            for job in worker.await.unwrap().expect("activation") {
                assert_eq!(job.r#type, "restCall");
                assert_eq!(job.element_id, "Rest1");
                assert_eq!(job.bpmn_process_id, "two-rest-calls");
                assert!(job.deadline > 0);
                assert_eq!(job.kind, activated_job::JobKind::BpmnElement as i32);
                assert_eq!(
                    serde_json::from_str::<Value>(&job.custom_headers).unwrap(),
                    json!({})
                );
                keys.push(job.key);
                seen_instances.insert(job.process_instance_key);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "woken late: {:?}",
            started.elapsed()
        );
        // Both waiting calls answered; whatever they got, no job twice. The rest are
        // still there for the next call.
        let distinct: BTreeSet<i64> = keys.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            keys.len(),
            "a job was handed out twice: {keys:?}"
        );
        let rest = activate(&mut client, activation("restCall", 10, -1))
            .await
            .unwrap();
        for job in &rest {
            assert!(
                !distinct.contains(&job.key),
                "job {} handed out again",
                job.key
            );
            seen_instances.insert(job.process_instance_key);
        }
        assert_eq!(keys.len() + rest.len(), 3);
        assert_eq!(seen_instances, instances);

        // A long poll its client gave up on keeps no job from the others: the job of an
        // instance created after is soon there for the next call, retries unchanged.
        let abandoned = {
            let mut client = client.clone();
            tokio::spawn(
                async move { activate(&mut client, activation("restCall", 1, 10_000)).await },
            )
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        abandoned.abort();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let created = client
            .create_process_instance(create_request("two-rest-calls", json!({})))
            .await
            .expect("create")
            .into_inner();
        let started = Instant::now();
        let jobs = activate(&mut client, activation("restCall", 10, 5_000))
            .await
            .unwrap();
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        assert_eq!(jobs[0].process_instance_key, created.process_instance_key);
        assert_eq!(jobs[0].retries, 3);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    });
    assert!(rill.terminate(Duration::from_secs(20)));
}

/// A job stream gets jobs as they are created, each once, and the worker completes them.
#[test]
fn a_job_stream_receives_new_jobs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &[]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(30)).await;
        let mut client = connect(&rill).await;
        deploy(&mut client, &["two-rest-calls.bpmn"]).await;
        let mut stream = client
            .stream_activated_jobs(StreamActivatedJobsRequest {
                r#type: "restCall".to_owned(),
                worker: "streamer".to_owned(),
                timeout: 30_000,
                ..Default::default()
            })
            .await
            .expect("stream")
            .into_inner();
        for _ in 0..3 {
            client
                .create_process_instance(create_request("two-rest-calls", json!({})))
                .await
                .expect("create");
        }
        let page = support::metrics(&rill).await;
        let open = "rill_gateway_grpc_open_streams{rpc=\"StreamActivatedJobs\"} 1";
        assert!(page.lines().any(|l| l == open), "{page}");
        // Three instances of two tasks: six jobs, each once.
        let mut keys = BTreeSet::new();
        while keys.len() < 6 {
            let job = tokio::time::timeout(Duration::from_secs(15), stream.message())
                .await
                .expect("a job within 15 s")
                .expect("stream")
                .expect("open");
            assert_eq!(job.worker, "streamer");
            assert!(keys.insert(job.key), "job {} streamed twice", job.key);
            client
                .complete_job(CompleteJobRequest {
                    job_key: job.key,
                    variables: String::new(),
                    result: None,
                })
                .await
                .expect("complete");
        }
    });
    assert!(rill.terminate(Duration::from_secs(20)));
}

/// The status of a call expected to fail, and its message.
fn code<T>(result: Result<tonic::Response<T>, tonic::Status>) -> (Code, String) {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(status) => (status.code(), status.message().to_owned()),
    }
}

/// Errors are gRPC statuses as Zeebe answers them, naming what is wrong; bad requests
/// change nothing. Fail with retries, incidents, errors, messages, variables and cancel.
#[test]
fn rpcs_answer_zeebe_status_codes_and_change_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &[]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(30)).await;
        let mut client = connect(&rill).await;
        deploy(
            &mut client,
            &["payment-retry.bpmn", "order-fulfilment.bpmn"],
        )
        .await;

        let (c, m) = code(
            client
                .create_process_instance(create_request("payment-retry", json!([1])))
                .await,
        );
        assert_eq!(c, Code::InvalidArgument);
        assert!(m.contains("'variables'"), "{m}");
        let (c, _) = code(
            client
                .create_process_instance(create_request("no-such-process", json!({})))
                .await,
        );
        assert_eq!(c, Code::NotFound);
        let (c, m) = code(
            client
                .complete_job(CompleteJobRequest {
                    job_key: 2251799813685999,
                    ..Default::default()
                })
                .await,
        );
        assert_eq!(c, Code::NotFound, "{m}");
        let (c, m) = code(client.activate_jobs(activation(" ", 1, -1)).await);
        assert_eq!(c, Code::InvalidArgument);
        assert!(m.contains("'type'"), "{m}");
        let (c, m) = code(
            client
                .broadcast_signal(BroadcastSignalRequest {
                    signal_name: " ".into(),
                    ..Default::default()
                })
                .await,
        );
        assert_eq!(c, Code::InvalidArgument);
        assert!(m.contains("'signalName'"), "{m}");
        // A signal nobody waits for is still broadcast, and gets a key.
        let broadcast = client
            .broadcast_signal(BroadcastSignalRequest {
                signal_name: "nobody-waits".into(),
                variables: r#"{"x": 1}"#.into(),
                ..Default::default()
            })
            .await
            .expect("broadcast")
            .into_inner();
        assert!(broadcast.key > 0, "{broadcast:?}");
        assert_eq!(broadcast.tenant_id, "<default>");
        let (c, m) = code(
            client
                .create_process_instance(CreateProcessInstanceRequest {
                    tenant_id: "acme".into(),
                    ..create_request("payment-retry", json!({}))
                })
                .await,
        );
        assert_eq!(c, Code::InvalidArgument);
        assert!(m.contains("tenantId"), "{m}");
        let (c, m) = code(
            client
                .create_process_instance(CreateProcessInstanceRequest {
                    tags: vec!["ok".into(), "not ok".into()],
                    ..create_request("payment-retry", json!({}))
                })
                .await,
        );
        assert_eq!(c, Code::InvalidArgument);
        assert!(m.contains("'not ok'"), "{m}");

        // Fail with retries left and a back-off: the job comes back after it.
        let instance = client
            .create_process_instance(CreateProcessInstanceRequest {
                tags: vec!["card".into()],
                ..create_request("payment-retry", json!({"amount": 5}))
            })
            .await
            .expect("create")
            .into_inner();
        assert_eq!(instance.tags, vec!["card".to_owned()]);
        let job = activate(&mut client, activation("take-payment", 1, 5_000))
            .await
            .unwrap()
            .pop()
            .expect("a job");
        assert_eq!(job.process_instance_key, instance.process_instance_key);
        assert_eq!(job.tags, vec!["card".to_owned()]);
        assert_eq!(job.retries, 2);
        client
            .fail_job(FailJobRequest {
                job_key: job.key,
                retries: 1,
                error_message: "card service down".into(),
                retry_back_off: 1_000,
                variables: String::new(),
            })
            .await
            .expect("fail");
        let failed_at = Instant::now();
        let again = activate(&mut client, activation("take-payment", 1, 5_000))
            .await
            .unwrap()
            .pop()
            .expect("the job again");
        assert_eq!(again.key, job.key);
        assert_eq!(again.retries, 1);
        assert!(
            failed_at.elapsed() >= Duration::from_millis(900),
            "{:?}",
            failed_at.elapsed()
        );

        // No retries left: an incident; more retries and resolving it bring the job back.
        client
            .fail_job(FailJobRequest {
                job_key: job.key,
                retries: 0,
                error_message: "card service gone".into(),
                ..Default::default()
            })
            .await
            .expect("fail");
        let (c, _) = code(
            client
                .complete_job(CompleteJobRequest {
                    job_key: job.key,
                    ..Default::default()
                })
                .await,
        );
        assert_eq!(c, Code::FailedPrecondition);
        let api = support::Api::new(rill.rest());
        let (status, incidents) = api
            .post(
                &format!(
                    "/v2/process-instances/{}/incidents/search",
                    instance.process_instance_key
                ),
                json!({}),
            )
            .await
            .unwrap();
        assert_eq!(status, 200, "{incidents}");
        let incident_key: i64 = incidents["items"][0]["incidentKey"]
            .as_str()
            .expect("an incident")
            .parse()
            .unwrap();
        client
            .update_job_retries(UpdateJobRetriesRequest {
                job_key: job.key,
                retries: 1,
                operation_reference: None,
            })
            .await
            .expect("retries");
        client
            .resolve_incident(ResolveIncidentRequest {
                incident_key,
                operation_reference: None,
            })
            .await
            .expect("resolve");
        let job = activate(&mut client, activation("take-payment", 1, 5_000))
            .await
            .unwrap()
            .pop()
            .expect("the job after the incident");
        client
            .update_job_timeout(UpdateJobTimeoutRequest {
                job_key: job.key,
                timeout: 60_000,
                operation_reference: None,
            })
            .await
            .expect("timeout");
        // A business error goes to the boundary event: the notify task follows.
        client
            .throw_error(ThrowErrorRequest {
                job_key: job.key,
                error_code: "CARD_DECLINED".into(),
                error_message: "declined".into(),
                variables: json!({"declined": true}).to_string(),
            })
            .await
            .expect("throw error");
        let notify = activate(&mut client, activation("notify", 1, 5_000))
            .await
            .unwrap()
            .pop()
            .expect("a notify job");
        assert_eq!(notify.process_instance_key, instance.process_instance_key);
        let variables: Value = serde_json::from_str(&notify.variables).unwrap();
        assert_eq!(variables["declined"], true);

        // Set variables on the instance, then cancel it.
        let set = client
            .set_variables(SetVariablesRequest {
                element_instance_key: instance.process_instance_key,
                variables: json!({"note": "checked"}).to_string(),
                local: false,
                operation_reference: None,
            })
            .await
            .expect("set variables")
            .into_inner();
        assert!(set.key > 0);
        client
            .cancel_process_instance(CancelProcessInstanceRequest {
                process_instance_key: instance.process_instance_key,
                operation_reference: None,
            })
            .await
            .expect("cancel");
        let (c, _) = code(
            client
                .cancel_process_instance(CancelProcessInstanceRequest {
                    process_instance_key: instance.process_instance_key,
                    operation_reference: None,
                })
                .await,
        );
        assert_eq!(c, Code::NotFound);

        // A published message, a duplicate message id, and create-with-result that runs
        // out of time.
        let published = client
            .publish_message(PublishMessageRequest {
                name: "shipment-confirmed".into(),
                correlation_key: "order-1".into(),
                time_to_live: 60_000,
                message_id: "m-1".into(),
                variables: json!({"carrier": "post"}).to_string(),
                tenant_id: String::new(),
            })
            .await
            .expect("publish")
            .into_inner();
        assert!(published.key > 0);
        let (c, _) = code(
            client
                .publish_message(PublishMessageRequest {
                    name: "shipment-confirmed".into(),
                    correlation_key: "order-1".into(),
                    time_to_live: 60_000,
                    message_id: "m-1".into(),
                    ..Default::default()
                })
                .await,
        );
        assert_eq!(c, Code::AlreadyExists);
        let started = Instant::now();
        let (c, _) = code(
            client
                .create_process_instance_with_result(CreateProcessInstanceWithResultRequest {
                    request: Some(create_request("payment-retry", json!({}))),
                    request_timeout: 500,
                    fetch_variables: Vec::new(),
                })
                .await,
        );
        assert_eq!(c, Code::DeadlineExceeded);
        assert!(started.elapsed() < Duration::from_secs(5));

        // Calls are counted by RPC and status code.
        let page = support::metrics(&rill).await;
        let count = |rpc: &str, code: &str| {
            page.lines()
                .find(|l| {
                    l.starts_with("rill_gateway_grpc_requests_total{")
                        && l.contains(&format!("rpc=\"{rpc}\""))
                        && l.contains(&format!("code=\"{code}\""))
                })
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|v| v.parse::<f64>().ok())
        };
        assert_eq!(count("CompleteJob", "NOT_FOUND"), Some(1.0), "{page}");
        assert_eq!(
            count("CompleteJob", "FAILED_PRECONDITION"),
            Some(1.0),
            "{page}"
        );
        assert_eq!(
            count("BroadcastSignal", "INVALID_ARGUMENT"),
            Some(1.0),
            "{page}"
        );
        assert_eq!(
            count("ActivateJobs", "INVALID_ARGUMENT"),
            Some(1.0),
            "{page}"
        );
        assert!(count("ActivateJobs", "OK") >= Some(4.0), "{page}");
        assert!(page.contains("rill_gateway_grpc_request_latency_seconds_bucket"));
    });
    assert!(rill.terminate(Duration::from_secs(20)));
}

/// Failures a client retries: no leader yet, back-pressure, a timeout.
fn transient(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::ResourceExhausted
    )
}

/// Three brokers, two partitions replicated three times, a streaming worker on one
/// broker's embedded gateway, and the leader of partition 1 killed halfway through: every
/// instance finishes (no job is lost), and no job reaches the worker again after its
/// completion was acknowledged.
#[test]
fn a_streaming_worker_survives_a_leader_kill_in_a_cluster() {
    use std::sync::{Arc, Mutex};

    use support::{Api, Brokers};

    let dir = tempfile::tempdir().expect("tempdir");
    let mut brokers = Brokers::start(dir.path(), 3, 2, 3, &[]);
    runtime().block_on(async {
        brokers.wait_ready(Duration::from_secs(60)).await;
        let leader = brokers
            .wait_leader(1, Duration::from_secs(30))
            .await
            .expect("partition 1 has a leader") as usize;
        let via = (0..3).find(|&i| i != leader).unwrap();
        let mut client = connect(&brokers.nodes[via]).await;
        deploy(&mut client, &["two-rest-calls.bpmn"]).await;

        let acknowledged: Arc<Mutex<BTreeSet<i64>>> = Arc::default();
        let worked_again: Arc<Mutex<Vec<i64>>> = Arc::default();
        let worker = {
            let (mut client, acknowledged, worked_again) =
                (client.clone(), acknowledged.clone(), worked_again.clone());
            tokio::spawn(async move {
                loop {
                    let request = StreamActivatedJobsRequest {
                        r#type: "restCall".to_owned(),
                        worker: "failover".to_owned(),
                        timeout: 5_000,
                        ..Default::default()
                    };
                    let Ok(stream) = client.stream_activated_jobs(request).await else {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    };
                    let mut stream = stream.into_inner();
                    while let Ok(Some(job)) = stream.message().await {
                        if acknowledged.lock().unwrap().contains(&job.key) {
                            worked_again.lock().unwrap().push(job.key);
                        }
                        let deadline = Instant::now() + Duration::from_secs(10);
                        loop {
                            let completion = CompleteJobRequest {
                                job_key: job.key,
                                variables: String::new(),
                                result: None,
                            };
                            match client.complete_job(completion).await {
                                Ok(_) => {
                                    acknowledged.lock().unwrap().insert(job.key);
                                    break;
                                }
                                Err(status) if transient(&status) && Instant::now() < deadline => {
                                    tokio::time::sleep(Duration::from_millis(100)).await
                                }
                                // Not acknowledged: the job may come back, legitimately.
                                Err(_) => break,
                            }
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
        };

        let mut instances = Vec::new();
        for i in 0..20 {
            if i == 10 {
                brokers.nodes[leader].kill9();
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                match client
                    .create_process_instance(create_request("two-rest-calls", json!({})))
                    .await
                {
                    Ok(created) => {
                        instances.push(created.into_inner().process_instance_key.to_string());
                        break;
                    }
                    Err(status) if transient(&status) && Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(100)).await
                    }
                    Err(status) => panic!("create failed: {status:?}\n{}", brokers.logs()),
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Api::new(brokers.nodes[via].rest())
            .wait_completed(&instances, Duration::from_secs(90), || brokers.logs())
            .await;
        worker.abort();
        let again = worked_again.lock().unwrap().clone();
        assert!(
            again.is_empty(),
            "jobs streamed again after their completion was acknowledged: {again:?}"
        );
    });
    for node in &mut brokers.nodes {
        if node.is_running() {
            node.terminate(Duration::from_secs(20));
        }
    }
}

/// `rill gateway`, a gateway process of its own in front of a broker, serves the gRPC API
/// too: topology, deploy, and create-and-await with a worker.
#[test]
fn a_standalone_gateway_serves_grpc() {
    use support::{Brokers, RillProcess};

    let dir = tempfile::tempdir().expect("tempdir");
    let mut brokers = Brokers::start(dir.path(), 1, 2, 1, &["gateway.enabled=false"]);
    let command = brokers.options[0]
        .iter()
        .find_map(|o| o.strip_prefix("cluster.command-port="))
        .expect("the broker's command port")
        .to_owned();
    let contact = format!("gateway.contact-points=127.0.0.1:{command}");
    let mut gateway = RillProcess::start_role("gateway", &dir.path().join("gateway"), &[&contact]);
    runtime().block_on(async {
        brokers.wait_ready(Duration::from_secs(60)).await;
        gateway.wait_ready(Duration::from_secs(60)).await;
        let mut client = connect(&gateway).await;
        let topology = client
            .topology(TopologyRequest {})
            .await
            .expect("topology")
            .into_inner();
        assert_eq!(topology.partitions_count, 2);
        deploy(&mut client, &["two-rest-calls.bpmn"]).await;
        spawn_worker(client.clone(), "restCall");
        let result = client
            .create_process_instance_with_result(CreateProcessInstanceWithResultRequest {
                request: Some(create_request("two-rest-calls", json!({"steps": 0}))),
                request_timeout: 20_000,
                fetch_variables: Vec::new(),
            })
            .await
            .expect("create with result")
            .into_inner();
        let variables: Value = serde_json::from_str(&result.variables).unwrap();
        assert_eq!(variables["steps"], 2);
    });
    assert!(gateway.terminate(Duration::from_secs(20)));
    for node in &mut brokers.nodes {
        node.terminate(Duration::from_secs(20));
    }
}

/// EvaluateDecision: a DMN deployed over gRPC lists its decisions and graph; evaluating
/// by id and by key answers Zeebe's message with every decision evaluated on the way
/// (matched rules, inputs, outputs); a failed evaluation names the failed decision; bad
/// requests are INVALID_ARGUMENT and an unknown decision NOT_FOUND.
#[test]
fn evaluate_decision_answers_every_evaluated_decision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(30)).await;
        let mut client = connect(&rill).await;
        let deployed = deploy(&mut client, &["dish.dmn"]).await;
        let mut decisions = Vec::new();
        let mut graphs = Vec::new();
        for entry in deployed.deployments {
            match entry.metadata {
                Some(deployment::Metadata::Decision(d)) => decisions.push(d),
                Some(deployment::Metadata::DecisionRequirements(r)) => graphs.push(r),
                other => panic!("unexpected deployment entry {other:?}"),
            }
        }
        let ids: Vec<&str> = decisions
            .iter()
            .map(|d| d.dmn_decision_id.as_str())
            .collect();
        assert_eq!(ids, ["season", "dish", "menu"]);
        assert_eq!(graphs.len(), 1);
        assert_eq!(graphs[0].dmn_decision_requirements_id, "DishDecisions");
        assert_eq!(graphs[0].resource_name, "dish.dmn");
        assert_eq!(decisions[0].dmn_decision_name, "Season");
        assert_eq!(decisions[0].version, 1);
        assert_eq!(
            decisions[0].decision_requirements_key,
            graphs[0].decision_requirements_key
        );
        let season_key = decisions[0].decision_key;
        assert!(season_key > 0);

        let evaluate =
            |decision_id: &str, decision_key: i64, variables: Value| EvaluateDecisionRequest {
                decision_key,
                decision_id: decision_id.to_owned(),
                variables: variables.to_string(),
                tenant_id: String::new(),
            };
        let menu = client
            .evaluate_decision(evaluate("menu", 0, json!({"month": 1, "guestCount": 12})))
            .await
            .expect("evaluate by id")
            .into_inner();
        assert_eq!(menu.decision_id, "menu");
        assert_eq!(menu.decision_name, "Menu");
        assert_eq!(menu.decision_version, 1);
        assert_eq!(menu.decision_key, decisions[2].decision_key);
        assert_eq!(menu.decision_requirements_id, "DishDecisions");
        assert_eq!(menu.decision_output, "\"Winter menu: Stew\"");
        assert_eq!(menu.failed_decision_id, "");
        assert_eq!(menu.failure_message, "");
        assert_eq!(menu.tenant_id, "<default>");
        assert!(menu.decision_evaluation_key > 0);
        assert_eq!(menu.decision_instance_key, menu.decision_evaluation_key);
        let inner: Vec<&str> = menu
            .evaluated_decisions
            .iter()
            .map(|d| d.decision_id.as_str())
            .collect();
        assert_eq!(inner, ["season", "dish", "menu"]);
        let season = &menu.evaluated_decisions[0];
        assert_eq!(season.decision_key, season_key);
        assert_eq!(season.decision_type, "DECISION_TABLE");
        assert_eq!(season.decision_output, "\"Winter\"");
        assert_eq!(season.evaluated_inputs[0].input_id, "Input_Month");
        assert_eq!(season.evaluated_inputs[0].input_name, "Month");
        assert_eq!(season.evaluated_inputs[0].input_value, "1");
        assert_eq!(season.matched_rules.len(), 1);
        assert_eq!(season.matched_rules[0].rule_id, "Season_Rule_4");
        assert_eq!(season.matched_rules[0].rule_index, 4);
        let output = &season.matched_rules[0].evaluated_outputs[0];
        assert_eq!(output.output_id, "Output_Season");
        assert_eq!(output.output_name, "season");
        assert_eq!(output.output_value, "\"Winter\"");
        let instance_key: i64 = season
            .decision_evaluation_instance_key
            .parse()
            .expect("a key");
        assert_ne!(instance_key, menu.decision_evaluation_key);
        assert_eq!(
            menu.evaluated_decisions[2].decision_type,
            "LITERAL_EXPRESSION"
        );

        // By key, on whichever partition: a key wins over an id.
        for _ in 0..2 {
            let by_key = client
                .evaluate_decision(evaluate("menu", season_key, json!({"month": 7})))
                .await
                .expect("evaluate by key")
                .into_inner();
            assert_eq!(by_key.decision_id, "season");
            assert_eq!(by_key.decision_output, "\"Summer\"");
        }

        // A failed evaluation is an answer naming the failed decision and why.
        let failed = client
            .evaluate_decision(evaluate("season", 0, json!({"month": "May"})))
            .await
            .expect("a failed evaluation still answers")
            .into_inner();
        assert_eq!(failed.failed_decision_id, "season");
        assert!(
            failed.failure_message.contains("Season_Rule_1"),
            "{failed:?}"
        );
        assert_eq!(failed.decision_output, "null");

        let (status, message) = code(
            client
                .evaluate_decision(evaluate("nope", 0, json!({})))
                .await,
        );
        assert_eq!(status, Code::NotFound, "{message}");
        assert!(message.contains("'nope'"), "{message}");
        let (status, message) = code(client.evaluate_decision(evaluate("", 0, json!({}))).await);
        assert_eq!(status, Code::InvalidArgument, "{message}");
        assert!(message.contains("decisionId"), "{message}");
        let (status, message) = code(client.evaluate_decision(evaluate("", -4, json!({}))).await);
        assert_eq!(status, Code::InvalidArgument, "{message}");
        assert!(message.contains("'decisionKey'"), "{message}");
        let (status, message) = code(
            client
                .evaluate_decision(evaluate("menu", 0, json!([1, 2])))
                .await,
        );
        assert_eq!(status, Code::InvalidArgument, "{message}");
        assert!(message.contains("'variables'"), "{message}");
        let mut other_tenant = evaluate("menu", 0, json!({}));
        other_tenant.tenant_id = "acme".to_owned();
        let (status, message) = code(client.evaluate_decision(other_tenant).await);
        assert_eq!(status, Code::InvalidArgument, "{message}");
    });
    assert!(rill.terminate(Duration::from_secs(20)));
}

/// The sum of a metric's series.
async fn metric_sum(rill: &Standalone, name: &str) -> f64 {
    rill.metric(name).await.values().sum()
}

async fn next_job(stream: &mut tonic::Streaming<ActivatedJob>) -> ActivatedJob {
    tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("a job within 10 s")
        .expect("stream")
        .expect("open")
}

fn stream_request(job_type: &str, worker: &str) -> StreamActivatedJobsRequest {
    StreamActivatedJobsRequest {
        r#type: job_type.to_owned(),
        worker: worker.to_owned(),
        // Ten minutes: a job seen again soon was given back, not timed out.
        timeout: 600_000,
        ..Default::default()
    }
}

/// Job push: the partition leaders push jobs to a job stream (a job that existed before
/// the stream opened and one created after), with no ActivateJobs call; two client
/// streams of the same settings share one registration per partition; and the jobs
/// pushed to a stream whose client went away are given back, activatable again at once
/// with their retries.
#[test]
fn brokers_push_jobs_to_streams_and_a_closed_streams_jobs_are_given_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(30)).await;
        let mut client = connect(&rill).await;
        deploy(&mut client, &["two-rest-calls.bpmn", "payment-retry.bpmn"]).await;

        let before = client
            .create_process_instance(create_request("two-rest-calls", json!({})))
            .await
            .expect("create")
            .into_inner();
        let mut stream = client
            .stream_activated_jobs(stream_request("restCall", "pusher"))
            .await
            .expect("stream")
            .into_inner();
        let first = next_job(&mut stream).await;
        assert_eq!(first.process_instance_key, before.process_instance_key);
        assert_eq!(first.worker, "pusher");
        let after = client
            .create_process_instance(create_request("two-rest-calls", json!({})))
            .await
            .expect("create")
            .into_inner();
        let second = next_job(&mut stream).await;
        assert_eq!(second.process_instance_key, after.process_instance_key);

        // Pushed by the leaders: no activation command came from a long poll here.
        assert_eq!(
            metric_sum(&rill, "rill_gateway_job_activation_commands_total").await,
            0.0
        );
        assert_eq!(
            metric_sum(&rill, "rill_gateway_jobs_pushed_total").await,
            2.0
        );
        assert_eq!(metric_sum(&rill, "rill_job_push_jobs_total").await, 2.0);

        // A second client stream of the same settings joins the first one's
        // registration: still one aggregate per partition, with its four requests.
        let twin = client
            .stream_activated_jobs(stream_request("restCall", "pusher"))
            .await
            .expect("stream")
            .into_inner();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let open = rill.metric("rill_job_push_streams").await;
        assert_eq!(open.len(), 2, "{open:?}");
        assert_eq!(open.values().sum::<f64>(), 8.0, "{open:?}");
        drop(twin);
        drop(stream);

        // A stream that goes away: the job pushed to it comes back at once.
        let leaver = client
            .stream_activated_jobs(stream_request("take-payment", "leaver"))
            .await
            .expect("stream")
            .into_inner();
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(leaver);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let pushed = metric_sum(&rill, "rill_job_push_jobs_total").await;
        let payment = client
            .create_process_instance(create_request("payment-retry", json!({})))
            .await
            .expect("create")
            .into_inner();
        let deadline = Instant::now() + Duration::from_secs(10);
        while metric_sum(&rill, "rill_job_push_jobs_total").await <= pushed {
            assert!(Instant::now() < deadline, "the job was never pushed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let again = activate(&mut client, activation("take-payment", 5, 5_000))
            .await
            .expect("activate");
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!(again[0].process_instance_key, payment.process_instance_key);
        assert_eq!(again[0].retries, 2, "given back with its retries");
    });
    assert!(rill.terminate(Duration::from_secs(20)));
}

const AGENT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="grpc-agent" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="brain">
      <bpmn:extensionElements><zeebe:taskDefinition type="grpc-think" /></bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:serviceTask id="lookup">
        <bpmn:extensionElements><zeebe:taskDefinition type="grpc-lookup" /></bpmn:extensionElements>
      </bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="brain" />
    <bpmn:sequenceFlow id="f2" sourceRef="brain" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

/// The one job of `job_type`.
async fn one_job(client: &mut GatewayClient<Channel>, job_type: &str) -> ActivatedJob {
    let jobs = activate(client, activation(job_type, 5, -1))
        .await
        .expect("activate");
    assert_eq!(jobs.len(), 1, "one '{job_type}' job: {jobs:?}");
    jobs.into_iter().next().expect("a job")
}

fn ad_hoc_result(elements: &[(&str, &str)], fulfilled: Option<bool>) -> JobResult {
    JobResult {
        r#type: Some("adHocSubProcess".into()),
        activate_elements: elements
            .iter()
            .map(|(id, variables)| JobResultActivateElement {
                element_id: (*id).to_owned(),
                variables: (*variables).to_owned(),
            })
            .collect(),
        is_completion_condition_fulfilled: fulfilled,
        ..Default::default()
    }
}

#[test]
fn complete_job_runs_an_ad_hoc_sub_process_job_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), &[]);
    runtime().block_on(async {
        rill.wait_ready(Duration::from_secs(30)).await;
        let mut client = connect(&rill).await;
        client
            .deploy_resource(DeployResourceRequest {
                resources: vec![Resource {
                    name: "agent.bpmn".into(),
                    content: AGENT.as_bytes().to_vec(),
                }],
                tenant_id: String::new(),
            })
            .await
            .expect("deploy");
        let instance = client
            .create_process_instance(create_request("grpc-agent", json!({})))
            .await
            .expect("create")
            .into_inner();
        let job = one_job(&mut client, "grpc-think").await;
        assert_eq!(job.kind, activated_job::JobKind::AdHocSubProcess as i32);
        assert_eq!(job.element_id, "brain");

        let complete = |result: JobResult| CompleteJobRequest {
            job_key: job.key,
            variables: String::new(),
            result: Some(result),
        };
        let (c, m) = code(
            client
                .complete_job(complete(ad_hoc_result(&[("lookup", "[1]")], None)))
                .await,
        );
        assert_eq!(c, Code::InvalidArgument);
        assert!(m.contains("result.activateElements[0].variables"), "{m}");
        let (c, m) = code(
            client
                .complete_job(complete(ad_hoc_result(&[("lunch", "")], None)))
                .await,
        );
        assert_eq!(c, Code::NotFound);
        assert!(m.contains("[lunch] do not exist"), "{m}");

        client
            .complete_job(complete(ad_hoc_result(
                &[("lookup", r#"{"query":"rivers"}"#)],
                Some(false),
            )))
            .await
            .expect("activate lookup");
        let lookup = one_job(&mut client, "grpc-lookup").await;
        let variables: Value = serde_json::from_str(&lookup.variables).expect("JSON");
        assert_eq!(variables["query"], "rivers");
        client
            .complete_job(CompleteJobRequest {
                job_key: lookup.key,
                ..Default::default()
            })
            .await
            .expect("complete lookup");

        // The flow completed: a new job, which ends the ad-hoc sub-process.
        let next = one_job(&mut client, "grpc-think").await;
        assert_ne!(next.key, job.key);
        client
            .complete_job(CompleteJobRequest {
                job_key: next.key,
                variables: String::new(),
                result: Some(ad_hoc_result(&[], Some(true))),
            })
            .await
            .expect("fulfil");
        support::Api::new(rill.rest())
            .wait_completed(
                &[instance.process_instance_key.to_string()],
                Duration::from_secs(10),
                String::new,
            )
            .await;
    });
}
