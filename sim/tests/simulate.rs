//! The simulator's own promises: a seed names one run, byte for byte, and a range of
//! seeds runs clean. A failure prints the seed and the command that reproduces it.

use rill_sim::{Options, PlantedBug, Report, run};

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
    assert!(first.instances > 0, "instances were created: {first:?}");
    assert!(first.trace_lines > 300, "{first:?}");
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

/// 200 seeds by default (`RILL_SIM_SEEDS`, from `RILL_SIM_START`), on two threads: each
/// seed is a run of its own, on a runtime of its own.
#[test]
fn a_range_of_seeds_runs_clean() {
    let count: u64 = env_number("RILL_SIM_SEEDS", 200);
    let start: u64 = env_number("RILL_SIM_START", 1_000);
    let options = Options::default();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|worker| {
                let options = &options;
                scope.spawn(move || {
                    (start + worker..start + count)
                        .step_by(2)
                        .map(|seed| run(seed, options))
                        .filter(|report| !report.passed())
                        .map(|report| explain(&report))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The checks are not blind: a replica that stamps entries with its own clock instead
/// of the leader's timestamp in the entry is caught.
#[test]
fn a_planted_clock_bug_is_found() {
    let options = Options {
        planted: Some(PlantedBug::ReplicaReadsItsClock),
        ..Options::default()
    };
    for seed in [1_000, 1_001, 1_002] {
        let report = run(seed, &options);
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.contains("state digests differ") || v.contains("records differ")),
            "seed {seed}: a replica reading its own clock went unnoticed: {:?}",
            report.violations
        );
    }
}
