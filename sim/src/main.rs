//! `rill-sim`: runs seeds of the deterministic simulation (scripts/simulate).

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use rill_sim::{Options, run};

#[derive(Parser)]
#[command(about = "Seeded deterministic simulation of a Rill partition group")]
struct Args {
    /// Run this one seed (and print its trace with --trace).
    #[arg(long)]
    seed: Option<u64>,
    /// Run this many seeds, from --start on.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// The first seed of --seeds.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Print the trace of each seed run.
    #[arg(long)]
    trace: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let seeds = match args.seed {
        Some(seed) => seed..seed + 1,
        None => args.start..args.start.saturating_add(args.seeds),
    };
    let options = Options {
        keep_trace: args.trace,
        ..Options::default()
    };
    let began = Instant::now();
    let (mut ran, mut failed) = (0u64, Vec::new());
    for seed in seeds {
        let report = run(seed, &options);
        ran += 1;
        if let Some(trace) = &report.trace {
            print!("{trace}");
        }
        println!(
            "seed {seed}: {} trace {:016x} ({} lines), {} acknowledged ({} instances), applied {}, {} records, {} terms with a leader ({} with two), {} ms simulated",
            if report.passed() { "ok" } else { "FAILED" },
            report.trace_hash,
            report.trace_lines,
            report.acknowledged,
            report.instances,
            report.applied_index,
            report.records,
            report.leaders,
            report.terms_with_two_leaders,
            report.simulated_ms,
        );
        if !report.passed() {
            for violation in &report.violations {
                println!("  violation: {violation}");
            }
            println!("  reproduce: scripts/simulate --seed {seed}");
            failed.push(seed);
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    println!(
        "{ran} seeds in {seconds:.1} s ({:.1} seeds/s), {} failed{}",
        ran as f64 / seconds.max(1e-9),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(": {failed:?}")
        }
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
