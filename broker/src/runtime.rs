//! The two thread pools of a node, sized by `threads.*`:
//!
//! - `rill-cpu-N`: partition actors, raft cores and stream processing;
//! - `rill-io-N`: network, disk syncs (on its blocking pool) and exporters.
//!
//! Worker threads are named `rill-cpu-0`, `rill-cpu-1`, …; threads the runtime adds
//! later for blocking work are named `rill-cpu-bN` / `rill-io-bN`, so the worker count
//! can be checked by name. (Tokio starts all workers before any blocking thread, so the
//! first `threads` names go to the workers.)

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rill_config::ThreadsConfig;
use tokio::runtime::{Builder, Handle, Runtime};

use crate::error::{Error, Result};

/// The cpu and io runtimes of a node. Dropping it (or [`Runtimes::shutdown`]) stops both
/// and waits for their threads to end.
///
/// Waiting matters: tasks dropped at shutdown close RocksDB databases on these threads,
/// and a database still closing when the process exits aborts it (RocksDB's static
/// objects are destroyed under it: "pthread lock: Invalid argument").
pub struct Runtimes {
    cpu: Option<Runtime>,
    io: Option<Runtime>,
    cpu_handle: Handle,
    io_handle: Handle,
    id: usize,
}

/// How long shutdown waits for each runtime's threads (blocking work in flight, such as
/// a WAL sync or a snapshot being packed, runs to its end).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The id of the `Runtimes` whose thread this is (0: none).
    static OWNER: Cell<usize> = const { Cell::new(0) };
}

fn build(prefix: &'static str, workers: usize, owner: usize) -> Result<Runtime> {
    let counter = Arc::new(AtomicUsize::new(0));
    Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name_fn(move || {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            if n < workers {
                format!("{prefix}-{n}")
            } else {
                format!("{prefix}-b{}", n - workers)
            }
        })
        .on_thread_start(move || OWNER.with(|o| o.set(owner)))
        .enable_all()
        .build()
        .map_err(|source| Error::Runtime {
            what: prefix,
            source,
        })
}

impl Runtimes {
    pub fn new(threads: &ThreadsConfig) -> Result<Runtimes> {
        if threads.cpu_thread_count == 0 || threads.io_thread_count == 0 {
            return Err(Error::Config(
                "threads.cpu-thread-count and threads.io-thread-count must be at least 1".into(),
            ));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let cpu = build("rill-cpu", threads.cpu_thread_count, id)?;
        let io = build("rill-io", threads.io_thread_count, id)?;
        Ok(Runtimes {
            cpu_handle: cpu.handle().clone(),
            io_handle: io.handle().clone(),
            cpu: Some(cpu),
            io: Some(io),
            id,
        })
    }

    /// Where partition actors and raft run.
    pub fn cpu(&self) -> &Handle {
        &self.cpu_handle
    }

    /// Where network, disk syncs and exporters run.
    pub fn io(&self) -> &Handle {
        &self.io_handle
    }

    /// Stops both runtimes: their tasks are dropped (the cpu runtime's first, so what
    /// they hand to the io runtime on the way out still runs), then waits for their
    /// threads to end.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let runtimes: Vec<Runtime> = [self.cpu.take(), self.io.take()]
            .into_iter()
            .flatten()
            .collect();
        if runtimes.is_empty() {
            return;
        }
        if OWNER.with(Cell::get) == self.id {
            // On one of our own threads, which cannot wait for itself to end.
            tracing::warn!("runtimes dropped from their own thread; not waiting for them");
            runtimes.into_iter().for_each(Runtime::shutdown_background);
            return;
        }
        if Handle::try_current().is_err() {
            runtimes
                .into_iter()
                .for_each(|rt| rt.shutdown_timeout(SHUTDOWN_TIMEOUT));
            return;
        }
        // Inside another runtime (e.g. an async test), where tokio refuses to block:
        // wait from a thread of our own. Nothing on our runtimes waits for the caller's
        // runtime, so this cannot deadlock.
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Runtime>>();
        let waiter = std::thread::Builder::new()
            .name("rill-shutdown".into())
            .spawn(move || {
                if let Ok(runtimes) = rx.recv() {
                    runtimes
                        .into_iter()
                        .for_each(|rt| rt.shutdown_timeout(SHUTDOWN_TIMEOUT));
                }
            });
        match waiter {
            Ok(waiter) => {
                let _ = tx.send(runtimes);
                let _ = waiter.join();
            }
            Err(e) => {
                tracing::warn!(error = %e, "no thread to wait for the runtimes; not waiting");
                runtimes.into_iter().for_each(Runtime::shutdown_background);
            }
        }
    }
}

impl Drop for Runtimes {
    fn drop(&mut self) {
        self.stop();
    }
}
