//! How full the data directory's disk is, sampled by a task on the io runtime (never
//! per command), and what follows from it (docs/decisions/disk-full.md):
//!
//! - above `data.disk-usage-command-watermark` a partition leader refuses new commands
//!   at admission, before they reach the log (commands that complete work still pass);
//! - above `data.disk-usage-replication-watermark` this broker refuses log entries from
//!   leaders (the leader retries them), so that a follower never takes what it cannot
//!   store.
//!
//! The refusal happens outside the log, so replicas never disagree about it: the engine
//! never sees the disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus::{Gauge, Registry};
use rill_config::RillConfig;
use tokio::runtime::Handle;

use crate::error::{Error, Result};
use crate::metrics::{COMMAND_WATERMARK, DISK_FREE, DISK_USAGE, REPLICATION_WATERMARK};

/// How often the disk usage is sampled.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// The data directory's disk usage and its watermarks. Cheap to clone; clones share the
/// latest sample.
#[derive(Clone)]
pub struct DiskUsage(Arc<Inner>);

struct Inner {
    directory: PathBuf,
    command_watermark: f64,
    replication_watermark: f64,
    /// The used fraction of the last sample, as `f64` bits (0 until the first).
    ratio: AtomicU64,
    free_bytes: AtomicU64,
}

impl DiskUsage {
    pub fn new(directory: PathBuf, command_watermark: f64, replication_watermark: f64) -> Self {
        DiskUsage(Arc::new(Inner {
            directory,
            command_watermark,
            replication_watermark,
            ratio: AtomicU64::new(0f64.to_bits()),
            free_bytes: AtomicU64::new(u64::MAX),
        }))
    }

    /// The data directory and watermarks of `config`.
    pub fn from_config(config: &RillConfig) -> Self {
        DiskUsage::new(
            config.data.directory.clone(),
            config.data.disk_usage_command_watermark,
            config.data.disk_usage_replication_watermark,
        )
    }

    /// A disk usage that is never sampled, and so never refuses (tests and benchmarks
    /// that start partitions without a node).
    pub fn unsampled(directory: PathBuf) -> Self {
        DiskUsage::new(directory, 1.0, 1.0)
    }

    /// The used fraction of the disk at the last sample (0 before the first).
    pub fn ratio(&self) -> f64 {
        f64::from_bits(self.0.ratio.load(Ordering::Relaxed))
    }

    /// Samples the disk now (a `statvfs` of the data directory, or of its nearest
    /// existing parent while it is not created yet).
    pub fn sample(&self) -> std::io::Result<f64> {
        let stat = nix::sys::statvfs::statvfs(existing_ancestor(&self.0.directory))
            .map_err(std::io::Error::from)?;
        let (blocks, available) = (stat.blocks(), stat.blocks_available());
        let (total, available_f) = (blocks as f64, available as f64);
        // As `df` counts it: blocks reserved for root count as used.
        let ratio = if total > 0.0 {
            ((total - available_f) / total).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let free = available.saturating_mul(stat.fragment_size());
        self.record(ratio, free);
        Ok(ratio)
    }

    fn record(&self, ratio: f64, free_bytes: u64) {
        self.0.ratio.store(ratio.to_bits(), Ordering::Relaxed);
        self.0.free_bytes.store(free_bytes, Ordering::Relaxed);
    }

    /// Why new commands are refused, while the disk is past the command watermark.
    pub fn command_refusal(&self) -> Option<String> {
        self.refusal(
            self.0.command_watermark,
            "data.disk-usage-command-watermark",
            "new commands are refused until space is freed (commands that finish work or \
             let instances end still pass)",
        )
    }

    /// Why log entries from leaders are refused, while the disk is past the replication
    /// watermark.
    pub fn replication_refusal(&self) -> Option<String> {
        self.refusal(
            self.0.replication_watermark,
            "data.disk-usage-replication-watermark",
            "this broker takes no more log entries until space is freed",
        )
    }

    fn refusal(&self, watermark: f64, setting: &str, consequence: &str) -> Option<String> {
        let ratio = self.ratio();
        (ratio >= watermark).then(|| {
            format!(
                "the disk of the data directory {} is {:.1}% full ({} MB free), at or above \
                 {setting} ({watermark}): {consequence}",
                self.0.directory.display(),
                ratio * 100.0,
                self.0.free_bytes.load(Ordering::Relaxed) / (1024 * 1024),
            )
        })
    }

    /// Samples the disk every second on `io`, and reports it in `registry`.
    pub fn start_sampling(&self, io: &Handle, registry: &Registry) -> Result<()> {
        let gauges = DiskGauges::register(registry)?;
        gauges.command.set(self.0.command_watermark);
        gauges.replication.set(self.0.replication_watermark);
        let usage = self.clone();
        let mut failed_before = false;
        let mut sample = move || match usage.sample() {
            Ok(ratio) => {
                gauges.usage.set(ratio);
                gauges
                    .free
                    .set(usage.0.free_bytes.load(Ordering::Relaxed) as f64);
                failed_before = false;
            }
            Err(e) if !failed_before => {
                failed_before = true;
                tracing::warn!(directory = %usage.0.directory.display(), error = %e, "cannot read the disk usage");
            }
            Err(_) => {}
        };
        // The first sample before any partition takes a command.
        sample();
        io.spawn(async move {
            let mut ticks = tokio::time::interval(SAMPLE_PERIOD);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                sample();
            }
        });
        Ok(())
    }
}

