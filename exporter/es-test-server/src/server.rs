//! The HTTP side: routes, fault switches, start/stop on a fixed port.

// Helpers return the finished error response as their `Err`; it is sent as it is.
#![allow(clippy::result_large_err)]

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::serve::ListenerExt;
use parking_lot::Mutex;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::mapping::{DocumentError, FieldName};
use crate::query;
use crate::store::{Indexed, Store};

/// The metadata of a bulk action line (`{"index": {"_index": …, "_id": …}}`), borrowed
/// from the line where it has no escapes.
#[derive(Deserialize)]
struct ActionMeta<'a> {
    #[serde(rename = "_index", borrow)]
    index: Option<Cow<'a, str>>,
    #[serde(rename = "_id", borrow)]
    id: Option<Cow<'a, str>>,
}

/// A bulk action line: its first action and whether it named more than one. (Read as
/// a map of owned names it was several allocations per document.)
struct ActionLine<'a> {
    /// `None`: the line named no action.
    first: Option<(Cow<'a, str>, ActionMeta<'a>)>,
    more: bool,
}

impl<'de> Deserialize<'de> for ActionLine<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Line;
        impl<'de> serde::de::Visitor<'de> for Line {
            type Value = ActionLine<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object naming one action")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let Some(FieldName(op)) = map.next_key::<FieldName<'de>>()? else {
                    return Ok(ActionLine {
                        first: None,
                        more: false,
                    });
                };
                let meta = map.next_value::<ActionMeta<'de>>()?;
                let mut more = false;
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {
                    more = true;
                }
                Ok(ActionLine {
                    first: Some((op, meta)),
                    more,
                })
            }
        }
        deserializer.deserialize_map(Line)
    }
}

/// One action of a bulk request, as a fault hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct ItemRequest<'a> {
    pub index: &'a str,
    pub id: &'a str,
    /// The document's JSON text.
    pub source: &'a str,
}

/// The error a fault hook makes an item fail with.
#[derive(Debug, Clone)]
pub struct ItemError {
    pub status: u16,
    pub error_type: String,
    pub reason: String,
}

impl ItemError {
    pub fn too_many_requests() -> ItemError {
        ItemError {
            status: 429,
            error_type: "es_rejected_execution_exception".into(),
            reason: "rejected execution: queue capacity reached".into(),
        }
    }

    pub fn unavailable() -> ItemError {
        ItemError {
            status: 503,
            error_type: "unavailable_shards_exception".into(),
            reason: "primary shard is not active".into(),
        }
    }

    pub fn mapping_conflict(reason: impl Into<String>) -> ItemError {
        ItemError {
            status: 400,
            error_type: "document_parsing_exception".into(),
            reason: reason.into(),
        }
    }
}

/// Decides per bulk item whether it fails (`Some`) or is indexed normally (`None`).
pub type ItemFault = Arc<dyn Fn(&ItemRequest<'_>) -> Option<ItemError> + Send + Sync>;

/// Counters for assertions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests answered by a route (not failed by a switch).
    pub requests: u64,
    /// Requests failed by `fail_requests` / `fail_next_requests`.
    pub failed_requests: u64,
    pub bulk_requests: u64,
    /// Bulk items indexed (a document indexed twice counts twice).
    pub indexed_items: u64,
    /// Bulk items answered with an error (fault hook or mapping).
    pub failed_items: u64,
}

#[derive(Default)]
struct Switches {
    fail_status: Option<u16>,
    fail_next: u64,
    fail_next_status: u16,
    delay: Duration,
    item_fault: Option<ItemFault>,
    required_authorization: Option<String>,
    last_authorization: Option<String>,
    max_content_length: Option<usize>,
}

#[derive(Default)]
struct Shared {
    store: Mutex<Store>,
    switches: Mutex<Switches>,
    requests: AtomicU64,
    failed_requests: AtomicU64,
    bulk_requests: AtomicU64,
    indexed_items: AtomicU64,
    failed_items: AtomicU64,
}

