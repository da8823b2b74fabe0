//! Every option, with its type and description: the source of the generated reference
//! (`docs/configuration.md`) and of the typed parsing of environment variables and
//! command-line overrides. A test checks that it lists exactly the options the model has.

use std::sync::LazyLock;

/// How a text value (from the environment or a `key=value` override) is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    U16,
    U32,
    U64,
    Usize,
    Float,
    Text,
    /// Text that may be left unset; an empty value unsets it.
    OptionalText,
    Path,
    Duration,
    /// A duration that may be left unset; an empty value unsets it.
    OptionalDuration,
    Size,
    /// Comma-separated in the environment and in overrides.
    List,
    Choice(&'static [&'static str]),
}

impl Kind {
    /// What a value must look like, for error messages and the reference.
    pub fn expected(self) -> String {
        match self {
            Kind::Bool => "true or false".to_owned(),
            Kind::U16 => format!("an integer from 0 to {}", u16::MAX),
            Kind::U32 => format!("an integer from 0 to {}", u32::MAX),
            Kind::U64 | Kind::Usize => format!("an integer from 0 to {}", i64::MAX),
            Kind::Float => "a number such as 0.9".to_owned(),
            Kind::Text | Kind::Path => "text".to_owned(),
            Kind::OptionalText => "text (empty to unset)".to_owned(),
            Kind::Duration => "a duration such as 250ms, 5s, 10m or 1h".to_owned(),
            Kind::OptionalDuration => "a duration such as 30d or 12h (empty to unset)".to_owned(),
            Kind::Size => "a size such as 4MB, 512KB or 100 (bytes)".to_owned(),
            Kind::List => "a comma-separated list".to_owned(),
            Kind::Choice(choices) => format!("one of {}", choices.join(", ")),
        }
    }

    /// The type column of the reference.
    pub fn type_name(self) -> String {
        match self {
            Kind::Bool => "boolean".to_owned(),
            Kind::U16 | Kind::U32 | Kind::U64 | Kind::Usize => "integer".to_owned(),
            Kind::Float => "number".to_owned(),
            Kind::Text => "string".to_owned(),
            Kind::OptionalText => "string, optional".to_owned(),
            Kind::Path => "path".to_owned(),
            Kind::Duration => "duration".to_owned(),
            Kind::OptionalDuration => "duration, optional".to_owned(),
            Kind::Size => "size".to_owned(),
            Kind::List => "list of strings".to_owned(),
            Kind::Choice(choices) => choices.join(" \\| "),
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) struct OptionSpec {
    /// Dotted kebab-case path, as in the file: `cluster.node-id`.
    pub path: &'static str,
    pub kind: Kind,
    pub description: &'static str,
}

impl OptionSpec {
    /// `cluster.node-id` → `RILL_CLUSTER__NODE_ID`.
    pub fn env_var(&self) -> String {
        env_var_for(self.path)
    }

    pub fn section(&self) -> &'static str {
        self.path
            .rsplit_once('.')
            .map_or("", |(section, _)| section)
    }
}

pub(crate) fn env_var_for(path: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        path.to_ascii_uppercase()
            .replace('.', "__")
            .replace('-', "_")
    )
}

pub(crate) const ENV_PREFIX: &str = "RILL_";

/// The option at `path`; list indexes in it may be any number (see [`schema_path`]).
pub(crate) fn find(path: &str) -> Option<&'static OptionSpec> {
    let (path, _) = schema_path(path);
    OPTIONS.iter().find(|option| option.path == path)
}

/// Options that were removed, with what to do instead: setting one is refused with this
/// advice rather than as an unknown option (and never accepted and ignored).
const REMOVED: &[(&str, &str)] = &[
    (
        "engine.instance-retention",
        "the engine keeps no finished instances for reads any more; the history store \
         answers every read, and `history.retention` says how long it keeps a finished \
         instance",
    ),
    (
        "flow-control.write.throttling.minimum-limit",
        "Rill's throttling does not lower a write rate: it refuses new work while the \
         exporter backlog is above `flow-control.write.throttling.acceptable-backlog`, and \
         admits it again as soon as the backlog is below; use `flow-control.write.limit` for \
         a rate limit",
    ),
    (
        "flow-control.write.throttling.resolution",
        "Rill's throttling compares the exporter backlog with \
         `flow-control.write.throttling.acceptable-backlog` on every command; there is no \
         period to set",
    ),
];

/// Why `path` is refused, if it names a removed option.
pub(crate) fn removed(path: &str) -> Option<String> {
    REMOVED
        .iter()
        .find(|(removed, _)| *removed == path)
        .map(|(path, instead)| format!("`{path}` was removed: {instead}"))
}

