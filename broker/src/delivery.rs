//! Cross-partition delivery: carries the commands an engine sends to other partitions
//! (deployments, message subscriptions) to their leaders.
//!
//! ```text
//!  sender leader: Action::Send ─► courier(target) ─► router.deliver ─► target leader
//!                                      │                                   │ applies
//!  sender: propose acknowledgement ◄───┴──── answer (applied / already) ◄──┘
//! ```
//!
//! The engine keeps every send in a replicated outbox until its acknowledgement is
//! applied, so nothing here needs to be durable: whatever is lost on the way (leader
//! change, timeout, a command that arrived out of order) is delivered again from
//! [`Engine::pending_sends`]. The receiver applies each command once, in order, so a
//! second delivery is harmless.
//!
//! Backups: every delivery carries the sender's latest checkpoint id, and every answer
//! the receiver's. Each side applies the command, or the acknowledgement, only after
//! recording the other's checkpoint, so no backup's cut falls between the two sides of
//! an exchange (docs/decisions/backup.md).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use rill_engine_api::Engine;
use rill_protocol::PartitionId;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::error::{Error, Result};
use crate::partition::PartitionMap;

/// Commands to one target in flight at once, unless the router says otherwise. They
/// arrive in order; one that fails makes the ones behind it arrive out of order, and the
/// redelivery sorts that out.
pub const DEFAULT_WINDOW: usize = 64;
/// How long one delivery may wait for the target's answer.
pub(crate) const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The target's answer to a delivery.
#[derive(Clone, Debug)]
pub struct Delivered<R> {
    pub response: R,
    /// The target's latest checkpoint id once it applied the command (or a later one).
    pub checkpoint_id: u64,
}

/// Finds the leader of a partition and submits a command to it.
pub trait PartitionRouter<E: Engine>: Send + Sync + 'static {
    /// Delivers `command` to the leader of `target`, with the sender's latest checkpoint
    /// id. The command is on its way when this returns, so commands to one target arrive
    /// in the order of the calls; the future yields the target's answer.
    fn deliver(
        &self,
        target: PartitionId,
        command: E::Command,
        checkpoint_id: u64,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<Delivered<E::Response>>>;

    /// How many commands to `target` may be in flight at once. Above 1 only if calls
    /// arrive in order (see [`PartitionRouter::deliver`]).
    fn window(&self, _target: PartitionId) -> usize {
        DEFAULT_WINDOW
    }
}

/// Routes to the partitions of this process (a standalone broker hosts them all).
pub struct LocalRouter<E: Engine> {
    partitions: PartitionMap<E>,
}

impl<E: Engine> LocalRouter<E> {
    pub fn new(partitions: PartitionMap<E>) -> LocalRouter<E> {
        LocalRouter { partitions }
    }
}

impl<E: Engine> PartitionRouter<E> for LocalRouter<E> {
    fn deliver(
        &self,
        target: PartitionId,
        command: E::Command,
        checkpoint_id: u64,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<Delivered<E::Response>>> {
        match self.partitions.get(&target) {
            Some(partition) => Box::pin(deliver_here(&partition, command, checkpoint_id, timeout)),
            None => Box::pin(async move {
                Err(Error::Config(format!(
                    "partition {target} is not hosted by this node"
                )))
            }),
        }
    }
}

/// Delivers to a partition of this process.
pub(crate) fn deliver_here<E: Engine>(
    partition: &crate::partition::Partition<E>,
    command: E::Command,
    checkpoint_id: u64,
    timeout: Duration,
) -> impl Future<Output = Result<Delivered<E::Response>>> + Send + 'static {
    let answered = partition.deliver_now(command, checkpoint_id, timeout);
    async move {
        let (answered, checkpoint_id) = answered.await?;
        Ok(Delivered {
            response: answered.response,
            checkpoint_id,
        })
    }
}

/// The couriers of one leading partition: one task per target partition.
pub(crate) struct Couriers<E: Engine> {
    source: PartitionId,
    router: Arc<dyn PartitionRouter<E>>,
    runtime: Handle,
    /// Each command with the checkpoint id it carries.
    targets: BTreeMap<PartitionId, mpsc::UnboundedSender<(E::Command, u64)>>,
    /// Deliveries handed to a courier and not answered yet.
    busy: Arc<AtomicUsize>,
    /// A delivery failed or was not acknowledged since the last redelivery.
    trouble: Arc<AtomicBool>,
}

