//! The REST server: routes, middleware (metrics, problem `instance`, authentication,
//! panic guard, body limit), binding and graceful shutdown.

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
use rill_tls::{ALPN_GRPC, ALPN_HTTP, IdentityFiles, ReloadingIdentity, TlsAcceptor, TlsListener};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::catch_panic::CatchPanicLayer;

use crate::auth::Authenticator;
use crate::backend::GatewayBackend;
use crate::error::GatewayError;
use crate::grpc::GrpcServer;
use crate::metrics::GatewayMetrics;
use crate::ops::{ApiSettings, AppState, ClientError, Dispatcher, JobWaiters, SharedState};
use crate::rest::{self, Problem};

/// Builds the REST API's router. `shutdown` turning true ends waiting long polls.
pub fn router(
    config: &GatewayConfig,
    authenticator: Arc<Authenticator>,
    backend: Arc<dyn GatewayBackend>,
    metrics: GatewayMetrics,
    shutdown: watch::Receiver<bool>,
) -> Router {
    rest_router(shared_state(
        config,
        authenticator,
        backend,
        metrics,
        shutdown,
    ))
}

/// What REST and gRPC requests share: one dispatcher, one set of long-polling job
/// waiters, the settings and the metrics.
pub(crate) fn shared_state(
    config: &GatewayConfig,
    authenticator: Arc<Authenticator>,
    backend: Arc<dyn GatewayBackend>,
    metrics: GatewayMetrics,
    shutdown: watch::Receiver<bool>,
) -> SharedState {
    let state = Arc::new(AppState {
        authenticator,
        job_waiters: JobWaiters::new(backend.clone()),
        dispatch: Dispatcher::new(backend),
        settings: ApiSettings {
            request_timeout: config.request_timeout,
            long_polling_timeout: config.long_polling_timeout,
            max_request_timeout: config.max_request_timeout,
            max_message_size: config.max_message_size.0,
            max_variable_document_size: config.max_variable_document_size.0,
        },
        metrics,
        shutdown,
    });
    crate::ops::start_users(&state);
    state
}

fn rest_router(state: SharedState) -> Router {
    let max_message_size = state.settings.max_message_size;
    rest::routes()
        .fallback(no_such_endpoint)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(
            usize::try_from(max_message_size).unwrap_or(usize::MAX),
        ))
        .layer(CatchPanicLayer::custom(|_| {
            ClientError::internal("Unexpected error while handling the request").into_response()
        }))
        // Every route and the fallback: an unknown path answers 401 too.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            rest::authenticate,
        ))
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

