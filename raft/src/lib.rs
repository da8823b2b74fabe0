//! Raft for Rill's partitions, on openraft 0.9: the RocksDB log, the state database and
//! its snapshots, a state-machine adapter that hands committed entries to the partition
//! in batches, and the raft network over bytes.
//!
//! This crate knows nothing about commands or engines: a log entry is opaque bytes.

mod archive;
mod closing;
mod config;
mod error;
mod faults;
mod log_store;
mod network;
mod snapshot;
mod state_machine;
mod state_store;
mod storage;
mod types;

pub use closing::AllClosed;
pub use config::{leader_lease, openraft_config};
pub use error::{Error, Result};
pub use faults::WriteFaults;
pub use log_store::{LogReader, LogStats, LogStore};
pub use network::{
    BetterLog, NetworkFactory, PeerClient, RaftRpcKind, RaftService, RaftTransport, StorageGate,
    TransportFailure,
};
pub use snapshot::{SnapshotFile, SnapshotStore};
pub use state_machine::{
    ApplyBatch, ApplyHandler, CommittedEntry, PartitionStateMachine, SnapshotBuilder,
};
pub use state_store::{
    CF_EXPORT, CF_HISTORY, DEFAULT_STATE_CACHE_SIZE, KEY_APPLIED, KEY_MEMBERSHIP, StateDb,
    StateOptions, StateStore, put_applied,
};
pub use storage::{ClosedSignal, PartitionStorage};
pub use types::{
    Entry, EntryData, EntryResponse, LogId, Raft, RaftMetrics, RaftNodeId, RaftTerm, Snapshot,
    SnapshotMeta, StorageError, StoredMembership, TypeConfig, Vote, log_id,
};

/// openraft itself, for the types this crate does not rename.
pub use openraft;
