//! The broker's metrics, all in one place, with Zeebe-like names where an operator would
//! look for them (`zeebe_` becomes `rill_`). Every series has a `partition` label.

use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};

use crate::error::{Error, Result};

pub const COMMANDS_PROCESSED: &str = "rill_stream_processor_commands_processed_total";
pub const RECORDS_WRITTEN: &str = "rill_stream_processor_records_total";
pub const PROCESSING_ERRORS: &str = "rill_stream_processor_processing_errors_total";
pub const PROCESSING_LATENCY: &str = "rill_stream_processor_batch_processing_duration_seconds";
pub const COMMIT_LATENCY: &str = "rill_raft_commit_latency_seconds";
pub const APPLIED_INDEX: &str = "rill_raft_applied_index";
pub const ROLE: &str = "rill_raft_role";
pub const TERM: &str = "rill_raft_term";
pub const SNAPSHOTS_INSTALLED: &str = "rill_raft_snapshots_installed_total";
pub const SNAPSHOT_INDEX: &str = "rill_raft_snapshot_index";
pub const PURGED_INDEX: &str = "rill_raft_purged_index";
pub const LEADER_CHANGES: &str = "rill_raft_leader_changes_total";
pub const STEP_DOWNS: &str = "rill_raft_step_downs_total";
pub const LEADERLESS_DURATION: &str = "rill_raft_leaderless_duration_seconds";
pub const LEADERLESS: &str = "rill_raft_leaderless_seconds";
pub const INFLIGHT: &str = "rill_backpressure_inflight_requests_count";
pub const LIMIT: &str = "rill_backpressure_requests_limit";
pub const DROPPED: &str = "rill_dropped_request_count_total";
pub const RECEIVED: &str = "rill_received_request_count_total";
pub const ANSWERED_FROM_STATE: &str = "rill_answered_from_state_total";
pub const ENGINE_EVENTS: &str = "rill_engine_events_total";
pub const LAST_POSITION: &str = "rill_stream_processor_last_position";
pub const EXPORT_BACKLOG: &str = "rill_exporter_backlog_records";
pub const HISTORY_EXPIRED: &str = "rill_history_expired_entries_total";
pub const STATE_CACHE_USAGE: &str = "rill_state_cache_usage_bytes";
pub const WRITE_FAILING: &str = "rill_storage_write_failing";
pub const ENGINE_VERSION: &str = "rill_engine_version";
// Node-wide, without a partition label (see `disk`).
pub const DISK_USAGE: &str = "rill_disk_usage_ratio";
pub const DISK_FREE: &str = "rill_disk_free_bytes";
pub const COMMAND_WATERMARK: &str = "rill_disk_command_watermark_ratio";
pub const REPLICATION_WATERMARK: &str = "rill_disk_replication_watermark_ratio";
// Node-wide backup series (see `BackupMetrics`).
pub const BACKUP_OPERATIONS: &str = "rill_backup_operations_total";
pub const BACKUP_LAST_COMPLETED: &str = "rill_backup_last_completed_timestamp_seconds";
pub const BACKUP_DURATION: &str = "rill_backup_duration_seconds";
pub const BACKUP_CONFIGURED: &str = "rill_backup_store_configured";

/// Role gauge values (Zeebe's `atomix_role` idea): follower 1, candidate 2, leader 3.
pub const ROLE_FOLLOWER: i64 = 1;
pub const ROLE_CANDIDATE: i64 = 2;
pub const ROLE_LEADER: i64 = 3;

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// Leaderless periods: a heartbeat's gap up to a broker that stays down.
const LEADERLESS_BUCKETS: &[f64] = &[
    0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 2.75, 3.0, 4.0, 5.0, 7.5, 10.0, 30.0, 60.0,
];

/// The metric families of a node, registered in its registry.
#[derive(Clone)]
pub struct BrokerMetrics {
    registry: Registry,
    commands: IntCounterVec,
    records: IntCounterVec,
    errors: IntCounterVec,
    processing: HistogramVec,
    commit: HistogramVec,
    applied: IntGaugeVec,
    role: IntGaugeVec,
    term: IntGaugeVec,
    snapshots_installed: IntCounterVec,
    snapshot_index: IntGaugeVec,
    purged_index: IntGaugeVec,
    leader_changes: IntCounterVec,
    step_downs: IntCounterVec,
    leaderless_duration: HistogramVec,
    leaderless: GaugeVec,
    inflight: IntGaugeVec,
    limit: IntGaugeVec,
    dropped: IntCounterVec,
    received: IntCounterVec,
    answered_from_state: IntCounterVec,
    events: IntCounterVec,
    last_position: IntGaugeVec,
    export_backlog: IntGaugeVec,
    history_expired: IntCounterVec,
    write_failing: IntGaugeVec,
    engine_version: IntGaugeVec,
    backup: BackupMetrics,
}