struct Running {
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// The CA that signed the TLS test server's certificate (for `localhost` and 127.0.0.1).
pub const CA_CERTIFICATE_PEM: &[u8] = include_bytes!("../tls/ca.pem");
const SERVER_CERTIFICATE_PEM: &[u8] = include_bytes!("../tls/server.pem");
const SERVER_KEY_PEM: &[u8] = include_bytes!("../tls/server.key");

/// A running test server on `127.0.0.1`. Dropping it stops it.
pub struct TestServer {
    addr: SocketAddr,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    running: Mutex<Option<Running>>,
}

/// Accepts TCP connections and completes a TLS handshake before handing them to axum.
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (tcp, addr) = match self.tcp.accept().await {
                Ok(accepted) => accepted,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            // A client that refuses the certificate ends the handshake; wait for the next.
            let handshake = self.acceptor.accept(tcp);
            if let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(5), handshake).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

fn tls_acceptor() -> std::io::Result<TlsAcceptor> {
    let invalid =
        |e: &dyn std::fmt::Display| std::io::Error::other(format!("test TLS material: {e}"));
    let certificates = CertificateDer::pem_slice_iter(SERVER_CERTIFICATE_PEM)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(&e))?;
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY_PEM).map_err(|e| invalid(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(&e))?
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(|e| invalid(&e))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

impl TestServer {
    /// Starts on a free port of 127.0.0.1.
    pub async fn start() -> std::io::Result<TestServer> {
        TestServer::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts on `addr` (port 0 picks a free one).
    pub async fn start_on(addr: SocketAddr) -> std::io::Result<TestServer> {
        TestServer::bind(addr, None).await
    }

    /// Starts with HTTPS on a free port of 127.0.0.1, with a certificate signed by
    /// [`CA_CERTIFICATE_PEM`].
    pub async fn start_tls() -> std::io::Result<TestServer> {
        let acceptor = tls_acceptor()?;
        TestServer::bind(SocketAddr::from(([127, 0, 0, 1], 0)), Some(acceptor)).await
    }

    async fn bind(addr: SocketAddr, tls: Option<TlsAcceptor>) -> std::io::Result<TestServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let server = TestServer {
            addr,
            tls,
            shared: Arc::new(Shared::default()),
            running: Mutex::new(None),
        };
        server.serve(listener);
        Ok(server)
    }

    fn serve(&self, listener: TcpListener) {
        let app = router(self.shared.clone());
        let (shutdown, signal) = oneshot::channel::<()>();
        let shutdown_signal = async move {
            let _ = signal.await;
        };
        let task = match self.tls.clone() {
            Some(acceptor) => tokio::spawn(async move {
                let listener = TlsListener {
                    tcp: listener,
                    acceptor,
                };
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(shutdown_signal)
                    .await;
                if let Err(error) = served {
                    tracing::warn!(%error, "test server stopped with an error");
                }
            }),
            None => tokio::spawn(async move {
                // No Nagle delay: small answers would otherwise wait for delayed ACKs.
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(shutdown_signal)
                    .await;
                if let Err(error) = served {
                    tracing::warn!(%error, "test server stopped with an error");
                }
            }),
        };
        *self.running.lock() = Some(Running { shutdown, task });
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening and closes idle connections: the cluster is down (connection
    /// refused) until [`TestServer::restart`].
    pub async fn stop(&self) {
        let running = self.running.lock().take();
        if let Some(running) = running {
            let _ = running.shutdown.send(());
            let _ = running.task.await;
        }
    }

    /// Listens again on the same port, with the same data.
    pub async fn restart(&self) -> std::io::Result<()> {
        self.stop().await;
        let listener = TcpListener::bind(self.addr).await?;
        self.serve(listener);
        Ok(())
    }

    /// Answers every request with `status` (e.g. 503, 429) until set to `None`.
    pub fn fail_requests(&self, status: Option<u16>) {
        self.shared.switches.lock().fail_status = status;
    }

    /// Answers the next `count` requests with `status`.
    pub fn fail_next_requests(&self, count: u64, status: u16) {
        let mut switches = self.shared.switches.lock();
        switches.fail_next = count;
        switches.fail_next_status = status;
    }

    /// Answers every request this much later (after doing its work).
    pub fn set_delay(&self, delay: Duration) {
        self.shared.switches.lock().delay = delay;
    }

    /// Makes single bulk items fail, as decided by `fault`.
    pub fn set_item_fault(&self, fault: Option<ItemFault>) {
        self.shared.switches.lock().item_fault = fault;
    }

    /// Answers 413 to bulk requests with a larger body (Elasticsearch's
    /// `http.max_content_length`).
    pub fn set_max_content_length(&self, bytes: Option<usize>) {
        self.shared.switches.lock().max_content_length = bytes;
    }

    /// Refuses (401) requests whose `Authorization` header is not exactly `expected`.
    pub fn require_authorization(&self, expected: Option<String>) {
        self.shared.switches.lock().required_authorization = expected;
    }

    /// The `Authorization` header of the latest request.
    pub fn last_authorization(&self) -> Option<String> {
        self.shared.switches.lock().last_authorization.clone()
    }

    pub fn stats(&self) -> Stats {
        let load = |counter: &AtomicU64| counter.load(AtomicOrdering::Relaxed);
        Stats {
            requests: load(&self.shared.requests),
            failed_requests: load(&self.shared.failed_requests),
            bulk_requests: load(&self.shared.bulk_requests),
            indexed_items: load(&self.shared.indexed_items),
            failed_items: load(&self.shared.failed_items),
        }
    }

    pub fn index_template(&self, name: &str) -> Option<Value> {
        self.shared.store.lock().index_templates.get(name).cloned()
    }

    pub fn component_template(&self, name: &str) -> Option<Value> {
        self.shared
            .store
            .lock()
            .component_templates
            .get(name)
            .cloned()
    }

    pub fn index_template_names(&self) -> Vec<String> {
        self.shared
            .store
            .lock()
            .index_templates
            .keys()
            .cloned()
            .collect()
    }

    pub fn ilm_policy(&self, name: &str) -> Option<Value> {
        self.shared.store.lock().ilm_policies.get(name).cloned()
    }

    /// Index names with their aliases.
    pub fn indices(&self) -> BTreeMap<String, Vec<String>> {
        self.shared
            .store
            .lock()
            .indices
            .iter()
            .map(|(name, index)| (name.clone(), index.aliases.iter().cloned().collect()))
            .collect()
    }

    /// The settings an index was created with (from its templates).
    pub fn index_settings(&self, index: &str) -> Option<Value> {
        self.shared
            .store
            .lock()
            .indices
            .get(index)
            .map(|i| i.settings.clone())
    }

    /// `(index, id, version)` of every document in the indices `target` covers.
    pub fn document_versions(&self, target: &str) -> Vec<(String, String, u64)> {
        let store = self.shared.store.lock();
        let mut out = Vec::new();
        for name in store.resolve(target) {
            if let Some(index) = store.indices.get(&name) {
                for (id, doc) in index.documents() {
                    out.push((name.clone(), id.to_owned(), doc.version));
                }
            }
        }
        out.sort();
        out
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(running) = self.running.lock().take() {
            let _ = running.shutdown.send(());
            running.task.abort();
        }
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/_bulk", post(bulk).put(bulk))
        .route(
            "/_index_template/{name}",
            put(put_index_template)
                .post(put_index_template)
                .get(get_index_template),
        )
        .route(
            "/_component_template/{name}",
            put(put_component_template)
                .post(put_component_template)
                .get(get_component_template),
        )
        .route("/_ilm/policy/{name}", put(put_policy).get(get_policy))
        .route("/_search", get(search_all).post(search_all))
        .route("/_count", get(count_all).post(count_all))
        .route("/{target}/_search", get(search).post(search))
        .route("/{target}/_count", get(count).post(count))
        .route("/_cat/indices", get(cat_indices))
        .route("/_alias", get(aliases_all))
        .route("/{target}/_alias", get(aliases))
        .layer(middleware::from_fn_with_state(shared.clone(), switches))
        // Elasticsearch's default http.max_content_length.
        .layer(DefaultBodyLimit::max(100 * 1024 * 1024))
        .with_state(shared)
}

fn error(status: StatusCode, kind: &str, reason: impl Into<String>) -> Response {
    let reason = reason.into();
    (
        status,
        axum::Json(json!({
            "error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason},
            "status": status.as_u16()
        })),
    )
        .into_response()
}

/// Delay, authorization and the failure switches, before any route.
async fn switches(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (delay, failure, required) = {
        let mut switches = shared.switches.lock();
        switches.last_authorization = authorization.clone();
        let failure = if switches.fail_next > 0 {
            switches.fail_next -= 1;
            Some(switches.fail_next_status)
        } else {
            switches.fail_status
        };
        (
            switches.delay,
            failure,
            switches.required_authorization.clone(),
        )
    };
    if let Some(status) = failure {
        shared.failed_requests.fetch_add(1, AtomicOrdering::Relaxed);
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        let kind = if status == StatusCode::TOO_MANY_REQUESTS {
            "es_rejected_execution_exception"
        } else {
            "cluster_block_exception"
        };
        return error(status, kind, "failure switched on in the test server");
    }
    if let Some(expected) = required
        && authorization.as_deref() != Some(expected.as_str())
    {
        return error(
            StatusCode::UNAUTHORIZED,
            "security_exception",
            "missing or wrong authentication credentials",
        );
    }
    shared.requests.fetch_add(1, AtomicOrdering::Relaxed);
    let response = next.run(request).await;
    // Slow like an overloaded cluster: the work is done, the answer comes late (a client
    // that gives up meanwhile sends again what was already indexed).
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    response
}

async fn root() -> Response {
    axum::Json(json!({
        "name": "rill-es-test-server",
        "cluster_name": "rill-test",
        "version": {"number": "8.19.0", "build_flavor": "default"},
        "tagline": "You Know, for Search"
    }))
    .into_response()
}

fn parse_json(body: &Bytes) -> Result<Value, Response> {
    if body.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            "x_content_parse_exception",
            format!("request body is not JSON: {e}"),
        )
    })
}

/// The parts of a response `filter_path` keeps, as Elasticsearch reads it for `_bulk`:
/// top-level fields by name, item fields as `items.*.<field>`. No `filter_path`: all.
struct BulkFilter {
    top: Vec<String>,
    item: Vec<String>,
}

impl BulkFilter {
    fn parse(filter_path: Option<&String>) -> Option<BulkFilter> {
        let filter_path = filter_path?;
        let mut filter = BulkFilter {
            top: Vec::new(),
            item: Vec::new(),
        };
        for path in filter_path.split(',').map(str::trim) {
            match path.strip_prefix("items.*.") {
                Some(field) => filter.item.push(field.to_owned()),
                None => filter.top.push(path.to_owned()),
            }
        }
        Some(filter)
    }

    fn keeps_items(&self) -> bool {
        !self.item.is_empty() || self.top.iter().any(|t| t == "items")
    }

    /// Leaves out the item fields the filter does not name.
    fn item<'a>(&self, entry: BulkItem<'a>) -> BulkItem<'a> {
        if self.top.iter().any(|t| t == "items") || self.item.iter().any(|f| f == "*") {
            return entry;
        }
        let keeps = |field: &str| self.item.iter().any(|f| f == field);
        BulkItem {
            index: entry.index.filter(|_| keeps("_index")),
            id: entry.id.filter(|_| keeps("_id")),
            version: entry.version.filter(|_| keeps("_version")),
            result: entry.result.filter(|_| keeps("result")),
            status: entry.status.filter(|_| keeps("status")),
            error: entry.error.filter(|_| keeps("error")),
        }
    }
}

