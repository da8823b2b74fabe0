//! The public face: start, peers, requests, shutdown.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::RwLock;
use rill_protocol::version::{Announcement, REFUSAL_PREFIX};
use rill_protocol::{NodeId, PartitionId};
use tokio::net::TcpListener;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::frame::{ANY_NODE, FRAME_HEADER_LEN};
use crate::inbound::accept_loop;
use crate::metrics::{TransportMetrics, TransportStats};
use crate::outbound::{Peer, connect};
use crate::{Handler, Result, ServiceId, TransportConfig, TransportError};

/// What every task of one transport shares.
pub(crate) struct Shared {
    pub config: TransportConfig,
    pub handler: Arc<dyn Handler>,
    pub metrics: TransportMetrics,
    /// Cancelled by `shutdown` (or when the last `Transport` handle is dropped).
    pub cancel: CancellationToken,
    /// Every task this transport spawns, so `shutdown` can wait for them.
    pub tasks: TaskTracker,
    /// The runtime `start` was called on; all network I/O runs there.
    pub runtime: Handle,
    /// Distinguishes this process from another one configured with the same node id.
    pub instance: u64,
    /// The address configured for each peer (see [`Transport::set_peer`]), so a peer
    /// that connects from elsewhere can be noticed.
    pub peer_addrs: RwLock<HashMap<NodeId, SocketAddr>>,
    /// What each peer announced in its latest version handshake (either direction).
    pub peer_versions: RwLock<HashMap<NodeId, Announcement>>,
}

impl Shared {
    /// State for a transport on the current runtime.
    fn new(
        config: TransportConfig,
        handler: Arc<dyn Handler>,
        metrics: TransportMetrics,
    ) -> Shared {
        Shared {
            config,
            handler,
            metrics,
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            runtime: Handle::current(),
            instance: instance_id(),
            peer_addrs: RwLock::new(HashMap::new()),
            peer_versions: RwLock::new(HashMap::new()),
        }
    }
}

/// Why a handshake between two processes with the same node id is refused.
pub(crate) fn duplicate_node_id(node: NodeId) -> String {
    format!(
        "another process also has node id {node}: two nodes are configured with the same id; \
         give each broker a distinct cluster.node-id"
    )
}

/// A per-process random number, from the standard library's randomly seeded hasher. It
/// only tells processes apart in the handshake and never reaches replicated state.
fn instance_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

impl Shared {
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn_on(task, &self.runtime);
    }
}

/// A node's endpoint of the internal transport. Cheap to clone; all clones share one
/// listener and one connection per peer.
///
/// Connections are per direction: this node's requests to a peer and their responses
/// travel on the connection this node opened; the peer's requests to this node travel on
/// the one the peer opened. So a pair of nodes that both send has two connections.
#[derive(Clone)]
pub struct Transport {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    peers: RwLock<HashMap<NodeId, Arc<Peer>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone without `shutdown`: stop the tasks anyway.
        self.shared.cancel.cancel();
    }
}

impl Transport {
    /// Binds the listener and starts accepting peers. All tasks of this transport run on
    /// the tokio runtime this is called on.
    pub async fn start(config: TransportConfig, handler: Arc<dyn Handler>) -> Result<Transport> {
        config.validate()?;
        let metrics = TransportMetrics::new(&config.metrics_name).map_err(|error| {
            TransportError::InvalidConfig {
                problems: format!("metrics_name {:?}: {error}", config.metrics_name),
            }
        })?;
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| TransportError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let local_addr = listener.local_addr()?;
        info!(node = %config.node_id, %local_addr, "transport listening");
        let shared = Arc::new(Shared::new(config, handler, metrics));
        shared.spawn(accept_loop(listener, shared.clone()));
        Ok(Transport {
            inner: Arc::new(Inner {
                shared,
                local_addr,
                peers: RwLock::new(HashMap::new()),
            }),
        })
    }