/// The backups this node takes and deletes, without a partition label: a part is taken
/// by whichever broker leads its partition, so the cluster's view is the max or sum over
/// brokers.
#[derive(Clone)]
pub struct BackupMetrics {
    operations: IntCounterVec,
    last_completed: IntGauge,
    duration: HistogramVec,
    configured: IntGauge,
}

/// A part of a backup takes from a second (a small state) to minutes (gigabytes to S3).
const BACKUP_BUCKETS: &[f64] = &[
    0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
];

impl std::fmt::Debug for BackupMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BackupMetrics")
    }
}

impl BackupMetrics {
    fn new(registry: &Registry) -> Result<BackupMetrics> {
        let operations = IntCounterVec::new(
            Opts::new(
                BACKUP_OPERATIONS,
                "Backup operations this broker ran: `take` (one partition's part), `delete` \
                 (by the API or the retention), `schedule` (a scheduled backup asked for); \
                 result `completed` or `failed`",
            ),
            &["operation", "result"],
        )
        .map_err(metrics_error)?;
        let last_completed = IntGauge::new(
            BACKUP_LAST_COMPLETED,
            "When the latest completed backup part in the store was written (epoch \
             seconds): read from the store at start, then set by every part this broker \
             completes; 0 if there is none",
        )
        .map_err(metrics_error)?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                BACKUP_DURATION,
                "Time to write one partition's part of a backup into the store, from the \
                 pinned state to the COMPLETED (or FAILED) status",
            )
            .buckets(BACKUP_BUCKETS.to_vec()),
            &["operation"],
        )
        .map_err(metrics_error)?;
        let configured = IntGauge::new(
            BACKUP_CONFIGURED,
            "1 when this broker has a backup store (backup.store is not none)",
        )
        .map_err(metrics_error)?;
        for metric in [
            Box::new(operations.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(last_completed.clone()),
            Box::new(duration.clone()),
            Box::new(configured.clone()),
        ] {
            registry.register(metric).map_err(metrics_error)?;
        }
        Ok(BackupMetrics {
            operations,
            last_completed,
            duration,
            configured,
        })
    }

    /// Counts an operation that ended.
    pub fn operation(&self, operation: &str, completed: bool) {
        let result = if completed { "completed" } else { "failed" };
        self.operations
            .with_label_values(&[operation, result])
            .inc();
    }

    /// A part this broker took ended: counted, timed and, completed, its time kept.
    pub fn part_taken(&self, completed: bool, seconds: f64, now_epoch_seconds: i64) {
        self.operation("take", completed);
        self.duration.with_label_values(&["take"]).observe(seconds);
        if completed {
            self.completed_at(now_epoch_seconds);
        }
    }

    /// A completed part was written at this time (epoch seconds); the gauge only moves
    /// forward.
    pub fn completed_at(&self, epoch_seconds: i64) {
        if epoch_seconds > self.last_completed.get() {
            self.last_completed.set(epoch_seconds);
        }
    }

    pub fn set_configured(&self, configured: bool) {
        self.configured.set(i64::from(configured));
    }
}

fn counter(registry: &Registry, name: &str, help: &str) -> Result<IntCounterVec> {
    let c = IntCounterVec::new(Opts::new(name, help), &["partition"]).map_err(metrics_error)?;
    registry
        .register(Box::new(c.clone()))
        .map_err(metrics_error)?;
    Ok(c)
}

fn gauge(registry: &Registry, name: &str, help: &str) -> Result<IntGaugeVec> {
    let g = IntGaugeVec::new(Opts::new(name, help), &["partition"]).map_err(metrics_error)?;
    registry
        .register(Box::new(g.clone()))
        .map_err(metrics_error)?;
    Ok(g)
}

fn histogram(registry: &Registry, name: &str, help: &str) -> Result<HistogramVec> {
    histogram_with(registry, name, help, LATENCY_BUCKETS)
}

fn histogram_with(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: &[f64],
) -> Result<HistogramVec> {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    let h = HistogramVec::new(opts, &["partition"]).map_err(metrics_error)?;
    registry
        .register(Box::new(h.clone()))
        .map_err(metrics_error)?;
    Ok(h)
}

