//! How an S3 request failed, and S3's own error documents.

use super::child_text;

/// A request that failed: what was asked (the operation and `s3://bucket/key`) and how.
#[derive(Debug)]
pub(super) struct S3Error {
    pub(super) what: String,
    pub(super) failure: Failure,
    /// S3 or the network failed on its side: worth another try.
    pub(super) retry: bool,
}

#[derive(Debug)]
pub(super) enum Failure {
    NoCredentials,
    Unreachable(String),
    Transport(String),
    /// S3 answered with an error: its HTTP status, error code and message.
    Answer {
        status: u16,
        code: String,
        message: String,
    },
}

impl S3Error {
    /// S3's error code, `Unreachable` when the endpoint was not reached.
    pub(super) fn code(&self) -> &str {
        match &self.failure {
            Failure::NoCredentials => "NoCredentials",
            Failure::Unreachable(_) => "Unreachable",
            Failure::Transport(_) => "Transport",
            Failure::Answer { code, .. } => code,
        }
    }

    pub(super) fn is_not_found(&self) -> bool {
        matches!(&self.failure, Failure::Answer { status: 404, code, .. } if code != "NoSuchBucket")
    }
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = &self.what;
        match &self.failure {
            Failure::NoCredentials => write!(f, "{what}: no credentials"),
            Failure::Unreachable(detail) | Failure::Transport(detail) => {
                write!(f, "{what}: {detail}")
            }
            Failure::Answer {
                status,
                code,
                message,
            } if message.is_empty() => write!(f, "{what}: {code} ({status})"),
            Failure::Answer {
                status,
                code,
                message,
            } => write!(f, "{what}: {code} ({status}): {message}"),
        }
    }
}

impl From<S3Error> for String {
    fn from(error: S3Error) -> String {
        error.to_string()
    }
}

/// S3's `<Error><Code>..</Code><Message>..</Message></Error>`, if the body is one.
pub(super) fn error_of(body: &[u8]) -> (String, String) {
    let Ok(text) = std::str::from_utf8(body) else {
        return (String::new(), String::new());
    };
    let Ok(document) = roxmltree::Document::parse(text) else {
        return (String::new(), String::new());
    };
    let root = document.root_element();
    if root.tag_name().name() != "Error" {
        return (String::new(), String::new());
    }
    (
        child_text(root, "Code").unwrap_or_default(),
        child_text(root, "Message").unwrap_or_default(),
    )
}
