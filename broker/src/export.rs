//! The exporter director: on a partition leader, feeds the records of the export column
//! family to every configured exporter and replicates how far each one got.
//!
//! ```text
//!  apply ──► records in the export CF ──► director (io runtime) ──► exporter.export
//!     ▲            (written position)          │ every REPORT_INTERVAL
//!     └──── CoreCommand::Exported{positions} ◄─┘ (proposed; on apply, entries at or
//!                                                 below the lowest are deleted)
//! ```
//!
//! Records live in partition state until every exporter has them, so neither a snapshot
//! nor a log purge can lose one. After a leader change the new leader opens each exporter
//! at its replicated position; a record may be shipped twice, never skipped. With no
//! exporter configured the director only trims the column family.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rill_exporter::{AnyExporter, ExportContext, Exporter};
use rill_protocol::{PartitionId, Position, Record};
use rill_raft::StateStore;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use crate::batch::CoreCommand;
use crate::state::{RocksState, exported_positions, read_records};

/// Records handed to the exporters at once.
const READ_LIMIT: usize = 1000;
/// Records just applied, kept for the director so it need not read them back; past
/// this many (the exporters are behind) it reads from the column family instead.
const FRESH_LIMIT: usize = 8 * READ_LIMIT;
/// How often exported positions are replicated (when they moved). Short, so that the
/// records are deleted while still in RocksDB's memtable and a flush drops them, instead
/// of writing every record to disk once more (docs/decisions/rocksdb-tuning.md).
const REPORT_INTERVAL: Duration = Duration::from_millis(100);
/// Pause before trying again after an exporter or the state failed.
const RETRY_DELAY: Duration = Duration::from_secs(1);

/// Makes the exporters of a partition (one set per leadership term).
pub type ExporterFactory = Arc<dyn Fn(PartitionId) -> Vec<AnyExporter> + Send + Sync>;

/// Proposes a core command on the partition (dropped if it no longer leads).
pub(crate) type Propose = Arc<dyn Fn(CoreCommand) + Send + Sync>;

/// The director of one leadership term; stops when dropped.
pub(crate) struct ExportDirector {
    written: watch::Sender<Position>,
    fresh: Arc<Mutex<FreshRecords>>,
    /// Whether any exporter runs (without one, records are only trimmed).
    feeds: bool,
    task: JoinHandle<()>,
}

impl ExportDirector {
    pub(crate) fn start(
        partition: PartitionId,
        exporters: Vec<AnyExporter>,
        store: Arc<StateStore>,
        written: Position,
        propose: Propose,
        runtime: &Handle,
    ) -> ExportDirector {
        let (tx, rx) = watch::channel(written);
        let fresh = Arc::new(Mutex::new(FreshRecords::default()));
        let feeds = !exporters.is_empty();
        let director = Director {
            partition,
            exporters,
            store,
            written: rx,
            fresh: fresh.clone(),
            propose,
        };
        ExportDirector {
            written: tx,
            fresh,
            feeds,
            // In the partition's span, which the leader starts it in.
            task: runtime.spawn(director.run().in_current_span()),
        }
    }

    /// Whether [`ExportDirector::written`] wants the records themselves.
    pub(crate) fn wants_records(&self) -> bool {
        self.feeds
    }

    /// Records up to `position` are in the export column family; `records` are the ones
    /// just written (in position order), if the caller kept them.
    pub(crate) fn written(&self, position: Position, records: Vec<Record>) {
        self.fresh.lock().push(records);
        self.written.send_if_modified(|current| {
            let moved = position > *current;
            if moved {
                *current = position;
            }
            moved
        });
    }
}

impl Drop for ExportDirector {
    fn drop(&mut self) {
        // Whatever an exporter buffered is fed again by the next leader.
        self.task.abort();
    }
}

struct Director {
    partition: PartitionId,
    exporters: Vec<AnyExporter>,
    store: Arc<StateStore>,
    written: watch::Receiver<Position>,
    fresh: Arc<Mutex<FreshRecords>>,
    propose: Propose,
}

