//! The gateway's error for starting and running the server. A client request's errors
//! are `ops::ClientError`, answered as a REST problem or a gRPC status.

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("cannot bind the {api} API to {address}: {source}")]
    Bind {
        api: &'static str,
        address: String,
        source: std::io::Error,
    },
    #[error("the REST server failed: {0}")]
    Serve(std::io::Error),
    #[error("the gRPC server failed: {0}")]
    Grpc(String),
    #[error("security settings: {0}")]
    Security(String),
    /// `gateway.tls.*` names files that cannot be used; the message names the setting.
    #[error("{0}")]
    Tls(#[from] rill_tls::TlsError),
    #[error("cannot register the gateway's metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

pub type Result<T, E = GatewayError> = std::result::Result<T, E>;
