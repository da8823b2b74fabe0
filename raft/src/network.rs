//! Raft RPCs between the replicas of a partition.
//!
//! The messages are openraft's, encoded with Rill's codec and carried as opaque bytes by
//! a [`RaftTransport`]: in production the node's internal transport (one multiplexed
//! connection per node pair, the partition id in every frame); in tests anything that
//! moves bytes. On the receiving side a [`RaftService`] decodes them and hands them to
//! the partition's raft.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use openraft::BasicNode;
use openraft::error::{
    Fatal, InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    SnapshotMismatch, Timeout, Unreachable,
};
use openraft::network::{Backoff, RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use parking_lot::RwLock;
use rill_protocol::{PartitionId, Term, codec};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::types::{Raft, RaftNodeId, RaftTerm, SnapshotMeta, TypeConfig, Vote};

/// Why a request to a peer got no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportFailure {
    #[error("peer unreachable: {0}")]
    Unreachable(String),
    #[error("request timed out")]
    Timeout,
    #[error("peer failed to handle the request: {0}")]
    Remote(String),
}

/// Which raft RPC a request carries, so a transport can route it to a service of its
/// own (the payload is opaque to the transport).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RaftRpcKind {
    AppendEntries,
    Vote,
    InstallSnapshot,
}

/// Moves a request to a peer node and its answer back.
pub trait RaftTransport: Send + Sync + 'static {
    fn request(
        &self,
        target: RaftNodeId,
        partition: PartitionId,
        kind: RaftRpcKind,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<Bytes, TransportFailure>>;

    /// The largest payload a request may carry. Larger append-entries requests are not
    /// sent; openraft retries them with fewer entries.
    fn max_payload(&self) -> usize {
        usize::MAX
    }
}

#[derive(Serialize, Deserialize)]
enum RaftRpc {
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<RaftNodeId>),
    InstallSnapshot(SnapshotChunk),
}

/// openraft's `InstallSnapshotRequest` as it travels: its fields in its order, so the
/// codec writes the same bytes, but the chunk as one byte string. The derived encoding
/// goes through the chunk one `u8` at a time, which cost about 80 ns a byte in a debug
/// build (both ends): most of a snapshot transfer's time.
#[derive(Serialize, Deserialize)]
struct SnapshotChunk {
    vote: Vote,
    meta: SnapshotMeta,
    offset: u64,
    #[serde(with = "crate::types::byte_string")]
    data: Vec<u8>,
    done: bool,
}

impl From<InstallSnapshotRequest<TypeConfig>> for SnapshotChunk {
    fn from(req: InstallSnapshotRequest<TypeConfig>) -> Self {
        SnapshotChunk {
            vote: req.vote,
            meta: req.meta,
            offset: req.offset,
            data: req.data,
            done: req.done,
        }
    }
}

impl From<SnapshotChunk> for InstallSnapshotRequest<TypeConfig> {
    fn from(chunk: SnapshotChunk) -> Self {
        InstallSnapshotRequest {
            vote: chunk.vote,
            meta: chunk.meta,
            offset: chunk.offset,
            data: chunk.data,
            done: chunk.done,
        }
    }
}

/// Errors travel as text: a failed raft on the peer is as good as unreachable.
#[derive(Serialize, Deserialize)]
enum RaftRpcReply {
    AppendEntries(Result<AppendEntriesResponse<RaftNodeId>, String>),
    Vote(Result<VoteResponse<RaftNodeId>, String>),
    InstallSnapshot(Result<InstallSnapshotResponse<RaftNodeId>, SnapshotFailure>),
}

#[derive(Serialize, Deserialize)]
enum SnapshotFailure {
    Mismatch(SnapshotMismatch),
    Fatal(String),
}

/// Creates a client per peer for one partition's raft.
#[derive(Clone)]
pub struct NetworkFactory {
    partition: PartitionId,
    transport: Arc<dyn RaftTransport>,
    retry_unreachable: Duration,
}

