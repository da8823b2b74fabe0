//! How a partition is set up: [`PartitionConfig`], from the node's configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rill_config::{RaftConfig, RequestLimitConfig, RillConfig};
use rill_protocol::{NodeId, PartitionId};

use crate::history::HistorySettings;

/// Two entries in flight let the next batch be written while the previous is applied,
/// once a whole batch waits (see `propose`).
pub const DEFAULT_MAX_INFLIGHT_PROPOSALS: usize = 2;

/// How a partition is set up.
#[derive(Clone, Debug)]
pub struct PartitionConfig {
    pub partition_id: PartitionId,
    /// The partition count deployments and signals are distributed over, until a
    /// cluster change stores a higher one in the partition's state.
    pub partition_count: u16,
    /// The partition count messages are routed over: the cluster's original one.
    pub message_partition_count: u16,
    /// The partition count the cluster configuration gives, as it changes: a leader
    /// whose state has a lower one proposes it (`CoreCommand::PartitionCount`).
    pub cluster_partition_count: Option<Arc<std::sync::atomic::AtomicU16>>,
    /// The highest engine version every broker of the cluster announced it applies (0
    /// while one has not announced itself), kept by the node: a leader whose state has
    /// a lower one raises it (`CoreCommand::RaiseEngineVersion`). `None`: no other
    /// broker to wait for, the build's own.
    pub cluster_engine_version: Option<Arc<std::sync::atomic::AtomicU32>>,
    /// This node.
    pub node_id: NodeId,
    /// The replicas (including this node) and their internal addresses.
    pub members: BTreeMap<NodeId, String>,
    /// The replica that should lead when all are up (priority election, as in Zeebe):
    /// the first in placement order, so leadership spreads over the brokers like the
    /// partitions do. The others stand for election a priority step later each, in
    /// placement order (see `election`). `None`: no preference.
    pub preferred_leader: Option<NodeId>,
    /// Where the partition keeps its log, state and snapshots.
    pub directory: PathBuf,
    pub raft: RaftConfig,
    pub flow_control: RequestLimitConfig,
    /// How often a snapshot is taken (and the log purged behind it).
    pub snapshot_period: Duration,
    /// How long a submitted command may wait for its answer.
    pub request_timeout: Duration,
    /// Entries proposed and not yet applied, at most. More commands wait and are batched
    /// into the next entry (group commit).
    pub max_inflight_proposals: usize,
    /// Refuse new work (not its completion) while more records than this wait for
    /// export (`flow-control.write.throttling`); `None` never refuses.
    pub export_backlog_limit: Option<u64>,
    /// Commands per second a leader admits (`flow-control.write`); `None`: unlimited.
    pub write_rate: Option<crate::flow_control::WriteRate>,
    /// The history store (`history.*`).
    pub history: HistorySettings,
    /// The bounds on one command's work this replica stamps into the entries it
    /// proposes as leader (`engine.max-records-per-command`, `engine.max-bytes-per-command`).
    pub command_limits: rill_engine_api::CommandLimits,
    /// This replica joins a running partition (a cluster change adds it): it never
    /// starts the raft group itself, and waits for the leader to add it as a learner.
    pub joining: bool,
    /// This replica's place in the partition's priority order, from the cluster
    /// configuration and changed with it (a cluster change reconfigures priorities).
    /// When set, it replaces the rank derived from `preferred_leader` and `members`.
    pub priority_rank: Option<Arc<std::sync::atomic::AtomicU32>>,
    /// Where the leader takes its part of a backup at a checkpoint (`backup.*`).
    pub backup: rill_config::BackupConfig,
}

impl PartitionConfig {
    /// The settings of `partition_id` on `node_id` from the node's configuration.
    pub fn from_config(
        config: &RillConfig,
        partition_id: PartitionId,
        node_id: NodeId,
        members: BTreeMap<NodeId, String>,
    ) -> PartitionConfig {
        PartitionConfig {
            partition_id,
            partition_count: config.cluster.partitions_count,
            message_partition_count: config.cluster.partitions_count,
            cluster_partition_count: None,
            cluster_engine_version: None,
            node_id,
            members,
            preferred_leader: crate::node::replicas_of(
                partition_id,
                config.cluster.size,
                config.cluster.replication_factor,
            )
            .first()
            .copied(),
            directory: config
                .data
                .directory
                .join(format!("partition-{partition_id}")),
            raft: config.raft.clone(),
            flow_control: config.flow_control.request.clone(),
            snapshot_period: config.data.snapshot_period,
            request_timeout: config.gateway.request_timeout,
            max_inflight_proposals: DEFAULT_MAX_INFLIGHT_PROPOSALS,
            export_backlog_limit: config
                .flow_control
                .write
                .throttling
                .enabled
                .then_some(config.flow_control.write.throttling.acceptable_backlog),
            write_rate: crate::flow_control::WriteRate::from_config(&config.flow_control.write),
            history: HistorySettings::from_config(config),
            command_limits: rill_engine_api::CommandLimits {
                max_records: config.engine.max_records_per_command,
                max_bytes: config.engine.max_bytes_per_command.bytes(),
            },
            joining: false,
            priority_rank: None,
            backup: config.backup.clone(),
        }
    }
}
