//! How long parsing and validating the sample models takes, FEEL compilation included.
//!
//! `cargo run --release -p rill-engine --example parse_speed`
//!
//! Prints the wall time and, on Linux, the thread's on-CPU time per parse: on a shared
//! machine the wall time also counts the time other processes had the core.

use std::time::{Duration, Instant};

const SAMPLES: [&str; 4] = [
    "two-rest-calls.bpmn",
    "order-fulfilment.bpmn",
    "payment-retry.bpmn",
    "wait-timer.bpmn",
];

/// Nanoseconds this thread has run on a CPU (Linux), if the kernel tells.
fn cpu_nanos() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Mean wall and on-CPU time of `run`, repeated for about half a second after a warm-up.
fn time(mut run: impl FnMut() -> bool) -> (Duration, Option<Duration>) {
    for _ in 0..200 {
        std::hint::black_box(run());
    }
    let cpu_start = cpu_nanos();
    let started = Instant::now();
    let mut runs = 0u32;
    while started.elapsed() < Duration::from_millis(500) {
        for _ in 0..100 {
            std::hint::black_box(run());
        }
        runs += 100;
    }
    let wall = started.elapsed() / runs;
    let cpu = match (cpu_start, cpu_nanos()) {
        (Some(start), Some(end)) => Some(Duration::from_nanos(end.saturating_sub(start)) / runs),
        _ => None,
    };
    (wall, cpu)
}

fn micros(duration: Option<Duration>) -> String {
    duration.map_or("-".to_owned(), |d| format!("{:.1}", d.as_secs_f64() * 1e6))
}

fn main() {
    for sample in SAMPLES {
        let path = format!("{}/../examples/{sample}", env!("CARGO_MANIFEST_DIR"));
        let xml = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        if let Err(error) = rill_engine::parse_bpmn(sample, &xml) {
            println!("{sample}: rejected\n{error}");
            continue;
        }
        let per_parse = time(|| rill_engine::parse_bpmn(sample, &xml).is_ok());
        // The XML parse alone, for comparison: the rest is model building and validation.
        let text = std::str::from_utf8(&xml).expect("samples are UTF-8");
        let per_xml = time(|| roxmltree::Document::parse(text).is_ok());
        println!(
            "{sample:<24} {:>6} bytes  parse {:>6} µs wall {:>6} µs cpu  (XML alone {:>6} µs wall {:>6} µs cpu)",
            xml.len(),
            micros(Some(per_parse.0)),
            micros(per_parse.1),
            micros(Some(per_xml.0)),
            micros(per_xml.1),
        );
    }
}
