//! When a replica stands for election. openraft's own election timer is off (see
//! `rill_raft::openraft_config`); this driver decides instead, in priority order.
//!
//! A replica stands once it has heard from no leader for `raft.election-timeout` plus
//! one priority step per rank: rank 0 is the partition's preferred replica, rank 1 the
//! next in placement order, and so on. The preferred replica wins when it is up; when it
//! is gone the next one stands a single step later, never waiting on the one that is
//! gone. A replica that refuses its vote to a candidate because its own log is further
//! along stands at once, as soon as its leader lease has expired: the candidate could
//! not win, and it can. docs/decisions/elections.md has the timings and measurements.
//!
//! The driver also gives leadership up (check-quorum, which openraft 0.9 lacks): a leader
//! that no quorum of voters acknowledged for `raft.election-timeout` steps down, so a
//! leader cut off from its followers stops taking (and stalling) requests and stops
//! claiming the partition while the majority elects another. See [`step_down`].

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use openraft::ServerState;
use openraft::raft::VoteRequest;
use rill_protocol::Term;
use rill_raft::{BetterLog, Raft, RaftNodeId, RaftTerm, Vote};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::PartitionConfig;
use crate::metrics::PartitionMetrics;

/// How long a replica waits without a leader before it stands.
#[derive(Clone, Debug)]
pub(crate) struct ElectionPlan {
    pub timeout: Duration,
    /// A voter refuses other candidates this long after its leader's last message.
    pub lease: Duration,
    pub rank: u32,
    pub step: Duration,
    /// Added to the wait of every replica when there is no priority order, so that
    /// replicas do not all stand at the same moment.
    pub jitter: Duration,
    /// How often the driver looks at raft's state.
    pub tick: Duration,
    /// The rank as the cluster configuration has it now, read before every decision.
    pub shared_rank: Option<Arc<std::sync::atomic::AtomicU32>>,
    /// Whom a leader that lost its quorum votes for as it steps down: the preferred
    /// replica when that is another one (any other voter otherwise).
    pub successor: Option<RaftNodeId>,
}

impl ElectionPlan {
    pub(crate) fn of(config: &PartitionConfig) -> ElectionPlan {
        let raft = &config.raft;
        let shared_rank = config
            .priority_rank
            .clone()
            .filter(|_| raft.priority_election);
        let rank = match &shared_rank {
            Some(shared) => Some(shared.load(Ordering::Relaxed)),
            None => raft.priority_election.then(|| rank(config)).flatten(),
        };
        let jitter = match rank {
            Some(_) => Duration::ZERO,
            None => random_below(raft.election_timeout / 2),
        };
        ElectionPlan {
            timeout: raft.election_timeout,
            lease: rill_raft::leader_lease(raft),
            rank: rank.unwrap_or(0),
            step: raft.heartbeat_interval / 2,
            jitter,
            tick: raft.heartbeat_interval / 2,
            shared_rank,
            successor: config
                .preferred_leader
                .filter(|&preferred| preferred != config.node_id)
                .map(|preferred| u64::from(preferred.0)),
        }
    }

    /// The silence after which this replica stands.
    pub(crate) fn patience(&self) -> Duration {
        self.timeout + self.step * self.rank + self.jitter
    }

    /// How long after its lease this replica stands when a candidate with a shorter log
    /// asked for its vote. Replicas asked by the same candidate must not stand at the
    /// same moment, or they split the votes between them every time.
    fn nudge_delay(&self) -> Duration {
        (self.step * self.rank + self.jitter) / 2
    }
}

/// This replica's place in the partition's priority order: members in node-id order,
/// rotated to start at the preferred replica (the placement order of `replicas_of`).
/// `None` when there is no preferred replica.
fn rank(config: &PartitionConfig) -> Option<u32> {
    let preferred = config.preferred_leader?;
    let ids: Vec<_> = config.members.keys().copied().collect();
    let first = ids.iter().position(|&id| id == preferred).unwrap_or(0);
    let mine = ids.iter().position(|&id| id == config.node_id)?;
    Some(((mine + ids.len() - first) % ids.len()) as u32)
}

/// A delay below `limit`, different on every replica. Elections are outside the
/// deterministic engine, so the process's own randomness is fine here.
fn random_below(limit: Duration) -> Duration {
    let millis = limit.as_millis() as u64;
    if millis == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(RandomState::new().hash_one(0u8) % millis)
}

