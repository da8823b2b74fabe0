//! Layered loading: defaults → file → environment → overrides.

use std::time::Duration;

use rill_config::{ConfigError, ConfigLoader, LimitAlgorithm, RillConfig};

fn problems_of(error: ConfigError) -> Vec<String> {
    match error {
        ConfigError::Sources { problems } => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected source problems, got {other}"),
    }
}

#[test]
fn no_layers_and_an_empty_file_give_the_defaults() {
    assert_eq!(
        ConfigLoader::new().load().expect("defaults"),
        RillConfig::default()
    );
    let loaded = ConfigLoader::new()
        .toml("empty.toml", "")
        .load()
        .expect("empty file");
    assert_eq!(loaded, RillConfig::default());
    RillConfig::default()
        .validate()
        .expect("defaults are a valid standalone configuration");
}

#[test]
fn later_layers_win_and_untouched_options_keep_earlier_values() {
    let file = r#"
        [cluster]
        size = 3
        node-id = 1
        replication-factor = 3

        [raft]
        heartbeat-interval = "100ms"
    "#;
    let config = ConfigLoader::new()
        .toml("rill.toml", file)
        .env([
            ("RILL_CLUSTER__NODE_ID", "2"),
            ("RILL_CLUSTER__PARTITIONS_COUNT", "6"),
        ])
        .overrides(["cluster.partitions-count=4"])
        .load()
        .expect("valid layers");
    assert_eq!(config.cluster.size, 3, "from the file");
    assert_eq!(config.cluster.replication_factor, 3, "from the file");
    assert_eq!(config.cluster.node_id, 2, "environment over file");
    assert_eq!(
        config.cluster.partitions_count, 4,
        "override over environment"
    );
    assert_eq!(config.raft.heartbeat_interval, Duration::from_millis(100));
    assert_eq!(
        config.raft.election_timeout,
        Duration::from_millis(2500),
        "default"
    );
    config.validate().expect("valid");
}

#[test]
fn environment_values_are_read_as_their_option_types() {
    let config = ConfigLoader::new()
        .env([
            ("RILL_CLUSTER__NODE_ID", "2"),
            ("RILL_CLUSTER__SIZE", "3"),
            ("RILL_FLOW_CONTROL__REQUEST__ALGORITHM", "Vegas"),
            ("RILL_DATA__DIRECTORY", "/data"),
            (
                "RILL_CLUSTER__INITIAL_CONTACT_POINTS",
                "b0:26502, b1:26502,",
            ),
            ("RILL_FLOW_CONTROL__REQUEST__ENABLED", "FALSE"),
            ("RILL_FLOW_CONTROL__REQUEST__AIMD__BACKOFF_RATIO", "0.5"),
            ("RILL_RAFT__MAX_BATCH_SIZE", "512KB"),
            ("RILL_GATEWAY__REQUEST_TIMEOUT", "1m 30s"),
        ])
        .load()
        .expect("valid environment");
    assert_eq!(config.cluster.node_id, 2);
    assert_eq!(config.flow_control.request.algorithm, LimitAlgorithm::Vegas);
    assert_eq!(config.data.directory.to_str(), Some("/data"));
    assert_eq!(
        config.cluster.initial_contact_points,
        ["b0:26502", "b1:26502"]
    );
    assert!(!config.flow_control.request.enabled);
    assert_eq!(config.flow_control.request.aimd.backoff_ratio, 0.5);
    assert_eq!(config.raft.max_batch_size.bytes(), 512 * 1024);
    assert_eq!(config.gateway.request_timeout, Duration::from_secs(90));
}

#[test]
fn other_variables_are_left_alone() {
    let config = ConfigLoader::new()
        .env([
            ("PATH", "/usr/bin"),
            ("RILL_ADDRESS", "http://localhost:8080"),
            ("RILL_LOG", "debug"),
            ("rill_cluster__size", "9"),
        ])
        .load()
        .expect("nothing here is configuration");
    assert_eq!(config, RillConfig::default());
}

#[test]
fn unknown_and_malformed_environment_and_overrides_are_all_reported() {
    let error = ConfigLoader::new()
        .env([
            ("RILL_CLUSTER__NODEID", "1"),
            ("RILL_CLUSTER__NODE_ID", "two"),
            ("RILL_CLUSTER_SIZE", "3"),
            ("RILL_NETWORK__PORT", "1"),
        ])
        .overrides([
            "cluster.partitions-count=70000",
            "flow-control.request.algorithm=fast",
            "size",
        ])
        .load()
        .expect_err("bad layers");
    let problems = problems_of(error);
    let expected = [
        "environment variable RILL_CLUSTER_SIZE: sections are separated by a double underscore: did you mean RILL_CLUSTER__SIZE?",
        "environment variable RILL_CLUSTER__NODEID: unknown option `cluster.nodeid`; did you mean `cluster.node-id`?",
        "environment variable RILL_CLUSTER__NODE_ID: `cluster.node-id` expects an integer from 0 to 4294967295, got `two`",
        "environment variable RILL_NETWORK__PORT: unknown option `network.port` (see docs/configuration.md for the list)",
        "override \"cluster.partitions-count=70000\": `cluster.partitions-count` expects an integer from 0 to 65535, got `70000`",
        "override \"flow-control.request.algorithm=fast\": `flow-control.request.algorithm` expects one of aimd, fixed, vegas, gradient, gradient2, got `fast`",
        "override \"size\": expected key.path=value, e.g. cluster.partitions-count=4",
    ];
    assert_eq!(problems, expected);
}

