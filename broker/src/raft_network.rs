//! The raft network of a clustered node, over Rill's internal transport.
//!
//! ```text
//!   partition p's raft ── PeerClient ──► TransportRaft ──► Transport: one connection per peer
//!                                        (RPC kind → service,        │ frames carry the
//!                                         partition id in the frame) │ partition id
//!   peer's Transport ──► RaftHandler ──► RaftService ──► partition p's raft on the peer
//! ```
//!
//! Outbound, every partition's raft RPCs to a peer share the node's one multiplexed
//! connection to it; the RPC kind picks the service (`RAFT_APPEND`, `RAFT_VOTE`,
//! `RAFT_SNAPSHOT`) and the partition id travels in each frame header. Inbound, the
//! handler serves those services by handing the payload to the node's [`RaftService`],
//! which finds the partition's raft.
//!
//! An append-entries request too large for one frame is not sent: openraft retries it
//! with fewer entries (`RaftTransport::max_payload`).
//!
//! Batching and back-pressure are the transport's: frames queued for a peer go out in one
//! write, at most `max_in_flight_per_peer` requests per peer are queued or awaiting an
//! answer (a request beyond that fails when its raft timeout runs out, and raft retries),
//! and a node whose handlers are all busy stops reading, so TCP pushes back on the sender.
//!
//! Peers are named by `cluster.initial-contact-points`, often DNS names (a StatefulSet's
//! pods). A name that does not resolve at start does not stop the broker: it is looked up
//! again every [`RESOLVE_INTERVAL`], as is every other peer's, so a pod that restarted at
//! a new IP is reached there.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use prometheus::Registry;
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};
use rill_raft::{RaftRpcKind, RaftService, RaftTransport, TransportFailure};
use rill_tls::{ClusterTls, IdentityFiles, PemFile};
use rill_transport::{
    FRAME_HEADER_LEN, Handler, ServiceId, Transport, TransportConfig, TransportError,
};
use tracing::Instrument;

use crate::error::{Error, NetworkError, Result};

/// The service a raft RPC is sent to.
pub fn raft_service_id(kind: RaftRpcKind) -> ServiceId {
    match kind {
        RaftRpcKind::AppendEntries => ServiceId::RAFT_APPEND,
        RaftRpcKind::Vote => ServiceId::RAFT_VOTE,
        RaftRpcKind::InstallSnapshot => ServiceId::RAFT_SNAPSHOT,
    }
}

/// How often the peers' internal addresses are looked up again: a peer whose name does
/// not resolve at start (a pod not scheduled yet) is added once it does, and a peer that
/// came back at another IP (a restarted pod) is reached there.
pub const RESOLVE_INTERVAL: Duration = Duration::from_secs(5);

/// Looks up a `host:port` address; `None` while it does not resolve.
pub type Resolver = Arc<dyn Fn(String) -> BoxFuture<'static, Option<SocketAddr>> + Send + Sync>;

/// The system's resolver (DNS, /etc/hosts).
pub fn system_resolver() -> Resolver {
    Arc::new(|address| {
        Box::pin(async move {
            tokio::net::lookup_host(address)
                .await
                .ok()
                .and_then(|mut found| found.next())
        })
    })
}

/// A node's raft network: its internal transport, serving the node's partitions.
#[derive(Clone)]
pub struct RaftNetwork {
    transport: Transport,
    /// Looks the peers' addresses up again (see [`RaftNetwork::follow_addresses`]).
    follower: Arc<parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>>,
    /// The peers' addresses the follower looks up (brokers a cluster change added too).
    followed: Arc<parking_lot::RwLock<BTreeMap<NodeId, String>>>,
    max_payload: usize,
    /// Mutual TLS of the cluster (`cluster.tls`), shared with the command port.
    tls: Option<ClusterTls>,
    /// Serves the services other than raft's (the command API between brokers).
    others: Arc<OnceLock<Arc<dyn Handler>>>,
    /// Serves the cluster configuration service (first while the node discovers its
    /// configuration, then the configuration's).
    cluster: ClusterService,
}

type ClusterService = Arc<parking_lot::RwLock<Option<Arc<dyn Handler>>>>;