async fn bulk(
    State(shared): State<Arc<Shared>>,
    Query(params): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let filter = BulkFilter::parse(params.get("filter_path"));
    shared.bulk_requests.fetch_add(1, AtomicOrdering::Relaxed);
    let limit = shared.switches.lock().max_content_length;
    if limit.is_some_and(|limit| body.len() > limit) {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "content_too_long_exception",
            format!("request body of {} bytes is too large", body.len()),
        );
    }
    let text = match std::str::from_utf8(&body) {
        Ok(text) => text,
        Err(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "illegal_argument_exception",
                "body is not UTF-8",
            );
        }
    };
    if !text.is_empty() && !text.ends_with('\n') {
        return error(
            StatusCode::BAD_REQUEST,
            "illegal_argument_exception",
            "The bulk request must be terminated by a newline [\\n]",
        );
    }
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let mut actions = Vec::new();
    while let Some(action_line) = lines.next() {
        let action: ActionLine<'_> = match serde_json::from_str(action_line) {
            Ok(v) => v,
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "x_content_parse_exception",
                    format!("bad action line: {e}"),
                );
            }
        };
        let ActionLine {
            first: Some((op, meta)),
            more: false,
        } = action
        else {
            return error(
                StatusCode::BAD_REQUEST,
                "illegal_argument_exception",
                "an action line names exactly one action",
            );
        };
        if op != "index" && op != "create" {
            return error(
                StatusCode::BAD_REQUEST,
                "illegal_argument_exception",
                format!("action [{op}] is not supported by the test server"),
            );
        }
        let (Some(index), Some(id)) = (meta.index, meta.id) else {
            return error(
                StatusCode::BAD_REQUEST,
                "action_request_validation_exception",
                "index and id are required",
            );
        };
        let Some(source_line) = lines.next() else {
            return error(
                StatusCode::BAD_REQUEST,
                "illegal_argument_exception",
                "action without a document",
            );
        };
        actions.push((op, index, id, source_line));
    }

    let fault = shared.switches.lock().item_fault.clone();
    let mut items = Vec::with_capacity(actions.len());
    let mut errors = false;
    let mut store = shared.store.lock();
    // Whether a target is an alias, once per target and bulk (it looks at every index).
    let mut aliases: HashMap<&str, bool> = HashMap::new();
    for (op, index, id, source) in &actions {
        let item = ItemRequest { index, id, source };
        let failure = fault.as_ref().and_then(|f| f(&item)).or_else(|| {
            let is_alias = *aliases
                .entry(item.index)
                .or_insert_with(|| store.is_alias(item.index));
            if is_alias {
                return Some(ItemError {
                    status: 400,
                    error_type: "illegal_argument_exception".into(),
                    reason: format!("no write index is defined for alias [{}]", item.index),
                });
            }
            None
        });
        let result = match failure {
            Some(failure) => Err(failure),
            None => store
                .index_document(item.index, item.id, body.slice_ref(item.source.as_bytes()))
                .map_err(|e| match e {
                    DocumentError::Mapping((kind, reason)) => ItemError {
                        status: 400,
                        error_type: kind.to_owned(),
                        reason,
                    },
                    DocumentError::Syntax(reason) => ItemError {
                        status: 400,
                        error_type: "document_parsing_exception".to_owned(),
                        reason: format!("failed to parse: {reason}"),
                    },
                }),
        };
        let entry = match result {
            Ok(outcome) => {
                shared.indexed_items.fetch_add(1, AtomicOrdering::Relaxed);
                let (result, version, status) = match outcome {
                    Indexed::Created(v) => ("created", v, 201),
                    Indexed::Updated(v) => ("updated", v, 200),
                };
                BulkItem {
                    index: Some(item.index),
                    id: Some(item.id),
                    version: Some(version),
                    result: Some(result),
                    status: Some(status),
                    error: None,
                }
            }
            Err(failure) => {
                errors = true;
                shared.failed_items.fetch_add(1, AtomicOrdering::Relaxed);
                BulkItem {
                    index: Some(item.index),
                    id: Some(item.id),
                    version: None,
                    result: None,
                    status: Some(failure.status),
                    error: Some(ItemErrorBody {
                        error_type: failure.error_type,
                        reason: failure.reason,
                    }),
                }
            }
        };
        let entry = match &filter {
            Some(filter) => filter.item(entry),
            None => entry,
        };
        items.push(BulkOp(op, entry));
    }
    let keep = |field: &str| {
        filter
            .as_ref()
            .is_none_or(|f| f.top.iter().any(|t| t == field))
    };
    let response = BulkResponse {
        took: keep("took").then_some(1),
        errors: keep("errors").then_some(errors),
        items: filter
            .as_ref()
            .is_none_or(BulkFilter::keeps_items)
            .then_some(items),
    };
    axum::Json(response).into_response()
}

