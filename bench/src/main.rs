//! `rill-bench`: the two-REST-calls benchmark against a real Rill, through its REST API
//! or Zeebe's gRPC API (polling or streaming workers).
//!
//! See docs/benchmarks.md ("End to end") for the method and the commands.

mod api;
mod broker;
mod grpc;
mod load;
mod process;
mod report;
mod stub;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;

use crate::api::Api;
use crate::broker::{Standalone, StandaloneOptions};
use crate::grpc::GrpcApi;
use crate::load::{Client, LoadOptions, RunResult, default_milestones};
use crate::process::{Payload, ProcessKind};
use crate::report::Report;
use crate::stub::Stub;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "rill-bench",
    about = "Starts Rill (or uses a running one), deploys a process, runs S starters and W \
             job workers against an HTTP stub, and reports throughput and latency at milestones",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Tool>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Tool {
    /// Serve only the HTTP stub (for the peers); prints its URL and runs until killed.
    Stub {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
    },
}

/// The API the starters and workers use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum ApiMode {
    /// REST, workers long-polling `POST /v2/jobs/activation`.
    Rest,
    /// gRPC, workers long-polling ActivateJobs.
    GrpcPoll,
    /// gRPC, workers on StreamActivatedJobs (jobs pushed by the brokers).
    GrpcStream,
}

impl ApiMode {
    fn label(self) -> &'static str {
        match self {
            ApiMode::Rest => "rest",
            ApiMode::GrpcPoll => "grpc-poll",
            ApiMode::GrpcStream => "grpc-stream",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Export {
    Off,
    /// Every record (commands, rejections and job batches too) exported as JSON lines
    /// to a file in the run's data directory: the JSON-lines exporter's default.
    Jsonl,
    /// The history as the Elasticsearch exporter ships it by default (Zeebe's record
    /// filter: events, no job batches or instance results), written as JSON lines.
    History,
}

/// `--set` overrides that give the JSON-lines exporter the Elasticsearch exporter's
/// default record filter.
fn history_filter_overrides() -> Result<Vec<String>> {
    let filter = serde_json::to_value(rill_config::RecordFilterConfig::default())?;
    let serde_json::Value::Object(switches) = filter else {
        bail!("the record filter did not serialize to an object");
    };
    Ok(switches
        .into_iter()
        .map(|(name, on)| format!("exporters.jsonl.filter.{name}={on}"))
        .collect())
}

#[derive(Debug, clap::Args, Serialize)]
struct RunArgs {
    /// The `rill` binary to start (default: the one next to this binary, else
    /// target/release/rill).
    #[arg(long)]
    rill: Option<PathBuf>,
    /// Use a running gateway at this URL instead of starting one (e.g.
    /// http://localhost:8080). Broker CPU is reported only with --broker-pid.
    #[arg(long)]
    url: Option<String>,
    /// The running gateway's gRPC address with --url (e.g. http://localhost:26500).
    #[arg(long)]
    grpc_url: Option<String>,
    /// The APIs to measure, comma-separated; each run measures them in turn, so their
    /// runs alternate.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "rest")]
    api: Vec<ApiMode>,
    /// After the runs, one more run per API at half its median peak rate, for the
    /// latency at a load the system keeps up with.
    #[arg(long)]
    half_rate: bool,
    /// Pid of the broker behind --url, for its CPU time.
    #[arg(long)]
    broker_pid: Option<u32>,
    /// Instances to run to completion.
    #[arg(long, default_value_t = 100_000)]
    instances: u64,
    /// Concurrent starters, each with one create request in flight.
    #[arg(long, default_value_t = 8)]
    starters: usize,
    /// Job workers, each long-polling for a batch and working it concurrently.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// Most jobs one activation returns (the Zeebe Java client's maxJobsActive default).
    #[arg(long, default_value_t = 32)]
    max_jobs: u32,
    /// Total create rate in instances/s (default: as fast as the starters go).
    #[arg(long)]
    rate: Option<f64>,
    /// Partitions of the started standalone.
    #[arg(long, default_value_t = 1)]
    partitions: u16,
    /// Runs; the report gives each and the median (a fresh data directory each).
    #[arg(long, default_value_t = 1)]
    runs: usize,
    #[arg(long, value_enum, default_value = "two-rest-calls")]
    process: ProcessKind,
    /// Variables per instance, in KB (Camunda's load test carries about 45; 1024 for
    /// the 1 MB variant).
    #[arg(long, default_value_t = 0, conflicts_with = "payload_file")]
    payload_kb: usize,
    /// A file holding a JSON object whose members become each instance's variables
    /// (e.g. bench/payloads/order-45kb.json), instead of generated ones.
    #[arg(long, value_name = "PATH")]
    payload_file: Option<PathBuf>,
    /// History export of the started standalone.
    #[arg(long, value_enum, default_value = "off")]
    export: Export,
    /// Milestones (comma-separated instance counts; default 1k, 10k, … and the total).
    #[arg(long, value_delimiter = ',')]
    milestones: Option<Vec<u64>>,
    /// Use an HTTP stub that is already running (default: one in this process).
    #[arg(long)]
    stub_url: Option<String>,
    /// Where each run's data directory is created (not a tmpfs: fsync must be real).
    #[arg(long, default_value = "/var/tmp")]
    work_dir: PathBuf,
    /// Keep each run's data directory and broker log.
    #[arg(long)]
    keep_data: bool,
    /// TLS on the started standalone's gateway (a certificate made for the run) and basic
    /// authentication, the load's REST client using both (`--api rest` only).
    #[arg(long, conflicts_with = "url")]
    secure: bool,
    /// More `--set KEY=VALUE` for the started standalone (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    broker_set: Vec<String>,
    /// Threads of the load generator's runtime.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Stop a run when no instance completes for this many seconds.
    #[arg(long, default_value_t = 60)]
    stall_seconds: u64,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let threads = cli.run.threads.max(1);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Some(Tool::Stub { listen }) => serve_stub(&listen).await,
            None => bench(cli.run).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve_stub(listen: &str) -> Result<()> {
    let stub = Stub::bind(listen).await?;
    println!("{}", stub.url());
    stub.serve().await
}

fn default_rill_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("rill")))
        .filter(|path| path.exists())
        .unwrap_or_else(|| PathBuf::from("target/release/rill"))
}