/// Raft's own vote, read after every command sent to raft before: when it last changed
/// or was refreshed (a leader's message, a granted vote, this replica standing; `None`
/// until something happened since it started), and its term. `Err` once raft stopped.
async fn own_vote(raft: &Raft) -> Result<(Option<Instant>, Term), ()> {
    let (tx, rx) = oneshot::channel();
    raft.external_request(move |state| {
        let _ = tx.send((state.vote_last_modified(), state.vote_ref().term()));
    });
    rx.await.map_err(|_| ())
}

/// The partition's leadership as this replica sees it, for the metrics: leader changes,
/// and how long the partition went without a leader.
struct LeaderWatch {
    /// The leader and term last seen.
    leader: Option<(u64, Term)>,
    /// The last moment a leader was known to be alive: this replica leading, or its
    /// leader's last message within the lease.
    alive_at: Instant,
}

impl LeaderWatch {
    fn observe(
        &mut self,
        metrics: &PartitionMetrics,
        now: Instant,
        leader: Option<(u64, Term)>,
        alive: Option<Instant>,
    ) {
        if let Some(current) = leader
            && self.leader != Some(current)
        {
            metrics.leader_changes.inc();
            metrics
                .leaderless_duration
                .observe(now.saturating_duration_since(self.alive_at).as_secs_f64());
            self.leader = Some(current);
            self.alive_at = now;
        }
        if let Some(alive) = alive {
            self.alive_at = self.alive_at.max(alive);
        }
        metrics
            .leaderless
            .set(now.saturating_duration_since(self.alive_at).as_secs_f64());
    }
}

/// How long a leader has gone without a quorum's acknowledgement. openraft reports the
/// time since the last acknowledged heartbeat; before the first one of a term it reports
/// nothing, and then the silence counts from when this driver saw the term begin.
#[derive(Default)]
struct QuorumWatch {
    term_seen: Option<(Term, Instant)>,
}

impl QuorumWatch {
    fn silence(&mut self, now: Instant, term: Term, millis_since_ack: Option<u64>) -> Duration {
        let since = match self.term_seen {
            Some((seen, at)) if seen == term => at,
            _ => {
                self.term_seen = Some((term, now));
                now
            }
        };
        match millis_since_ack {
            Some(millis) => Duration::from_millis(millis),
            None => now.saturating_duration_since(since),
        }
    }
}

/// Makes this replica stop leading: it votes for `successor` in the term after its own,
/// which a leader accepts like any vote request once its own lease from its election has
/// run out (openraft 0.9 has no other way down but a greater vote). The vote is a real
/// one, but it gives `successor` nothing it could not get anyway: `successor`'s own
/// request for that vote is still checked against this replica's log. Returns the term
/// left, or `None` when raft refused (not leading, leading for less than a lease, or
/// stopped).
pub(crate) async fn step_down(raft: &Raft, successor: RaftNodeId, why: &str) -> Option<Term> {
    for _ in 0..3 {
        let (state, term, node) = {
            let m = raft.metrics();
            let m = m.borrow();
            (m.state, m.term(), m.id)
        };
        if state != ServerState::Leader || successor == node {
            return None;
        }
        let last_log_id = raft.data_metrics().borrow().last_log;
        let request = VoteRequest::new(Vote::new(term.0 + 1, successor), last_log_id);
        match raft.vote(request).await {
            Ok(answer) if answer.vote_granted => {
                tracing::warn!(
                    %term,
                    successor,
                    "{why}: stepping down as leader of term {term}"
                );
                return Some(term);
            }
            // A log entry appended since the read: read again.
            Ok(_) => tokio::task::yield_now().await,
            Err(e) => {
                tracing::debug!(error = %e, "cannot step down");
                return None;
            }
        }
    }
    None
}

