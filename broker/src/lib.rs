//! A Rill broker node's partition core: partitions as ractor actors that own a raft
//! group and its state, the stream processor that applies committed commands through an
//! [`rill_engine_api::Engine`], flow control, the node's thread pools and metrics.

pub mod backup;
mod batch;
mod clock;
pub mod cluster;
mod command_api;
mod data_format;
mod delivery;
mod disk;
mod error;
mod export;
mod flow_control;
mod history;
mod job_push;
pub mod metrics;
mod monitoring;
mod node;
mod partition;
mod processor;
mod raft_network;
mod runtime;
#[cfg(feature = "simulation")]
pub mod simulation;
mod state;
#[cfg(feature = "testing")]
pub mod testing;

pub use command_api::{
    ClusterRouter, CommandApi, JobsFeed, Partitions, ProtocolEngine, forward_jobs_available,
};
pub use data_format::{DATA_FORMAT, prepare_data_directory};
pub use delivery::{DEFAULT_WINDOW, Delivered, LocalRouter, PartitionRouter};
pub use disk::DiskUsage;
pub use error::{ActorError, Error, NetworkError, Result};
pub use export::ExporterFactory;
pub use flow_control::{
    AimdLimit, FixedLimit, Gradient2Limit, GradientLimit, Limit, Permit, RequestLimiter,
    VegasLimit, WriteRate, WriteRateLimiter, limit_from_config,
};
pub use history::{CfHistory, HistorySettings, answer as answer_history};
pub use job_push::{JOBS_PUSHED, JobPushes, OPEN_STREAMS};
pub use metrics::BrokerMetrics;
pub use monitoring::{HealthCheck, MonitoringServer, RequestGuard};
pub use node::{BrokerNode, partitions_of, replicas_of, single_node_transport};
pub use partition::{
    Answered, ClusterSink, DEFAULT_MAX_INFLIGHT_PROPOSALS, JobsAvailable, Partition,
    PartitionConfig, PartitionEnv, PartitionStatus, Role, StateDigest,
};
pub use raft_network::{RaftNetwork, cluster_tls, raft_service_id};
pub use runtime::Runtimes;
pub use state::{INITIAL_ENGINE_VERSION, RocksState, read_records};
