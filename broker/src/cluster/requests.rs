//! What brokers ask each other about the cluster configuration, over the internal
//! transport (`ServiceId::CLUSTER`): newer configurations (every second), a proposal to
//! partition 1's leader, and a change of a partition's voters to that partition's
//! leader. JSON, so that a field added later is ignored by an older broker.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use rill_protocol::{NodeId, PartitionId};
use rill_transport::{ServiceId, TransportError};
use serde::{Deserialize, Serialize};

use super::rebalance::HandOverLimits;
use super::{ClusterConfiguration, ClusterState};
use crate::partition::HandOver;

/// How long a proposal to another broker may take to be handed on.
const PROPOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a membership change may take on the partition's leader: adding a learner
/// waits until it caught up, which may take a snapshot transfer. Asked again after.
pub const MEMBERSHIP_TIMEOUT: Duration = Duration::from_secs(30);

/// A broker's addresses, as it tells its peers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Announce {
    /// `host:port` of its internal port.
    pub internal: String,
    /// `host:port` of its command API.
    pub command: String,
}

/// A change of a partition's voters, made by the partition's leader. Each is done
/// already when the voters are as asked, so a step run again (after the coordinator
/// failed over) changes nothing twice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "camelCase")]
pub enum MembershipRequest {
    /// `node` (reached at `address`) joins as a learner, catches up, then votes.
    AddVoter {
        partition: u16,
        node: u32,
        address: String,
    },
    /// `node` stops being a member.
    RemoveVoter { partition: u16, node: u32 },
}

