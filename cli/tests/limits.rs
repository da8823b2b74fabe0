//! Large variable documents on the real binary (issue 27): a 1 MB document travels
//! through creation, job activation over REST and gRPC and completion, in a standalone
//! and across a three-broker cluster (command transport and raft replication); a 5 MB
//! one is refused with an error naming the limit and its setting, and creates nothing.

mod support;

use std::time::{Duration, Instant};

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::{
    ActivateJobsRequest, ActivatedJob, CompleteJobRequest, CreateProcessInstanceRequest,
};
use serde_json::{Value, json};
use support::{Api, Brokers, Standalone, deploy};
use tonic::Code;
use tonic::transport::Channel;

/// The default `gateway.max-message-size` and `gateway.max-variable-document-size`.
const FOUR_MB: usize = 4 * 1024 * 1024;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// An order of a little more than `bytes` bytes of compact JSON, in lines of about 114 bytes.
fn order(bytes: usize) -> Value {
    let lines: Vec<Value> = (0..bytes / 110)
        .map(|i| {
            json!({
                "sku": format!("SKU-{i:07}"),
                "name": format!("Article {i} of the large order"),
                "quantity": 1 + i % 9,
                "price": 10.5 + (i % 100) as f64,
                "tags": ["large", "order"],
            })
        })
        .collect();
    json!({"order": {"id": "o-large", "customer": {"id": "c-1"}, "lines": lines}})
}

async fn connect(address: String) -> GatewayClient<Channel> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match GatewayClient::connect(address.clone()).await {
            // Room for a job whose variables are near the 4 MB limit: it comes alone, in
            // a message a little larger than tonic's default limit.
            Ok(client) => {
                return client
                    .max_decoding_message_size(64 << 20)
                    .max_encoding_message_size(64 << 20);
            }
            Err(error) => {
                assert!(Instant::now() < deadline, "cannot connect: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Activates one job of `two-rest-calls` over REST; answers its key and variables.
async fn activate_rest(api: &Api) -> (String, Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = api
            .post(
                "/v2/jobs/activation",
                json!({"type": "restCall", "worker": "limits", "timeout": 60_000,
                    "maxJobsToActivate": 1, "requestTimeout": 2_000}),
            )
            .await
            .expect("activation");
        assert_eq!(status, 200, "{body}");
        if let Some(job) = body["jobs"].as_array().and_then(|jobs| jobs.first()) {
            let key = job["jobKey"].as_str().expect("job key").to_owned();
            return (key, job["variables"].clone());
        }
        assert!(Instant::now() < deadline, "no job to activate");
    }
}

/// Activates one job of `two-rest-calls` over gRPC ActivateJobs.
async fn activate_grpc(client: &mut GatewayClient<Channel>) -> ActivatedJob {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut stream = client
            .activate_jobs(ActivateJobsRequest {
                r#type: "restCall".to_owned(),
                worker: "limits".to_owned(),
                timeout: 60_000,
                max_jobs_to_activate: 1,
                request_timeout: 2_000,
                ..Default::default()
            })
            .await
            .expect("ActivateJobs")
            .into_inner();
        while let Some(message) = stream.message().await.expect("a stream message") {
            if let Some(job) = message.jobs.into_iter().next() {
                return job;
            }
        }
        assert!(Instant::now() < deadline, "no job to activate");
    }
}

/// Runs one instance of `two-rest-calls` with `variables` to its end: created and its
/// first job worked over REST through `rest`, its second over gRPC through `grpc`.
async fn run_to_completion(rest: &Api, grpc: String, variables: &Value, logs: impl Fn() -> String) {
    let started = Instant::now();
    let key = rest.create("two-rest-calls", variables.clone()).await;

    let (job_key, received) = activate_rest(rest).await;
    assert!(
        received == *variables,
        "REST activation changed the variables"
    );
    let (status, body) = rest
        .post(&format!("/v2/jobs/{job_key}/completion"), json!({}))
        .await
        .expect("completion");
    assert_eq!(status, 204, "{body}");

    let mut client = connect(grpc).await;
    let job = activate_grpc(&mut client).await;
    assert_eq!(job.process_instance_key.to_string(), key);
    let received: Value = serde_json::from_str(&job.variables).expect("JSON variables");
    assert!(
        received == *variables,
        "gRPC activation changed the variables"
    );
    client
        .complete_job(CompleteJobRequest {
            job_key: job.key,
            ..Default::default()
        })
        .await
        .expect("CompleteJob");

    rest.wait_completed(&[key], Duration::from_secs(30), logs)
        .await;
    eprintln!("a 1 MB instance ran in {:?}", started.elapsed());
}

/// The number of instances of `two-rest-calls` the history holds, once it holds the one
/// with `witness`'s key: created after the refused requests, so anything they created
/// would be in the history by then.
async fn instances_once_visible(api: &Api, witness: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = api
            .post(
                "/v2/process-instances/search",
                json!({"filter": {"processDefinitionId": "two-rest-calls"}}),
            )
            .await
            .expect("search");
        assert_eq!(status, 200, "{body}");
        let items = body["items"].as_array().cloned().unwrap_or_default();
        if items.iter().any(|i| i["processInstanceKey"] == witness) {
            return body["page"]["totalItems"].as_u64().expect("total");
        }
        assert!(
            Instant::now() < deadline,
            "the witness never showed: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_1mb_variable_document_goes_through_creation_activation_and_completion() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &[]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let variables = order(1024 * 1024);
        let size = variables.to_string().len();
        assert!((1024 * 1024..1100 * 1024).contains(&size), "{size} bytes");
        run_to_completion(&api, rill.grpc(), &variables, || rill.log_text()).await;
    });
}

