//! The HTTP stub the service tasks call: `GET /?v=<random>` answers `{}`.
//!
//! The same stub serves Rill's workers (in-process by default) and the peers
//! (`rill-bench stub`, started by `bench/peers/run.sh`), so every system pays for the
//! same call.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

async fn empty_object() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], "{}")
}

/// A bound stub: its address, and the future that serves it.
pub struct Stub {
    pub addr: SocketAddr,
    listener: TcpListener,
}

impl Stub {
    pub async fn bind(addr: &str) -> Result<Stub> {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding the HTTP stub on {addr}"))?;
        let addr = listener.local_addr()?;
        Ok(Stub { addr, listener })
    }

    /// The base URL workers call (they add `?v=…`).
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Serves until the process ends. Any path answers `{}`, so peers may use `/`
    /// or a path of their own.
    pub async fn serve(self) -> Result<()> {
        let app = Router::new()
            .route("/", get(empty_object))
            .fallback(get(empty_object));
        axum::serve(self.listener, app)
            .await
            .context("serving the HTTP stub")
    }
}
