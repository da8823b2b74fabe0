//! Timing for the micro-benchmarks (`feel-bench`, `dmn-bench`): calls per wall second
//! and per CPU second of the calling thread.

use std::time::{Duration, Instant};

/// CPU time this thread has used (Linux `/proc/thread-self/stat`, user + system, in
/// clock ticks of 10 ms), if available. On a shared, loaded machine, rates per CPU
/// second are steadier than per wall second.
pub fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start with the state.
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / 100.0)
}

/// Runs `f` repeatedly for about `budget` of wall time; returns calls per wall second
/// and per CPU second.
pub fn rate(budget: Duration, mut f: impl FnMut()) -> (f64, Option<f64>) {
    // Warm up caches and the allocator first.
    for _ in 0..1_000 {
        f();
    }
    let start = Instant::now();
    let cpu_start = thread_cpu_seconds();
    let mut calls = 0u64;
    while start.elapsed() < budget {
        for _ in 0..1_000 {
            f();
        }
        calls += 1_000;
    }
    let wall = calls as f64 / start.elapsed().as_secs_f64();
    let cpu = match (cpu_start, thread_cpu_seconds()) {
        (Some(before), Some(after)) if after > before => Some(calls as f64 / (after - before)),
        _ => None,
    };
    (wall, cpu)
}