/// Between brokers the document rides the command transport (a gateway whose broker
/// does not lead the partition) and raft's append requests (three replicas).
#[test]
fn a_1mb_variable_document_crosses_a_three_broker_cluster() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 1, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let leader = brokers
            .wait_leader(1, Duration::from_secs(30))
            .await
            .expect("partition 1 has a leader") as usize;
        let other = (leader + 1) % 3;
        let api = brokers.api(other);
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let variables = order(1024 * 1024);
        run_to_completion(&api, brokers.nodes[other].grpc(), &variables, || {
            brokers.logs()
        })
        .await;
    });
}

#[test]
fn a_5mb_variable_document_is_refused_naming_the_limit_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &[]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let variables = order(5 * 1024 * 1024);

        // REST: the body is over gateway.max-message-size before it is read through.
        let (status, body) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "two-rest-calls", "variables": variables}),
            )
            .await
            .expect("an answer, not a broken connection");
        assert_eq!(status, 413, "{body}");
        assert_eq!(body["title"], "PAYLOAD_TOO_LARGE", "{body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        for fragment in [&FOUR_MB.to_string(), "gateway.max-message-size"] {
            assert!(detail.contains(fragment), "{detail}");
        }

        // gRPC: the service sees the message and names the document's own limit.
        let mut client = connect(rill.grpc()).await;
        let text = variables.to_string();
        let status = client
            .create_process_instance(CreateProcessInstanceRequest {
                bpmn_process_id: "two-rest-calls".to_owned(),
                version: -1,
                variables: text.clone(),
                ..Default::default()
            })
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        for fragment in [
            "'variables'",
            &format!("{} bytes", text.len()),
            &format!("{FOUR_MB} bytes"),
            "gateway.max-variable-document-size",
        ] {
            assert!(status.message().contains(fragment), "{status:?}");
        }

        // A message past what the decoder takes (twice the limit): still INVALID_ARGUMENT,
        // naming the message limit, and the connection keeps serving.
        let status = client
            .create_process_instance(CreateProcessInstanceRequest {
                bpmn_process_id: "two-rest-calls".to_owned(),
                version: -1,
                variables: order(9 * 1024 * 1024).to_string(),
                ..Default::default()
            })
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        for fragment in [&format!("{FOUR_MB} bytes"), "gateway.max-message-size"] {
            assert!(status.message().contains(fragment), "{status:?}");
        }

        let witness = client
            .create_process_instance(CreateProcessInstanceRequest {
                bpmn_process_id: "two-rest-calls".to_owned(),
                version: -1,
                variables: json!({"small": true}).to_string(),
                ..Default::default()
            })
            .await
            .expect("a small instance")
            .into_inner()
            .process_instance_key
            .to_string();
        assert_eq!(instances_once_visible(&api, &witness).await, 1);
        assert!(rill.terminate(Duration::from_secs(20)), "graceful stop");
    });
}
