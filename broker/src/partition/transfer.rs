//! Handing a partition's leadership to another replica (rebalancing, issue 43).
//!
//! openraft 0.9 has no `transfer_leader`. A hand-over is built from what it has:
//!
//! ```text
//!   leader                                   successor
//!   1. stop proposing (commands wait queued)
//!   2. wait until the successor's log matches
//!      its own (replication progress)
//!   3. vote for the successor in the next term
//!      (election::step_down): now a follower;
//!      its queued commands answer NOT_LEADER
//!                          ── Stand ──►      4. stand for election in that term: the old
//!                                               leader grants (same vote, same log), and
//!                                               with it a majority of three replicas
//! ```
//!
//! The successor asks the old leader for the vote it already gave, with a log as long as
//! its own, so it wins at once in a partition of three replicas; the third replica may
//! refuse (its lease from the old leader runs on) and follows the new leader's first
//! message. With five replicas the successor needs a third vote, which the remaining
//! voters give only once their lease ran out: its election driver stands again then.
//! Steps 1 to 3 run here; the cluster module sends step 4 (`crate::cluster::rebalance`).

use std::time::Duration;

use openraft::ServerState;
use rill_engine_api::Engine;
use rill_protocol::{NodeId, Term};
use rill_raft::RaftTerm;

use super::Partition;
use super::actor::Msg;
use super::election;
use crate::error::Result;

/// What a hand-over found or did on the leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandOver {
    /// The replica asked for leads already.
    AlreadyLeader,
    /// This replica does not lead (the leader it knows, if any).
    NotLeader(Option<NodeId>),
    /// The successor is not a voter of the partition.
    NotMember,
    /// Dry run: the successor is this many entries behind, within the limit.
    Planned { lag: u64 },
    /// The successor is further behind than the limit allows (or did not catch up in
    /// time while intake was stopped): nothing changed.
    LagTooHigh { lag: u64 },
    /// The successor caught up, but raft refused to step down: a leader elected less
    /// than a lease ago turns every vote down (its own too). Nothing changed.
    LeaderInitializing,
    /// This replica stopped leading `term` and voted for the successor in the next.
    SteppedDown { term: Term },
}

impl<E: Engine> Partition<E> {
    /// Leader only: hands leadership to `to` once its log matches this replica's. With
    /// `dry_run`, only says whether it would. `max_lag`: the most entries `to` may be
    /// behind for the hand-over to start; `catch_up`: how long intake may stay stopped
    /// while it closes that gap.
    pub async fn hand_over(
        &self,
        to: NodeId,
        max_lag: u64,
        catch_up: Duration,
        dry_run: bool,
    ) -> Result<HandOver> {
        let raft = self.raft().await?;
        let successor = u64::from(to.0);
        let lag_of = |m: &rill_raft::RaftMetrics| -> Option<u64> {
            let matched = m.replication.as_ref()?.get(&successor)?;
            let last = m.last_log_index.unwrap_or(0);
            Some(last.saturating_sub(matched.map_or(0, |id| id.index)))
        };
        let lag = {
            let m = raft.metrics();
            let m = m.borrow();
            if m.state != ServerState::Leader {
                return Ok(HandOver::NotLeader(
                    m.current_leader.map(|id| NodeId(id as u32)),
                ));
            }
            if m.id == successor {
                return Ok(HandOver::AlreadyLeader);
            }
            if !m
                .membership_config
                .membership()
                .voter_ids()
                .any(|id| id == successor)
            {
                return Ok(HandOver::NotMember);
            }
            lag_of(&m).unwrap_or(u64::MAX)
        };
        if lag > max_lag {
            return Ok(HandOver::LagTooHigh { lag });
        }
        if dry_run {
            return Ok(HandOver::Planned { lag });
        }
        // Past the catch-up, a step-down takes a round trip to raft; the deadline only
        // matters if this hand-over never ends (its caller gone).
        let until = std::time::Instant::now() + catch_up + Duration::from_secs(1);
        if !self.pause_intake(Some(until)).await? {
            return Ok(HandOver::NotLeader(None));
        }
        let caught_up = raft
            .wait(Some(catch_up))
            .metrics(
                |m| m.state != ServerState::Leader || lag_of(m) == Some(0),
                "the successor's log matches the leader's",
            )
            .await;
        let stepped_down = match caught_up {
            Ok(m) if m.state == ServerState::Leader => {
                election::step_down(
                    &raft,
                    successor,
                    &format!("handing leadership to node {to}, the preferred replica"),
                )
                .await
            }
            _ => None,
        };
        match stepped_down {
            Some(term) => {
                self.env
                    .metrics
                    .partition(self.config.partition_id.get())
                    .step_downs
                    .inc();
                Ok(HandOver::SteppedDown { term })
            }
            None => {
                self.pause_intake(None).await?;
                let m = raft.metrics();
                let m = m.borrow();
                if m.state != ServerState::Leader {
                    return Ok(HandOver::NotLeader(
                        m.current_leader.map(|id| NodeId(id as u32)),
                    ));
                }
                Ok(match lag_of(&m) {
                    Some(0) => HandOver::LeaderInitializing,
                    lag => HandOver::LagTooHigh {
                        lag: lag.unwrap_or(u64::MAX),
                    },
                })
            }
        }
    }

    /// Stops proposing until `until` (or resumes: `None`) while this replica leads;
    /// false when it does not.
    async fn pause_intake(&self, until: Option<std::time::Instant>) -> Result<bool> {
        self.ask(
            |reply| Msg::PauseIntake { until, reply },
            Duration::from_secs(10),
        )
        .await
    }

    /// The successor's part of a hand-over: stands for election now (in the term after
    /// its own, which the old leader voted in) and answers its term if it leads within
    /// `timeout`. Voters that heard the old leader within their lease refuse; with three
    /// replicas the old leader's vote is enough, with more this replica stands again once
    /// those leases have run out.
    pub async fn stand_for_election(&self, timeout: Duration) -> Result<Option<Term>> {
        let raft = self.raft().await?;
        let lease = rill_raft::leader_lease(&self.config.raft);
        let deadline = tokio::time::Instant::now() + timeout;
        for attempt in 0.. {
            let (state, term, other_leader) = {
                let m = raft.metrics();
                let m = m.borrow();
                let other = m.current_leader.is_some_and(|leader| leader != m.id);
                (m.state, m.term(), other)
            };
            if state == ServerState::Leader {
                return Ok(Some(term));
            }
            let now = tokio::time::Instant::now();
            // Before the first try the leader known is the one that handed over; after
            // it, another one won: never stand against it.
            if now >= deadline || (attempt > 0 && other_leader) {
                return Ok(None);
            }
            tracing::info!(
                partition = %self.config.partition_id,
                "the leader handed leadership over; standing for election"
            );
            if let Err(e) = raft.trigger().elect().await {
                tracing::debug!(error = %e, "election not started");
                return Ok(None);
            }
            let wait = lease.min(deadline - now);
            if let Ok(m) = raft
                .wait(Some(wait))
                .state(ServerState::Leader, "leading after a hand-over")
                .await
            {
                return Ok(Some(m.term()));
            }
        }
        Ok(None)
    }
}