async fn no_such_endpoint(request: Request) -> ClientError {
    ClientError::not_found(format!(
        "No endpoint {} {}; see the REST API reference for the supported /v2 paths",
        request.method(),
        request.uri().path()
    ))
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

/// The gateway's certificate when `gateway.tls.enabled`, checked now and reloaded when
/// its files change. Must be called on a tokio runtime.
pub(crate) fn gateway_identity(
    config: &GatewayConfig,
) -> Result<Option<Arc<ReloadingIdentity>>, GatewayError> {
    let tls = &config.tls;
    if !tls.enabled {
        return Ok(None);
    }
    // `validate()` refuses TLS on without its files; an empty path fails to read and
    // names the setting all the same.
    let files = IdentityFiles::new(
        "gateway.tls",
        tls.certificate.clone().unwrap_or_default(),
        tls.private_key.clone().unwrap_or_default(),
    );
    Ok(Some(ReloadingIdentity::load(
        files,
        rill_tls::DEFAULT_RELOAD_INTERVAL,
    )?))
}

/// A bound, not yet serving REST server.
pub struct RestServer {
    listener: TcpListener,
    router: Router,
    shutdown: watch::Sender<bool>,
    /// `Some` when REST is served over TLS only.
    tls: Option<TlsAcceptor>,
}

impl RestServer {
    /// Binds `config.host:config.rest_port` (port 0 picks a free port).
    pub async fn bind(
        config: &GatewayConfig,
        authenticator: Arc<Authenticator>,
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
            .map_err(|source| GatewayError::Bind {
                api: "REST",
                address,
                source,
            })?;
        let tls = gateway_identity(config)?
            .map(|identity| rill_tls::server_acceptor(&identity, ALPN_HTTP))
            .transpose()?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        Ok(RestServer {
            listener,
            router: router(config, authenticator, backend, metrics, shutdown_rx),
            shutdown,
            tls,
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
        let address = self.listener.local_addr().ok();
        // The peer's address reaches the handlers (failed logins are counted per source).
        let service = self
            .router
            .into_make_service_with_connect_info::<rill_tls::PeerAddr>();
        match self.tls {
            None => {
                tracing::info!(address = ?address, "REST API listening");
                axum::serve(self.listener, service)
                    .with_graceful_shutdown(signal)
                    .await
                    .map_err(GatewayError::Serve)
            }
            Some(acceptor) => {
                tracing::info!(address = ?address, "REST API listening (TLS)");
                let listener = TlsListener::new(self.listener, acceptor, "REST")
                    .map_err(GatewayError::Serve)?;
                axum::serve(listener, service)
                    .with_graceful_shutdown(signal)
                    .await
                    .map_err(GatewayError::Serve)
            }
        }
    }
}

/// The gateway's client APIs, bound: REST on `gateway.rest-port` and Zeebe's gRPC on
/// `gateway.grpc-port`, sharing one dispatcher and one set of job waiters.
pub struct GatewayServer {
    rest: RestServer,
    grpc: GrpcServer,
}

impl GatewayServer {
    /// Binds both ports (port 0 picks a free port).
    pub async fn bind(
        config: &GatewayConfig,
        authenticator: Arc<Authenticator>,
        backend: Arc<dyn GatewayBackend>,
        metrics: GatewayMetrics,
    ) -> Result<GatewayServer, GatewayError> {
        let identity = gateway_identity(config)?;
        let acceptor = |alpn| {
            identity
                .as_ref()
                .map(|identity| rill_tls::server_acceptor(identity, alpn))
                .transpose()
        };
        let (rest_tls, grpc_tls) = (acceptor(ALPN_HTTP)?, acceptor(ALPN_GRPC)?);
        let (shutdown, shutdown_rx) = watch::channel(false);
        let state = shared_state(config, authenticator, backend, metrics, shutdown_rx);
        let rest_address = host_port(&config.host, config.rest_port);
        let listener =
            TcpListener::bind(&rest_address)
                .await
                .map_err(|source| GatewayError::Bind {
                    api: "REST",
                    address: rest_address,
                    source,
                })?;
        let grpc = GrpcServer::bind(
            host_port(&config.host, config.grpc_port),
            state.clone(),
            grpc_tls,
        )
        .await?;
        Ok(GatewayServer {
            rest: RestServer {
                listener,
                router: rest_router(state),
                shutdown,
                tls: rest_tls,
            },
            grpc,
        })
    }

    pub fn rest_addr(&self) -> Result<SocketAddr, GatewayError> {
        self.rest.local_addr()
    }

    pub fn grpc_addr(&self) -> Result<SocketAddr, GatewayError> {
        self.grpc.local_addr()
    }

    /// Serves both APIs until `shutdown` completes, then ends long polls and job streams
    /// and waits for the requests in flight.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), GatewayError> {
        let (stopped, stopped_rx) = watch::channel(false);
        let wait = move || {
            let mut stopped = stopped_rx.clone();
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            }
        };
        let rest = self.rest.serve(wait());
        let grpc = self.grpc.serve(wait());
        let signal = async move {
            shutdown.await;
            let _ = stopped.send(true);
        };
        let (rest, grpc, ()) = tokio::join!(rest, grpc, signal);
        rest.and(grpc)
    }
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Binds and serves the REST API until `shutdown` completes.
pub async fn serve(
    config: &GatewayConfig,
    authenticator: Arc<Authenticator>,
    backend: Arc<dyn GatewayBackend>,
    metrics: GatewayMetrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), GatewayError> {
    RestServer::bind(config, authenticator, backend, metrics)
        .await?
        .serve(shutdown)
        .await
}
