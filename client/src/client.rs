//! The command-API client: the topology learned from the brokers, and routing to
//! partition leaders, over the transport or, for the broker the client is embedded in,
//! in process. The command API's messages are `rill_protocol`'s.
//!
//! ```text
//!  client ─── COMMAND (submit, query) ──────────► leader of the partition
//!          ── TOPOLOGY (every 250 ms, each broker) ► roles, leaders, terms
//!          ── JOBS_AVAILABLE (long poll, each broker, ► "jobs of type T on partition P"
//!             once a worker long-polls here)
//! ```
//!
//! Brokers are found through contact points (`host:command-port`); each is probed for
//! its node id. A broker that answers `NotLeader` names the leader it knows, so the next
//! try goes there without waiting for the next topology poll. A client embedded in a
//! broker (the gateway embedded in it, its cross-partition sends) asks that broker
//! directly ([`LocalCommandApi`]): requests, topology and jobs news alike. The
//! standalone is such a broker, alone, and its client has no transport at all.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use parking_lot::RwLock;
use rill_protocol::{
    ActivateJobs, ApiAnswer, ApiError, ApiRequest, Command, CommandResponse, JOBS_POLL_TIMEOUT,
    JobsNews, JobsPoll, NodeId, NodeTopology, PartitionId, Query, QueryResult, ReplicaRole, Term,
    codec,
};
use rill_transport::{ServiceId, Transport, TransportError};
use serde::Serialize;
use tokio::sync::{Notify, broadcast};

use crate::types::{
    Answered, BrokerInfo, Error, JobsAvailable, JobsNotice, PartitionHealth, PartitionInfo,
    PartitionRole, Topology, stream_answer,
};

/// How often every broker is asked for its view of the cluster.
const TOPOLOGY_INTERVAL: Duration = Duration::from_millis(250);
const TOPOLOGY_TIMEOUT: Duration = Duration::from_secs(2);
/// How often an idle jobs poller (nobody subscribed) checks whether its client is gone.
const IDLE_POLLER_CHECK: Duration = Duration::from_secs(1);
/// Extra time for the transport beyond what the broker may take itself.
const TRANSPORT_MARGIN: Duration = Duration::from_millis(500);

fn encode<T: Serialize>(value: &T) -> Result<Bytes, Error> {
    codec::encode(value)
        .map(Bytes::from)
        .map_err(|source| Error::Codec {
            what: "encoding a request",
            source,
        })
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    codec::decode(bytes).map_err(|source| Error::Codec {
        what: "decoding an answer",
        source,
    })
}

/// The command API of the broker a client is embedded in. What the client would ask that
/// broker over the network (requests for the partitions it leads, its topology, its
/// jobs news) it asks here directly.
pub trait LocalCommandApi: Send + Sync {
    fn node_id(&self) -> NodeId;
    fn serve(&self, partition: PartitionId, request: ApiRequest) -> BoxFuture<'static, ApiAnswer>;
    /// The broker's view of the cluster, as its `TOPOLOGY` service answers it.
    fn topology(&self) -> NodeTopology;
    /// The broker's jobs news after epoch `after`, as its `JOBS_AVAILABLE` service
    /// answers it (held open until there is some, or the poll timeout passes).
    fn poll_jobs(&self, after: u64) -> BoxFuture<'static, JobsNews>;
}

/// What the client knows about the cluster.
#[derive(Default)]
struct View {
    /// The brokers that answered, by node id.
    nodes: BTreeMap<NodeId, NodeTopology>,
    /// Node ids of contact points, by address.
    probed: BTreeMap<SocketAddr, NodeId>,
    /// Nodes whose jobs-available notifications are being polled (one poller each, for
    /// the client's lifetime).
    polled: BTreeSet<NodeId>,
    /// The leader of each partition (from the highest term reported).
    leaders: BTreeMap<PartitionId, (Term, NodeId)>,
}

/// The brokers a gateway apart learned from the cluster configuration.
#[derive(Default)]
struct AddedBrokers {
    version: u64,
    addresses: BTreeSet<String>,
}

