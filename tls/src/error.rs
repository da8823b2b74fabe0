//! What can be wrong with TLS material. Every error names the setting that points at the
//! file, so that an operator knows what to fix.

use std::path::PathBuf;

pub type Result<T, E = TlsError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{setting}: cannot read {}: {source}", path.display())]
    Read {
        setting: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{setting}: {} holds no usable PEM {what}: {reason}", path.display())]
    Pem {
        setting: String,
        path: PathBuf,
        what: &'static str,
        reason: String,
    },
    #[error(
        "{key_setting}: the private key in {} does not belong to the certificate in {} \
         ({certificate_setting}): {reason}",
        key_path.display(),
        certificate_path.display()
    )]
    KeyMismatch {
        key_setting: String,
        key_path: PathBuf,
        certificate_setting: String,
        certificate_path: PathBuf,
        reason: String,
    },
    #[error("{setting}: the certificate in {} expired on {not_after}", path.display())]
    Expired {
        setting: String,
        path: PathBuf,
        not_after: String,
    },
    #[error("{setting}: the certificate in {} is not valid before {not_before}", path.display())]
    NotYetValid {
        setting: String,
        path: PathBuf,
        not_before: String,
    },
    #[error("TLS setup: {0}")]
    Setup(String),
}
