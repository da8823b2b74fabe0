//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong in an exporter. Transient trouble with Elasticsearch (down, slow,
/// 429, 5xx) is not an error: the exporter retries it. These are the things a retry
/// does not fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The exporter's configuration is unusable; every problem is listed.
    #[error("invalid configuration of the {exporter} exporter: {}", problems.join("; "))]
    Config {
        exporter: &'static str,
        problems: Vec<String>,
    },

    /// A call that needs `open` came first.
    #[error("the {exporter} exporter is not open")]
    NotOpen { exporter: &'static str },

    /// Elasticsearch refused a setup request (template, ILM policy) in a way a retry
    /// will not change, e.g. a malformed template or missing privileges.
    #[error("Elasticsearch refused {what}: HTTP {status}: {body}")]
    Refused {
        what: String,
        status: u16,
        body: String,
    },

    /// A file could not be opened, written or synced.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The Elasticsearch client could not be built (bad URL, unreadable certificate).
    #[error("cannot build the Elasticsearch client: {0}")]
    Client(String),

    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