impl<E: Engine> Couriers<E> {
    pub(crate) fn new(
        source: PartitionId,
        router: Arc<dyn PartitionRouter<E>>,
        runtime: Handle,
    ) -> Couriers<E> {
        Couriers {
            source,
            router,
            runtime,
            targets: BTreeMap::new(),
            busy: Arc::new(AtomicUsize::new(0)),
            trouble: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Hands `command` to the courier of `target`, carrying the sender's latest
    /// checkpoint id; `acknowledge` is called with the engine's acknowledgement and the
    /// target's checkpoint id once the target has taken it.
    pub(crate) fn send(
        &mut self,
        target: PartitionId,
        command: E::Command,
        checkpoint_id: u64,
        acknowledge: &Arc<dyn Fn(E::Command, u64) + Send + Sync>,
    ) {
        let sender = self.targets.entry(target).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let courier = Courier {
                source: self.source,
                target,
                router: self.router.clone(),
                busy: self.busy.clone(),
                trouble: self.trouble.clone(),
                acknowledge: acknowledge.clone(),
                window: self.router.window(target).max(1),
            };
            // In the span of the partition that sends.
            self.runtime.spawn(courier.run(rx).in_current_span());
            tx
        });
        self.busy.fetch_add(1, Ordering::Relaxed);
        if sender.send((command, checkpoint_id)).is_err() {
            self.busy.fetch_sub(1, Ordering::Relaxed);
            self.trouble.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the outbox should be delivered again: something went wrong since the
    /// last time, or everything handed out was answered (what is still in the outbox
    /// then was lost, e.g. with an earlier leader).
    #[must_use]
    pub(crate) fn take_redelivery_due(&self) -> bool {
        self.trouble.swap(false, Ordering::Relaxed) || self.busy.load(Ordering::Relaxed) == 0
    }
}

struct Courier<E: Engine> {
    source: PartitionId,
    target: PartitionId,
    router: Arc<dyn PartitionRouter<E>>,
    busy: Arc<AtomicUsize>,
    trouble: Arc<AtomicBool>,
    acknowledge: Arc<dyn Fn(E::Command, u64) + Send + Sync>,
    window: usize,
}

impl<E: Engine> Courier<E> {
    /// Delivers in order, up to `window` at once, until the partition stops leading
    /// (the sender is dropped); what is in flight then is abandoned.
    async fn run(self, mut commands: mpsc::UnboundedReceiver<(E::Command, u64)>) {
        let mut in_flight = FuturesOrdered::new();
        loop {
            tokio::select! {
                next = commands.recv(), if in_flight.len() < self.window => {
                    let Some((command, checkpoint_id)) = next else { break };
                    let answer = self.router.deliver(
                        self.target,
                        command.clone(),
                        checkpoint_id,
                        DELIVERY_TIMEOUT,
                    );
                    in_flight.push_back(async move { (command, answer.await) });
                }
                Some((command, answer)) = in_flight.next(), if !in_flight.is_empty() => {
                    self.busy.fetch_sub(1, Ordering::Relaxed);
                    self.answered(&command, answer);
                }
            }
        }
        self.busy.fetch_sub(in_flight.len(), Ordering::Relaxed);
    }

    fn answered(&self, command: &E::Command, answer: Result<Delivered<E::Response>>) {
        let acknowledgement = match &answer {
            Ok(delivered) => E::acknowledgement(self.target, command, &delivered.response)
                .map(|ack| (ack, delivered.checkpoint_id)),
            Err(_) => None,
        };
        match acknowledgement {
            Some((ack, checkpoint_id)) => (self.acknowledge)(ack, checkpoint_id),
            None => {
                tracing::debug!(
                    from = %self.source,
                    to = %self.target,
                    ?answer,
                    "cross-partition command not taken; it will be delivered again"
                );
                self.trouble.store(true, Ordering::Relaxed);
            }
        }
    }
}