#[test]
fn values_that_do_not_parse_say_what_was_expected() {
    let cases = [
        (
            "RILL_RAFT__HEARTBEAT_INTERVAL",
            "soon",
            "`raft.heartbeat-interval` expects a duration such as 250ms",
        ),
        (
            "RILL_GATEWAY__ENABLED",
            "yes",
            "`gateway.enabled` expects true or false, got `yes`",
        ),
        (
            "RILL_GATEWAY__MAX_MESSAGE_SIZE",
            "4 lightyears",
            "`gateway.max-message-size`: unknown size unit",
        ),
        (
            "RILL_DATA__DISK_USAGE_COMMAND_WATERMARK",
            "most",
            "expects a number such as 0.9",
        ),
        (
            "RILL_CLUSTER__SIZE",
            "-1",
            "expects an integer from 0 to 4294967295, got `-1`",
        ),
        (
            "RILL_EXPORTERS__ELASTICSEARCH",
            "on",
            "`exporters.elasticsearch` is a section, not an option",
        ),
    ];
    for (name, value, expected) in cases {
        let error = ConfigLoader::new()
            .env([(name, value)])
            .load()
            .expect_err(name);
        let problems = problems_of(error);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains(expected), "{name}: {}", problems[0]);
        assert!(problems[0].starts_with(&format!("environment variable {name}")));
    }
}

#[cfg(unix)]
#[test]
fn a_non_utf8_value_is_an_error_not_a_panic() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let value = OsString::from_vec(vec![0x66, 0xff, 0x6f]);
    let error = ConfigLoader::new()
        .env([(OsString::from("RILL_CLUSTER__HOST"), value)])
        .load()
        .expect_err("not UTF-8");
    assert!(problems_of(error)[0].contains("not valid UTF-8"));
}

#[test]
fn setting_an_exporter_option_turns_the_exporter_on_with_defaults() {
    let config = ConfigLoader::new()
        .env([("RILL_EXPORTERS__ELASTICSEARCH__URL", "http://es:9200")])
        .load()
        .expect("valid");
    let elastic = config.exporters.elasticsearch.expect("exporter configured");
    assert_eq!(elastic.url, "http://es:9200");
    assert_eq!(elastic.bulk_size, 1000, "Zeebe's default");
    assert!(config.exporters.jsonl.is_none());
}

#[test]
fn an_empty_value_unsets_an_optional_option() {
    let file = "[cluster]\nadvertised-host = \"broker-0\"\n";
    let config = ConfigLoader::new()
        .toml("rill.toml", file)
        .load()
        .expect("valid");
    assert_eq!(config.cluster.advertised_host.as_deref(), Some("broker-0"));
    let config = ConfigLoader::new()
        .toml("rill.toml", file)
        .overrides(["cluster.advertised-host="])
        .load()
        .expect("valid");
    assert_eq!(config.cluster.advertised_host, None);
}

#[test]
fn overrides_apply_in_order_and_accept_underscores() {
    let config = ConfigLoader::new()
        .overrides(["cluster.partitions_count=3", "cluster.partitions-count=5"])
        .load()
        .expect("valid");
    assert_eq!(config.cluster.partitions_count, 5);
}

