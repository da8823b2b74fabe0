//! Job push: a partition leader activates jobs for the job streams gateways registered
//! and hands them over, without the gateway asking for jobs.
//!
//! ```text
//!  gateway ── StreamJobs(type, worker, timeout, variables) ──► leader: waits here
//!  commit ──► "jobs of type T available" ──► ActivateJobs for one waiting stream of T
//!         (a replicated command like any other: keys and deadline from its log entry)
//!  JOB_BATCH ──► answers that stream's request ──► the gateway, on to a client stream
//! ```
//!
//! A gateway aggregates its client streams of one job type and activation settings into
//! one stream, and keeps one request open for it on each partition leader: a broker
//! tracks gateways' aggregates, not clients. The gateway asks again as soon as it is
//! answered, so the stream stays registered; a request that waits too long is answered
//! idle. Streams of a type take turns. When a stream registers, the leader activates at
//! once unless it knows that no job of the type is waiting, so jobs created before the
//! stream opened are pushed too. News while activations are in flight starts another
//! one for the next waiting stream, up to a few per type. Jobs activated for a request
//! whose gateway has gone are given back (yielded: Zeebe's JOB YIELD, retries kept),
//! activatable again at once.
//!
//! Only leaders push. A leader that steps down answers its waiting streams `NotLeader`,
//! and the gateways register with the next one.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};
use rill_protocol::value::JobBatchRecord;
use rill_protocol::{
    ActivateJobs, ApiAnswer, ApiError, Command, CommandResponse, Key, PartitionId, RecordValue,
};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::command_api::ProtocolEngine;
use crate::error::Error;
use crate::partition::{Partition, PartitionMap, Role};

/// Pushed jobs, by partition.
pub const JOBS_PUSHED: &str = "rill_job_push_jobs_total";
/// Job streams registered and waiting for jobs, by partition.
pub const OPEN_STREAMS: &str = "rill_job_push_streams";

/// Activations of one type in flight at once: news that comes while one is in flight
/// starts another for the next stream, so that under load activations overlap instead of
/// queueing behind each other's commit.
const MAX_IN_FLIGHT: usize = 4;
/// How long an activation for a stream may take.
const ACTIVATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How often closed requests are swept out and the stream gauge updated.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// The job push of every partition of a broker: a pusher per partition, started when a
/// stream first registers with it, so partitions the broker joins later are pushed too.
pub struct JobPushes {
    pushers: parking_lot::Mutex<BTreeMap<PartitionId, mpsc::Sender<Waiting>>>,
    /// Starts the pusher of a partition hosted here; `None` when it is not.
    start_pusher: StartPusher,
}

type StartPusher = Box<dyn Fn(PartitionId) -> Option<mpsc::Sender<Waiting>> + Send + Sync>;

/// A stream's request, waiting for jobs.
struct Waiting {
    stream: ActivateJobs,
    answer: oneshot::Sender<ApiAnswer>,
}

#[derive(Clone)]
struct PushMetrics {
    pushed: IntCounterVec,
    streams: IntGaugeVec,
}

impl PushMetrics {
    /// The families, registered in `registry` if given.
    fn new(registry: Option<&Registry>) -> Result<PushMetrics, prometheus::Error> {
        let pushed = IntCounterVec::new(
            Opts::new(
                JOBS_PUSHED,
                "Jobs a leader activated for a job stream and pushed",
            ),
            &["partition"],
        )?;
        let streams = IntGaugeVec::new(
            Opts::new(
                OPEN_STREAMS,
                "Requests of gateways' job streams waiting at the leader for jobs",
            ),
            &["partition"],
        )?;
        if let Some(registry) = registry {
            registry.register(Box::new(pushed.clone()))?;
            registry.register(Box::new(streams.clone()))?;
        }
        Ok(PushMetrics { pushed, streams })
    }
}

impl JobPushes {
    /// Pushes for the partitions of `partitions` (looked up when streams register), on
    /// the current runtime.
    pub fn start<E: ProtocolEngine>(
        partitions: PartitionMap<E>,
        registry: Option<&Registry>,
    ) -> Result<Arc<JobPushes>, prometheus::Error> {
        let metrics = PushMetrics::new(registry)?;
        let runtime = tokio::runtime::Handle::current();
        let start_pusher: StartPusher = Box::new(move |id| {
            let partition = partitions.get(&id)?;
            let (sender, receiver) = mpsc::channel(1024);
            let label = id.get().to_string();
            let pusher = Pusher {
                partition,
                pushed: metrics.pushed.with_label_values(&[&label]),
                streams: metrics.streams.with_label_values(&[&label]),
                waiting: HashMap::new(),
                known_empty: HashSet::new(),
                in_flight: HashMap::new(),
                again: HashSet::new(),
            };
            runtime.spawn(pusher.run(receiver));
            Some(sender)
        });
        Ok(Arc::new(JobPushes {
            pushers: parking_lot::Mutex::new(BTreeMap::new()),
            start_pusher,
        }))
    }

