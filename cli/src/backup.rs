//! `rill backup ...`: the backup management API of a broker's monitoring port
//! (`/actuator/backups`, Zeebe's paths and shapes), and `rill restore`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::management::{body, url};
use crate::server::ConfigArgs;

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// A broker's monitoring address (its management API).
    #[arg(
        long,
        global = true,
        env = "RILL_MANAGEMENT_ADDRESS",
        default_value = "http://localhost:9600"
    )]
    pub management: String,
    #[command(subcommand)]
    pub command: BackupCommand,
}

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Take a backup of every partition. The id must be higher than every earlier
    /// backup's. Answers once every partition recorded the checkpoint; with --wait,
    /// waits until every part is stored and fails if one failed.
    Take {
        /// The backup id (a number above every earlier one, e.g. a timestamp).
        id: u64,
        #[arg(long)]
        wait: bool,
        /// How long --wait waits (e.g. 90s, 10m).
        #[arg(long, requires = "wait", default_value = "10m", value_parser = humantime::parse_duration)]
        timeout: Duration,
    },
    /// The state of a backup and of each partition's part.
    Status {
        id: u64,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Every backup in the store.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Delete a backup (not one in progress).
    Delete { id: u64 },
}

/// `rill restore`: lays out a backup in an empty data directory.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup to restore (`rill backup list`).
    #[arg(long)]
    pub backup_id: u64,
    /// The same configuration as the broker that will start on the restored data (its
    /// node id, partition count, replication factor and backup store); --data-dir is
    /// the directory to restore into, which must be empty.
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn restore(args: RestoreArgs) -> Result<String> {
    let config = crate::server::validated(args.config.load()?)?;
    let data_dir: PathBuf = config.data.directory.clone();
    let restored = rill_broker::backup::restore(&config, args.backup_id, &data_dir)
        .with_context(|| format!("restoring backup {}", args.backup_id))?;
    if restored.already {
        return Ok(format!(
            "{} holds the restore of backup {} already: nothing to do\n",
            data_dir.display(),
            args.backup_id
        ));
    }
    let mut text = format!(
        "backup {} restored into {} (node {}):\n",
        args.backup_id,
        data_dir.display(),
        config.cluster.node_id
    );
    for part in restored.partitions {
        text.push_str(&format!(
            "  partition {}: {} bytes, checkpoint after position {}, log from index {}\n",
            part.partition_id,
            part.bytes,
            part.checkpoint_position,
            part.log_index + 1
        ));
    }
    Ok(text)
}

pub async fn run(args: BackupArgs, ca_certificate: Option<&Path>) -> Result<String> {
    let client = crate::client::http_client(ca_certificate).await?;
    let endpoint = url(&args.management, "/actuator/backups");
    match args.command {
        BackupCommand::Take { id, wait, timeout } => {
            let response = client
                .post(&endpoint)
                .json(&json!({ "backupId": id }))
                .send()
                .await
                .with_context(|| format!("cannot reach {endpoint}"))?;
            body(response).await?;
            if !wait {
                return Ok(format!(
                    "backup {id} started: `rill backup status {id}` follows it\n"
                ));
            }
            let started = Instant::now();
            loop {
                let status = get(&client, &format!("{endpoint}/{id}")).await?;
                match status["state"].as_str() {
                    Some("COMPLETED") => return Ok(status_table(&status)),
                    Some("FAILED") | Some("INCOMPLETE") => {
                        bail!("backup {id} did not complete:\n{}", status_table(&status))
                    }
                    _ if started.elapsed() > timeout => bail!(
                        "backup {id} is still in progress after {}s:\n{}",
                        timeout.as_secs(),
                        status_table(&status)
                    ),
                    _ => tokio::time::sleep(Duration::from_millis(250)).await,
                }
            }
        }
        BackupCommand::Status { id, json } => {
            let status = get(&client, &format!("{endpoint}/{id}")).await?;
            Ok(if json {
                format!("{}\n", serde_json::to_string_pretty(&status)?)
            } else {
                status_table(&status)
            })
        }
        BackupCommand::List { json } => {
            let backups = get(&client, &endpoint).await?;
            if json {
                return Ok(format!("{}\n", serde_json::to_string_pretty(&backups)?));
            }
            let mut text = String::new();
            for backup in backups.as_array().into_iter().flatten() {
                text.push_str(&format!(
                    "{:>20}  {}\n",
                    number(&backup["backupId"]),
                    backup["state"].as_str().unwrap_or("?")
                ));
            }
            if text.is_empty() {
                text.push_str("no backups\n");
            }
            Ok(text)
        }
        BackupCommand::Delete { id } => {
            let target = format!("{endpoint}/{id}");
            let response = client
                .delete(&target)
                .send()
                .await
                .with_context(|| format!("cannot reach {target}"))?;
            body(response).await?;
            Ok(format!("backup {id} deleted\n"))
        }
    }
}

async fn get(client: &reqwest::Client, target: &str) -> Result<Value> {
    let response = client
        .get(target)
        .send()
        .await
        .with_context(|| format!("cannot reach {target}"))?;
    body(response).await
}

fn number(value: &Value) -> String {
    value
        .as_u64()
        .map_or_else(|| value.to_string(), |n| n.to_string())
}

fn status_table(status: &Value) -> String {
    let mut text = format!(
        "backup {}: {}\n",
        number(&status["backupId"]),
        status["state"].as_str().unwrap_or("?")
    );
    if let Some(reason) = status["failureReason"].as_str() {
        text.push_str(&format!("  failure: {reason}\n"));
    }
    text.push_str("  partition  state         broker  position        bytes\n");
    for part in status["details"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "  {:>9}  {:<12}  {:>6}  {:>8}  {:>11}\n",
            number(&part["partitionId"]),
            part["state"].as_str().unwrap_or("?"),
            part.get("brokerId").map_or_else(|| "-".to_owned(), number),
            part.get("checkpointPosition")
                .map_or_else(|| "-".to_owned(), number),
            part.get("sizeBytes").map_or_else(|| "-".to_owned(), number),
        ));
        if let Some(reason) = part["failureReason"].as_str() {
            text.push_str(&format!("             {reason}\n"));
        }
    }
    text
}