/// The option closest to a misspelt `path`, if one is close enough to be a likely typo.
pub(crate) fn suggest(path: &str) -> Option<&'static str> {
    let (best, distance) = OPTIONS
        .iter()
        .map(|option| (option.path, edit_distance(path, option.path)))
        .min_by_key(|(_, distance)| *distance)?;
    (distance <= 3.max(path.len() / 5)).then_some(best)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

pub(crate) const AUTHENTICATION_METHODS: &[&str] = &["none", "basic", "oidc"];

/// Options inside a list of tables have the index `0` in their path here; `1`, `2`, ...
/// name the next entries (`security.initialization.users.1.username`).
pub(crate) const LIST_INDEX: &str = "0";

/// Most entries a list of tables may have through the environment or overrides (an
/// index is not a reason to allocate without bound).
pub(crate) const MAX_LIST_INDEX: usize = 1000;

/// `path` with every numeric segment (a list index) replaced by `0`, as the schema
/// names it, and the indexes found.
pub(crate) fn schema_path(path: &str) -> (String, Vec<usize>) {
    let mut indexes = Vec::new();
    let normalized = path
        .split('.')
        .map(|segment| match segment.parse::<usize>() {
            Ok(index) => {
                indexes.push(index);
                LIST_INDEX
            }
            Err(_) => segment,
        })
        .collect::<Vec<_>>()
        .join(".");
    (normalized, indexes)
}

pub(crate) const BACKUP_STORES: &[&str] = &["none", "filesystem", "s3"];
pub(crate) const LIMIT_ALGORITHMS: &[&str] = &["aimd", "fixed", "vegas", "gradient", "gradient2"];

/// Section descriptions for the reference, in the order sections appear there.
#[rustfmt::skip]
pub(crate) const SECTIONS: &[(&str, &str)] = &[
    ("cluster", "Who this broker is, how many brokers and partitions there are, and its ports."),
    ("cluster.tls", "Mutual TLS on the internal and command ports: every broker and gateway presents a certificate issued by `cluster.tls.ca` and checks that its peer's is. All members of a cluster have it on, or none (docs/security.md)."),
    ("data", "Where a broker keeps its data, when it snapshots, and how full its disk may get (docs/decisions/disk-full.md)."),
    ("threads", "The two thread pools of a broker."),
    ("raft", "Replication of each partition's log."),
    ("flow-control.request", "The per-partition in-flight request limiter on the leader. Defaults are Zeebe's."),
    ("flow-control.request.aimd", "Additive increase, multiplicative decrease (the default algorithm)."),
    ("flow-control.request.fixed", "A fixed in-flight limit."),
    ("flow-control.request.vegas", "Limit adjusted from queueing delay, as in TCP Vegas."),
    ("flow-control.request.gradient", "Limit adjusted from the gradient between short and long round-trip times."),
    ("flow-control.request.gradient2", "Gradient with an averaged long window."),
    ("flow-control.write", "Write-rate limit: commands per second a partition leader admits (Zeebe counts the records written; Rill admits commands, each of which writes its records)."),
    ("flow-control.write.throttling", "Refuses new work while exporters fall behind, and accepts it again as they catch up."),
    ("engine", "Process engine behaviour."),
    ("history", "The history store each partition keeps, so that searches need no other service."),
    ("gateway", "The client-facing gateway (REST and gRPC)."),
    ("gateway.tls", "TLS on the REST and gRPC ports (HTTP/2 and HTTP/1.1 on REST, HTTP/2 on gRPC; TLS 1.3 and 1.2). The files are checked at start and reloaded when they change (docs/security.md)."),
    ("monitoring", "Metrics and health endpoints."),
    ("monitoring.tls", "TLS on the monitoring port (metrics, probes, the cluster management API). The files are checked at start and reloaded when they change."),
    ("backup", "Backups of every partition, taken through the management API (`POST /actuator/backups`) and restored with `rill restore` (docs/operations.md)."),
    ("backup.filesystem", "A backup store in a directory every broker reaches (a mounted volume or an NFS share)."),
    ("backup.retention", "Which backups are deleted after each scheduled backup (docs/operations.md)."),
    ("backup.s3", "S3-compatible object storage (AWS S3, MinIO, Ceph, ...): one bucket shared by every broker. Checked at start: a bucket that is missing or refuses the credentials stops the broker with the setting to fix."),
    ("security.authentication", "How clients prove who they are, on the REST and gRPC APIs and the management API (docs/security.md)."),
    ("security.authentication.oidc", "The OpenID Connect provider whose bearer tokens are accepted when `method = \"oidc\"`."),
    ("security.initialization.users.0", "The users of basic authentication, one `[[security.initialization.users]]` table each. In the environment and in overrides the index comes after `users`: `RILL_SECURITY__INITIALIZATION__USERS__0__USERNAME`, `security.initialization.users.1.password=...`."),
    ("exporters.elasticsearch", "Ships records to Elasticsearch in Zeebe's format. Off unless the section is present (or one of its options is set). Defaults are Zeebe's."),
    ("exporters.elasticsearch.tls", "TLS towards Elasticsearch (for `https://` URLs)."),
    ("exporters.elasticsearch.filter", "Which records are exported, by record type and value type. Defaults are Zeebe's: events only, every value type but job batches (and process instance results, which Zeebe does not export)."),
    ("exporters.jsonl", "Writes records as JSON lines to a file. Off unless the section is present (or its option is set)."),
    ("exporters.jsonl.filter", "Which records are written, by record type and value type. Everything by default (it is a debugging aid)."),
];