fn metrics_error(e: prometheus::Error) -> Error {
    Error::Config(format!("metrics: {e}"))
}

impl BrokerMetrics {
    pub fn new(registry: &Registry) -> Result<BrokerMetrics> {
        Ok(BrokerMetrics {
            registry: registry.clone(),
            commands: counter(
                registry,
                COMMANDS_PROCESSED,
                "Commands applied by the stream processor",
            )?,
            records: counter(
                registry,
                RECORDS_WRITTEN,
                "Records written by the stream processor",
            )?,
            errors: counter(
                registry,
                PROCESSING_ERRORS,
                "Commands whose processing failed and were rolled back",
            )?,
            processing: histogram(
                registry,
                PROCESSING_LATENCY,
                "Time to apply one batch of committed entries",
            )?,
            commit: histogram(
                registry,
                COMMIT_LATENCY,
                "Time from proposing an entry on the leader until it is applied",
            )?,
            applied: gauge(
                registry,
                APPLIED_INDEX,
                "Raft index of the last applied entry",
            )?,
            role: gauge(
                registry,
                ROLE,
                "Raft role: 1 follower, 2 candidate, 3 leader",
            )?,
            term: gauge(
                registry,
                TERM,
                "Raft term this replica is in (one leader at most per term)",
            )?,
            snapshots_installed: counter(
                registry,
                SNAPSHOTS_INSTALLED,
                "Snapshots received from the leader and installed (a replica that fell \
                 behind the leader's purged log)",
            )?,
            snapshot_index: gauge(
                registry,
                SNAPSHOT_INDEX,
                "Raft index covered by the replica's latest snapshot",
            )?,
            purged_index: gauge(
                registry,
                PURGED_INDEX,
                "Raft index up to which the replica's log is purged",
            )?,
            leader_changes: counter(
                registry,
                LEADER_CHANGES,
                "Leaders this replica has seen take over the partition (a new leader or a new \
                 term)",
            )?,
            step_downs: counter(
                registry,
                STEP_DOWNS,
                "Times this replica gave up leading on its own: no quorum acknowledged it for \
                 an election timeout, or it handed leadership to the preferred replica",
            )?,
            leaderless_duration: histogram_with(
                registry,
                LEADERLESS_DURATION,
                "Time from the last sign of life of the previous leader (or from start) until \
                 this replica saw the next leader",
                LEADERLESS_BUCKETS,
            )?,
            leaderless: {
                let g = GaugeVec::new(
                    Opts::new(
                        LEADERLESS,
                        "Seconds since this replica last knew a live leader: 0 while it leads \
                         or hears from its leader",
                    ),
                    &["partition"],
                )
                .map_err(metrics_error)?;
                registry
                    .register(Box::new(g.clone()))
                    .map_err(metrics_error)?;
                g
            },
            inflight: gauge(registry, INFLIGHT, "Requests admitted and not yet answered")?,
            limit: gauge(registry, LIMIT, "Current in-flight request limit")?,
            dropped: counter(registry, DROPPED, "Requests rejected by flow control")?,
            received: counter(registry, RECEIVED, "Requests received by the partition")?,
            answered_from_state: counter(
                registry,
                ANSWERED_FROM_STATE,
                "Requests the leader answered from its state without a log entry (job \
                 activations that would find no job)",
            )?,
            events: {
                let opts = Opts::new(
                    ENGINE_EVENTS,
                    "Business events applied: process instances created, completed and \
                     terminated; jobs created, activated, completed, failed, timed out; \
                     incidents; messages",
                );
                let c = IntCounterVec::new(opts, &["partition", "kind", "action"])
                    .map_err(metrics_error)?;
                registry
                    .register(Box::new(c.clone()))
                    .map_err(metrics_error)?;
                c
            },
            engine_version: gauge(
                registry,
                ENGINE_VERSION,
                "The partition's replicated engine version: what may be written to its log \
                 (it rises once every broker of the cluster supports the next one)",
            )?,
            last_position: gauge(
                registry,
                LAST_POSITION,
                "Position of the last record written to the partition's log",
            )?,
            export_backlog: gauge(
                registry,
                EXPORT_BACKLOG,
                "Records written and not yet exported by every exporter: the last \
                 position minus the lowest replicated exported position",
            )?,
            history_expired: counter(
                registry,
                HISTORY_EXPIRED,
                "History store entries removed past history.retention",
            )?,
            write_failing: gauge(
                registry,
                WRITE_FAILING,
                "1 while a disk write of the partition (log append or sync, applied state, \
                 snapshot) fails and is retried: the partition takes no commands and reports \
                 unhealthy until it succeeds",
            )?,
            backup: BackupMetrics::new(registry)?,
        })
    }

