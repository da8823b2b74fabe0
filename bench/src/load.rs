//! One run of the workload: S starters create instances, W workers activate jobs,
//! call the stub and complete them; a collector counts finished instances and takes
//! the milestones.
//!
//! ```text
//!  starters ──POST /v2/process-instances {t0, …}──► Rill
//!  workers  ◄─POST /v2/jobs/activation (long poll)── Rill
//!           ──GET stub?v=random──► stub
//!           ──POST /v2/jobs/{key}/completion──► Rill
//!           └─ last task acknowledged ─► collector (latency = now − t0)
//! ```
//!
//! When an instance has completed: the engine runs every follow-up step of a command
//! in-line (docs/decisions/engine-semantics.md), so the acknowledged completion of the
//! job of the process's last task means the instance reached its end event in that
//! same committed command. The worker records the time then; `t0` (µs since the first
//! start, sent as a variable) comes back with the job, so no shared map is needed.
//! After the run a sample of instances is read back with `GET
//! /v2/process-instances/{key}` to check that they are `COMPLETED`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use serde::Serialize;
use tokio::sync::{mpsc, watch};

use crate::api::{Api, ApiCounters, Job, StatusError};
use crate::broker::cpu_seconds;
use crate::grpc::GrpcApi;
use crate::process::{Payload, ProcessKind, Starter};

pub struct LoadOptions {
    pub instances: u64,
    pub starters: usize,
    pub workers: usize,
    pub max_jobs: u32,
    /// Total create rate (instances/s over all starters); unlimited when `None`.
    pub rate: Option<f64>,
    pub kind: ProcessKind,
    /// The variables every instance carries besides the benchmark's own.
    pub payload: Payload,
    pub milestones: Vec<u64>,
    pub stub_url: String,
    pub broker_pid: Option<u32>,
    pub long_poll: Duration,
    /// Workers take jobs from job streams instead of long polling (gRPC only).
    pub stream_workers: bool,
    /// Give up when no instance completes for this long.
    pub stall_timeout: Duration,
}

#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Milestone {
    pub instances: u64,
    pub elapsed_s: f64,
    /// Instances completed divided by the time since the first start.
    pub instances_per_s: f64,
    pub jobs: u64,
    /// Jobs (= service tasks) completed per second since the first start.
    pub jobs_per_s: f64,
    /// Payload variables carried into the engine per second (0 without payload).
    pub payload_mb_per_s: f64,
    /// Latency of the instances completed so far: create sent → last job acknowledged.
    pub latency: Latency,
    /// CPU seconds of the broker process since the first start (`None` if unknown).
    pub broker_cpu_s: Option<f64>,
    /// CPU seconds of this load generator (starters, workers, stub) since the first start.
    pub generator_cpu_s: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct RunResult {
    pub milestones: Vec<Milestone>,
    /// 503 RESOURCE_EXHAUSTED answers, each retried after a back-off.
    pub backpressure_retries: u64,
    pub transport_retries: u64,
    /// Job completions that failed (the job is then worked again after its timeout).
    pub job_errors: u64,
    /// Instances read back after the run, and how many of them were COMPLETED.
    pub verified_completed: u64,
    pub verified_sampled: u64,
}

struct Completed {
    latency_us: u64,
    instance_key: String,
}

