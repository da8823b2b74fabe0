//! The contract between the partition core and an engine: the [`Engine`] trait, the
//! processing context and output, and ordered key-value state with no storage
//! dependency (the broker backs it with RocksDB; tests use [`MemoryState`]).

mod engine;
pub mod keys;
mod state;

pub use engine::{
    Action, CommandLimits, Engine, EngineError, EngineEvent, EngineResult, ProcessingContext,
    ProcessingError, ProcessingOutput, RequestId,
};
pub use state::{
    MemoryState, Overlay, ScanVisitor, StateError, StateRead, StateTxn, merge_scan, prefix_end,
    state_digest,
};
