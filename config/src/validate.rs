//! `validate()`: every problem at once, each with the option at fault and the fix.

use std::collections::BTreeMap;
use std::time::Duration;

use rill_protocol::MAX_PARTITION_ID;

use crate::ByteSize;
use crate::model::{AuthenticationMethod, BackupStoreKind, EngineConfig, RillConfig};
use crate::{ConfigError, Problem, Result};

impl RillConfig {
    /// Checks the whole tree and reports every problem found, or `Ok`.
    pub fn validate(&self) -> Result<()> {
        let problems = self.problems();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid { problems })
        }
    }

    /// Every problem with this configuration (empty when it is valid).
    pub fn problems(&self) -> Vec<Problem> {
        let mut found = Problems::default();
        self.check_cluster(&mut found);
        self.check_data_threads_raft(&mut found);
        self.check_flow_control(&mut found);
        self.check_gateway_and_monitoring(&mut found);
        self.check_tls(&mut found);
        self.check_engine(&mut found);
        self.check_ports(&mut found);
        self.check_exporters(&mut found);
        self.check_security(&mut found);
        self.check_backup(&mut found);
        found.0
    }

    fn check_cluster(&self, found: &mut Problems) {
        let cluster = &self.cluster;
        if cluster.size == 0 {
            found.add(
                "cluster.size",
                "is 0",
                "set it to the number of brokers, at least 1",
            );
        } else if cluster.node_id == u32::MAX {
            found.add(
                "cluster.node-id",
                format!("is {}, which is reserved for gateways", cluster.node_id),
                "give each broker a distinct id from 0",
            );
        } else if cluster.node_id >= cluster.size && cluster.initial_contact_points.is_empty() {
            // A broker beyond cluster.size joins a running cluster (a StatefulSet scaled
            // up), which it finds through the contact points.
            found.add(
                "cluster.node-id",
                format!(
                    "is {}, but node ids of a new cluster run from 0 to {} with cluster.size                      = {}, and a broker beyond them joins a running cluster through                      cluster.initial-contact-points, which is empty",
                    cluster.node_id,
                    cluster.size - 1,
                    cluster.size
                ),
                format!(
                    "give each broker a distinct id below {}, raise cluster.size, or list the                      running brokers in cluster.initial-contact-points",
                    cluster.size
                ),
            );
        }
        if cluster.partitions_count == 0 || cluster.partitions_count > MAX_PARTITION_ID {
            found.add(
                "cluster.partitions-count",
                format!("is {}", cluster.partitions_count),
                format!("use 1 to {MAX_PARTITION_ID} (keys hold the partition id in 12 bits)"),
            );
        }
        if cluster.replication_factor == 0 {
            found.add(
                "cluster.replication-factor",
                "is 0",
                "use at least 1 (3 tolerates one broker failure)",
            );
        } else if cluster.size > 0 && u32::from(cluster.replication_factor) > cluster.size {
            found.add(
                "cluster.replication-factor",
                format!(
                    "is {}, but the cluster has only {} broker(s) to hold the replicas",
                    cluster.replication_factor, cluster.size
                ),
                format!(
                    "lower it to at most {} or raise cluster.size to at least {}",
                    cluster.size, cluster.replication_factor
                ),
            );
        }
        if cluster.host.trim().is_empty() {
            found.add("cluster.host", "is empty", "set an interface, e.g. 0.0.0.0");
        }
        if cluster
            .advertised_host
            .as_deref()
            .is_some_and(|h| h.trim().is_empty())
        {
            found.add(
                "cluster.advertised-host",
                "is empty",
                "set a host name or address other brokers can reach, or leave it unset",
            );
        }
        for (i, point) in cluster.initial_contact_points.iter().enumerate() {
            if let Err(reason) = check_host_port(point) {
                found.add(
                    format!("cluster.initial-contact-points[{i}]"),
                    format!("`{point}` {reason}"),
                    "write host:port of another broker's internal port, e.g. broker-1:26502",
                );
            }
        }
    }

    fn check_data_threads_raft(&self, found: &mut Problems) {
        if self.data.directory.as_os_str().is_empty() {
            found.add("data.directory", "is empty", "set a directory, e.g. ./data");
        }
        positive(found, "data.snapshot-period", self.data.snapshot_period);
        let watermark = self.data.disk_usage_command_watermark;
        if !(watermark > 0.0 && watermark <= 1.0) {
            found.add(
                "data.disk-usage-command-watermark",
                format!("is {watermark}"),
                "use a fraction above 0 and at most 1, e.g. 0.97",
            );
        }
        let replication = self.data.disk_usage_replication_watermark;
        if !(replication > 0.0 && replication <= 1.0) {
            found.add(
                "data.disk-usage-replication-watermark",
                format!("is {replication}"),
                "use a fraction above 0 and at most 1, e.g. 0.99",
            );
        } else if replication < watermark {
            found.add(
                "data.disk-usage-replication-watermark",
                format!(
                    "is {replication}, below data.disk-usage-command-watermark ({watermark}): \
                     followers would refuse entries their leader still accepts commands for"
                ),
                "set it at or above data.disk-usage-command-watermark, e.g. 0.99",
            );
        }
        at_least_one(
            found,
            "data.state-cache-size",
            self.data.state_cache_size.bytes(),
        );
        at_least_one(
            found,
            "threads.cpu-thread-count",
            self.threads.cpu_thread_count as u64,
        );
        at_least_one(
            found,
            "threads.io-thread-count",
            self.threads.io_thread_count as u64,
        );

        let raft = &self.raft;
        positive(found, "raft.heartbeat-interval", raft.heartbeat_interval);
        if raft.election_timeout < raft.heartbeat_interval * 2 {
            found.add(
                "raft.election-timeout",
                format!(
                    "is {}, less than twice raft.heartbeat-interval ({})",
                    show(raft.election_timeout),
                    show(raft.heartbeat_interval)
                ),
                "make it several heartbeat intervals long (the default is 10 intervals)",
            );
        }
        at_least_one(found, "raft.max-append-entries", raft.max_append_entries);
        at_least_one(
            found,
            "raft.max-batch-commands",
            raft.max_batch_commands as u64,
        );
        at_least_one(found, "raft.max-batch-size", raft.max_batch_size.bytes());
    }

    fn check_flow_control(&self, found: &mut Problems) {
        let request = &self.flow_control.request;
        let aimd = &request.aimd;
        positive(
            found,
            "flow-control.request.aimd.request-timeout",
            aimd.request_timeout,
        );
        at_least_one(
            found,
            "flow-control.request.aimd.min-limit",
            aimd.min_limit.into(),
        );
        if aimd.min_limit > aimd.max_limit {
            found.add(
                "flow-control.request.aimd.min-limit",
                format!(
                    "({}) is above max-limit ({})",
                    aimd.min_limit, aimd.max_limit
                ),
                "make min-limit at most max-limit",
            );
        } else if aimd.initial_limit < aimd.min_limit || aimd.initial_limit > aimd.max_limit {
            found.add(
                "flow-control.request.aimd.initial-limit",
                format!(
                    "({}) is outside min-limit..max-limit ({}..{})",
                    aimd.initial_limit, aimd.min_limit, aimd.max_limit
                ),
                "choose an initial limit between min-limit and max-limit",
            );
        }
        if !(aimd.backoff_ratio > 0.0 && aimd.backoff_ratio < 1.0) {
            found.add(
                "flow-control.request.aimd.backoff-ratio",
                format!("is {}", aimd.backoff_ratio),
                "use a factor strictly between 0 and 1, e.g. 0.9",
            );
        }
        at_least_one(
            found,
            "flow-control.request.fixed.limit",
            request.fixed.limit.into(),
        );
        let vegas = &request.vegas;
        at_least_one(
            found,
            "flow-control.request.vegas.initial-limit",
            vegas.initial_limit.into(),
        );
        if vegas.alpha >= vegas.beta {
            found.add(
                "flow-control.request.vegas.alpha",
                format!("({}) is not below beta ({})", vegas.alpha, vegas.beta),
                "make alpha smaller than beta (Zeebe's defaults: 3 and 6)",
            );
        }
        let gradients = [
            (
                "gradient",
                request.gradient.min_limit,
                request.gradient.initial_limit,
                request.gradient.rtt_tolerance,
            ),
            (
                "gradient2",
                request.gradient2.min_limit,
                request.gradient2.initial_limit,
                request.gradient2.rtt_tolerance,
            ),
        ];
        for (name, min_limit, initial_limit, rtt_tolerance) in gradients {
            let path = |field: &str| format!("flow-control.request.{name}.{field}");
            at_least_one(found, &path("min-limit"), min_limit.into());
            if initial_limit < min_limit {
                found.add(
                    path("initial-limit"),
                    format!("({initial_limit}) is below min-limit ({min_limit})"),
                    "make initial-limit at least min-limit",
                );
            }
            if !(rtt_tolerance >= 1.0 && rtt_tolerance.is_finite()) {
                found.add(
                    path("rtt-tolerance"),
                    format!("is {rtt_tolerance}"),
                    "use a factor of at least 1.0, e.g. 2.0",
                );
            }
        }
        at_least_one(
            found,
            "flow-control.request.gradient2.long-window",
            request.gradient2.long_window.into(),
        );
        let write = &self.flow_control.write;
        if write.throttling.enabled && !write.enabled {
            found.add(
                "flow-control.write.throttling.enabled",
                "is true, but flow-control.write.enabled is false",
                "enable flow-control.write too, or turn throttling off",
            );
        }
    }

    fn check_engine(&self, found: &mut Problems) {
        let engine = &self.engine;
        if engine.max_records_per_command < MIN_RECORDS_PER_COMMAND {
            found.add(
                "engine.max-records-per-command",
                format!("is {}", engine.max_records_per_command),
                format!(
                    "set it to at least {MIN_RECORDS_PER_COMMAND}, or leave it at its default \
                     ({})",
                    EngineConfig::DEFAULT_MAX_RECORDS_PER_COMMAND
                ),
            );
        }
        let at_least = self.gateway.max_message_size.bytes().saturating_mul(2);
        if engine.max_bytes_per_command.bytes() < at_least {
            found.add(
                "engine.max-bytes-per-command",
                format!(
                    "is {}, less than twice gateway.max-message-size ({})",
                    engine.max_bytes_per_command, self.gateway.max_message_size
                ),
                format!(
                    "set it to at least {}, so that a command carrying the largest payload \
                     fits",
                    ByteSize(at_least)
                ),
            );
        }
    }

    fn check_gateway_and_monitoring(&self, found: &mut Problems) {
        let gateway = &self.gateway;
        if gateway.enabled && gateway.host.trim().is_empty() {
            found.add("gateway.host", "is empty", "set an interface, e.g. 0.0.0.0");
        }
        at_least_one(
            found,
            "gateway.max-message-size",
            gateway.max_message_size.bytes(),
        );
        at_least_one(
            found,
            "gateway.max-variable-document-size",
            gateway.max_variable_document_size.bytes(),
        );
        positive(found, "gateway.request-timeout", gateway.request_timeout);
        positive(found, "history.retention", self.history.retention);
        positive(
            found,
            "gateway.long-polling-timeout",
            gateway.long_polling_timeout,
        );
        positive(
            found,
            "gateway.max-request-timeout",
            gateway.max_request_timeout,
        );
        for (i, point) in gateway.contact_points.iter().enumerate() {
            if let Err(reason) = check_host_port(point) {
                found.add(
                    format!("gateway.contact-points[{i}]"),
                    format!("`{point}` {reason}"),
                    "write host:port of a broker's command API, e.g. broker-0:26501",
                );
            }
        }
        if self.monitoring.host.trim().is_empty() {
            found.add(
                "monitoring.host",
                "is empty",
                "set an interface, e.g. 0.0.0.0",
            );
        }
    }

    /// TLS that is on names its files; files named while it is off would be ignored,
    /// which is refused as well.
    fn check_tls(&self, found: &mut Problems) {
        let cluster = &self.cluster.tls;
        let sections = [
            (
                "gateway.tls",
                self.gateway.tls.enabled,
                vec![
                    ("certificate", &self.gateway.tls.certificate),
                    ("private-key", &self.gateway.tls.private_key),
                ],
            ),
            (
                "monitoring.tls",
                self.monitoring.tls.enabled,
                vec![
                    ("certificate", &self.monitoring.tls.certificate),
                    ("private-key", &self.monitoring.tls.private_key),
                ],
            ),
            (
                "cluster.tls",
                cluster.enabled,
                vec![
                    ("certificate", &cluster.certificate),
                    ("private-key", &cluster.private_key),
                    ("ca", &cluster.ca),
                ],
            ),
        ];
        if self.gateway.tls.enabled && !self.gateway.enabled {
            found.add(
                "gateway.tls.enabled",
                "is true, but gateway.enabled is false, so no client API is served here",
                "turn gateway.tls off on brokers without a gateway, or gateway.enabled on",
            );
        }
        for (section, enabled, files) in sections {
            for (name, file) in files {
                let path = format!("{section}.{name}");
                match (enabled, file) {
                    (true, None) => found.add(
                        path,
                        format!("is unset, but {section}.enabled is true"),
                        "set it to the PEM file (see docs/security.md)",
                    ),
                    (true, Some(file)) if file.as_os_str().is_empty() => {
                        found.add(path, "is empty", "set it to the PEM file")
                    }
                    (false, Some(_)) => {
                        let fix = format!("set {section}.enabled = true, or unset {path}");
                        found.add(
                            path,
                            format!(
                                "is set, but {section}.enabled is false, so it would be ignored"
                            ),
                            fix,
                        )
                    }
                    _ => {}
                }
            }
        }
    }

    /// Two listeners on the same port and overlapping hosts cannot both bind.
    fn check_ports(&self, found: &mut Problems) {
        let mut listeners = vec![
            (
                "cluster.command-port",
                &self.cluster.host,
                self.cluster.command_port,
            ),
            (
                "cluster.internal-port",
                &self.cluster.host,
                self.cluster.internal_port,
            ),
            (
                "monitoring.port",
                &self.monitoring.host,
                self.monitoring.port,
            ),
        ];
        if self.gateway.enabled {
            listeners.push((
                "gateway.rest-port",
                &self.gateway.host,
                self.gateway.rest_port,
            ));
            listeners.push((
                "gateway.grpc-port",
                &self.gateway.host,
                self.gateway.grpc_port,
            ));
        }
        let mut by_port: BTreeMap<u16, Vec<(&str, &String)>> = BTreeMap::new();
        for (path, host, port) in listeners {
            if port != 0 {
                by_port.entry(port).or_default().push((path, host));
            }
        }
        for (port, users) in by_port {
            for (i, (path, host)) in users.iter().enumerate() {
                let clash = users[..i]
                    .iter()
                    .find(|(_, other_host)| hosts_overlap(host, other_host));
                if let Some((other_path, other_host)) = clash {
                    found.add(
                        *path,
                        format!("is {port}, the same as {other_path}, on {host} and {other_host}"),
                        format!("give {path} a port of its own"),
                    );
                }
            }
        }
    }

    fn check_exporters(&self, found: &mut Problems) {
        if let Some(elastic) = &self.exporters.elasticsearch {
            let prefix = "exporters.elasticsearch";
            if let Err(reason) = check_http_url(&elastic.url) {
                found.add(
                    format!("{prefix}.url"),
                    format!("`{}` {reason}", elastic.url),
                    "write http://host:port or https://host:port, e.g. http://localhost:9200",
                );
            }
            let index = &elastic.index_prefix;
            let bad_char = index.chars().find(|c| {
                c.is_ascii_uppercase() || c.is_whitespace() || "\\/*?\"<>|,#:".contains(*c)
            });
            if index.is_empty() || index.starts_with(['-', '_', '+']) || bad_char.is_some() {
                found.add(
                    format!("{prefix}.index-prefix"),
                    format!("`{index}` is not a valid Elasticsearch index name prefix"),
                    "use lowercase letters, digits, - and _, not starting with -, _ or +",
                );
            }
            at_least_one(
                found,
                &format!("{prefix}.bulk-size"),
                elastic.bulk_size as u64,
            );
            positive(found, &format!("{prefix}.bulk-delay"), elastic.bulk_delay);
            at_least_one(
                found,
                &format!("{prefix}.bulk-memory-limit"),
                elastic.bulk_memory_limit.bytes(),
            );
            match (&elastic.username, &elastic.password) {
                (Some(_), None) => found.add(
                    format!("{prefix}.password"),
                    "is unset, but username is set",
                    "set the password too, or remove the username",
                ),
                (None, Some(_)) => found.add(
                    format!("{prefix}.username"),
                    "is unset, but password is set",
                    "set the username too, or remove the password",
                ),
                _ => {}
            }
            if elastic.api_key.is_some() && elastic.username.is_some() {
                found.add(
                    format!("{prefix}.api-key"),
                    "is set together with username and password",
                    "use either an API key or a username and password",
                );
            }
            if elastic.bearer_token.is_some()
                && (elastic.api_key.is_some() || elastic.username.is_some())
            {
                found.add(
                    format!("{prefix}.bearer-token"),
                    "is set together with another way to authenticate",
                    "use one of: username and password, api-key, bearer-token",
                );
            }
            positive(
                found,
                &format!("{prefix}.request-timeout"),
                elastic.request_timeout,
            );
            positive(
                found,
                &format!("{prefix}.retry-initial-backoff"),
                elastic.retry_initial_backoff,
            );
            if elastic.retry_initial_backoff > elastic.retry_max_backoff {
                found.add(
                    format!("{prefix}.retry-max-backoff"),
                    "is shorter than retry-initial-backoff",
                    "make retry-max-backoff at least retry-initial-backoff",
                );
            }
            if let Some(retention) = elastic.retention {
                positive(found, &format!("{prefix}.retention"), retention);
            }
        }
        if let Some(jsonl) = &self.exporters.jsonl {
            if jsonl.path.as_os_str().is_empty() {
                found.add(
                    "exporters.jsonl.path",
                    "is empty",
                    "set a file path, e.g. ./data/records.jsonl",
                );
            }
            at_least_one(found, "exporters.jsonl.flush-size", jsonl.flush_size as u64);
            positive(found, "exporters.jsonl.flush-delay", jsonl.flush_delay);
        }
    }
}

