//! One broker process with one partition running the test engine, for crash tests.
//!
//! It serves a line protocol on a local TCP port (printed as `LISTENING <addr>` once the
//! partition leads). Requests may be pipelined; answers carry the request's id:
//!
//! ```text
//! APPEND <id>          -> OK <id> <seq>  |  ERR <id> <CODE> <message>
//! ITEMS <from> <limit> -> ITEMS <id>,<id>,...
//! COUNT                -> COUNT <n>
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use rill_broker::testing::{
    ListCommand, ListEngine, ListQuery, ListQueryResult, ListResponse, LoopbackNetwork,
};
use rill_broker::{BrokerMetrics, Partition, PartitionConfig, PartitionEnv, Role, Runtimes};
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

#[derive(Parser)]
struct Args {
    /// Directory for the partition's log, state and snapshots.
    #[arg(long)]
    data_dir: PathBuf,
    /// Address for the line protocol.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut config = RillConfig::default();
    config.data.directory = args.data_dir.clone();
    config.cluster.partitions_count = 1;
    config.raft.heartbeat_interval = Duration::from_millis(50);
    config.raft.election_timeout = Duration::from_millis(200);
    let runtimes = Runtimes::new(&config.threads)?;
    let node = NodeId(0);
    let members = BTreeMap::from([(node, "local".to_owned())]);
    let partition_config = PartitionConfig::from_config(&config, PartitionId(1), node, members);
    let env = PartitionEnv {
        cpu: runtimes.cpu().clone(),
        io: runtimes.io().clone(),
        transport: LoopbackNetwork::new().transport(),
        raft_service: rill_raft::RaftService::new(),
        metrics: BrokerMetrics::unregistered(),
        exporters: None,
        state: rill_raft::StateOptions::default(),
        disk: rill_broker::DiskUsage::unsampled(std::env::temp_dir()),
    };
    runtimes.io().block_on(async move {
        let partition = Partition::start(partition_config, ListEngine, env)
            .await
            .context("start the partition")?;
        let mut status = partition.watch_status();
        status
            .wait_for(|s| s.role == Role::Leader)
            .await
            .context("wait for leadership")?;
        let listener = TcpListener::bind(&args.listen).await.context("bind")?;
        println!("LISTENING {}", listener.local_addr()?);
        let partition = Arc::new(partition);
        loop {
            let (stream, _) = listener.accept().await?;
            tokio::spawn(serve(stream, partition.clone()));
        }
    })
}

async fn serve(stream: TcpStream, partition: Arc<Partition<ListEngine>>) {
    let (read, mut write) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if write.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let words: Vec<&str> = line.split_whitespace().collect();
        let tx = tx.clone();
        let partition = partition.clone();
        match words.as_slice() {
            ["APPEND", id] => match id.parse::<u64>() {
                Ok(id) => {
                    tokio::spawn(async move {
                        let reply = match partition.submit(ListCommand::Append { id }).await {
                            Ok(ListResponse::Appended { seq, .. }) => format!("OK {id} {seq}\n"),
                            Ok(ListResponse::Failed { reason }) => {
                                format!("ERR {id} REJECTED {reason}\n")
                            }
                            Ok(other) => format!("ERR {id} UNEXPECTED {other:?}\n"),
                            Err(e) => format!("ERR {id} {} {e}\n", e.code()),
                        };
                        let _ = tx.send(reply);
                    });
                }
                Err(_) => {
                    let _ = tx.send(format!(
                        "ERR - INVALID_ARGUMENT id {id:?} is not a number\n"
                    ));
                }
            },
            ["ITEMS", from, limit] => {
                let (Ok(from), Ok(limit)) = (from.parse(), limit.parse()) else {
                    let _ = tx.send("ERR - INVALID_ARGUMENT ITEMS <from> <limit>\n".to_owned());
                    continue;
                };
                let reply = match partition.query(ListQuery::Items { from, limit }).await {
                    Ok(ListQueryResult::Items(items)) => {
                        let ids: Vec<String> = items.iter().map(u64::to_string).collect();
                        format!("ITEMS {}\n", ids.join(","))
                    }
                    Ok(other) => format!("ERR - INTERNAL unexpected {other:?}\n"),
                    Err(e) => format!("ERR - {} {e}\n", e.code()),
                };
                let _ = tx.send(reply);
            }
            ["COUNT"] => {
                let reply = match partition.query(ListQuery::Count).await {
                    Ok(ListQueryResult::Count(n)) => format!("COUNT {n}\n"),
                    Ok(other) => format!("ERR - INTERNAL unexpected {other:?}\n"),
                    Err(e) => format!("ERR - {} {e}\n", e.code()),
                };
                let _ = tx.send(reply);
            }
            _ => {
                let _ = tx.send(format!("ERR - INVALID_ARGUMENT unknown request {line:?}\n"));
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}
