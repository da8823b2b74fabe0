//! The REST server: routes, middleware (metrics, problem `instance`, panic guard, body
//! limit), binding and graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rill_config::GatewayConfig;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::catch_panic::CatchPanicLayer;

use crate::api::{self, ApiSettings, AppState, JobWaiters, SharedState};
use crate::backend::GatewayBackend;
use crate::dispatch::Dispatcher;
use crate::error::GatewayError;
use crate::metrics::GatewayMetrics;
use crate::problem::Problem;

/// Builds the REST API's router. `shutdown` turning true ends waiting long polls.
pub fn router(
    config: &GatewayConfig,
    backend: Arc<dyn GatewayBackend>,
    metrics: GatewayMetrics,
    shutdown: watch::Receiver<bool>,
) -> Router {
    let max_message_size = config.max_message_size.0;
    let state: SharedState = Arc::new(AppState {
        job_waiters: JobWaiters::new(backend.clone()),
        dispatch: Dispatcher::new(backend),
        settings: ApiSettings {
            request_timeout: config.request_timeout,
            long_polling_timeout: config.long_polling_timeout,
            max_request_timeout: config.max_request_timeout,
            max_message_size,
        },
        metrics,
        shutdown,
    });
    api::routes()
        .fallback(no_such_endpoint)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(
            usize::try_from(max_message_size).unwrap_or(usize::MAX),
        ))
        .layer(CatchPanicLayer::custom(|_| {
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "Unexpected error while handling the request",
            )
            .into_response()
        }))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// Records metrics and fills in the problem's `instance` with the request path.
async fn observe(State(state): State<SharedState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let endpoint = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let mut response = next.run(request).await;
    if let Some(problem) = response.extensions_mut().remove::<Problem>()
        && problem.instance.is_none()
    {
        let status = response.status().as_u16();
        response = problem.with_instance(path).into_response();
        tracing::debug!(status, endpoint, "problem answered");
    }
    state.metrics.observe_request(
        &endpoint,
        &method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

async fn no_such_endpoint(request: Request) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
        format!(
            "No endpoint {} {}; see the REST API reference for the supported /v2 paths",
            request.method(),
            request.uri().path()
        ),
    )
}

async fn method_not_allowed(request: Request) -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        format!(
            "Method {} is not supported for {}",
            request.method(),
            request.uri().path()
        ),
    )
}

/// A bound, not yet serving REST server.
pub struct RestServer {
    listener: TcpListener,
    router: Router,
    shutdown: watch::Sender<bool>,
}

impl RestServer {
    /// Binds `config.host:config.rest_port` (port 0 picks a free port).
    pub async fn bind(
        config: &GatewayConfig,
        backend: Arc<dyn GatewayBackend>,
        metrics: GatewayMetrics,
    ) -> Result<RestServer, GatewayError> {
        let address = if config.host.contains(':') {
            format!("[{}]:{}", config.host, config.rest_port)
        } else {
            format!("{}:{}", config.host, config.rest_port)
        };
        let listener = TcpListener::bind(&address)
            .await
            .map_err(|source| GatewayError::Bind { address, source })?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        Ok(RestServer {
            listener,
            router: router(config, backend, metrics, shutdown_rx),
            shutdown,
        })
    }

    pub fn local_addr(&self) -> Result<SocketAddr, GatewayError> {
        self.listener.local_addr().map_err(GatewayError::Serve)
    }

    /// Serves until `shutdown` completes, then ends long polls, stops accepting, and
    /// waits for requests in flight.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), GatewayError> {
        let stop = self.shutdown;
        let signal = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        tracing::info!(address = ?self.listener.local_addr().ok(), "REST API listening");
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(signal)
            .await
            .map_err(GatewayError::Serve)
    }
}

/// Binds and serves the REST API until `shutdown` completes.
pub async fn serve(
    config: &GatewayConfig,
    backend: Arc<dyn GatewayBackend>,
    metrics: GatewayMetrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), GatewayError> {
    RestServer::bind(config, backend, metrics)
        .await?
        .serve(shutdown)
        .await
}
