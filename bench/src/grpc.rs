//! The workload over Zeebe's gRPC API (`--api grpc-poll`, `--api grpc-stream`), with the
//! gateway's own generated client: CreateProcessInstance, ActivateJobs (long polling)
//! or StreamActivatedJobs, CompleteJob. Back-pressure (`RESOURCE_EXHAUSTED`) is retried
//! after a back-off, as in the REST mode.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::{
    ActivateJobsRequest, ActivatedJob, CompleteJobRequest, CreateProcessInstanceRequest,
    StreamActivatedJobsRequest,
};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::api::{ApiCounters, Job, JobVariables, StatusError};

const BACKOFF_START: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Largest gRPC message the client sends or takes.
const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The job timeout the workers ask for, as in the REST mode.
const JOB_TIMEOUT_MS: i64 = 60_000;

#[derive(Clone)]
pub struct GrpcApi {
    client: GatewayClient<Channel>,
}

impl GrpcApi {
    pub async fn connect(url: &str) -> Result<GrpcApi> {
        let channel = Endpoint::from_shared(url.to_owned())?
            .tcp_nodelay(true)
            .connect()
            .await
            .with_context(|| format!("connecting to the gRPC API at {url}"))?;
        // Jobs come in messages of up to the gateway's gateway.max-message-size (4 MB by
        // default, tonic's default too), but one job larger than that comes alone.
        let client = GatewayClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        Ok(GrpcApi { client })
    }

    /// Calls `call` until it is not refused for back-pressure.
    async fn retried<T, F, Fut>(&self, counters: &ApiCounters, what: &str, call: F) -> Result<T>
    where
        F: Fn(GatewayClient<Channel>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, Status>>,
    {
        let mut backoff = BACKOFF_START;
        loop {
            match call(self.client.clone()).await {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) if status.code() == Code::ResourceExhausted => {
                    counters.backpressure.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(backoff.mul_f64(0.5 + fastrand::f64())).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(status) if status.code() == Code::Unavailable => {
                    counters.retried_errors.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(status) => {
                    // The REST mode's error, so a missing process reads the same (404).
                    let code = match status.code() {
                        Code::NotFound => 404,
                        Code::InvalidArgument => 400,
                        _ => 500,
                    };
                    return Err(StatusError {
                        what: what.to_owned(),
                        status: code,
                        body: format!("{:?}: {}", status.code(), status.message()),
                    }
                    .into());
                }
            }
        }
    }

    pub async fn create(
        &self,
        counters: &ApiCounters,
        process_id: &str,
        variables: String,
    ) -> Result<()> {
        let request = CreateProcessInstanceRequest {
            bpmn_process_id: process_id.to_owned(),
            version: -1,
            variables,
            ..Default::default()
        };
        self.retried(counters, "creating an instance", |mut client| {
            let request = request.clone();
            async move { client.create_process_instance(request).await }
        })
        .await?;
        Ok(())
    }

    /// One ActivateJobs call (long polling up to `long_poll`), every message's jobs.
    pub async fn activate(
        &self,
        counters: &ApiCounters,
        job_type: &str,
        worker: &str,
        max_jobs: u32,
        long_poll: Duration,
    ) -> Result<Vec<Job>> {
        let request = ActivateJobsRequest {
            r#type: job_type.to_owned(),
            worker: worker.to_owned(),
            timeout: JOB_TIMEOUT_MS,
            max_jobs_to_activate: max_jobs as i32,
            request_timeout: long_poll.as_millis() as i64,
            ..Default::default()
        };
        let mut stream = self
            .retried(counters, "activating jobs", |mut client| {
                let request = request.clone();
                async move { client.activate_jobs(request).await }
            })
            .await?;
        let mut jobs = Vec::new();
        loop {
            match stream.message().await {
                Ok(Some(response)) => jobs.extend(response.jobs.into_iter().map(job)),
                Ok(None) => return Ok(jobs),
                // Refused inside the stream (the poll ran into back-pressure): poll again
                // after a pause, with what came so far.
                Err(status) if status.code() == Code::ResourceExhausted => {
                    counters.backpressure.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(BACKOFF_START.mul_f64(0.5 + fastrand::f64())).await;
                    return Ok(jobs);
                }
                Err(status) => return Err(status).context("activating jobs"),
            }
        }
    }

    /// Opens a job stream for `job_type`.
    pub async fn stream(
        &self,
        counters: &ApiCounters,
        job_type: &str,
        worker: &str,
    ) -> Result<tonic::Streaming<ActivatedJob>> {
        let request = StreamActivatedJobsRequest {
            r#type: job_type.to_owned(),
            worker: worker.to_owned(),
            timeout: JOB_TIMEOUT_MS,
            ..Default::default()
        };
        self.retried(counters, "opening a job stream", |mut client| {
            let request = request.clone();
            async move { client.stream_activated_jobs(request).await }
        })
        .await
    }

    pub async fn complete(&self, counters: &ApiCounters, job_key: &str) -> Result<()> {
        let job_key: i64 = job_key.parse().context("a job key")?;
        self.retried(counters, "completing a job", |mut client| async move {
            client
                .complete_job(CompleteJobRequest {
                    job_key,
                    variables: String::new(),
                    result: None,
                })
                .await
        })
        .await?;
        Ok(())
    }
}

/// A job in the REST mode's shape.
pub fn job(activated: ActivatedJob) -> Job {
    let variables: JobVariables = serde_json::from_str(&activated.variables).unwrap_or_default();
    Job {
        job_key: activated.key.to_string(),
        element_id: activated.element_id,
        process_instance_key: activated.process_instance_key.to_string(),
        variables,
    }
}