/// Routes commands and queries to partition leaders: the one client of the command API,
/// for a gateway apart, a broker's embedded gateway and the broker's cross-partition
/// sends alike.
pub struct CommandClient {
    /// How other brokers are reached; `None` for a broker alone (the standalone).
    transport: Option<Transport>,
    /// Grows as a broker's own client learns brokers a cluster change added.
    contact_points: RwLock<Vec<String>>,
    /// Node ids known from the configuration, by contact point (a broker's own client);
    /// the others are probed.
    known: RwLock<BTreeMap<String, NodeId>>,
    /// A gateway apart: the brokers cluster changes added, as the newest configuration
    /// a broker reported lists them.
    added: Option<RwLock<AddedBrokers>>,
    view: RwLock<View>,
    partitions_count: AtomicU16,
    message_partitions_count: AtomicU16,
    jobs: broadcast::Sender<JobsNotice>,
    /// Signalled when the first long poll subscribes to `jobs`: until then nobody here
    /// can use a notification, so the pollers ask the brokers for none.
    jobs_wanted: Arc<Notify>,
    /// The broker this client is embedded in, if any.
    local: Option<Arc<dyn LocalCommandApi>>,
}

impl CommandClient {
    /// Starts learning the cluster from `contact_points` (command API addresses), in the
    /// background of the current tokio runtime.
    pub fn start(transport: Transport, contact_points: Vec<String>) -> Arc<CommandClient> {
        CommandClient::start_with(Some(transport), contact_points, BTreeMap::new(), None)
    }

    /// Like [`CommandClient::start`] for a broker, which knows every node's id and
    /// internal address from its configuration: those are not probed, and an unreachable
    /// one is left to the transport to report (it names the node). `local` (among
    /// `nodes`) is asked directly. Without a transport only `local` is reached: a broker
    /// alone, as the standalone is.
    pub fn start_known(
        transport: Option<Transport>,
        nodes: &BTreeMap<NodeId, String>,
        local: Arc<dyn LocalCommandApi>,
    ) -> Arc<CommandClient> {
        let known: BTreeMap<String, NodeId> = nodes
            .iter()
            .map(|(node, address)| (address.clone(), *node))
            .collect();
        CommandClient::start_with(
            transport,
            known.keys().cloned().collect(),
            known,
            Some(local),
        )
    }

    /// A broker's own client: reaches `node` at `address` (its internal port) from now
    /// on, as it does the brokers it started with (a cluster change added `node`).
    pub fn add_broker(&self, node: NodeId, address: String) {
        let mut known = self.known.write();
        if known.get(&address) == Some(&node) {
            return;
        }
        known.insert(address.clone(), node);
        let mut points = self.contact_points.write();
        if !points.contains(&address) {
            points.push(address);
        }
    }

    fn start_with(
        transport: Option<Transport>,
        contact_points: Vec<String>,
        known: BTreeMap<String, NodeId>,
        local: Option<Arc<dyn LocalCommandApi>>,
    ) -> Arc<CommandClient> {
        let (jobs, _) = broadcast::channel(4096);
        let client = Arc::new(CommandClient {
            transport,
            contact_points: RwLock::new(contact_points),
            added: local.is_none().then(RwLock::default),
            known: RwLock::new(known),
            view: RwLock::new(View::default()),
            partitions_count: AtomicU16::new(0),
            message_partitions_count: AtomicU16::new(0),
            jobs,
            jobs_wanted: Arc::new(Notify::new()),
            local,
        });
        let weak = Arc::downgrade(&client);
        tokio::spawn(async move {
            let mut unreachable: BTreeMap<String, String> = BTreeMap::new();
            while let Some(client) = weak.upgrade() {
                client.refresh(&mut unreachable).await;
                drop(client);
                tokio::time::sleep(TOPOLOGY_INTERVAL).await;
            }
        });
        client
    }