    /// The running pusher of `partition`, started if it has none (or its replica here was
    /// replaced since); `None` if the partition is not hosted here.
    fn pusher(&self, partition: PartitionId) -> Option<mpsc::Sender<Waiting>> {
        let mut pushers = self.pushers.lock();
        if let Some(sender) = pushers.get(&partition).filter(|s| !s.is_closed()) {
            return Some(sender.clone());
        }
        pushers.remove(&partition);
        let sender = (self.start_pusher)(partition)?;
        pushers.insert(partition, sender.clone());
        Some(sender)
    }

    /// Registers `stream` with `partition` and waits up to `wait` for jobs pushed to it.
    pub fn stream(
        &self,
        partition: PartitionId,
        stream: ActivateJobs,
        wait: Duration,
    ) -> BoxFuture<'static, ApiAnswer> {
        let sender = self.pusher(partition);
        Box::pin(async move {
            let Some(sender) = sender else {
                return ApiAnswer::Error(ApiError::NotLeader { leader: None });
            };
            let (answer, answered) = oneshot::channel();
            if sender.send(Waiting { stream, answer }).await.is_err() {
                return ApiAnswer::Error(ApiError::ShuttingDown);
            }
            match tokio::time::timeout(wait, answered).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => ApiAnswer::Error(ApiError::ShuttingDown),
                Err(_) => ApiAnswer::StreamIdle,
            }
        })
    }
}

/// The job push of one partition: its waiting streams by job type.
struct Pusher<E: ProtocolEngine> {
    partition: Partition<E>,
    pushed: prometheus::IntCounter,
    streams: prometheus::IntGauge,
    waiting: HashMap<String, VecDeque<Waiting>>,
    /// Types whose last activation left no job behind, with no news since: a stream of
    /// such a type that registers waits for news instead of activating.
    known_empty: HashSet<String>,
    /// Activations in flight, by type (at most [`MAX_IN_FLIGHT`] each).
    in_flight: HashMap<String, usize>,
    /// Types with news that found no activation to start: activate again after the
    /// next one of the type ends.
    again: HashSet<String>,
}

/// An activation's outcome, with the request it was for.
struct Outcome {
    job_type: String,
    waiting: Waiting,
    max_jobs: usize,
    result: Result<crate::Answered<CommandResponse>, Error>,
}

type Activations = FuturesUnordered<BoxFuture<'static, Outcome>>;

