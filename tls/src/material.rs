//! Loading PEM files into what rustls uses, with the checks an operator needs at start: the
//! file is there, parses, the key belongs to the certificate, and the certificate is valid
//! now.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};

use crate::validity::{show, validity};
use crate::{Result, TlsError};

/// A PEM file and the setting that names it (`gateway.tls.certificate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PemFile {
    pub setting: String,
    pub path: PathBuf,
}

impl PemFile {
    pub fn new(setting: impl Into<String>, path: impl Into<PathBuf>) -> PemFile {
        PemFile {
            setting: setting.into(),
            path: path.into(),
        }
    }

    pub(crate) fn read(&self) -> Result<Vec<u8>> {
        std::fs::read(&self.path).map_err(|source| TlsError::Read {
            setting: self.setting.clone(),
            path: self.path.clone(),
            source,
        })
    }

    fn pem_error(&self, what: &'static str, reason: impl ToString) -> TlsError {
        TlsError::Pem {
            setting: self.setting.clone(),
            path: self.path.clone(),
            what,
            reason: reason.to_string(),
        }
    }
}

/// A certificate chain (end entity first) and its private key, as PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityFiles {
    pub certificate: PemFile,
    pub private_key: PemFile,
}

/// The contents of an identity's files, compared between polls to see a change.
pub(crate) type IdentityBytes = (Vec<u8>, Vec<u8>);

impl IdentityFiles {
    /// `SECTION.certificate` and `SECTION.private-key` for a settings section such as
    /// `gateway.tls`.
    pub fn new(
        section: &str,
        certificate: impl Into<PathBuf>,
        private_key: impl Into<PathBuf>,
    ) -> IdentityFiles {
        IdentityFiles {
            certificate: PemFile::new(format!("{section}.certificate"), certificate),
            private_key: PemFile::new(format!("{section}.private-key"), private_key),
        }
    }

    pub(crate) fn read(&self) -> Result<IdentityBytes> {
        Ok((self.certificate.read()?, self.private_key.read()?))
    }

    /// Parses and checks what [`IdentityFiles::read`] returned.
    pub(crate) fn parse(&self, bytes: &IdentityBytes) -> Result<Arc<CertifiedKey>> {
        let (certificate_pem, key_pem) = bytes;
        let chain = certificates(&self.certificate, certificate_pem)?;
        check_validity(&self.certificate, &chain[0])?;
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| self.private_key.pem_error("private key", pem_reason(e)))?;
        let signing_key = provider()
            .key_provider
            .load_private_key(key)
            .map_err(|e| self.private_key.pem_error("private key", e))?;
        let certified = CertifiedKey::new(chain, signing_key);
        certified
            .keys_match()
            .map_err(|e| self.mismatch(e.to_string()))?;
        Ok(Arc::new(certified))
    }

    fn mismatch(&self, reason: String) -> TlsError {
        TlsError::KeyMismatch {
            key_setting: self.private_key.setting.clone(),
            key_path: self.private_key.path.clone(),
            certificate_setting: self.certificate.setting.clone(),
            certificate_path: self.certificate.path.clone(),
            reason,
        }
    }
}

/// Every certificate of a PEM file, in order; at least one.
fn certificates(file: &PemFile, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| file.pem_error("certificate", pem_reason(e)))?;
    if chain.is_empty() {
        return Err(file.pem_error(
            "certificate",
            "no -----BEGIN CERTIFICATE----- section found",
        ));
    }
    for certificate in &chain {
        validity(certificate).map_err(|e| {
            file.pem_error("certificate", format!("not an X.509 certificate ({e})"))
        })?;
    }
    Ok(chain)
}

/// Certificate authorities to trust, from a PEM file of one or more certificates.
pub(crate) fn parse_ca(file: &PemFile, pem: &[u8]) -> Result<Arc<RootCertStore>> {
    let mut roots = RootCertStore::empty();
    for certificate in certificates(file, pem)? {
        check_validity(file, &certificate)?;
        roots
            .add(certificate)
            .map_err(|e| file.pem_error("CA certificate", e))?;
    }
    Ok(Arc::new(roots))
}

fn pem_reason(error: rustls_pki_types::pem::Error) -> String {
    match error {
        rustls_pki_types::pem::Error::NoItemsFound => {
            "no PEM section of that kind found".to_owned()
        }
        other => other.to_string(),
    }
}

/// Refuses a certificate that is expired or not yet valid now.
fn check_validity(file: &PemFile, certificate: &CertificateDer<'_>) -> Result<()> {
    let validity = validity(certificate)
        .map_err(|e| file.pem_error("certificate", format!("not an X.509 certificate ({e})")))?;
    let now = i64::try_from(UnixTime::now().as_secs()).unwrap_or(i64::MAX);
    if now < validity.not_before {
        return Err(TlsError::NotYetValid {
            setting: file.setting.clone(),
            path: file.path.clone(),
            not_before: show(validity.not_before),
        });
    }
    if now > validity.not_after {
        return Err(TlsError::Expired {
            setting: file.setting.clone(),
            path: file.path.clone(),
            not_after: show(validity.not_after),
        });
    }
    Ok(())
}

/// The crypto Rill uses everywhere: ring, as reqwest's rustls does (no aws-lc build).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads a CA file for a client (the `rill` CLI, tests): the certificates to trust.
pub fn load_ca(file: &PemFile) -> Result<Arc<RootCertStore>> {
    parse_ca(file, &file.read()?)
}