    /// Asks every contact point for its topology. Logs once when one becomes
    /// unreachable and once when it is back.
    async fn refresh(self: &Arc<Self>, unreachable: &mut BTreeMap<String, String>) {
        // All at once: one broker that does not answer must not hold up the others.
        let points = self.contact_points.read().clone();
        let results = futures::future::join_all(points.iter().map(|p| self.refresh_one(p))).await;
        for (point, result) in points.iter().zip(results) {
            match result {
                Ok(()) => {
                    if unreachable.remove(point).is_some() {
                        tracing::info!(contact_point = %point, "broker reachable again");
                    }
                }
                Err(reason) => {
                    if unreachable.insert(point.clone(), reason.clone()).is_none() {
                        if self.known.read().contains_key(point) {
                            tracing::debug!(contact_point = %point, %reason, "cannot reach broker; retrying");
                        } else {
                            tracing::warn!(contact_point = %point, %reason, "cannot reach broker; retrying");
                        }
                    }
                }
            }
        }
    }

    async fn refresh_one(self: &Arc<Self>, point: &str) -> Result<(), String> {
        if let Some(local) = self.local_at(point) {
            let node = local.node_id();
            if self.view.write().polled.insert(node) {
                self.spawn_jobs_poller(node);
            }
            self.note_topology(point, node, local.topology());
            return Ok(());
        }
        let Some(transport) = &self.transport else {
            return Err(format!(
                "{point} is another broker, and this one reaches none"
            ));
        };
        let addr = tokio::net::lookup_host(point)
            .await
            .map_err(|e| format!("cannot resolve {point}: {e}"))?
            .next()
            .ok_or_else(|| format!("{point} resolves to no address"))?;
        let known = self.view.read().probed.get(&addr).copied();
        let node = match known {
            Some(node) => node,
            None => {
                let known = self.known.read().get(point).copied();
                let node = match known {
                    Some(node) => node,
                    None => transport.probe(addr).await.map_err(|e| e.to_string())?,
                };
                transport.set_peer(node, addr);
                let first = {
                    let mut view = self.view.write();
                    view.probed.insert(addr, node);
                    view.polled.insert(node)
                };
                if first {
                    self.spawn_jobs_poller(node);
                }
                node
            }
        };
        let answer = transport
            .request(
                node,
                ServiceId::TOPOLOGY,
                PartitionId(0),
                Bytes::new(),
                TOPOLOGY_TIMEOUT,
            )
            .await;
        let topology: NodeTopology = match answer {
            Ok(bytes) => decode(&bytes).map_err(|e| e.to_string())?,
            // This process is stopping: nothing to report about the broker.
            Err(TransportError::ShuttingDown) => return Ok(()),
            Err(e) => {
                // Gone, or the address now belongs to another node (a restart with a new
                // id): forget what it said, including the partitions it led.
                let mut view = self.view.write();
                view.probed.remove(&addr);
                view.nodes.remove(&node);
                view.leaders.retain(|_, (_, leader)| *leader != node);
                return Err(e.to_string());
            }
        };
        self.note_topology(point, node, topology);
        Ok(())
    }

    /// The broker this client is embedded in, if `point` is its address.
    fn local_at(&self, point: &str) -> Option<&Arc<dyn LocalCommandApi>> {
        let local = self.local.as_ref()?;
        (self.known.read().get(point) == Some(&local.node_id())).then_some(local)
    }

    /// Takes in what `node`, reached at `point`, said about the cluster.
    fn note_topology(&self, point: &str, node: NodeId, topology: NodeTopology) {
        // Another broker's answer, processed meanwhile, may have removed this one.
        if !self.contact_points.read().iter().any(|p| p == point) {
            return;
        }
        // Partitions are only ever added: a broker whose copy of the cluster
        // configuration lags behind must not take new partitions away again.
        self.partitions_count
            .fetch_max(topology.partitions_count, Ordering::Relaxed);
        self.message_partitions_count
            .store(topology.message_partitions_count, Ordering::Relaxed);
        let mut view = self.view.write();
        for replica in &topology.partitions {
            if let Some(leader) = replica.leader {
                note_leader(
                    &mut view,
                    PartitionId(replica.partition),
                    replica.term,
                    NodeId(leader),
                );
            }
        }
        drop(view);
        self.follow_added_brokers(&topology);
        // Held while inserting, so that a removal cannot slip in between.
        let points = self.contact_points.read();
        if points.iter().any(|p| p == point) {
            self.view.write().nodes.insert(node, topology);
        }
    }