impl Director {
    async fn run(mut self) {
        let replicated = loop {
            match exported_positions(&RocksState::new(&self.store.current())) {
                Ok(positions) => break positions,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read exported positions");
                    tokio::time::sleep(RETRY_DELAY).await;
                }
            }
        };
        let mut next = Position(u64::MAX);
        for exporter in &mut self.exporters {
            let from = replicated
                .get(exporter.id())
                .copied()
                .unwrap_or(Position::ZERO);
            let context = ExportContext {
                partition_id: self.partition,
                last_exported_position: from,
            };
            while let Err(e) = exporter.open(context).await {
                tracing::warn!(exporter = exporter.id(), error = %e, "cannot open exporter; trying again");
                tokio::time::sleep(RETRY_DELAY * 5).await;
            }
            next = next.min(from.next());
        }
        let mut reported: BTreeMap<String, Position> = replicated;
        let mut trimmed = Position::ZERO;
        let mut last_report = Instant::now();
        loop {
            let written = *self.written.borrow_and_update();
            if !self.exporters.is_empty() && next <= written {
                next = self.feed(next).await;
            } else {
                let flush_at = self
                    .exporters
                    .iter()
                    .filter_map(Exporter::flush_deadline)
                    .min();
                let report_at = last_report + REPORT_INTERVAL;
                let wake = flush_at.map_or(report_at, |f| f.min(report_at));
                tokio::select! {
                    changed = self.written.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    _ = tokio::time::sleep_until(wake) => {}
                }
            }
            let now = Instant::now();
            for exporter in &mut self.exporters {
                if exporter.flush_deadline().is_some_and(|d| d <= now)
                    && let Err(e) = exporter.flush().await
                {
                    tracing::warn!(exporter = exporter.id(), error = %e, "export flush failed");
                }
            }
            if now >= last_report + REPORT_INTERVAL {
                last_report = now;
                self.report(&mut reported, &mut trimmed);
            }
        }
    }

    /// Hands the records from `next` on to every exporter; returns the position after
    /// the last one handed over (or `next` again after a failure).
    async fn feed(&mut self, next: Position) -> Position {
        let fresh = self.take_fresh(next);
        let records =
            match fresh.map_or_else(|| read_records(&self.store.current(), next, READ_LIMIT), Ok) {
                Ok(records) => records,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read records to export");
                    tokio::time::sleep(RETRY_DELAY).await;
                    return next;
                }
            };
        let Some(last) = records.last().map(|r| r.position) else {
            // Deleted already (every exporter had them): nothing left up to `written`.
            return self.written.borrow().next();
        };
        for exporter in &mut self.exporters {
            // An exporter skips what it was handed before, so a retry is harmless.
            if let Err(e) = exporter.export(&records).await {
                tracing::warn!(exporter = exporter.id(), error = %e, "export failed; feeding again");
                tokio::time::sleep(RETRY_DELAY).await;
                return next;
            }
        }
        last.next()
    }

    /// The records from `next` on, if the actor handed them over already.
    fn take_fresh(&self, next: Position) -> Option<Vec<Record>> {
        self.fresh.lock().take(next)
    }

    /// Replicates the exporters' positions when they moved; with no exporters, lets the
    /// records written so far be deleted.
    fn report(&self, reported: &mut BTreeMap<String, Position>, trimmed: &mut Position) {
        let written = *self.written.borrow();
        let positions: BTreeMap<String, Position> = self
            .exporters
            .iter()
            .map(|e| (e.id().to_owned(), e.exported_position()))
            .collect();
        // Compared with what is replicated, not with what was proposed: a proposal lost
        // with a leader change is made again.
        let moved = if self.exporters.is_empty() {
            written > *trimmed
        } else {
            match exported_positions(&RocksState::new(&self.store.current())) {
                Ok(replicated) => positions != replicated,
                Err(_) => positions != *reported,
            }
        };
        if moved {
            (self.propose)(CoreCommand::Exported {
                positions: positions
                    .iter()
                    .map(|(id, p)| (id.clone(), p.get()))
                    .collect(),
            });
            *reported = positions;
            *trimmed = written;
        }
    }
}

/// Records just applied, as the batches the actor handed over: whole batches move
/// between threads, not the records one by one (a record is over 400 bytes; moving each
/// into a queue and out again showed as copying in profiles).
#[derive(Default)]
struct FreshRecords {
    batches: VecDeque<Vec<Record>>,
    records: usize,
}

impl FreshRecords {
    /// Appends a batch; starts over when it does not follow the last one or the
    /// exporters are too far behind (they then read from the column family).
    fn push(&mut self, batch: Vec<Record>) {
        let Some(first) = batch.first() else {
            return;
        };
        let follows = self
            .batches
            .back()
            .and_then(|b| b.last())
            .is_none_or(|last| last.position.next() == first.position);
        if !follows || self.records + batch.len() > FRESH_LIMIT {
            self.batches.clear();
            self.records = 0;
        }
        self.records += batch.len();
        self.batches.push_back(batch);
    }