impl NetworkFactory {
    /// `retry_unreachable`: how long raft waits before it tries an unreachable peer
    /// again. A heartbeat interval: a peer that comes back must hear from its leader well
    /// within its election timeout, or it stands and deposes that leader.
    pub fn new(
        partition: PartitionId,
        transport: Arc<dyn RaftTransport>,
        retry_unreachable: Duration,
    ) -> Self {
        NetworkFactory {
            partition,
            transport,
            retry_unreachable,
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for NetworkFactory {
    type Network = PeerClient;

    async fn new_client(&mut self, target: RaftNodeId, _node: &BasicNode) -> PeerClient {
        PeerClient {
            target,
            partition: self.partition,
            max_payload: self.transport.max_payload(),
            transport: self.transport.clone(),
            retry_unreachable: self.retry_unreachable,
            sending: None,
        }
    }
}

/// Sends one partition's raft RPCs to one peer.
pub struct PeerClient {
    target: RaftNodeId,
    partition: PartitionId,
    max_payload: usize,
    transport: Arc<dyn RaftTransport>,
    retry_unreachable: Duration,
    /// The snapshot being sent: its id and when its first chunk went out.
    sending: Option<(String, Instant)>,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<RaftNodeId, BasicNode, RaftError<RaftNodeId, E>>>;

impl PeerClient {
    async fn call<E: std::error::Error>(
        &self,
        action: RPCTypes,
        rpc: &RaftRpc,
        timeout: Duration,
    ) -> RpcResult<RaftRpcReply, E> {
        let kind = match rpc {
            RaftRpc::AppendEntries(_) => RaftRpcKind::AppendEntries,
            RaftRpc::Vote(_) => RaftRpcKind::Vote,
            RaftRpc::InstallSnapshot(_) => RaftRpcKind::InstallSnapshot,
        };
        let payload = codec::encode(rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        if let RaftRpc::AppendEntries(req) = rpc
            && let Some(hint) = entries_hint(req.entries.len(), payload.len(), self.max_payload)
        {
            // openraft sends fewer entries next time: a follower far behind still gets
            // the log, in requests the transport carries.
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(hint),
            ));
        }
        let reply = self
            .transport
            .request(
                self.target,
                self.partition,
                kind,
                Bytes::from(payload),
                timeout,
            )
            .await
            .map_err(|failure| match failure {
                TransportFailure::Timeout => RPCError::Timeout(Timeout {
                    action,
                    id: self.target,
                    target: self.target,
                    timeout,
                }),
                other => RPCError::Unreachable(Unreachable::new(&other)),
            })?;
        codec::decode(&reply).map_err(|e| RPCError::Network(NetworkError::new(&e)))
    }
}

/// How many entries to send instead when `entries` entries encode to `len` bytes, more
/// than the transport's `max` (`None`: they fit, or one entry alone is too large, which
/// the transport then refuses).
fn entries_hint(entries: usize, len: usize, max: usize) -> Option<u64> {
    if len <= max || entries <= 1 {
        return None;
    }
    // Proportionally fewer, with a margin for entries of uneven size.
    let fit = (entries as u128 * max as u128 * 3 / 4 / len as u128) as u64;
    Some(fit.clamp(1, entries as u64 - 1))
}

fn unexpected<E: std::error::Error>() -> RPCError<RaftNodeId, BasicNode, RaftError<RaftNodeId, E>> {
    let err = TransportFailure::Remote("reply does not match the request".into());
    RPCError::Network(NetworkError::new(&err))
}

fn remote_down<E: std::error::Error>(
    reason: String,
) -> RPCError<RaftNodeId, BasicNode, RaftError<RaftNodeId, E>> {
    RPCError::Unreachable(Unreachable::new(&TransportFailure::Remote(reason)))
}

impl RaftNetwork<TypeConfig> for PeerClient {
    fn backoff(&self) -> Backoff {
        Backoff::new(std::iter::repeat(self.retry_unreachable))
    }

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<RaftNodeId>> {
        let rpc = RaftRpc::AppendEntries(rpc);
        match self
            .call(RPCTypes::AppendEntries, &rpc, option.hard_ttl())
            .await?
        {
            RaftRpcReply::AppendEntries(Ok(resp)) => Ok(resp),
            RaftRpcReply::AppendEntries(Err(reason)) => Err(remote_down(reason)),
            _ => Err(unexpected()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<RaftNodeId>, InstallSnapshotError> {
        if rpc.offset == 0 {
            tracing::info!(
                partition = %self.partition,
                target = self.target,
                snapshot = %rpc.meta.snapshot_id,
                "sending a snapshot to node {}",
                self.target
            );
            self.sending = Some((rpc.meta.snapshot_id.clone(), Instant::now()));
        }
        let last = rpc.done.then(|| {
            (
                rpc.meta.snapshot_id.clone(),
                rpc.offset + rpc.data.len() as u64,
            )
        });
        let rpc = RaftRpc::InstallSnapshot(rpc.into());
        let reply = self
            .call(RPCTypes::InstallSnapshot, &rpc, option.hard_ttl())
            .await?;
        if let (Some((id, bytes)), RaftRpcReply::InstallSnapshot(Ok(_))) = (&last, &reply)
            && let Some((_, started)) = self.sending.take().filter(|(sent, _)| sent == id)
        {
            let seconds = started.elapsed().as_secs_f64();
            tracing::info!(
                partition = %self.partition,
                target = self.target,
                snapshot = %id,
                bytes,
                seconds,
                "snapshot sent to node {} and installed there: {:.0} MB in {seconds:.1} s ({:.0} MB/s)",
                self.target,
                *bytes as f64 / 1e6,
                *bytes as f64 / 1e6 / seconds.max(1e-3),
            );
        }
        match reply {
            RaftRpcReply::InstallSnapshot(Ok(resp)) => Ok(resp),
            RaftRpcReply::InstallSnapshot(Err(SnapshotFailure::Mismatch(m))) => {
                Err(RPCError::RemoteError(RemoteError::new(
                    self.target,
                    RaftError::APIError(InstallSnapshotError::SnapshotMismatch(m)),
                )))
            }
            RaftRpcReply::InstallSnapshot(Err(SnapshotFailure::Fatal(reason))) => {
                Err(remote_down(reason))
            }
            _ => Err(unexpected()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<RaftNodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<RaftNodeId>> {
        let rpc = RaftRpc::Vote(rpc);
        match self.call(RPCTypes::Vote, &rpc, option.hard_ttl()).await? {
            RaftRpcReply::Vote(Ok(resp)) => Ok(resp),
            RaftRpcReply::Vote(Err(reason)) => Err(remote_down(reason)),
            _ => Err(unexpected()),
        }
    }
}

/// Says why this node stores no more log entries from leaders, while it does not (its
/// disk is past the replication watermark).
pub type StorageGate = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// Serves raft RPCs for the partitions hosted on this node.
#[derive(Clone, Default)]
pub struct RaftService {
    rafts: Arc<RwLock<BTreeMap<PartitionId, Raft>>>,
    better_log: Arc<RwLock<BTreeMap<PartitionId, Arc<BetterLog>>>>,
    storage_gate: Arc<RwLock<Option<StorageGate>>>,
    /// Entries are being refused (for a log line when it starts and stops).
    refusing: Arc<std::sync::atomic::AtomicBool>,
}

/// This replica refused its vote to a candidate whose log is behind its own (see
/// [`RaftService::better_log_signal`]).
#[derive(Default)]
pub struct BetterLog {
    pub notify: Notify,
    /// The highest term of such a candidate (see [`BetterLog::candidate_term`]).
    candidate_term: AtomicU64,
}

impl BetterLog {
    /// The highest term of a candidate refused for its log: to win, this replica must
    /// stand in a later one (a candidate keeps the term's vote it gave itself).
    pub fn candidate_term(&self) -> Term {
        Term(self.candidate_term.load(Ordering::SeqCst))
    }

    fn refused(&self, candidate_term: Term) {
        self.candidate_term
            .fetch_max(candidate_term.get(), Ordering::SeqCst);
        self.notify.notify_one();
    }
}

impl RaftService {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&self, partition: PartitionId, raft: Raft) {
        self.rafts.write().insert(partition, raft);
    }

    /// Refuses append requests that carry entries while `gate` gives a reason: the
    /// leader retries them after a backoff. Heartbeats still pass, and so does a refused
    /// request stripped of its entries, so the refusing follower keeps hearing from its
    /// leader and does not stand for election.
    pub fn set_storage_gate(&self, gate: StorageGate) {
        *self.storage_gate.write() = Some(gate);
    }

    fn storage_refusal(&self) -> Option<String> {
        let refusal = self.storage_gate.read().as_ref().and_then(|gate| gate());
        let was_refusing = self.refusing.swap(refusal.is_some(), Ordering::Relaxed);
        match (&refusal, was_refusing) {
            (Some(reason), false) => tracing::warn!(%reason, "refusing log entries from leaders"),
            (None, true) => tracing::info!("taking log entries from leaders again"),
            _ => {}
        }
        refusal
    }

    pub fn unregister(&self, partition: PartitionId) {
        self.rafts.write().remove(&partition);
        self.better_log.write().remove(&partition);
    }

    /// Notified when this replica refuses its vote to a candidate whose log is behind
    /// its own. The candidate went without a leader for an election timeout, so the
    /// leader is likely gone, and only a replica with a log like this one can win: the
    /// election driver may stand at once instead of waiting out its priority step.
    pub fn better_log_signal(&self, partition: PartitionId) -> Arc<BetterLog> {
        self.better_log
            .write()
            .entry(partition)
            .or_default()
            .clone()
    }

    /// Handles one encoded request for `partition` and returns the encoded reply. An
    /// `Err` is a request that could not be handled at all (unknown partition, garbage).
    pub async fn handle(&self, partition: PartitionId, payload: Bytes) -> Result<Bytes, String> {
        let rpc: RaftRpc = codec::decode(&payload).map_err(|e| format!("bad raft request: {e}"))?;
        let reply = match rpc {
            RaftRpc::AppendEntries(mut req) if !req.entries.is_empty() => {
                match self.storage_refusal() {
                    Some(reason) => {
                        // Heard as a heartbeat: this follower keeps its leader, and what
                        // raft says about the heartbeat (a conflict, a higher vote) holds
                        // for the request too. The entries are refused.
                        req.entries.clear();
                        match self.answer(partition, RaftRpc::AppendEntries(req)).await {
                            Ok(RaftRpcReply::AppendEntries(Ok(AppendEntriesResponse::Success)))
                            | Err(_) => RaftRpcReply::AppendEntries(Err(reason)),
                            Ok(other) => other,
                        }
                    }
                    None => self.answer(partition, RaftRpc::AppendEntries(req)).await?,
                }
            }
            rpc => self.answer(partition, rpc).await?,
        };
        codec::encode(&reply)
            .map(Bytes::from)
            .map_err(|e| format!("cannot encode raft reply: {e}"))
    }

    async fn answer(&self, partition: PartitionId, rpc: RaftRpc) -> Result<RaftRpcReply, String> {
        let raft = self
            .rafts
            .read()
            .get(&partition)
            .cloned()
            .ok_or_else(|| format!("partition {partition} is not hosted here"))?;
        Ok(match rpc {
            RaftRpc::AppendEntries(req) => RaftRpcReply::AppendEntries(
                raft.append_entries(req).await.map_err(|e| e.to_string()),
            ),
            RaftRpc::Vote(req) => {
                let (candidate_log, candidate_term) = (req.last_log_id, req.vote.term());
                let answer = raft.vote(req).await;
                if let Ok(vote) = &answer
                    && !vote.vote_granted
                    && vote.last_log_id > candidate_log
                {
                    self.better_log_signal(partition).refused(candidate_term);
                }
                RaftRpcReply::Vote(answer.map_err(|e| e.to_string()))
            }
            RaftRpc::InstallSnapshot(req) => {
                RaftRpcReply::InstallSnapshot(raft.install_snapshot(req.into()).await.map_err(
                    |e| match e {
                        RaftError::APIError(InstallSnapshotError::SnapshotMismatch(m)) => {
                            SnapshotFailure::Mismatch(m)
                        }
                        RaftError::Fatal(f) => SnapshotFailure::Fatal(fatal_text(&f)),
                    },
                ))
            }
        })
    }
}

fn fatal_text(f: &Fatal<RaftNodeId>) -> String {
    f.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_storage_gate_entries_are_refused_and_heartbeats_pass() {
        use std::sync::atomic::AtomicBool;

        let service = RaftService::new();
        let full = Arc::new(AtomicBool::new(true));
        let gate = full.clone();
        service.set_storage_gate(Arc::new(move || {
            gate.load(Ordering::SeqCst)
                .then(|| "the disk is 99.5% full".to_owned())
        }));
        let append = |entries: Vec<crate::types::Entry>| {
            let request = AppendEntriesRequest::<TypeConfig> {
                vote: Vote::new_committed(1, 0),
                prev_log_id: None,
                entries,
                leader_commit: None,
            };
            Bytes::from(codec::encode(&RaftRpc::AppendEntries(request)).unwrap())
        };
        let entry = crate::types::Entry {
            log_id: crate::types::log_id(Term(1), 0, 1),
            payload: openraft::EntryPayload::Blank,
        };
        let reply = service
            .handle(PartitionId(1), append(vec![entry.clone()]))
            .await
            .expect("an answer");
        match codec::decode::<RaftRpcReply>(&reply).unwrap() {
            RaftRpcReply::AppendEntries(Err(reason)) => {
                assert_eq!(reason, "the disk is 99.5% full")
            }
            _ => panic!("entries taken past the gate"),
        }
        // A heartbeat goes on to the partition (which this test does not host).
        let heartbeat = service.handle(PartitionId(1), append(Vec::new())).await;
        assert_eq!(
            heartbeat.err().as_deref(),
            Some("partition 1 is not hosted here")
        );
        // Below the watermark, entries go on too.
        full.store(false, Ordering::SeqCst);
        let taken = service.handle(PartitionId(1), append(vec![entry])).await;
        assert_eq!(
            taken.err().as_deref(),
            Some("partition 1 is not hosted here")
        );
    }

    #[test]
    fn a_snapshot_chunk_encodes_as_openrafts_request_did() {
        use openraft::{BasicNode, Membership};

        // What earlier builds sent: openraft's request, derived serde, in the enum.
        #[derive(Serialize)]
        enum Before {
            _AppendEntries,
            _Vote,
            InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
        }
        let members: BTreeMap<RaftNodeId, BasicNode> = [(1, BasicNode::new("127.0.0.1:26502"))]
            .into_iter()
            .collect();
        let request = InstallSnapshotRequest::<TypeConfig> {
            vote: Vote::new_committed(3, 1),
            meta: SnapshotMeta {
                last_log_id: Some(crate::types::log_id(Term(3), 1, 42)),
                last_membership: crate::types::StoredMembership::new(
                    Some(crate::types::log_id(Term(1), 1, 2)),
                    Membership::new(vec![[1].into_iter().collect()], members),
                ),
                snapshot_id: "snapshot-42".into(),
            },
            offset: 1 << 20,
            data: (0..=255).cycle().take(70_000).collect(),
            done: true,
        };
        let before = codec::encode(&Before::InstallSnapshot(request.clone())).unwrap();
        let now = codec::encode(&RaftRpc::InstallSnapshot(request.clone().into())).unwrap();
        assert_eq!(now, before, "brokers of both builds understand each other");
        let RaftRpc::InstallSnapshot(back) = codec::decode(&before).unwrap() else {
            panic!("not a snapshot chunk");
        };
        assert_eq!(InstallSnapshotRequest::from(back), request);
    }

    #[test]
    fn oversized_append_requests_shrink_in_proportion() {
        assert_eq!(entries_hint(10, 1_000, 1_000), None, "fits");
        assert_eq!(
            entries_hint(1, 5_000, 1_000),
            None,
            "cannot shrink one entry"
        );
        // 100 entries in 4000 bytes, 1000 allowed: 25 would fit, 18 with the margin.
        assert_eq!(entries_hint(100, 4_000, 1_000), Some(18));
        // Never zero, never as many as before.
        assert_eq!(entries_hint(2, 1_000_000, 10), Some(1));
        assert_eq!(entries_hint(100, 1_001, 1_000), Some(74));
    }
}
