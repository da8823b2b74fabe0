//! The typed configuration tree, one options struct per subsystem. Defaults live here
//! in code; every field has one, so an empty file is a valid standalone configuration.
//! Names are kebab-case in files and `RILL_SECTION__FIELD` in the environment.

use std::path::PathBuf;
use std::time::Duration;

use rill_protocol::ValueType;
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
    pub history: HistoryConfig,
    pub gateway: GatewayConfig,
    pub monitoring: MonitoringConfig,
    pub exporters: ExportersConfig,
    pub security: SecurityConfig,
    pub backup: BackupConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// This broker's id: `0..size` in a new cluster; above, a broker that joins a
    /// running one.
    pub node_id: u32,
    /// Number of brokers.
    pub size: u32,
    /// Number of partitions, numbered from 1.
    pub partitions_count: u16,
    /// Replicas per partition (at most `size`).
    pub replication_factor: u16,
    /// `host:port` of the internal (raft) port of every broker, node 0 first.
    pub initial_contact_points: Vec<String>,
    /// Interface to bind broker ports on.
    pub host: String,
    /// Host other brokers and gateways use to reach this one (defaults to `host`).
    pub advertised_host: Option<String>,
    /// Command API port (gateway to broker).
    pub command_port: u16,
    /// Internal port: raft traffic between brokers.
    pub internal_port: u16,
    /// How long a broker without a stored cluster configuration asks the contact points
    /// for theirs before it takes the initial one of these settings.
    #[serde(with = "humantime_serde")]
    pub configuration_discovery_timeout: Duration,
    /// Mutual TLS on the internal and command ports.
    pub tls: ClusterTlsConfig,
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
            configuration_discovery_timeout: Duration::from_secs(10),
            tls: ClusterTlsConfig::default(),
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
    /// Stop taking log entries from leaders once this fraction of the disk is used.
    pub disk_usage_replication_watermark: f64,
    /// The block cache the state databases of all this broker's partitions share.
    pub state_cache_size: ByteSize,
}

