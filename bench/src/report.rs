//! The report: a table per run, the median over runs, and the same as JSON.

use serde::Serialize;

use crate::RunArgs;
use crate::load::{Latency, Milestone, RunResult};

#[derive(Serialize)]
pub struct RunEntry {
    #[serde(flatten)]
    pub result: RunResult,
    /// Bytes under the broker's data directory after the run.
    pub data_bytes: Option<u64>,
    /// Size of the JSON-lines export file after the run (with `--export jsonl`).
    pub export_bytes: Option<u64>,
}

#[derive(Serialize)]
pub struct Report<'a> {
    /// The API measured (`rest`, `grpc-poll`, `grpc-stream`).
    pub api: &'static str,
    pub config: &'a RunArgs,
    pub tasks_per_instance: u64,
    pub payload_bytes_per_instance: usize,
    pub machine: serde_json::Value,
    pub runs: Vec<RunEntry>,
    /// Per milestone, the median of each figure over the runs.
    pub median: Vec<Milestone>,
    /// A run at half the median peak rate (`--half-rate`): the rate, and the run.
    pub half_rate: Option<(f64, RunResult)>,
}

impl<'a> Report<'a> {
    pub fn new(
        config: &'a RunArgs,
        machine: serde_json::Value,
        api: &'static str,
        payload_bytes_per_instance: usize,
    ) -> Report<'a> {
        Report {
            api,
            half_rate: None,
            config,
            tasks_per_instance: config.process.tasks_per_instance(),
            payload_bytes_per_instance,
            machine,
            runs: Vec::new(),
            median: Vec::new(),
        }
    }

    pub fn set_half_rate(&mut self, rate: f64, result: RunResult) {
        self.half_rate = Some((rate, result));
    }

    pub fn print_run(&self, run: usize, result: &RunResult) {
        println!("\nrun {run} ({}):", self.api);
        print_table(&result.milestones, self.payload_bytes_per_instance > 0);
        println!(
            "backpressure retries {}, transport retries {}, job errors {}, \
             instances read back COMPLETED {}/{}",
            result.backpressure_retries,
            result.transport_retries,
            result.job_errors,
            result.verified_completed,
            result.verified_sampled
        );
    }

    pub fn add_run(
        &mut self,
        result: RunResult,
        data_bytes: Option<u64>,
        export_bytes: Option<u64>,
    ) {
        self.runs.push(RunEntry {
            result,
            data_bytes,
            export_bytes,
        });
        self.median = median_milestones(&self.runs);
    }

    pub fn print_summary(&self) {
        if self.runs.len() > 1 {
            println!("\n{}: median of {} runs:", self.api, self.runs.len());
            print_table(&self.median, self.payload_bytes_per_instance > 0);
        }
        if let Some(last) = self.median.last() {
            println!(
                "\n{} over {}: {:.0} instances/s, {:.0} tasks/s ({} tasks per instance), p99 {:.1} ms{}",
                self.config.process.id(),
                self.api,
                last.instances_per_s,
                last.jobs_per_s,
                self.tasks_per_instance,
                last.latency.p99_ms,
                if self.payload_bytes_per_instance > 0 {
                    format!(
                        ", {:.1} MB/s of variables ({} bytes per instance)",
                        last.payload_mb_per_s, self.payload_bytes_per_instance
                    )
                } else {
                    String::new()
                }
            );
        }
        if let Some((rate, result)) = &self.half_rate
            && let Some(last) = result.milestones.last()
        {
            println!(
                "{} over {} at half the peak ({rate:.0} instances/s): reached {:.0} instances/s, \
                 p50 {:.1} ms, p99 {:.1} ms",
                self.config.process.id(),
                self.api,
                last.instances_per_s,
                last.latency.p50_ms,
                last.latency.p99_ms
            );
        }
        if self.config.export != crate::Export::Off {
            for (i, run) in self.runs.iter().enumerate() {
                match run.export_bytes {
                    Some(0) | None => println!(
                        "run {}: the JSON-lines export file is empty or missing (exporters.jsonl.path \
                         was set): the broker exported nothing",
                        i + 1
                    ),
                    Some(bytes) => println!("run {}: exported {bytes} bytes of JSON lines", i + 1),
                }
            }
        }
    }
}

fn cpu(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |s| format!("{s:.1}"))
}

fn print_table(milestones: &[Milestone], payload: bool) {
    println!(
        "{:>9} {:>8} {:>10} {:>9} {:>8} {:>8} {:>8} {:>10} {:>9}{}",
        "instances",
        "time s",
        "inst/s",
        "jobs/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "broker cpu",
        "load cpu",
        if payload { "     MB/s" } else { "" }
    );
    for m in milestones {
        println!(
            "{:>9} {:>8.2} {:>10.0} {:>9.0} {:>8.1} {:>8.1} {:>8.1} {:>10} {:>9}{}",
            m.instances,
            m.elapsed_s,
            m.instances_per_s,
            m.jobs_per_s,
            m.latency.p50_ms,
            m.latency.p99_ms,
            m.latency.max_ms,
            cpu(m.broker_cpu_s),
            cpu(m.generator_cpu_s),
            if payload {
                format!(" {:>8.1}", m.payload_mb_per_s)
            } else {
                String::new()
            }
        );
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Field-wise median of each milestone over the runs that reached it.
fn median_milestones(runs: &[RunEntry]) -> Vec<Milestone> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .result
        .milestones
        .iter()
        .map(|template| {
            let at: Vec<&Milestone> = runs
                .iter()
                .filter_map(|r| {
                    r.result
                        .milestones
                        .iter()
                        .find(|m| m.instances == template.instances)
                })
                .collect();
            let of = |f: &dyn Fn(&Milestone) -> f64| median(at.iter().map(|m| f(m)).collect());
            let of_opt = |f: &dyn Fn(&Milestone) -> Option<f64>| {
                let values: Option<Vec<f64>> = at.iter().map(|m| f(m)).collect();
                values.map(median)
            };
            Milestone {
                instances: template.instances,
                elapsed_s: of(&|m| m.elapsed_s),
                instances_per_s: of(&|m| m.instances_per_s),
                jobs: of(&|m| m.jobs as f64) as u64,
                jobs_per_s: of(&|m| m.jobs_per_s),
                payload_mb_per_s: of(&|m| m.payload_mb_per_s),
                latency: Latency {
                    p50_ms: of(&|m| m.latency.p50_ms),
                    p99_ms: of(&|m| m.latency.p99_ms),
                    max_ms: of(&|m| m.latency.max_ms),
                },
                broker_cpu_s: of_opt(&|m| m.broker_cpu_s),
                generator_cpu_s: of_opt(&|m| m.generator_cpu_s),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
