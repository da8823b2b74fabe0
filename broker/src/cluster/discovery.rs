//! A broker without a stored configuration (a new data directory, or a wiped one) asks
//! its contact points for theirs before it takes the one its settings describe: the
//! running cluster may have changed since it was created
//! (docs/decisions/replica-initialization.md).
//!
//! ```text
//!   every ROUND: ask each contact point (a sync from version 0)
//!     ├─ any configuration ──────────────► adopt the highest version
//!     ├─ a majority of the contact points
//!     │  (this broker among them) have none
//!     │  either: the cluster is being created ► the initial configuration
//!     └─ else (peers down, starting) ─────► again, until
//!                                            cluster.configuration-discovery-timeout
//!                                            (10 s) ► the initial configuration
//! ```
//!
//! While it asks, this broker answers its peers' sync requests with
//! [`NOT_CONFIGURED`] ([`Discovering`]), so that brokers started together recognize a
//! cluster being created at once rather than after the timeout.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use rill_protocol::{NodeId, PartitionId};
use rill_transport::{Handler, ServiceId, Transport, TransportError};

use super::configuration::ClusterConfiguration;
use super::requests::{ClusterRequest, encode};

/// Pause between two rounds of asking.
const ROUND: Duration = Duration::from_millis(200);
/// How long one peer may take to answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(1);

/// A discovering broker's answer to any cluster request.
pub const NOT_CONFIGURED: &str =
    "this broker has no cluster configuration yet: it is asking its peers for theirs";

/// Serves the cluster service while the broker discovers its configuration.
pub struct Discovering;

impl Handler for Discovering {
    fn handle(
        &self,
        _from: NodeId,
        _service: ServiceId,
        _partition: PartitionId,
        _payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        Box::pin(async { Err(NOT_CONFIGURED.to_owned()) })
    }
}

/// What asking the peers found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discovered {
    /// The highest configuration a peer had, and that peer.
    Found {
        configuration: ClusterConfiguration,
        from: NodeId,
    },
    /// A majority of the contact points has no configuration either: a new cluster.
    Creating,
    /// No peer told its configuration within the timeout.
    TimedOut,
}

/// One peer's answer.
enum Answer {
    Configuration(ClusterConfiguration),
    NotConfigured,
    Unknown,
}

fn answer(result: Result<Bytes, TransportError>) -> Answer {
    match result {
        Ok(bytes) if !bytes.is_empty() => {
            match ClusterConfiguration::from_json(&String::from_utf8_lossy(&bytes)) {
                Ok(configuration) => Answer::Configuration(configuration),
                Err(e) => {
                    tracing::warn!(error = %e, "a peer answered with a malformed configuration");
                    Answer::Unknown
                }
            }
        }
        Err(TransportError::Remote(reason)) if reason == NOT_CONFIGURED => Answer::NotConfigured,
        // Down, starting (its cluster service not up yet), or an answer that says
        // nothing.
        _ => Answer::Unknown,
    }
}

