//! Certificates that follow their files: cert-manager (or an operator) replaces the files
//! of a running process, and the next handshake uses the new ones. Connections already
//! open keep the certificate they were made with. A new file that does not load keeps the
//! old certificate in use, and the error is logged once per change, naming the setting.
//!
//! Files are polled (read and compared) rather than watched, so that a Kubernetes
//! Secret's symlink swap, an editor's rename and a copy in place are all seen alike.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustls::RootCertStore;
use rustls::client::ResolvesClientCert;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{SignatureScheme, client::danger, server::danger as server_danger};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tracing::{error, info};

use crate::material::{IdentityBytes, IdentityFiles, PemFile, parse_ca, provider};
use crate::{Result, TlsError};

/// How often certificate files are checked for a change, unless told otherwise.
pub const DEFAULT_RELOAD_INTERVAL: Duration = Duration::from_secs(5);

/// Something whose files are checked for changes by [`watch`].
trait Reload: Send + Sync + 'static {
    fn reload(&self);
}

/// Checks `target`'s files every `interval` until it is dropped. Must be called on a
/// tokio runtime.
fn watch<T: Reload>(target: &Arc<T>, interval: Duration) {
    let weak: Weak<T> = Arc::downgrade(target);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let Some(target) = weak.upgrade() else { return };
            // Reading files blocks; it is small and rare, but keep it off the workers.
            let _ = tokio::task::spawn_blocking(move || target.reload()).await;
        }
    });
}

/// A certificate chain and key, served to TLS peers, that is replaced when its files
/// change.
pub struct ReloadingIdentity {
    files: IdentityFiles,
    current: RwLock<Arc<CertifiedKey>>,
    /// The file contents last looked at (loaded or refused), so a bad file is reported
    /// once, not on every poll.
    seen: Mutex<IdentityBytes>,
}

impl std::fmt::Debug for ReloadingIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingIdentity")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ReloadingIdentity {
    /// Loads and checks the files; checks them again every `interval` (on the current
    /// tokio runtime).
    pub fn load(files: IdentityFiles, interval: Duration) -> Result<Arc<ReloadingIdentity>> {
        let bytes = files.read()?;
        let current = files.parse(&bytes)?;
        let identity = Arc::new(ReloadingIdentity {
            files,
            current: RwLock::new(current),
            seen: Mutex::new(bytes),
        });
        watch(&identity, interval);
        Ok(identity)
    }

    /// The certificate chain and key in use now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current.read().clone()
    }

    pub fn files(&self) -> &IdentityFiles {
        &self.files
    }
}

impl Reload for ReloadingIdentity {
    fn reload(&self) {
        let bytes = match self.files.read() {
            Ok(bytes) => bytes,
            Err(error) => {
                // A file briefly missing while it is swapped is normal; report only if it
                // stays so (the contents seen change to empty, so it is logged once).
                let mut seen = self.seen.lock();
                if !seen.0.is_empty() || !seen.1.is_empty() {
                    *seen = (Vec::new(), Vec::new());
                    error!(%error, "cannot reload the TLS certificate; the previous one stays in use");
                }
                return;
            }
        };
        let mut seen = self.seen.lock();
        if *seen == bytes {
            return;
        }
        match self.files.parse(&bytes) {
            Ok(loaded) => {
                *self.current.write() = loaded;
                info!(
                    certificate = %self.files.certificate.path.display(),
                    "reloaded the TLS certificate ({})",
                    self.files.certificate.setting
                );
            }
            Err(error) => {
                error!(%error, "cannot reload the TLS certificate; the previous one stays in use");
            }
        }
        *seen = bytes;
    }
}