/// A bulk response, typed (building it as `Value`s cost as much as indexing).
#[derive(Serialize)]
struct BulkResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    took: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    errors: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<Vec<BulkOp<'a>>>,
}

/// `{"<op>": <item>}`.
struct BulkOp<'a>(&'a str, BulkItem<'a>);

impl Serialize for BulkOp<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.0, &self.1)?;
        map.end()
    }
}

#[derive(Serialize)]
struct BulkItem<'a> {
    #[serde(rename = "_index", skip_serializing_if = "Option::is_none")]
    index: Option<&'a str>,
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "_version", skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ItemErrorBody>,
}

#[derive(Serialize)]
struct ItemErrorBody {
    #[serde(rename = "type")]
    error_type: String,
    reason: String,
}

fn acknowledged() -> Response {
    axum::Json(json!({"acknowledged": true})).into_response()
}

async fn put_index_template(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let template = match parse_json(&body) {
        Ok(t) => t,
        Err(response) => return response,
    };
    if !template["index_patterns"].is_array() {
        return error(
            StatusCode::BAD_REQUEST,
            "action_request_validation_exception",
            "index patterns are missing",
        );
    }
    let mut store = shared.store.lock();
    for component in template["composed_of"].as_array().into_iter().flatten() {
        let known = component
            .as_str()
            .is_some_and(|c| store.component_templates.contains_key(c));
        if !known {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_index_template_exception",
                format!(
                    "index template [{name}] specifies component templates {component} that do not exist"
                ),
            );
        }
    }
    store.index_templates.insert(name, template);
    acknowledged()
}