/// The milestones 1k, 10k, 100k, … below `n`, and `n` itself.
pub fn default_milestones(n: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut m = 1000;
    while m < n {
        out.push(m);
        m *= 10;
    }
    out.push(n);
    out
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

/// Which API the starters and workers use.
#[derive(Clone)]
pub enum Client {
    Rest(Api),
    Grpc(GrpcApi),
}

impl Client {
    async fn create(&self, counters: &ApiCounters, starter: &Starter, t0: u64) -> Result<()> {
        match self {
            Client::Rest(api) => api.create(counters, starter.body(t0)).await,
            Client::Grpc(grpc) => {
                grpc.create(counters, starter.process_id(), starter.variables(t0))
                    .await
            }
        }
    }

    async fn activate(
        &self,
        counters: &ApiCounters,
        job_type: &str,
        worker: &str,
        max_jobs: u32,
        long_poll: Duration,
    ) -> Result<Vec<Job>> {
        match self {
            Client::Rest(api) => {
                api.activate(counters, job_type, worker, max_jobs, long_poll)
                    .await
            }
            Client::Grpc(grpc) => {
                grpc.activate(counters, job_type, worker, max_jobs, long_poll)
                    .await
            }
        }
    }

    async fn complete(&self, counters: &ApiCounters, job_key: &str) -> Result<()> {
        match self {
            Client::Rest(api) => api.complete(counters, job_key).await,
            Client::Grpc(grpc) => grpc.complete(counters, job_key).await,
        }
    }
}

/// What a worker needs to work a job.
struct WorkContext {
    /// For the HTTP stub.
    api: Api,
    client: Client,
    counters: Arc<ApiCounters>,
    jobs_done: Arc<AtomicU64>,
    job_errors: Arc<AtomicU64>,
    completed: mpsc::UnboundedSender<Completed>,
    stub_url: String,
    kind: ProcessKind,
    first_start: Instant,
}

impl WorkContext {
    /// Calls the stub and completes the job; the last task's completion finishes the
    /// instance.
    async fn work(&self, job: Job) {
        if let Err(error) = self.api.call_stub(&self.stub_url).await {
            eprintln!("warning: {error:#}");
        }
        match self.client.complete(&self.counters, &job.job_key).await {
            Ok(()) => {
                self.jobs_done.fetch_add(1, Ordering::Relaxed);
                if job.element_id == self.kind.last_element() {
                    let now = self.first_start.elapsed().as_micros() as u64;
                    let t0 = job.variables.t0.unwrap_or(now);
                    let _ = self.completed.send(Completed {
                        latency_us: now.saturating_sub(t0),
                        instance_key: job.process_instance_key,
                    });
                }
            }
            Err(error) => {
                self.job_errors.fetch_add(1, Ordering::Relaxed);
                eprintln!("warning: {error:#}");
            }
        }
    }
}

/// Long-polls for a batch and works it concurrently, as an asynchronous client's
/// handlers would, then polls again.
async fn poll_worker(
    context: &WorkContext,
    name: &str,
    max_jobs: u32,
    long_poll: Duration,
) -> Result<()> {
    loop {
        let jobs = context
            .client
            .activate(
                &context.counters,
                context.kind.job_type(),
                name,
                max_jobs,
                long_poll,
            )
            .await?;
        futures::future::join_all(jobs.into_iter().map(|job| context.work(job))).await;
    }
}

/// Works the jobs a job stream brings, up to `max_jobs` at a time (the Zeebe clients'
/// `maxJobsActive` for streams); a stream that breaks is opened again.
async fn stream_worker(context: &WorkContext, name: &str, max_jobs: u32) -> Result<()> {
    use futures::StreamExt;
    let Client::Grpc(grpc) = &context.client else {
        return Err(anyhow!("job streams need the gRPC API"));
    };
    loop {
        let stream = grpc
            .stream(&context.counters, context.kind.job_type(), name)
            .await?;
        stream
            .for_each_concurrent(max_jobs as usize, |message| async move {
                match message {
                    Ok(job) => context.work(crate::grpc::job(job)).await,
                    Err(status) => {
                        context
                            .counters
                            .retried_errors
                            .fetch_add(1, Ordering::Relaxed);
                        eprintln!("warning: the job stream broke: {status}");
                    }
                }
            })
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn run(api: &Api, client: &Client, options: &LoadOptions) -> Result<RunResult> {
    let counters = Arc::new(ApiCounters::default());
    let jobs_done = Arc::new(AtomicU64::new(0));
    let job_errors = Arc::new(AtomicU64::new(0));
    let next_index = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = watch::channel(false);
    let (completed_tx, mut completed_rx) = mpsc::unbounded_channel::<Completed>();
    let (fatal_tx, mut fatal_rx) = mpsc::unbounded_channel::<anyhow::Error>();
    let starter = Arc::new(Starter::new(options.kind, options.payload.clone()));
    let payload_bytes = starter.payload_bytes();

    // The first start: the epoch of every `t0`, of the rate schedule and of the rates.
    // Spawning the workers before the first create takes microseconds.
    let first_start = Instant::now();
    let broker_cpu0 = options.broker_pid.and_then(cpu_seconds);
    let self_cpu0 = cpu_seconds(std::process::id());

    // Workers first, so the first jobs find a poll (or a stream) waiting.
    let mut tasks = Vec::new();
    let context = Arc::new(WorkContext {
        api: api.clone(),
        client: client.clone(),
        counters: counters.clone(),
        jobs_done: jobs_done.clone(),
        job_errors: job_errors.clone(),
        completed: completed_tx.clone(),
        stub_url: options.stub_url.clone(),
        kind: options.kind,
        first_start,
    });
    for w in 0..options.workers {
        let context = context.clone();
        let fatal_tx = fatal_tx.clone();
        let mut done = done_rx.clone();
        let max_jobs = options.max_jobs;
        let long_poll = options.long_poll;
        let stream = options.stream_workers;
        tasks.push(tokio::spawn(async move {
            let name = format!("bench-worker-{w}");
            let worked = if stream {
                tokio::select! {
                    _ = done.wait_for(|d| *d) => return,
                    worked = stream_worker(&context, &name, max_jobs) => worked,
                }
            } else {
                tokio::select! {
                    _ = done.wait_for(|d| *d) => return,
                    worked = poll_worker(&context, &name, max_jobs, long_poll) => worked,
                }
            };
            if let Err(error) = worked {
                let _ = fatal_tx.send(error);
            }
        }));
    }
    drop(completed_tx);
    drop(context);

    for _ in 0..options.starters {
        let client = client.clone();
        let counters = counters.clone();
        let next_index = next_index.clone();
        let starter = starter.clone();
        let fatal_tx = fatal_tx.clone();
        let instances = options.instances;
        let rate = options.rate;
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next_index.fetch_add(1, Ordering::Relaxed);
                if i >= instances {
                    return;
                }
                if let Some(rate) = rate {
                    let due = first_start + Duration::from_secs_f64(i as f64 / rate);
                    tokio::time::sleep_until(due.into()).await;
                }
                if let Err(error) = create(&client, &counters, &starter, first_start).await {
                    let _ = fatal_tx.send(error);
                    return;
                }
            }
        }));
    }
    drop(fatal_tx);

    // The collector.
    let mut milestones_left = options.milestones.iter().copied().peekable();
    let mut milestones = Vec::new();
    let mut latencies: Vec<u32> = Vec::with_capacity(options.instances as usize);
    let mut samples = Vec::new();
    let sample_every = (options.instances / 20).max(1);
    let mut progress = tokio::time::interval(Duration::from_secs(5));
    progress.tick().await;
    let mut last_progress = Instant::now();
    let mut count = 0u64;
    let failure: Option<anyhow::Error> = loop {
        tokio::select! {
            event = completed_rx.recv() => {
                let Some(event) = event else {
                    break Some(anyhow!("every worker stopped before the run finished"));
                };
                last_progress = Instant::now();
                count += 1;
                latencies.push(event.latency_us.min(u32::MAX as u64) as u32);
                if count.is_multiple_of(sample_every) {
                    samples.push(event.instance_key);
                }
                if milestones_left.peek() == Some(&count) {
                    milestones_left.next();
                    let elapsed = first_start.elapsed().as_secs_f64();
                    let jobs = jobs_done.load(Ordering::Relaxed);
                    let mut sorted = latencies.clone();
                    sorted.sort_unstable();
                    let instances_per_s = count as f64 / elapsed;
                    milestones.push(Milestone {
                        instances: count,
                        elapsed_s: elapsed,
                        instances_per_s,
                        jobs,
                        jobs_per_s: jobs as f64 / elapsed,
                        payload_mb_per_s: instances_per_s * payload_bytes as f64 / 1e6,
                        latency: Latency {
                            p50_ms: percentile(&sorted, 50.0),
                            p99_ms: percentile(&sorted, 99.0),
                            max_ms: percentile(&sorted, 100.0),
                        },
                        broker_cpu_s: options
                            .broker_pid
                            .and_then(cpu_seconds)
                            .zip(broker_cpu0)
                            .map(|(now, then)| now - then),
                        generator_cpu_s: cpu_seconds(std::process::id())
                            .zip(self_cpu0)
                            .map(|(now, then)| now - then),
                    });
                }
                if count >= options.instances {
                    break None;
                }
            }
            Some(error) = fatal_rx.recv() => break Some(error),
            _ = progress.tick() => {
                let elapsed = first_start.elapsed().as_secs_f64();
                eprintln!(
                    "  {elapsed:6.1} s: {count} instances completed ({:.0}/s), {} jobs, {} backpressure retries",
                    count as f64 / elapsed,
                    jobs_done.load(Ordering::Relaxed),
                    counters.backpressure.load(Ordering::Relaxed),
                );
                if last_progress.elapsed() > options.stall_timeout {
                    break Some(anyhow!(
                        "no instance completed for {:?} ({count} of {} done)",
                        options.stall_timeout,
                        options.instances
                    ));
                }
            }
        }
    };
    let _ = done_tx.send(true);
    for task in &tasks {
        task.abort();
    }
    if let Some(error) = failure {
        return Err(error);
    }

    let mut verified = 0;
    for key in &samples {
        if api
            .instance(key)
            .await
            .is_ok_and(|view| view.state == "COMPLETED")
        {
            verified += 1;
        }
    }
    Ok(RunResult {
        milestones,
        backpressure_retries: counters.backpressure.load(Ordering::Relaxed),
        transport_retries: counters.retried_errors.load(Ordering::Relaxed),
        job_errors: job_errors.load(Ordering::Relaxed),
        verified_completed: verified,
        verified_sampled: samples.len() as u64,
    })
}

/// Until this long after the first start, a create that finds no process (deployment
/// not yet distributed to every partition) is retried.
const DEPLOYMENT_GRACE: Duration = Duration::from_secs(10);

async fn create(
    client: &Client,
    counters: &ApiCounters,
    starter: &Starter,
    first_start: Instant,
) -> Result<()> {
    loop {
        let t0 = first_start.elapsed().as_micros() as u64;
        match client.create(counters, starter, t0).await {
            Ok(_) => return Ok(()),
            Err(error)
                if error
                    .downcast_ref::<StatusError>()
                    .is_some_and(|e| e.status == 404)
                    && first_start.elapsed() < DEPLOYMENT_GRACE =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milestones_are_powers_of_ten_from_1k_and_the_total() {
        assert_eq!(default_milestones(100_000), vec![1000, 10_000, 100_000]);
        assert_eq!(default_milestones(2000), vec![1000, 2000]);
        assert_eq!(default_milestones(500), vec![500]);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let sorted: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        assert_eq!(percentile(&sorted, 50.0), 50.0);
        assert_eq!(percentile(&sorted, 99.0), 99.0);
        assert_eq!(percentile(&sorted, 100.0), 100.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