impl RaftNetwork {
    /// Listens on `listen`, serves raft RPCs for the partitions registered in `service`,
    /// and knows `peers` by their internal addresses. Its tasks run on the runtime this
    /// is called on.
    pub async fn start(
        node: NodeId,
        listen: SocketAddr,
        peers: &BTreeMap<NodeId, SocketAddr>,
        service: RaftService,
        registry: Option<&Registry>,
        tls: Option<ClusterTls>,
    ) -> Result<RaftNetwork> {
        let mut config = TransportConfig::new(node, listen);
        config.tls = tls.clone();
        let max_payload = config.max_frame_size - FRAME_HEADER_LEN;
        let others: Arc<OnceLock<Arc<dyn Handler>>> = Arc::default();
        let cluster: ClusterService = Arc::default();
        let handler = RaftHandler {
            service,
            others: others.clone(),
            cluster: cluster.clone(),
        };
        let transport = Transport::start(config, Arc::new(handler))
            .await
            .map_err(|e| match e {
                TransportError::Bind { addr, source } => Error::Config(bind_failure(addr, &source)),
                source => Error::Network(NetworkError::Transport { listen, source }),
            })?;
        if let Some(registry) = registry {
            transport
                .metrics()
                .register(registry)
                .map_err(|e| Error::Network(NetworkError::Metrics(e)))?;
        }
        for (&peer, &addr) in peers {
            if peer != node {
                transport.set_peer(peer, addr);
            }
        }
        Ok(RaftNetwork {
            transport,
            follower: Arc::default(),
            followed: Arc::default(),
            max_payload,
            tls,
            others,
            cluster,
        })
    }

    /// Looks up every peer's address (`addresses`, by node id; `known` holds the ones
    /// already given to the transport) every `interval`, and points the transport at
    /// what it finds when that changed. Runs on the current runtime until
    /// [`RaftNetwork::shutdown`].
    pub fn follow_addresses(
        &self,
        addresses: BTreeMap<NodeId, String>,
        mut known: BTreeMap<NodeId, SocketAddr>,
        resolver: Resolver,
        interval: Duration,
    ) {
        let transport = self.transport.clone();
        let own = transport.node_id();
        self.followed.write().extend(addresses);
        let followed = self.followed.clone();
        let follow = async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let addresses = followed.read().clone();
                for (&peer, address) in &addresses {
                    if peer == own {
                        continue;
                    }
                    let Some(addr) = resolver(address.clone()).await else {
                        tracing::debug!(%peer, %address, "peer's internal address does not resolve");
                        continue;
                    };
                    match known.insert(peer, addr) {
                        Some(old) if old == addr => continue,
                        Some(old) => {
                            tracing::info!(%peer, %address, %old, new = %addr, "peer's internal address resolves elsewhere now; reconnecting")
                        }
                        None => {
                            tracing::info!(%peer, %address, %addr, "peer's internal address resolves now")
                        }
                    }
                    transport.set_peer(peer, addr);
                }
            }
        };
        let task = tokio::spawn(follow.in_current_span());
        if let Some(previous) = self.follower.lock().replace(task) {
            previous.abort();
        }
    }

    /// Reaches `node` at `address` from now on (a broker a cluster change added),
    /// looked up now and again every `RESOLVE_INTERVAL` like the contact points.
    pub async fn add_peer(&self, node: NodeId, address: String) {
        if node == self.transport.node_id() {
            return;
        }
        self.followed.write().insert(node, address.clone());
        match system_resolver()(address.clone()).await {
            Some(addr) => self.transport.set_peer(node, addr),
            None => {
                tracing::info!(%node, %address, "a new broker's internal address does not resolve yet")
            }
        }
    }

    /// Serves every service other than raft's with `handler` from now on (brokers call
    /// each other's command API over the internal port). Only the first call counts.
    pub fn serve_others(&self, handler: Arc<dyn Handler>) {
        let _ = self.others.set(handler);
    }

    /// Serves the cluster configuration service with `handler` from now on, in place of
    /// the one before.
    pub fn serve_cluster(&self, handler: Arc<dyn Handler>) {
        *self.cluster.write() = Some(handler);
    }

    /// Starts the internal transport of a node of a cluster: it listens on
    /// `cluster.host:cluster.internal-port` and reaches the other nodes at `addresses`
    /// (every node's internal address; looked up again every `RESOLVE_INTERVAL`).
    pub async fn start_for_node(
        config: &RillConfig,
        addresses: &BTreeMap<NodeId, String>,
        service: RaftService,
        registry: &Registry,
    ) -> Result<RaftNetwork> {
        let node = NodeId(config.cluster.node_id);
        let host = config.cluster.host.trim_matches(['[', ']']);
        let listen = resolve(
            "the internal (cluster.host, cluster.internal-port)",
            &format!("{host}:{}", config.cluster.internal_port),
        )
        .await?;
        let resolver = system_resolver();
        let mut peers = BTreeMap::new();
        for (&peer, address) in addresses {
            if peer == node {
                continue;
            }
            match resolver(address.clone()).await {
                Some(addr) => {
                    peers.insert(peer, addr);
                }
                None => tracing::warn!(
                    %peer, %address,
                    "cannot resolve node {peer}'s internal address {address} (from \
                     cluster.initial-contact-points) yet; looking it up again every {}s",
                    RESOLVE_INTERVAL.as_secs()
                ),
            }
        }
        let tls = cluster_tls(config)?;
        if let Some(own) = addresses.get(&node) {
            check_own_address_is_free(node, own, tls.clone()).await?;
        }
        let network =
            RaftNetwork::start(node, listen, &peers, service, Some(registry), tls).await?;
        network.follow_addresses(addresses.clone(), peers, resolver, RESOLVE_INTERVAL);
        Ok(network)
    }

    /// The address the internal port is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.transport.local_addr()
    }

    /// What the node's partitions send their raft RPCs through.
    pub fn raft_transport(&self) -> Arc<dyn RaftTransport> {
        Arc::new(TransportRaft {
            transport: self.transport.clone(),
            max_payload: self.max_payload,
        })
    }

    /// The cluster's mutual TLS, when `cluster.tls.enabled`.
    pub fn tls(&self) -> Option<&ClusterTls> {
        self.tls.as_ref()
    }

    /// The transport underneath (metrics, stats).
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Closes the internal port and every connection.
    pub async fn shutdown(&self) {
        if let Some(follower) = self.follower.lock().take() {
            follower.abort();
        }
        self.transport.shutdown().await;
    }
}

