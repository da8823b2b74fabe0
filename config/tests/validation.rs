//! `validate()` finds every problem at once and says how to fix each.

use std::time::Duration;

use rill_config::{ConfigError, ConfigLoader, ElasticsearchExporterConfig, Problem, RillConfig};

fn problems(config: &RillConfig) -> Vec<Problem> {
    match config.validate() {
        Ok(()) => Vec::new(),
        Err(ConfigError::Invalid { problems }) => problems,
        Err(other) => panic!("unexpected error {other}"),
    }
}

/// The single problem with `path`, which must be the only one.
fn only_problem(config: &RillConfig, path: &str) -> Problem {
    let found = problems(config);
    assert_eq!(
        found.len(),
        1,
        "expected one problem at {path}, got {found:#?}"
    );
    assert_eq!(found[0].path, path, "{found:#?}");
    assert!(!found[0].fix.is_empty());
    found.into_iter().next().expect("one problem")
}

fn three_brokers() -> RillConfig {
    ConfigLoader::new()
        .overrides([
            "cluster.size=3",
            "cluster.replication-factor=3",
            "cluster.node-id=2",
        ])
        .load()
        .expect("valid overrides")
}

#[test]
fn a_three_broker_cluster_is_valid() {
    assert!(problems(&three_brokers()).is_empty());
}

#[test]
fn replication_factor_above_cluster_size() {
    let mut config = three_brokers();
    config.cluster.replication_factor = 5;
    let problem = only_problem(&config, "cluster.replication-factor");
    assert_eq!(
        problem.to_string(),
        "cluster.replication-factor: is 5, but the cluster has only 3 broker(s) to hold the \
         replicas. Fix: lower it to at most 3 or raise cluster.size to at least 5"
    );
}

#[test]
fn node_id_out_of_range() {
    let mut config = three_brokers();
    config.cluster.node_id = 3;
    config.cluster.initial_contact_points.clear();
    let problem = only_problem(&config, "cluster.node-id");
    assert!(problem.message.contains("from 0 to 2"), "{problem}");
    assert!(problem.fix.contains("below 3"), "{problem}");
    config.cluster.node_id = u32::MAX;
    let problem = only_problem(&config, "cluster.node-id");
    assert!(
        problem.message.contains("reserved for gateways"),
        "{problem}"
    );
}

/// A broker started with an id beyond `cluster.size` (a StatefulSet scaled up) joins the
/// running brokers it finds at the contact points.
#[test]
fn a_node_id_beyond_the_size_joins_through_the_contact_points() {
    let mut config = three_brokers();
    config.cluster.node_id = 4;
    config.cluster.initial_contact_points = vec![
        "broker-0:26502".to_owned(),
        "broker-1:26502".to_owned(),
        "broker-2:26502".to_owned(),
    ];
    assert!(problems(&config).is_empty(), "{:?}", problems(&config));
}

#[test]
fn partitions_count_zero_or_above_the_maximum() {
    for count in [0, 4096, u16::MAX] {
        let mut config = RillConfig::default();
        config.cluster.partitions_count = count;
        let problem = only_problem(&config, "cluster.partitions-count");
        assert!(problem.fix.contains("1 to 4095"), "{problem}");
    }
    let mut config = RillConfig::default();
    config.cluster.partitions_count = 4095;
    assert!(problems(&config).is_empty());
}

#[test]
fn zero_thread_counts() {
    let mut config = RillConfig::default();
    config.threads.cpu_thread_count = 0;
    config.threads.io_thread_count = 0;
    let paths: Vec<String> = problems(&config).into_iter().map(|p| p.path).collect();
    assert_eq!(
        paths,
        ["threads.cpu-thread-count", "threads.io-thread-count"]
    );
}

#[test]
fn duplicate_ports_on_overlapping_hosts() {
    let mut config = RillConfig::default();
    config.gateway.rest_port = config.cluster.command_port;
    let problem = only_problem(&config, "gateway.rest-port");
    assert_eq!(
        problem.message,
        "is 26501, the same as cluster.command-port, on 0.0.0.0 and 0.0.0.0"
    );

    // Different specific interfaces can share a port...
    let mut config = RillConfig::default();
    config.cluster.host = "10.0.0.1".to_owned();
    config.monitoring.host = "10.0.0.2".to_owned();
    config.monitoring.port = config.cluster.internal_port;
    config.gateway.enabled = false;
    assert!(problems(&config).is_empty(), "{:#?}", problems(&config));
    // ...but not the same one, and a disabled gateway binds nothing.
    config.monitoring.host = "10.0.0.1".to_owned();
    only_problem(&config, "monitoring.port");

    // Port 0 picks a free port: never a clash.
    let mut config = RillConfig::default();
    config.cluster.command_port = 0;
    config.cluster.internal_port = 0;
    assert!(problems(&config).is_empty());
}

