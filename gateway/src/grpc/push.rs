//! Job streams fed by the brokers' job push (StreamActivatedJobs).
//!
//! Client streams with the same job type and activation settings (worker, timeout,
//! fetched variables) share one aggregated stream, and the aggregate keeps a few
//! requests open with each partition's leader (`GatewayBackend::stream_jobs`), which
//! answers each with the jobs it activated for the stream. With several open, the leader
//! activates for the next while one is committed and handed over, so pushed jobs do not
//! queue behind one request's round trip. Each job goes to one client stream, the
//! next in turn with room for it. Jobs no client stream takes (they all went away, or
//! stayed full) are given back at once (yielded: Zeebe's JOB YIELD), and so are
//! jobs still queued for a client stream when it closes.
//!
//! A request that fails (no leader, an election, a broker that went away) is asked
//! again, of whichever broker leads the partition then: after a leader change the
//! aggregate is registered with the new leader.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use rill_protocol::value::JobRecord;
use rill_protocol::{ActivateJobs, CommandResponse, PartitionId, RecordValue};
use tokio::sync::{mpsc, watch};
use tonic::Status;

use super::convert::activated_job;
use super::proto::ActivatedJob;
use crate::activation::{Activation, usable_jobs};
use crate::ops::{self, Backoff, SharedState};

/// Requests an aggregate keeps open with each partition's leader (the leader runs up
/// to four activations of a type at once).
const REQUESTS_PER_PARTITION: usize = 4;
/// How long a leader holds a stream's request when no job comes.
const STREAM_WAIT: Duration = Duration::from_secs(5);
/// Pauses before asking again after a failed request, doubling up to the second.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(50);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(1);
/// How long a job waits for room in a full client stream before it is given back.
const FULL_STREAM_WAIT: Duration = Duration::from_secs(1);
/// How often an open stream looks whether partitions were added to the cluster.
const ADDED_PARTITIONS_CHECK: Duration = Duration::from_secs(1);

type JobSender = mpsc::Sender<Result<ActivatedJob, Status>>;

/// What makes client streams share an aggregate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct StreamKey {
    job_type: String,
    worker: String,
    timeout: i64,
    fetch_variables: Vec<String>,
}

/// The aggregated job streams of a gateway.
pub struct JobStreams {
    state: SharedState,
    aggregates: Arc<Mutex<HashMap<StreamKey, Arc<Aggregate>>>>,
    next_client: AtomicU64,
}

struct Aggregate {
    clients: Mutex<Vec<(u64, JobSender)>>,
    next: AtomicUsize,
    /// True once the last client stream left: the partition requests end.
    stopped: watch::Sender<bool>,
}

impl Aggregate {
    fn clients(&self) -> MutexGuard<'_, Vec<(u64, JobSender)>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands `job` to one client stream; gives it back when none takes it.
    async fn deliver(&self, job: ActivatedJob) -> Result<(), ActivatedJob> {
        let clients: Vec<JobSender> = self.clients().iter().map(|(_, s)| s.clone()).collect();
        if clients.is_empty() {
            return Err(job);
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut job = job;
        for offset in 0..clients.len() {
            let client = &clients[(start + offset) % clients.len()];
            match client.try_send(Ok(job)) {
                Ok(()) => return Ok(()),
                Err(unsent) => match unsent.into_inner() {
                    Ok(unsent) => job = unsent,
                    Err(_) => return Ok(()),
                },
            }
        }
        // All full: wait for room in the one whose turn it was.
        let client = &clients[start % clients.len()];
        match tokio::time::timeout(FULL_STREAM_WAIT, client.reserve()).await {
            Ok(Ok(permit)) => {
                permit.send(Ok(job));
                Ok(())
            }
            _ => Err(job),
        }
    }
}

impl JobStreams {
    pub fn new(state: SharedState) -> JobStreams {
        JobStreams {
            state,
            aggregates: Arc::default(),
            next_client: AtomicU64::new(0),
        }
    }