/// The cluster's mutual TLS (`cluster.tls.*`) when it is enabled: the files are checked
/// now (an error names the setting) and reloaded when they change. Must be called on a
/// tokio runtime. Brokers and gateways alike use it on the internal and command ports.
pub fn cluster_tls(config: &RillConfig) -> Result<Option<ClusterTls>> {
    let tls = &config.cluster.tls;
    if !tls.enabled {
        return Ok(None);
    }
    let identity = IdentityFiles::new(
        "cluster.tls",
        tls.certificate.clone().unwrap_or_default(),
        tls.private_key.clone().unwrap_or_default(),
    );
    let ca = PemFile::new("cluster.tls.ca", tls.ca.clone().unwrap_or_default());
    ClusterTls::load(identity, ca, rill_tls::DEFAULT_RELOAD_INTERVAL)
        .map(Some)
        .map_err(|e| Error::Config(e.to_string()))
}

/// How long a starting broker waits for an answer at its own contact point.
const OWN_ADDRESS_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Before binding: a Rill node answering at this node's own contact point means another
/// broker runs with this node id (or the contact points are in the wrong order). Either
/// way, starting would split the node in two, so refuse with the fix. Nothing answering,
/// or something that is not Rill, is left to the bind to judge.
async fn check_own_address_is_free(node: NodeId, own: &str, tls: Option<ClusterTls>) -> Result<()> {
    let Ok(addr) = resolve("this node's", own).await else {
        // Not resolvable yet (e.g. DNS of a starting pod): nobody can answer there.
        return Ok(());
    };
    match Transport::identify(addr, OWN_ADDRESS_PROBE_TIMEOUT, tls).await {
        Ok(found) if found == node => Err(Error::Config(format!(
            "another broker already runs as node {node} at {own}: give each broker its own \
             cluster.node-id (node ids run from 0 to cluster.size - 1, in the order of \
             cluster.initial-contact-points)"
        ))),
        Ok(found) => Err(Error::Config(format!(
            "node {found} answers at {own}, the address cluster.initial-contact-points gives \
             node {node}: list every broker's internal address in node-id order (node 0 \
             first), and give each broker the cluster.node-id of its position"
        ))),
        Err(error) => {
            tracing::debug!(%node, %own, %error, "no Rill node answers at this node's address");
            Ok(())
        }
    }
}

/// A failed bind of the internal port, with the setting to change.
fn bind_failure(addr: SocketAddr, source: &std::io::Error) -> String {
    if source.kind() == std::io::ErrorKind::AddrInUse {
        format!(
            "cannot listen on {addr} for cluster.internal-port: the address is in use by \
             another process; stop it, or choose another cluster.internal-port (and change \
             this node's entry in cluster.initial-contact-points to match)"
        )
    } else {
        format!(
            "cannot listen on {addr} (cluster.host, cluster.internal-port): {source}; set \
             cluster.host to an address of this machine and cluster.internal-port to a \
             free port"
        )
    }
}

async fn resolve(what: &str, address: &str) -> Result<SocketAddr> {
    tokio::net::lookup_host(address)
        .await
        .ok()
        .and_then(|mut found| found.next())
        .ok_or_else(|| Error::Config(format!("cannot resolve {what} address {address:?}")))
}