    /// The node's backup series.
    pub fn backup(&self) -> &BackupMetrics {
        &self.backup
    }

    /// Reports what the state databases' shared block cache holds, read at each scrape.
    pub fn register_state_cache(&self, state: rill_raft::StateOptions) -> Result<()> {
        let usage = IntGauge::new(
            STATE_CACHE_USAGE,
            "Bytes held by the block cache all partitions' state databases share \
             (data.state-cache-size)",
        )
        .map_err(metrics_error)?;
        self.registry
            .register(Box::new(StateCacheUsage { usage, state }))
            .map_err(metrics_error)
    }

    /// Metrics for a node that does not export them (tests, benchmarks).
    pub fn unregistered() -> BrokerMetrics {
        // A fresh registry never has conflicting names.
        BrokerMetrics::new(&Registry::new()).unwrap_or_else(|e| unreachable!("fresh registry: {e}"))
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub(crate) fn partition(&self, partition: u16) -> PartitionMetrics {
        let label = partition.to_string();
        let l = [label.as_str()];
        PartitionMetrics {
            commands: self.commands.with_label_values(&l),
            records: self.records.with_label_values(&l),
            errors: self.errors.with_label_values(&l),
            processing: self.processing.with_label_values(&l),
            commit: self.commit.with_label_values(&l),
            applied: self.applied.with_label_values(&l),
            role: self.role.with_label_values(&l),
            term: self.term.with_label_values(&l),
            snapshots_installed: self.snapshots_installed.with_label_values(&l),
            snapshot_index: self.snapshot_index.with_label_values(&l),
            purged_index: self.purged_index.with_label_values(&l),
            leader_changes: self.leader_changes.with_label_values(&l),
            step_downs: self.step_downs.with_label_values(&l),
            leaderless_duration: self.leaderless_duration.with_label_values(&l),
            leaderless: self.leaderless.with_label_values(&l),
            inflight: self.inflight.with_label_values(&l),
            limit: self.limit.with_label_values(&l),
            dropped: self.dropped.with_label_values(&l),
            received: self.received.with_label_values(&l),
            answered_from_state: self.answered_from_state.with_label_values(&l),
            events: self.events.clone(),
            last_position: self.last_position.with_label_values(&l),
            export_backlog: self.export_backlog.with_label_values(&l),
            history_expired: self.history_expired.with_label_values(&l),
            write_failing: self.write_failing.with_label_values(&l),
            engine_version: self.engine_version.with_label_values(&l),
            label,
        }
    }
}

/// One partition's series.
#[derive(Clone)]
pub(crate) struct PartitionMetrics {
    pub commands: IntCounter,
    pub records: IntCounter,
    pub errors: IntCounter,
    pub processing: Histogram,
    pub commit: Histogram,
    pub applied: IntGauge,
    pub role: IntGauge,
    pub term: IntGauge,
    pub snapshots_installed: IntCounter,
    pub snapshot_index: IntGauge,
    pub purged_index: IntGauge,
    pub leader_changes: IntCounter,
    pub step_downs: IntCounter,
    pub leaderless_duration: Histogram,
    pub leaderless: Gauge,
    pub inflight: IntGauge,
    pub limit: IntGauge,
    pub dropped: IntCounter,
    pub received: IntCounter,
    pub answered_from_state: IntCounter,
    pub last_position: IntGauge,
    pub export_backlog: IntGauge,
    pub history_expired: IntCounter,
    pub write_failing: IntGauge,
    pub engine_version: IntGauge,
    events: IntCounterVec,
    label: String,
}

impl PartitionMetrics {
    /// Counts `count` business events of `kind` and `action`.
    pub fn engine_event(&self, kind: &str, action: &str, count: u64) {
        self.events
            .with_label_values(&[self.label.as_str(), kind, action])
            .inc_by(count);
    }
}

/// The state cache's usage as a gauge, read when scraped.
struct StateCacheUsage {
    usage: IntGauge,
    state: rill_raft::StateOptions,
}

impl prometheus::core::Collector for StateCacheUsage {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        self.usage.desc()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        self.usage
            .set(i64::try_from(self.state.cache_usage()).unwrap_or(i64::MAX));
        self.usage.collect()
    }
}
