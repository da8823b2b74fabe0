//! Knowing when a RocksDB database is really closed.
//!
//! A database closes when the last `Arc` to it is dropped, on whichever thread drops it,
//! and closing takes time (background jobs are waited for, files released). Watching the
//! `Arc`'s strong count is not enough: it reaches zero *before* the destructor runs, so a
//! waiter could reopen the directory (RocksDB refuses: "lock hold by current process")
//! or let the process exit (RocksDB's static objects are destroyed under a closing
//! database: "pthread lock: Invalid argument", SIGABRT) while the close is still going on.
//!
//! So every database holds an [`OpenToken`] declared after it: struct fields drop in
//! declaration order, so the token is released only once the database's destructor has
//! returned. [`OpenDatabases`] counts the tokens and [`AllClosed`] waits for zero.

use std::sync::Arc;
use tokio::sync::watch;

/// Counts the open databases of one store.
#[derive(Clone)]
pub(crate) struct OpenDatabases {
    count: Arc<watch::Sender<usize>>,
}

impl OpenDatabases {
    pub fn new() -> Self {
        OpenDatabases {
            count: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Registers one more open database; keep the token in a field declared after it.
    pub fn token(&self) -> OpenToken {
        self.count.send_modify(|n| *n += 1);
        OpenToken {
            count: self.count.clone(),
        }
    }

    pub fn all_closed(&self) -> AllClosed {
        AllClosed {
            count: self.count.subscribe(),
        }
    }
}

/// Held by an open database; released after the database has closed.
pub(crate) struct OpenToken {
    count: Arc<watch::Sender<usize>>,
}

impl Drop for OpenToken {
    fn drop(&mut self) {
        self.count.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Tells when every database of a store has been closed.
#[derive(Clone)]
pub struct AllClosed {
    count: watch::Receiver<usize>,
}

impl AllClosed {
    pub fn is_closed(&self) -> bool {
        *self.count.borrow() == 0
    }

    /// Waits until every database is closed.
    pub async fn wait(&self) {
        let mut count = self.count.clone();
        // An error means the counter itself is gone, which happens only after the last
        // token was released.
        let _ = count.wait_for(|n| *n == 0).await;
    }
}
