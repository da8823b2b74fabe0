//! Authentication on the gRPC API: one layer around the whole server, so every method
//! of every service (job streams included) proves who calls before the service sees the
//! request; only `grpc.health.v1` stays open for probes. The caller's [`Principal`]
//! goes into the request's extensions, where a method finds it.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use tonic::Status;
use tonic::codegen::http;
use tonic::transport::server::TcpConnectInfo;
use tower::{Layer, Service};

use crate::auth::{Authenticator, Principal};

/// Services anyone may call: Kubernetes' gRPC probes ask these.
const PUBLIC_SERVICE_PREFIX: &str = "/grpc.health.v1.Health/";

#[derive(Clone)]
pub struct AuthLayer {
    authenticator: Arc<Authenticator>,
}

impl AuthLayer {
    pub fn new(authenticator: Arc<Authenticator>) -> Self {
        AuthLayer { authenticator }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Authenticate<S>;

    fn layer(&self, inner: S) -> Authenticate<S> {
        Authenticate {
            inner,
            authenticator: self.authenticator.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Authenticate<S> {
    inner: S,
    authenticator: Arc<Authenticator>,
}

impl<S, RequestBody> Service<http::Request<RequestBody>> for Authenticate<S>
where
    S: Service<http::Request<RequestBody>, Response = http::Response<tonic::body::Body>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    RequestBody: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<RequestBody>) -> Self::Future {
        if !self.authenticator.is_enabled() {
            request.extensions_mut().insert(Principal::anonymous());
            return Box::pin(self.inner.call(request));
        }
        // The clone that was made ready serves this request; a fresh clone waits for
        // the next one (tower's pattern for services that await before calling).
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let authenticator = self.authenticator.clone();
        Box::pin(async move {
            if request.uri().path().starts_with(PUBLIC_SERVICE_PREFIX) {
                return inner.call(request).await;
            }
            let source = request
                .extensions()
                .get::<TcpConnectInfo>()
                .and_then(TcpConnectInfo::remote_addr)
                .map(|address| address.ip());
            match authenticator.authenticate(request.headers(), source).await {
                Ok(principal) => {
                    request.extensions_mut().insert(principal);
                    inner.call(request).await
                }
                Err(error) => Ok(Status::from(error).into_http()),
            }
        })
    }
}
