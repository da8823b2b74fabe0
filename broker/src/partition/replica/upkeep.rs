//! What a replica does on the actor's periodic tick: expire requests, propose due work
//! and the leader's own core commands (history expiry, a raised partition count), and
//! trigger periodic snapshots.

use std::time::{Duration, Instant};

use rill_engine_api::Engine;

use super::Replica;
use crate::batch::CoreCommand;
use crate::clock;
use crate::partition::leader::QueuedCommand;

/// How often a leader looks for history past `history.retention` when none was due.
const EXPIRY_PERIOD: Duration = Duration::from_secs(1);
/// How long a proposed `ExpireHistory` may stay unapplied before the leader proposes
/// again (it was lost with a leadership change, or is still queued behind a backlog).
const EXPIRY_RETRY: Duration = Duration::from_secs(10);

impl<E: Engine> Replica<E> {
    pub(in crate::partition) fn tick(&mut self) {
        let now = Instant::now();
        // Requests past their deadline: the client has given up.
        self.requests.expire(now);
        if let Some(leader) = self.leadership.leader() {
            let db = self.state.current();
            // Due work, and whatever waited out a hand-over's pause that ended without
            // one (otherwise every command is proposed as it comes).
            let _looked = leader.queue_due_work(&mut self.engine, &db);
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
            leader.redeliver(&mut self.engine, &db, self.checkpoint_id);
        }
        self.propose_history_expiry(now);
        self.propose_partition_count(now);
        self.propose_engine_version(now, false);
        if !self.config.snapshot_period.is_zero()
            && self
                .snapshots
                .periodic_due(self.config.snapshot_period, now)
        {
            self.snapshots.trigger(self.raft.as_ref());
        }
        // A disk write failing or succeeding again changes the health.
        self.publish_status();
        let limiter = self.requests.limiter();
        self.metrics.inflight.set(i64::from(limiter.inflight()));
        self.metrics
            .limit
            .set(i64::from(limiter.limit().min(i32::MAX as u32)));
    }

    /// Once a second on the leader: when the oldest finished instance in the history
    /// ended before `history.retention` ago (one seek), proposes its removal with the
    /// cutoff from this clock, so every replica removes the same entries. One proposal
    /// at a time; while each removes a full `EXPIRE_LIMIT`, the next follows as soon as
    /// it is applied (see `history_expiry_applied`), so expiry keeps up with any load.
    fn propose_history_expiry(&mut self, now: Instant) {
        let settings = self.config.history;
        if !settings.enabled || now < self.next_history_expiry || self.leadership.leader().is_none()
        {
            return;
        }
        // A replica of the first release could not read it.
        let expiry = CoreCommand::ExpireHistory { before: 0 };
        if self.cursor.engine_version < expiry.required_engine_version() {
            return;
        }
        // A proposal lost with a leader change is never applied: retry after a while.
        if self
            .history_expiry_proposed
            .is_some_and(|at| now.duration_since(at) < EXPIRY_RETRY)
        {
            return;
        }
        self.next_history_expiry = now + EXPIRY_PERIOD;
        let retention = i64::try_from(settings.retention.as_millis()).unwrap_or(i64::MAX);
        let before = clock::now().millis().saturating_sub(retention);
        let db = self.state.current();
        let oldest = crate::history::CfHistory::new(&db)
            .and_then(|history| Ok(rill_history::oldest_finished(&history)?));
        drop(db);
        match oldest {
            Ok(Some(end)) if end.millis() < before => {
                self.history_expiry_proposed = Some(now);
                self.propose_own(QueuedCommand::Core(CoreCommand::ExpireHistory { before }));
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not read the history's oldest end date"),
        }
    }

    /// On the leader: when the cluster configuration has more partitions than this
    /// partition's state, proposes the higher count (again after a while if it was
    /// lost with a leader change).
    fn propose_partition_count(&mut self, now: Instant) {
        let Some(wanted) = &self.config.cluster_partition_count else {
            return;
        };
        let count = wanted.load(std::sync::atomic::Ordering::Relaxed);
        if count <= self.partition_count
            || self.leadership.leader().is_none()
            || self
                .partition_count_proposed
                .is_some_and(|at| now.duration_since(at) < EXPIRY_RETRY)
        {
            return;
        }
        self.partition_count_proposed = Some(now);
        self.propose_own(QueuedCommand::Core(CoreCommand::PartitionCount { count }));
    }

    /// The engine version the partition's log may be raised to now: the highest that
    /// every broker of the cluster announced it applies, and this build does.
    pub(super) fn raisable_engine_version(&self) -> u32 {
        let supported = rill_protocol::version::supported_engine_versions().max;
        match &self.config.cluster_engine_version {
            Some(cluster) => cluster
                .load(std::sync::atomic::Ordering::Relaxed)
                .min(supported),
            None => supported,
        }
    }

    /// On the leader: once every broker of the cluster announced that it applies a
    /// higher engine version than the partition's state holds (and this build does),
    /// proposes it: on the tick (again after a while if it was lost with a leader
    /// change), or at once (`ahead_of_a_command`, once per leadership) so that the raise
    /// goes into the log before a command that arrives meanwhile.
    pub(super) fn propose_engine_version(&mut self, now: Instant, ahead_of_a_command: bool) {
        let version = self.raisable_engine_version();
        let current = self.cursor.engine_version;
        let Some(term) = self.leadership.term() else {
            return;
        };
        let proposed = self.engine_version_proposed;
        let pending = if ahead_of_a_command {
            proposed.is_some_and(|(_, in_term)| in_term == term)
        } else {
            proposed.is_some_and(|(at, _)| now.duration_since(at) < EXPIRY_RETRY)
        };
        if version <= current || pending {
            return;
        }
        tracing::info!(
            from = current,
            to = version,
            "every broker of the cluster applies engine version {version}: raising the \
             partition's engine version from {current}"
        );
        self.engine_version_proposed = Some((now, term));
        self.propose_own(QueuedCommand::Core(CoreCommand::RaiseEngineVersion {
            version,
        }));
    }

    /// `commands` `ExpireHistory` commands were applied and removed `removed` entries:
    /// when each removed its limit there may be more, so the leader looks again at once.
    pub(super) fn history_expiry_applied(&mut self, commands: u64, removed: u64) {
        self.metrics.history_expired.inc_by(removed);
        self.history_expiry_proposed = None;
        if removed >= commands * rill_history::EXPIRE_LIMIT as u64 {
            let now = Instant::now();
            self.next_history_expiry = now;
            self.propose_history_expiry(now);
        }
    }
}