impl Default for DataConfig {
    fn default() -> Self {
        DataConfig {
            directory: PathBuf::from("./data"),
            snapshot_period: Duration::from_secs(5 * 60),
            disk_usage_command_watermark: 0.97,
            disk_usage_replication_watermark: 0.99,
            state_cache_size: ByteSize(512 * 1024 * 1024),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ThreadsConfig {
    /// Threads of the runtime that runs partition actors (stream processing).
    pub cpu_thread_count: usize,
    /// Threads of the runtime for network, disk work and exporters (each partition also
    /// has a `rill-log-sync` thread for its raft log's WAL syncs).
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
    /// Replicas stand for election in the order of their priority, so each broker
    /// leads the partitions it is the first replica of (Zeebe's priority election).
    pub priority_election: bool,
    /// A leader hands each partition back to its preferred replica (the first in its
    /// replica list) once that one is up and caught up: after a rolling restart every
    /// broker leads its own share again, without an operator's `POST /actuator/rebalance`.
    pub auto_rebalance: bool,
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
            priority_election: true,
            auto_rebalance: true,
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
    /// Commands per second a partition leader admits (0 = unlimited).
    pub limit: u64,
    /// The limit grows linearly to `limit` over this long after a leader starts.
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
    /// Refuse new work while the exporter backlog is above `acceptable_backlog`.
    pub enabled: bool,
    /// Exporter backlog (records not yet exported) that is acceptable.
    pub acceptable_backlog: u64,
}

impl Default for ThrottlingConfig {
    fn default() -> Self {
        ThrottlingConfig {
            enabled: false,
            acceptable_backlog: 100_000,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Records one command may write before the engine stops its work with an incident
    /// (docs/decisions/command-limits.md).
    pub max_records_per_command: u32,
    /// Encoded bytes of records one command may write before the engine stops its work
    /// with an incident.
    pub max_bytes_per_command: ByteSize,
}

impl EngineConfig {
    /// The defaults of `max-records-per-command` and `max-bytes-per-command` (the
    /// engine's `CommandLimits::default()`, which a broker test keeps equal).
    pub const DEFAULT_MAX_RECORDS_PER_COMMAND: u32 = 200_000;
    pub const DEFAULT_MAX_BYTES_PER_COMMAND: u64 = 32 * 1024 * 1024;
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_records_per_command: EngineConfig::DEFAULT_MAX_RECORDS_PER_COMMAND,
            max_bytes_per_command: ByteSize(EngineConfig::DEFAULT_MAX_BYTES_PER_COMMAND),
        }
    }
}

/// The history store each partition keeps for searches (docs/decisions/history-store.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct HistoryConfig {
    /// Keep a searchable history of process instances in every partition.
    pub enabled: bool,
    /// How long a finished process instance stays in the history (and searchable).
    #[serde(with = "humantime_serde")]
    pub retention: Duration,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            enabled: true,
            retention: Duration::from_secs(7 * 24 * 60 * 60),
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
    /// Largest variable document a request may carry, as the JSON text the client sent.
    pub max_variable_document_size: ByteSize,
    /// Default timeout of a request to a broker.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    /// Longest a job activation request may wait for jobs.
    #[serde(with = "humantime_serde")]
    pub long_polling_timeout: Duration,
    /// Cap on a client's own `requestTimeout` (job activation, create-and-await): a
    /// request holds its connection and flow-control permit no longer than this.
    #[serde(with = "humantime_serde")]
    pub max_request_timeout: Duration,
    /// Brokers' command API addresses (for a standalone gateway).
    pub contact_points: Vec<String>,
    /// TLS on the REST and gRPC ports.
    pub tls: TlsConfig,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            enabled: true,
            host: "0.0.0.0".to_owned(),
            rest_port: 8080,
            grpc_port: 26500,
            max_message_size: ByteSize(4 * 1024 * 1024),
            max_variable_document_size: ByteSize(4 * 1024 * 1024),
            request_timeout: Duration::from_secs(15),
            long_polling_timeout: Duration::from_secs(10),
            max_request_timeout: Duration::from_secs(600),
            contact_points: Vec::new(),
            tls: TlsConfig::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct MonitoringConfig {
    pub host: String,
    /// `/metrics`, `/health`, `/ready`, `/startup`.
    pub port: u16,
    /// TLS on the monitoring port.
    pub tls: TlsConfig,
}

impl Default for MonitoringConfig {
    fn default() -> Self {
        MonitoringConfig {
            host: "0.0.0.0".to_owned(),
            port: 9600,
            tls: TlsConfig::default(),
        }
    }
}

/// TLS on a server port (the gateway's client APIs, the monitoring port): a certificate
/// chain and its private key, PEM files reloaded when they change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct TlsConfig {
    pub enabled: bool,
    /// PEM file: the certificate first, then its intermediates.
    pub certificate: Option<PathBuf>,
    /// PEM file: the certificate's private key (PKCS#8, PKCS#1 or SEC1).
    pub private_key: Option<PathBuf>,
}

/// Mutual TLS between the members of a cluster (brokers and gateways): each presents a
/// certificate issued by `ca` and checks that the other's is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ClusterTlsConfig {
    pub enabled: bool,
    pub certificate: Option<PathBuf>,
    pub private_key: Option<PathBuf>,
    /// PEM file with the CA certificate(s) that issue the members' certificates.
    pub ca: Option<PathBuf>,
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
    /// Flush when this many records are buffered.
    pub bulk_size: usize,
    /// Flush when the oldest buffered record has waited this long.
    #[serde(with = "humantime_serde")]
    pub bulk_delay: Duration,
    /// Flush when the buffered bulk request reaches this size.
    pub bulk_memory_limit: ByteSize,
    /// Timeout of one request to Elasticsearch; a request that takes longer is retried.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    /// First wait before retrying a failed request; doubles up to `retry-max-backoff`.
    #[serde(with = "humantime_serde")]
    pub retry_initial_backoff: Duration,
    #[serde(with = "humantime_serde")]
    pub retry_max_backoff: Duration,
    /// Basic authentication (both must be set).
    pub username: Option<String>,
    pub password: Option<String>,
    /// API key, as Elasticsearch returns it in `encoded` (base64 of `id:key`).
    pub api_key: Option<String>,
    /// Bearer token (e.g. an OAuth access token or an Elasticsearch service token).
    pub bearer_token: Option<String>,
    pub tls: ElasticsearchTlsConfig,
    /// Put the component and index templates at start.
    pub create_template: bool,
    /// Delete indices older than this through an ILM policy (unset = keep).
    #[serde(with = "humantime_serde")]
    pub retention: Option<Duration>,
    /// Name of the ILM policy created when `retention` is set.
    pub retention_policy_name: String,
    /// Which records to export.
    pub filter: RecordFilterConfig,
}

impl Default for ElasticsearchExporterConfig {
    fn default() -> Self {
        ElasticsearchExporterConfig {
            url: "http://localhost:9200".to_owned(),
            index_prefix: "zeebe-record".to_owned(),
            bulk_size: 1000,
            bulk_delay: Duration::from_secs(5),
            bulk_memory_limit: ByteSize(10 * 1024 * 1024),
            request_timeout: Duration::from_secs(30),
            retry_initial_backoff: Duration::from_millis(100),
            retry_max_backoff: Duration::from_secs(10),
            username: None,
            password: None,
            api_key: None,
            bearer_token: None,
            tls: ElasticsearchTlsConfig::default(),
            create_template: true,
            retention: None,
            retention_policy_name: "zeebe-record-retention-policy".to_owned(),
            filter: RecordFilterConfig::default(),
        }
    }
}

/// TLS towards Elasticsearch (used when the URL is `https://`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ElasticsearchTlsConfig {
    /// PEM file with the CA certificate(s) to trust instead of the system's roots.
    pub ca_certificate: Option<PathBuf>,
    /// Verify the server's certificate. Turn off only for testing.
    pub verify_certificates: bool,
}