async fn get_index_template(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Response {
    match shared.store.lock().index_templates.get(&name) {
        Some(t) => axum::Json(json!({"index_templates": [{"name": name, "index_template": t}]}))
            .into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "resource_not_found_exception",
            format!("index template matching [{name}] not found"),
        ),
    }
}

async fn put_component_template(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let template = match parse_json(&body) {
        Ok(t) => t,
        Err(response) => return response,
    };
    if !template["template"].is_object() {
        return error(
            StatusCode::BAD_REQUEST,
            "action_request_validation_exception",
            "template is missing",
        );
    }
    shared
        .store
        .lock()
        .component_templates
        .insert(name, template);
    acknowledged()
}

async fn get_component_template(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Response {
    match shared.store.lock().component_templates.get(&name) {
        Some(t) => {
            axum::Json(json!({"component_templates": [{"name": name, "component_template": t}]}))
                .into_response()
        }
        None => error(
            StatusCode::NOT_FOUND,
            "resource_not_found_exception",
            format!("component template matching [{name}] not found"),
        ),
    }
}

async fn put_policy(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let policy = match parse_json(&body) {
        Ok(p) => p,
        Err(response) => return response,
    };
    if !policy["policy"]["phases"].is_object() {
        return error(
            StatusCode::BAD_REQUEST,
            "x_content_parse_exception",
            "policy.phases is missing",
        );
    }
    shared.store.lock().ilm_policies.insert(name, policy);
    acknowledged()
}

async fn get_policy(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    match shared.store.lock().ilm_policies.get(&name) {
        Some(p) => axum::Json(json!({ name: p })).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "resource_not_found_exception",
            format!("Lifecycle policy not found: {name}"),
        ),
    }
}

