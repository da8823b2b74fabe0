//! The REST and gRPC layers' metrics, registered into the node's Prometheus registry (served on
//! the monitoring port by the binary). Names follow Zeebe's gateway where one exists.

use std::time::Duration;

use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

use crate::activation::DropReason;

pub const REST_REQUESTS_TOTAL: &str = "rill_gateway_rest_requests_total";
const REST_REQUESTS_HELP: &str = "REST requests answered, by endpoint, method and status code";

pub const REST_REQUEST_LATENCY: &str = "rill_gateway_rest_request_latency_seconds";
const REST_REQUEST_LATENCY_HELP: &str = "Time to answer a REST request, by endpoint and method";

pub const GRPC_REQUESTS_TOTAL: &str = "rill_gateway_grpc_requests_total";
const GRPC_REQUESTS_HELP: &str = "gRPC calls answered, by RPC and status code";

pub const GRPC_REQUEST_LATENCY: &str = "rill_gateway_grpc_request_latency_seconds";
const GRPC_REQUEST_LATENCY_HELP: &str =
    "Time to answer a gRPC call (for a stream: until it ends), by RPC";

pub const GRPC_OPEN_STREAMS: &str = "rill_gateway_grpc_open_streams";
const GRPC_OPEN_STREAMS_HELP: &str =
    "Server-streaming gRPC calls open now (ActivateJobs long polls, job streams), by RPC";

pub const LONG_POLLING_WAITING: &str = "rill_gateway_long_polling_waiting";
const LONG_POLLING_WAITING_HELP: &str = "Job activation requests currently waiting for jobs";

pub const JOBS_ACTIVATED_TOTAL: &str = "rill_gateway_jobs_activated_total";
const JOBS_ACTIVATED_HELP: &str = "Jobs handed to workers through the REST and gRPC APIs";

pub const JOBS_PUSHED_TOTAL: &str = "rill_gateway_jobs_pushed_total";
const JOBS_PUSHED_HELP: &str =
    "Jobs brokers pushed to this gateway's job streams and handed to a client stream";

pub const ACTIVATION_COMMANDS_TOTAL: &str = "rill_gateway_job_activation_commands_total";
const ACTIVATION_COMMANDS_HELP: &str =
    "Job activation commands answered by a partition, by whether they found jobs";

pub const ACTIVATED_JOBS_DROPPED_TOTAL: &str = "rill_gateway_activated_jobs_dropped_total";
const ACTIVATED_JOBS_DROPPED_HELP: &str = "Activated jobs not handed to a worker, by reason: deadline (passed or too close) or term \
     (answered from a raft term the partition has left)";

/// Latency buckets from 1 ms to 60 s (long polls and awaited instances are slow by design).
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Handles to the gateway's metrics. Cheap to clone.
#[derive(Clone)]
pub struct GatewayMetrics {
    requests: IntCounterVec,
    latency: HistogramVec,
    grpc_requests: IntCounterVec,
    grpc_latency: HistogramVec,
    grpc_open_streams: IntGaugeVec,
    long_polling_waiting: IntGauge,
    jobs_activated: IntCounter,
    jobs_pushed: IntCounter,
    activation_commands: IntCounterVec,
    activated_jobs_dropped: IntCounterVec,
}

