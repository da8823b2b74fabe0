//! openraft's configuration from Rill's `raft` section.

use std::sync::Arc;

use openraft::SnapshotPolicy;
use rill_config::RaftConfig;

use crate::error::{Error, Result};

/// Builds openraft's configuration for a partition.
///
/// Snapshots are never triggered by openraft itself: the partition asks for one on
/// `data.snapshot-period` (and tests ask on demand). After a snapshot openraft purges the
/// log up to it, keeping `raft.log-retention-entries` entries for followers that are only
/// slightly behind.
pub fn openraft_config(raft: &RaftConfig, cluster_name: &str) -> Result<Arc<openraft::Config>> {
    let heartbeat = raft.heartbeat_interval.as_millis() as u64;
    let election = raft.election_timeout.as_millis() as u64;
    if heartbeat == 0 || election <= heartbeat {
        return Err(Error::Config(format!(
            "raft.election-timeout ({election} ms) must be greater than raft.heartbeat-interval ({heartbeat} ms)"
        )));
    }
    let config = openraft::Config {
        cluster_name: cluster_name.to_owned(),
        heartbeat_interval: heartbeat,
        election_timeout_min: election,
        election_timeout_max: election * 2,
        // A chunk of a snapshot in flight, and everything but a snapshot.
        install_snapshot_timeout: election.max(5_000),
        max_payload_entries: raft.max_append_entries.max(1),
        snapshot_policy: SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: raft.log_retention_entries,
        ..Default::default()
    };
    config
        .validate()
        .map(Arc::new)
        .map_err(|e| Error::Config(e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn maps_rill_settings_and_rejects_inverted_timeouts() {
        let config = openraft_config(&RaftConfig::default(), "rill").unwrap();
        assert_eq!(config.heartbeat_interval, 250);
        assert_eq!(config.election_timeout_min, 2500);
        assert_eq!(config.max_in_snapshot_log_to_keep, 1000);
        let bad = RaftConfig {
            election_timeout: Duration::from_millis(100),
            heartbeat_interval: Duration::from_millis(200),
            ..RaftConfig::default()
        };
        let err = openraft_config(&bad, "rill").unwrap_err().to_string();
        assert!(err.contains("raft.election-timeout"), "{err}");
    }
}
