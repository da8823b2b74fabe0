//! gRPC metrics as a tower layer around the whole server: every call is counted by RPC
//! and status code when it ends, with its latency, and server streams are counted while
//! open. The status is read where gRPC puts it: in the response headers for an
//! immediate error, else in the trailers at the end of the body. A call dropped before
//! its status (the client went away) counts as `CANCELLED`.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use http_body::{Body, Frame};
use tonic::Code;
use tonic::codegen::http::{self, HeaderMap};
use tower::{Layer, Service};

use crate::metrics::{GatewayMetrics, WaitingGuard};

/// The server-streaming RPCs, counted while open.
const STREAMING: &[&str] = &["ActivateJobs", "StreamActivatedJobs"];

#[derive(Clone)]
pub struct MetricsLayer {
    metrics: GatewayMetrics,
}

impl MetricsLayer {
    pub fn new(metrics: GatewayMetrics) -> Self {
        MetricsLayer { metrics }
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = Observed<S>;

    fn layer(&self, inner: S) -> Observed<S> {
        Observed {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Observed<S> {
    inner: S,
    metrics: GatewayMetrics,
}

impl<S, RequestBody> Service<http::Request<RequestBody>> for Observed<S>
where
    S: Service<http::Request<RequestBody>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<RequestBody>) -> Self::Future {
        let mut call = Call::new(self.metrics.clone(), rpc_name(request.uri().path()));
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            let (parts, body) = response.into_parts();
            call.take_status(&parts.headers);
            let body = tonic::body::Body::new(ObservedBody { inner: body, call });
            Ok(http::Response::from_parts(parts, body))
        })
    }
}

/// The label of a call's path `/package.Service/Method`: the method for Zeebe's gateway
/// service, `Service/Method` for the others (health, reflection); one label for paths
/// that name no method, so that label values stay few.
fn rpc_name(path: &str) -> String {
    match path.trim_start_matches('/').split_once('/') {
        Some((super::SERVICE_NAME, method)) => method.to_owned(),
        Some(("grpc.health.v1.Health", method)) => format!("Health/{method}"),
        Some((service, _)) if service.starts_with("grpc.reflection.") => "Reflection".to_owned(),
        _ => "unknown".to_owned(),
    }
}

/// One call being answered; counted once, when dropped.
struct Call {
    metrics: GatewayMetrics,
    rpc: String,
    started: Instant,
    code: Option<Code>,
    _stream: Option<WaitingGuard>,
}

impl Call {
    fn new(metrics: GatewayMetrics, rpc: String) -> Call {
        let stream = STREAMING
            .contains(&rpc.as_str())
            .then(|| metrics.grpc_stream_open(&rpc));
        Call {
            metrics,
            rpc,
            started: Instant::now(),
            code: None,
            _stream: stream,
        }
    }

    fn take_status(&mut self, headers: &HeaderMap) {
        if let Some(code) = headers
            .get("grpc-status")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i32>().ok())
        {
            self.code = Some(Code::from_i32(code));
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let code = code_name(self.code.unwrap_or(Code::Cancelled));
        self.metrics
            .observe_grpc(&self.rpc, code, self.started.elapsed());
    }
}

struct ObservedBody {
    inner: tonic::body::Body,
    call: Call,
}

impl Body for ObservedBody {
    type Data = <tonic::body::Body as Body>::Data;
    type Error = <tonic::body::Body as Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(trailers) = frame.trailers_ref()
        {
            this.call.take_status(trailers);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The status code's name as gRPC spells it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_labelled_by_method() {
        assert_eq!(
            rpc_name("/gateway_protocol.Gateway/CompleteJob"),
            "CompleteJob"
        );
        assert_eq!(rpc_name("/grpc.health.v1.Health/Check"), "Health/Check");
        assert_eq!(
            rpc_name("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"),
            "Reflection"
        );
        assert_eq!(rpc_name("/some.Other/Thing"), "unknown");
        assert_eq!(rpc_name("/"), "unknown");
    }
}
