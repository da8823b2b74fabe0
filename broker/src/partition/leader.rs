//! What only a leader has: the queue of commands to propose and the entries in flight
//! (group commit), the due work it proposes itself, the couriers that carry commands to
//! other partitions, and the exporter director.
//!
//! All of it lives in [`LeaderState`], inside [`Leadership::Leader`]: it is built when
//! this replica starts leading in a term and dropped, stopping the couriers and the
//! director, when it stops. A follower has none of it to touch.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ractor::ActorRef;
use rill_engine_api::{Engine, RequestId};
use rill_protocol::{PartitionId, Term, Timestamp};
use rill_raft::{EntryData, Raft, StateDb};

use super::PartitionConfig;
use super::actor::Msg;
use super::requests::RequestBook;
use crate::batch::{BatchBuilder, CoreCommand};
use crate::clock;
use crate::delivery::{Couriers, PartitionRouter};
use crate::export::ExportDirector;
use crate::metrics::PartitionMetrics;
use crate::state::RocksState;

/// Most due commands proposed at once.
const DUE_LIMIT: usize = 1000;
/// Most outbox entries handed to the couriers at once.
const SEND_LIMIT: usize = 1000;
/// How often the leader looks for sends to deliver again (if any may be lost).
const REDELIVERY_INTERVAL: Duration = Duration::from_secs(1);

/// Sends a command back to the partition actor (for the couriers' acknowledgements),
/// with the checkpoint id the target answered with.
pub(crate) type Acknowledge<C> = Arc<dyn Fn(C, u64) + Send + Sync>;

pub(crate) enum Leadership<E: Engine> {
    Follower,
    Leader(Box<LeaderState<E>>),
}

impl<E: Engine> Leadership<E> {
    pub(crate) fn leader(&mut self) -> Option<&mut LeaderState<E>> {
        match self {
            Leadership::Leader(leader) => Some(leader),
            Leadership::Follower => None,
        }
    }

    pub(crate) fn is_leader(&self) -> bool {
        matches!(self, Leadership::Leader(_))
    }

    /// The term this replica leads in.
    pub(crate) fn term(&self) -> Option<Term> {
        match self {
            Leadership::Leader(leader) => Some(leader.term),
            Leadership::Follower => None,
        }
    }

    pub(crate) fn director(&self) -> Option<&ExportDirector> {
        match self {
            Leadership::Leader(leader) => leader.director.as_ref(),
            Leadership::Follower => None,
        }
    }

    /// Steps down: the couriers and the director stop, and entries still in flight are
    /// no longer tracked (their requests wait in the book for the barrier); returns the
    /// requests still queued, never proposed.
    pub(crate) fn step_down(&mut self) -> Vec<RequestId> {
        match std::mem::replace(self, Leadership::Follower) {
            Leadership::Leader(leader) => leader
                .queue
                .into_iter()
                .filter_map(|queued| queued.request)
                .collect(),
            Leadership::Follower => Vec::new(),
        }
    }
}

pub(crate) enum QueuedCommand<C> {
    Engine(C),
    Core(CoreCommand),
    /// An engine command that carries the other partition's checkpoint id
    /// (`batch::Item::AfterCheckpoint`).
    AfterCheckpoint {
        checkpoint_id: u64,
        command: C,
    },
}

struct Queued<C> {
    request: Option<RequestId>,
    command: QueuedCommand<C>,
    /// Due work (timers, deadlines) the partition proposed itself.
    due: bool,
}

struct Proposal {
    started: Instant,
    /// Due commands in this entry.
    internal: usize,
}

/// The leader's resources for one term (see the module comment).
pub(crate) struct LeaderState<E: Engine> {
    term: Term,
    raft: Raft,
    actor: ActorRef<Msg<E>>,
    queue: VecDeque<Queued<E::Command>>,
    proposals: BTreeMap<u64, Proposal>,
    next_proposal: u64,
    /// When due work should be looked for next (`None`: nothing known to be due).
    next_wake: Option<Timestamp>,
    /// Due commands proposed and not yet confirmed.
    due_in_flight: usize,
    /// Present once the partition knows where to deliver (a router).
    couriers: Option<Couriers<E>>,
    last_redelivery: Option<Instant>,
    acknowledge: Acknowledge<E::Command>,
    /// Present if the node runs exporters.
    director: Option<ExportDirector>,
    /// The highest checkpoint this leadership proposed (0: none).
    checkpoint_proposed: u64,
    /// While leadership is handed over, nothing is proposed until then: the successor's
    /// log must catch up with this one's (`transfer.rs`). A deadline, so that a
    /// hand-over that never finishes cannot stop the partition.
    paused_until: Option<Instant>,
}