    /// A gateway apart reaches the brokers a cluster change added from the newest
    /// configuration a broker reports, and stops asking the ones a change removed.
    fn follow_added_brokers(&self, topology: &NodeTopology) {
        let Some(added) = &self.added else {
            return;
        };
        let mut added = added.write();
        if topology.configuration_version <= added.version {
            return;
        }
        added.version = topology.configuration_version;
        let listed: BTreeSet<String> = topology
            .added_brokers
            .iter()
            .map(|(_, address)| address.clone())
            .collect();
        let mut removed = Vec::new();
        {
            let mut points = self.contact_points.write();
            let mut known = self.known.write();
            for gone in added.addresses.difference(&listed) {
                tracing::info!(broker = %gone, "a cluster change removed a broker; no longer asking it");
                points.retain(|point| point != gone);
                removed.extend(known.remove(gone));
            }
            for (node, address) in &topology.added_brokers {
                if !points.contains(address) {
                    tracing::info!(node, broker = %address, "a cluster change added a broker");
                    points.push(address.clone());
                }
                known.insert(address.clone(), NodeId(*node));
            }
        }
        added.addresses = listed;
        // What a removed broker last said must not keep routing requests to it.
        let mut view = self.view.write();
        for node in removed {
            view.nodes.remove(&node);
            view.probed.retain(|_, probed| *probed != node);
            view.leaders.retain(|_, (_, leader)| *leader != node);
        }
    }