impl Default for ElasticsearchTlsConfig {
    fn default() -> Self {
        ElasticsearchTlsConfig {
            ca_certificate: None,
            verify_certificates: true,
        }
    }
}

macro_rules! define_record_filter {
    ($($(#[$doc:meta])* $variant:ident($record:ident): $zeebe:tt, $kebab:tt, $field:ident;)*) => {
        /// Which records an exporter ships, by record type and value type (one switch
        /// per row of the value-type table, `rill_protocol::value_types!`). The defaults
        /// are Zeebe's Elasticsearch exporter's: events only, every value type but job
        /// batches and process instance results.
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
        pub struct RecordFilterConfig {
            // Record types.
            pub command: bool,
            pub event: bool,
            pub rejection: bool,
            // Value types.
            $(#[serde(rename = $kebab)] pub $field: bool,)*
        }

        impl RecordFilterConfig {
            /// Whether records of `value_type` pass.
            pub fn value_type(&self, value_type: ValueType) -> bool {
                match value_type {
                    $(ValueType::$variant => self.$field,)*
                }
            }

            /// Lets records of `value_type` pass, or not.
            pub fn set_value_type(&mut self, value_type: ValueType, pass: bool) {
                match value_type {
                    $(ValueType::$variant => self.$field = pass,)*
                }
            }
        }

        impl RecordFilterConfig {
            /// Everything: every record type and value type.
            pub fn all() -> RecordFilterConfig {
                RecordFilterConfig {
                    command: true,
                    event: true,
                    rejection: true,
                    $($field: true,)*
                }
            }
        }
    };
}

rill_protocol::value_types!(define_record_filter);

impl Default for RecordFilterConfig {
    fn default() -> Self {
        let mut filter = RecordFilterConfig {
            command: false,
            rejection: false,
            ..RecordFilterConfig::all()
        };
        // Zeebe's exporter does not export these.
        filter.set_value_type(ValueType::ProcessInstanceResult, false);
        filter.set_value_type(ValueType::JobBatch, false);
        filter
    }
}

/// Writes records as JSON lines to a file (history without a search engine).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct JsonlExporterConfig {
    pub path: PathBuf,
    /// Write and fsync when this many records are buffered.
    pub flush_size: usize,
    /// Write and fsync when the oldest buffered record has waited this long.
    #[serde(with = "humantime_serde")]
    pub flush_delay: Duration,
    /// Which records to write; every record by default (it is a debugging aid).
    pub filter: RecordFilterConfig,
}

impl Default for JsonlExporterConfig {
    fn default() -> Self {
        JsonlExporterConfig {
            path: PathBuf::from("./data/records.jsonl"),
            flush_size: 1000,
            flush_delay: Duration::from_secs(1),
            filter: RecordFilterConfig::all(),
        }
    }
}

/// Who may use the client APIs and the management API (Camunda 8.8's
/// `camunda.security.*` names where they fit; docs/security.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct SecurityConfig {
    pub authentication: AuthenticationConfig,
    pub initialization: InitializationConfig,
}

/// How a client proves who it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthenticationMethod {
    /// Anyone who reaches a port may use it (the laptop default).
    #[default]
    None,
    /// HTTP Basic credentials of the users in `security.initialization.users`.
    Basic,
    /// Bearer JWTs of an OpenID Connect provider.
    Oidc,
}