impl<E: Engine> LeaderState<E> {
    pub(crate) fn new(
        term: Term,
        raft: Raft,
        actor: ActorRef<Msg<E>>,
        acknowledge: Acknowledge<E::Command>,
        director: Option<ExportDirector>,
    ) -> LeaderState<E> {
        LeaderState {
            term,
            raft,
            actor,
            queue: VecDeque::new(),
            proposals: BTreeMap::new(),
            next_proposal: 1,
            // Recover timers and other due work from state.
            next_wake: Some(Timestamp(0)),
            due_in_flight: 0,
            couriers: None,
            last_redelivery: None,
            acknowledge,
            director,
            checkpoint_proposed: 0,
            paused_until: None,
        }
    }

    /// Stops proposing until `until`, or resumes (`None`): a hand-over of leadership.
    pub(crate) fn pause(&mut self, until: Option<Instant>) {
        self.paused_until = until;
    }

    /// Couriers for `router`, replacing any of an earlier one; they start with a
    /// redelivery of the whole outbox.
    pub(crate) fn set_router(
        &mut self,
        partition: PartitionId,
        router: Arc<dyn PartitionRouter<E>>,
        io: tokio::runtime::Handle,
    ) {
        self.couriers = Some(Couriers::new(partition, router, io));
        self.last_redelivery = None;
    }

    /// Queues a command for the next entry.
    pub(crate) fn enqueue(
        &mut self,
        request: Option<RequestId>,
        command: QueuedCommand<E::Command>,
    ) {
        self.queue.push_back(Queued {
            request,
            command,
            due: false,
        });
    }

    /// Queues `command`, which carries the other side's checkpoint id, behind the
    /// checkpoint itself when the partition has neither recorded (`recorded`) nor
    /// proposed one as high: the command is then applied after this partition's cut for
    /// that backup, and this leader takes its part as if the backup's `POST` had reached
    /// it (docs/decisions/backup.md). True if it queued the checkpoint.
    pub(crate) fn enqueue_after_checkpoint(
        &mut self,
        request: Option<RequestId>,
        checkpoint_id: u64,
        recorded: u64,
        command: E::Command,
    ) -> bool {
        let checkpoint_first = checkpoint_id > recorded.max(self.checkpoint_proposed);
        if checkpoint_first {
            self.enqueue_checkpoint(checkpoint_id);
        }
        self.enqueue(
            request,
            QueuedCommand::AfterCheckpoint {
                checkpoint_id,
                command,
            },
        );
        checkpoint_first
    }

    /// Queues checkpoint `backup_id`.
    pub(crate) fn enqueue_checkpoint(&mut self, backup_id: u64) {
        self.checkpoint_proposed = self.checkpoint_proposed.max(backup_id);
        self.enqueue(
            None,
            QueuedCommand::Core(CoreCommand::Checkpoint { backup_id }),
        );
    }

    /// Commands were refused for a checkpoint this leadership proposed but that was not
    /// applied before them (lost, or overtaken): the next that carries it proposes it
    /// again.
    pub(crate) fn checkpoint_not_ahead(&mut self, recorded: u64) {
        self.checkpoint_proposed = recorded;
    }

    /// Due work asks to be looked for at `due`.
    pub(crate) fn wake_at(&mut self, due: Timestamp) {
        self.next_wake = Some(self.next_wake.map_or(due, |w| w.min(due)));
    }

    /// Hands a command for another partition to its courier, with this partition's
    /// latest checkpoint id.
    pub(crate) fn send(&mut self, target: PartitionId, command: E::Command, checkpoint_id: u64) {
        if let Some(couriers) = &mut self.couriers {
            couriers.send(target, command, checkpoint_id, &self.acknowledge);
        }
    }

