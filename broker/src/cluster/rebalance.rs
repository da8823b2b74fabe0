//! Leadership rebalancing: each partition led by its preferred replica, the first in its
//! replica list (highest priority, as Zeebe's priority election has it).
//!
//! ```text
//!   POST /actuator/rebalance ─► for each partition, one at a time:
//!     its leader (here, or asked over CLUSTER: HandOver)
//!       ├─ the preferred replica leads already ........ ALREADY_LEADER
//!       ├─ further behind than one append ............. LAG_TOO_HIGH
//!       ├─ dry run .................................... PLANNED
//!       ├─ the preferred broker does not answer ....... UNREACHABLE
//!       ├─ the leader is younger than its lease ....... LEADER_INITIALIZING
//!       └─ stop intake, let it catch up, step down ──► preferred broker (CLUSTER: Stand)
//!            stands and wins ........................... TRANSFERRED (with its term)
//!            did not win in time ....................... STEPPED_DOWN (the election
//!                                                        drivers elect, preferred first)
//! ```
//!
//! With `raft.auto-rebalance` every broker does the same, every [`AUTO_INTERVAL`], for
//! the partitions it leads without being their preferred replica: a broker that restarts
//! rejoins as a follower, and gets its partitions back once it has caught up.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rill_protocol::{NodeId, PartitionId};
use rill_transport::ServiceId;
use serde::{Deserialize, Serialize};

use super::ClusterState;
use super::requests::{ClusterRequest, encode, reason};
use crate::partition::{HandOver, PartitionStatus, Role};

/// How often a broker with `raft.auto-rebalance` looks for partitions to hand back.
pub const AUTO_INTERVAL: Duration = Duration::from_secs(5);
/// How long after a hand-over that did not end with the preferred replica leading the
/// automatic rebalancer leaves that partition alone.
const AUTO_BACKOFF: Duration = Duration::from_secs(60);
/// How long a broker waits for a hand-over on another broker to be answered.
const HAND_OVER_TIMEOUT: Duration = Duration::from_secs(30);

/// The limits of a hand-over, from the broker's settings.
#[derive(Clone, Copy, Debug)]
pub struct HandOverLimits {
    /// The most entries the preferred replica may be behind for a hand-over to start.
    pub max_lag: u64,
    /// How long intake may stay stopped while the preferred replica catches up.
    pub catch_up: Duration,
    /// How long the preferred replica has to win its election.
    pub election: Duration,
    /// `raft.auto-rebalance`.
    pub automatic: bool,
}

/// What a rebalance found or did for one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RebalanceResult {
    /// The preferred replica leads.
    AlreadyLeader,
    /// Dry run: the leader would hand over.
    Planned,
    /// The preferred replica leads now.
    Transferred,
    /// The leader stepped down but the preferred replica did not win within the
    /// election timeout: the election drivers elect (the preferred replica first).
    SteppedDown,
    /// The preferred replica is too far behind (or did not catch up in time).
    LagTooHigh,
    /// The leader was elected less than a lease ago and cannot step down yet.
    LeaderInitializing,
    /// The preferred replica's broker did not answer.
    Unreachable,
    /// The preferred replica is not a voter of the partition.
    NotMember,
    /// No replica answered as the partition's leader.
    NoLeader,
}

/// One partition's line of a rebalance answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionRebalance {
    pub partition_id: u16,
    /// The leader found (before the hand-over), if one answered.
    pub current_leader: Option<u32>,
    pub desired_leader: u32,
    pub result: RebalanceResult,
    /// Entries the preferred replica was behind the leader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<u64>,
    /// The preferred replica's term once it leads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl PartitionRebalance {
    fn new(partition: PartitionId, desired: NodeId, result: RebalanceResult) -> Self {
        PartitionRebalance {
            partition_id: partition.get(),
            current_leader: None,
            desired_leader: desired.0,
            result,
            lag: None,
            term: None,
            detail: None,
        }
    }
}

/// A replica's answer to "hand partition p over": it leads and did this, or it does not
/// lead (the leader it knows).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "camelCase")]
pub(super) enum HandOverAnswer {
    Led(PartitionRebalance),
    NotLeader { leader: Option<u32> },
}

impl ClusterState {
    /// Moves each partition's leadership to its preferred replica, one partition at a
    /// time (or, with `dry_run`, says what it would do).
    pub async fn rebalance(&self, dry_run: bool) -> Vec<PartitionRebalance> {
        let current = self.current();
        let mut report = Vec::new();
        for partition in (1..=current.partitions_count()).map(PartitionId) {
            let Some(&(desired, _)) = current.replicas_of(partition).first() else {
                continue;
            };
            report.push(self.rebalance_partition(partition, desired, dry_run).await);
        }
        report
    }

