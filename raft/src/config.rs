//! openraft's configuration from Rill's `raft` section.

use std::sync::Arc;
use std::time::Duration;

use openraft::SnapshotPolicy;
use rill_config::RaftConfig;

use crate::error::{Error, Result};

/// The largest piece of a snapshot sent in one request. openraft's default, 3 MiB, means a
/// round trip (and a write on the receiver) per 3 MiB; 8 MiB needs fewer and stays well
/// within the internal transport's 16 MiB frames, whose frame a message to another
/// partition waits behind for a few milliseconds.
pub const SNAPSHOT_CHUNK_BYTES: u64 = 8 << 20;

/// Builds openraft's configuration for a partition.
///
/// openraft never starts an election by itself: the partition's election driver does,
/// after `raft.election-timeout` without a leader plus its priority step (see
/// docs/decisions/elections.md). openraft's own timer would wait its leader lease plus a
/// random timeout, up to three times as long. What remains of openraft's timing is the
/// lease: a replica that heard from its leader within [`leader_lease`] refuses to vote
/// for another candidate, so one cut-off follower cannot depose a healthy leader.
///
/// Snapshots are never triggered by openraft itself: the partition asks for one on
/// `data.snapshot-period` (and tests ask on demand). After a snapshot openraft purges the
/// log up to it, keeping `raft.log-retention-entries` entries for followers that are only
/// slightly behind.
pub fn openraft_config(raft: &RaftConfig, cluster_name: &str) -> Result<Arc<openraft::Config>> {
    let heartbeat = raft.heartbeat_interval.as_millis() as u64;
    let election = raft.election_timeout.as_millis() as u64;
    if heartbeat == 0 || election < heartbeat * 2 {
        return Err(Error::Config(format!(
            "raft.election-timeout ({election} ms) must be at least twice raft.heartbeat-interval ({heartbeat} ms)"
        )));
    }
    // openraft's lease is its `election_timeout_max`; the minimum only bounds the timer
    // that is switched off here.
    let lease = leader_lease(raft).as_millis() as u64;
    let config = openraft::Config {
        cluster_name: cluster_name.to_owned(),
        heartbeat_interval: heartbeat,
        election_timeout_min: lease - 1,
        election_timeout_max: lease,
        enable_elect: false,
        // A chunk of a snapshot in flight, and everything but a snapshot.
        install_snapshot_timeout: election.max(5_000),
        max_payload_entries: raft.max_append_entries.max(1),
        snapshot_policy: SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: raft.log_retention_entries,
        snapshot_max_chunk_size: SNAPSHOT_CHUNK_BYTES,
        ..Default::default()
    };
    config
        .validate()
        .map(Arc::new)
        .map_err(|e| Error::Config(e.to_string()))
}

/// How long after its leader's last message a replica refuses to vote for another
/// candidate: half the election timeout, so a candidate that waited a whole election
/// timeout finds every silent voter's lease expired, and still several heartbeats.
pub fn leader_lease(raft: &RaftConfig) -> Duration {
    (raft.election_timeout / 2).max(raft.heartbeat_interval + Duration::from_millis(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_rill_settings_and_rejects_inverted_timeouts() {
        let config = openraft_config(&RaftConfig::default(), "rill").unwrap();
        assert_eq!(config.heartbeat_interval, 250);
        assert!(!config.enable_elect);
        // The lease (openraft's maximum) is half the election timeout.
        assert_eq!(config.election_timeout_max, 1250);
        assert_eq!(config.max_in_snapshot_log_to_keep, 1000);
        assert_eq!(config.snapshot_max_chunk_size, 8 << 20);
        let bad = RaftConfig {
            election_timeout: Duration::from_millis(300),
            heartbeat_interval: Duration::from_millis(200),
            ..RaftConfig::default()
        };
        let err = openraft_config(&bad, "rill").unwrap_err().to_string();
        assert!(err.contains("raft.election-timeout"), "{err}");
        // The shortest timeout allowed still leaves openraft a valid lease.
        let tight = RaftConfig {
            election_timeout: Duration::from_millis(20),
            heartbeat_interval: Duration::from_millis(10),
            ..RaftConfig::default()
        };
        let config = openraft_config(&tight, "rill").unwrap();
        assert!(config.election_timeout_min > config.heartbeat_interval);
        assert!(config.election_timeout_max < 20);
    }
}
