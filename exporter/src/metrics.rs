//! The exporters' metrics: names and help text in one place. Labels: `exporter` (its id)
//! and `partition`.

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};

use crate::error::Result;

pub const LAST_SEEN_POSITION: &str = "rill_exporter_last_seen_position";
const LAST_SEEN_POSITION_HELP: &str = "Highest record position handed to the exporter";

pub const LAST_EXPORTED_POSITION: &str = "rill_exporter_last_exported_position";
const LAST_EXPORTED_POSITION_HELP: &str =
    "Highest position up to which every record is durably exported (or filtered out)";

pub const LAG: &str = "rill_exporter_lag_records";
const LAG_HELP: &str =
    "Exporter lag: last position handed to the exporter minus its exported position";

pub const DROPPED_RECORDS: &str = "rill_exporter_dropped_records_total";
const DROPPED_RECORDS_HELP: &str =
    "Records the target permanently refused (e.g. a mapping conflict); logged and skipped";

pub const FAILED_REQUESTS: &str = "rill_exporter_failed_requests_total";
const FAILED_REQUESTS_HELP: &str = "Requests to the export target that failed and are retried (reason: connect, timeout, http-429, http-5xx, items…)";

pub const RETRIED_RECORDS: &str = "rill_exporter_retried_records_total";
const RETRIED_RECORDS_HELP: &str = "Records sent again after a failed request or a failed item";

pub const FLUSH_DURATION: &str = "rill_exporter_flush_duration_seconds";
const FLUSH_DURATION_HELP: &str = "Time to ship one bulk request or file write, retries included";

pub const BULK_SIZE: &str = "rill_exporter_bulk_size";
const BULK_SIZE_HELP: &str = "Records per bulk request or file write";

pub const BULK_BYTES: &str = "rill_exporter_bulk_bytes";
const BULK_BYTES_HELP: &str = "Bytes per bulk request or file write";

const LABELS: &[&str] = &["exporter", "partition"];

/// The metric families, shared by every exporter of a process. Create once, register
/// once, hand clones to each exporter.
#[derive(Clone)]
pub struct ExporterMetrics {
    last_seen_position: IntGaugeVec,
    last_exported_position: IntGaugeVec,
    lag: IntGaugeVec,
    dropped_records: IntCounterVec,
    failed_requests: IntCounterVec,
    retried_records: IntCounterVec,
    flush_duration: HistogramVec,
    bulk_size: HistogramVec,
    bulk_bytes: HistogramVec,
}