#[test]
fn invalid_exporter_settings() {
    let mut config = RillConfig::default();
    config.exporters.elasticsearch = Some(ElasticsearchExporterConfig {
        url: "localhost:9200".to_owned(),
        ..ElasticsearchExporterConfig::default()
    });
    let problem = only_problem(&config, "exporters.elasticsearch.url");
    assert!(
        problem.message.contains("`localhost:9200` is not a URL"),
        "{problem}"
    );

    let mut config = RillConfig::default();
    config.exporters.elasticsearch = Some(ElasticsearchExporterConfig {
        index_prefix: "Zeebe Record".to_owned(),
        username: Some("elastic".to_owned()),
        ..ElasticsearchExporterConfig::default()
    });
    let paths: Vec<String> = problems(&config).into_iter().map(|p| p.path).collect();
    assert_eq!(
        paths,
        [
            "exporters.elasticsearch.index-prefix",
            "exporters.elasticsearch.password"
        ]
    );
}

#[test]
fn flow_control_limits() {
    let mut config = RillConfig::default();
    config.flow_control.request.aimd.min_limit = 2000;
    let problem = only_problem(&config, "flow-control.request.aimd.min-limit");
    assert_eq!(problem.message, "(2000) is above max-limit (1000)");

    for ratio in [0.0, 1.0, 1.5, -0.1, f64::NAN] {
        let mut config = RillConfig::default();
        config.flow_control.request.aimd.backoff_ratio = ratio;
        only_problem(&config, "flow-control.request.aimd.backoff-ratio");
    }

    let mut config = RillConfig::default();
    config.flow_control.request.vegas.alpha = 6;
    only_problem(&config, "flow-control.request.vegas.alpha");

    let mut config = RillConfig::default();
    config.flow_control.request.gradient2.rtt_tolerance = 0.5;
    only_problem(&config, "flow-control.request.gradient2.rtt-tolerance");
}

#[test]
fn raft_timing() {
    let mut config = RillConfig::default();
    config.raft.election_timeout = Duration::from_millis(400);
    let problem = only_problem(&config, "raft.election-timeout");
    assert_eq!(
        problem.message,
        "is 400ms, less than twice raft.heartbeat-interval (250ms)"
    );
    config.raft.election_timeout = Duration::from_millis(500);
    assert!(problems(&config).is_empty(), "{:#?}", problems(&config));
}

#[test]
fn contact_points_need_a_host_and_port() {
    let config = ConfigLoader::new()
        .env([("RILL_CLUSTER__INITIAL_CONTACT_POINTS", "b0:26502,b1,:7")])
        .load()
        .expect("loads");
    let paths: Vec<String> = problems(&config).into_iter().map(|p| p.path).collect();
    assert_eq!(
        paths,
        [
            "cluster.initial-contact-points[1]",
            "cluster.initial-contact-points[2]"
        ]
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let config = ConfigLoader::new()
        .overrides([
            "cluster.size=2",
            "cluster.node-id=7",
            "cluster.replication-factor=3",
            "cluster.partitions-count=0",
            "threads.cpu-thread-count=0",
            "gateway.grpc-port=9600",
            "exporters.elasticsearch.url=ftp://es",
            "flow-control.request.aimd.backoff-ratio=1",
            "data.snapshot-period=0s",
        ])
        .load()
        .expect("the values parse; they are just wrong together");
    let error = config.validate().expect_err("invalid");
    let message = error.to_string();
    let ConfigError::Invalid { problems } = error else {
        panic!("expected Invalid");
    };
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "cluster.node-id",
            "cluster.partitions-count",
            "cluster.replication-factor",
            "data.snapshot-period",
            "threads.cpu-thread-count",
            "flow-control.request.aimd.backoff-ratio",
            "gateway.grpc-port",
            "exporters.elasticsearch.url",
        ]
    );
    assert!(
        message.starts_with("invalid configuration:\n  - cluster.node-id: is 7"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1 + problems.len(), "{message}");
}

/// A lower `gateway.max-message-size` alone stays valid: a document larger than the
/// message it comes in cannot arrive anyway.
#[test]
fn the_variable_document_size_is_at_least_one_byte() {
    let mut config = three_brokers();
    config.gateway.max_message_size = rill_config::ByteSize(64 << 10);
    assert!(problems(&config).is_empty());
    config.gateway.max_variable_document_size = rill_config::ByteSize(0);
    let problem = only_problem(&config, "gateway.max-variable-document-size");
    assert!(problem.message.contains("is 0"), "{problem}");
}