#[test]
fn file_errors_give_the_file_line_and_key() {
    let cases = [
        (
            "[cluster]\nsize = 3\nnode-idd = 1\n",
            "configuration file rill.toml, line 3, `cluster.node-idd`: unknown field `node-idd`, expected one of `node-id`",
        ),
        (
            "[raft]\nheartbeat-interval = \"fast\"\n",
            "configuration file rill.toml, line 2, `raft.heartbeat-interval`: invalid value: string \"fast\", expected a duration",
        ),
        (
            "[cluster]\npartitions-count = 70000\n",
            "line 2, `cluster.partitions-count`: invalid value: integer `70000`, expected u16",
        ),
        (
            "[clutser]\nsize = 3\n",
            "line 1, `clutser`: unknown field `clutser`",
        ),
        (
            "[flow-control.request]\nalgorithm = \"fast\"\n",
            "line 2, `flow-control.request.algorithm`: unknown variant `fast`",
        ),
        ("[cluster\nsize = 3\n", "line 1"),
    ];
    for (text, expected) in cases {
        let error = ConfigLoader::new()
            .toml("rill.toml", text)
            .load()
            .expect_err(text);
        assert!(matches!(error, ConfigError::File { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.contains(expected),
            "{text:?}\n  gave: {message}\n  want: {expected}"
        );
    }
}

#[test]
fn a_removed_option_is_refused_naming_what_replaces_it() {
    let removed = "`engine.instance-retention` was removed";
    let instead = "`history.retention`";
    let problems = problems_of(
        ConfigLoader::new()
            .env([("RILL_ENGINE__INSTANCE_RETENTION", "1s")])
            .overrides(["engine.instance-retention=1s"])
            .load()
            .expect_err("a removed option"),
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
    for problem in &problems {
        assert!(problem.contains(removed), "{problem}");
        assert!(problem.contains(instead), "{problem}");
    }
    assert!(problems[0].starts_with("environment variable RILL_ENGINE__INSTANCE_RETENTION"));
    assert!(problems[1].starts_with("override \"engine.instance-retention=1s\""));

    for text in [
        "[engine]\nmax-records-per-command = 10\ninstance-retention = \"1s\"\n",
        "engine.instance-retention = \"1s\"\n",
    ] {
        let error = ConfigLoader::new()
            .toml("rill.toml", text)
            .load()
            .expect_err(text);
        assert!(matches!(error, ConfigError::File { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.contains("`engine.instance-retention`:"),
            "{message}"
        );
        assert!(message.contains(removed), "{message}");
        assert!(message.contains(instead), "{message}");
    }
}

#[test]
fn the_removed_throttling_options_are_refused_naming_what_to_use() {
    for (option, instead) in [
        (
            "flow-control.write.throttling.minimum-limit=50",
            "flow-control.write.limit",
        ),
        (
            "flow-control.write.throttling.resolution=15s",
            "flow-control.write.throttling.acceptable-backlog",
        ),
    ] {
        let problems = problems_of(
            ConfigLoader::new()
                .overrides([option])
                .load()
                .expect_err(option),
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("was removed"), "{}", problems[0]);
        assert!(problems[0].contains(instead), "{}", problems[0]);
    }
}

#[test]
fn files_are_read_from_disk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("rill.toml");
    std::fs::write(&path, "[threads]\ncpu-thread-count = 6\n").expect("write");
    let config = ConfigLoader::new().file(&path).load().expect("valid file");
    assert_eq!(config.threads.cpu_thread_count, 6);

    let missing = dir.path().join("missing.toml");
    let error = ConfigLoader::new()
        .file(&missing)
        .load()
        .expect_err("no such file");
    assert!(matches!(error, ConfigError::ReadFile { .. }));
    assert!(
        error.to_string().contains(&missing.display().to_string()),
        "{error}"
    );
}

#[test]
fn the_shown_configuration_loads_back_to_the_same_configuration() {
    let config = ConfigLoader::new()
        .env([
            ("RILL_CLUSTER__SIZE", "3"),
            ("RILL_CLUSTER__REPLICATION_FACTOR", "3"),
            ("RILL_RAFT__ELECTION_TIMEOUT", "2s 500ms"),
            ("RILL_EXPORTERS__JSONL__PATH", "/tmp/r.jsonl"),
        ])
        .load()
        .expect("valid");
    let shown = config.to_toml().expect("renders");
    assert!(
        shown.contains("[cluster]\nnode-id = 0\nsize = 3\n"),
        "{shown}"
    );
    assert!(
        shown.contains("[exporters.jsonl]\npath = \"/tmp/r.jsonl\""),
        "{shown}"
    );
    let reloaded = ConfigLoader::new()
        .toml("shown.toml", shown)
        .load()
        .expect("loads back");
    assert_eq!(reloaded, config);
}

#[test]
fn users_are_read_from_a_file_the_environment_and_overrides() {
    let text = "[security.authentication]\nmethod = \"basic\"\n\n\
                [[security.initialization.users]]\nusername = \"demo\"\npassword = \"demo\"\n\
                name = \"Demo User\"\nemail = \"demo@example.com\"\n";
    let config = rill_config::ConfigLoader::new()
        .toml("rill.toml", text)
        .env([
            ("RILL_SECURITY__INITIALIZATION__USERS__1__USERNAME", "ops"),
            (
                "RILL_SECURITY__INITIALIZATION__USERS__1__PASSWORD",
                "ünïcödé",
            ),
        ])
        .overrides(["security.initialization.users.0.password=changed"])
        .load()
        .expect("loads");
    let users = &config.security.initialization.users;
    assert_eq!(users.len(), 2);
    assert_eq!(users[0].username, "demo");
    assert_eq!(users[0].password, "changed");
    assert_eq!(users[0].name.as_deref(), Some("Demo User"));
    assert_eq!(users[1].username, "ops");
    assert_eq!(users[1].password, "ünïcödé");
    assert!(config.validate().is_ok());
    // The password never shows, in `config show` or in a debug print.
    let shown = config.to_toml().expect("renders");
    assert!(
        !shown.contains("changed") && !shown.contains("ünïcödé"),
        "{shown}"
    );
    assert!(!format!("{config:?}").contains("ünïcödé"));
}

#[test]
fn a_list_index_is_bounded() {
    let error = rill_config::ConfigLoader::new()
        .overrides(["security.initialization.users.99999999.username=x"])
        .load()
        .expect_err("refused");
    assert!(error.to_string().contains("list index 99999999"), "{error}");
}