impl<E: ProtocolEngine> Pusher<E> {
    async fn run(mut self, mut registrations: mpsc::Receiver<Waiting>) {
        let mut available = self.partition.subscribe_jobs_available();
        let mut status = self.partition.watch_status();
        let mut activations = Activations::new();
        let mut sweep = tokio::time::interval(SWEEP_INTERVAL);
        loop {
            tokio::select! {
                registration = registrations.recv() => match registration {
                    Some(waiting) => self.register(waiting, &mut activations),
                    None => return,
                },
                notice = available.recv() => match notice {
                    Ok(notice) => {
                        self.known_empty.remove(&notice.job_type);
                        self.activate(notice.job_type, &mut activations);
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.known_empty.clear();
                        let types: Vec<String> = self.waiting.keys().cloned().collect();
                        for job_type in types {
                            self.activate(job_type, &mut activations);
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return self.close(),
                },
                changed = status.changed() => {
                    if changed.is_err() {
                        return self.close();
                    }
                    let now = status.borrow_and_update().clone();
                    if now.role != Role::Leader {
                        // The next leader pushes; what this one knew is stale then.
                        self.known_empty.clear();
                        self.answer_all(ApiAnswer::Error(ApiError::NotLeader {
                            leader: now.leader.map(|l| l.0),
                        }));
                    }
                },
                Some(outcome) = activations.next(), if !activations.is_empty() => {
                    self.activated(outcome, &mut activations);
                }
                _ = sweep.tick() => self.sweep(),
            }
        }
    }

    fn register(&mut self, waiting: Waiting, activations: &mut Activations) {
        let status = self.partition.status();
        if status.role != Role::Leader {
            let _ = waiting.answer.send(ApiAnswer::Error(ApiError::NotLeader {
                leader: status.leader.map(|l| l.0),
            }));
            return;
        }
        let job_type = waiting.stream.job_type.clone();
        self.waiting
            .entry(job_type.clone())
            .or_default()
            .push_back(waiting);
        self.streams.inc();
        if !self.known_empty.contains(&job_type) {
            self.activate(job_type, activations);
        }
    }

    /// Activates jobs of `job_type` for the stream whose turn it is, if one waits.
    fn activate(&mut self, job_type: String, activations: &mut Activations) {
        let in_flight = self.in_flight.get(&job_type).copied().unwrap_or(0);
        if in_flight >= MAX_IN_FLIGHT {
            self.again.insert(job_type);
            return;
        }
        let Some(waiting) = self.next_waiting(&job_type) else {
            if in_flight > 0 {
                // The stream that is answered next takes the news.
                self.again.insert(job_type);
            }
            return;
        };
        self.in_flight.insert(job_type.clone(), in_flight + 1);
        let command = Command::ActivateJobs(waiting.stream.clone());
        let max_jobs = usize::try_from(waiting.stream.max_jobs).unwrap_or(1);
        let submitted = self.partition.submit_now(command, ACTIVATION_TIMEOUT);
        activations.push(Box::pin(async move {
            Outcome {
                job_type,
                waiting,
                max_jobs,
                result: submitted.await,
            }
        }));
    }

    /// The longest waiting request of `job_type` whose gateway still waits.
    fn next_waiting(&mut self, job_type: &str) -> Option<Waiting> {
        let queue = self.waiting.get_mut(job_type)?;
        let mut found = None;
        while let Some(waiting) = queue.pop_front() {
            self.streams.dec();
            if !waiting.answer.is_closed() {
                found = Some(waiting);
                break;
            }
        }
        if queue.is_empty() {
            self.waiting.remove(job_type);
        }
        found
    }

    fn activated(&mut self, outcome: Outcome, activations: &mut Activations) {
        let Outcome {
            job_type,
            waiting,
            max_jobs,
            result,
        } = outcome;
        match self.in_flight.get_mut(&job_type) {
            Some(count) if *count > 1 => *count -= 1,
            _ => {
                self.in_flight.remove(&job_type);
            }
        }
        let news = self.again.remove(&job_type);
        let answered = match result {
            Ok(answered) => answered,
            Err(error) => {
                let _ = waiting.answer.send(ApiAnswer::Error((&error).into()));
                if news {
                    self.activate(job_type, activations);
                }
                return;
            }
        };
        let count = match &answered.response {
            CommandResponse::Accepted {
                value: RecordValue::JobBatch(batch),
                ..
            } => batch.job_keys.len(),
            _ => 0,
        };
        if count == 0 && matches!(answered.response, CommandResponse::Accepted { .. }) {
            // Nothing to hand out: the stream keeps its place, first in line.
            if !waiting.answer.is_closed() {
                self.waiting
                    .entry(job_type.clone())
                    .or_default()
                    .push_front(waiting);
                self.streams.inc();
            }
            if news {
                self.activate(job_type, activations);
            } else {
                self.known_empty.insert(job_type);
            }
            return;
        }
        let batch = match &answered.response {
            CommandResponse::Accepted {
                value: RecordValue::JobBatch(batch),
                ..
            } => Some(batch.clone()),
            _ => None,
        };
        let answer = ApiAnswer::Response {
            response: answered.response,
            term: answered.term,
        };
        match waiting.answer.send(answer) {
            Ok(()) => self.pushed.inc_by(count as u64),
            Err(_) => {
                if let Some(batch) = batch {
                    self.give_back(batch);
                }
            }
        }
        // A full batch may have left jobs behind.
        if news || count >= max_jobs {
            self.activate(job_type, activations);
        } else {
            self.known_empty.insert(job_type);
        }
    }

    /// Makes jobs activated for a stream that went away activatable again at once.
    fn give_back(&self, batch: JobBatchRecord) {
        for key in batch.job_keys {
            let command = Command::YieldJob { job_key: Key(key) };
            let submitted = self.partition.submit_now(command, ACTIVATION_TIMEOUT);
            tokio::spawn(async move {
                if let Err(error) = submitted.await {
                    tracing::debug!(job_key = key, %error, "could not give back a pushed job; it times out");
                }
            });
        }
    }

    /// Drops requests whose gateway stopped waiting, and counts the others.
    fn sweep(&mut self) {
        for queue in self.waiting.values_mut() {
            queue.retain(|waiting| !waiting.answer.is_closed());
        }
        self.waiting.retain(|_, queue| !queue.is_empty());
        let open: usize = self.waiting.values().map(VecDeque::len).sum();
        self.streams.set(open as i64);
    }

    fn answer_all(&mut self, answer: ApiAnswer) {
        for (_, queue) in self.waiting.drain() {
            for waiting in queue {
                let _ = waiting.answer.send(answer.clone());
            }
        }
        self.streams.set(0);
    }

    fn close(&mut self) {
        self.answer_all(ApiAnswer::Error(ApiError::ShuttingDown));
    }
}