impl GatewayMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let metrics = GatewayMetrics::unregistered()?;
        registry.register(Box::new(metrics.requests.clone()))?;
        registry.register(Box::new(metrics.latency.clone()))?;
        registry.register(Box::new(metrics.grpc_requests.clone()))?;
        registry.register(Box::new(metrics.grpc_latency.clone()))?;
        registry.register(Box::new(metrics.grpc_open_streams.clone()))?;
        registry.register(Box::new(metrics.long_polling_waiting.clone()))?;
        registry.register(Box::new(metrics.jobs_activated.clone()))?;
        registry.register(Box::new(metrics.jobs_pushed.clone()))?;
        registry.register(Box::new(metrics.activation_commands.clone()))?;
        registry.register(Box::new(metrics.activated_jobs_dropped.clone()))?;
        Ok(metrics)
    }

    /// Metrics that are counted but not exported anywhere.
    pub fn unregistered() -> Result<Self, prometheus::Error> {
        let metrics = GatewayMetrics {
            requests: IntCounterVec::new(
                Opts::new(REST_REQUESTS_TOTAL, REST_REQUESTS_HELP),
                &["endpoint", "method", "status"],
            )?,
            latency: HistogramVec::new(
                HistogramOpts::new(REST_REQUEST_LATENCY, REST_REQUEST_LATENCY_HELP)
                    .buckets(LATENCY_BUCKETS.to_vec()),
                &["endpoint", "method"],
            )?,
            grpc_requests: IntCounterVec::new(
                Opts::new(GRPC_REQUESTS_TOTAL, GRPC_REQUESTS_HELP),
                &["rpc", "code"],
            )?,
            grpc_latency: HistogramVec::new(
                HistogramOpts::new(GRPC_REQUEST_LATENCY, GRPC_REQUEST_LATENCY_HELP)
                    .buckets(LATENCY_BUCKETS.to_vec()),
                &["rpc"],
            )?,
            grpc_open_streams: IntGaugeVec::new(
                Opts::new(GRPC_OPEN_STREAMS, GRPC_OPEN_STREAMS_HELP),
                &["rpc"],
            )?,
            long_polling_waiting: IntGauge::new(LONG_POLLING_WAITING, LONG_POLLING_WAITING_HELP)?,
            jobs_activated: IntCounter::new(JOBS_ACTIVATED_TOTAL, JOBS_ACTIVATED_HELP)?,
            jobs_pushed: IntCounter::new(JOBS_PUSHED_TOTAL, JOBS_PUSHED_HELP)?,
            activation_commands: IntCounterVec::new(
                Opts::new(ACTIVATION_COMMANDS_TOTAL, ACTIVATION_COMMANDS_HELP),
                &["outcome"],
            )?,
            activated_jobs_dropped: IntCounterVec::new(
                Opts::new(ACTIVATED_JOBS_DROPPED_TOTAL, ACTIVATED_JOBS_DROPPED_HELP),
                &["reason"],
            )?,
        };
        // Exported at 0 from the start, so that a rate over them has a series to follow.
        for reason in [DropReason::Deadline, DropReason::Term] {
            metrics
                .activated_jobs_dropped
                .with_label_values(&[reason.label()]);
        }
        Ok(metrics)
    }

    /// Counts one answered request. `endpoint` is the route template (e.g.
    /// `/v2/jobs/{jobKey}/completion`), never the raw path, to keep label values few.
    pub fn observe_request(&self, endpoint: &str, method: &str, status: u16, elapsed: Duration) {
        let status = status.to_string();
        self.requests
            .with_label_values(&[endpoint, method, status.as_str()])
            .inc();
        self.latency
            .with_label_values(&[endpoint, method])
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one finished gRPC call with its status code name (`OK`, `NOT_FOUND`...).
    pub fn observe_grpc(&self, rpc: &str, code: &str, elapsed: Duration) {
        self.grpc_requests.with_label_values(&[rpc, code]).inc();
        self.grpc_latency
            .with_label_values(&[rpc])
            .observe(elapsed.as_secs_f64());
    }

    /// Marks a server stream of `rpc` open until the guard is dropped.
    pub fn grpc_stream_open(&self, rpc: &str) -> WaitingGuard {
        let gauge = self.grpc_open_streams.with_label_values(&[rpc]);
        gauge.inc();
        WaitingGuard(gauge)
    }

    pub fn jobs_activated(&self, count: usize) {
        self.jobs_activated.inc_by(count as u64);
    }

    /// Counts pushed jobs handed to a client stream (they count as activated too).
    pub fn jobs_pushed(&self, count: usize) {
        self.jobs_pushed.inc_by(count as u64);
        self.jobs_activated.inc_by(count as u64);
    }

    /// Counts one activation command a partition answered, with the jobs it found.
    pub fn activation_command(&self, jobs: usize) {
        let outcome = if jobs == 0 { "empty" } else { "jobs" };
        self.activation_commands.with_label_values(&[outcome]).inc();
    }

    /// Counts activated jobs that were not handed to a worker.
    pub fn activated_jobs_dropped(&self, reason: DropReason, count: usize) {
        self.activated_jobs_dropped
            .with_label_values(&[reason.label()])
            .inc_by(count as u64);
    }

    /// Marks a long poll as waiting until the guard is dropped.
    pub fn long_poll_waiting(&self) -> WaitingGuard {
        self.long_polling_waiting.inc();
        WaitingGuard(self.long_polling_waiting.clone())
    }
}

pub struct WaitingGuard(IntGauge);

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use prometheus::{Encoder, TextEncoder};

    use super::*;

    #[test]
    fn requests_are_counted_by_endpoint_and_status() {
        let registry = Registry::new();
        let metrics = GatewayMetrics::register(&registry).unwrap();
        metrics.observe_request("/v2/topology", "GET", 200, Duration::from_millis(3));
        metrics.observe_request("/v2/topology", "GET", 200, Duration::from_millis(4));
        metrics.observe_request("/v2/jobs/{jobKey}/completion", "POST", 404, Duration::ZERO);
        {
            let _waiting = metrics.long_poll_waiting();
            assert_eq!(metrics.long_polling_waiting.get(), 1);
        }
        assert_eq!(metrics.long_polling_waiting.get(), 0);

        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains(
            r#"rill_gateway_rest_requests_total{endpoint="/v2/topology",method="GET",status="200"} 2"#
        ), "{text}");
        assert!(text.contains(r#"status="404""#), "{text}");
        assert!(text.contains("rill_gateway_rest_request_latency_seconds_bucket"));
    }
}
