//! Zeebe's gRPC API (`gateway_protocol.Gateway`, `proto/gateway.proto`) next to the REST
//! API, on `gateway.grpc-port`, with `grpc.health.v1` and server reflection. Requests go
//! through the same dispatcher and job long poll as REST ones (see `service`).

mod auth;
mod convert;
mod decisions;
mod observe;
mod oversize;
mod push;
mod service;
mod status;

use std::future::Future;
use std::net::SocketAddr;

use rill_tls::{TlsAcceptor, TlsListener};
use tokio::net::TcpListener;
use tonic::codec::CompressionEncoding;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use crate::error::GatewayError;
use crate::ops::SharedState;

/// The generated messages and service of `gateway_protocol`.
pub mod proto {
    #![allow(clippy::all, missing_docs, rust_2018_idioms)]
    tonic::include_proto!("gateway_protocol");
}

/// `gateway.proto`'s descriptors, for server reflection.
const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/gateway_descriptor.bin"));

/// The service name clients and health checks use.
pub const SERVICE_NAME: &str = "gateway_protocol.Gateway";

/// A bound, not yet serving gRPC server.
pub struct GrpcServer {
    listener: TcpListener,
    state: SharedState,
    /// `Some` when gRPC is served over TLS only (ALPN `h2`).
    tls: Option<TlsAcceptor>,
}

impl GrpcServer {
    /// Binds `address` (port 0 picks a free port); with `tls`, serves TLS only.
    pub async fn bind(
        address: String,
        state: SharedState,
        tls: Option<TlsAcceptor>,
    ) -> Result<GrpcServer, GatewayError> {
        let listener = TcpListener::bind(&address)
            .await
            .map_err(|source| GatewayError::Bind {
                api: "gRPC",
                address,
                source,
            })?;
        Ok(GrpcServer {
            listener,
            state,
            tls,
        })
    }

    pub fn local_addr(&self) -> Result<SocketAddr, GatewayError> {
        self.listener.local_addr().map_err(GatewayError::Serve)
    }

    /// Serves until `shutdown` completes, then finishes the calls in flight (job streams
    /// and long polls end with the shared state's shutdown signal).
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), GatewayError> {
        let max_message_size = self.state.settings.max_message_size;
        // Twice the limit is decoded, so that the service sees a request somewhat over it
        // and names what is too large: a variable document and its setting, or the
        // message. Beyond that the decoder stops, and `oversize` words its error.
        let decoding_limit =
            usize::try_from(max_message_size.saturating_mul(2)).unwrap_or(usize::MAX);
        let (health, health_service) = tonic_health::server::health_reporter();
        health
            .set_serving::<proto::gateway_server::GatewayServer<service::GatewayService>>()
            .await;
        let reflection = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .build_v1()
            .map_err(|e| GatewayError::Grpc(e.to_string()))?;
        let reflection_alpha = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .build_v1alpha()
            .map_err(|e| GatewayError::Grpc(e.to_string()))?;
        let gateway = proto::gateway_server::GatewayServer::new(service::GatewayService::new(
            self.state.clone(),
        ))
        .max_decoding_message_size(decoding_limit)
        // Zeebe's clients may compress their requests (the npm SDK does).
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip);
        let address = self.listener.local_addr().ok();
        let router = Server::builder()
            .layer(observe::MetricsLayer::new(self.state.metrics.clone()))
            .layer(oversize::OversizeLayer::new(max_message_size))
            // Every method of every service but health checks proves who calls.
            .layer(auth::AuthLayer::new(self.state.authenticator.clone()))
            .add_service(gateway)
            .add_service(health_service)
            .add_service(reflection)
            .add_service(reflection_alpha);
        let served = match self.tls {
            None => {
                tracing::info!(address = ?address, "gRPC API listening");
                let incoming = TcpIncoming::from(self.listener).with_nodelay(Some(true));
                router
                    .serve_with_incoming_shutdown(incoming, shutdown)
                    .await
            }
            Some(acceptor) => {
                tracing::info!(address = ?address, "gRPC API listening (TLS)");
                let incoming = TlsListener::new(self.listener, acceptor, "gRPC")
                    .map_err(GatewayError::Serve)?
                    .into_incoming();
                router
                    .serve_with_incoming_shutdown(incoming, shutdown)
                    .await
            }
        };
        served.map_err(|e| GatewayError::Grpc(e.to_string()))
    }
}

#[cfg(test)]
mod wire_tests;