    /// Group commit: while fewer than `max_inflight_proposals` entries are in flight,
    /// turn the queue into entries of up to `max-batch-commands` / `max-batch-size` (a
    /// second entry only once a whole batch waits).
    pub(crate) fn propose(
        &mut self,
        config: &PartitionConfig,
        requests: &mut RequestBook<E::Response>,
        last_proposed: &mut Timestamp,
    ) {
        if self
            .paused_until
            .is_some_and(|until| Instant::now() < until)
        {
            return;
        }
        let max_commands = config.raft.max_batch_commands.max(1);
        let max_bytes = config.raft.max_batch_size.0 as usize;
        while self.proposals.len() < config.max_inflight_proposals.max(1) && !self.queue.is_empty()
        {
            // With an entry in flight, the next waits until the queue fills a whole batch:
            // at moderate load it then carries more commands (fewer log syncs, replication
            // rounds and applies per command, measured faster end to end); at saturation
            // entries are still pipelined.
            if !self.proposals.is_empty() && self.queue.len() < max_commands {
                break;
            }
            // The leader's clock, never behind an earlier entry.
            let timestamp = clock::now().max(*last_proposed);
            *last_proposed = timestamp;
            // Raft may append it in a later term than this one (see the actor's module
            // comment); every replica then skips it.
            let mut builder = BatchBuilder::new(timestamp, self.term, config.command_limits);
            let mut internal = 0;
            while (builder.count() as usize) < max_commands && builder.len_bytes() < max_bytes {
                let Some(queued) = self.queue.pop_front() else {
                    break;
                };
                // A checkpoint ends its entry: the backup's cut is that entry's end.
                let ends_entry = matches!(
                    &queued.command,
                    QueuedCommand::Core(CoreCommand::Checkpoint { .. })
                );
                let pushed = match &queued.command {
                    QueuedCommand::Engine(command) => builder.push(queued.request, command),
                    QueuedCommand::Core(command) => builder.push_core(command),
                    QueuedCommand::AfterCheckpoint {
                        checkpoint_id,
                        command,
                    } => builder.push_after_checkpoint(queued.request, *checkpoint_id, command),
                };
                match pushed {
                    Ok(()) => {
                        if let Some(request) = queued.request {
                            requests.proposed(request, self.term);
                        }
                        if queued.due {
                            internal += 1;
                        }
                    }
                    Err(e) => {
                        if let Some(request) = queued.request {
                            requests.reject(request, e);
                        }
                    }
                }
                if ends_entry {
                    break;
                }
            }
            if builder.count() == 0 {
                continue;
            }
            let proposal = self.next_proposal;
            self.next_proposal += 1;
            self.proposals.insert(
                proposal,
                Proposal {
                    started: Instant::now(),
                    internal,
                },
            );
            let data = EntryData(Bytes::from(builder.finish()));
            let raft = self.raft.clone();
            let me = self.actor.clone();
            let term = self.term;
            tokio::spawn(async move {
                let result = raft.client_write(data).await.map(|_| ()).map_err(Box::new);
                let _ = me.send_message(Msg::Proposed {
                    term,
                    proposal,
                    result,
                });
            });
        }
    }

    /// Raft has answered the entry `proposal` built in `term`. One of an earlier
    /// leadership is not this one's business.
    pub(crate) fn on_proposed(&mut self, term: Term, proposal: u64, metrics: &PartitionMetrics) {
        if term != self.term {
            return;
        }
        let Some(p) = self.proposals.remove(&proposal) else {
            return;
        };
        metrics.commit.observe(p.started.elapsed().as_secs_f64());
        if p.internal > 0 {
            self.due_in_flight = self.due_in_flight.saturating_sub(p.internal);
            if self.due_in_flight == 0 {
                // look again: more may be due, or the proposal was lost
                self.next_wake = Some(Timestamp(0));
            }
        }
    }

    /// Queues the commands whose time has come (timers, job deadlines), once the ones
    /// proposed before are confirmed; true if it looked (then propose).
    #[must_use]
    pub(crate) fn queue_due_work(&mut self, engine: &mut E, db: &StateDb) -> bool {
        let now = clock::now();
        if !matches!(self.next_wake, Some(due) if due <= now && self.due_in_flight == 0) {
            return false;
        }
        let mut commands = Vec::new();
        match engine.due_commands(&RocksState::new(db), now, DUE_LIMIT, &mut commands) {
            Ok(next) => self.next_wake = next,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list due work");
                self.next_wake = Some(now.plus_millis(1000));
                return false;
            }
        }
        self.due_in_flight += commands.len();
        for command in commands {
            self.queue.push_back(Queued {
                request: None,
                command: QueuedCommand::Engine(command),
                due: true,
            });
        }
        true
    }

    /// Hands the outbox to the couriers again when sends may have been lost, with this
    /// partition's latest checkpoint id.
    pub(crate) fn redeliver(&mut self, engine: &mut E, db: &StateDb, checkpoint_id: u64) {
        let Some(couriers) = &mut self.couriers else {
            return;
        };
        if let Some(last) = self.last_redelivery
            && (last.elapsed() < REDELIVERY_INTERVAL || !couriers.take_redelivery_due())
        {
            return;
        }
        self.last_redelivery = Some(Instant::now());
        let mut sends = Vec::new();
        if let Err(e) = engine.pending_sends(&RocksState::new(db), SEND_LIMIT, &mut sends) {
            tracing::warn!(error = %e, "cannot list the outbox");
            return;
        }
        for (target, command) in sends {
            couriers.send(target, command, checkpoint_id, &self.acknowledge);
        }
    }
}
