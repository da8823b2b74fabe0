//! A [`GatewayBackend`] backed by the real BPMN engine over in-memory state: what the
//! standalone broker does, minus Raft and RocksDB. Commands are applied one at a time
//! per partition, leader actions are carried out (responses to waiting requests,
//! jobs-available notifications, sends to other partitions), and a ticker proposes
//! due commands (timers, job timeouts), as the partition leader would. Each partition
//! keeps a history store (`rill-history` in memory), fed from the records and answering
//! the history queries, as a broker's does.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rill_engine::BpmnEngine;
use rill_engine_api::{
    Action, Engine, MemoryState, Overlay, ProcessingContext, ProcessingOutput, RequestId,
};
use rill_gateway::{
    Answered, BrokerInfo, GatewayBackend, JobsAvailable, JobsNotice, PartitionHealth,
    PartitionInfo, PartitionRole, Topology,
};
use rill_history::{HistoryWriter, MemoryHistory};
use rill_protocol::{
    Command, CommandResponse, NodeId, PartitionId, Position, Query, QueryResult, Term, Timestamp,
};
use tokio::sync::{broadcast, oneshot};

struct Partition {
    engine: BpmnEngine,
    state: MemoryState,
    history: MemoryHistory,
    position: u64,
}

pub struct EngineBackend {
    partitions: Vec<Mutex<Partition>>,
    jobs: broadcast::Sender<JobsNotice>,
    /// Requests waiting for a later response (create-and-await), by partition and id.
    waiting: Mutex<HashMap<(PartitionId, RequestId), oneshot::Sender<CommandResponse>>>,
    next_request: AtomicU64,
    /// Drops the partitions' jobs-available notifications, as when a broker could keep
    /// no more of them for this gateway.
    muted: AtomicBool,
    /// Fails history queries as a broker with `history.enabled = false` does.
    history_off: AtomicBool,
    /// The clock commands are stamped with: the wall clock at the start plus the time
    /// elapsed since (the gateway judges job deadlines by its wall clock).
    started: Instant,
    started_millis: i64,
}

impl EngineBackend {
    pub fn new(partition_count: u16) -> Arc<EngineBackend> {
        let (jobs, _) = broadcast::channel(256);
        let backend = Arc::new(EngineBackend {
            partitions: (0..partition_count)
                .map(|_| {
                    Mutex::new(Partition {
                        engine: BpmnEngine::new(),
                        state: MemoryState::new(),
                        history: MemoryHistory::new(),
                        position: 0,
                    })
                })
                .collect(),
            jobs,
            waiting: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            muted: AtomicBool::new(false),
            history_off: AtomicBool::new(false),
            started: Instant::now(),
            // The backend's entries are stamped from the machine clock, as a leader's are.
            #[allow(clippy::disallowed_methods)]
            started_millis: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("a clock after 1970")
                .as_millis() as i64,
        });
        tokio::spawn(tick(Arc::downgrade(&backend)));
        backend
    }

    /// Drops (or again sends) the notifications that new jobs would send.
    pub fn mute_notifications(&self, muted: bool) {
        self.muted.store(muted, Ordering::Relaxed);
    }

    /// Answers history queries from now on as a broker with `history.enabled = false`
    /// does: with its typed error.
    pub fn turn_history_off(&self) {
        self.history_off.store(true, Ordering::Relaxed);
    }

    /// Sends a jobs-available notification, as a partition leader would.
    pub fn notify(&self, note: JobsNotice) {
        let _ = self.jobs.send(note);
    }

    fn now(&self) -> Timestamp {
        Timestamp(self.started_millis + self.started.elapsed().as_millis() as i64)
    }

    /// Applies `command` on `partition` and everything it sends to other partitions.
    /// Returns the immediate response, if any.
    fn apply(
        &self,
        partition: PartitionId,
        command: &Command,
        request: Option<RequestId>,
        register: Option<oneshot::Sender<CommandResponse>>,
    ) -> Result<Option<CommandResponse>, rill_client::Error> {
        let mut queue = VecDeque::new();
        let response = self.apply_one(partition, command, request, register, &mut queue)?;
        while let Some((target, sent)) = queue.pop_front() {
            self.apply_one(target, &sent, None, None, &mut queue)?;
        }
        Ok(response)
    }

