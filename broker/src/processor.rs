//! The stream processor: applies committed command batches through the engine.
//!
//! For every command of every entry, in log order:
//!
//! ```text
//!  decode ──► engine.process(ctx, overlay over the batch) ──► Ok ──► keep its writes,
//!                                   │                                 records at dense
//!                                   │                                 positions
//!                                   └─ Processing error ──► drop its writes, write the
//!                                                           engine's error record
//! ```
//!
//! then state changes, records, the cursor and the applied log id go into one RocksDB
//! write batch. Nothing here reads the clock or depends on the replica: the timestamp is
//! the entry's (never earlier than the last applied one), positions continue from state.
//!
//! A batch that raft appended in a later term than its proposer built it for is skipped
//! whole, on every replica alike (see `batch`).

use rill_engine_api::{
    Action, Engine, EngineError, EngineEvent, Overlay, ProcessingContext, ProcessingOutput,
    RequestId,
};
use rill_history::{EXPIRE_LIMIT, HistoryWriter};
use rill_protocol::{BROKER_VERSION, PartitionId, Position, Record, Timestamp, codec};
use rill_raft::{ApplyBatch, RaftTerm, StateDb};
use rocksdb::WriteBatch;

use crate::batch::{BatchView, CoreCommand, Item};
use crate::error::{Error, Result};
use crate::history::CfHistory;
use crate::state::{
    Cursor, RocksState, apply_checkpoint, apply_cluster_configuration, apply_exported,
    apply_partition_count, latest_checkpoint, write_changes,
};

/// Which partition is applying.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PartitionInfo {
    pub partition_id: PartitionId,
    /// The partition count until a cluster change stores a higher one in state.
    pub partition_count: u16,
    /// The partition count messages are routed over (the cluster's original one).
    pub message_partition_count: u16,
    /// Feed the history store from the records (`history.enabled`).
    pub history: bool,
}

/// What applying a batch produced, for the partition to act on after the write.
pub(crate) struct Applied<E: Engine> {
    /// Requests answered now, in order.
    pub responses: Vec<(RequestId, E::Response)>,
    /// Requests whose command was applied but is answered later (a `Respond` action).
    pub deferred: Vec<RequestId>,
    /// Requests in entries raft appended in a later term than they were built for:
    /// skipped on every replica, so certainly not applied.
    pub skipped: Vec<RequestId>,
    pub actions: Vec<Action<E::Command, E::Response>>,
    pub commands: u64,
    pub records: u64,
    pub errors: u64,
    /// Business events by kind and action, summed over the batch.
    pub events: Vec<EngineEvent>,
    /// Export entries up to here were deleted (every exporter has them).
    pub exported: Option<Position>,
    /// The records written, in position order, when the caller asked to keep them (for
    /// the exporter director, which then need not read them back).
    pub written: Vec<Record>,
    /// Entries removed from the history store (finished instances, and their jobs and
    /// incidents).
    pub history_expired: u64,
    /// `ExpireHistory` commands applied.
    pub history_expiries: u64,
    /// The cluster configuration this batch stored (JSON), if it stored one.
    pub cluster: Option<String>,
    /// The partition count this batch raised the partition to, if it did.
    pub partition_count: Option<u16>,
    /// The checkpoints this batch carried, in order, and what became of each.
    pub checkpoints: Vec<crate::backup::CheckpointApplied>,
    /// Commands refused because they carried a checkpoint id above the partition's
    /// latest (see [`Item::AfterCheckpoint`]): the highest id, and their requests.
    pub behind_checkpoint: Option<u64>,
    pub refused_behind_checkpoint: Vec<RequestId>,
    /// The engine version this batch raised the partition to, if it did.
    pub engine_version: Option<u32>,
}

impl<E: Engine> Default for Applied<E> {
    fn default() -> Self {
        Applied {
            responses: Vec::new(),
            deferred: Vec::new(),
            skipped: Vec::new(),
            actions: Vec::new(),
            commands: 0,
            records: 0,
            errors: 0,
            events: Vec::new(),
            exported: None,
            written: Vec::new(),
            history_expired: 0,
            history_expiries: 0,
            cluster: None,
            partition_count: None,
            checkpoints: Vec::new(),
            behind_checkpoint: None,
            refused_behind_checkpoint: Vec::new(),
            engine_version: None,
        }
    }
}

