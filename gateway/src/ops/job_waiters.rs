//! Where long-polling job activations wait for "jobs available" notifications.
//!
//! A notification wakes one waiting activation of its job type, the one waiting
//! longest, and that activation asks only the partition the notification came from.
//! Waking every waiter would send one activation command per waiter to that partition,
//! and all but the first would come back empty: each one an entry in the replicated log
//! that every replica applies, for nothing.
//!
//! No notification is lost while someone waits: an activation passes its wake on when
//! its batch came back full (more jobs may be left) and when it ends without having used
//! the wake (it found jobs elsewhere, failed, or the client went away).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use rill_protocol::PartitionId;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::oneshot;

use crate::backend::{GatewayBackend, JobsNotice};

/// Where a woken activation should look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Jobs became available on this partition.
    Partition(PartitionId),
    /// Notifications were missed: look everywhere.
    Everywhere,
}

/// The waiting activations of one gateway, by job type.
pub struct JobWaiters {
    backend: Arc<dyn GatewayBackend>,
    queues: Arc<Queues>,
    /// The task that turns the backend's notifications into wakes, started with the
    /// first registration (inside the runtime).
    pump: OnceLock<()>,
}

#[derive(Default)]
struct Queues {
    by_type: Mutex<HashMap<String, VecDeque<Waiter>>>,
    next_id: AtomicU64,
}

struct Waiter {
    id: u64,
    wake: oneshot::Sender<Wake>,
}

impl JobWaiters {
    pub fn new(backend: Arc<dyn GatewayBackend>) -> Self {
        JobWaiters {
            backend,
            queues: Arc::default(),
            pump: OnceLock::new(),
        }
    }

    /// Queues an activation for `job_type`. Register before polling the partitions, so
    /// a notification that arrives during the poll is kept for this activation.
    pub fn register(&self, job_type: &str) -> Registration {
        self.pump.get_or_init(|| {
            let notifications = self.backend.subscribe_jobs_available();
            tokio::spawn(pump(notifications, Arc::downgrade(&self.queues)));
        });
        let id = self.queues.next_id.fetch_add(1, Ordering::Relaxed);
        let (wake, woken) = oneshot::channel();
        self.queues
            .lock()
            .entry(job_type.to_owned())
            .or_default()
            .push_back(Waiter { id, wake });
        Registration {
            queues: self.queues.clone(),
            job_type: job_type.to_owned(),
            id,
            woken,
        }
    }

    /// Wakes the activation of `job_type` that has waited longest, if any.
    pub fn notify(&self, job_type: &str, wake: Wake) {
        self.queues.notify(job_type, wake);
    }
}

impl Queues {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, VecDeque<Waiter>>> {
        // A panic while holding this lock leaves the queues consistent (each change is a
        // single push, pop or removal), so a poisoned lock is still usable.
        self.by_type
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn notify(&self, job_type: &str, mut wake: Wake) {
        let mut by_type = self.lock();
        let Some(queue) = by_type.get_mut(job_type) else {
            return;
        };
        while let Some(waiter) = queue.pop_front() {
            match waiter.wake.send(wake) {
                Ok(()) => break,
                Err(unsent) => wake = unsent,
            }
        }
        if queue.is_empty() {
            by_type.remove(job_type);
        }
    }

    fn wake_all(&self) {
        for (_, queue) in self.lock().drain() {
            for waiter in queue {
                let _ = waiter.wake.send(Wake::Everywhere);
            }
        }
    }

