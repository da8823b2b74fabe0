//! The on-disk layout of one partition: `log/`, `state/` and `snapshots/` under the
//! partition's directory (see docs/decisions/storage-layout.md).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::closing::AllClosed;
use crate::error::Result;
use crate::log_store::LogStore;
use crate::snapshot::SnapshotStore;
use crate::state_store::{StateOptions, StateStore};

/// Everything a partition keeps on disk, opened.
pub struct PartitionStorage {
    /// Failing disk writes of the log and the state machine (see `faults`).
    pub faults: crate::faults::WriteFaults,
    pub log: LogStore,
    pub state: Arc<StateStore>,
    pub snapshots: Arc<SnapshotStore>,
}

impl PartitionStorage {
    /// Opens (or creates) the partition's storage in `dir`. The log syncs appends on a
    /// thread of its own; vote writes and snapshot work run on `io`'s blocking pool. The
    /// state database uses what `state` shares between a broker's partitions.
    pub fn open(dir: &Path, io: Handle, state: &StateOptions) -> Result<PartitionStorage> {
        let log = LogStore::open(&dir.join("log"), io.clone())?;
        let state = Arc::new(StateStore::open_with(&dir.join("state"), state)?);
        let snapshots = Arc::new(SnapshotStore::open(&dir.join("snapshots"), io)?);
        Ok(PartitionStorage {
            faults: log.faults(),
            log,
            state,
            snapshots,
        })
    }

    /// Something to wait on until both databases are closed (after raft shut down and
    /// every handle was dropped, and RocksDB finished closing them), before the
    /// directory is opened again or the process exits.
    pub fn closed_signal(&self) -> ClosedSignal {
        ClosedSignal {
            log: self.log.closed_signal(),
            state: self.state.closed_signal(),
        }
    }
}

/// Tells when a partition's databases have been closed.
#[derive(Clone)]
pub struct ClosedSignal {
    log: AllClosed,
    state: AllClosed,
}

impl ClosedSignal {
    pub fn is_closed(&self) -> bool {
        self.log.is_closed() && self.state.is_closed()
    }

    /// Waits until both are closed.
    pub async fn closed(&self) {
        self.log.wait().await;
        self.state.wait().await;
    }

    /// Waits until closed, at most `timeout`. Returns whether it closed.
    #[must_use]
    pub async fn wait(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.closed()).await.is_ok()
    }
}
