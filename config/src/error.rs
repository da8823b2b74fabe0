//! The crate's one error type, and the problem records it carries.

use std::fmt;
use std::path::PathBuf;

pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read configuration file {path}: {source}")]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },

    /// The TOML file does not parse, or holds an unknown key or a value of the wrong type.
    #[error("configuration file {origin}{}: {message}", location(*line, key))]
    File {
        origin: String,
        line: Option<usize>,
        /// The dotted key on that line (`raft.heartbeat-interval`), or the `[section]`
        /// header when the line is one.
        key: Option<String>,
        message: String,
    },

    /// Environment variables or command-line overrides that name unknown options or hold
    /// values that do not parse; all of them, not just the first.
    #[error("{}", bullet_list(problems))]
    Sources { problems: Vec<SourceProblem> },

    /// What `validate` found; all of it, not just the first.
    #[error("invalid configuration:\n{}", bullet_list(problems))]
    Invalid { problems: Vec<Problem> },

    #[error("cannot render the configuration as TOML: {0}")]
    Render(String),
}

fn location(line: Option<usize>, key: &Option<String>) -> String {
    match (line, key) {
        (Some(line), Some(key)) => format!(", line {line}, `{key}`"),
        (Some(line), None) => format!(", line {line}"),
        (None, _) => String::new(),
    }
}

fn bullet_list<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(|item| format!("  - {item}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A bad environment variable or override.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceProblem {
    /// Where it came from: `environment variable RILL_CLUSTER__NODE_ID` or
    /// `override "cluster.size=x"`.
    pub origin: String,
    pub message: String,
}

impl fmt::Display for SourceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// One thing `validate` found wrong, with what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The option at fault, e.g. `cluster.replication-factor`.
    pub path: String,
    pub message: String,
    pub fix: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}. Fix: {}", self.path, self.message, self.fix)
    }
}