struct Hit {
    index: String,
    id: String,
    sequence: u64,
    source: Value,
}

fn run_query(shared: &Shared, target: &str, body: &Value) -> Result<Vec<Hit>, Response> {
    let query = body
        .get("query")
        .cloned()
        .unwrap_or(json!({"match_all": {}}));
    query::validate(&query)
        .map_err(|e| error(StatusCode::BAD_REQUEST, "parsing_exception", e.0))?;
    let store = shared.store.lock();
    let names = store.resolve(target);
    let concrete = target.split(',').any(|t| !t.contains('*') && t != "_all");
    if names.is_empty() && concrete {
        return Err(error(
            StatusCode::NOT_FOUND,
            "index_not_found_exception",
            format!("no such index [{target}]"),
        ));
    }
    let mut hits = Vec::new();
    for name in names {
        let Some(index) = store.indices.get(&name) else {
            continue;
        };
        for (id, doc) in index.documents() {
            let matched = query::matches(&query, doc.source())
                .map_err(|e| error(StatusCode::BAD_REQUEST, "parsing_exception", e.0))?;
            if matched {
                hits.push(Hit {
                    index: name.clone(),
                    id: id.to_owned(),
                    sequence: doc.sequence,
                    source: doc.source().clone(),
                });
            }
        }
    }
    Ok(hits)
}

