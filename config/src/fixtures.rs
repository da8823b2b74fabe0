//! Configurations shared by the unit tests.

use std::time::Duration;

use crate::model::{
    AuthenticationMethod, ElasticsearchExporterConfig, InitialUser, JsonlExporterConfig,
    RecordFilterConfig, RillConfig,
};

/// Every optional value set, so every option appears in the serialized tree.
pub(crate) fn everything_set() -> RillConfig {
    let mut config = RillConfig::default();
    config.cluster.advertised_host = Some("broker-0.example".to_owned());
    config.cluster.tls.certificate = Some("/etc/rill/cluster/tls.crt".into());
    config.cluster.tls.private_key = Some("/etc/rill/cluster/tls.key".into());
    config.cluster.tls.ca = Some("/etc/rill/cluster/ca.crt".into());
    config.gateway.tls.certificate = Some("/etc/rill/gateway/tls.crt".into());
    config.gateway.tls.private_key = Some("/etc/rill/gateway/tls.key".into());
    config.monitoring.tls.certificate = Some("/etc/rill/monitoring/tls.crt".into());
    config.monitoring.tls.private_key = Some("/etc/rill/monitoring/tls.key".into());
    let elastic = ElasticsearchExporterConfig {
        username: Some("elastic".to_owned()),
        password: Some("secret".to_owned()),
        api_key: Some("key".to_owned()),
        bearer_token: Some("token".to_owned()),
        retention: Some(Duration::from_secs(30 * 24 * 3600)),
        ..ElasticsearchExporterConfig::default()
    };
    let mut elastic = elastic;
    elastic.tls.ca_certificate = Some("/etc/rill/es-ca.pem".into());
    config.exporters.elasticsearch = Some(elastic);
    config.exporters.jsonl = Some(JsonlExporterConfig::default());
    config.backup.filesystem.base_path = Some("/mnt/backups".into());
    config.backup.s3 = crate::model::S3BackupConfig {
        bucket: Some("rill".to_owned()),
        base_path: Some("cluster-a".to_owned()),
        endpoint: Some("http://127.0.0.1:9000".to_owned()),
        region: Some("eu-west-1".to_owned()),
        access_key: Some("key".to_owned()),
        secret_key: Some("s3-private".to_owned()),
    };
    config.backup.schedule = Some("0 2 * * *".to_owned());
    config.backup.retention.window = Some(Duration::from_secs(14 * 24 * 3600));
    let oidc = &mut config.security.authentication.oidc;
    oidc.issuer_uri = Some("https://login.example/realms/rill".to_owned());
    oidc.client_id_claim = Some("azp".to_owned());
    oidc.groups_claim = Some("groups".to_owned());
    config.security.initialization.users = vec![InitialUser {
        username: "demo".to_owned(),
        password: "secret".to_owned(),
        name: Some("Demo".to_owned()),
        email: Some("demo@example.com".to_owned()),
    }];
    config
}

/// Every record and value type switched the other way.
fn inverted(filter: &RecordFilterConfig) -> RecordFilterConfig {
    let mut inverted = RecordFilterConfig {
        command: !filter.command,
        event: !filter.event,
        rejection: !filter.rejection,
        ..filter.clone()
    };
    for value_type in rill_protocol::ValueType::ALL {
        inverted.set_value_type(value_type, !filter.value_type(value_type));
    }
    inverted
}

