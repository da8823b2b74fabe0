//! Raft membership of a partition: its voters, and the steps of a replica move (add a
//! learner and wait until it caught up, change the voters).

use std::collections::BTreeSet;

use rill_engine_api::Engine;
use rill_protocol::NodeId;

use super::Partition;
use crate::error::{Error, Result};

impl<E: Engine> Partition<E> {
    /// The voters of the partition's raft group as this replica knows them.
    pub async fn voters(&self) -> Result<BTreeSet<NodeId>> {
        let raft = self.raft().await?;
        let voters = raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .voter_ids()
            .map(|id| NodeId(id as u32))
            .collect();
        Ok(voters)
    }

    /// Leader only: adds `node` (reached at `address`) as a learner and returns once it
    /// has caught up with the log as it was when this was called (openraft sends a
    /// snapshot if the log was purged). Asking again for a node that is a member already
    /// proposes nothing and only waits.
    pub async fn add_learner(&self, node: NodeId, address: String) -> Result<()> {
        let raft = self.raft().await?;
        let id = u64::from(node.0);
        let started = std::time::Instant::now();
        let member = raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .get_node(&id)
            .is_some();
        if !member {
            // Not blocking: openraft's own wait counts a learner within 5,000 entries of
            // the leader as caught up, which for a new replica of a partition with a
            // short log is at once, before it has anything.
            raft.add_learner(id, openraft::BasicNode { addr: address }, false)
                .await
                .map_err(|e| self.membership_error(e))?;
            tracing::info!(partition = %self.config.partition_id, %node, "replica move: added node {node} as a learner");
        }
        // Proposing the learner again would append a membership entry, and openraft
        // restarts every replication stream on one, a snapshot transfer with them: a
        // retried step only waits.
        let (target, snapshot) = {
            let metrics = raft.metrics();
            let metrics = metrics.borrow();
            (
                metrics.last_log_index.unwrap_or(0),
                metrics.snapshot.map_or(0, |s| s.index),
            )
        };
        let mut metrics = raft.metrics();
        let mut reached_first = false;
        loop {
            let matched = {
                let current = metrics.borrow_and_update();
                let Some(replication) = &current.replication else {
                    return Err(self.membership_error(format!(
                        "this replica no longer leads (node {node} was being added)"
                    )));
                };
                replication.get(&id).copied().flatten().map(|log| log.index)
            };
            if let Some(index) = matched {
                if !reached_first {
                    reached_first = true;
                    tracing::info!(
                        partition = %self.config.partition_id,
                        %node,
                        index,
                        snapshot,
                        target,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "replica move: learner node {node} holds the partition up to index {index}"
                    );
                }
                if index >= target {
                    tracing::info!(
                        partition = %self.config.partition_id,
                        %node,
                        index,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "replica move: learner node {node} caught up"
                    );
                    return Ok(());
                }
            }
            if metrics.changed().await.is_err() {
                return Err(self.gone());
            }
        }
    }

    /// Leader only: makes `voters` the partition's voters (openraft's joint consensus:
    /// a quorum of the old and of the new voters at every step). A voter left out
    /// stops being a member; a leader left out steps down once the change commits.
    pub async fn change_voters(&self, voters: &BTreeSet<NodeId>) -> Result<()> {
        let raft = self.raft().await?;
        let started = std::time::Instant::now();
        let ids: BTreeSet<u64> = voters.iter().map(|n| u64::from(n.0)).collect();
        raft.change_membership(ids.clone(), false)
            .await
            .map_err(|e| self.membership_error(e))?;
        tracing::info!(
            partition = %self.config.partition_id,
            voters = ?ids,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "replica move: voters changed"
        );
        Ok(())
    }

    fn membership_error(&self, error: impl std::fmt::Display) -> Error {
        Error::Membership {
            partition: self.config.partition_id,
            reason: error.to_string(),
        }
    }
}
