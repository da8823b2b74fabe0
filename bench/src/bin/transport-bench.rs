//! Request/response throughput of the internal transport over loopback.
//!
//! Two transports (node 0 asks, node 1 echoes) share one tokio runtime of `--io-threads`
//! threads, as two brokers on one small machine would. For each concurrency level, that
//! many tasks send requests back to back for `--seconds`; the program prints requests per
//! second, latency percentiles, and how many frames each socket write carried.
//!
//! `cargo run --release -p rill-bench --bin transport-bench -- --concurrency 1,64,1024`

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use clap::Parser;
use futures::FutureExt;
use futures::future::BoxFuture;
use rill_transport::{
    Handler, NodeId, PartitionId, ServiceId, Transport, TransportConfig, TransportStats,
};

#[derive(Parser)]
struct Args {
    /// Concurrent requesters; a comma-separated list runs one round per value.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 16, 256, 1024])]
    concurrency: Vec<usize>,
    /// Payload bytes per request (the response echoes it).
    #[arg(long, default_value_t = 128)]
    payload: usize,
    /// Length of each round.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Worker threads of the runtime both transports run on.
    #[arg(long, default_value_t = 2)]
    io_threads: usize,
}

struct Round {
    requests: u64,
    elapsed: Duration,
    latencies_us: Vec<u32>,
    client: TransportStats,
    server: TransportStats,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.io_threads)
        .thread_name("bench-io")
        .enable_all()
        .build()
        .context("building the runtime")?;
    println!(
        "transport-bench: payload {} B, {} s per round, {} io threads",
        args.payload, args.seconds, args.io_threads
    );
    println!(
        "{:>11} {:>12} {:>9} {:>9} {:>9} {:>14} {:>14}",
        "concurrency",
        "requests/s",
        "MiB/s",
        "p50 µs",
        "p99 µs",
        "frames/write →",
        "frames/write ←"
    );
    for &concurrency in &args.concurrency {
        let round = runtime.block_on(run_round(concurrency, args.payload, args.seconds))?;
        print_round(concurrency, args.payload, &round);
    }
    Ok(())
}

async fn run_round(concurrency: usize, payload: usize, seconds: u64) -> anyhow::Result<Round> {
    let listen = "127.0.0.1:0".parse().context("literal address")?;
    let echo: Arc<dyn Handler> = Arc::new(
        |_: NodeId,
         _: ServiceId,
         _: PartitionId,
         payload: Bytes|
         -> BoxFuture<'static, Result<Bytes, String>> {
            async move { Ok(payload) }.boxed()
        },
    );
    let mut config = TransportConfig::new(NodeId(1), listen);
    config.max_in_flight_per_peer = concurrency.max(1024);
    let server = Transport::start(config.clone(), echo.clone()).await?;
    config.node_id = NodeId(0);
    let client = Transport::start(config, echo).await?;
    client.set_peer(NodeId(1), server.local_addr());

    let body = Bytes::from(vec![0x5a; payload]);
    // Warm up: establish the connection outside the measured window.
    client
        .request(
            NodeId(1),
            ServiceId::RAFT_APPEND,
            PartitionId(1),
            body.clone(),
            Duration::from_secs(5),
        )
        .await?;
    let client_before = client.stats();
    let server_before = server.stats();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..concurrency {
        let client = client.clone();
        let body = body.clone();
        let partition = PartitionId((task % 8) as u16 + 1);
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let sent = Instant::now();
                client
                    .request(
                        NodeId(1),
                        ServiceId::RAFT_APPEND,
                        partition,
                        body.clone(),
                        Duration::from_secs(10),
                    )
                    .await?;
                latencies.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32);
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies_us = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        latencies_us.extend(joined??);
    }
    let elapsed = started.elapsed();
    let round = Round {
        requests: latencies_us.len() as u64,
        elapsed,
        latencies_us,
        client: diff(client.stats(), client_before),
        server: diff(server.stats(), server_before),
    };
    client.shutdown().await;
    server.shutdown().await;
    Ok(round)
}

fn diff(after: TransportStats, before: TransportStats) -> TransportStats {
    TransportStats {
        frames_sent: after.frames_sent - before.frames_sent,
        bytes_sent: after.bytes_sent - before.bytes_sent,
        write_batches: after.write_batches - before.write_batches,
        ..after
    }
}

fn print_round(concurrency: usize, payload: usize, round: &Round) {
    let mut latencies = round.latencies_us.clone();
    latencies.sort_unstable();
    let percentile = |p: f64| -> u32 {
        if latencies.is_empty() {
            return 0;
        }
        let index = ((latencies.len() - 1) as f64 * p).round() as usize;
        latencies[index]
    };
    let seconds = round.elapsed.as_secs_f64();
    let rate = round.requests as f64 / seconds;
    let mib = rate * payload as f64 * 2.0 / (1024.0 * 1024.0);
    let per_write =
        |stats: &TransportStats| stats.frames_sent as f64 / stats.write_batches.max(1) as f64;
    println!(
        "{:>11} {:>12.0} {:>9.1} {:>9} {:>9} {:>14.1} {:>14.1}",
        concurrency,
        rate,
        mib,
        percentile(0.5),
        percentile(0.99),
        per_write(&round.client),
        per_write(&round.server)
    );
}