    /// The rebalance of a broker that reaches no other (a standalone): its replicas lead
    /// or they do not, and there is nobody to hand leadership to.
    pub fn rebalance_alone(&self, replicas: &[PartitionStatus]) -> Vec<PartitionRebalance> {
        let current = self.current();
        (1..=current.partitions_count())
            .map(PartitionId)
            .filter_map(|partition| {
                let &(desired, _) = current.replicas_of(partition).first()?;
                let leader = replicas
                    .iter()
                    .find(|r| r.partition_id == partition && r.role == Role::Leader)
                    .map(|r| r.node_id);
                let result = if leader == Some(desired) {
                    RebalanceResult::AlreadyLeader
                } else {
                    RebalanceResult::NoLeader
                };
                let mut line = PartitionRebalance::new(partition, desired, result);
                line.current_leader = leader.map(|l| l.0);
                Some(line)
            })
            .collect()
    }

    /// Asks `partition`'s leader to hand leadership to `desired`: this broker's replica
    /// if it leads, else each other replica's broker in turn.
    async fn rebalance_partition(
        &self,
        partition: PartitionId,
        desired: NodeId,
        dry_run: bool,
    ) -> PartitionRebalance {
        let mut known_leader = None;
        let mut failures = Vec::new();
        if let Some((_, local)) = self.attached()
            && local.hosts(partition)
        {
            match self.hand_over_here(partition, desired, dry_run).await {
                Ok(HandOverAnswer::Led(done)) => return done,
                Ok(HandOverAnswer::NotLeader { leader }) => known_leader = leader,
                Err(e) => failures.push(format!("here: {e}")),
            }
        }
        let payload = encode(&ClusterRequest::HandOver {
            partition: partition.get(),
            to: desired.0,
            dry_run,
        });
        let mut nodes: Vec<NodeId> = self.replica_nodes(partition).into_iter().collect();
        // The leader the replica here knows is asked first.
        nodes.sort_by_key(|node| Some(node.0) != known_leader);
        for node in nodes {
            let Some((transport, _)) = self.attached() else {
                break;
            };
            let answer = transport
                .request(
                    node,
                    ServiceId::CLUSTER,
                    PartitionId(0),
                    payload.clone(),
                    HAND_OVER_TIMEOUT,
                )
                .await;
            match answer
                .map_err(reason)
                .and_then(|bytes| decode_answer(&bytes))
            {
                Ok(HandOverAnswer::Led(done)) => return done,
                Ok(HandOverAnswer::NotLeader { leader }) => {
                    known_leader = known_leader.or(leader);
                }
                Err(e) => failures.push(format!("node {node}: {e}")),
            }
        }
        let mut line = PartitionRebalance::new(partition, desired, RebalanceResult::NoLeader);
        line.current_leader = known_leader;
        if !failures.is_empty() {
            line.detail = Some(failures.join("; "));
        }
        line
    }