/// Every option, in the order of the reference: the settings written out below, and the
/// value-type filters of the two exporters, one per row of the value-type table
/// (`rill_protocol::value_types!`).
pub(crate) static OPTIONS: LazyLock<Vec<OptionSpec>> = LazyLock::new(|| {
    [
        SETTINGS,
        ELASTICSEARCH_VALUE_TYPE_FILTERS,
        JSONL_SETTINGS,
        JSONL_VALUE_TYPE_FILTERS,
    ]
    .concat()
});

macro_rules! value_type_filters {
    ($($(#[$doc:meta])* $variant:ident($record:ident): $zeebe:tt, $kebab:tt, $field:ident;)*) => {
        const ELASTICSEARCH_VALUE_TYPE_FILTERS: &[OptionSpec] = &[$(OptionSpec {
            path: concat!("exporters.elasticsearch.filter.", $kebab),
            kind: Kind::Bool,
            description: concat!("Export ", $zeebe, " records."),
        },)*];
        const JSONL_VALUE_TYPE_FILTERS: &[OptionSpec] = &[$(OptionSpec {
            path: concat!("exporters.jsonl.filter.", $kebab),
            kind: Kind::Bool,
            description: concat!("Export ", $zeebe, " records."),
        },)*];
    };
}

rill_protocol::value_types!(value_type_filters);

/// Every option up to the Elasticsearch exporter's value-type filter, in reference order.
// One line per option reads as a table; rustfmt would spread each over five lines.
#[rustfmt::skip]
const SETTINGS: &[OptionSpec] = &[
    // cluster
    OptionSpec { path: "cluster.node-id", kind: Kind::U32, description: "This broker's id, unique in the cluster. A new cluster's brokers have ids 0 to `cluster.size - 1`; a broker with a higher id (a StatefulSet scaled up) joins the running brokers named in `cluster.initial-contact-points` and serves nothing until a cluster change adds it (`PATCH /actuator/cluster`)." },
    OptionSpec { path: "cluster.size", kind: Kind::U32, description: "Number of brokers in the cluster." },
    OptionSpec { path: "cluster.partitions-count", kind: Kind::U16, description: "Number of partitions, numbered from 1. At most 4095." },
    OptionSpec { path: "cluster.replication-factor", kind: Kind::U16, description: "Replicas of each partition, placed round-robin over the brokers. At most `cluster.size`." },
    OptionSpec { path: "cluster.initial-contact-points", kind: Kind::List, description: "`host:port` of the internal port of every broker of the cluster as created (`cluster.size` entries), node 0 first (entry i is node i); required when cluster.size is above 1 and for a broker joining a running cluster." },
    OptionSpec { path: "cluster.host", kind: Kind::Text, description: "Interface the broker's ports bind to." },
    OptionSpec { path: "cluster.advertised-host", kind: Kind::OptionalText, description: "Host other brokers and gateways use to reach this broker. Unset: `cluster.host`." },
    OptionSpec { path: "cluster.command-port", kind: Kind::U16, description: "Command API port (gateway to broker)." },
    OptionSpec { path: "cluster.internal-port", kind: Kind::U16, description: "Internal port for raft traffic between brokers." },
    OptionSpec { path: "cluster.configuration-discovery-timeout", kind: Kind::Duration, description: "A broker without a stored cluster configuration (a new or wiped data directory) asks the contact points for the running cluster's first; it takes the initial one of its settings only when most contact points have none either (a cluster being created) or after this long without an answer." },
    OptionSpec { path: "cluster.tls.enabled", kind: Kind::Bool, description: "Mutual TLS on the internal and command ports. Needs `cluster.tls.certificate`, `cluster.tls.private-key` and `cluster.tls.ca`; a gateway process (`rill gateway`) needs the same to reach the brokers." },
    OptionSpec { path: "cluster.tls.certificate", kind: Kind::OptionalText, description: "PEM file with this member's certificate (first) and its intermediates, issued by `cluster.tls.ca`. Reloaded when it changes." },
    OptionSpec { path: "cluster.tls.private-key", kind: Kind::OptionalText, description: "PEM file with the private key of `cluster.tls.certificate`. Reloaded when it changes." },
    OptionSpec { path: "cluster.tls.ca", kind: Kind::OptionalText, description: "PEM file with the CA certificate(s) that issue the members' certificates; a peer whose certificate does not lead to it is refused. Use a CA that signs nothing else. Reloaded when it changes." },
    // data
    OptionSpec { path: "data.directory", kind: Kind::Path, description: "Where partitions keep their raft log, state and snapshots." },
    OptionSpec { path: "data.snapshot-period", kind: Kind::Duration, description: "How often a partition takes a snapshot and may purge its log." },
    OptionSpec { path: "data.disk-usage-command-watermark", kind: Kind::Float, description: "Used fraction of the data directory's disk (sampled every second, metric `rill_disk_usage_ratio`) at or above which partition leaders refuse new commands with RESOURCE_EXHAUSTED (gRPC) or 503 (REST), naming the disk and this setting. Commands that finish work or let instances end (job activation, completion and failure, user task completion, cancelation, incident resolution, resource deletion) still pass. Above 0, at most 1." },
    OptionSpec { path: "data.disk-usage-replication-watermark", kind: Kind::Float, description: "Used fraction of the disk at or above which this broker refuses log entries from leaders (they retry), so that a follower never takes what it cannot store. At least `data.disk-usage-command-watermark`, at most 1." },
    OptionSpec { path: "data.state-cache-size", kind: Kind::Size, description: "Block cache of the partitions' state databases, shared by all partitions of the broker: what RocksDB keeps in memory of the state it reads (engine state, history, large variables). The write buffers (memtables) are not part of it." },
    // threads
    OptionSpec { path: "threads.cpu-thread-count", kind: Kind::Usize, description: "Threads of the runtime that runs partition actors (stream processing)." },
    OptionSpec { path: "threads.io-thread-count", kind: Kind::Usize, description: "Threads of the runtime for network, disk work and exporters. Each partition also has one `rill-log-sync` thread that only syncs its raft log's WAL." },
    // raft
    OptionSpec { path: "raft.heartbeat-interval", kind: Kind::Duration, description: "How often a leader sends heartbeats to its followers." },
    OptionSpec { path: "raft.election-timeout", kind: Kind::Duration, description: "A replica that hears from no leader for this long stands for election (plus its priority step). At least twice the heartbeat interval." },
    OptionSpec { path: "raft.priority-election", kind: Kind::Bool, description: "Replicas stand for election in priority order (a step of half a heartbeat interval each), so each broker leads the partitions it is the first replica of; off, they stand after a random delay of up to half an election timeout." },
    OptionSpec { path: "raft.auto-rebalance", kind: Kind::Bool, description: "Every 5 s, a leader that is not its partition's preferred replica (the first in the replica list) hands leadership to it once that replica is up and at most `raft.max-append-entries` entries behind: intake stops while it catches up (at most half an election timeout), then the leader steps down and the preferred replica is elected. On by default so that a broker that restarted leads its own partitions again (after a rolling restart one broker would otherwise lead them all); off, leadership moves only on `POST /actuator/rebalance` or a failure." },
    OptionSpec { path: "raft.max-append-entries", kind: Kind::U64, description: "Most log entries sent in one append request." },
    OptionSpec { path: "raft.max-batch-commands", kind: Kind::Usize, description: "Most commands batched into one log entry." },
    OptionSpec { path: "raft.max-batch-size", kind: Kind::Size, description: "Most bytes batched into one log entry." },
    OptionSpec { path: "raft.log-retention-entries", kind: Kind::U64, description: "Log entries kept after a snapshot before they are purged (lets lagging followers catch up without a snapshot)." },
    // flow-control.request
    OptionSpec { path: "flow-control.request.enabled", kind: Kind::Bool, description: "Limit the commands in flight per partition; excess requests are rejected with RESOURCE_EXHAUSTED." },
    OptionSpec { path: "flow-control.request.use-windowed", kind: Kind::Bool, description: "Count commands that finish work (job completion, timer triggers, acknowledgements) against the limit; they are never rejected." },
    OptionSpec { path: "flow-control.request.algorithm", kind: Kind::Choice(LIMIT_ALGORITHMS), description: "Which limit algorithm to use; its options are in the section of the same name." },
    OptionSpec { path: "flow-control.request.aimd.request-timeout", kind: Kind::Duration, description: "A request slower than this counts as a drop and shrinks the limit." },
    OptionSpec { path: "flow-control.request.aimd.initial-limit", kind: Kind::U32, description: "Limit at start." },
    OptionSpec { path: "flow-control.request.aimd.min-limit", kind: Kind::U32, description: "The limit never falls below this." },
    OptionSpec { path: "flow-control.request.aimd.max-limit", kind: Kind::U32, description: "The limit never grows above this." },
    OptionSpec { path: "flow-control.request.aimd.backoff-ratio", kind: Kind::Float, description: "Factor the limit is multiplied by on a drop (strictly between 0 and 1)." },
    OptionSpec { path: "flow-control.request.fixed.limit", kind: Kind::U32, description: "The in-flight limit." },
    OptionSpec { path: "flow-control.request.vegas.alpha", kind: Kind::U32, description: "Queue size below which the limit grows." },
    OptionSpec { path: "flow-control.request.vegas.beta", kind: Kind::U32, description: "Queue size above which the limit shrinks." },
    OptionSpec { path: "flow-control.request.vegas.initial-limit", kind: Kind::U32, description: "Limit at start." },
    OptionSpec { path: "flow-control.request.gradient.min-limit", kind: Kind::U32, description: "The limit never falls below this." },
    OptionSpec { path: "flow-control.request.gradient.initial-limit", kind: Kind::U32, description: "Limit at start." },
    OptionSpec { path: "flow-control.request.gradient.rtt-tolerance", kind: Kind::Float, description: "How much slower than the best round trip a request may be before the limit shrinks (at least 1)." },
    OptionSpec { path: "flow-control.request.gradient2.min-limit", kind: Kind::U32, description: "The limit never falls below this." },
    OptionSpec { path: "flow-control.request.gradient2.initial-limit", kind: Kind::U32, description: "Limit at start." },
    OptionSpec { path: "flow-control.request.gradient2.rtt-tolerance", kind: Kind::Float, description: "How much slower than the long-term round trip a request may be before the limit shrinks (at least 1)." },
    OptionSpec { path: "flow-control.request.gradient2.long-window", kind: Kind::U32, description: "Samples averaged into the long-term round trip." },
    // flow-control.write
    OptionSpec { path: "flow-control.write.enabled", kind: Kind::Bool, description: "Limit the rate of commands each partition leader admits to `flow-control.write.limit`. Above it, new commands are refused with RESOURCE_EXHAUSTED (gRPC) or 503 (REST); commands that complete work still pass and are not counted." },
    OptionSpec { path: "flow-control.write.limit", kind: Kind::U64, description: "Commands per second a partition leader admits (each becomes one or more log records; 0 = unlimited)." },
    OptionSpec { path: "flow-control.write.ramp-up", kind: Kind::Duration, description: "After a replica becomes leader, its limit grows linearly from 1 per second to `flow-control.write.limit` over this long (0 = the full limit at once)." },
    OptionSpec { path: "flow-control.write.throttling.enabled", kind: Kind::Bool, description: "Refuse new work (RESOURCE_EXHAUSTED; completions still pass) while the exporter backlog is above the acceptable size. Needs `flow-control.write.enabled` (with `flow-control.write.limit = 0` there is no rate limit)." },
    OptionSpec { path: "flow-control.write.throttling.acceptable-backlog", kind: Kind::U64, description: "Records not yet exported that are acceptable." },
    // engine
    OptionSpec { path: "engine.max-records-per-command", kind: Kind::U32, description: "Records one command may write (its own, its follow-ups, and every in-line step it causes). Past it, the element about to be entered stops with a MESSAGE_SIZE_EXCEEDED incident (resolve it to go on); at twice it, the command is rolled back and rejected. Bounds loops that deploy-time validation cannot see. The leader's value travels in each log entry." },
    OptionSpec { path: "engine.max-bytes-per-command", kind: Kind::Size, description: "Encoded bytes of the records one command may write, bounded as engine.max-records-per-command is (at least twice gateway.max-message-size, so that a command carrying a payload of the largest size fits)." },
    // history
    OptionSpec { path: "history.enabled", kind: Kind::Bool, description: "Keep a searchable history of process instances in every partition (fed from the applied records on every replica)." },
    OptionSpec { path: "history.retention", kind: Kind::Duration, description: "How long a finished process instance stays in the history, by the log's timestamps; older ones are removed in the background." },
    // gateway
    OptionSpec { path: "gateway.enabled", kind: Kind::Bool, description: "Run the gateway in this process (standalone, or a broker hosting one)." },
    OptionSpec { path: "gateway.host", kind: Kind::Text, description: "Interface the gateway's ports bind to." },
    OptionSpec { path: "gateway.rest-port", kind: Kind::U16, description: "REST API port." },
    OptionSpec { path: "gateway.grpc-port", kind: Kind::U16, description: "gRPC API port." },
    OptionSpec { path: "gateway.max-message-size", kind: Kind::Size, description: "Largest request accepted: a REST body (larger ones get 413 PAYLOAD_TOO_LARGE) or a gRPC message (INVALID_ARGUMENT). Zeebe's default." },
    OptionSpec { path: "gateway.max-variable-document-size", kind: Kind::Size, description: "Largest variable document a request may carry (instance creation, job completion, failure and error, set variables, messages, signals, user task completion, decision evaluation), as the JSON text the client sent; larger ones get 413 PAYLOAD_TOO_LARGE (REST) or INVALID_ARGUMENT (gRPC). A document larger than `gateway.max-message-size` cannot arrive anyway. A document may also nest objects and arrays at most 100 levels deep." },
    OptionSpec { path: "gateway.request-timeout", kind: Kind::Duration, description: "Default timeout of a request to a broker." },
    OptionSpec { path: "gateway.long-polling-timeout", kind: Kind::Duration, description: "Longest a job activation request waits for jobs." },
    OptionSpec { path: "gateway.max-request-timeout", kind: Kind::Duration, description: "Cap on the requestTimeout a client asks for (job activation, create-and-await); longer requests are cut to it." },
    OptionSpec { path: "gateway.contact-points", kind: Kind::List, description: "`host:port` of brokers' command API, for a standalone gateway." },
    OptionSpec { path: "gateway.tls.enabled", kind: Kind::Bool, description: "Serve the REST and gRPC APIs over TLS only (clients use `https://` and `grpcs://`). Needs `gateway.tls.certificate` and `gateway.tls.private-key`." },
    OptionSpec { path: "gateway.tls.certificate", kind: Kind::OptionalText, description: "PEM file with the gateway's certificate (first) and its intermediates. Reloaded when it changes; open connections keep the one they started with." },
    OptionSpec { path: "gateway.tls.private-key", kind: Kind::OptionalText, description: "PEM file with the private key of `gateway.tls.certificate`. Reloaded when it changes." },
    // monitoring
    OptionSpec { path: "monitoring.host", kind: Kind::Text, description: "Interface the monitoring port binds to." },
    OptionSpec { path: "monitoring.port", kind: Kind::U16, description: "Port of `/metrics` (Prometheus), `/health`, `/ready` and `/startup`." },
    OptionSpec { path: "monitoring.tls.enabled", kind: Kind::Bool, description: "Serve the monitoring port over TLS only (`https://`). Probes and scrapers then need the scheme HTTPS. Needs `monitoring.tls.certificate` and `monitoring.tls.private-key`." },
    OptionSpec { path: "monitoring.tls.certificate", kind: Kind::OptionalText, description: "PEM file with the monitoring port's certificate (first) and its intermediates. Reloaded when it changes." },
    OptionSpec { path: "monitoring.tls.private-key", kind: Kind::OptionalText, description: "PEM file with the private key of `monitoring.tls.certificate`. Reloaded when it changes." },
    // backup
    OptionSpec { path: "backup.store", kind: Kind::Choice(BACKUP_STORES), description: "Where backups go. `none`: backup requests are refused. `filesystem`: under `backup.filesystem.base-path`. `s3`: in the bucket `backup.s3.bucket`." },
    OptionSpec { path: "backup.filesystem.base-path", kind: Kind::OptionalText, description: "The directory backups are written under, the same for every broker of a cluster (a shared volume). Needed with `backup.store = \"filesystem\"`; refused with another store." },
    OptionSpec { path: "backup.schedule", kind: Kind::OptionalText, description: "Backups the cluster takes by itself, as a cron schedule in UTC: 5 fields (minute hour day-of-month month day-of-week, e.g. `0 2 * * *` for 02:00 every day) or 6 with seconds first (Spring's form). Each backup's id is its scheduled time in epoch seconds, so ids grow; the broker leading partition 1 takes it. Needs a backup store. Unset: none." },
    OptionSpec { path: "backup.retention.window", kind: Kind::OptionalDuration, description: "With `backup.schedule`: after each scheduled backup, backups created longer ago than this are deleted (the newest completed one is always kept). Unset: kept." },
    OptionSpec { path: "backup.retention.max-backups", kind: Kind::U32, description: "With `backup.schedule`: after each scheduled backup, only this many completed backups are kept, and older backups of any state are deleted. 0: no limit." },
    OptionSpec { path: "backup.s3.bucket", kind: Kind::OptionalText, description: "The bucket backups go to; it must exist. Needed with `backup.store = \"s3\"`; every `backup.s3.*` option is refused with another store." },
    OptionSpec { path: "backup.s3.base-path", kind: Kind::OptionalText, description: "Key prefix of the backups in the bucket (`<base-path>/<backupId>/partition-<p>/...`); several clusters can share a bucket with prefixes of their own. Unset: the bucket's root." },
    OptionSpec { path: "backup.s3.endpoint", kind: Kind::OptionalText, description: "URL of an S3-compatible server (e.g. `http://minio:9000`), addressed path-style (`<endpoint>/<bucket>/<key>`). Unset: AWS S3 in `backup.s3.region`, virtual-hosted." },
    OptionSpec { path: "backup.s3.region", kind: Kind::OptionalText, description: "The region requests are signed for. Unset: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`." },
    OptionSpec { path: "backup.s3.access-key", kind: Kind::OptionalText, description: "Access key id, set together with `backup.s3.secret-key`. Unset: `AWS_ACCESS_KEY_ID` (and `AWS_SESSION_TOKEN` if set) from the environment." },
    OptionSpec { path: "backup.s3.secret-key", kind: Kind::OptionalText, description: "Secret access key (shown as `***`). Unset: `AWS_SECRET_ACCESS_KEY` from the environment; in Kubernetes, from a Secret (the chart's `backup.s3.existingSecret`)." },
    // security
    OptionSpec { path: "security.authentication.method", kind: Kind::Choice(AUTHENTICATION_METHODS), description: "`none`: anyone who reaches the ports may use them (a broker listening on a non-loopback address warns at start). `basic`: HTTP Basic credentials of `security.initialization.users`. `oidc`: bearer JWTs signed by the provider at `security.authentication.oidc.issuer-uri`, found by OpenID discovery at start (a provider that cannot be reached or read stops the start)." },
    OptionSpec { path: "security.authentication.oidc.issuer-uri", kind: Kind::OptionalText, description: "The provider's issuer URL (the tokens' `iss`); discovery is at `<issuer-uri>/.well-known/openid-configuration`. `https://`, or `http://` on a loopback address only." },
    OptionSpec { path: "security.authentication.oidc.audiences", kind: Kind::List, description: "Audiences accepted: a token's `aud` must name one of them (at least one is required with `oidc`)." },
    OptionSpec { path: "security.authentication.oidc.username-claim", kind: Kind::Text, description: "The claim that names a user; it becomes the caller's username." },
    OptionSpec { path: "security.authentication.oidc.client-id-claim", kind: Kind::OptionalText, description: "The claim that names a client (a machine-to-machine token); used when the token has no username claim." },
    OptionSpec { path: "security.authentication.oidc.groups-claim", kind: Kind::OptionalText, description: "The claim that lists the caller's groups (a list of strings, or one string); the groups are shown by `GET /v2/authentication/me`." },
    OptionSpec { path: "security.authentication.oidc.clock-skew", kind: Kind::Duration, description: "Tolerated difference between the provider's clock and the broker's when checking `exp` and `nbf`." },
    OptionSpec { path: "security.initialization.users.0.username", kind: Kind::Text, description: "The user's login name (unique)." },
    OptionSpec { path: "security.initialization.users.0.password", kind: Kind::Text, description: "The user's password; kept in memory only as an Argon2id hash. Shown as `***` by `rill config show`." },
    OptionSpec { path: "security.initialization.users.0.name", kind: Kind::OptionalText, description: "The user's display name." },
    OptionSpec { path: "security.initialization.users.0.email", kind: Kind::OptionalText, description: "The user's email address." },
    // exporters
    OptionSpec { path: "exporters.elasticsearch.url", kind: Kind::Text, description: "Elasticsearch URL, `http://` or `https://`." },
    OptionSpec { path: "exporters.elasticsearch.index-prefix", kind: Kind::Text, description: "Prefix of the index names (lowercase)." },
    OptionSpec { path: "exporters.elasticsearch.bulk-size", kind: Kind::Usize, description: "Records per bulk request." },
    OptionSpec { path: "exporters.elasticsearch.bulk-delay", kind: Kind::Duration, description: "A bulk request is sent after this long even if not full." },
    OptionSpec { path: "exporters.elasticsearch.bulk-memory-limit", kind: Kind::Size, description: "A bulk request is sent once it holds this many bytes." },
    OptionSpec { path: "exporters.elasticsearch.username", kind: Kind::OptionalText, description: "Basic-auth user (needs `password`)." },
    OptionSpec { path: "exporters.elasticsearch.password", kind: Kind::OptionalText, description: "Basic-auth password. Shown as `***` by `rill config show`." },
    OptionSpec { path: "exporters.elasticsearch.api-key", kind: Kind::OptionalText, description: "API key, instead of user and password. Shown as `***` by `rill config show`." },
    OptionSpec { path: "exporters.elasticsearch.retention", kind: Kind::OptionalDuration, description: "Delete indices older than this through an ILM policy. Unset: keep." },
    OptionSpec { path: "exporters.elasticsearch.request-timeout", kind: Kind::Duration, description: "Timeout of one request to Elasticsearch; a request that takes longer is retried." },
    OptionSpec { path: "exporters.elasticsearch.retry-initial-backoff", kind: Kind::Duration, description: "First wait before a failed request is retried; doubles on each failure." },
    OptionSpec { path: "exporters.elasticsearch.retry-max-backoff", kind: Kind::Duration, description: "Longest wait between retries." },
    OptionSpec { path: "exporters.elasticsearch.bearer-token", kind: Kind::OptionalText, description: "Bearer token (OAuth or service token), instead of user and password or an API key. Shown as `***` by `rill config show`." },
    OptionSpec { path: "exporters.elasticsearch.create-template", kind: Kind::Bool, description: "Put the component and index templates (strict mappings) at start." },
    OptionSpec { path: "exporters.elasticsearch.retention-policy-name", kind: Kind::Text, description: "Name of the ILM policy created when `retention` is set." },
    OptionSpec { path: "exporters.elasticsearch.tls.ca-certificate", kind: Kind::OptionalText, description: "PEM file with the CA certificate(s) to trust instead of the system's roots." },
    OptionSpec { path: "exporters.elasticsearch.tls.verify-certificates", kind: Kind::Bool, description: "Verify Elasticsearch's certificate. Turn off only for testing." },
    OptionSpec { path: "exporters.elasticsearch.filter.command", kind: Kind::Bool, description: "Export commands." },
    OptionSpec { path: "exporters.elasticsearch.filter.event", kind: Kind::Bool, description: "Export events." },
    OptionSpec { path: "exporters.elasticsearch.filter.rejection", kind: Kind::Bool, description: "Export command rejections." },
];

/// The options of the JSON-lines exporter but its value-type filter.
#[rustfmt::skip]
const JSONL_SETTINGS: &[OptionSpec] = &[
    OptionSpec { path: "exporters.jsonl.path", kind: Kind::Path, description: "File the records are appended to." },
    OptionSpec { path: "exporters.jsonl.flush-size", kind: Kind::Usize, description: "Write and fsync once this many records are buffered." },
    OptionSpec { path: "exporters.jsonl.flush-delay", kind: Kind::Duration, description: "Write and fsync once the oldest buffered record has waited this long." },
    OptionSpec { path: "exporters.jsonl.filter.command", kind: Kind::Bool, description: "Export commands." },
    OptionSpec { path: "exporters.jsonl.filter.event", kind: Kind::Bool, description: "Export events." },
    OptionSpec { path: "exporters.jsonl.filter.rejection", kind: Kind::Bool, description: "Export command rejections." },
];

/// Options whose values `to_toml` masks.
pub(crate) const SECRETS: &[&str] = &[
    "exporters.elasticsearch.password",
    "exporters.elasticsearch.api-key",
    "exporters.elasticsearch.bearer-token",
    "security.initialization.users.0.password",
    "backup.s3.secret-key",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_var_names_follow_the_double_underscore_convention() {
        let spec = find("flow-control.request.algorithm").expect("known option");
        assert_eq!(spec.env_var(), "RILL_FLOW_CONTROL__REQUEST__ALGORITHM");
        assert_eq!(spec.section(), "flow-control.request");
    }

    #[test]
    fn typos_get_a_suggestion_and_nonsense_does_not() {
        assert_eq!(suggest("cluster.node-idd"), Some("cluster.node-id"));
        assert_eq!(
            suggest("cluster.partition-count"),
            Some("cluster.partitions-count")
        );
        assert_eq!(suggest("completely.unrelated.thing"), None);
    }

    #[test]
    fn every_section_of_an_option_is_described_once() {
        for option in OPTIONS.iter() {
            let described = SECTIONS
                .iter()
                .filter(|(name, _)| *name == option.section())
                .count();
            assert_eq!(described, 1, "section of {}", option.path);
        }
        for (i, option) in OPTIONS.iter().enumerate() {
            assert!(
                OPTIONS[..i].iter().all(|other| other.path != option.path),
                "{} listed twice",
                option.path
            );
        }
    }
}
