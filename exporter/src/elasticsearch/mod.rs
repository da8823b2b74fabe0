//! The Elasticsearch exporter: records as Zeebe's documents, in Zeebe's indices, through
//! bulk requests.
//!
//! ```text
//! export(records) ─► filter ─► NDJSON action+document per record ─► Pending (in order)
//!                                        │ 1,000 records or 10 MiB (or flush_deadline: 5 s)
//!                                        ▼
//!                  flush: POST /_bulk with the oldest entries ─► per-item results
//!                        201/200 ─► settled        400/409… ─► logged, counted, settled
//!                        429/5xx/timeout/down ─► kept, retried after backoff (in order)
//!                  exported position = one below the oldest entry still kept
//! ```

mod client;
mod index;
mod templates;

use std::time::Duration;

use bytes::Bytes;
use rill_config::ElasticsearchExporterConfig;
use rill_protocol::{BROKER_VERSION, PartitionId, Position, Record};
use tokio::time::Instant;
use tracing::{error, info, warn};

use self::client::{EsClient, ItemVerdict, RequestFailure, SetupOutcome, item_verdict};
use self::index::ActionLines;
pub use self::index::IndexRouter;
pub use self::templates::{component_template, index_template};
use crate::api::{ExportContext, Exporter};
use crate::backoff::Backoff;
use crate::document::write_record_document;
use crate::error::{Error, Result};
use crate::filter::RecordFilter;
use crate::metrics::{BoundMetrics, ExporterMetrics};
use crate::pending::Pending;

const ID: &str = "elasticsearch";

pub struct ElasticsearchExporter {
    config: ElasticsearchExporterConfig,
    filter: RecordFilter,
    router: IndexRouter,
    actions: ActionLines,
    client: EsClient,
    metrics: ExporterMetrics,
    open: Option<OpenState>,
    /// The exported position as of `close`.
    closed_at: Position,
}

struct OpenState {
    partition_id: PartitionId,
    pending: Pending,
    metrics: BoundMetrics,
    /// Most records per bulk request; halved when Elasticsearch answers 413.
    request_limit: usize,
}

impl ElasticsearchExporter {
    /// Checks the configuration (every problem at once) and builds the client. No I/O.
    pub fn new(
        config: ElasticsearchExporterConfig,
        metrics: ExporterMetrics,
    ) -> Result<ElasticsearchExporter> {
        validate(&config)?;
        let client = EsClient::new(&config)?;
        Ok(ElasticsearchExporter {
            filter: RecordFilter::new(config.filter.clone()),
            router: IndexRouter::new(config.index_prefix.clone()),
            actions: ActionLines::default(),
            client,
            metrics,
            config,
            open: None,
            closed_at: Position::ZERO,
        })
    }

    pub fn router(&self) -> &IndexRouter {
        &self.router
    }

    /// Puts the ILM policy, component template and index templates, retrying transient
    /// failures.
    async fn put_templates(&self, metrics: &BoundMetrics) -> Result<()> {
        if let Some(retention) = self.config.retention {
            let policy = templates::retention_policy(retention);
            let name = &self.config.retention_policy_name;
            self.setup("ILM policy", name, metrics, || {
                self.client.put_lifecycle_policy(name, &policy)
            })
            .await?;
        }
        let component = component_template(&self.config);
        let name = self.router.prefix();
        self.setup("component template", name, metrics, || {
            self.client.put_component_template(name, &component)
        })
        .await?;
        for value_type in self.filter.value_types() {
            let template = index_template(&self.router, value_type, BROKER_VERSION);
            let name = self.router.index_prefix_for(value_type, BROKER_VERSION);
            self.setup("index template", &name, metrics, || {
                self.client.put_index_template(&name, &template)
            })
            .await?;
        }
        info!(prefix = name, "Elasticsearch templates are in place");
        Ok(())
    }

