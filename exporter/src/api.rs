//! The exporter API: what the exporter director on a partition leader drives.
//!
//! ```text
//!   open(ctx) ──► export(batch) ──► export(batch) … ──► close()
//!                    │    ▲
//!                    ▼    │  flush() when flush_deadline() passes
//!               exported_position()  (read after every call; replicate when it grows)
//! ```
//!
//! # The position contract
//!
//! * The director feeds records in position order, starting after
//!   [`ExportContext::last_exported_position`]. Records at or below the highest position
//!   already handed over are ignored, so re-feeding after a retry or a leader change is
//!   harmless.
//! * [`Exporter::exported_position`] is the highest position `p` such that every record
//!   at or below `p` that was handed to this exporter is durably shipped (acknowledged by
//!   Elasticsearch, or written and fsynced), deliberately filtered out, or permanently
//!   rejected (logged and counted). It never runs ahead of what succeeded.
//! * The director replicates that position with a command and deletes export entries
//!   below the minimum over all exporters. After a leader change the new leader opens the
//!   exporter with the replicated position and feeds from the next one.
//! * Delivery is at least once: a record may be shipped again after a failure or a leader
//!   change. The Elasticsearch document id `{partitionId}-{position}` makes that
//!   idempotent.
//!
//! # How the director drives an exporter
//!
//! ```text
//! exporter.open(ExportContext { partition_id, last_exported_position: replicated }).await?;
//! let mut next = replicated.next();
//! loop {
//!     select! {
//!         records = read_records(next, 1_000) => {        // from the export column family
//!             exporter.export(&records).await?;            // awaited in the branch body
//!             next = last(&records).next();
//!         }
//!         _ = sleep_until(deadline), if let Some(deadline) = exporter.flush_deadline() => {
//!             exporter.flush().await?;
//!         }
//!         _ = lost_leadership => break,
//!     }
//!     let exported = exporter.exported_position();
//!     if exported > replicated { propose(UpdateExportedPosition { id, exported }); … }
//! }
//! exporter.close().await?;   // then replicate exported_position() one last time
//! ```
//!
//! If a call is abandoned (its future dropped), feed again from
//! `exported_position().next()`: what was handed over already is skipped.
//!
//! # Faults and cancellation
//!
//! Transient failures (Elasticsearch down, slow, 429, 5xx, items of a bulk failing) are
//! retried inside [`Exporter::export`] and [`Exporter::flush`] with capped exponential
//! backoff, for as long as it takes: the calls simply do not return meanwhile, which is
//! the back-pressure (the director stops feeding and the export backlog grows until flow
//! control throttles writes). Only problems a retry cannot fix return `Err`.
//!
//! Every future returned here may be dropped at an `.await` point (the director does so
//! when it loses leadership or shuts down); the exporter's buffer and position stay
//! consistent, and the worst outcome is that a record is shipped twice.

use std::future::Future;

use rill_protocol::{PartitionId, Position, Record};
use tokio::time::Instant;

use crate::error::Result;

/// What an exporter learns when it is opened on a partition leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportContext {
    pub partition_id: PartitionId,
    /// The replicated exported position of this exporter (`Position::ZERO` if it never
    /// exported anything). The director feeds from the position after it.
    pub last_exported_position: Position,
}

/// One exporter of a partition's records. See the module documentation of `api` for the
/// contract between the director and an exporter.
pub trait Exporter: Send {
    /// A stable id, the key under which the director replicates this exporter's position
    /// (e.g. `elasticsearch`).
    fn id(&self) -> &'static str;

    /// Connects and prepares the target (e.g. puts index templates). Transient failures
    /// are retried inside; `Err` means the configuration or the target refuses to work,
    /// and the director should log it and try again later.
    fn open(&mut self, context: ExportContext) -> impl Future<Output = Result<()>> + Send;

    /// Takes records in position order. May only buffer them; flushes by itself when a
    /// size threshold is reached.
    fn export(&mut self, records: &[Record]) -> impl Future<Output = Result<()>> + Send;

    /// Ships everything buffered, retrying until it is shipped. When it returns `Ok`,
    /// [`Exporter::exported_position`] covers every record handed over so far.
    fn flush(&mut self) -> impl Future<Output = Result<()>> + Send;

    /// When the director should call [`Exporter::flush`] because the oldest buffered
    /// record has waited long enough; `None` while nothing is buffered.
    fn flush_deadline(&self) -> Option<Instant>;

    /// The last position durably exported (see the module documentation).
    fn exported_position(&self) -> Position;

    /// Tries one last flush without retrying, then releases connections and files.
    /// Whatever was not shipped is fed again by the next leader.
    fn close(&mut self) -> impl Future<Output = Result<()>> + Send;
}
