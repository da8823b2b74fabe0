//! When the partition takes snapshots: periodically, and on request, answering the
//! requester once a snapshot covers what was applied when it asked.

use std::time::{Duration, Instant};

use rill_protocol::PartitionId;
use rill_raft::Raft;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::error::{Error, Result};

pub(crate) struct Snapshots {
    /// When one was last triggered.
    last: Instant,
    waiters: Vec<oneshot::Sender<Result<()>>>,
    /// The applied index the waiters' snapshot must cover.
    target: u64,
}

impl Snapshots {
    pub(crate) fn new() -> Snapshots {
        Snapshots {
            last: Instant::now(),
            waiters: Vec::new(),
            target: 0,
        }
    }

    /// Whether the periodic snapshot is due (and it counts as taken from now).
    #[must_use]
    pub(crate) fn periodic_due(&mut self, period: Duration, now: Instant) -> bool {
        if now.saturating_duration_since(self.last) < period {
            return false;
        }
        self.last = now;
        true
    }

    /// A snapshot covering `applied_index` was asked for (trigger one next).
    pub(crate) fn request(&mut self, applied_index: u64, reply: oneshot::Sender<Result<()>>) {
        self.target = self.target.max(applied_index);
        self.waiters.push(reply);
        self.last = Instant::now();
    }

    /// Raft's snapshot is at `snapshot_index`: answer the waiters it covers.
    pub(crate) fn finish(&mut self, snapshot_index: u64) {
        if !self.waiters.is_empty() && snapshot_index >= self.target {
            for waiter in self.waiters.drain(..) {
                let _ = waiter.send(Ok(()));
            }
        }
    }

    /// Asks raft to build a snapshot now (and purge the log behind it).
    pub(crate) fn trigger(&self, raft: Option<&Raft>) {
        if let Some(raft) = raft.cloned() {
            let task = async move {
                if let Err(e) = raft.trigger().snapshot().await {
                    tracing::warn!(error = %e, "cannot trigger a snapshot");
                }
            };
            tokio::spawn(task.in_current_span());
        }
    }

    pub(crate) fn shut_down(&mut self, partition: PartitionId) {
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(Err(Error::ShuttingDown { partition }));
        }
    }
}
