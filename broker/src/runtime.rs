//! The two thread pools of a node, sized by `threads.*`:
//!
//! - `rill-cpu-N`: partition actors, raft cores and stream processing;
//! - `rill-io-N`: network, disk syncs (on its blocking pool) and exporters.
//!
//! Worker threads are named `rill-cpu-0`, `rill-cpu-1`, …; threads the runtime adds
//! later for blocking work are named `rill-cpu-bN` / `rill-io-bN`, so the worker count
//! can be checked by name. (Tokio starts all workers before any blocking thread, so the
//! first `threads` names go to the workers.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rill_config::ThreadsConfig;
use tokio::runtime::{Builder, Handle, Runtime};

use crate::error::{Error, Result};

/// The cpu and io runtimes of a node. Dropping it shuts both down without waiting.
pub struct Runtimes {
    cpu: Option<Runtime>,
    io: Option<Runtime>,
    cpu_handle: Handle,
    io_handle: Handle,
}

fn build(prefix: &'static str, workers: usize) -> Result<Runtime> {
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
        let cpu = build("rill-cpu", threads.cpu_thread_count)?;
        let io = build("rill-io", threads.io_thread_count)?;
        Ok(Runtimes {
            cpu_handle: cpu.handle().clone(),
            io_handle: io.handle().clone(),
            cpu: Some(cpu),
            io: Some(io),
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
}

impl Drop for Runtimes {
    fn drop(&mut self) {
        // `shutdown_background` works from inside an async context too.
        if let Some(rt) = self.cpu.take() {
            rt.shutdown_background();
        }
        if let Some(rt) = self.io.take() {
            rt.shutdown_background();
        }
    }
}