    /// The batch that starts at `next` (at most `READ_LIMIT` records of it), if it is
    /// here. Handed over as it is: exporters take any number of records per call.
    fn take(&mut self, next: Position) -> Option<Vec<Record>> {
        // Drop what was exported already (a new leader may start mid-batch).
        while let Some(front) = self.batches.front_mut() {
            match front.last() {
                Some(last) if last.position >= next => {
                    let skip = front.iter().take_while(|r| r.position < next).count();
                    if skip > 0 {
                        front.drain(..skip);
                        self.records -= skip;
                    }
                    break;
                }
                _ => {
                    self.records -= front.len();
                    self.batches.pop_front();
                }
            }
        }
        if self.batches.front()?.first()?.position != next {
            return None;
        }
        let mut taken = self.batches.pop_front()?;
        if taken.len() > READ_LIMIT {
            // The rest waits for the next call.
            let rest = taken.split_off(READ_LIMIT);
            self.batches.push_front(rest);
        }
        self.records -= taken.len();
        Some(taken)
    }
}

#[cfg(test)]
mod tests {
    use rill_protocol::value::VariableRecord;
    use rill_protocol::{Intent, Key, PartitionId, RecordDraft, RecordValue, Timestamp};

    use super::*;

    fn batch(positions: std::ops::RangeInclusive<u64>) -> Vec<Record> {
        positions
            .map(|p| {
                let value = RecordValue::Variable(VariableRecord {
                    name: "x".into(),
                    value: p.to_string(),
                    scope_key: -1,
                    process_instance_key: -1,
                    process_definition_key: -1,
                    bpmn_process_id: String::new(),
                    tenant_id: String::new(),
                    root_process_instance_key: -1,
                });
                RecordDraft::event(Key(1), Intent::Created, value).into_record(
                    Position(p),
                    None,
                    Timestamp(0),
                    PartitionId(1),
                    "test",
                )
            })
            .collect()
    }

    fn positions(records: &[Record]) -> Vec<u64> {
        records.iter().map(|r| r.position.get()).collect()
    }

    #[test]
    fn fresh_records_hand_over_whole_batches_from_the_position_asked() {
        let mut fresh = FreshRecords::default();
        fresh.push(batch(1..=3));
        fresh.push(batch(4..=6));
        fresh.push(Vec::new());
        assert_eq!(
            fresh.take(Position(1)).as_deref().map(positions),
            Some(vec![1, 2, 3])
        );
        // Mid-batch (a new leader's replicated position): the rest of that batch.
        assert_eq!(
            fresh.take(Position(5)).as_deref().map(positions),
            Some(vec![5, 6])
        );
        assert_eq!(fresh.records, 0);
        assert!(fresh.take(Position(7)).is_none(), "nothing there yet");
        // A batch that does not follow starts over; asking for what is gone is None.
        fresh.push(batch(7..=8));
        fresh.push(batch(20..=21));
        assert!(fresh.take(Position(7)).is_none());
        assert_eq!(
            fresh.take(Position(20)).as_deref().map(positions),
            Some(vec![20, 21])
        );
    }

    #[test]
    fn fresh_records_split_a_batch_larger_than_the_read_limit_and_stay_bounded() {
        let mut fresh = FreshRecords::default();
        let size = READ_LIMIT as u64 + 5;
        fresh.push(batch(1..=size));
        assert_eq!(fresh.take(Position(1)).map(|b| b.len()), Some(READ_LIMIT));
        let rest = fresh.take(Position(READ_LIMIT as u64 + 1)).unwrap();
        assert_eq!(positions(&rest).first(), Some(&(READ_LIMIT as u64 + 1)));
        assert_eq!(rest.len(), 5);
        // Past the bound, the exporters are behind: what was kept is dropped.
        let mut next = 1;
        while fresh.records + READ_LIMIT <= FRESH_LIMIT {
            fresh.push(batch(next..=next + READ_LIMIT as u64 - 1));
            next += READ_LIMIT as u64;
        }
        fresh.push(batch(next..=next));
        assert_eq!(fresh.records, 1);
        assert!(fresh.take(Position(1)).is_none());
    }
}
