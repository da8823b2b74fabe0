//! rustls configurations for Rill's two kinds of TLS: a server port whose clients bring no
//! certificate (the client APIs, monitoring), and mutual TLS between cluster members (the
//! internal and command ports, gateways included).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::{ClientConfig, ServerConfig};
use rustls_pki_types::ServerName;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::material::{IdentityFiles, PemFile, provider};
use crate::reload::{MemberClientVerifier, MemberServerVerifier, ReloadingCa, ReloadingIdentity};
use crate::{Result, TlsError};

/// ALPN of an HTTP port: HTTP/2 first, HTTP/1.1 for clients that do not speak it.
pub const ALPN_HTTP: &[&[u8]] = &[b"h2", b"http/1.1"];
/// ALPN of a gRPC port: HTTP/2 only (grpcs:// clients insist on `h2`).
pub const ALPN_GRPC: &[&[u8]] = &[b"h2"];

fn setup(error: rustls::Error) -> TlsError {
    TlsError::Setup(error.to_string())
}

/// An acceptor serving `identity`'s current certificate (TLS 1.3, and 1.2 for older
/// clients), offering `alpn`.
pub fn server_acceptor(identity: &Arc<ReloadingIdentity>, alpn: &[&[u8]]) -> Result<TlsAcceptor> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(setup)?
        .with_no_client_auth()
        .with_cert_resolver(identity.clone());
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Mutual TLS between cluster members: each side presents its certificate and checks
/// that the other's was issued by the cluster's CA. Certificate, key and CA are reloaded
/// when their files change.
#[derive(Clone)]
pub struct ClusterTls {
    identity: Arc<ReloadingIdentity>,
    ca: Arc<ReloadingCa>,
    acceptor: TlsAcceptor,
    connector: TlsConnector,
}

impl std::fmt::Debug for ClusterTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterTls")
            .field("identity", &self.identity)
            .field("ca", &self.ca)
            .finish_non_exhaustive()
    }
}

impl ClusterTls {
    /// Loads and checks the files, and checks them again every `interval`. Must be
    /// called on a tokio runtime.
    pub fn load(identity: IdentityFiles, ca: PemFile, interval: Duration) -> Result<ClusterTls> {
        let identity = ReloadingIdentity::load(identity, interval)?;
        let ca = ReloadingCa::load(ca, interval)?;
        let server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(setup)?
            .with_client_cert_verifier(Arc::new(MemberClientVerifier(ca.clone())))
            .with_cert_resolver(identity.clone());
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(setup)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(MemberServerVerifier(ca.clone())))
            .with_client_cert_resolver(identity.clone());
        Ok(ClusterTls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
            identity,
            ca,
        })
    }

    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    pub fn connector(&self) -> &TlsConnector {
        &self.connector
    }

    pub fn identity(&self) -> &Arc<ReloadingIdentity> {
        &self.identity
    }
}

/// The name a member is dialled by: its address (members check the CA, not the name).
pub fn member_server_name(addr: SocketAddr) -> ServerName<'static> {
    ServerName::IpAddress(addr.ip().into())
}