impl RillConfig {
    fn check_backup(&self, found: &mut Problems) {
        let backup = &self.backup;
        let base_path = backup.filesystem.base_path.as_deref();
        match (backup.store, base_path) {
            (BackupStoreKind::Filesystem, None) => found.add(
                "backup.filesystem.base-path",
                "is not set, but backup.store is filesystem",
                "set it to a directory every broker reaches, e.g. /mnt/backups",
            ),
            (BackupStoreKind::Filesystem, Some(path)) if path.as_os_str().is_empty() => found.add(
                "backup.filesystem.base-path",
                "is empty",
                "set it to a directory every broker reaches, e.g. /mnt/backups",
            ),
            (BackupStoreKind::None | BackupStoreKind::S3, Some(_)) => found.add(
                "backup.filesystem.base-path",
                format!(
                    "is set, but backup.store is {}, so it would be ignored",
                    backup.store.name()
                ),
                "set backup.store = \"filesystem\", or remove the base path",
            ),
            _ => {}
        }
        if let Some(schedule) = &backup.schedule {
            if let Err(e) = crate::CronSchedule::parse(schedule) {
                found.add(
                    "backup.schedule",
                    e,
                    "write a cron schedule, e.g. `0 2 * * *`",
                );
            } else if backup.store == BackupStoreKind::None {
                found.add(
                    "backup.schedule",
                    "is set, but backup.store is none, so no backup could be taken",
                    "set backup.store (and its settings), or remove the schedule",
                );
            }
        }
        let retention = &backup.retention;
        if backup.schedule.is_none() {
            if retention.window.is_some() {
                found.add(
                    "backup.retention.window",
                    "is set, but backup.schedule is not, so it would be ignored",
                    "set backup.schedule (retention runs after each scheduled backup), or \
                     remove it",
                );
            }
            if retention.max_backups > 0 {
                found.add(
                    "backup.retention.max-backups",
                    "is set, but backup.schedule is not, so it would be ignored",
                    "set backup.schedule (retention runs after each scheduled backup), or \
                     remove it",
                );
            }
        }
        let s3 = &backup.s3;
        if backup.store == BackupStoreKind::S3 {
            if s3.bucket.as_deref().is_none_or(|b| b.trim().is_empty()) {
                found.add(
                    "backup.s3.bucket",
                    "is not set, but backup.store is s3",
                    "set it to the bucket backups go to (it must exist)",
                );
            }
            match (&s3.access_key, &s3.secret_key) {
                (Some(_), None) => found.add(
                    "backup.s3.secret-key",
                    "is not set, but backup.s3.access-key is",
                    "set both, or neither to take AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY from the environment",
                ),
                (None, Some(_)) => found.add(
                    "backup.s3.access-key",
                    "is not set, but backup.s3.secret-key is",
                    "set both, or neither to take AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY from the environment",
                ),
                _ => {}
            }
            if let Some(endpoint) = &s3.endpoint {
                let scheme_ok = endpoint.starts_with("http://") || endpoint.starts_with("https://");
                if !scheme_ok || endpoint.contains('?') || endpoint.contains('#') {
                    found.add(
                        "backup.s3.endpoint",
                        format!("`{endpoint}` is not an http:// or https:// URL"),
                        "set it to the S3-compatible server's URL, e.g. http://minio:9000, or \
                         remove it for AWS",
                    );
                }
            }
        } else {
            for path in s3.set_options() {
                found.add(
                    path,
                    format!(
                        "is set, but backup.store is {}, so it would be ignored",
                        backup.store.name()
                    ),
                    "set backup.store = \"s3\", or remove the backup.s3 settings",
                );
            }
        }
    }

