//! The JSON-lines exporter: one record per line, as Zeebe's JSON document, appended to a
//! file and fsynced on every flush. For debugging, and for the benchmark's history-on
//! variant without a search engine.
//!
//! After a leader change the new leader feeds again from the replicated position, so a
//! line can appear twice; readers de-duplicate by `partitionId` and `position`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rill_config::JsonlExporterConfig;
use rill_protocol::{PartitionId, Position, Record};
use tokio::time::Instant;
use tracing::warn;

use crate::api::{ExportContext, Exporter};
use crate::backoff::Backoff;
use crate::document::write_record_document;
use crate::error::{Error, Result};
use crate::filter::RecordFilter;
use crate::metrics::{BoundMetrics, ExporterMetrics};
use crate::pending::Pending;

const ID: &str = "jsonl";

pub struct JsonlExporter {
    config: JsonlExporterConfig,
    filter: RecordFilter,
    metrics: ExporterMetrics,
    /// fsyncs done, for operators and tests.
    syncs: Arc<AtomicU64>,
    open: Option<OpenState>,
    /// The exported position as of `close`, readable after the file is released.
    closed_at: Position,
}

struct OpenState {
    partition_id: PartitionId,
    file: Arc<Mutex<File>>,
    pending: Pending,
    metrics: BoundMetrics,
}

impl JsonlExporter {
    pub fn new(config: JsonlExporterConfig, metrics: ExporterMetrics) -> Result<JsonlExporter> {
        let mut problems = Vec::new();
        if config.path.as_os_str().is_empty() {
            problems.push("path: must name a file".to_owned());
        }
        if config.flush_size == 0 {
            problems.push("flush-size: must be at least 1".to_owned());
        }
        if config.flush_delay.is_zero() {
            problems.push("flush-delay: must be more than 0".to_owned());
        }
        if !problems.is_empty() {
            return Err(Error::Config {
                exporter: ID,
                problems,
            });
        }
        Ok(JsonlExporter {
            filter: RecordFilter::new(config.filter.clone()),
            config,
            metrics,
            syncs: Arc::new(AtomicU64::new(0)),
            open: None,
            closed_at: Position::ZERO,
        })
    }

    /// How many times the file was fsynced.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.config.path
    }
}

/// Writes every pending line and fsyncs, retrying (disk full, I/O errors) until it works.
///
/// Cancellation safety: the pending lines are only dropped after a write and fsync that
/// completed; a dropped future at worst leaves lines that are written again.
async fn flush(path: &Path, syncs: &Arc<AtomicU64>, state: &mut OpenState) {
    if state.pending.is_empty() {
        return;
    }
    let started = Instant::now();
    let count = state.pending.len();
    let lines = Arc::new(state.pending.front_bytes(count).to_vec());
    state.metrics.bulk_size.observe(count as f64);
    state.metrics.bulk_bytes.observe(lines.len() as f64);
    let mut backoff = Backoff::new(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(10),
    );
    loop {
        let file = state.file.clone();
        let data = lines.clone();
        let written = tokio::task::spawn_blocking(move || {
            let mut file = file.lock();
            file.write_all(&data)?;
            file.sync_data()
        })
        .await;
        match written {
            Ok(Ok(())) => break,
            Ok(Err(error)) => {
                state.metrics.failed_request("io");
                let delay = backoff.next_delay();
                warn!(path = %path.display(), %error, ?delay, "writing the JSON-lines export failed; retrying");
                tokio::time::sleep(delay).await;
            }
            Err(join_error) => {
                state.metrics.failed_request("io");
                warn!(path = %path.display(), %join_error, "JSON-lines writer task failed; retrying");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
    syncs.fetch_add(1, Ordering::Relaxed);
    state.pending.settle_front(&vec![true; count]);
    state.metrics.positions(
        state.pending.accepted().get(),
        state.pending.exported_position().get(),
    );
    state
        .metrics
        .flush_duration
        .observe(started.elapsed().as_secs_f64());
}

impl Exporter for JsonlExporter {
    fn id(&self) -> &'static str {
        ID
    }

    async fn open(&mut self, context: ExportContext) -> Result<()> {
        let path = self.config.path.clone();
        let opened = tokio::task::spawn_blocking(move || {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)?;
            }
            OpenOptions::new().create(true).append(true).open(&path)
        })
        .await
        .map_err(|e| Error::Io {
            path: self.config.path.clone(),
            source: std::io::Error::other(e),
        })?;
        let file = opened.map_err(|source| Error::Io {
            path: self.config.path.clone(),
            source,
        })?;
        let metrics = self.metrics.for_exporter(ID, context.partition_id.get());
        let position = context.last_exported_position.get();
        metrics.positions(position, position);
        self.open = Some(OpenState {
            partition_id: context.partition_id,
            file: Arc::new(Mutex::new(file)),
            pending: Pending::new(context.last_exported_position),
            metrics,
        });
        Ok(())
    }

    async fn export(&mut self, records: &[Record]) -> Result<()> {
        let state = self.open.as_mut().ok_or(Error::NotOpen { exporter: ID })?;
        for record in records {
            if !state.pending.accept(record.position) || !self.filter.accepts(record) {
                continue;
            }
            state.pending.push(record.position, |out| {
                write_record_document(record, out);
                out.push(b'\n');
            });
            if state.pending.len() >= self.config.flush_size {
                flush(&self.config.path, &self.syncs, state).await;
            }
        }
        state.metrics.positions(
            state.pending.accepted().get(),
            state.pending.exported_position().get(),
        );
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        let state = self.open.as_mut().ok_or(Error::NotOpen { exporter: ID })?;
        flush(&self.config.path, &self.syncs, state).await;
        Ok(())
    }

    fn flush_deadline(&self) -> Option<Instant> {
        self.open
            .as_ref()
            .and_then(|state| state.pending.deadline(self.config.flush_delay))
    }

    fn exported_position(&self) -> Position {
        self.open
            .as_ref()
            .map_or(self.closed_at, |state| state.pending.exported_position())
    }

    async fn close(&mut self) -> Result<()> {
        if let Some(mut state) = self.open.take() {
            let attempt = flush(&self.config.path, &self.syncs, &mut state);
            if tokio::time::timeout(std::time::Duration::from_secs(10), attempt)
                .await
                .is_err()
            {
                warn!(
                    partition = state.partition_id.get(),
                    "JSON-lines exporter closed with records not written; the next leader writes them"
                );
            }
            // Dropping the state closes the file.
            self.closed_at = state.pending.exported_position();
        }
        Ok(())
    }
}