async fn search_all(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    search_in(&shared, "_all", &body)
}

async fn search(
    State(shared): State<Arc<Shared>>,
    Path(target): Path<String>,
    body: Bytes,
) -> Response {
    search_in(&shared, &target, &body)
}

fn search_in(shared: &Shared, target: &str, body: &Bytes) -> Response {
    let body = match parse_json(body) {
        Ok(b) => b,
        Err(response) => return response,
    };
    let keys = match query::sort_keys(body.get("sort")) {
        Ok(k) => k,
        Err(e) => return error(StatusCode::BAD_REQUEST, "parsing_exception", e.0),
    };
    let mut hits = match run_query(shared, target, &body) {
        Ok(h) => h,
        Err(response) => return response,
    };
    hits.sort_by(|a, b| {
        query::compare_sources(&a.source, &b.source, &keys).then(a.sequence.cmp(&b.sequence))
    });
    let total = hits.len();
    let from = body["from"].as_u64().unwrap_or(0) as usize;
    let size = body["size"].as_u64().unwrap_or(10) as usize;
    let page: Vec<Value> = hits
        .into_iter()
        .skip(from)
        .take(size)
        .map(|h| json!({"_index": h.index, "_id": h.id, "_score": 1.0, "_source": h.source}))
        .collect();
    axum::Json(json!({
        "took": 1,
        "timed_out": false,
        "hits": {"total": {"value": total, "relation": "eq"}, "max_score": 1.0, "hits": page}
    }))
    .into_response()
}

async fn count_all(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    count_in(&shared, "_all", &body)
}

async fn count(
    State(shared): State<Arc<Shared>>,
    Path(target): Path<String>,
    body: Bytes,
) -> Response {
    count_in(&shared, &target, &body)
}

fn count_in(shared: &Shared, target: &str, body: &Bytes) -> Response {
    let body = match parse_json(body) {
        Ok(b) => b,
        Err(response) => return response,
    };
    match run_query(shared, target, &body) {
        Ok(hits) => axum::Json(json!({"count": hits.len()})).into_response(),
        Err(response) => response,
    }
}

async fn cat_indices(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let _ = headers;
    let store = shared.store.lock();
    let rows: Vec<Value> = store
        .indices
        .iter()
        .map(|(name, index)| json!({"health": "green", "status": "open", "index": name, "docs.count": index.len().to_string()}))
        .collect();
    axum::Json(Value::Array(rows)).into_response()
}

fn alias_listing(shared: &Shared, target: &str) -> Response {
    let store = shared.store.lock();
    let mut out = serde_json::Map::new();
    for name in store.resolve(target) {
        if let Some(index) = store.indices.get(&name) {
            let aliases: serde_json::Map<String, Value> = index
                .aliases
                .iter()
                .map(|a| (a.clone(), json!({})))
                .collect();
            out.insert(name, json!({"aliases": aliases}));
        }
    }
    axum::Json(Value::Object(out)).into_response()
}

async fn aliases_all(State(shared): State<Arc<Shared>>) -> Response {
    alias_listing(&shared, "_all")
}

async fn aliases(State(shared): State<Arc<Shared>>, Path(target): Path<String>) -> Response {
    alias_listing(&shared, &target)
}