    fn check_security(&self, found: &mut Problems) {
        let method = self.security.authentication.method;
        let users = &self.security.initialization.users;
        let oidc = &self.security.authentication.oidc;
        match method {
            AuthenticationMethod::Basic if users.is_empty() => found.add(
                "security.initialization.users",
                "is empty, so with basic authentication nobody could log in",
                "add a [[security.initialization.users]] table with username and password",
            ),
            AuthenticationMethod::None | AuthenticationMethod::Oidc if !users.is_empty() => found
                .add(
                    "security.initialization.users",
                    format!(
                        "lists {} user(s), but only basic authentication uses them and \
                         security.authentication.method is {}",
                        users.len(),
                        method.name()
                    ),
                    "set security.authentication.method = \"basic\", or remove the users",
                ),
            _ => {}
        }
        let mut seen = BTreeMap::new();
        for (i, user) in users.iter().enumerate() {
            let path = format!("security.initialization.users[{i}]");
            if user.username.trim().is_empty() {
                found.add(
                    format!("{path}.username"),
                    "is empty",
                    "give every user a username",
                );
            } else if user.username.contains(':') || user.username.chars().any(char::is_control) {
                found.add(
                    format!("{path}.username"),
                    format!("`{}` contains a colon or a control character, which HTTP Basic credentials cannot carry", user.username),
                    "choose a username without `:` and control characters",
                );
            } else if let Some(first) = seen.insert(user.username.as_str(), i) {
                found.add(
                    format!("{path}.username"),
                    format!(
                        "`{}` is already the username of users[{first}]",
                        user.username
                    ),
                    "give every user a different username",
                );
            }
            if user.password.is_empty() {
                found.add(
                    format!("{path}.password"),
                    "is empty",
                    "set a password (it is kept in memory only as a hash)",
                );
            }
        }
        if method != AuthenticationMethod::Oidc && oidc.issuer_uri.is_some() {
            found.add(
                "security.authentication.oidc.issuer-uri",
                format!(
                    "is set, but security.authentication.method is {}, which does not use it",
                    method.name()
                ),
                "set security.authentication.method = \"oidc\", or remove the issuer",
            );
        }
        if method == AuthenticationMethod::Oidc {
            match oidc.issuer_uri.as_deref() {
                None => found.add(
                    "security.authentication.oidc.issuer-uri",
                    "is not set, but oidc authentication needs the provider's issuer",
                    "set it to the issuer URL, e.g. https://login.example.com/realms/camunda",
                ),
                Some(uri) => {
                    if let Err(reason) = check_issuer_uri(uri) {
                        found.add(
                            "security.authentication.oidc.issuer-uri",
                            format!("`{uri}` {reason}"),
                            "use https://, or http:// only on localhost or a loopback address",
                        );
                    }
                }
            }
            if oidc
                .audiences
                .iter()
                .all(|audience| audience.trim().is_empty())
            {
                found.add(
                    "security.authentication.oidc.audiences",
                    "is empty, so a token issued for any other service would be accepted",
                    "list the audience(s) the provider puts in tokens for Rill",
                );
            }
            if oidc.username_claim.trim().is_empty() {
                found.add(
                    "security.authentication.oidc.username-claim",
                    "is empty",
                    "name the claim that holds the username, e.g. sub",
                );
            }
        }
    }
}

