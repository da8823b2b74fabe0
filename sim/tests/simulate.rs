//! The simulator's own promises: a seed names one run, byte for byte, and a range of
//! seeds runs clean. A failure prints the seed and the command that reproduces it.

use rill_sim::{Options, Report, run};

fn explain(report: &Report) -> String {
    format!(
        "seed {} failed: {:#?}\nreproduce: scripts/simulate --seed {}",
        report.seed, report.violations, report.seed
    )
}

#[test]
fn the_same_seed_gives_the_same_trace() {
    let options = Options::default();
    let first = run(7, &options);
    let second = run(7, &options);
    assert!(first.passed(), "{}", explain(&first));
    assert!(first.acknowledged > 10, "the workload ran: {first:?}");
    assert!(first.trace_lines > 1_000, "{first:?}");
    assert_eq!(
        (first.trace_hash, first.trace_lines),
        (second.trace_hash, second.trace_lines),
        "seed 7 ran differently the second time"
    );
    let other = run(8, &options);
    assert_ne!(
        first.trace_hash, other.trace_hash,
        "another seed, another run"
    );
}

#[test]
fn a_range_of_seeds_runs_clean() {
    let count: u64 = std::env::var("RILL_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let start: u64 = std::env::var("RILL_SIM_START")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000);
    let options = Options::default();
    for seed in start..start + count {
        let report = run(seed, &options);
        assert!(report.passed(), "{}", explain(&report));
    }
}
