//! The simulated network under Rill's [`RaftTransport`]: every raft RPC is delayed,
//! dropped, duplicated or cut as the seed decides, and reaches the target's real
//! [`RaftService`]. Delays are independent per message, so messages overtake each other.
//! A lost request or reply looks as it does on a real network: the caller times out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use parking_lot::RwLock;
use rill_protocol::PartitionId;
use rill_raft::{RaftNodeId, RaftRpcKind, RaftService, RaftTransport, TransportFailure};

use crate::rng::{FNV_START, fnv};
use crate::world::{NodeId, SharedWorld};

/// The nodes' raft services, reached by node id.
#[derive(Clone, Default)]
pub struct SimNetwork {
    services: Arc<RwLock<BTreeMap<NodeId, RaftService>>>,
}

impl SimNetwork {
    pub fn attach(&self, node: NodeId, service: RaftService) {
        self.services.write().insert(node, service);
    }

    /// The node is down: requests to it go unanswered.
    pub fn detach(&self, node: NodeId) {
        self.services.write().remove(&node);
    }

    fn service(&self, node: NodeId) -> Option<RaftService> {
        self.services.read().get(&node).cloned()
    }
}

/// One node's end of the network.
pub struct SimTransport {
    pub from: NodeId,
    pub network: SimNetwork,
    pub world: SharedWorld,
}

/// What the seed decided for one message.
struct Fate {
    id: u64,
    delay: Duration,
    dropped: bool,
    duplicate: Option<Duration>,
}

fn decide(world: &SharedWorld, from: NodeId, to: NodeId, what: &str, payload: &[u8]) -> Fate {
    let mut w = world.lock();
    let faults = w.faults.clone();
    w.next_message += 1;
    let id = w.next_message;
    let delay = Duration::from_millis(w.rng.between(faults.min_delay_ms, faults.max_delay_ms));
    let dropped = w.rng.chance(faults.drop_per_mille);
    let duplicate = w.rng.chance(faults.duplicate_per_mille).then(|| {
        Duration::from_millis(w.rng.between(faults.min_delay_ms, faults.max_delay_ms * 2))
    });
    w.trace(format_args!(
        "msg {id} n{from}->n{to} {what} {}B #{:016x} delay {}ms{}{}",
        payload.len(),
        fnv(FNV_START, payload),
        delay.as_millis(),
        if dropped { " dropped" } else { "" },
        if duplicate.is_some() {
            " duplicated"
        } else {
            ""
        },
    ));
    Fate {
        id,
        delay,
        dropped,
        duplicate,
    }
}

/// Whether the link `from -> to` is cut now; traces the loss of message `id` if so.
fn lost_on_cut_link(world: &SharedWorld, from: NodeId, to: NodeId, id: u64, what: &str) -> bool {
    let mut w = world.lock();
    let cut = w.cut.contains(&(from, to));
    if cut {
        w.trace(format_args!(
            "msg {id} {what} lost on the cut link n{from}->n{to}"
        ));
    }
    cut
}

impl SimTransport {
    async fn exchange(
        self: Arc<Self>,
        to: NodeId,
        partition: PartitionId,
        kind: RaftRpcKind,
        payload: Bytes,
    ) -> Result<Bytes, TransportFailure> {
        let from = self.from;
        if self.network.service(from).is_none() {
            // This node is down: nothing leaves it.
            return std::future::pending().await;
        }
        let what = format!("{kind:?}");
        let fate = decide(&self.world, from, to, &what, &payload);
        if let Some(later) = fate.duplicate {
            // The copy arrives on its own; its reply goes nowhere.
            let (network, world, payload) =
                (self.network.clone(), self.world.clone(), payload.clone());
            let id = fate.id;
            tokio::spawn(async move {
                tokio::time::sleep(later).await;
                if lost_on_cut_link(&world, from, to, id, "copy") {
                    return;
                }
                if let Some(service) = network.service(to) {
                    world.lock().trace(format_args!("msg {id} copy delivered"));
                    let _ = service.handle(partition, payload).await;
                }
            });
        }
        tokio::time::sleep(fate.delay).await;
        if fate.dropped || lost_on_cut_link(&self.world, from, to, fate.id, "request") {
            return std::future::pending().await;
        }
        let Some(service) = self.network.service(to) else {
            return std::future::pending().await;
        };
        let reply = service
            .handle(partition, payload)
            .await
            .map_err(TransportFailure::Remote)?;
        if self.network.service(to).is_none() {
            // It went down while handling: its answer never leaves.
            return std::future::pending().await;
        }
        let back = decide(&self.world, to, from, "reply", &reply);
        tokio::time::sleep(back.delay).await;
        if back.dropped || lost_on_cut_link(&self.world, to, from, back.id, "reply") {
            return std::future::pending().await;
        }
        Ok(reply)
    }
}

/// A handle on one node's end that raft's network factory can hold.
#[derive(Clone)]
pub struct TransportHandle(pub Arc<SimTransport>);

impl RaftTransport for TransportHandle {
    fn request(
        &self,
        target: RaftNodeId,
        partition: PartitionId,
        kind: RaftRpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<Bytes, TransportFailure>> {
        let transport = self.0.clone();
        Box::pin(async move {
            tokio::time::timeout(
                timeout,
                transport.exchange(target, partition, kind, payload),
            )
            .await
            .unwrap_or(Err(TransportFailure::Timeout))
        })
    }
}
