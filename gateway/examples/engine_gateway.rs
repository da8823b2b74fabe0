//! A gateway in front of the real BPMN engine over in-memory state (no Raft, no
//! RocksDB): for trying the REST API and for driving it with unmodified Camunda
//! clients (`tests/clients/`) before the standalone binary exists.
//!
//! `cargo run -p rill-gateway --example engine_gateway -- [PORT]` (default 8080; 0
//! picks a free port). Prints `listening on http://ADDRESS` once it accepts requests,
//! and stops on SIGINT or SIGTERM.

#[path = "../tests/rest/support/engine_backend.rs"]
#[allow(dead_code)]
mod engine_backend;

use std::io::Write;

use rill_config::GatewayConfig;
use rill_gateway::{GatewayMetrics, RestServer};
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = match std::env::args().nth(1) {
        Some(text) => text.parse()?,
        None => 8080,
    };
    let config = GatewayConfig {
        host: "127.0.0.1".into(),
        rest_port: port,
        ..GatewayConfig::default()
    };
    let backend = engine_backend::EngineBackend::new(1);
    let metrics = GatewayMetrics::register(prometheus::default_registry())?;
    let open = std::sync::Arc::new(rill_gateway::Authenticator::none());
    let server = RestServer::bind(&config, open, backend, metrics).await?;
    println!("listening on http://{}", server.local_addr()?);
    std::io::stdout().flush()?;
    let mut terminate = signal(SignalKind::terminate())?;
    server
        .serve(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        })
        .await?;
    Ok(())
}
