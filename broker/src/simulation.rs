//! The partition core's apply path, for the deterministic simulator (`sim/`): the same
//! entry format the leader proposes and the same stream processor every replica applies
//! committed entries with, without the partition actor, its clock and its threads
//! (docs/decisions/simulation.md).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rill_config::RaftConfig;
use rill_engine_api::{CommandLimits, Engine, RequestId};
use rill_protocol::{PartitionId, Position, Term, Timestamp};
use rill_raft::{ApplyBatch, BetterLog, Raft, StateDb};
use serde::Serialize;

use crate::batch::BatchBuilder;
use crate::error::{Error, Result};
use crate::metrics::BrokerMetrics;
use crate::partition::{ElectionPlan, drive_elections};
use crate::processor::{PartitionInfo, apply_batch};
use crate::state::{Cursor, RocksState};

/// The bytes of one raft entry: `commands` with their waiting requests, stamped with the
/// leader's `timestamp` and the `term` it leads in, as the partition leader builds them.
pub fn encode_entry<C: Serialize>(
    timestamp: Timestamp,
    term: Term,
    commands: &[(Option<RequestId>, C)],
) -> Result<Vec<u8>> {
    let mut builder = BatchBuilder::new(timestamp, term, CommandLimits::default());
    for (request, command) in commands {
        builder.push(*request, command)?;
    }
    Ok(builder.finish())
}

/// What applying a batch answered.
pub struct Applied<E: Engine> {
    /// Requests answered, in order.
    pub responses: Vec<(RequestId, E::Response)>,
    /// Requests in entries skipped because raft appended them in a later term than
    /// they were built for: certainly not applied.
    pub skipped: Vec<RequestId>,
    /// Records written.
    pub records: u64,
}

/// One replica's stream processor: an engine and where it stands in the state database.
pub struct Processor<E: Engine> {
    engine: E,
    info: PartitionInfo,
    cursor: Cursor,
}

impl<E: Engine> Processor<E> {
    /// A processor for partition `partition_id` of a one-partition cluster, continuing
    /// from what `db` holds.
    pub fn new(engine: E, partition_id: PartitionId, db: &StateDb) -> Result<Processor<E>> {
        let cursor = Cursor::load(&RocksState::new(db))?;
        Ok(Processor {
            engine,
            info: PartitionInfo {
                partition_id,
                partition_count: 1,
                message_partition_count: 1,
                history: false,
            },
            cursor,
        })
    }

    /// Applies committed entries exactly as a broker's replica does: state, records, the
    /// cursor and the applied log id in one write.
    pub fn apply(&mut self, db: &StateDb, batch: &ApplyBatch) -> Result<Applied<E>> {
        match apply_batch(
            &mut self.engine,
            db,
            self.info,
            &mut self.cursor,
            batch,
            false,
        ) {
            Ok(applied) => Ok(Applied {
                responses: applied.responses,
                skipped: applied.skipped,
                records: applied.records,
            }),
            Err(e) => {
                self.engine.reset_caches();
                Err(e)
            }
        }
    }

    /// Commands whose time has come at `now` on this replica's state (timers due, job
    /// deadlines passed), at most `limit`: what a leader proposes for them.
    pub fn due_commands(
        &mut self,
        db: &StateDb,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<E::Command>> {
        let mut commands = Vec::new();
        self.engine
            .due_commands(&RocksState::new(db), now, limit, &mut commands)
            .map_err(Error::QueryFailed)?;
        Ok(commands)
    }

    /// The position of the last record written.
    pub fn last_position(&self) -> Position {
        self.cursor.last_position
    }
}

/// The broker's election driver (`partition/election.rs`) for one replica, until raft
/// stops: it stands after `raft.election-timeout` without a leader plus `rank` priority
/// steps (with `raft.priority-election`) or plus `jitter` (without), and at once when it
/// refused a candidate whose log is behind. The caller chooses the jitter, which a broker
/// draws from the process's randomness.
pub fn election_driver(
    raft: Raft,
    settings: &RaftConfig,
    rank: u32,
    jitter: Duration,
    better_log: Arc<BetterLog>,
) -> impl Future<Output = ()> + Send + 'static {
    let (rank, jitter) = if settings.priority_election {
        (rank, Duration::ZERO)
    } else {
        (0, jitter)
    };
    let plan = ElectionPlan {
        timeout: settings.election_timeout,
        lease: rill_raft::leader_lease(settings),
        rank,
        step: settings.heartbeat_interval / 2,
        jitter,
        tick: settings.heartbeat_interval / 2,
        shared_rank: None,
        successor: None,
    };
    let metrics = BrokerMetrics::unregistered().partition(1);
    drive_elections(raft, plan, better_log, metrics)
}