/// An issuer is `https://`, or `http://` on a loopback host (a provider in a test).
fn check_issuer_uri(uri: &str) -> std::result::Result<(), String> {
    check_http_url(uri)?;
    let (scheme, rest) = uri.split_once("://").unwrap_or_default();
    if scheme.eq_ignore_ascii_case("https") {
        return Ok(());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(format!(
            "is http:// on `{host}`, which is not a loopback address: tokens and keys would \
             travel unprotected"
        ))
    }
}

#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) {
        self.0.push(Problem {
            path: path.into(),
            message: message.into(),
            fix: fix.into(),
        });
    }
}

fn positive(found: &mut Problems, path: &str, value: Duration) {
    if value.is_zero() {
        found.add(path, "is 0", "set a duration above zero, e.g. 5s");
    }
}

/// Fewer records than this cannot hold the ordinary work of one command (an instance
/// that runs a few elements straight through).
const MIN_RECORDS_PER_COMMAND: u32 = 1_000;

fn at_least_one(found: &mut Problems, path: &str, value: u64) {
    if value == 0 {
        found.add(path, "is 0", "set it to at least 1");
    }
}

fn show(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// Wildcard addresses listen on every interface, so they overlap any host.
fn hosts_overlap(a: &str, b: &str) -> bool {
    let wildcard = |host: &str| matches!(host.trim(), "0.0.0.0" | "::" | "[::]" | "");
    let a = a.trim().to_ascii_lowercase();
    let b = b.trim().to_ascii_lowercase();
    wildcard(&a) || wildcard(&b) || a == b
}

/// `host:port` with a non-empty host and a port from 1 to 65535 (`[v6]:port` too).
fn check_host_port(text: &str) -> std::result::Result<(), String> {
    let Some((host, port)) = text.trim().rsplit_once(':') else {
        return Err("has no port (expected host:port)".to_owned());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("has no host".to_owned());
    }
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok(()),
        _ => Err(format!(
            "has an invalid port `{port}` (expected 1 to 65535)"
        )),
    }
}

