//! The one error type of this crate.

use std::path::PathBuf;

use rill_protocol::CodecError;

use crate::types::StorageError;

/// What went wrong in the raft log, the state store, snapshots or the network.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("rocksdb failed to {action}: {source}")]
    Rocks {
        action: &'static str,
        #[source]
        source: rocksdb::Error,
    },
    #[error("i/o error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corrupt {what}: {reason}")]
    Corrupt { what: String, reason: String },
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("invalid raft configuration: {0}")]
    Config(String),
    #[error("background task failed: {0}")]
    Task(String),
    #[error("the state machine handler failed: {0}")]
    Handler(String),
    /// The handler could not write an applied batch to disk (an I/O error, such as a
    /// full disk); nothing of it was written, and it is applied again.
    #[error("cannot write to disk: {0}")]
    DiskWrite(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn rocks(action: &'static str) -> impl FnOnce(rocksdb::Error) -> Error {
        move |source| Error::Rocks { action, source }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }

    /// An I/O error of a write that may succeed when tried again (a full disk, a
    /// transient device error): RocksDB recovers from it in the background.
    pub fn is_retryable_write_failure(&self) -> bool {
        match self {
            Error::Rocks { source, .. } => matches!(
                source.kind(),
                rocksdb::ErrorKind::IOError
                    | rocksdb::ErrorKind::Busy
                    | rocksdb::ErrorKind::TryAgain
                    | rocksdb::ErrorKind::Incomplete
            ),
            Error::Io { .. } | Error::DiskWrite(_) => true,
            _ => false,
        }
    }

    pub(crate) fn corrupt(what: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            what: what.into(),
            reason: reason.into(),
        }
    }
}

/// openraft wants its own storage error, tagged with what was being done.
pub(crate) mod storage {
    use openraft::StorageIOError;

    use super::*;

    pub fn read_logs(e: Error) -> StorageError {
        StorageIOError::read_logs(&e).into()
    }
    pub fn write_logs(e: Error) -> StorageError {
        StorageIOError::write_logs(&e).into()
    }
    pub fn read_vote(e: Error) -> StorageError {
        StorageIOError::read_vote(&e).into()
    }
    pub fn write_vote(e: Error) -> StorageError {
        StorageIOError::write_vote(&e).into()
    }
    pub fn read_sm(e: Error) -> StorageError {
        StorageIOError::read_state_machine(&e).into()
    }
    pub fn write_sm(e: Error) -> StorageError {
        StorageIOError::write_state_machine(&e).into()
    }
    pub fn read_snapshot(e: Error) -> StorageError {
        StorageIOError::read_snapshot(None, &e).into()
    }
    pub fn write_snapshot(e: Error) -> StorageError {
        StorageIOError::write_snapshot(None, &e).into()
    }
}
