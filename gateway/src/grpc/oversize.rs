//! tonic answers a request message over its decoding limit itself, before the service
//! sees it: OUT_OF_RANGE (RESOURCE_EXHAUSTED for one that decompresses too large, which
//! Zeebe's clients would retry as back-pressure), with a message that names no setting.
//! This layer, around the whole server, rewords that answer as the service's own check
//! words it: INVALID_ARGUMENT naming `gateway.max-message-size`.

use std::task::{Context, Poll};

use futures::future::BoxFuture;
use tonic::codegen::http::{self, HeaderMap};
use tonic::{Code, Status};
use tower::{Layer, Service};

use super::convert::message_too_large;

#[derive(Clone)]
pub struct OversizeLayer {
    max_message_size: u64,
}

impl OversizeLayer {
    pub fn new(max_message_size: u64) -> Self {
        OversizeLayer { max_message_size }
    }
}

impl<S> Layer<S> for OversizeLayer {
    type Service = Oversize<S>;

    fn layer(&self, inner: S) -> Oversize<S> {
        Oversize {
            inner,
            max_message_size: self.max_message_size,
        }
    }
}

#[derive(Clone)]
pub struct Oversize<S> {
    inner: S,
    max_message_size: u64,
}

impl<S, RequestBody> Service<http::Request<RequestBody>> for Oversize<S>
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
        let max_message_size = self.max_message_size;
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut response = response.await?;
            if let Some(status) = reworded(response.headers(), max_message_size) {
                let headers = response.headers_mut();
                headers.remove("grpc-message");
                headers.remove("grpc-status-details-bin");
                // The new message is percent-encoded ASCII; it always fits a header.
                if status.add_header(headers).is_ok() {
                    response.extensions_mut().insert(status);
                }
            }
            Ok(response)
        })
    }
}

/// The status to answer instead, when `headers` hold tonic's decoding-limit error (an
/// error before any message is in the headers, a trailers-only response).
fn reworded(headers: &HeaderMap, max_message_size: u64) -> Option<Status> {
    let status = Status::from_header_map(headers)?;
    let message = status.message();
    let decoding = status.code() == Code::OutOfRange
        && message.starts_with("Error, decoded message length too large");
    let decompressing = status.code() == Code::ResourceExhausted
        && message.starts_with("Error decompressing: size limit");
    if !decoding && !decompressing {
        return None;
    }
    // "… found 9437189 bytes, the limit is …": the size, when tonic gives it.
    let size = message
        .split_once("found ")
        .and_then(|(_, rest)| rest.split_once(" bytes"))
        .and_then(|(number, _)| number.parse().ok());
    Some(message_too_large(size, max_message_size).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_of(status: &Status) -> HeaderMap {
        let mut headers = HeaderMap::new();
        status.add_header(&mut headers).expect("headers");
        headers
    }

    #[test]
    fn the_decoders_limit_errors_become_invalid_argument_naming_the_setting() {
        let decoded = Status::out_of_range(
            "Error, decoded message length too large: found 9437189 bytes, the limit is: \
             8388608 bytes",
        );
        let status = reworded(&headers_of(&decoded), 4_194_304).expect("reworded");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("of 9437189 bytes"), "{status:?}");
        assert!(status.message().contains("4194304 bytes"), "{status:?}");
        assert!(
            status.message().contains("gateway.max-message-size"),
            "{status:?}"
        );

        let decompressed = Status::resource_exhausted(
            "Error decompressing: size limit, of 8388608 bytes, exceeded while decompressing \
             message",
        );
        let status = reworded(&headers_of(&decompressed), 4_194_304).expect("reworded");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().contains("gateway.max-message-size"),
            "{status:?}"
        );
    }

    #[test]
    fn other_statuses_pass_unchanged() {
        for status in [
            Status::resource_exhausted("partition 1 is overloaded"),
            Status::out_of_range("something else"),
            Status::invalid_argument("Property 'jobKey' is invalid"),
        ] {
            assert!(reworded(&headers_of(&status), 10).is_none(), "{status:?}");
        }
        assert!(reworded(&HeaderMap::new(), 10).is_none());
    }
}