    fn remove(&self, job_type: &str, id: u64) {
        let mut by_type = self.lock();
        if let Some(queue) = by_type.get_mut(job_type) {
            queue.retain(|waiter| waiter.id != id);
            if queue.is_empty() {
                by_type.remove(job_type);
            }
        }
    }
}

/// Hands the backend's notifications to the waiters, until the backend or the waiters
/// are gone.
async fn pump(mut notifications: broadcast::Receiver<JobsNotice>, queues: Weak<Queues>) {
    loop {
        let received = notifications.recv().await;
        let Some(queues) = queues.upgrade() else {
            return;
        };
        match received {
            Ok(JobsNotice::Available(note)) => {
                queues.notify(&note.job_type, Wake::Partition(note.partition))
            }
            Ok(JobsNotice::Missed) => {
                tracing::debug!(
                    "a broker dropped jobs-available notifications; waking every long poll"
                );
                queues.wake_all();
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(
                    missed,
                    "missed jobs-available notifications; waking every long poll"
                );
                queues.wake_all();
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// One activation's place in the queue of its job type.
pub struct Registration {
    queues: Arc<Queues>,
    job_type: String,
    id: u64,
    woken: oneshot::Receiver<Wake>,
}

impl Registration {
    /// Waits until this activation is woken. Pending forever once the waiters are gone
    /// (the caller also waits for its deadline).
    pub async fn woken(&mut self) -> Wake {
        match (&mut self.woken).await {
            Ok(wake) => wake,
            Err(_) => std::future::pending().await,
        }
    }
}

impl Drop for Registration {
    /// Leaves the queue, and passes on a wake that arrived but was not used.
    fn drop(&mut self) {
        self.queues.remove(&self.job_type, self.id);
        if let Ok(wake) = self.woken.try_recv() {
            self.queues.notify(&self.job_type, wake);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues() -> Arc<Queues> {
        Arc::default()
    }

    fn register(queues: &Arc<Queues>, job_type: &str) -> Registration {
        let id = queues.next_id.fetch_add(1, Ordering::Relaxed);
        let (wake, woken) = oneshot::channel();
        queues
            .lock()
            .entry(job_type.to_owned())
            .or_default()
            .push_back(Waiter { id, wake });
        Registration {
            queues: queues.clone(),
            job_type: job_type.to_owned(),
            id,
            woken,
        }
    }

    fn woken(registration: &mut Registration) -> Option<Wake> {
        registration.woken.try_recv().ok()
    }

    const P1: Wake = Wake::Partition(PartitionId(1));

    #[test]
    fn a_notification_wakes_only_the_longest_waiting_activation_of_its_type() {
        let queues = queues();
        let mut first = register(&queues, "payment");
        let mut second = register(&queues, "payment");
        let mut other = register(&queues, "shipping");
        queues.notify("payment", P1);
        assert_eq!(woken(&mut first), Some(P1));
        assert_eq!(woken(&mut second), None);
        assert_eq!(woken(&mut other), None);
        queues.notify("payment", P1);
        assert_eq!(woken(&mut second), Some(P1));
    }

    #[test]
    fn a_notification_without_waiters_is_dropped() {
        let queues = queues();
        queues.notify("payment", P1);
        let mut late = register(&queues, "payment");
        assert_eq!(woken(&mut late), None);
        assert!(queues.lock().contains_key("payment"));
        drop(late);
        assert!(
            queues.lock().is_empty(),
            "a dropped registration leaves the queue"
        );
    }

    #[test]
    fn an_unused_wake_passes_to_the_next_waiter_when_dropped() {
        let queues = queues();
        let first = register(&queues, "payment");
        let mut second = register(&queues, "payment");
        queues.notify("payment", P1);
        drop(first);
        assert_eq!(woken(&mut second), Some(P1));
    }

    #[test]
    fn a_dropped_waiter_is_never_woken_in_place_of_a_live_one() {
        let queues = queues();
        let gone = register(&queues, "payment");
        let mut live = register(&queues, "payment");
        drop(gone);
        queues.notify("payment", P1);
        assert_eq!(woken(&mut live), Some(P1));
    }

    #[test]
    fn missed_notifications_wake_everyone_to_look_everywhere() {
        let queues = queues();
        let mut a = register(&queues, "payment");
        let mut b = register(&queues, "shipping");
        queues.wake_all();
        assert_eq!(woken(&mut a), Some(Wake::Everywhere));
        assert_eq!(woken(&mut b), Some(Wake::Everywhere));
    }
}