    async fn setup<F, Fut>(
        &self,
        what: &str,
        name: &str,
        metrics: &BoundMetrics,
        mut request: F,
    ) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = SetupOutcome>,
    {
        let mut backoff = self.backoff();
        loop {
            match request().await {
                SetupOutcome::Done => return Ok(()),
                SetupOutcome::Refused { status, body } => {
                    return Err(Error::Refused {
                        what: format!("{what} {name}"),
                        status,
                        body,
                    });
                }
                SetupOutcome::Retry(failure) => {
                    metrics.failed_request(failure.reason);
                    let delay = backoff.next_delay();
                    warn!(
                        what,
                        name,
                        error = failure.message,
                        ?delay,
                        "Elasticsearch setup failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    fn backoff(&self) -> Backoff {
        backoff(&self.config)
    }
}

fn backoff(config: &ElasticsearchExporterConfig) -> Backoff {
    Backoff::new(config.retry_initial_backoff, config.retry_max_backoff)
}

fn needs_flush(config: &ElasticsearchExporterConfig, pending: &Pending) -> bool {
    pending.len() >= config.bulk_size || pending.bytes() as u64 >= config.bulk_memory_limit.bytes()
}

/// Appends the two NDJSON lines of one record: the `index` action and the document.
fn write_bulk_lines(
    actions: &mut ActionLines,
    router: &IndexRouter,
    record: &Record,
    out: &mut Vec<u8>,
) {
    actions.write(router, record, out);
    write_record_document(record, out);
    out.push(b'\n');
}

/// Ships every pending entry, retrying until each is indexed or refused for good.
///
/// Cancellation safety: `state` changes only between awaits, after a complete answer was
/// read, so dropping this future leaves every unsettled entry pending.
async fn flush(client: &EsClient, config: &ElasticsearchExporterConfig, state: &mut OpenState) {
    let mut backoff = backoff(config);
    if state.pending.is_empty() {
        return;
    }
    let started = Instant::now();
    while !state.pending.is_empty() {
        let count = state.request_limit.min(state.pending.len());
        let body = Bytes::copy_from_slice(state.pending.front_bytes(count));
        state.metrics.bulk_size.observe(count as f64);
        state.metrics.bulk_bytes.observe(body.len() as f64);

        let retry = match client.bulk(body).await {
            Ok(response) => match settle(state, count, response) {
                Ok(0) => None,
                Ok(failed) => Some(RequestFailure {
                    reason: "items",
                    message: format!("{failed} of {count} bulk items failed and are retried"),
                    too_large: false,
                }),
                Err(failure) => Some(failure),
            },
            Err(failure) if failure.too_large && count > 1 => {
                shrink_requests(state, count);
                continue;
            }
            Err(failure) if failure.too_large && drop_oversized(state, config) => continue,
            Err(failure) => Some(failure),
        };
        state.metrics.positions(
            state.pending.accepted().get(),
            state.pending.exported_position().get(),
        );
        match retry {
            None => backoff.reset(),
            Some(failure) => {
                state.metrics.failed_request(failure.reason);
                state.metrics.retried(state.pending.len().min(count));
                let delay = backoff.next_delay();
                warn!(
                    partition = state.partition_id.get(),
                    reason = failure.reason,
                    error = failure.message,
                    pending = state.pending.len(),
                    ?delay,
                    "bulk request to Elasticsearch failed; retrying"
                );
                tokio::time::sleep(delay).await;
            }
        }
    }
    state
        .metrics
        .flush_duration
        .observe(started.elapsed().as_secs_f64());
}

/// Applies the per-item results of a bulk request that carried the first `count` pending
/// entries. Returns how many items are to be retried.
fn settle(
    state: &mut OpenState,
    count: usize,
    response: client::BulkResponse,
) -> Result<usize, RequestFailure> {
    let mismatch = |message: String| RequestFailure {
        reason: "bad-response",
        message,
        too_large: false,
    };
    if response.items.len() != count {
        return Err(mismatch(format!(
            "bulk response has {} items for {count} actions",
            response.items.len()
        )));
    }
    let partition = state.partition_id.get();
    let mut settled = Vec::with_capacity(count);
    let mut retried = 0;
    for (position, item) in state.pending.front_positions(count).zip(&response.items) {
        let Some(result) = &item.index else {
            return Err(mismatch(
                "bulk response item without an index result".into(),
            ));
        };
        let expected = client::DocumentId::Record {
            partition,
            position: position.get(),
        };
        if let Some(id) = result.id.as_ref().filter(|id| **id != expected) {
            return Err(mismatch(format!(
                "bulk response item for {id} where {expected} was expected"
            )));
        }
        match item_verdict(result.status) {
            ItemVerdict::Indexed => settled.push(true),
            ItemVerdict::Retry => {
                retried += 1;
                settled.push(false);
            }
            ItemVerdict::Refused => {
                let (kind, reason) = result
                    .error
                    .as_ref()
                    .map_or(("unknown".to_owned(), String::new()), |e| {
                        (e.kind().to_owned(), e.reason())
                    });
                error!(
                    partition,
                    position = position.get(),
                    status = result.status,
                    error_type = kind,
                    reason,
                    "Elasticsearch refused a record for good; it is skipped"
                );
                state.metrics.dropped(&kind);
                settled.push(true);
            }
        }
    }
    state.pending.settle_front(&settled);
    Ok(retried)
}

/// HTTP 413: send fewer records per request.
fn shrink_requests(state: &mut OpenState, count: usize) {
    state.request_limit = (count / 2).max(1);
    warn!(
        partition = state.partition_id.get(),
        limit = state.request_limit,
        "Elasticsearch says the bulk request is too large; sending fewer records per request"
    );
}

/// HTTP 413 for a request with one record: skip the record if it alone exceeds the
/// configured bulk memory limit (it cannot ever be shipped). A smaller record is kept
/// and retried: the limit is then somewhere else (a proxy, a cluster setting) and an
/// operator can raise it, so dropping records one by one would lose them for nothing.
fn drop_oversized(state: &mut OpenState, config: &ElasticsearchExporterConfig) -> bool {
    let Some((position, bytes)) = state.pending.first() else {
        return false;
    };
    if (bytes as u64) < config.bulk_memory_limit.bytes() {
        return false;
    }
    error!(
        partition = state.partition_id.get(),
        position = position.get(),
        bytes,
        "a single record is larger than Elasticsearch accepts; it is skipped"
    );
    state.metrics.dropped("request_too_large");
    state.pending.settle_front(&[true]);
    true
}

impl Exporter for ElasticsearchExporter {
    fn id(&self) -> &'static str {
        ID
    }

    async fn open(&mut self, context: ExportContext) -> Result<()> {
        let metrics = self.metrics.for_exporter(ID, context.partition_id.get());
        if self.config.create_template {
            self.put_templates(&metrics).await?;
        }
        let position = context.last_exported_position.get();
        metrics.positions(position, position);
        self.open = Some(OpenState {
            partition_id: context.partition_id,
            pending: Pending::new(context.last_exported_position),
            metrics,
            request_limit: usize::MAX,
        });
        Ok(())
    }

    async fn export(&mut self, records: &[Record]) -> Result<()> {
        let state = self.open.as_mut().ok_or(Error::NotOpen { exporter: ID })?;
        for record in records {
            if !state.pending.accept(record.position) || !self.filter.accepts(record) {
                continue;
            }
            let (actions, router) = (&mut self.actions, &self.router);
            state.pending.push(record.position, |out| {
                write_bulk_lines(actions, router, record, out)
            });
            if needs_flush(&self.config, &state.pending) {
                flush(&self.client, &self.config, state).await;
            }
        }
        state.metrics.positions(
            state.pending.accepted().get(),
            state.pending.exported_position().get(),
        );
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        let state = self.open.as_mut().ok_or(Error::NotOpen { exporter: ID })?;
        flush(&self.client, &self.config, state).await;
        Ok(())
    }

    fn flush_deadline(&self) -> Option<Instant> {
        self.open
            .as_ref()
            .and_then(|state| state.pending.deadline(self.config.bulk_delay))
    }

    fn exported_position(&self) -> Position {
        self.open
            .as_ref()
            .map_or(self.closed_at, |state| state.pending.exported_position())
    }

    async fn close(&mut self) -> Result<()> {
        if let Some(mut state) = self.open.take() {
            let attempt = flush(&self.client, &self.config, &mut state);
            if tokio::time::timeout(self.config.request_timeout, attempt)
                .await
                .is_err()
            {
                warn!(
                    partition = state.partition_id.get(),
                    unshipped = state.pending.len(),
                    "Elasticsearch exporter closed with records not shipped; the next leader sends them"
                );
            }
            // The director replicates this last position after closing.
            self.closed_at = state.pending.exported_position();
        }
        Ok(())
    }
}

/// Every problem with the configuration, at once.
fn validate(config: &ElasticsearchExporterConfig) -> Result<()> {
    let mut problems = Vec::new();
    if let Err(problem) = client::parse_urls(&config.url) {
        problems.push(problem);
    }
    let prefix = &config.index_prefix;
    if prefix.is_empty()
        || prefix != &prefix.to_lowercase()
        || prefix.starts_with(['-', '_', '+'])
        || prefix.contains(['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':'])
    {
        problems.push(format!(
            "index-prefix: '{prefix}' is not a valid index name prefix (lowercase, no \\ / * ? \" < > | space , # :, not starting with - _ +)"
        ));
    }
    if config.bulk_size == 0 {
        problems.push("bulk-size: must be at least 1".to_owned());
    }
    if config.bulk_memory_limit.bytes() == 0 {
        problems.push("bulk-memory-limit: must be more than 0".to_owned());
    }
    if config.bulk_delay.is_zero() {
        problems.push("bulk-delay: must be more than 0".to_owned());
    }
    if config.request_timeout.is_zero() {
        problems.push("request-timeout: must be more than 0".to_owned());
    }
    if config.retry_initial_backoff.is_zero()
        || config.retry_initial_backoff > config.retry_max_backoff
    {
        problems.push(
            "retry-initial-backoff: must be more than 0 and at most retry-max-backoff".to_owned(),
        );
    }
    if config.retention.is_some_and(|r| r < Duration::from_secs(1)) {
        problems.push("retention: must be at least 1s".to_owned());
    }
    if config.retention.is_some() && config.retention_policy_name.trim().is_empty() {
        problems.push("retention-policy-name: must not be empty".to_owned());
    }
    match (&config.username, &config.password) {
        (Some(_), None) => problems.push("password: missing (username is set)".to_owned()),
        (None, Some(_)) => problems.push("username: missing (password is set)".to_owned()),
        _ => {}
    }
    let methods = [
        config.username.is_some(),
        config.api_key.is_some(),
        config.bearer_token.is_some(),
    ];
    if methods.iter().filter(|set| **set).count() > 1 {
        problems.push(
            "username/password, api-key, bearer-token: set at most one way to authenticate"
                .to_owned(),
        );
    }
    // These go into an HTTP header verbatim.
    for (field, secret) in [
        ("api-key", &config.api_key),
        ("bearer-token", &config.bearer_token),
    ] {
        if let Some(secret) = secret
            && (secret.is_empty() || !secret.bytes().all(|b| (0x21..0x7f).contains(&b)))
        {
            problems.push(format!(
                "{field}: must be non-empty printable ASCII without spaces"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Config {
            exporter: ID,
            problems,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_lists_every_problem() {
        let config = ElasticsearchExporterConfig {
            url: "ftp://x".into(),
            index_prefix: "Bad Prefix".into(),
            bulk_size: 0,
            username: Some("elastic".into()),
            api_key: Some("key with spaces".into()),
            ..Default::default()
        };
        let Err(Error::Config { problems, .. }) = validate(&config) else {
            panic!("expected a configuration error");
        };
        let text = problems.join("\n");
        for field in [
            "url:",
            "index-prefix:",
            "bulk-size:",
            "password:",
            "at most one way",
            "api-key:",
        ] {
            assert!(text.contains(field), "{field} missing in {text}");
        }
        assert!(validate(&ElasticsearchExporterConfig::default()).is_ok());
    }
}