impl AuthenticationMethod {
    pub fn name(self) -> &'static str {
        match self {
            AuthenticationMethod::None => "none",
            AuthenticationMethod::Basic => "basic",
            AuthenticationMethod::Oidc => "oidc",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct AuthenticationConfig {
    pub method: AuthenticationMethod,
    pub oidc: OidcConfig,
}

/// The OpenID Connect provider whose tokens are accepted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct OidcConfig {
    /// The issuer (`iss`); its discovery document is at
    /// `<issuer-uri>/.well-known/openid-configuration`.
    pub issuer_uri: Option<String>,
    /// Accepted audiences (`aud`); a token must name one of them.
    pub audiences: Vec<String>,
    /// The claim that names a user.
    pub username_claim: String,
    /// The claim that names a client (machine-to-machine tokens).
    pub client_id_claim: Option<String>,
    /// The claim that lists the caller's groups.
    pub groups_claim: Option<String>,
    /// Tolerated difference between the provider's clock and ours for `exp` and `nbf`.
    #[serde(with = "humantime_serde")]
    pub clock_skew: Duration,
}

impl Default for OidcConfig {
    fn default() -> Self {
        OidcConfig {
            issuer_uri: None,
            audiences: Vec::new(),
            username_claim: "sub".to_owned(),
            client_id_claim: None,
            groups_claim: None,
            clock_skew: Duration::from_secs(60),
        }
    }
}

/// What a new cluster starts with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct InitializationConfig {
    /// Users of basic authentication (`[[security.initialization.users]]`).
    pub users: Vec<InitialUser>,
}

/// One user of basic authentication.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct InitialUser {
    pub username: String,
    pub password: String,
    /// Display name.
    pub name: Option<String>,
    pub email: Option<String>,
}

impl std::fmt::Debug for InitialUser {
    /// Never shows the password (a configuration may end up in a log).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitialUser")
            .field("username", &self.username)
            .field("password", &"***")
            .field("name", &self.name)
            .field("email", &self.email)
            .finish()
    }
}

/// Where backups of the partitions go (docs/operations.md, docs/decisions/backup.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct BackupConfig {
    /// The backup store; `none` refuses backup requests.
    pub store: BackupStoreKind,
    pub filesystem: FilesystemBackupConfig,
    pub s3: S3BackupConfig,
    /// Backups the cluster takes by itself: a cron schedule (UTC), unset for none.
    pub schedule: Option<String>,
    pub retention: BackupRetentionConfig,
}

/// Which backups the scheduler deletes after each scheduled backup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct BackupRetentionConfig {
    /// Backups older than this are deleted (unset = kept).
    #[serde(with = "humantime_serde")]
    pub window: Option<Duration>,
    /// At most this many completed backups are kept (0 = no limit).
    pub max_backups: u32,
}

/// Which kind of store backups are written to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackupStoreKind {
    /// No backups: the backup API answers that none is configured.
    #[default]
    None,
    /// A directory (a mounted volume or NFS share) that every broker reaches.
    Filesystem,
    /// S3-compatible object storage (`backup.s3.*`).
    S3,
}

impl BackupStoreKind {
    pub fn name(self) -> &'static str {
        match self {
            BackupStoreKind::None => "none",
            BackupStoreKind::Filesystem => "filesystem",
            BackupStoreKind::S3 => "s3",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct FilesystemBackupConfig {
    /// The directory backups are written under (shared by every broker).
    pub base_path: Option<PathBuf>,
}

/// An S3-compatible bucket; credentials and region fall back to the standard AWS
/// environment variables.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct S3BackupConfig {
    pub bucket: Option<String>,
    pub base_path: Option<String>,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
}

impl S3BackupConfig {
    /// The S3 options that are set, by their path.
    pub fn set_options(&self) -> Vec<&'static str> {
        [
            ("backup.s3.bucket", &self.bucket),
            ("backup.s3.base-path", &self.base_path),
            ("backup.s3.endpoint", &self.endpoint),
            ("backup.s3.region", &self.region),
            ("backup.s3.access-key", &self.access_key),
            ("backup.s3.secret-key", &self.secret_key),
        ]
        .into_iter()
        .filter(|(_, value)| value.is_some())
        .map(|(path, _)| path)
        .collect()
    }
}