impl ResolvesServerCert for ReloadingIdentity {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

impl ResolvesClientCert for ReloadingIdentity {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// What a CA file turns into: the verifiers of both directions of mutual TLS.
struct CaVerifiers {
    clients: Arc<dyn server_danger::ClientCertVerifier>,
    servers: Arc<rustls::client::WebPkiServerVerifier>,
}

fn verifiers(roots: Arc<RootCertStore>, file: &PemFile) -> Result<CaVerifiers> {
    let setup = |e: &dyn std::fmt::Display| {
        TlsError::Setup(format!("{} ({}): {e}", file.setting, file.path.display()))
    };
    let clients =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .map_err(|e| setup(&e))?;
    let servers = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider())
        .build()
        .map_err(|e| setup(&e))?;
    Ok(CaVerifiers { clients, servers })
}

/// The certificate authority of mutual TLS between cluster members, replaced when its
/// file changes. Both sides verify the other's certificate against it.
pub struct ReloadingCa {
    file: PemFile,
    current: RwLock<Arc<CaVerifiers>>,
    seen: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for ReloadingCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingCa")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl ReloadingCa {
    pub fn load(file: PemFile, interval: Duration) -> Result<Arc<ReloadingCa>> {
        let bytes = file.read()?;
        let current = verifiers(parse_ca(&file, &bytes)?, &file)?;
        let ca = Arc::new(ReloadingCa {
            file,
            current: RwLock::new(Arc::new(current)),
            seen: Mutex::new(bytes),
        });
        watch(&ca, interval);
        Ok(ca)
    }

    fn current(&self) -> Arc<CaVerifiers> {
        self.current.read().clone()
    }
}

impl Reload for ReloadingCa {
    fn reload(&self) {
        let bytes = match self.file.read() {
            Ok(bytes) => bytes,
            Err(error) => {
                let mut seen = self.seen.lock();
                if !seen.is_empty() {
                    seen.clear();
                    error!(%error, "cannot reload the TLS CA; the previous one stays in use");
                }
                return;
            }
        };
        let mut seen = self.seen.lock();
        if *seen == bytes {
            return;
        }
        match parse_ca(&self.file, &bytes).and_then(|roots| verifiers(roots, &self.file)) {
            Ok(loaded) => {
                *self.current.write() = Arc::new(loaded);
                info!(
                    ca = %self.file.path.display(),
                    "reloaded the TLS CA ({})", self.file.setting
                );
            }
            Err(error) => {
                error!(%error, "cannot reload the TLS CA; the previous one stays in use");
            }
        }
        *seen = bytes;
    }
}

/// Verifies a connecting cluster member's certificate against the current CA.
#[derive(Debug)]
pub(crate) struct MemberClientVerifier(pub Arc<ReloadingCa>);

impl server_danger::ClientCertVerifier for MemberClientVerifier {
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        // Hints are optional; members present their one certificate regardless.
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> std::result::Result<server_danger::ClientCertVerified, rustls::Error> {
        self.0
            .current()
            .clients
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<danger::HandshakeSignatureValid, rustls::Error> {
        self.0
            .current()
            .clients
            .verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<danger::HandshakeSignatureValid, rustls::Error> {
        self.0
            .current()
            .clients
            .verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.current().clients.supported_verify_schemes()
    }
}

/// Verifies the certificate of the member this node connects to against the current CA.
///
/// The chain must lead to the cluster's CA; the host name is not compared. Members are
/// dialled by addresses that change (pod IPs, a rescheduled broker), and what makes a
/// peer a member is a certificate from the cluster's own CA, which is why that CA must
/// sign nothing but the cluster's certificates (see docs/security.md).
#[derive(Debug)]
pub(crate) struct MemberServerVerifier(pub Arc<ReloadingCa>);

impl danger::ServerCertVerifier for MemberServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<danger::ServerCertVerified, rustls::Error> {
        let verified = self.0.current().servers.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
            // webpki checks the chain before the name: a name mismatch means the chain
            // leads to the cluster CA.
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<danger::HandshakeSignatureValid, rustls::Error> {
        self.0
            .current()
            .servers
            .verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<danger::HandshakeSignatureValid, rustls::Error> {
        self.0
            .current()
            .servers
            .verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.current().servers.supported_verify_schemes()
    }
}