fn existing_ancestor(path: &Path) -> &Path {
    path.ancestors()
        .find(|p| !p.as_os_str().is_empty() && p.exists())
        .unwrap_or(Path::new("."))
}

struct DiskGauges {
    usage: Gauge,
    free: Gauge,
    command: Gauge,
    replication: Gauge,
}

impl DiskGauges {
    fn register(registry: &Registry) -> Result<DiskGauges> {
        let gauge = |name: &str, help: &str| -> Result<Gauge> {
            let g = Gauge::new(name, help).map_err(|e| Error::Config(format!("metrics: {e}")))?;
            registry
                .register(Box::new(g.clone()))
                .map_err(|e| Error::Config(format!("metrics: {e}")))?;
            Ok(g)
        };
        Ok(DiskGauges {
            usage: gauge(
                DISK_USAGE,
                "Used fraction of the data directory's disk (0 to 1), sampled every second; \
                 compared with the watermarks",
            )?,
            free: gauge(
                DISK_FREE,
                "Bytes free for the broker on the data directory's disk",
            )?,
            command: gauge(
                COMMAND_WATERMARK,
                "data.disk-usage-command-watermark: at or above this disk usage, new commands \
                 are refused",
            )?,
            replication: gauge(
                REPLICATION_WATERMARK,
                "data.disk-usage-replication-watermark: at or above this disk usage, the \
                 broker refuses log entries from leaders",
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_directory_the_usage_and_the_setting() {
        let usage = DiskUsage::new(PathBuf::from("/var/lib/rill"), 0.9, 0.95);
        usage.record(0.5, 100 << 20);
        assert_eq!(usage.command_refusal(), None);
        usage.record(0.92, 8 << 20);
        let refusal = usage
            .command_refusal()
            .expect("above the command watermark");
        assert!(refusal.contains("/var/lib/rill"), "{refusal}");
        assert!(refusal.contains("92.0% full"), "{refusal}");
        assert!(
            refusal.contains("data.disk-usage-command-watermark (0.9)"),
            "{refusal}"
        );
        assert_eq!(usage.replication_refusal(), None, "below 0.95");
        usage.record(0.95, 1 << 20);
        let refusal = usage
            .replication_refusal()
            .expect("at the replication watermark");
        assert!(
            refusal.contains("data.disk-usage-replication-watermark (0.95)"),
            "{refusal}"
        );
    }

    #[test]
    fn a_sample_reads_the_real_disk_and_an_unsampled_usage_never_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let usage = DiskUsage::unsampled(dir.path().join("not-yet-created"));
        assert_eq!(usage.command_refusal(), None);
        let ratio = usage.sample().expect("statvfs of the parent");
        assert!((0.0..=1.0).contains(&ratio), "{ratio}");
        assert!(
            ratio > 0.0,
            "a disk holding a temporary directory has something on it"
        );
    }
}