    fn apply_one(
        &self,
        partition: PartitionId,
        command: &Command,
        request: Option<RequestId>,
        register: Option<oneshot::Sender<CommandResponse>>,
        sends: &mut VecDeque<(PartitionId, Command)>,
    ) -> Result<Option<CommandResponse>, rill_client::Error> {
        let index = usize::from(partition.get()) - 1;
        let slot = self
            .partitions
            .get(index)
            .ok_or(rill_client::Error::Unavailable {
                partition,
                reason: "no such partition".into(),
            })?;
        let mut guard = slot.lock().unwrap();
        let part = &mut *guard;
        part.position += 1;
        let ctx = ProcessingContext {
            partition_id: partition,
            partition_count: self.partitions.len() as u16,
            position: Position(part.position),
            timestamp: self.now(),
            engine_version: rill_protocol::version::ENGINE_VERSION_2,
            request,
            message_partition_count: self.partitions.len() as u16,
            limits: Default::default(),
        };
        let mut out = ProcessingOutput::default();
        let mut overlay = Overlay::new(&part.state);
        part.engine
            .process(&ctx, &mut overlay, command, &mut out)
            .map_err(|e| rill_client::Error::Failed {
                partition,
                source: Box::new(e),
            })?;
        let writes = overlay.into_writes();
        part.state.apply(writes);
        let history = {
            let mut writer = HistoryWriter::new(&part.history);
            for (i, draft) in out.records.iter().enumerate() {
                let record = draft.clone().into_record(
                    Position(part.position + i as u64),
                    (i > 0).then_some(Position(part.position)),
                    ctx.timestamp,
                    partition,
                    "test",
                );
                writer
                    .index(&record)
                    .map_err(|e| rill_client::Error::Failed {
                        partition,
                        source: Box::new(e),
                    })?;
            }
            writer.into_writes()
        };
        part.history.apply(history);
        part.position += out.records.len().saturating_sub(1) as u64;

        // Register before releasing the partition, so no later command can answer first.
        if out.response.is_none()
            && let (Some(request), Some(sender)) = (request, register)
        {
            self.waiting
                .lock()
                .unwrap()
                .insert((partition, request), sender);
        }
        drop(guard);
        for action in out.actions {
            match action {
                Action::Respond { request, response } => {
                    if let Some(sender) = self.waiting.lock().unwrap().remove(&(partition, request))
                    {
                        let _ = sender.send(response);
                    }
                }
                Action::JobsAvailable { job_type } if !self.muted.load(Ordering::Relaxed) => {
                    let _ = self.jobs.send(JobsNotice::Available(JobsAvailable {
                        partition,
                        job_type,
                    }));
                }
                Action::Send { partition, command } => sends.push_back((partition, command)),
                Action::JobsAvailable { .. } | Action::WakeAt { .. } => {}
            }
        }
        Ok(out.response)
    }

    fn fire_due(&self) {
        for index in 0..self.partitions.len() {
            let partition = PartitionId(index as u16 + 1);
            let mut due = Vec::new();
            {
                let mut guard = self.partitions[index].lock().unwrap();
                let part = &mut *guard;
                if part
                    .engine
                    .due_commands(&part.state, self.now(), 100, &mut due)
                    .is_err()
                {
                    continue;
                }
            }
            for command in due {
                let _ = self.apply(partition, &command, None, None);
            }
        }
    }
}

/// The leader's scheduler: proposes due commands every few milliseconds.
async fn tick(backend: Weak<EngineBackend>) {
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let Some(backend) = backend.upgrade() else {
            return;
        };
        backend.fire_due();
    }
}

impl GatewayBackend for EngineBackend {
    fn partition_count(&self) -> u16 {
        self.partitions.len() as u16
    }

    fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Answered, rill_client::Error>> {
        // One leader for good: every answer is from its term.
        let answered = |response| Answered {
            response,
            term: Some(Term(1)),
        };
        Box::pin(async move {
            let request = RequestId(self.next_request.fetch_add(1, Ordering::Relaxed));
            let (sender, receiver) = oneshot::channel();
            if let Some(response) = self.apply(partition, &command, Some(request), Some(sender))? {
                return Ok(answered(response));
            }
            match tokio::time::timeout(timeout, receiver).await {
                Ok(Ok(response)) => Ok(answered(response)),
                Ok(Err(_)) => Err(rill_client::Error::Internal(
                    "response channel dropped".into(),
                )),
                Err(_) => {
                    self.waiting.lock().unwrap().remove(&(partition, request));
                    Err(rill_client::Error::Timeout)
                }
            }
        })
    }

    fn query(
        &self,
        partition: PartitionId,
        query: Query,
        _timeout: Duration,
    ) -> BoxFuture<'_, Result<QueryResult, rill_client::Error>> {
        Box::pin(async move {
            let index = usize::from(partition.get()) - 1;
            let slot = self
                .partitions
                .get(index)
                .ok_or(rill_client::Error::Unavailable {
                    partition,
                    reason: "no such partition".into(),
                })?;
            let mut guard = slot.lock().unwrap();
            let part = &mut *guard;
            if query.is_history() && self.history_off.load(Ordering::Relaxed) {
                return Err(rill_client::Error::HistoryDisabled { partition });
            }
            if query.is_history() {
                return rill_history::answer(&part.history, &query).map_err(|e| {
                    rill_client::Error::Failed {
                        partition,
                        source: Box::new(e),
                    }
                });
            }
            part.engine
                .query(&part.state, &query)
                .map_err(|e| rill_client::Error::Failed {
                    partition,
                    source: Box::new(e),
                })
        })
    }

    fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsNotice> {
        self.jobs.subscribe()
    }

    fn topology(&self) -> BoxFuture<'_, Result<Topology, rill_client::Error>> {
        let count = self.partitions.len() as u16;
        Box::pin(async move {
            Ok(Topology {
                cluster_size: 1,
                partitions_count: count,
                replication_factor: 1,
                brokers: vec![BrokerInfo {
                    node_id: NodeId(0),
                    host: "127.0.0.1".into(),
                    port: 26501,
                    version: env!("CARGO_PKG_VERSION").into(),
                    partitions: (1..=count)
                        .map(|p| PartitionInfo {
                            partition: PartitionId(p),
                            role: PartitionRole::Leader,
                            health: PartitionHealth::Healthy,
                        })
                        .collect(),
                }],
            })
        })
    }
}