async fn bench(args: RunArgs) -> Result<()> {
    if args.instances == 0 || args.starters == 0 || args.workers == 0 || args.runs == 0 {
        bail!("--instances, --starters, --workers and --runs must be at least 1");
    }
    if args.secure && args.api.iter().any(|mode| *mode != ApiMode::Rest) {
        bail!("--secure runs the REST load only (--api rest)");
    }
    let milestones = match &args.milestones {
        Some(list) => {
            let mut list: Vec<u64> = list
                .iter()
                .copied()
                .filter(|&m| m > 0 && m <= args.instances)
                .collect();
            list.push(args.instances);
            list.sort_unstable();
            list.dedup();
            list
        }
        None => default_milestones(args.instances),
    };
    let payload = match &args.payload_file {
        Some(path) => Payload::from_file(path, args.process)?,
        None => Payload::generated(args.payload_kb),
    };
    let stub_url = match &args.stub_url {
        Some(url) => url.clone(),
        None => {
            let stub = Stub::bind("127.0.0.1:0").await?;
            let url = stub.url();
            tokio::spawn(async move {
                if let Err(e) = stub.serve().await {
                    eprintln!("error: {e:#}");
                }
            });
            url
        }
    };
    let binary = args.rill.clone().unwrap_or_else(default_rill_binary);
    let connections = args.starters + args.workers * (1 + args.max_jobs as usize);

    let machine = machine_note();
    let mut reports: std::collections::BTreeMap<ApiMode, Report<'_>> = args
        .api
        .iter()
        .map(|mode| {
            let report = Report::new(&args, machine.clone(), mode.label(), payload.bytes());
            (*mode, report)
        })
        .collect();
    let run_once = |mode: ApiMode, rate: Option<f64>, label: String| {
        let args = &args;
        let binary = binary.clone();
        let milestones = milestones.clone();
        let stub_url = stub_url.clone();
        let payload = payload.clone();
        async move {
            eprintln!(
                "{label}: {} instances of {}, {} starters, {} workers, {}{}",
                args.instances,
                args.process.id(),
                args.starters,
                args.workers,
                mode.label(),
                rate.map_or(String::new(), |r| format!(", {r:.0} instances/s"))
            );
            let mut standalone = None;
            let (base, grpc_url, broker_pid) = match &args.url {
                Some(url) => (url.clone(), args.grpc_url.clone(), args.broker_pid),
                None => {
                    let started = Standalone::start(&StandaloneOptions {
                        binary,
                        work_dir: args.work_dir.clone(),
                        partitions: args.partitions,
                        export_jsonl: args.export != Export::Off,
                        overrides: if args.export == Export::History {
                            let mut overrides = history_filter_overrides()?;
                            overrides.extend(args.broker_set.iter().cloned());
                            overrides
                        } else {
                            args.broker_set.clone()
                        },
                        keep_data: args.keep_data,
                        secure: args.secure,
                    })?;
                    let urls = (started.rest_url.clone(), Some(started.grpc_url.clone()));
                    let pid = started.pid();
                    standalone = Some(started);
                    (urls.0, urls.1, Some(pid))
                }
            };
            let security = standalone.as_ref().and_then(|s| s.security.clone());
            let api = Api::new(&base, connections, security.as_ref())?;
            if let Some(standalone) = standalone.as_mut() {
                standalone.wait_ready(&api).await?;
            }
            api.deploy(args.process.file_name(), args.process.bpmn())
                .await
                .context("deploying the benchmark process")?;
            let client = match mode {
                ApiMode::Rest => Client::Rest(api.clone()),
                ApiMode::GrpcPoll | ApiMode::GrpcStream => {
                    let Some(url) = &grpc_url else {
                        bail!("--api {} with --url needs --grpc-url", mode.label());
                    };
                    Client::Grpc(GrpcApi::connect(url).await?)
                }
            };
            let options = LoadOptions {
                instances: args.instances,
                starters: args.starters,
                workers: args.workers,
                max_jobs: args.max_jobs,
                rate,
                kind: args.process,
                payload,
                milestones,
                stub_url,
                broker_pid,
                long_poll: Duration::from_secs(5),
                stream_workers: mode == ApiMode::GrpcStream,
                stall_timeout: Duration::from_secs(args.stall_seconds),
            };
            let result: RunResult = load::run(&api, &client, &options).await?;
            let (data_bytes, export_bytes) = match &standalone {
                Some(s) => (
                    Some(s.data_bytes()),
                    s.export_file
                        .as_ref()
                        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)),
                ),
                None => (None, None),
            };
            drop(standalone);
            anyhow::Ok((result, data_bytes, export_bytes))
        }
    };
    for run in 1..=args.runs {
        for &mode in &args.api {
            let label = format!("run {run}/{} ({})", args.runs, mode.label());
            let (result, data_bytes, export_bytes) = run_once(mode, args.rate, label).await?;
            let Some(report) = reports.get_mut(&mode) else {
                continue;
            };
            report.print_run(run, &result);
            report.add_run(result, data_bytes, export_bytes);
        }
    }
    if args.half_rate {
        for &mode in &args.api {
            let Some(peak) = reports
                .get(&mode)
                .and_then(|r| r.median.last())
                .map(|m| m.instances_per_s)
            else {
                continue;
            };
            let label = format!("half rate ({})", mode.label());
            let (result, _, _) = run_once(mode, Some(peak / 2.0), label).await?;
            if let Some(report) = reports.get_mut(&mode) {
                report.set_half_rate(peak / 2.0, result);
            }
        }
    }
    for report in reports.values() {
        report.print_summary();
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&reports)?)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The machine, for the report: cores, model name, load average at the start.
fn machine_note() -> serde_json::Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    serde_json::json!({
        "cores": cores,
        "cpu": model,
        "loadavg_at_start": loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    })
}