/// Asks `contact_points` (the cluster as created: node id → address) for their
/// configuration through `transport` until one answers with one, a majority of them is
/// known to have none (counting this broker, `own`, if it is one of them), or `timeout`
/// runs out.
pub async fn discover(
    transport: &Transport,
    own: NodeId,
    contact_points: &BTreeMap<NodeId, String>,
    timeout: Duration,
) -> Discovered {
    let peers: Vec<NodeId> = contact_points
        .keys()
        .copied()
        .filter(|&n| n != own)
        .collect();
    let deadline = tokio::time::Instant::now() + timeout;
    let payload = encode(&ClusterRequest::Sync {
        version: 0,
        announce: None,
    });
    let mut rounds = 0u32;
    loop {
        rounds += 1;
        let asks = peers.iter().map(|&peer| {
            let payload = payload.clone();
            async move {
                let result = transport
                    .request(
                        peer,
                        ServiceId::CLUSTER,
                        PartitionId(0),
                        payload,
                        ASK_TIMEOUT,
                    )
                    .await;
                (peer, answer(result))
            }
        });
        let answers = futures::future::join_all(asks).await;
        let mut best: Option<(ClusterConfiguration, NodeId)> = None;
        let mut not_configured: BTreeSet<NodeId> = BTreeSet::new();
        if contact_points.contains_key(&own) {
            not_configured.insert(own);
        }
        for (peer, answer) in answers {
            match answer {
                Answer::Configuration(configuration) => {
                    if best
                        .as_ref()
                        .is_none_or(|(b, _)| configuration.version > b.version)
                    {
                        best = Some((configuration, peer));
                    }
                }
                Answer::NotConfigured => {
                    not_configured.insert(peer);
                }
                Answer::Unknown => {}
            }
        }
        if let Some((configuration, from)) = best {
            tracing::debug!(rounds, "a peer told its cluster configuration");
            return Discovered::Found {
                configuration,
                from,
            };
        }
        if !contact_points.is_empty() && not_configured.len() * 2 > contact_points.len() {
            tracing::debug!(rounds, new = ?not_configured, "most contact points have no configuration");
            return Discovered::Creating;
        }
        if tokio::time::Instant::now() + ROUND >= deadline {
            return Discovered::TimedOut;
        }
        tokio::time::sleep(ROUND).await;
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Instant;

    use rill_config::RillConfig;
    use rill_transport::TransportConfig;

    use super::*;
    use crate::cluster::{ClusterState, Operation};

    async fn transport(node: u32, handler: Arc<dyn Handler>) -> Transport {
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        Transport::start(TransportConfig::new(NodeId(node), listen), handler)
            .await
            .unwrap()
    }

    fn settings(dir: &std::path::Path) -> RillConfig {
        let mut config = RillConfig::default();
        config.data.directory = dir.to_path_buf();
        config.cluster.size = 3;
        config.cluster.partitions_count = 3;
        config.cluster.replication_factor = 3;
        config
    }

    /// Node 0 asking nodes 1 and 2 served by `handlers` (node 2 down when `None`).
    async fn ask(
        handlers: [Option<Arc<dyn Handler>>; 2],
        timeout: Duration,
    ) -> (Discovered, Duration) {
        let asking = transport(0, Arc::new(Discovering)).await;
        let mut contact_points = BTreeMap::from([(NodeId(0), String::new())]);
        let mut running = Vec::new();
        for (i, handler) in handlers.into_iter().enumerate() {
            let node = NodeId(i as u32 + 1);
            contact_points.insert(node, String::new());
            match handler {
                Some(handler) => {
                    let peer = transport(node.0, handler).await;
                    asking.set_peer(node, peer.local_addr());
                    running.push(peer);
                }
                None => {
                    // A port nobody listens on.
                    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                    let addr = closed.local_addr().unwrap();
                    drop(closed);
                    asking.set_peer(node, addr);
                }
            }
        }
        let started = Instant::now();
        let found = discover(&asking, NodeId(0), &contact_points, timeout).await;
        let took = started.elapsed();
        asking.shutdown().await;
        for peer in running {
            peer.shutdown().await;
        }
        (found, took)
    }

    #[tokio::test]
    async fn the_highest_configuration_a_peer_tells_is_adopted() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let initial = ClusterState::open(&settings(dirs[0].path())).unwrap();
        let changed = ClusterState::open(&settings(dirs[1].path())).unwrap();
        let newer = changed
            .current()
            .start_change(vec![Operation::BrokerAdd { broker: 3 }], 7);
        assert!(changed.offer(newer.clone()));
        let (found, _) = ask(
            [Some(initial.handler()), Some(changed.handler())],
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(
            found,
            Discovered::Found {
                configuration: newer,
                from: NodeId(2)
            }
        );
    }

    #[tokio::test]
    async fn brokers_started_together_see_a_new_cluster_at_once() {
        let (found, took) = ask(
            [Some(Arc::new(Discovering)), Some(Arc::new(Discovering))],
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(found, Discovered::Creating);
        assert!(took < Duration::from_secs(3), "{took:?}");
        // One new peer and one down: with this broker, still a majority of three.
        let (found, took) = ask([Some(Arc::new(Discovering)), None], Duration::from_secs(10)).await;
        assert_eq!(found, Discovered::Creating);
        assert!(took < Duration::from_secs(3), "{took:?}");
    }

    #[tokio::test]
    async fn without_an_answer_the_broker_waits_for_the_timeout() {
        let (found, took) = ask([None, None], Duration::from_millis(1_500)).await;
        assert_eq!(found, Discovered::TimedOut);
        assert!(took >= Duration::from_millis(1_200), "{took:?}");
        // A peer whose cluster service is not up yet says nothing either way.
        struct NotUp;
        impl Handler for NotUp {
            fn handle(
                &self,
                _: NodeId,
                _: ServiceId,
                _: PartitionId,
                _: Bytes,
            ) -> BoxFuture<'static, Result<Bytes, String>> {
                Box::pin(async { Err("the cluster service is not up yet".to_owned()) })
            }
        }
        let (found, took) = ask([Some(Arc::new(NotUp)), None], Duration::from_millis(1_500)).await;
        assert_eq!(found, Discovered::TimedOut);
        assert!(took >= Duration::from_millis(1_200), "{took:?}");
    }
}
