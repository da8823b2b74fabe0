//! The typed configuration tree, one options struct per subsystem. Defaults live here
//! in code; every field has one, so an empty file is a valid standalone configuration.
//! Names are kebab-case in files and `RILL_SECTION__FIELD` in the environment.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bytesize::ByteSize;

/// Everything a Rill process can be told.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
#[derive(Default)]
pub struct RillConfig {
    pub cluster: ClusterConfig,
    pub data: DataConfig,
    pub threads: ThreadsConfig,
    pub raft: RaftConfig,
    pub flow_control: FlowControlConfig,
    pub engine: EngineConfig,
    pub gateway: GatewayConfig,
    pub monitoring: MonitoringConfig,
    pub exporters: ExportersConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// This broker's id, `0..size`.
    pub node_id: u32,
    /// Number of brokers.
    pub size: u32,
    /// Number of partitions, numbered from 1.
    pub partitions_count: u16,
    /// Replicas per partition (at most `size`).
    pub replication_factor: u16,
    /// `host:port` of the internal (raft) port of other brokers.
    pub initial_contact_points: Vec<String>,
    /// Interface to bind broker ports on.
    pub host: String,
    /// Host other brokers and gateways use to reach this one (defaults to `host`).
    pub advertised_host: Option<String>,
    /// Command API port (gateway to broker).
    pub command_port: u16,
    /// Internal port: raft traffic between brokers.
    pub internal_port: u16,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            node_id: 0,
            size: 1,
            partitions_count: 2,
            replication_factor: 1,
            initial_contact_points: Vec::new(),
            host: "0.0.0.0".to_owned(),
            advertised_host: None,
            command_port: 26501,
            internal_port: 26502,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct DataConfig {
    /// Where partitions keep their raft log, state and snapshots.
    pub directory: PathBuf,
    /// How often a partition takes a snapshot (and may purge its log).
    #[serde(with = "humantime_serde")]
    pub snapshot_period: Duration,
    /// Stop accepting new commands once this fraction of the disk is used (0..=1).
    pub disk_usage_command_watermark: f64,
}

impl Default for DataConfig {
    fn default() -> Self {
        DataConfig {
            directory: PathBuf::from("./data"),
            snapshot_period: Duration::from_secs(5 * 60),
            disk_usage_command_watermark: 0.97,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ThreadsConfig {
    /// Threads of the runtime that runs partition actors (stream processing).
    pub cpu_thread_count: usize,
    /// Threads of the runtime for network, disk flushes and exporters.
    pub io_thread_count: usize,
}

impl Default for ThreadsConfig {
    fn default() -> Self {
        ThreadsConfig {
            cpu_thread_count: 2,
            io_thread_count: 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct RaftConfig {
    #[serde(with = "humantime_serde")]
    pub heartbeat_interval: Duration,
    #[serde(with = "humantime_serde")]
    pub election_timeout: Duration,
    /// Most entries sent in one append request.
    pub max_append_entries: u64,
    /// Most commands batched into one log entry.
    pub max_batch_commands: usize,
    /// Most bytes batched into one log entry.
    pub max_batch_size: ByteSize,
    /// Log entries kept after a snapshot before they are purged.
    pub log_retention_entries: u64,
}

impl Default for RaftConfig {
    fn default() -> Self {
        RaftConfig {
            heartbeat_interval: Duration::from_millis(250),
            election_timeout: Duration::from_millis(2500),
            max_append_entries: 256,
            max_batch_commands: 256,
            max_batch_size: ByteSize(4 * 1024 * 1024),
            log_retention_entries: 1000,
        }
    }
}

/// Which in-flight limit algorithm guards a partition (Zeebe's backpressure algorithms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitAlgorithm {
    Aimd,
    Fixed,
    Vegas,
    Gradient,
    Gradient2,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct FlowControlConfig {
    pub request: RequestLimitConfig,
    pub write: WriteLimitConfig,
}

/// The per-partition in-flight request limiter. Defaults are Zeebe's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct RequestLimitConfig {
    pub enabled: bool,
    /// Count commands that finish work against the limit (they are never rejected).
    pub use_windowed: bool,
    pub algorithm: LimitAlgorithm,
    pub aimd: AimdConfig,
    pub fixed: FixedLimitConfig,
    pub vegas: VegasConfig,
    pub gradient: GradientConfig,
    pub gradient2: Gradient2Config,
}

impl Default for RequestLimitConfig {
    fn default() -> Self {
        RequestLimitConfig {
            enabled: true,
            use_windowed: true,
            algorithm: LimitAlgorithm::Aimd,
            aimd: AimdConfig::default(),
            fixed: FixedLimitConfig::default(),
            vegas: VegasConfig::default(),
            gradient: GradientConfig::default(),
            gradient2: Gradient2Config::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct AimdConfig {
    /// A request slower than this counts as a drop and shrinks the limit.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    pub initial_limit: u32,
    pub min_limit: u32,
    pub max_limit: u32,
    pub backoff_ratio: f64,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            request_timeout: Duration::from_millis(200),
            initial_limit: 100,
            min_limit: 1,
            max_limit: 1000,
            backoff_ratio: 0.9,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct FixedLimitConfig {
    pub limit: u32,
}

impl Default for FixedLimitConfig {
    fn default() -> Self {
        FixedLimitConfig { limit: 20 }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct VegasConfig {
    pub alpha: u32,
    pub beta: u32,
    pub initial_limit: u32,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            alpha: 3,
            beta: 6,
            initial_limit: 20,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct GradientConfig {
    pub min_limit: u32,
    pub initial_limit: u32,
    pub rtt_tolerance: f64,
}

impl Default for GradientConfig {
    fn default() -> Self {
        GradientConfig {
            min_limit: 10,
            initial_limit: 20,
            rtt_tolerance: 2.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct Gradient2Config {
    pub min_limit: u32,
    pub initial_limit: u32,
    pub rtt_tolerance: f64,
    pub long_window: u32,
}

impl Default for Gradient2Config {
    fn default() -> Self {
        Gradient2Config {
            min_limit: 10,
            initial_limit: 20,
            rtt_tolerance: 2.0,
            long_window: 600,
        }
    }
}

/// Write-rate limit and exporter-backlog throttling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct WriteLimitConfig {
    pub enabled: bool,
    /// Records per second (0 = unlimited).
    pub limit: u64,
    #[serde(with = "humantime_serde")]
    pub ramp_up: Duration,
    pub throttling: ThrottlingConfig,
}

impl Default for WriteLimitConfig {
    fn default() -> Self {
        WriteLimitConfig {
            enabled: false,
            limit: 0,
            ramp_up: Duration::ZERO,
            throttling: ThrottlingConfig::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ThrottlingConfig {
    pub enabled: bool,
    /// Exporter backlog (records not yet exported) that is acceptable.
    pub acceptable_backlog: u64,
    /// The write limit never falls below this (records per second).
    pub minimum_limit: u64,
    #[serde(with = "humantime_serde")]
    pub resolution: Duration,
}

impl Default for ThrottlingConfig {
    fn default() -> Self {
        ThrottlingConfig {
            enabled: false,
            acceptable_backlog: 100_000,
            minimum_limit: 100,
            resolution: Duration::from_secs(15),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct EngineConfig {
    /// How long a finished process instance stays readable through the API.
    #[serde(with = "humantime_serde")]
    pub instance_retention: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            instance_retention: Duration::from_secs(60 * 60),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Run the gateway in this process (standalone, or a broker hosting one).
    pub enabled: bool,
    pub host: String,
    pub rest_port: u16,
    pub grpc_port: u16,
    /// Largest request body accepted (Zeebe's default: 4 MB).
    pub max_message_size: ByteSize,
    /// Default timeout of a request to a broker.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    /// Longest a job activation request may wait for jobs.
    #[serde(with = "humantime_serde")]
    pub long_polling_timeout: Duration,
    /// Brokers' command API addresses (for a standalone gateway).
    pub contact_points: Vec<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            enabled: true,
            host: "0.0.0.0".to_owned(),
            rest_port: 8080,
            grpc_port: 26500,
            max_message_size: ByteSize(4 * 1024 * 1024),
            request_timeout: Duration::from_secs(15),
            long_polling_timeout: Duration::from_secs(10),
            contact_points: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct MonitoringConfig {
    pub host: String,
    /// `/metrics`, `/health`, `/ready`, `/startup`.
    pub port: u16,
}

impl Default for MonitoringConfig {
    fn default() -> Self {
        MonitoringConfig {
            host: "0.0.0.0".to_owned(),
            port: 9600,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ExportersConfig {
    pub elasticsearch: Option<ElasticsearchExporterConfig>,
    pub jsonl: Option<JsonlExporterConfig>,
}

/// Ships records to Elasticsearch in Zeebe's format. Defaults are Zeebe's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ElasticsearchExporterConfig {
    pub url: String,
    pub index_prefix: String,
    pub bulk_size: usize,
    #[serde(with = "humantime_serde")]
    pub bulk_delay: Duration,
    pub bulk_memory_limit: ByteSize,
    pub username: Option<String>,
    pub password: Option<String>,
    pub api_key: Option<String>,
    /// Delete indices older than this through an ILM policy (unset = keep).
    #[serde(with = "humantime_serde")]
    pub retention: Option<Duration>,
}

impl Default for ElasticsearchExporterConfig {
    fn default() -> Self {
        ElasticsearchExporterConfig {
            url: "http://localhost:9200".to_owned(),
            index_prefix: "zeebe-record".to_owned(),
            bulk_size: 1000,
            bulk_delay: Duration::from_secs(5),
            bulk_memory_limit: ByteSize(10 * 1024 * 1024),
            username: None,
            password: None,
            api_key: None,
            retention: None,
        }
    }
}

/// Writes records as JSON lines to a file (history without a search engine).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct JsonlExporterConfig {
    pub path: PathBuf,
}

impl Default for JsonlExporterConfig {
    fn default() -> Self {
        JsonlExporterConfig {
            path: PathBuf::from("./data/records.jsonl"),
        }
    }
}