impl MembershipRequest {
    pub fn partition(&self) -> PartitionId {
        match *self {
            MembershipRequest::AddVoter { partition, .. }
            | MembershipRequest::RemoveVoter { partition, .. } => PartitionId(partition),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "camelCase")]
pub(super) enum ClusterRequest {
    /// "Answer with your configuration if it is newer than `version`."
    Sync {
        version: u64,
        announce: Option<Announce>,
    },
    /// "Propose `configuration` through partition 1, if you lead it."
    Propose {
        expected_version: u64,
        configuration: String,
    },
    /// "Change the voters of a partition you lead."
    Membership(MembershipRequest),
    /// "Does the partition you bootstrap run, led by you?"
    Bootstrapped { partition: u16 },
    /// "Record checkpoint `backup_id` in a partition you lead" (docs/decisions/backup.md).
    Checkpoint { partition: u16, backup_id: u64 },
    /// "Hand a partition you lead over to node `to`" (rebalancing, `rebalance`).
    HandOver {
        partition: u16,
        to: u32,
        dry_run: bool,
    },
    /// "Stand for election in a partition whose leader handed it to you" (or, with
    /// `check_only`, "do you run a replica of it?").
    Stand { partition: u16, check_only: bool },
}

pub(super) fn encode(request: &ClusterRequest) -> Bytes {
    Bytes::from(serde_json::to_vec(request).expect("a cluster request always encodes"))
}

pub(super) fn decode(payload: &[u8]) -> Result<ClusterRequest, String> {
    serde_json::from_slice(payload).map_err(|e| format!("malformed cluster request: {e}"))
}

/// What a broker's partitions do for the cluster configuration (implemented by the
/// node that runs them).
pub trait LocalCluster: Send + Sync + 'static {
    /// This broker's replica of partition 1 leads it.
    fn leads_partition_1(&self) -> bool;
    /// Proposes `next` through partition 1, stored if the stored configuration is still
    /// at `expected_version`; false when partition 1 is not led here.
    #[must_use]
    fn propose(&self, expected_version: u64, next: &ClusterConfiguration) -> bool;
    /// Changes a partition's voters, if this broker's replica leads it (an error names
    /// why not).
    fn change_membership(
        &self,
        request: MembershipRequest,
    ) -> BoxFuture<'static, Result<(), String>>;
    /// The internal address this broker knows for `node`.
    fn address_of(&self, node: NodeId) -> Option<String>;
    /// The partitions this broker runs a replica of.
    fn hosts(&self, partition: PartitionId) -> bool;
    /// This broker's replica of `partition` runs and leads (a bootstrapped partition's
    /// first replica); an error names why not.
    fn bootstrapped(&self, partition: PartitionId) -> Result<(), String>;
    /// Records checkpoint `backup_id` through this broker's replica of `partition`, if
    /// it leads (an error names why not).
    fn checkpoint(
        &self,
        partition: PartitionId,
        backup_id: u64,
    ) -> BoxFuture<'static, Result<crate::backup::CheckpointOutcome, String>>;
    /// Partition 1's replica here: its partition count, and how many of its sends to
    /// partitions `first` and above are not acknowledged yet.
    fn redistribution(
        &self,
        first: PartitionId,
    ) -> BoxFuture<'static, Result<(u16, usize), String>>;
    /// The limits of a leadership hand-over, from this broker's settings.
    fn hand_over_limits(&self) -> HandOverLimits;
    /// Hands this broker's replica's leadership of `partition` to `to` (see
    /// `Partition::hand_over`); an error when there is no replica here.
    fn hand_over(
        &self,
        partition: PartitionId,
        to: NodeId,
        limits: HandOverLimits,
        dry_run: bool,
    ) -> BoxFuture<'static, Result<HandOver, String>>;
    /// This broker's replica of `partition` stands for election and answers its term
    /// if it leads within `timeout` (with `check_only`, only whether it runs here).
    fn stand(
        &self,
        partition: PartitionId,
        check_only: bool,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<Option<u64>, String>>;
    /// The partitions this broker's replicas lead.
    fn led_here(&self) -> Vec<PartitionId>;
}

impl ClusterState {
    pub(super) fn serve(
        &self,
        from: NodeId,
        request: ClusterRequest,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        match request {
            ClusterRequest::Sync { version, announce } => {
                if let Some(announce) = announce {
                    self.inner.announced.lock().insert(from.0, announce);
                }
                let answer = self.newer_than(version);
                Box::pin(async move { Ok(answer) })
            }
            ClusterRequest::Propose {
                expected_version,
                configuration,
            } => {
                let answer = match (
                    self.attached(),
                    ClusterConfiguration::from_json(&configuration),
                ) {
                    (_, Err(e)) => Err(e),
                    (None, _) => Err("this broker does not run cluster changes".to_owned()),
                    (Some((_, local)), Ok(next)) => {
                        if local.propose(expected_version, &next) {
                            Ok(Bytes::new())
                        } else {
                            Err("partition 1 is not led here".to_owned())
                        }
                    }
                };
                Box::pin(async move { answer })
            }
            ClusterRequest::Bootstrapped { partition } => {
                let answer = match self.attached() {
                    Some((_, local)) => local
                        .bootstrapped(PartitionId(partition))
                        .map(|()| Bytes::new()),
                    None => Err("this broker does not run cluster changes".to_owned()),
                };
                Box::pin(async move { answer })
            }
            ClusterRequest::Checkpoint {
                partition,
                backup_id,
            } => match self.attached() {
                Some((_, local)) => {
                    let recorded = local.checkpoint(PartitionId(partition), backup_id);
                    Box::pin(async move {
                        let outcome = recorded.await?;
                        serde_json::to_vec(&outcome)
                            .map(Bytes::from)
                            .map_err(|e| format!("cannot encode the outcome: {e}"))
                    })
                }
                None => {
                    Box::pin(async { Err("this broker does not run cluster changes".to_owned()) })
                }
            },
            ClusterRequest::HandOver {
                partition,
                to,
                dry_run,
            } => {
                let state = self.clone();
                Box::pin(async move {
                    let answer = state
                        .hand_over_here(PartitionId(partition), NodeId(to), dry_run)
                        .await?;
                    super::rebalance::encode_answer(&answer)
                })
            }
            ClusterRequest::Stand {
                partition,
                check_only,
            } => match self.attached() {
                Some((_, local)) => {
                    let timeout = local.hand_over_limits().election;
                    let stood = local.stand(PartitionId(partition), check_only, timeout);
                    Box::pin(async move {
                        let term = stood.await?;
                        serde_json::to_vec(&term)
                            .map(Bytes::from)
                            .map_err(|e| format!("cannot encode the term: {e}"))
                    })
                }
                None => {
                    Box::pin(async { Err("this broker does not run cluster changes".to_owned()) })
                }
            },
            ClusterRequest::Membership(request) => match self.attached() {
                Some((_, local)) => {
                    let changed = local.change_membership(request);
                    Box::pin(async move { changed.await.map(|()| Bytes::new()) })
                }
                None => {
                    Box::pin(async { Err("this broker does not run cluster changes".to_owned()) })
                }
            },
        }
    }

    /// Proposes `next` through partition 1's leader, here or on another replica of
    /// partition 1, to be stored if the configuration is still at `expected_version`.
    /// Whether it was stored shows in [`ClusterState::current`] afterwards.
    pub async fn propose(
        &self,
        expected_version: u64,
        next: &ClusterConfiguration,
    ) -> Result<(), String> {
        let Some((transport, local)) = self.attached() else {
            return Err("this broker does not run cluster changes".to_owned());
        };
        if local.propose(expected_version, next) {
            return Ok(());
        }
        let payload = encode(&ClusterRequest::Propose {
            expected_version,
            configuration: next.to_json(),
        });
        let mut failures = Vec::new();
        for node in self.replica_nodes(PartitionId(1)) {
            match transport
                .request(
                    node,
                    ServiceId::CLUSTER,
                    PartitionId(0),
                    payload.clone(),
                    PROPOSE_TIMEOUT,
                )
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => failures.push(format!("node {node}: {}", reason(e))),
            }
        }
        Err(format!(
            "no leader of partition 1 took the proposal ({})",
            failures.join("; ")
        ))
    }