/// Every option changed from its default (exporters on), for layering tests.
pub(crate) fn nothing_default() -> RillConfig {
    let mut config = everything_set();
    config.cluster.node_id = 2;
    config.cluster.size = 5;
    config.cluster.partitions_count = 12;
    config.cluster.replication_factor = 3;
    config.cluster.initial_contact_points = vec!["b0:26502".to_owned(), "b1:26502".to_owned()];
    config.cluster.host = "10.0.0.2".to_owned();
    config.cluster.command_port = 36501;
    config.cluster.internal_port = 36502;
    config.cluster.configuration_discovery_timeout = Duration::from_secs(30);
    config.data.directory = "/var/lib/rill".into();
    config.data.snapshot_period = Duration::from_secs(600);
    config.data.disk_usage_command_watermark = 0.8;
    config.data.disk_usage_replication_watermark = 0.9;
    config.data.state_cache_size = crate::ByteSize(64 << 20);
    config.threads.cpu_thread_count = 4;
    config.threads.io_thread_count = 3;
    config.raft.heartbeat_interval = Duration::from_millis(100);
    config.raft.election_timeout = Duration::from_millis(1500);
    config.raft.priority_election = false;
    config.raft.auto_rebalance = false;
    config.raft.max_append_entries = 64;
    config.raft.max_batch_commands = 32;
    config.raft.max_batch_size = crate::ByteSize(1 << 20);
    config.raft.log_retention_entries = 50;
    let request = &mut config.flow_control.request;
    request.enabled = false;
    request.use_windowed = false;
    request.algorithm = crate::LimitAlgorithm::Gradient2;
    request.aimd.request_timeout = Duration::from_millis(500);
    request.aimd.initial_limit = 50;
    request.aimd.min_limit = 5;
    request.aimd.max_limit = 500;
    request.aimd.backoff_ratio = 0.75;
    request.fixed.limit = 40;
    request.vegas.alpha = 2;
    request.vegas.beta = 8;
    request.vegas.initial_limit = 30;
    request.gradient.min_limit = 4;
    request.gradient.initial_limit = 8;
    request.gradient.rtt_tolerance = 1.5;
    request.gradient2.min_limit = 5;
    request.gradient2.initial_limit = 9;
    request.gradient2.rtt_tolerance = 3.0;
    request.gradient2.long_window = 100;
    let write = &mut config.flow_control.write;
    write.enabled = true;
    write.limit = 5000;
    write.ramp_up = Duration::from_secs(30);
    write.throttling.enabled = true;
    write.throttling.acceptable_backlog = 10;
    config.engine.max_records_per_command = 50_000;
    config.engine.max_bytes_per_command = crate::ByteSize(48 << 20);
    config.history.enabled = false;
    config.backup.retention.max_backups = 5;
    config.history.retention = Duration::from_secs(3600);
    config.gateway.enabled = false;
    config.gateway.host = "127.0.0.1".to_owned();
    config.gateway.rest_port = 18080;
    config.gateway.grpc_port = 36500;
    config.gateway.max_message_size = crate::ByteSize(8 << 20);
    config.gateway.max_variable_document_size = crate::ByteSize(2 << 20);
    config.gateway.request_timeout = Duration::from_secs(20);
    config.gateway.long_polling_timeout = Duration::from_secs(30);
    config.gateway.max_request_timeout = Duration::from_secs(120);
    config.gateway.contact_points = vec!["b0:26501".to_owned()];
    config.monitoring.host = "127.0.0.2".to_owned();
    config.monitoring.port = 19600;
    config.cluster.tls.enabled = true;
    config.gateway.tls.enabled = true;
    config.monitoring.tls.enabled = true;
    config.backup.store = crate::model::BackupStoreKind::Filesystem;
    let authentication = &mut config.security.authentication;
    authentication.method = AuthenticationMethod::Basic;
    authentication.oidc.audiences = vec!["rill-api".to_owned()];
    authentication.oidc.username_claim = "preferred_username".to_owned();
    authentication.oidc.clock_skew = Duration::from_secs(5);
    let user = &mut config.security.initialization.users[0];
    user.username = "admin".to_owned();
    user.password = "pässwörd".to_owned();
    if let Some(elastic) = &mut config.exporters.elasticsearch {
        elastic.url = "https://es.example:9243".to_owned();
        elastic.index_prefix = "rill".to_owned();
        elastic.bulk_size = 10;
        elastic.bulk_delay = Duration::from_secs(1);
        elastic.bulk_memory_limit = crate::ByteSize(1 << 20);
        elastic.request_timeout = Duration::from_secs(10);
        elastic.retry_initial_backoff = Duration::from_millis(50);
        elastic.retry_max_backoff = Duration::from_secs(30);
        elastic.create_template = false;
        elastic.retention_policy_name = "rill-retention".to_owned();
        elastic.tls.verify_certificates = false;
        elastic.filter = inverted(&elastic.filter);
    }
    let jsonl = JsonlExporterConfig::default();
    config.exporters.jsonl = Some(JsonlExporterConfig {
        path: "/tmp/records.jsonl".into(),
        flush_size: 10,
        flush_delay: Duration::from_millis(100),
        filter: inverted(&jsonl.filter),
    });
    config
}

/// An option's value in `config` as text, the way an environment variable would hold it.
pub(crate) fn as_text(config: &RillConfig, path: &str) -> String {
    let tree = toml::Value::try_from(config).expect("config serializes");
    let value = crate::render::lookup(&tree, path).unwrap_or_else(|| panic!("{path} is set"));
    match value {
        toml::Value::String(text) => text.clone(),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().expect("lists hold strings"))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}