    /// The address the listener is bound to (with the real port when `listen` used 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr
    }

    pub fn node_id(&self) -> NodeId {
        self.inner.shared.config.node_id
    }

    /// Adds a peer, or changes its address. A changed address drops the current
    /// connection (its in-flight requests fail) and the next request connects to the new
    /// one. Connections are opened lazily, by the first request.
    pub fn set_peer(&self, node: NodeId, addr: SocketAddr) {
        self.inner.shared.peer_addrs.write().insert(node, addr);
        let mut peers = self.inner.peers.write();
        match peers.get(&node) {
            Some(peer) => peer.set_addr(addr),
            None => {
                peers.insert(node, Peer::start(node, addr, self.inner.shared.clone()));
            }
        }
    }

    /// Asks whichever node listens at `addr` for its id (a gateway that knows only
    /// contact-point addresses uses this before `set_peer`). Opens and closes a
    /// connection of its own, within `connect_timeout`.
    pub async fn probe(&self, addr: SocketAddr) -> Result<NodeId> {
        let shared = &self.inner.shared;
        if shared.cancel.is_cancelled() {
            return Err(TransportError::ShuttingDown);
        }
        match connect(shared, None, addr).await {
            Ok((_reader, _writer, node)) => Ok(node),
            Err(reason) => Err(TransportError::Probe { addr, reason }),
        }
    }

    /// Asks whichever node listens at `addr` for its id, without a transport of one's
    /// own: a broker checks before it binds that no other process serves its address.
    /// Gives up after `connect_timeout`; `Err` also when what answers is not a Rill
    /// transport.
    /// `tls`: the cluster's TLS, when members speak it.
    pub async fn identify(
        addr: SocketAddr,
        connect_timeout: Duration,
        tls: Option<rill_tls::ClusterTls>,
    ) -> Result<NodeId> {
        // Nothing listens and nothing is served: only the dialing side is used.
        let mut config = TransportConfig::new(NodeId(ANY_NODE), addr);
        config.connect_timeout = connect_timeout;
        config.tls = tls;
        config.metrics_name = "identify".to_owned();
        let metrics = TransportMetrics::new(&config.metrics_name).map_err(|error| {
            TransportError::InvalidConfig {
                problems: format!("metrics: {error}"),
            }
        })?;
        let no_service = |_: NodeId,
                          service: ServiceId,
                          _: PartitionId,
                          _: Bytes|
         -> futures::future::BoxFuture<
            'static,
            std::result::Result<Bytes, String>,
        > {
            Box::pin(async move { Err(format!("nothing serves {service} here")) })
        };
        let shared = Shared::new(config, Arc::new(no_service), metrics);
        match connect(&shared, None, addr).await {
            Ok((_reader, _writer, node)) => Ok(node),
            Err(reason) => Err(TransportError::Probe { addr, reason }),
        }
    }

    /// What `node` announced in its latest version handshake with this node (on a
    /// connection either side opened), if it has connected since this transport started.
    pub fn peer_version(&self, node: NodeId) -> Option<Announcement> {
        self.inner.shared.peer_versions.read().get(&node).cloned()
    }

    /// What every peer announced, by node id.
    pub fn peer_versions(&self) -> HashMap<NodeId, Announcement> {
        self.inner.shared.peer_versions.read().clone()
    }

    /// What this node announces.
    pub fn announcement(&self) -> &Announcement {
        &self.inner.shared.config.announcement
    }

    /// Asks `node` for its versions now (connecting first if need be), and records the
    /// answer. [`TransportError::Incompatible`] when the two do not talk.
    pub async fn announce(&self, node: NodeId, timeout: Duration) -> Result<Announcement> {
        let ours = Bytes::from(self.inner.shared.config.announcement.encode());
        let shared = &self.inner.shared;
        match self
            .request(node, ServiceId::VERSION, PartitionId(0), ours, timeout)
            .await
        {
            Ok(answer) => {
                let theirs = Announcement::decode(&answer)
                    .map_err(|reason| TransportError::InvalidFrame { reason })?;
                crate::version::judge(shared, node, theirs.clone())
                    .map_err(|reason| TransportError::Incompatible { reason })?;
                Ok(theirs)
            }
            Err(TransportError::Remote(message)) if message.starts_with(REFUSAL_PREFIX) => {
                Err(TransportError::Incompatible { reason: message })
            }
            // A build before the handshake does not know the service.
            Err(TransportError::Remote(_)) => {
                crate::version::judge_legacy(shared, node)
                    .map_err(|reason| TransportError::Incompatible { reason })?;
                Ok(Announcement::legacy())
            }
            Err(error) => Err(error),
        }
    }

    /// The address currently known for `node`.
    pub fn peer_addr(&self, node: NodeId) -> Option<SocketAddr> {
        self.inner.peers.read().get(&node).map(|peer| peer.addr())
    }

    /// Sends `payload` to `service` on `node` and waits for the response.
    ///
    /// Everything — waiting for an in-flight slot, connecting, the remote handler — fits
    /// in `timeout`. Errors: [`TransportError::Backpressure`] when no slot frees up in
    /// time, [`TransportError::Unreachable`] when the peer cannot be connected,
    /// [`TransportError::ConnectionLost`] when the connection drops before the response,
    /// [`TransportError::Timeout`], [`TransportError::Remote`] for a handler error.
    pub async fn request(
        &self,
        node: NodeId,
        service: ServiceId,
        partition: PartitionId,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<Bytes> {
        let shared = &self.inner.shared;
        if shared.cancel.is_cancelled() {
            return Err(TransportError::ShuttingDown);
        }
        let size = FRAME_HEADER_LEN + payload.len();
        if size > shared.config.max_frame_size {
            return Err(TransportError::FrameTooLarge {
                size,
                max: shared.config.max_frame_size,
            });
        }
        let peer = self
            .inner
            .peers
            .read()
            .get(&node)
            .cloned()
            .ok_or(TransportError::UnknownPeer { node })?;
        peer.request(service, partition, payload, timeout).await
    }

    /// Stops accepting connections and requests, fails pending outgoing requests with
    /// [`TransportError::ShuttingDown`], lets running inbound handlers finish and send
    /// their responses for up to `shutdown_grace`, then closes every connection.
    pub async fn shutdown(&self) {
        let shared = &self.inner.shared;
        shared.cancel.cancel();
        for peer in self.inner.peers.read().values() {
            peer.close();
        }
        shared.tasks.close();
        let wait = shared.config.shutdown_grace + Duration::from_millis(100);
        if tokio::time::timeout(wait, shared.tasks.wait())
            .await
            .is_err()
        {
            warn!(
                node = %shared.config.node_id,
                tasks = shared.tasks.len(),
                "transport tasks still running after the shutdown grace; leaving them"
            );
        } else {
            info!(node = %shared.config.node_id, "transport shut down");
        }
    }

    pub fn metrics(&self) -> &TransportMetrics {
        &self.inner.shared.metrics
    }

    pub fn stats(&self) -> TransportStats {
        self.inner.shared.metrics.stats()
    }
}
