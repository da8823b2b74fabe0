//! How long parsing and validating the sample models takes, FEEL compilation included.
//!
//! `cargo run --release -p rill-engine --example parse_speed`

use std::time::{Duration, Instant};

const SAMPLES: [&str; 4] = [
    "two-rest-calls.bpmn",
    "order-fulfilment.bpmn",
    "payment-retry.bpmn",
    "wait-timer.bpmn",
];

/// Mean time of `run`, repeated for about half a second after a warm-up.
fn time(mut run: impl FnMut() -> bool) -> Duration {
    for _ in 0..200 {
        std::hint::black_box(run());
    }
    let started = Instant::now();
    let mut runs = 0u32;
    while started.elapsed() < Duration::from_millis(500) {
        for _ in 0..100 {
            std::hint::black_box(run());
        }
        runs += 100;
    }
    started.elapsed() / runs
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
            "{sample:<24} {:>6} bytes  {:>7.1} µs/parse  (XML alone {:>6.1} µs)",
            xml.len(),
            per_parse.as_secs_f64() * 1e6,
            per_xml.as_secs_f64() * 1e6,
        );
    }
}
