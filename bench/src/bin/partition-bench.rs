//! Commands per second through one partition, fsync on, for 1 and 3 replicas (in one
//! process, raft over the loopback network) at several batch sizes, next to this disk's
//! fsync rate measured in the same run.
//!
//! `cargo run --release -p rill-bench --bin partition-bench -- --help`

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use rill_broker::testing::{ListCommand, ListEngine, LoopbackNetwork};
use rill_broker::{BrokerMetrics, Partition, PartitionConfig, PartitionEnv, Role, Runtimes};
use rill_config::{RaftConfig, RequestLimitConfig, ThreadsConfig};
use rill_protocol::{NodeId, PartitionId};

#[derive(Parser)]
struct Args {
    /// Seconds to measure each configuration (after a one-second warm-up).
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Commands kept outstanding by the load generator.
    #[arg(long, default_value_t = 2048)]
    clients: usize,
    /// Most commands per raft entry, one run each.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 16, 64, 256, 1024])]
    batch: Vec<usize>,
    /// Replica counts, one run each.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 3])]
    replicas: Vec<u32>,
    /// Keep flow control on (default: off, to measure the partition itself).
    #[arg(long)]
    flow_control: bool,
    /// Where to put the data (default: a temporary directory under /var/tmp).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 2)]
    cpu_threads: usize,
    #[arg(long, default_value_t = 2)]
    io_threads: usize,
}

/// 4 KiB writes, each followed by fdatasync, for `duration`.
fn fsync_rate(dir: &Path, duration: Duration) -> anyhow::Result<f64> {
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path)?;
    let block = vec![0xA5u8; 4096];
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < duration {
        file.write_all(&block)?;
        file.sync_data()?;
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    std::fs::remove_file(&path)?;
    Ok(rate)
}

struct RunResult {
    commands_per_sec: f64,
    entries_per_sec: f64,
    syncs_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
}

async fn run(
    args: &Args,
    runtimes: &Runtimes,
    base: &Path,
    replicas: u32,
    batch: usize,
) -> anyhow::Result<RunResult> {
    let dir = tempfile::tempdir_in(base)?;
    let net = LoopbackNetwork::new();
    let members: BTreeMap<NodeId, String> = (0..replicas)
        .map(|i| (NodeId(i), format!("node-{i}")))
        .collect();
    let mut partitions = Vec::new();
    for i in 0..replicas {
        let service = rill_raft::RaftService::new();
        let config = PartitionConfig {
            partition_id: PartitionId(1),
            partition_count: 1,
            message_partition_count: 1,
            cluster_partition_count: None,
            cluster_engine_version: None,
            node_id: NodeId(i),
            members: members.clone(),
            preferred_leader: None,
            directory: dir.path().join(format!("node-{i}")),
            raft: RaftConfig {
                max_batch_commands: batch,
                heartbeat_interval: Duration::from_millis(100),
                election_timeout: Duration::from_millis(1000),
                ..RaftConfig::default()
            },
            flow_control: RequestLimitConfig {
                enabled: args.flow_control,
                ..RequestLimitConfig::default()
            },
            snapshot_period: Duration::ZERO,
            request_timeout: Duration::from_secs(30),
            max_inflight_proposals: rill_broker::DEFAULT_MAX_INFLIGHT_PROPOSALS,
            export_backlog_limit: None,
            write_rate: None,
            history: rill_broker::HistorySettings::default(),
            command_limits: Default::default(),
            joining: false,
            priority_rank: None,
            backup: rill_config::BackupConfig::default(),
        };
        let env = PartitionEnv {
            cpu: runtimes.cpu().clone(),
            io: runtimes.io().clone(),
            transport: net.transport(),
            raft_service: service.clone(),
            metrics: BrokerMetrics::unregistered(),
            exporters: None,
            state: rill_raft::StateOptions::default(),
            disk: rill_broker::DiskUsage::unsampled(std::env::temp_dir()),
        };
        let partition = Partition::start(config, ListEngine, env).await?;
        net.connect(NodeId(i), service);
        partitions.push(partition);
    }
    let leader = loop {
        if let Some(p) = partitions.iter().find(|p| p.status().role == Role::Leader) {
            break p.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let next_id = Arc::new(AtomicU64::new(1));
    let latencies = Arc::new(parking_lot::Mutex::new(Vec::<u32>::new()));
    let mut tasks = Vec::new();
    for _ in 0..args.clients {
        let (leader, stop, measuring, done, failed, next_id, latencies) = (
            leader.clone(),
            stop.clone(),
            measuring.clone(),
            done.clone(),
            failed.clone(),
            next_id.clone(),
            latencies.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut local = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let started = Instant::now();
                match leader.submit(ListCommand::Append { id }).await {
                    Ok(_) => {
                        if measuring.load(Ordering::Relaxed) {
                            done.fetch_add(1, Ordering::Relaxed);
                            local.push(started.elapsed().as_micros() as u32);
                        }
                    }
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            }
            latencies.lock().extend(local);
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let stats = leader.log_stats();
    let entries0 = leader.status().applied_index;
    let syncs0 = stats.syncs.load(Ordering::Relaxed);
    measuring.store(true, Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    let commands = done.load(Ordering::Relaxed);
    let entries = leader.status().applied_index - entries0;
    let syncs = stats.syncs.load(Ordering::Relaxed) - syncs0;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await?;
    }
    for p in &partitions {
        p.shutdown().await;
    }
    let mut lat = std::mem::take(&mut *latencies.lock());
    lat.sort_unstable();
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0) as f64
            / 1000.0
    };
    Ok(RunResult {
        commands_per_sec: commands as f64 / elapsed,
        entries_per_sec: entries as f64 / elapsed,
        syncs_per_sec: syncs as f64 / elapsed,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let base = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::path::PathBuf::from("/var/tmp"),
    };
    std::fs::create_dir_all(&base).with_context(|| format!("create {}", base.display()))?;
    let probe = tempfile::tempdir_in(&base)?;
    let fsyncs = fsync_rate(probe.path(), Duration::from_secs(2))?;
    println!(
        "disk: {:.0} fsyncs/s (4 KiB write + fdatasync, {})",
        fsyncs,
        base.display()
    );
    println!(
        "load: {} outstanding commands, {} s per run, flow control {}, cpu threads {}, io threads {}",
        args.clients,
        args.seconds,
        if args.flow_control { "on" } else { "off" },
        args.cpu_threads,
        args.io_threads
    );
    println!();
    println!(
        "| replicas | max batch | commands/s | entries/s | leader WAL syncs/s | p50 ms | p99 ms |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let runtimes = Runtimes::new(&ThreadsConfig {
        cpu_thread_count: args.cpu_threads,
        io_thread_count: args.io_threads,
    })?;
    let driver = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("bench-client")
        .enable_all()
        .build()?;
    for &replicas in &args.replicas {
        for &batch in &args.batch {
            let r = driver.block_on(run(&args, &runtimes, &base, replicas, batch))?;
            println!(
                "| {replicas} | {batch} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} |",
                r.commands_per_sec, r.entries_per_sec, r.syncs_per_sec, r.p50_ms, r.p99_ms
            );
        }
    }
    Ok(())
}