/// Sends raft RPCs over the internal transport.
struct TransportRaft {
    transport: Transport,
    max_payload: usize,
}

fn failure(error: TransportError) -> TransportFailure {
    match error {
        TransportError::Timeout { .. } => TransportFailure::Timeout,
        TransportError::Remote(reason) => TransportFailure::Remote(reason),
        // Unreachable, connection lost, back-pressure, unknown peer, shutting down, a
        // frame too large: raft treats them all as a peer it cannot reach now and retries.
        other => TransportFailure::Unreachable(other.to_string()),
    }
}

impl RaftTransport for TransportRaft {
    fn request(
        &self,
        target: u64,
        partition: PartitionId,
        kind: RaftRpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<Bytes, TransportFailure>> {
        let transport = self.transport.clone();
        Box::pin(async move {
            let node = u32::try_from(target)
                .map(NodeId)
                .map_err(|_| TransportFailure::Unreachable(format!("no node {target}")))?;
            transport
                .request(node, raft_service_id(kind), partition, payload, timeout)
                .await
                .map_err(failure)
        })
    }

    fn max_payload(&self) -> usize {
        self.max_payload
    }
}

/// Serves the raft services of the internal port, and hands the others on.
struct RaftHandler {
    service: RaftService,
    others: Arc<OnceLock<Arc<dyn Handler>>>,
    cluster: ClusterService,
}

impl Handler for RaftHandler {
    fn handle(
        &self,
        from: NodeId,
        service: ServiceId,
        partition: PartitionId,
        payload: Bytes,
    ) -> BoxFuture<'static, std::result::Result<Bytes, String>> {
        match service {
            ServiceId::RAFT_APPEND | ServiceId::RAFT_VOTE | ServiceId::RAFT_SNAPSHOT => {
                let raft = self.service.clone();
                Box::pin(async move { raft.handle(partition, payload).await })
            }
            ServiceId::CLUSTER => {
                let handler = self.cluster.read().clone();
                match handler {
                    Some(handler) => handler.handle(from, service, partition, payload),
                    None => Box::pin(async { Err("the cluster service is not up yet".to_owned()) }),
                }
            }
            other => match self.others.get() {
                Some(handler) => handler.handle(from, other, partition, payload),
                None => Box::pin(async move {
                    Err(format!(
                        "service {other} is not served on the internal port (yet)"
                    ))
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A resolver backed by a map the test changes, as DNS changes under a cluster.
    fn map_resolver(names: Arc<parking_lot::Mutex<HashMap<String, SocketAddr>>>) -> Resolver {
        Arc::new(move |address| {
            let found = names.lock().get(&address).copied();
            Box::pin(async move { found })
        })
    }

    async fn wait_for_peer(network: &RaftNetwork, peer: NodeId, addr: SocketAddr) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while network.transport().peer_addr(peer) != Some(addr) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "node {peer} is at {:?}, not {addr}",
                network.transport().peer_addr(peer)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_peer_is_added_once_its_name_resolves_and_followed_when_it_moves() {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let no_peers = BTreeMap::new();
        let start = |node| {
            RaftNetwork::start(
                NodeId(node),
                loopback,
                &no_peers,
                RaftService::new(),
                None,
                None,
            )
        };
        let zero = start(0).await.unwrap();
        let one = start(1).await.unwrap();
        let one_again = start(1).await.unwrap();
        let names = Arc::new(parking_lot::Mutex::new(HashMap::new()));
        let addresses = BTreeMap::from([
            (NodeId(0), "broker-0:26502".to_owned()),
            (NodeId(1), "broker-1:26502".to_owned()),
        ]);
        zero.follow_addresses(
            addresses,
            BTreeMap::new(),
            map_resolver(names.clone()),
            Duration::from_millis(20),
        );

        // Not resolvable yet: unknown to the transport, and nothing fails.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(zero.transport().peer_addr(NodeId(1)), None);

        names
            .lock()
            .insert("broker-1:26502".into(), one.local_addr());
        wait_for_peer(&zero, NodeId(1), one.local_addr()).await;
        assert_eq!(
            zero.transport().probe(one.local_addr()).await.unwrap(),
            NodeId(1)
        );

        // The peer restarts elsewhere (a pod with a new IP): followed.
        one.shutdown().await;
        names
            .lock()
            .insert("broker-1:26502".into(), one_again.local_addr());
        wait_for_peer(&zero, NodeId(1), one_again.local_addr()).await;

        // Its own entry is never given to the transport.
        names
            .lock()
            .insert("broker-0:26502".into(), one_again.local_addr());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(zero.transport().peer_addr(NodeId(0)), None);
        zero.shutdown().await;
        one_again.shutdown().await;
    }
}