impl<E: Engine> Applied<E> {
    fn count_event(&mut self, event: EngineEvent) {
        match self
            .events
            .iter_mut()
            .find(|e| e.kind == event.kind && e.action == event.action)
        {
            Some(sum) => sum.count += event.count,
            None => self.events.push(event),
        }
    }
}

/// Applies `batch` to `db` and advances `cursor`. Nothing was written when it returns an
/// error: [`Error::StateWrite`] is a failed disk write, applied again later; any other is
/// fatal for the partition (an entry no replica can read, a broken state).
/// With `keep_records`, the records written are returned in [`Applied::written`].
pub(crate) fn apply_batch<E: Engine>(
    engine: &mut E,
    db: &StateDb,
    info: PartitionInfo,
    cursor: &mut Cursor,
    batch: &ApplyBatch,
    keep_records: bool,
) -> Result<Applied<E>> {
    let base = RocksState::new(db);
    let mut state = Overlay::new(&base);
    let mut next = *cursor;
    let mut applied = Applied::<E>::default();
    let mut write = WriteBatch::default();
    let export = db.export_cf()?;
    let history_base = CfHistory::new(db)?;
    let mut history = info.history.then(|| HistoryWriter::new(&history_base));
    let mut out = ProcessingOutput::default();
    let mut record_bytes = Vec::with_capacity(256);
    let mut partition_count =
        crate::state::partition_count(&state)?.unwrap_or(info.partition_count);
    // The engine commands of an item: its own, or the one a raised partition count
    // brings (`Engine::partitions_added`), processed right there in the log's order.
    let mut commands: Vec<(Option<RequestId>, E::Command)> = Vec::with_capacity(1);

    for entry in &batch.entries {
        let Some(data) = &entry.data else { continue };
        let mut view = BatchView::parse(data)?;
        if !view.built_for(entry.log_id.term()) {
            tracing::debug!(log_id = %entry.log_id, built_for = ?view.term, "skipping a batch appended in a later term");
            applied.skipped.extend(view.requests()?);
            continue;
        }
        let timestamp = view.timestamp.max(next.last_timestamp);
        next.last_timestamp = timestamp;
        let supported = rill_protocol::version::supported_engine_versions();
        while let Some(item) = view.next_item::<E::Command>() {
            let item = item?;
            // A command of an engine version this build does not apply: stop here,
            // before anything of the batch is written, rather than diverge.
            let required = match &item {
                Item::Engine(_, command) => E::required_engine_version(command),
                // Written only after a backup checkpoint, which needs version 2.
                Item::AfterCheckpoint { command, .. } => E::required_engine_version(command)
                    .max(rill_protocol::version::ENGINE_VERSION_2),
                Item::Core(CoreCommand::RaiseEngineVersion { version }) => *version,
                Item::Core(command) => command.required_engine_version(),
            };
            if required > supported.max {
                return Err(Error::EngineVersionUnsupported {
                    partition: info.partition_id,
                    log_index: entry.log_id.index,
                    required,
                    supported,
                });
            }
            match item {
                Item::Engine(request, command) => commands.push((request, command)),
                Item::AfterCheckpoint {
                    request,
                    checkpoint_id,
                    command,
                } => {
                    // The other side's cut is past this command: it may only be applied
                    // after this partition's cut for the same backup, or a restore of
                    // that backup would hold one side of the exchange and not the other.
                    let latest = latest_checkpoint(&state)?.map_or(0, |(id, _)| id);
                    if checkpoint_id <= latest {
                        commands.push((request, command));
                    } else {
                        tracing::debug!(
                            checkpoint_id,
                            latest,
                            "refused a command that carries a checkpoint not recorded here"
                        );
                        applied.behind_checkpoint =
                            Some(applied.behind_checkpoint.unwrap_or(0).max(checkpoint_id));
                        applied.refused_behind_checkpoint.extend(request);
                    }
                }
                Item::Core(CoreCommand::Exported { positions }) => {
                    let floor = apply_exported(&mut state, &positions, next.last_position)?;
                    if floor > Position::ZERO {
                        write.delete_range_cf(
                            &export,
                            0u64.to_be_bytes(),
                            floor.next().get().to_be_bytes(),
                        );
                    }
                    applied.exported = Some(floor);
                }
                Item::Core(CoreCommand::ClusterConfiguration {
                    expected_version,
                    version,
                    json,
                }) => {
                    if apply_cluster_configuration(&mut state, expected_version, version, &json)? {
                        applied.cluster = Some(json);
                    }
                }
                Item::Core(CoreCommand::PartitionCount { count }) => {
                    if let Some(before) = apply_partition_count(&mut state, count, partition_count)?
                    {
                        partition_count = count;
                        applied.partition_count = Some(count);
                        let (first, last) = (PartitionId(before + 1), PartitionId(count));
                        if let Some(command) =
                            engine.partitions_added(info.partition_id, first, last)
                        {
                            commands.push((None, command));
                        }
                    }
                }
                Item::Core(CoreCommand::Checkpoint { backup_id }) => {
                    let position = next.last_position;
                    let outcome = match apply_checkpoint(&mut state, backup_id, position)? {
                        Ok(()) => crate::backup::CheckpointOutcome::Created {
                            position,
                            log_index: entry.log_id.index,
                        },
                        Err(latest) => crate::backup::CheckpointOutcome::Refused { latest },
                    };
                    applied.checkpoints.push(crate::backup::CheckpointApplied {
                        backup_id,
                        timestamp,
                        outcome,
                    });
                }
                Item::Core(CoreCommand::RaiseEngineVersion { version }) => {
                    if version > next.engine_version {
                        next.engine_version = version;
                        applied.engine_version = Some(version);
                    }
                }
                Item::Core(CoreCommand::ExpireHistory { before }) => {
                    if let Some(history) = &mut history {
                        let removed = history.expire(Timestamp(before), EXPIRE_LIMIT)?;
                        applied.history_expired += removed as u64;
                        applied.history_expiries += 1;
                    }
                }
            }
            for (request, command) in commands.drain(..) {
                let position = next.last_position.next();
                let ctx = ProcessingContext {
                    partition_id: info.partition_id,
                    partition_count,
                    position,
                    timestamp,
                    engine_version: next.engine_version,
                    request,
                    message_partition_count: info.message_partition_count,
                    limits: view.limits,
                };
                out.clear();
                let mut txn = Overlay::new(&state);
                match engine.process(&ctx, &mut txn, &command, &mut out) {
                    Ok(()) => {
                        let writes = txn.into_writes();
                        state.absorb(writes);
                    }
                    Err(EngineError::Processing(error)) => {
                        drop(txn); // roll the command's changes back
                        let reason = error.to_string();
                        tracing::warn!(%position, %reason, "command processing failed");
                        out.clear();
                        out.records
                            .push(engine.processing_error_record(&command, &reason));
                        out.response = Some(engine.processing_error_response(&reason));
                        applied.errors += 1;
                    }
                    Err(EngineError::State(e)) => return Err(Error::State(e)),
                }
                for (i, draft) in out.records.drain(..).enumerate() {
                    let record_position = Position(position.get() + i as u64);
                    let source = (i > 0).then_some(position);
                    if let Some(event) = E::record_event(&draft) {
                        applied.count_event(event);
                    }
                    let record = draft.into_record(
                        record_position,
                        source,
                        timestamp,
                        info.partition_id,
                        BROKER_VERSION,
                    );
                    if let Some(history) = &mut history {
                        history.index(&record)?;
                    }
                    record_bytes.clear();
                    codec::encode_into(&record, &mut record_bytes)?;
                    write.put_cf(&export, record_position.get().to_be_bytes(), &record_bytes);
                    next.last_position = record_position;
                    applied.records += 1;
                    if keep_records {
                        applied.written.push(record);
                    }
                }
                if let Some(request) = request {
                    match out.response.take() {
                        Some(response) => applied.responses.push((request, response)),
                        None => applied.deferred.push(request),
                    }
                }
                applied.actions.append(&mut out.actions);
                applied.commands += 1;
            }
        }
    }

    write_changes(&mut write, state.into_writes());
    if let Some(history) = history {
        history_base.write(&mut write, history.into_writes());
    }
    next.write(&mut write);
    batch.mark_applied(&mut write)?;
    db.write(write).map_err(Error::StateWrite)?;
    *cursor = next;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use rill_engine_api::CommandLimits;
    use rill_protocol::Term;
    use rill_raft::{CommittedEntry, StateStore};

    use super::*;
    use crate::backup::CheckpointOutcome;
    use crate::batch::BatchBuilder;
    use crate::state::latest_checkpoint;
    use crate::testing::{ListCommand, ListEngine};

    fn entry(index: u64, build: impl FnOnce(&mut BatchBuilder)) -> CommittedEntry {
        let mut builder =
            BatchBuilder::new(Timestamp(index as i64), Term(1), CommandLimits::default());
        build(&mut builder);
        CommittedEntry {
            log_id: rill_raft::log_id(Term(1), 0, index),
            data: Some(Bytes::from(builder.finish())),
        }
    }

    fn append(id: u64) -> ListCommand {
        ListCommand::Append { id }
    }

    /// A command from another partition carries that partition's checkpoint id: every
    /// replica refuses it until this partition recorded that checkpoint, and applies it
    /// after the checkpoint once it has, so it falls after this partition's cut too.
    #[test]
    fn a_command_carrying_a_checkpoint_is_applied_only_after_that_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::open(dir.path()).unwrap();
        let db = store.current();
        let mut engine = ListEngine;
        let info = PartitionInfo {
            partition_id: PartitionId(2),
            partition_count: 2,
            message_partition_count: 2,
            history: false,
        };
        let mut cursor = Cursor::load(&RocksState::new(&db)).unwrap();

        // Checkpoint 4 is not recorded here: refused on every replica, nothing written.
        let batch = ApplyBatch::new(
            vec![entry(1, |b| {
                b.push(None, &append(1)).unwrap();
                b.push_after_checkpoint(Some(RequestId(7)), 4, &append(10))
                    .unwrap();
            })],
            None,
        )
        .unwrap();
        let applied = apply_batch(&mut engine, &db, info, &mut cursor, &batch, true).unwrap();
        assert_eq!(applied.refused_behind_checkpoint, vec![RequestId(7)]);
        assert_eq!(applied.behind_checkpoint, Some(4));
        assert_eq!(applied.commands, 1, "only the plain command");
        assert!(applied.responses.is_empty());
        assert_eq!(latest_checkpoint(&RocksState::new(&db)).unwrap(), None);

        // The checkpoint the leader proposes ahead of it, then the command again, and
        // one that carries a lower id (recorded already): both applied after the cut.
        let batch = ApplyBatch::new(
            vec![
                entry(2, |b| {
                    b.push_core(&CoreCommand::Checkpoint { backup_id: 4 })
                        .unwrap()
                }),
                entry(3, |b| {
                    b.push_after_checkpoint(Some(RequestId(8)), 4, &append(10))
                        .unwrap();
                    b.push_after_checkpoint(None, 3, &append(11)).unwrap();
                }),
            ],
            None,
        )
        .unwrap();
        let applied = apply_batch(&mut engine, &db, info, &mut cursor, &batch, true).unwrap();
        assert!(applied.refused_behind_checkpoint.is_empty());
        assert_eq!(applied.behind_checkpoint, None);
        let [checkpoint] = applied.checkpoints[..] else {
            panic!("one checkpoint: {:?}", applied.checkpoints);
        };
        let CheckpointOutcome::Created {
            position,
            log_index,
        } = checkpoint.outcome
        else {
            panic!("recorded: {checkpoint:?}");
        };
        assert_eq!((checkpoint.backup_id, log_index), (4, 2));
        assert_eq!(
            position,
            Position(2),
            "after the plain command's two records"
        );
        assert_eq!(applied.commands, 2);
        assert_eq!(applied.responses.len(), 1);
        assert_eq!(applied.responses[0].0, RequestId(8));
        assert_eq!(applied.written.len(), 4);
        assert!(
            applied
                .written
                .iter()
                .all(|record| record.position > position)
        );
        assert_eq!(
            latest_checkpoint(&RocksState::new(&db)).unwrap(),
            Some((4, position))
        );
    }
}