    /// Opens a client stream of `stream`'s settings: the stream of pushed jobs, which
    /// stays registered until the client goes away (or the gateway stops).
    pub fn open(&self, stream: ActivateJobs, capacity: usize) -> PushedJobs {
        let (sender, receiver) = mpsc::channel(capacity);
        let mut fetch_variables = stream.fetch_variables.clone();
        fetch_variables.sort();
        fetch_variables.dedup();
        let key = StreamKey {
            job_type: stream.job_type.clone(),
            worker: stream.worker.clone(),
            timeout: stream.timeout,
            fetch_variables,
        };
        let id = self.next_client.fetch_add(1, Ordering::Relaxed);
        {
            let mut aggregates = lock(&self.aggregates);
            let aggregate = aggregates.entry(key.clone()).or_insert_with(|| {
                let aggregate = Arc::new(Aggregate {
                    clients: Mutex::new(Vec::new()),
                    next: AtomicUsize::new(0),
                    stopped: watch::channel(false).0,
                });
                let fed = self.state.dispatch.partition_count();
                for p in 1..=fed {
                    feed_partition(&self.state, &aggregate, PartitionId(p), &stream);
                }
                tokio::spawn(feed_added_partitions(
                    self.state.clone(),
                    aggregate.clone(),
                    stream.clone(),
                    fed,
                ));
                aggregate
            });
            aggregate.clients().push((id, sender.clone()));
        }
        // Leaves the aggregate when the client goes away or the gateway stops.
        let aggregates = self.aggregates.clone();
        let mut shutdown = self.state.shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = sender.closed() => {}
                _ = shutdown.wait_for(|stopping| *stopping) => {}
            }
            leave(&aggregates, &key, id);
        });
        PushedJobs {
            receiver,
            state: self.state.clone(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn leave(aggregates: &Mutex<HashMap<StreamKey, Arc<Aggregate>>>, key: &StreamKey, id: u64) {
    let mut aggregates = lock(aggregates);
    let Some(aggregate) = aggregates.get(key) else {
        return;
    };
    let mut clients = aggregate.clients();
    clients.retain(|(client, _)| *client != id);
    if clients.is_empty() {
        drop(clients);
        aggregate.stopped.send_replace(true);
        aggregates.remove(key);
    }
}

/// Registers `aggregate` with the partitions added to the cluster after partition
/// `fed` (a cluster change added them), while it has client streams.
async fn feed_added_partitions(
    state: SharedState,
    aggregate: Arc<Aggregate>,
    stream: ActivateJobs,
    mut fed: u16,
) {
    let mut stopped = aggregate.stopped.subscribe();
    let mut shutdown = state.shutdown.clone();
    loop {
        tokio::select! {
            _ = stopped.wait_for(|stopped| *stopped) => return,
            _ = shutdown.wait_for(|stopping| *stopping) => return,
            () = tokio::time::sleep(ADDED_PARTITIONS_CHECK) => {}
        }
        while fed < state.dispatch.partition_count() {
            fed += 1;
            feed_partition(&state, &aggregate, PartitionId(fed), &stream);
        }
    }
}

/// Opens the aggregate's requests with the leader of `partition`.
fn feed_partition(
    state: &SharedState,
    aggregate: &Arc<Aggregate>,
    partition: PartitionId,
    stream: &ActivateJobs,
) {
    for _ in 0..REQUESTS_PER_PARTITION {
        tokio::spawn(feed(
            state.clone(),
            aggregate.clone(),
            partition,
            stream.clone(),
        ));
    }
}

/// Keeps one request of `aggregate` open with the leader of `partition` and hands its
/// pushed jobs to the client streams, until the last client stream leaves. A request in
/// flight then is still answered, and its jobs given back.
async fn feed(
    state: SharedState,
    aggregate: Arc<Aggregate>,
    partition: PartitionId,
    stream: ActivateJobs,
) {
    let mut stopped = aggregate.stopped.subscribe();
    let mut shutdown = state.shutdown.clone();
    let mut backoff = Backoff::new(FIRST_RETRY_DELAY, MAX_RETRY_DELAY);
    loop {
        if *stopped.borrow() || *shutdown.borrow() {
            return;
        }
        let answer = state
            .dispatch
            .backend()
            .stream_jobs(partition, stream.clone(), STREAM_WAIT)
            .await;
        let failed = match answer {
            Ok(None) => false,
            Ok(Some(answered)) => match answered.response {
                CommandResponse::Accepted {
                    value: RecordValue::JobBatch(batch),
                    ..
                } => {
                    let activation = Activation {
                        partition,
                        term: answered.term,
                        batch,
                        asked_at: None,
                    };
                    let jobs = usable_jobs(state.dispatch.backend(), &state.metrics, activation);
                    hand_over(&state, &aggregate, jobs).await;
                    false
                }
                CommandResponse::Rejected(rejection) => {
                    tracing::warn!(%partition, reason = %rejection.reason, "a job stream's activation was rejected");
                    true
                }
                CommandResponse::Accepted { value, .. } => {
                    tracing::warn!(%partition, value_type = value.value_type().name(), "unexpected answer to a job stream");
                    true
                }
            },
            Err(error) => {
                tracing::debug!(%partition, %error, "job stream request failed; asking again");
                true
            }
        };
        if !failed {
            backoff.reset();
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff.next_delay()) => {}
            _ = stopped.wait_for(|stopped| *stopped) => return,
            _ = shutdown.wait_for(|stopping| *stopping) => return,
        }
    }
}

async fn hand_over(state: &SharedState, aggregate: &Aggregate, jobs: Vec<(i64, JobRecord)>) {
    let mut delivered = 0;
    for (key, job) in jobs {
        match aggregate.deliver(activated_job(key, job)).await {
            Ok(()) => delivered += 1,
            Err(job) => give_back(state, job.key).await,
        }
    }
    state.metrics.jobs_pushed(delivered);
}

/// Makes an activated job that could not reach its worker activatable again at once:
/// yielded (Zeebe's JOB YIELD), so its retries stay and no failure is recorded.
pub async fn give_back(state: &SharedState, job_key: i64) {
    if let Err(error) = ops::yield_job(state, rill_protocol::Key(job_key)).await {
        tracing::debug!(job_key, %error, "could not give back an undelivered job");
    }
}

/// A client stream's pushed jobs. Jobs still queued when the client goes away (the
/// stream is dropped) are given back.
pub struct PushedJobs {
    receiver: mpsc::Receiver<Result<ActivatedJob, Status>>,
    state: SharedState,
}

impl Stream for PushedJobs {
    type Item = Result<ActivatedJob, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.receiver.poll_recv(cx)
    }
}

impl Drop for PushedJobs {
    fn drop(&mut self) {
        self.receiver.close();
        let mut queued = Vec::new();
        while let Ok(Ok(job)) = self.receiver.try_recv() {
            queued.push(job.key);
        }
        if queued.is_empty() {
            return;
        }
        let state = self.state.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for key in queued {
                    give_back(&state, key).await;
                }
            });
        }
    }
}