#[test]
fn the_command_limits_leave_room_for_ordinary_commands() {
    let mut config = three_brokers();
    assert!(problems(&config).is_empty());
    config.engine.max_records_per_command = 10;
    let problem = only_problem(&config, "engine.max-records-per-command");
    assert!(problem.message.contains("is 10"), "{problem}");
    assert!(problem.fix.contains("at least 1000"), "{problem}");

    let mut config = three_brokers();
    config.gateway.max_message_size = rill_config::ByteSize(8 << 20);
    config.engine.max_bytes_per_command = rill_config::ByteSize(12 << 20);
    let problem = only_problem(&config, "engine.max-bytes-per-command");
    assert!(
        problem
            .message
            .contains("less than twice gateway.max-message-size"),
        "{problem}"
    );
    config.engine.max_bytes_per_command = rill_config::ByteSize(16 << 20);
    assert!(problems(&config).is_empty());
}

fn basic_with_users(users: &[(&str, &str)]) -> RillConfig {
    let mut overrides = vec!["security.authentication.method=basic".to_owned()];
    for (i, (username, password)) in users.iter().enumerate() {
        overrides.push(format!(
            "security.initialization.users.{i}.username={username}"
        ));
        overrides.push(format!(
            "security.initialization.users.{i}.password={password}"
        ));
    }
    ConfigLoader::new()
        .overrides(overrides)
        .load()
        .expect("valid overrides")
}

#[test]
fn basic_authentication_with_users_is_valid() {
    let config = basic_with_users(&[("demo", "demo"), ("ops", "pässwörd")]);
    assert!(problems(&config).is_empty(), "{:#?}", problems(&config));
    assert_eq!(config.security.initialization.users[1].password, "pässwörd");
}

#[test]
fn basic_authentication_without_users_is_refused() {
    let config = basic_with_users(&[]);
    let problem = only_problem(&config, "security.initialization.users");
    assert!(problem.message.contains("nobody could log in"), "{problem}");
}

#[test]
fn users_must_have_distinct_names_without_colons_and_a_password() {
    let config = basic_with_users(&[("demo", "a"), ("demo", "b"), ("a:b", "c")]);
    let mut config = config;
    config.security.initialization.users[0].password.clear();
    let found = problems(&config);
    let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "security.initialization.users[0].password",
            "security.initialization.users[1].username",
            "security.initialization.users[2].username",
        ],
        "{found:#?}"
    );
}

#[test]
fn users_without_basic_authentication_are_not_accepted_and_ignored() {
    let mut config = basic_with_users(&[("demo", "demo")]);
    config.security.authentication.method = rill_config::AuthenticationMethod::None;
    let problem = only_problem(&config, "security.initialization.users");
    assert!(problem.message.contains("method is none"), "{problem}");
}

#[test]
fn oidc_needs_a_loopback_or_https_issuer_and_an_audience() {
    let config = ConfigLoader::new()
        .overrides([
            "security.authentication.method=oidc",
            "security.authentication.oidc.issuer-uri=http://idp.example.com/realms/x",
        ])
        .load()
        .expect("valid overrides");
    let found = problems(&config);
    let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "security.authentication.oidc.issuer-uri",
            "security.authentication.oidc.audiences",
        ],
        "{found:#?}"
    );
    assert!(
        found[0].message.contains("not a loopback address"),
        "{}",
        found[0]
    );
    let mut loopback = config.clone();
    loopback.security.authentication.oidc.issuer_uri = Some("http://127.0.0.1:9000/".to_owned());
    loopback.security.authentication.oidc.audiences = vec!["rill".to_owned()];
    assert!(problems(&loopback).is_empty(), "{:#?}", problems(&loopback));
    let mut https = loopback.clone();
    https.security.authentication.oidc.issuer_uri =
        Some("https://idp.example.com/realms/x".to_owned());
    assert!(problems(&https).is_empty(), "{:#?}", problems(&https));
    let mut no_issuer = https;
    no_issuer.security.authentication.oidc.issuer_uri = None;
    only_problem(&no_issuer, "security.authentication.oidc.issuer-uri");
}

#[test]
fn an_issuer_without_oidc_is_not_accepted_and_ignored() {
    let mut config = RillConfig::default();
    config.security.authentication.oidc.issuer_uri = Some("https://idp.example.com".to_owned());
    only_problem(&config, "security.authentication.oidc.issuer-uri");
}