    /// Runs a hand-over of `partition` to `to` if this broker's replica leads it.
    pub(super) async fn hand_over_here(
        &self,
        partition: PartitionId,
        to: NodeId,
        dry_run: bool,
    ) -> Result<HandOverAnswer, String> {
        let Some((_, local)) = self.attached() else {
            return Err("this broker does not run cluster changes".to_owned());
        };
        let limits = local.hand_over_limits();
        let mut line = PartitionRebalance::new(partition, to, RebalanceResult::Planned);
        line.current_leader = Some(self.node_id().0);
        let plan = local.hand_over(partition, to, limits, true).await?;
        let lag = match plan {
            HandOver::NotLeader(leader) => {
                return Ok(HandOverAnswer::NotLeader {
                    leader: leader.map(|l| l.0),
                });
            }
            HandOver::AlreadyLeader => {
                line.result = RebalanceResult::AlreadyLeader;
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::NotMember => {
                line.result = RebalanceResult::NotMember;
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::LagTooHigh { lag } => {
                line.result = RebalanceResult::LagTooHigh;
                line.lag = Some(lag);
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::SteppedDown { .. } => {
                line.result = RebalanceResult::SteppedDown;
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::LeaderInitializing => {
                line.result = RebalanceResult::LeaderInitializing;
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::Planned { lag } => lag,
        };
        line.lag = Some(lag);
        if dry_run {
            return Ok(HandOverAnswer::Led(line));
        }
        // A replica that lags by nothing may still be down: its broker must answer
        // before this one stops leading.
        if let Err(e) = self.stand_on(to, partition, true, limits.election).await {
            line.result = RebalanceResult::Unreachable;
            line.detail = Some(e);
            return Ok(HandOverAnswer::Led(line));
        }
        match local.hand_over(partition, to, limits, false).await? {
            HandOver::SteppedDown { .. } => {}
            HandOver::NotLeader(leader) => {
                return Ok(HandOverAnswer::NotLeader {
                    leader: leader.map(|l| l.0),
                });
            }
            HandOver::LagTooHigh { lag } => {
                line.result = RebalanceResult::LagTooHigh;
                line.lag = Some(lag);
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::AlreadyLeader => {
                line.result = RebalanceResult::AlreadyLeader;
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::LeaderInitializing => {
                line.result = RebalanceResult::LeaderInitializing;
                return Ok(HandOverAnswer::Led(line));
            }
            HandOver::NotMember | HandOver::Planned { .. } => {
                line.result = RebalanceResult::NotMember;
                return Ok(HandOverAnswer::Led(line));
            }
        }
        match self.stand_on(to, partition, false, limits.election).await {
            Ok(Some(term)) => {
                line.result = RebalanceResult::Transferred;
                line.term = Some(term);
            }
            Ok(None) => line.result = RebalanceResult::SteppedDown,
            Err(e) => {
                line.result = RebalanceResult::SteppedDown;
                line.detail = Some(e);
            }
        }
        tracing::info!(
            partition = %partition,
            to = %to,
            result = ?line.result,
            term = ?line.term,
            "leadership hand-over"
        );
        Ok(HandOverAnswer::Led(line))
    }

    /// Asks `node`'s replica of `partition` to stand for election (or, with
    /// `check_only`, whether it runs there): its term if it leads within `timeout`.
    async fn stand_on(
        &self,
        node: NodeId,
        partition: PartitionId,
        check_only: bool,
        timeout: Duration,
    ) -> Result<Option<u64>, String> {
        let Some((transport, local)) = self.attached() else {
            return Err("this broker does not run cluster changes".to_owned());
        };
        if node == self.node_id() {
            return local.stand(partition, check_only, timeout).await;
        }
        let payload = encode(&ClusterRequest::Stand {
            partition: partition.get(),
            check_only,
        });
        let answer = transport
            .request(
                node,
                ServiceId::CLUSTER,
                PartitionId(0),
                payload,
                timeout + Duration::from_secs(2),
            )
            .await
            .map_err(|e| format!("node {node}: {}", reason(e)))?;
        serde_json::from_slice(&answer).map_err(|e| format!("node {node} answered {e}"))
    }

    /// `raft.auto-rebalance`: hands each partition this broker leads back to its
    /// preferred replica once that one has caught up. Runs until the process ends.
    pub(super) async fn rebalance_automatically(self) {
        let mut backoff: BTreeMap<PartitionId, Instant> = BTreeMap::new();
        loop {
            tokio::time::sleep(AUTO_INTERVAL).await;
            let Some((_, local)) = self.attached() else {
                return;
            };
            let current = self.current();
            if current.pending_change.is_some() {
                continue;
            }
            for partition in local.led_here() {
                let Some(&(desired, _)) = current.replicas_of(partition).first() else {
                    continue;
                };
                if desired == self.node_id()
                    || backoff
                        .get(&partition)
                        .is_some_and(|until| Instant::now() < *until)
                {
                    continue;
                }
                match self.hand_over_here(partition, desired, false).await {
                    Ok(HandOverAnswer::Led(line)) => match line.result {
                        RebalanceResult::Transferred | RebalanceResult::AlreadyLeader => {}
                        // Not caught up yet, or a leader too new: looked at again next time.
                        RebalanceResult::LagTooHigh
                        | RebalanceResult::Unreachable
                        | RebalanceResult::LeaderInitializing => {}
                        _ => {
                            tracing::info!(%partition, result = ?line.result, "automatic rebalancing backs off");
                            backoff.insert(partition, Instant::now() + AUTO_BACKOFF);
                        }
                    },
                    Ok(HandOverAnswer::NotLeader { .. }) => {}
                    Err(e) => tracing::debug!(%partition, error = %e, "automatic rebalancing"),
                }
            }
        }
    }
}

fn decode_answer(bytes: &Bytes) -> Result<HandOverAnswer, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("unreadable hand-over answer: {e}"))
}

pub(super) fn encode_answer(answer: &HandOverAnswer) -> Result<Bytes, String> {
    serde_json::to_vec(answer)
        .map(Bytes::from)
        .map_err(|e| format!("cannot encode the hand-over answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_over_answer_survives_its_wire_form() {
        let mut line =
            PartitionRebalance::new(PartitionId(2), NodeId(1), RebalanceResult::Transferred);
        line.current_leader = Some(0);
        line.term = Some(7);
        let bytes = encode_answer(&HandOverAnswer::Led(line.clone())).unwrap();
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(text.contains("\"result\":\"TRANSFERRED\""), "{text}");
        assert!(text.contains("\"partitionId\":2"), "{text}");
        assert!(!text.contains("lag"), "absent fields are left out: {text}");
        match decode_answer(&bytes).unwrap() {
            HandOverAnswer::Led(decoded) => assert_eq!(decoded, line),
            other => panic!("{other:?}"),
        }
        let not_leader = encode_answer(&HandOverAnswer::NotLeader { leader: Some(2) }).unwrap();
        assert!(matches!(
            decode_answer(&not_leader).unwrap(),
            HandOverAnswer::NotLeader { leader: Some(2) }
        ));
        assert!(decode_answer(&Bytes::from_static(b"{}")).is_err());
    }
}