    /// Listens for a broker's jobs-available notifications while the client lives.
    fn spawn_jobs_poller(self: &Arc<Self>, node: NodeId) {
        let weak = Arc::downgrade(self);
        let wanted = self.jobs_wanted.clone();
        tokio::spawn(async move {
            let mut after = 0;
            loop {
                let Some(client) = weak.upgrade() else { return };
                // A gateway no worker long-polls (a broker's embedded one that clients do
                // not use) would otherwise ask the leaders for every burst of new jobs,
                // costing them and itself a request each, for nobody.
                if client.jobs.receiver_count() == 0 {
                    let subscribed = wanted.notified();
                    tokio::pin!(subscribed);
                    subscribed.as_mut().enable();
                    if client.jobs.receiver_count() == 0 {
                        drop(client);
                        // Looks again now and then, to end once the client is gone.
                        let _ = tokio::time::timeout(IDLE_POLLER_CHECK, subscribed).await;
                        continue;
                    }
                }
                match client.poll_jobs(node, after).await {
                    Ok(news) => {
                        // A first answer's `lost` covers the time before this gateway
                        // listened: nothing missed here (a long poll looks before it
                        // waits).
                        if news.lost && after != 0 {
                            let _ = client.jobs.send(JobsNotice::Missed);
                        }
                        after = news.epoch;
                        for (partition, job_type) in news.events {
                            let _ = client.jobs.send(JobsNotice::Available(JobsAvailable {
                                partition: PartitionId(partition),
                                job_type,
                            }));
                        }
                    }
                    Err(reason) => {
                        tracing::debug!(%node, %reason, "jobs-available poll failed");
                        drop(client);
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        });
    }

    /// `node`'s jobs news after epoch `after`.
    async fn poll_jobs(&self, node: NodeId, after: u64) -> Result<JobsNews, String> {
        if let Some(local) = self.local.as_ref().filter(|l| l.node_id() == node) {
            return Ok(local.poll_jobs(after).await);
        }
        let Some(transport) = &self.transport else {
            return Err(format!(
                "node {node} is another broker, and this one reaches none"
            ));
        };
        let payload = encode(&JobsPoll { after }).map_err(|e| e.to_string())?;
        let bytes = transport
            .request(
                node,
                ServiceId::JOBS_AVAILABLE,
                PartitionId(0),
                payload,
                JOBS_POLL_TIMEOUT + TRANSPORT_MARGIN,
            )
            .await
            .map_err(|e| e.to_string())?;
        decode::<JobsNews>(&bytes).map_err(|e| e.to_string())
    }

    pub fn partitions_count(&self) -> u16 {
        self.partitions_count.load(Ordering::Relaxed)
    }

    /// The partition count messages are routed over (the cluster's original one).
    pub fn message_partitions_count(&self) -> u16 {
        match self.message_partitions_count.load(Ordering::Relaxed) {
            0 => self.partitions_count(),
            count => count,
        }
    }

    fn leader_of(&self, partition: PartitionId) -> Option<NodeId> {
        self.view
            .read()
            .leaders
            .get(&partition)
            .map(|(_, node)| *node)
    }

    /// The term of the leader of `partition` this client routes to, if it knows one.
    pub fn current_term(&self, partition: PartitionId) -> Option<Term> {
        self.view
            .read()
            .leaders
            .get(&partition)
            .map(|(term, _)| *term)
    }

    /// Sends one request to the leader of `partition`. Errors that mean "not applied"
    /// are `NotLeader` or `Unavailable`, which the dispatcher retries.
    async fn call(
        &self,
        partition: PartitionId,
        request: ApiRequest,
        timeout: Duration,
    ) -> Result<ApiAnswer, Error> {
        let Some(node) = self.leader_of(partition) else {
            return Err(Error::Unavailable {
                partition,
                reason: "no leader known yet".into(),
            });
        };
        if let Some(local) = self.local.as_ref().filter(|l| l.node_id() == node) {
            let serve = local.serve(partition, request);
            return match tokio::time::timeout(timeout + TRANSPORT_MARGIN, serve).await {
                Ok(answer) => self.answered(node, partition, answer),
                Err(_) => Err(Error::Timeout),
            };
        }
        let Some(transport) = &self.transport else {
            return Err(Error::Unavailable {
                partition,
                reason: format!("{node} leads it, and this broker reaches no other"),
            });
        };
        let payload = encode(&request)?;
        let answer = transport
            .request(
                node,
                ServiceId::COMMAND,
                partition,
                payload,
                timeout + TRANSPORT_MARGIN,
            )
            .await;
        match answer {
            Ok(bytes) => self.answered(node, partition, decode::<ApiAnswer>(&bytes)?),
            Err(error) => {
                let sent = !matches!(
                    error,
                    TransportError::UnknownPeer { .. }
                        | TransportError::Unreachable { .. }
                        | TransportError::Backpressure { .. }
                );
                if sent {
                    // It may have been applied: only the client can decide to retry.
                    tracing::debug!(%partition, %node, %error, "request lost");
                    Err(Error::Timeout)
                } else {
                    self.view.write().leaders.remove(&partition);
                    Err(Error::Unavailable {
                        partition,
                        reason: error.to_string(),
                    })
                }
            }
        }
    }

    /// What `node`'s answer means for the caller; a `NotLeader` updates the view, and so
    /// does a response from a later term than the view knows (`node` led in it).
    fn answered(
        &self,
        node: NodeId,
        partition: PartitionId,
        answer: ApiAnswer,
    ) -> Result<ApiAnswer, Error> {
        match answer {
            ApiAnswer::Response { term, .. } | ApiAnswer::Delivered { term, .. } => {
                // Read first: nearly every answer is from the term already known.
                let later = self
                    .view
                    .read()
                    .leaders
                    .get(&partition)
                    .is_some_and(|(known, _)| term > *known);
                if later {
                    note_leader(&mut self.view.write(), partition, term, node);
                }
                Ok(answer)
            }
            ApiAnswer::Error(ApiError::NotLeader { leader }) => {
                let mut view = self.view.write();
                match leader.map(NodeId).filter(|l| *l != node) {
                    // Trust the hint over our stale entry, at the same term.
                    Some(leader) => {
                        let term = view.leaders.get(&partition).map_or(Term::ZERO, |(t, _)| *t);
                        view.leaders.insert(partition, (term, leader));
                    }
                    None => {
                        view.leaders.remove(&partition);
                    }
                }
                Err(Error::NotLeader { partition })
            }
            // A stopping broker hands its partitions on: for this client the partition is
            // unavailable until its next leader answers.
            ApiAnswer::Error(error @ ApiError::ShuttingDown) => Err(Error::Unavailable {
                partition,
                reason: error.to_string(),
            }),
            ApiAnswer::Error(error) => Err(Error::from_api(partition, error)),
            other => Ok(other),
        }
    }

    pub async fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResponse, Error> {
        self.submit_answered(partition, command, timeout)
            .await
            .map(|answered| answered.response)
    }

    /// [`CommandClient::submit`], with the term of the entry that carried the command.
    pub async fn submit_answered(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> Result<Answered, Error> {
        let request = ApiRequest::Submit {
            command,
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(partition, request, timeout).await? {
            ApiAnswer::Response { response, term } => Ok(Answered {
                response,
                term: Some(term),
            }),
            other => Err(unexpected(other)),
        }
    }

    /// Delivers a command of a partition's outbox to the leader of `partition`, with the
    /// sender's latest backup checkpoint id: the response, and the receiver's latest
    /// checkpoint id (docs/decisions/backup.md).
    pub async fn deliver(
        &self,
        partition: PartitionId,
        command: Command,
        checkpoint_id: u64,
        timeout: Duration,
    ) -> Result<(CommandResponse, u64), Error> {
        let request = ApiRequest::Deliver {
            command,
            checkpoint_id,
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(partition, request, timeout).await? {
            ApiAnswer::Delivered {
                response,
                checkpoint_id,
                ..
            } => Ok((response, checkpoint_id)),
            other => Err(unexpected(other)),
        }
    }

    /// A job stream's request to the leader of `partition`: waits up to `wait` for the
    /// jobs the leader pushes to it, `None` when none came.
    pub async fn stream_jobs(
        &self,
        partition: PartitionId,
        stream: ActivateJobs,
        wait: Duration,
    ) -> Result<Option<Answered>, Error> {
        let request = ApiRequest::StreamJobs {
            stream,
            wait_ms: wait.as_millis() as u64,
        };
        let answer = self.call(partition, request, wait).await?;
        stream_answer(partition, answer)
    }

    pub async fn query(
        &self,
        partition: PartitionId,
        query: Query,
        timeout: Duration,
    ) -> Result<QueryResult, Error> {
        match self
            .call(partition, ApiRequest::Query { query }, timeout)
            .await?
        {
            ApiAnswer::QueryResult(result) => Ok(result),
            other => Err(unexpected(other)),
        }
    }

    /// The cluster as the brokers last described it.
    pub fn topology(&self) -> Topology {
        let view = self.view.read();
        let first = view.nodes.values().next();
        let brokers = view
            .nodes
            .values()
            .map(|node| {
                let (host, port) = split_host_port(&node.command_address);
                BrokerInfo {
                    node_id: NodeId(node.node_id),
                    host,
                    port,
                    version: node.version.clone(),
                    partitions: node
                        .partitions
                        .iter()
                        .map(|r| PartitionInfo {
                            partition: PartitionId(r.partition),
                            role: match r.role {
                                ReplicaRole::Leader => PartitionRole::Leader,
                                ReplicaRole::Follower => PartitionRole::Follower,
                                ReplicaRole::Inactive => PartitionRole::Inactive,
                            },
                            health: if r.healthy {
                                PartitionHealth::Healthy
                            } else {
                                PartitionHealth::Dead
                            },
                        })
                        .collect(),
                }
            })
            .collect();
        Topology {
            cluster_size: first.map_or(0, |n| n.cluster_size),
            partitions_count: view
                .nodes
                .values()
                .map(|n| n.partitions_count)
                .max()
                .unwrap_or(0),
            replication_factor: first.map_or(0, |n| u32::from(n.replication_factor)),
            brokers,
        }
    }

    pub fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsNotice> {
        let receiver = self.jobs.subscribe();
        self.jobs_wanted.notify_waiters();
        receiver
    }
}

fn note_leader(view: &mut View, partition: PartitionId, term: Term, leader: NodeId) {
    let newer = view
        .leaders
        .get(&partition)
        .is_none_or(|(known, _)| term >= *known);
    if newer {
        view.leaders.insert(partition, (term, leader));
    }
}

fn split_host_port(address: &str) -> (String, u16) {
    match address.rsplit_once(':') {
        Some((host, port)) => (
            host.trim_matches(['[', ']']).to_owned(),
            port.parse().unwrap_or(0),
        ),
        None => (address.to_owned(), 0),
    }
}

fn unexpected(answer: ApiAnswer) -> Error {
    Error::Internal(format!("unexpected answer from the broker: {answer:?}"))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use rill_protocol::{Key, Rejection, RejectionType, ReplicaView};
    use rill_transport::TransportConfig;

    use super::*;

    /// A broker that leads partition 1 and has news of jobs every few milliseconds, and
    /// counts the jobs-available polls it is sent. With `dropping`, every answer also
    /// says that news was dropped (more than the broker keeps came in between polls).
    async fn busy_broker(polls: Arc<AtomicU64>, dropping: bool) -> Transport {
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let handler = Arc::new(
            move |_: NodeId,
                  service: ServiceId,
                  _: PartitionId,
                  payload: Bytes|
                  -> BoxFuture<'static, Result<Bytes, String>> {
                let polls = polls.clone();
                Box::pin(async move {
                    match service {
                        ServiceId::TOPOLOGY => encode(&NodeTopology {
                            node_id: 1,
                            message_partitions_count: 1,
                            cluster_size: 1,
                            partitions_count: 1,
                            replication_factor: 1,
                            command_address: "127.0.0.1:1".to_owned(),
                            version: "test".to_owned(),
                            configuration_version: 0,
                            added_brokers: Vec::new(),
                            partitions: vec![ReplicaView {
                                partition: 1,
                                role: ReplicaRole::Leader,
                                leader: Some(1),
                                term: Term(1),
                                healthy: true,
                            }],
                        })
                        .map_err(|e| e.to_string()),
                        ServiceId::JOBS_AVAILABLE => {
                            polls.fetch_add(1, Ordering::Relaxed);
                            let poll: JobsPoll = decode(&payload).map_err(|e| e.to_string())?;
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            encode(&JobsNews {
                                epoch: poll.after + 1,
                                lost: dropping,
                                events: vec![(1, "work".to_owned())],
                            })
                            .map_err(|e| e.to_string())
                        }
                        other => Err(format!("no {other}")),
                    }
                })
            },
        );
        Transport::start(TransportConfig::new(NodeId(1), listen), handler)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn jobs_are_polled_for_only_once_someone_here_waits_for_them() {
        let polls = Arc::new(AtomicU64::new(0));
        let broker = busy_broker(polls.clone(), false).await;
        let transport = gateway_transport().await;
        let client = CommandClient::start(transport.clone(), vec![broker.local_addr().to_string()]);

        // The broker is known (its partition has a leader), but nobody waits for jobs.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while client.leader_of(PartitionId(1)).is_none() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "topology never learned"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            polls.load(Ordering::Relaxed),
            0,
            "polled with nobody waiting"
        );

        // The first long poll subscribes: the broker's news now reaches it.
        let mut notifications = client.subscribe_jobs_available();
        assert_eq!(
            next_notice(&mut notifications).await,
            JobsNotice::Available(JobsAvailable {
                partition: PartitionId(1),
                job_type: "work".to_owned(),
            })
        );
        assert!(polls.load(Ordering::Relaxed) >= 1);

        transport.shutdown().await;
        broker.shutdown().await;
    }

    async fn next_notice(notifications: &mut broadcast::Receiver<JobsNotice>) -> JobsNotice {
        tokio::time::timeout(Duration::from_secs(10), notifications.recv())
            .await
            .expect("no notification")
            .unwrap()
    }

    /// A standalone gateway's transport: it serves nothing.
    async fn gateway_transport() -> Transport {
        let no_service = Arc::new(
            |_: NodeId,
             _: ServiceId,
             _: PartitionId,
             _: Bytes|
             -> BoxFuture<'static, Result<Bytes, String>> {
                Box::pin(async { Err("a gateway serves nothing".to_owned()) })
            },
        );
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        Transport::start(TransportConfig::new(NodeId(u32::MAX), listen), no_service)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn news_a_broker_dropped_is_passed_on_as_missed_after_the_first_answer() {
        let broker = busy_broker(Arc::new(AtomicU64::new(0)), true).await;
        let transport = gateway_transport().await;
        let client = CommandClient::start(transport.clone(), vec![broker.local_addr().to_string()]);
        let mut notifications = client.subscribe_jobs_available();
        // The first answer's "dropped" covers the time before this gateway listened.
        let work = JobsNotice::Available(JobsAvailable {
            partition: PartitionId(1),
            job_type: "work".to_owned(),
        });
        assert_eq!(next_notice(&mut notifications).await, work);
        // Later ones are news this gateway's long polls missed: they must all look again.
        assert_eq!(next_notice(&mut notifications).await, JobsNotice::Missed);
        assert_eq!(next_notice(&mut notifications).await, work);

        transport.shutdown().await;
        broker.shutdown().await;
    }

    /// A broker that says it leads partition 1 in term `topology_term`, and answers every
    /// command from an entry of term `answer_term`.
    async fn broker(topology_term: Term, answer_term: Term) -> Transport {
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let handler = Arc::new(
            move |_: NodeId,
                  service: ServiceId,
                  _: PartitionId,
                  _: Bytes|
                  -> BoxFuture<'static, Result<Bytes, String>> {
                let answer = match service {
                    ServiceId::TOPOLOGY => encode(&NodeTopology {
                        node_id: 1,
                        message_partitions_count: 1,
                        cluster_size: 1,
                        partitions_count: 1,
                        replication_factor: 1,
                        command_address: "127.0.0.1:1".to_owned(),
                        version: "test".to_owned(),
                        configuration_version: 0,
                        added_brokers: Vec::new(),
                        partitions: vec![ReplicaView {
                            partition: 1,
                            role: ReplicaRole::Leader,
                            leader: Some(1),
                            term: topology_term,
                            healthy: true,
                        }],
                    }),
                    ServiceId::COMMAND => encode(&ApiAnswer::Response {
                        response: CommandResponse::Rejected(Rejection::new(
                            RejectionType::NotFound,
                            "no such job",
                        )),
                        term: answer_term,
                    }),
                    _ => Err(Error::Internal("no such service".into())),
                };
                Box::pin(async move { answer.map_err(|e| e.to_string()) })
            },
        );
        Transport::start(TransportConfig::new(NodeId(1), listen), handler)
            .await
            .unwrap()
    }

    async fn known_term(client: &CommandClient) -> Term {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(term) = client.current_term(PartitionId(1)) {
                return term;
            }
            assert!(tokio::time::Instant::now() < deadline, "no term learned");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Submits a command to a broker whose topology says `topology_term` and that answers
    /// in `answer_term`: the answer's term, and the term the client knows afterwards.
    async fn terms_after_an_answer(
        topology_term: Term,
        answer_term: Term,
    ) -> (Option<Term>, Option<Term>) {
        let broker = broker(topology_term, answer_term).await;
        let transport = gateway_transport().await;
        let client = CommandClient::start(transport.clone(), vec![broker.local_addr().to_string()]);
        assert_eq!(
            known_term(&client).await,
            topology_term,
            "the topology's term"
        );
        let command = Command::CompleteJob {
            job_key: Key::new(PartitionId(1), 7),
            variables: rill_protocol::JsonValue::empty_object(),
            result: Default::default(),
        };
        let answered = client
            .submit_answered(PartitionId(1), command, Duration::from_secs(5))
            .await
            .unwrap();
        let known = client.current_term(PartitionId(1));
        transport.shutdown().await;
        broker.shutdown().await;
        (answered.term, known)
    }

    #[tokio::test]
    async fn an_answer_brings_its_entry_term_and_a_later_one_is_noted() {
        // The broker led in term 5, later than the topology said.
        assert_eq!(
            terms_after_an_answer(Term(3), Term(5)).await,
            (Some(Term(5)), Some(Term(5)))
        );
    }

    #[tokio::test]
    async fn an_answer_from_an_earlier_term_leaves_the_known_term() {
        assert_eq!(
            terms_after_an_answer(Term(4), Term(2)).await,
            (Some(Term(2)), Some(Term(4)))
        );
    }
}