#[test]
fn backup_settings_are_refused_unless_they_are_used() {
    let load = |overrides: &[&str]| {
        ConfigLoader::new()
            .overrides(overrides.iter().copied())
            .load()
            .expect("the overrides parse")
    };
    assert!(problems(&load(&["backup.store=none"])).is_empty());
    assert!(
        problems(&load(&[
            "backup.store=filesystem",
            "backup.filesystem.base-path=/mnt/backups"
        ]))
        .is_empty()
    );
    let problem = only_problem(
        &load(&["backup.store=filesystem"]),
        "backup.filesystem.base-path",
    );
    assert!(problem.message.contains("not set"), "{problem}");
    let problem = only_problem(
        &load(&["backup.filesystem.base-path=/mnt/backups"]),
        "backup.filesystem.base-path",
    );
    assert!(problem.message.contains("ignored"), "{problem}");
    let problem = only_problem(&load(&["backup.store=s3"]), "backup.s3.bucket");
    assert!(problem.message.contains("not set"), "{problem}");
    assert!(
        problems(&load(&[
            "backup.store=s3",
            "backup.s3.bucket=rill",
            "backup.s3.base-path=cluster-a",
            "backup.s3.endpoint=http://127.0.0.1:9000",
            "backup.s3.region=eu-west-1",
            "backup.s3.access-key=key",
            "backup.s3.secret-key=shh",
        ]))
        .is_empty()
    );
    // Credentials from the environment: no key at all is fine.
    assert!(problems(&load(&["backup.store=s3", "backup.s3.bucket=rill"])).is_empty());
    let problem = only_problem(
        &load(&[
            "backup.store=s3",
            "backup.s3.bucket=rill",
            "backup.s3.secret-key=shh",
        ]),
        "backup.s3.access-key",
    );
    assert!(problem.message.contains("not set"), "{problem}");
    assert!(!problem.to_string().contains("shh"), "{problem}");
    let problem = only_problem(
        &load(&[
            "backup.store=s3",
            "backup.s3.bucket=rill",
            "backup.s3.endpoint=minio:9000",
        ]),
        "backup.s3.endpoint",
    );
    assert!(problem.message.contains("not an http"), "{problem}");
    let problem = only_problem(
        &load(&[
            "backup.store=s3",
            "backup.s3.bucket=rill",
            "backup.filesystem.base-path=/mnt/backups",
        ]),
        "backup.filesystem.base-path",
    );
    assert!(problem.message.contains("ignored"), "{problem}");
    let found = problems(&load(&[
        "backup.store=filesystem",
        "backup.filesystem.base-path=/mnt/backups",
        "backup.s3.bucket=rill",
        "backup.s3.secret-key=shh",
    ]));
    let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["backup.s3.bucket", "backup.s3.secret-key"]);
    assert!(
        found.iter().all(|p| p.message.contains("ignored")),
        "{found:?}"
    );
    assert!(
        found.iter().all(|p| !p.to_string().contains("shh")),
        "a secret never appears in a problem"
    );
    // A schedule needs a store and a valid expression; retention needs a schedule.
    assert!(
        problems(&load(&[
            "backup.store=filesystem",
            "backup.filesystem.base-path=/mnt/backups",
            "backup.schedule=0 2 * * *",
            "backup.retention.window=30d",
            "backup.retention.max-backups=7",
        ]))
        .is_empty()
    );
    let problem = only_problem(
        &load(&[
            "backup.store=filesystem",
            "backup.filesystem.base-path=/mnt/backups",
            "backup.schedule=0 24 * * *",
        ]),
        "backup.schedule",
    );
    assert!(problem.message.contains("hour field"), "{problem}");
    let problem = only_problem(&load(&["backup.schedule=0 2 * * *"]), "backup.schedule");
    assert!(
        problem.message.contains("backup.store is none"),
        "{problem}"
    );
    let found = problems(&load(&[
        "backup.retention.window=30d",
        "backup.retention.max-backups=3",
    ]));
    let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        ["backup.retention.window", "backup.retention.max-backups"]
    );
    assert!(
        ConfigLoader::new()
            .overrides(["backup.store=tape"])
            .load()
            .is_err()
    );
}

#[test]
fn the_replication_watermark_is_a_fraction_at_or_above_the_command_one() {
    let mut config = RillConfig::default();
    config.data.disk_usage_replication_watermark = 0.9;
    let problem = only_problem(&config, "data.disk-usage-replication-watermark");
    assert!(
        problem
            .message
            .contains("below data.disk-usage-command-watermark (0.97)"),
        "{problem:?}"
    );
    config.data.disk_usage_replication_watermark = 1.5;
    only_problem(&config, "data.disk-usage-replication-watermark");
    config.data.disk_usage_replication_watermark = 0.97;
    assert!(
        problems(&config).is_empty(),
        "equal to the command watermark is fine"
    );
}
