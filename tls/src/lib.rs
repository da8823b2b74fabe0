//! TLS for Rill's ports, with rustls (ring): PEM certificates and keys loaded with checks
//! that name the setting at fault, certificates reloaded when their files change (without
//! a restart, and without touching open connections), mutual TLS between cluster members,
//! and a TLS listener for the axum and tonic servers.
//!
//! Used by the gateway (REST and gRPC), the monitoring port, and the internal transport
//! (raft and command ports). See docs/security.md.

mod config;
mod error;
mod listener;
mod material;
mod reload;
#[cfg(feature = "testing")]
pub mod testing;
mod validity;

pub use config::{ALPN_GRPC, ALPN_HTTP, ClusterTls, member_server_name, server_acceptor};
pub use error::{Result, TlsError};
pub use listener::{HANDSHAKE_TIMEOUT, MAX_HANDSHAKES, PeerAddr, TlsConnection, TlsListener};
pub use material::{IdentityFiles, PemFile, load_ca, provider};
pub use reload::{DEFAULT_RELOAD_INTERVAL, ReloadingCa, ReloadingIdentity};
pub use tokio_rustls::{TlsAcceptor, TlsConnector};