/// `http(s)://host[:port][/path]`.
fn check_http_url(url: &str) -> std::result::Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("is not a URL (expected http:// or https://)".to_owned());
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(format!("has scheme `{scheme}` (expected http or https)"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return Err("has an unclosed [ in its host".to_owned()),
        }
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err("has no valid host".to_owned());
    }
    if let Some(port) = port
        && !matches!(port.parse::<u16>(), Ok(p) if p > 0)
    {
        return Err(format!("has an invalid port `{port}`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert!(check_host_port("broker-1:26502").is_ok());
        assert!(check_host_port("[::1]:26502").is_ok());
        assert!(check_host_port("broker-1").is_err());
        assert!(check_host_port(":26502").is_err());
        assert!(check_host_port("broker:0").is_err());
        assert!(check_host_port("broker:http").is_err());
    }

    #[test]
    fn url_forms() {
        for ok in [
            "http://localhost:9200",
            "https://es.example.com",
            "https://user@es:443/prefix",
            "http://[::1]:9200",
        ] {
            assert!(check_http_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "localhost:9200",
            "ftp://es",
            "http://",
            "http://es:99999",
            "http://[::1",
        ] {
            assert!(check_http_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn wildcards_overlap_everything() {
        assert!(hosts_overlap("0.0.0.0", "127.0.0.1"));
        assert!(hosts_overlap("localhost", "LOCALHOST"));
        assert!(!hosts_overlap("10.0.0.1", "10.0.0.2"));
    }

    #[test]
    fn tls_on_without_its_files_and_files_without_tls_are_refused() {
        let mut config = RillConfig::default();
        config.gateway.tls.enabled = true;
        config.gateway.tls.certificate = Some("/etc/rill/tls.crt".into());
        config.cluster.tls.enabled = true;
        config.monitoring.tls.private_key = Some("/etc/rill/monitoring.key".into());
        let problems: Vec<String> = config.problems().iter().map(|p| p.to_string()).collect();
        let named = |path: &str| problems.iter().any(|p| p.contains(path));
        assert!(named("gateway.tls.private-key"), "{problems:?}");
        assert!(!named("gateway.tls.certificate"), "{problems:?}");
        for path in [
            "cluster.tls.certificate",
            "cluster.tls.private-key",
            "cluster.tls.ca",
        ] {
            assert!(named(path), "{path}: {problems:?}");
        }
        assert!(
            problems
                .iter()
                .any(|p| p.contains("monitoring.tls.private-key") && p.contains("ignored")),
            "{problems:?}"
        );
        assert_eq!(problems.len(), 5, "{problems:?}");

        let mut config = RillConfig::default();
        config.gateway.enabled = false;
        config.gateway.tls.enabled = true;
        config.gateway.tls.certificate = Some("/etc/rill/tls.crt".into());
        config.gateway.tls.private_key = Some("/etc/rill/tls.key".into());
        let problems: Vec<String> = config.problems().iter().map(|p| p.to_string()).collect();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("gateway.tls.enabled: is true, but gateway.enabled is false")
        );
    }
}