impl ExporterMetrics {
    pub fn new() -> Result<ExporterMetrics> {
        let gauge = |name, help| IntGaugeVec::new(Opts::new(name, help), LABELS);
        let counter = |name, help, extra: &[&str]| {
            let labels: Vec<&str> = LABELS.iter().chain(extra).copied().collect();
            IntCounterVec::new(Opts::new(name, help), &labels)
        };
        let histogram = |name, help, buckets: Vec<f64>| {
            HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), LABELS)
        };
        Ok(ExporterMetrics {
            last_seen_position: gauge(LAST_SEEN_POSITION, LAST_SEEN_POSITION_HELP)?,
            last_exported_position: gauge(LAST_EXPORTED_POSITION, LAST_EXPORTED_POSITION_HELP)?,
            lag: gauge(LAG, LAG_HELP)?,
            dropped_records: counter(DROPPED_RECORDS, DROPPED_RECORDS_HELP, &["error_type"])?,
            failed_requests: counter(FAILED_REQUESTS, FAILED_REQUESTS_HELP, &["reason"])?,
            retried_records: counter(RETRIED_RECORDS, RETRIED_RECORDS_HELP, &[])?,
            flush_duration: histogram(
                FLUSH_DURATION,
                FLUSH_DURATION_HELP,
                prometheus::exponential_buckets(0.001, 2.0, 16)?,
            )?,
            bulk_size: histogram(
                BULK_SIZE,
                BULK_SIZE_HELP,
                prometheus::exponential_buckets(1.0, 2.0, 14)?,
            )?,
            bulk_bytes: histogram(
                BULK_BYTES,
                BULK_BYTES_HELP,
                prometheus::exponential_buckets(1024.0, 2.0, 16)?,
            )?,
        })
    }

    /// Registers every family with `registry` (once per registry).
    pub fn register(&self, registry: &Registry) -> Result<()> {
        registry.register(Box::new(self.last_seen_position.clone()))?;
        registry.register(Box::new(self.last_exported_position.clone()))?;
        registry.register(Box::new(self.lag.clone()))?;
        registry.register(Box::new(self.dropped_records.clone()))?;
        registry.register(Box::new(self.failed_requests.clone()))?;
        registry.register(Box::new(self.retried_records.clone()))?;
        registry.register(Box::new(self.flush_duration.clone()))?;
        registry.register(Box::new(self.bulk_size.clone()))?;
        registry.register(Box::new(self.bulk_bytes.clone()))?;
        Ok(())
    }

    /// The metrics of one exporter on one partition.
    pub(crate) fn for_exporter(&self, exporter: &'static str, partition: u16) -> BoundMetrics {
        let partition = partition.to_string();
        let labels = [exporter, partition.as_str()];
        BoundMetrics {
            families: self.clone(),
            exporter,
            partition: partition.clone(),
            last_seen_position: self.last_seen_position.with_label_values(&labels),
            last_exported_position: self.last_exported_position.with_label_values(&labels),
            lag: self.lag.with_label_values(&labels),
            retried_records: self.retried_records.with_label_values(&labels),
            flush_duration: self.flush_duration.with_label_values(&labels),
            bulk_size: self.bulk_size.with_label_values(&labels),
            bulk_bytes: self.bulk_bytes.with_label_values(&labels),
        }
    }

    /// Current lag of `exporter` on `partition` (for tests and health checks).
    pub fn lag(&self, exporter: &str, partition: u16) -> i64 {
        self.lag
            .with_label_values(&[exporter, &partition.to_string()])
            .get()
    }

    /// Records `exporter` on `partition` dropped with `error_type`.
    pub fn dropped_records(&self, exporter: &str, partition: u16, error_type: &str) -> u64 {
        self.dropped_records
            .with_label_values(&[exporter, &partition.to_string(), error_type])
            .get()
    }

    /// Failed requests of `exporter` on `partition`, over all reasons given.
    pub fn failed_requests(&self, exporter: &str, partition: u16, reasons: &[&str]) -> u64 {
        let partition = partition.to_string();
        reasons
            .iter()
            .map(|reason| {
                self.failed_requests
                    .with_label_values(&[exporter, &partition, reason])
                    .get()
            })
            .sum()
    }
}

/// Metrics with the exporter and partition labels already applied.
pub(crate) struct BoundMetrics {
    families: ExporterMetrics,
    exporter: &'static str,
    partition: String,
    last_seen_position: IntGauge,
    last_exported_position: IntGauge,
    lag: IntGauge,
    retried_records: IntCounter,
    pub flush_duration: Histogram,
    pub bulk_size: Histogram,
    pub bulk_bytes: Histogram,
}

impl BoundMetrics {
    pub fn positions(&self, last_seen: u64, exported: u64) {
        let seen = i64::try_from(last_seen).unwrap_or(i64::MAX);
        let exported = i64::try_from(exported).unwrap_or(i64::MAX);
        self.last_seen_position.set(seen);
        self.last_exported_position.set(exported);
        self.lag.set(seen.saturating_sub(exported));
    }

    pub fn dropped(&self, error_type: &str) {
        self.families
            .dropped_records
            .with_label_values(&[self.exporter, &self.partition, error_type])
            .inc();
    }

    pub fn failed_request(&self, reason: &str) {
        self.families
            .failed_requests
            .with_label_values(&[self.exporter, &self.partition, reason])
            .inc();
    }

    pub fn retried(&self, records: usize) {
        self.retried_records.inc_by(records as u64);
    }
}