    /// Runs `request` on the leader of its partition: this broker's replica if it leads,
    /// else each other replica's broker in turn (only the leader takes it).
    pub async fn on_leader(&self, request: MembershipRequest) -> Result<(), String> {
        let Some((transport, local)) = self.attached() else {
            return Err("this broker does not run cluster changes".to_owned());
        };
        let partition = request.partition();
        let mut failures = Vec::new();
        if local.hosts(partition) {
            match local.change_membership(request.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) => failures.push(format!("here: {e}")),
            }
        }
        let payload = encode(&ClusterRequest::Membership(request));
        for node in self.replica_nodes(partition) {
            match transport
                .request(
                    node,
                    ServiceId::CLUSTER,
                    PartitionId(0),
                    payload.clone(),
                    MEMBERSHIP_TIMEOUT + Duration::from_secs(2),
                )
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => failures.push(format!("node {node}: {}", reason(e))),
            }
        }
        Err(format!(
            "partition {partition}'s leader did not take it ({})",
            failures.join("; ")
        ))
    }

    /// Records checkpoint `backup_id` through `partition`'s leader: this broker's replica
    /// if it leads, else each other replica's broker in turn (only the leader takes it).
    pub async fn checkpoint(
        &self,
        partition: PartitionId,
        backup_id: u64,
    ) -> Result<crate::backup::CheckpointOutcome, String> {
        let Some((transport, local)) = self.attached() else {
            return Err("this broker reaches no other broker".to_owned());
        };
        let mut failures = Vec::new();
        if local.hosts(partition) {
            match local.checkpoint(partition, backup_id).await {
                Ok(outcome) => return Ok(outcome),
                Err(e) => failures.push(format!("here: {e}")),
            }
        }
        let payload = encode(&ClusterRequest::Checkpoint {
            partition: partition.get(),
            backup_id,
        });
        for node in self.replica_nodes(partition) {
            match transport
                .request(
                    node,
                    ServiceId::CLUSTER,
                    PartitionId(0),
                    payload.clone(),
                    PROPOSE_TIMEOUT,
                )
                .await
            {
                Ok(answer) => {
                    return serde_json::from_slice(&answer)
                        .map_err(|e| format!("node {node} answered an unreadable outcome: {e}"));
                }
                Err(e) => failures.push(format!("node {node}: {}", reason(e))),
            }
        }
        Err(format!(
            "partition {partition}'s leader did not record it ({})",
            failures.join("; ")
        ))
    }

    /// Whether `node`'s replica of `partition`, which it bootstraps, runs and leads.
    pub async fn bootstrapped(&self, node: NodeId, partition: PartitionId) -> Result<(), String> {
        let Some((transport, local)) = self.attached() else {
            return Err("this broker does not run cluster changes".to_owned());
        };
        if node == self.node_id() {
            return local.bootstrapped(partition);
        }
        let payload = encode(&ClusterRequest::Bootstrapped {
            partition: partition.get(),
        });
        transport
            .request(
                node,
                ServiceId::CLUSTER,
                PartitionId(0),
                payload,
                PROPOSE_TIMEOUT,
            )
            .await
            .map(|_| ())
            .map_err(|e| format!("node {node}: {}", reason(e)))
    }

    /// The other brokers holding a replica of `partition`, as the configuration has it.
    pub(super) fn replica_nodes(&self, partition: PartitionId) -> BTreeSet<NodeId> {
        let mut nodes: BTreeSet<NodeId> = self
            .current()
            .replicas_of(partition)
            .into_iter()
            .map(|(node, _)| node)
            .collect();
        nodes.remove(&self.node_id());
        nodes
    }
}

pub(super) fn reason(error: TransportError) -> String {
    match error {
        TransportError::Remote(reason) => reason,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_survive_their_wire_form() {
        let request = ClusterRequest::Membership(MembershipRequest::AddVoter {
            partition: 2,
            node: 4,
            address: "broker-4:26502".to_owned(),
        });
        let decoded = decode(&encode(&request)).unwrap();
        assert!(matches!(
            decoded,
            ClusterRequest::Membership(MembershipRequest::AddVoter {
                partition: 2,
                node: 4,
                ..
            })
        ));
        assert!(
            decode(b"{\"request\": \"dance\"}")
                .unwrap_err()
                .contains("malformed")
        );
    }
}
