//! Certificates made on the fly for tests (feature `testing`): a CA, certificates it
//! issues (valid now, expired or not yet valid), written to PEM files.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A certificate authority.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// A certificate with its private key, as PEM text.
#[derive(Clone, Debug)]
pub struct TestIdentity {
    pub certificate_pem: String,
    pub private_key_pem: String,
}

/// When a certificate is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validity {
    Now,
    Expired,
    NotYetValid,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("CA key");
        let certificate = params.self_signed(&key).expect("self-signed CA");
        TestCa {
            pem: certificate.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A certificate for `names` (DNS names or IP addresses), for servers and clients.
    pub fn issue(&self, names: &[&str]) -> TestIdentity {
        self.issue_with(names, Validity::Now)
    }

    pub fn issue_with(&self, names: &[&str], validity: Validity) -> TestIdentity {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("certificate parameters");
        params.distinguished_name.push(
            DnType::CommonName,
            names.first().cloned().unwrap_or_default(),
        );
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        match validity {
            Validity::Now => {}
            Validity::Expired => {
                params.not_before = rcgen::date_time_ymd(2001, 1, 1);
                params.not_after = rcgen::date_time_ymd(2002, 1, 1);
            }
            Validity::NotYetValid => {
                params.not_before = rcgen::date_time_ymd(2090, 1, 1);
                params.not_after = rcgen::date_time_ymd(2091, 1, 1);
            }
        }
        let key = KeyPair::generate().expect("key");
        let certificate = params.signed_by(&key, &self.issuer).expect("signed");
        TestIdentity {
            certificate_pem: certificate.pem(),
            private_key_pem: key.serialize_pem(),
        }
    }

    /// Writes the CA certificate to `dir/NAME`; returns its path.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, &self.pem).expect("write CA");
        path
    }
}

impl TestIdentity {
    /// Writes `dir/STEM.crt` and `dir/STEM.key` (replacing them atomically, as a
    /// rotation does); returns their paths.
    pub fn write(&self, dir: &Path, stem: &str) -> (PathBuf, PathBuf) {
        let certificate = dir.join(format!("{stem}.crt"));
        let key = dir.join(format!("{stem}.key"));
        replace(&certificate, &self.certificate_pem);
        replace(&key, &self.private_key_pem);
        (certificate, key)
    }
}

/// Writes `path` through a temporary file and a rename.
pub fn replace(path: &Path, contents: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, contents).expect("write");
    std::fs::rename(&temporary, path).expect("rename");
}
