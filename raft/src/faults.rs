//! Disk writes that fail with an I/O error (a full disk above all) are retried with a
//! backoff instead of being handed to openraft as a storage error: openraft 0.9 stops a
//! raft group for good on one (docs/decisions/disk-full.md). RocksDB itself recovers
//! from such an error in the background once the disk has room again, and the next
//! attempt then succeeds.
//!
//! While a write fails, [`WriteFaults`] says which and why, so that the partition stops
//! taking commands and reports itself unhealthy until it succeeds.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};

/// First wait before a failed write is tried again; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The failing disk writes of one partition. Cheap to clone; clones share it.
#[derive(Clone, Default)]
pub struct WriteFaults(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// What failed, by the action that is being retried.
    failing: parking_lot::Mutex<BTreeMap<&'static str, String>>,
    /// The partition shuts down: retrying stops, and the last error is returned.
    closing: AtomicBool,
    /// Attempts that failed and were retried, since the store was opened.
    retries: AtomicU64,
}

impl WriteFaults {
    /// The first failing write and its error, while any write fails.
    pub fn failing(&self) -> Option<String> {
        self.0
            .failing
            .lock()
            .iter()
            .next()
            .map(|(action, error)| format!("cannot {action}: {error}"))
    }

    /// Failed attempts retried so far.
    pub fn retries(&self) -> u64 {
        self.0.retries.load(Ordering::Relaxed)
    }

    /// Stops retrying: a write that still fails returns its error (to a raft that is
    /// shutting down anyway).
    pub fn close(&self) {
        self.0.closing.store(true, Ordering::Release);
    }

    fn is_closing(&self) -> bool {
        self.0.closing.load(Ordering::Acquire)
    }

    /// Whether `error` of `action` is worth retrying; if so it is recorded as failing.
    fn failed(&self, action: &'static str, error: &Error) -> bool {
        if !error.is_retryable_write_failure() || self.is_closing() {
            return false;
        }
        let retries = self.0.retries.fetch_add(1, Ordering::Relaxed);
        let first = self
            .0
            .failing
            .lock()
            .insert(action, error.to_string())
            .is_none();
        if first {
            tracing::error!(%error, "cannot {action}; retrying until the disk takes writes again");
        } else if retries.is_multiple_of(100) {
            tracing::warn!(%error, retries, "still cannot {action}");
        }
        true
    }

    fn succeeded(&self, action: &'static str) {
        if self.0.failing.lock().remove(action).is_some() {
            tracing::info!("{action}: the disk takes writes again");
        }
    }

    /// Runs `write` until it succeeds, waiting between attempts. An error that is not an
    /// I/O error, or any error once closing, is returned as it is.
    pub(crate) async fn retry<T, F>(
        &self,
        action: &'static str,
        mut write: impl FnMut() -> F,
    ) -> Result<T>
    where
        F: Future<Output = Result<T>>,
    {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match write().await {
                Ok(value) => {
                    self.succeeded(action);
                    return Ok(value);
                }
                Err(e) if self.failed(action, &e) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// [`WriteFaults::retry`] on a thread of its own (the log-sync thread).
    pub(crate) fn retry_blocking<T>(
        &self,
        action: &'static str,
        mut write: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match write() {
                Ok(value) => {
                    self.succeeded(action);
                    return Ok(value);
                }
                Err(e) if self.failed(action, &e) => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk_full() -> Error {
        Error::Io {
            path: "/data".into(),
            source: std::io::Error::from_raw_os_error(28),
        }
    }

    #[tokio::test]
    async fn an_io_error_is_retried_and_reported_until_the_write_succeeds() {
        let faults = WriteFaults::default();
        let attempts = std::sync::atomic::AtomicU32::new(0);
        let seen = faults.clone();
        let result = faults
            .retry("append log entries", || {
                let attempt = attempts.fetch_add(1, Ordering::SeqCst);
                let failing = seen.failing();
                async move {
                    if attempt > 0 {
                        let failing = failing.expect("reported while failing");
                        assert!(failing.contains("append log entries"), "{failing}");
                    }
                    if attempt < 3 {
                        Err(disk_full())
                    } else {
                        Ok(attempt)
                    }
                }
            })
            .await
            .expect("succeeds in the end");
        assert_eq!(result, 3);
        assert_eq!(faults.retries(), 3);
        assert_eq!(faults.failing(), None, "healthy again");
    }

    #[tokio::test]
    async fn other_errors_and_errors_while_closing_are_returned_at_once() {
        let faults = WriteFaults::default();
        let corrupt = faults
            .retry("read", || async {
                Err::<(), _>(Error::corrupt("raft log", "bad entry"))
            })
            .await;
        assert!(matches!(corrupt, Err(Error::Corrupt { .. })));
        faults.close();
        let closing = faults
            .retry("append log entries", || async { Err::<(), _>(disk_full()) })
            .await;
        assert!(matches!(closing, Err(Error::Io { .. })));
        assert_eq!(faults.retries(), 0);
        assert_eq!(faults.failing(), None);
    }
}
