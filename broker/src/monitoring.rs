//! The monitoring port (9600 by default): `/metrics` in Prometheus text format, the
//! probes Kubernetes asks (`/startup`, `/ready` and `/health`) and, on a broker, Zeebe's
//! cluster management API (`/actuator/cluster`, see `crate::cluster::api`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;
use prometheus::{Encoder, Registry, TextEncoder};
use rill_config::TlsConfig;
use rill_tls::{ALPN_HTTP, IdentityFiles, ReloadingIdentity, TlsAcceptor, TlsListener};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::error::{Error, Result};

/// What the probes report. Implemented by whatever runs in the process (a broker node,
/// a standalone broker with its gateway).
pub trait HealthCheck: Send + Sync + 'static {
    /// Start-up finished (storage opened, ports bound).
    fn started(&self) -> bool;
    /// Requests can be served now (every partition has a leader).
    fn ready(&self) -> bool;
    /// Nothing failed fatally.
    fn healthy(&self) -> bool;
}

/// Paths that stay open whatever the guard says.
const OPEN_PATHS: &[&str] = &["/metrics", "/startup", "/ready", "/health"];

/// Decides whether a request to the monitoring port may proceed (the client APIs'
/// authentication, given by the process that serves both).
pub trait RequestGuard: Send + Sync + 'static {
    /// The request (with whatever the guard learnt in its extensions), or the answer
    /// that refuses it.
    fn check(&self, request: Request)
    -> BoxFuture<'static, std::result::Result<Request, Response>>;
}

#[derive(Clone)]
struct MonitoringState {
    registry: Registry,
    health: Arc<dyn HealthCheck>,
}

/// A bound monitoring server; call [`MonitoringServer::serve`] to answer requests.
pub struct MonitoringServer {
    listener: TcpListener,
    router: Router,
    /// `Some` when the port serves TLS only (`monitoring.tls.enabled`).
    tls: Option<TlsAcceptor>,
}

impl MonitoringServer {
    pub async fn bind(
        address: &str,
        registry: Registry,
        health: Arc<dyn HealthCheck>,
    ) -> Result<MonitoringServer> {
        let listener = TcpListener::bind(address).await.map_err(|e| {
            Error::Config(format!(
                "cannot bind the monitoring port on {address}: {e} (set monitoring.port)"
            ))
        })?;
        let router = Router::new()
            .route("/metrics", get(metrics))
            .route("/startup", get(startup))
            .route("/ready", get(ready))
            .route("/health", get(health_probe))
            .with_state(MonitoringState { registry, health });
        Ok(MonitoringServer {
            listener,
            router,
            tls: None,
        })
    }

    /// Serves TLS only when `tls.enabled` (the `monitoring.tls` settings): the files are
    /// checked now, and reloaded when they change. Must be called on a tokio runtime.
    pub fn with_tls(mut self, tls: &TlsConfig) -> Result<MonitoringServer> {
        if !tls.enabled {
            return Ok(self);
        }
        let files = IdentityFiles::new(
            "monitoring.tls",
            tls.certificate.clone().unwrap_or_default(),
            tls.private_key.clone().unwrap_or_default(),
        );
        let tls_error = |e: rill_tls::TlsError| Error::Config(e.to_string());
        let identity =
            ReloadingIdentity::load(files, rill_tls::DEFAULT_RELOAD_INTERVAL).map_err(tls_error)?;
        self.tls = Some(rill_tls::server_acceptor(&identity, ALPN_HTTP).map_err(tls_error)?);
        Ok(self)
    }

    /// Serves the cluster management API (`/actuator/cluster`) from `cluster`, with the
    /// raft view of the replicas hosted here from `local`.
    pub fn with_cluster(
        mut self,
        cluster: crate::cluster::ClusterState,
        local: crate::cluster::api::LocalReplicas,
    ) -> MonitoringServer {
        self.router = self
            .router
            .merge(crate::cluster::api::router(cluster, local));
        self
    }

    /// Serves the backup management API (`/actuator/backups`); call before
    /// [`MonitoringServer::guarded`], so the guard covers it.
    pub fn with_backups(
        mut self,
        store: Option<crate::backup::Store>,
        partitions: Arc<dyn crate::backup::BackupPartitions>,
        metrics: crate::metrics::BackupMetrics,
    ) -> MonitoringServer {
        self.router = self
            .router
            .merge(crate::backup::router(store, partitions, metrics));
        self
    }

    /// Puts `guard` in front of every route but the probes and `/metrics` (which
    /// Kubernetes and Prometheus ask without credentials, as Camunda leaves them open):
    /// with authentication on, the management API (`/actuator/*`) and unknown paths
    /// answer only requests that pass it.
    pub fn guarded(mut self, guard: Arc<dyn RequestGuard>) -> MonitoringServer {
        self.router = self.router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let guard = guard.clone();
                async move {
                    if OPEN_PATHS.contains(&request.uri().path()) {
                        return next.run(request).await;
                    }
                    match guard.check(request).await {
                        Ok(request) => next.run(request).await,
                        Err(refusal) => refusal,
                    }
                }
            },
        ));
        self
    }

    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| Error::Config(format!("monitoring listener: {e}")))
    }

    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        let failed = |e: std::io::Error| Error::Config(format!("monitoring server: {e}"));
        // The peer's address reaches the guard (failed logins are counted per source).
        let service = self
            .router
            .into_make_service_with_connect_info::<rill_tls::PeerAddr>();
        match self.tls {
            None => axum::serve(self.listener, service)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(failed),
            Some(acceptor) => {
                let listener =
                    TlsListener::new(self.listener, acceptor, "monitoring").map_err(failed)?;
                axum::serve(listener, service)
                    .with_graceful_shutdown(shutdown)
                    .await
                    .map_err(failed)
            }
        }
    }
}

async fn metrics(State(state): State<MonitoringState>) -> Response {
    let mut body = Vec::new();
    let encoder = TextEncoder::new();
    match encoder.encode(&state.registry.gather(), &mut body) {
        Ok(()) => (
            [(header::CONTENT_TYPE, encoder.format_type().to_owned())],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode metrics: {e}"),
        )
            .into_response(),
    }
}

fn probe(ok: bool, what: &str) -> Response {
    if ok {
        (StatusCode::OK, format!("{what}: yes\n")).into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, format!("{what}: no\n")).into_response()
    }
}

async fn startup(State(state): State<MonitoringState>) -> Response {
    probe(state.health.started(), "started")
}

async fn ready(State(state): State<MonitoringState>) -> Response {
    probe(state.health.ready(), "ready")
}

async fn health_probe(State(state): State<MonitoringState>) -> Response {
    probe(state.health.healthy(), "healthy")
}

/// An error answer of the management API: an RFC 9457 problem document that also
/// carries Zeebe's `message`.
pub(crate) fn problem(status: StatusCode, title: &str, message: impl Into<String>) -> Response {
    let message = message.into();
    let body = json!({
        "type": "about:blank",
        "title": title,
        "status": status.as_u16(),
        "detail": message,
        "message": message,
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/problem+json")],
        body.to_string(),
    )
        .into_response()
}

/// A JSON answer of the management API.
pub(crate) fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