/// Runs until raft stops.
pub(crate) async fn drive(
    raft: Raft,
    mut plan: ElectionPlan,
    better_log: Arc<BetterLog>,
    metrics: PartitionMetrics,
) {
    let started = Instant::now();
    let mut stood: Option<Instant> = None;
    let mut nudged: Option<Instant> = None;
    // The last message from a leader: only a leader's lease keeps this replica from
    // standing for a candidate it refused.
    let mut leader_heard = started;
    let mut watch = LeaderWatch {
        leader: None,
        alive_at: started,
    };
    let watched = raft.metrics();
    let mut quorum = QuorumWatch::default();
    loop {
        if let Some(shared) = &plan.shared_rank {
            plan.rank = shared.load(Ordering::Relaxed);
        }
        // Asking raft first makes it publish fresh metrics (it does on every turn of its
        // loop), so the quorum's last acknowledgement read below is at most a tick old.
        let Ok((contact, _)) = own_vote(&raft).await else {
            return;
        };
        let (state, leader, term, voters, is_voter, successor, quorum_ack) = {
            let m = watched.borrow();
            let membership = m.membership_config.membership();
            let voters = membership.voter_ids().count();
            let is_voter = membership.voter_ids().any(|id| id == m.id);
            let successor = membership.voter_ids().find(|&id| id != m.id);
            (
                m.state,
                m.current_leader,
                m.term(),
                voters,
                is_voter,
                successor,
                m.millis_since_quorum_ack,
            )
        };
        if state == ServerState::Shutdown {
            return;
        }
        let now = Instant::now();
        if state == ServerState::Leader
            && voters > 1
            && quorum.silence(now, term, quorum_ack) >= plan.timeout
            && let Some(successor) = plan.successor.or(successor)
        {
            let why = format!(
                "no quorum of voters acknowledged this leader for {}ms",
                quorum.silence(now, term, quorum_ack).as_millis()
            );
            if step_down(&raft, successor, &why).await.is_some() {
                metrics.step_downs.inc();
                quorum = QuorumWatch::default();
                stood = Some(Instant::now());
                continue;
            }
        }
        if state != ServerState::Leader {
            quorum = QuorumWatch::default();
        }
        let heard = contact.unwrap_or(started).max(stood.unwrap_or(started));
        let silence = now.saturating_duration_since(heard);
        // A committed vote names a leader: then the last contact was that leader's.
        if leader.is_some()
            && let Some(contact) = contact
        {
            leader_heard = leader_heard.max(contact);
        }
        let alive = match state {
            ServerState::Leader => Some(now),
            _ if leader.is_some() && silence < plan.lease => contact,
            _ => None,
        };
        watch.observe(&metrics, now, leader.map(|l| (l, term)), alive);

        let may_stand = is_voter && matches!(state, ServerState::Follower | ServerState::Candidate);
        let due = match (may_stand, voters) {
            (false, _) | (_, 0) => None,
            // Alone: nobody to wait for, but once per timeout at most.
            (true, 1) => {
                (state == ServerState::Follower).then(|| stood.map_or(now, |s| s + plan.timeout))
            }
            (true, _) => {
                let by_silence = heard + plan.patience();
                Some(match nudged {
                    Some(at) if at > heard => {
                        by_silence.min(at.max(leader_heard + plan.lease) + plan.nudge_delay())
                    }
                    _ => by_silence,
                })
            }
        };
        if let Some(due) = due
            && now >= due
        {
            // A candidate this replica refused since its leader's last message stands in
            // some term: this replica must stand in a later one to get its vote.
            let above = match nudged {
                Some(at) if at > heard => better_log.candidate_term(),
                _ => Term::ZERO,
            };
            let why = if now >= heard + plan.patience() {
                "no leader"
            } else {
                "a candidate whose log is behind this replica's found no leader"
            };
            stand(&raft, &plan, silence, why, above).await;
            stood = Some(Instant::now());
            continue;
        }
        let next = due.map_or(now + plan.tick, |due| due.min(now + plan.tick));
        // Biased: when both are ready, the same branch wins every time, so a seeded
        // simulation of the driver runs the same way twice (sim/).
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(next) => {}
            _ = better_log.notify.notified() => nudged = Some(Instant::now()),
        }
    }
}

/// Starts an election in a term after `above`. Each election takes the next term after
/// this replica's own; a candidate whose log is behind this one's keeps the vote it gave
/// itself in its term, and refuses a candidate of that same term with a lower node id,
/// so standing in the candidate's term again and again would never win.
async fn stand(raft: &Raft, plan: &ElectionPlan, silence: Duration, why: &str, above: Term) {
    tracing::info!(
        rank = plan.rank,
        "{why} for {}ms; standing for election",
        silence.as_millis()
    );
    for _ in 0..3 {
        if let Err(e) = raft.trigger().elect().await {
            tracing::debug!(error = %e, "election not started");
            return;
        }
        match own_vote(raft).await {
            Ok((_, term)) if term <= above => {}
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rill_protocol::{NodeId, PartitionId};

    use super::*;

    fn config(node: u32, preferred: Option<u32>, members: &[u32]) -> PartitionConfig {
        PartitionConfig {
            partition_id: PartitionId(1),
            partition_count: 1,
            message_partition_count: 1,
            cluster_partition_count: None,
            cluster_engine_version: None,
            node_id: NodeId(node),
            members: members
                .iter()
                .map(|&id| (NodeId(id), format!("node-{id}")))
                .collect::<BTreeMap<_, _>>(),
            preferred_leader: preferred.map(NodeId),
            directory: "unused".into(),
            raft: Default::default(),
            flow_control: Default::default(),
            snapshot_period: Duration::from_secs(60),
            request_timeout: Duration::from_secs(10),
            max_inflight_proposals: 2,
            export_backlog_limit: None,
            write_rate: None,
            history: crate::HistorySettings::default(),
            command_limits: Default::default(),
            joining: false,
            priority_rank: None,
            backup: rill_config::BackupConfig::default(),
        }
    }

    #[test]
    fn ranks_follow_placement_order_from_the_preferred_replica() {
        // Partition 3 of a three-broker cluster is placed on 2, 0, 1.
        let ranks: Vec<u32> = [2, 0, 1]
            .iter()
            .map(|&node| ElectionPlan::of(&config(node, Some(2), &[0, 1, 2])).rank)
            .collect();
        assert_eq!(ranks, [0, 1, 2]);
    }

    #[test]
    fn with_defaults_the_next_replica_stands_within_three_seconds() {
        let preferred = ElectionPlan::of(&config(0, Some(0), &[0, 1, 2]));
        let next = ElectionPlan::of(&config(1, Some(0), &[0, 1, 2]));
        let last = ElectionPlan::of(&config(2, Some(0), &[0, 1, 2]));
        assert_eq!(preferred.patience(), Duration::from_millis(2500));
        assert_eq!(next.patience(), Duration::from_millis(2625));
        assert_eq!(last.patience(), Duration::from_millis(2750));
        // Every silent voter's lease has expired when the first candidate stands.
        assert!(next.lease < preferred.patience());
    }

    #[test]
    fn a_leaders_silence_counts_from_its_term_until_a_quorum_acknowledged_it() {
        let mut watch = QuorumWatch::default();
        let start = Instant::now();
        let later = |ms| start + Duration::from_millis(ms);
        assert_eq!(watch.silence(start, Term(3), None), Duration::ZERO);
        assert_eq!(
            watch.silence(later(2000), Term(3), None),
            Duration::from_millis(2000)
        );
        // openraft's own count once a quorum acknowledged something.
        assert_eq!(
            watch.silence(later(2000), Term(3), Some(120)),
            Duration::from_millis(120)
        );
        // A new term counts anew.
        assert_eq!(watch.silence(later(3000), Term(4), None), Duration::ZERO);
    }

    #[test]
    fn a_leader_that_lost_its_quorum_votes_for_the_preferred_replica() {
        assert_eq!(
            ElectionPlan::of(&config(1, Some(0), &[0, 1, 2])).successor,
            Some(0)
        );
        // The preferred replica itself leaves the choice to the membership.
        assert_eq!(
            ElectionPlan::of(&config(0, Some(0), &[0, 1, 2])).successor,
            None
        );
    }

    #[test]
    fn without_priority_every_replica_waits_a_random_part_of_half_a_timeout() {
        let mut c = config(1, Some(0), &[0, 1, 2]);
        c.raft.priority_election = false;
        for _ in 0..20 {
            let plan = ElectionPlan::of(&c);
            assert_eq!(plan.rank, 0);
            assert!(plan.jitter < Duration::from_millis(1250), "{plan:?}");
        }
        let no_preference = ElectionPlan::of(&config(1, None, &[0, 1, 2]));
        assert_eq!(no_preference.rank, 0);
    }
}
