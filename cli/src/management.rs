//! `rill cluster ...`: the cluster management API of a broker's monitoring port
//! (`/actuator/cluster` and `/actuator/rebalance`, Zeebe's paths and shapes).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// A broker's monitoring address (its management API).
    #[arg(
        long,
        global = true,
        env = "RILL_MANAGEMENT_ADDRESS",
        default_value = "http://localhost:9600"
    )]
    pub management: String,
    #[command(subcommand)]
    pub command: ClusterCommand,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// The cluster configuration: brokers, their partitions and priorities, and the
    /// change in progress.
    Status {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Change the number of brokers (ids 0..N), partitions and replicas per partition.
    ///
    /// Answers once the change is started; with --wait, follows it to its end, printing
    /// each step done, and fails if it fails, is cancelled or outlasts --timeout.
    Scale {
        #[arg(long)]
        brokers: Option<u32>,
        #[arg(long)]
        partitions: Option<u16>,
        #[arg(long)]
        replication_factor: Option<u16>,
        /// Only show the planned steps.
        #[arg(long, conflicts_with = "wait")]
        dry_run: bool,
        /// Wait until the change completes, printing its progress.
        #[arg(long)]
        wait: bool,
        /// How long --wait waits (e.g. 90s, 10m) before it gives up (the change goes
        /// on).
        #[arg(long, requires = "wait", default_value = "10m", value_parser = humantime::parse_duration)]
        timeout: Duration,
    },
    /// Cancel the change in progress (Zeebe's DELETE /actuator/cluster/changes/{id}),
    /// for a change that is stuck: the steps done stay done, the others never run, and
    /// the change is recorded as CANCELLED. The cluster may be left between the two
    /// configurations (a partition with a replica more or less than planned); a new
    /// change then plans from there.
    Cancel {
        /// The change id (`rill cluster status` shows it).
        id: u64,
    },
    /// Move each partition's leadership to its preferred replica (the first in its
    /// replica list), one partition at a time (Zeebe's POST /actuator/rebalance), and
    /// print what was done per partition.
    Rebalance {
        /// Only show what would be moved.
        #[arg(long)]
        dry_run: bool,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn url(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

/// The body of an answer, or an error with the API's message.
pub(crate) async fn body(response: reqwest::Response) -> Result<Value> {
    let status = response.status();
    let text = response.text().await.context("reading the answer")?;
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if !status.is_success() {
        let message = value
            .get("message")
            .or_else(|| value.get("detail"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| value.to_string());
        bail!("{status}: {message}");
    }
    Ok(value)
}

pub async fn run(args: ClusterArgs, ca_certificate: Option<&Path>) -> Result<String> {
    let client = crate::client::http_client(ca_certificate).await?;
    let endpoint = url(&args.management, "/actuator/cluster");
    match args.command {
        ClusterCommand::Status { json } => {
            let response = client
                .get(&endpoint)
                .send()
                .await
                .with_context(|| format!("cannot reach {endpoint}"))?;
            let topology = body(response).await?;
            Ok(if json {
                format!("{}\n", serde_json::to_string_pretty(&topology)?)
            } else {
                status_table(&topology)
            })
        }
        ClusterCommand::Scale {
            brokers,
            partitions,
            replication_factor,
            dry_run,
            wait,
            timeout,
        } => {
            if brokers.is_none() && partitions.is_none() && replication_factor.is_none() {
                bail!("give --brokers, --partitions or --replication-factor");
            }
            let mut request = json!({});
            if let Some(count) = brokers {
                request["brokers"] = json!({ "count": count });
            }
            let mut partitions_patch = json!({});
            if let Some(count) = partitions {
                partitions_patch["count"] = json!(count);
            }
            if let Some(factor) = replication_factor {
                partitions_patch["replicationFactor"] = json!(factor);
            }
            if partitions_patch != json!({}) {
                request["partitions"] = partitions_patch;
            }
            let response = client
                .patch(&endpoint)
                .query(&[("dryRun", dry_run)])
                .json(&request)
                .send()
                .await
                .with_context(|| format!("cannot reach {endpoint}"))?;
            let planned = body(response).await?;
            let text = plan_text(&planned, dry_run);
            let steps = planned["plannedChanges"].as_array().map_or(0, Vec::len);
            if !wait || steps == 0 {
                return Ok(text);
            }
            print!("{text}");
            let id = planned["changeId"]
                .as_u64()
                .context("the answer names no changeId")?;
            wait_for_change(&client, &endpoint, id, timeout).await
        }
        ClusterCommand::Rebalance { dry_run, json } => {
            let url = url(&args.management, "/actuator/rebalance");
            let response = client
                .post(&url)
                .query(&[("dryRun", dry_run)])
                .send()
                .await
                .with_context(|| format!("cannot reach {url}"))?;
            let answer = body(response).await?;
            Ok(if json {
                format!("{}\n", serde_json::to_string_pretty(&answer)?)
            } else {
                rebalance_table(&answer)
            })
        }
        ClusterCommand::Cancel { id } => {
            let url = url(&args.management, &format!("/actuator/cluster/changes/{id}"));
            let response = client
                .delete(&url)
                .send()
                .await
                .with_context(|| format!("cannot reach {url}"))?;
            let topology = body(response).await?;
            Ok(format!(
                "change {id} cancelled: the steps done stay done, the others will not run\n{}",
                status_table(&topology)
            ))
        }
    }
}

/// A rebalance answer, one line per partition.
fn rebalance_table(answer: &Value) -> String {
    let leader = |v: &Value| v.as_u64().map_or("-".to_owned(), |id| id.to_string());
    let mut out = String::from("PARTITION  LEADER  PREFERRED  RESULT\n");
    for line in answer["partitions"].as_array().into_iter().flatten() {
        let mut result = line["result"].as_str().unwrap_or("?").to_owned();
        if let Some(term) = line["term"].as_u64() {
            result.push_str(&format!(" (term {term})"));
        }
        if let Some(detail) = line["detail"].as_str() {
            result.push_str(&format!(": {detail}"));
        }
        out.push_str(&format!(
            "{:<10} {:<7} {:<10} {result}\n",
            leader(&line["partitionId"]),
            leader(&line["currentLeader"]),
            leader(&line["desiredLeader"]),
        ));
    }
    if answer["dryRun"] == true {
        out.push_str("(dry run: nothing was moved)\n");
    }
    out
}

/// How often `--wait` asks for the configuration.
const WAIT_POLL: Duration = Duration::from_millis(500);

/// Where change `id` stands in a topology.
#[derive(Debug, PartialEq, Eq)]
enum Progress {
    /// In progress: steps done, steps in all.
    Running(usize, usize),
    /// Ended, with this status (COMPLETED, FAILED, CANCELLED).
    Ended(String),
    /// Not shown (yet): this broker's view may still be older than the change.
    Unseen,
}

fn progress(topology: &Value, id: u64) -> Progress {
    if let Some(change) = topology.get("pendingChange")
        && change["id"].as_u64() == Some(id)
    {
        let done = change["completed"].as_array().map_or(0, Vec::len);
        let left = change["pending"].as_array().map_or(0, Vec::len);
        return Progress::Running(done, done + left);
    }
    match topology.get("lastChange") {
        Some(last) if last["id"].as_u64() == Some(id) => {
            Progress::Ended(last["status"].as_str().unwrap_or("?").to_owned())
        }
        _ => Progress::Unseen,
    }
}

/// Polls `endpoint` until change `id` ends, printing each new count of steps done;
/// an error when it does not complete (failed, cancelled, gone) or `timeout` passes.
async fn wait_for_change(
    client: &reqwest::Client,
    endpoint: &str,
    id: u64,
    timeout: Duration,
) -> Result<String> {
    let deadline = Instant::now() + timeout;
    let mut shown: Option<(usize, usize)> = None;
    let mut problem: Option<String>;
    loop {
        match client.get(endpoint).send().await {
            Ok(response) => match body(response).await {
                Ok(topology) => {
                    problem = None;
                    match progress(&topology, id) {
                        Progress::Running(done, total) => {
                            if shown != Some((done, total)) {
                                println!("change {id}: {done}/{total} step(s) done");
                                let _ = std::io::stdout().flush();
                                shown = Some((done, total));
                            }
                        }
                        Progress::Ended(status) if status == "COMPLETED" => {
                            return Ok(format!("change {id} completed\n"));
                        }
                        Progress::Ended(status) => {
                            bail!(
                                "change {id} ended {status}{}; `rill cluster status` shows \
                                 where the cluster stands",
                                shown.map_or_else(String::new, |(done, total)| format!(
                                    " after {done}/{total} step(s)"
                                ))
                            );
                        }
                        Progress::Unseen => {
                            let version = topology["version"].as_u64().unwrap_or(0);
                            if version >= id {
                                bail!(
                                    "change {id} is neither in progress nor the last change \
                                     any more (the configuration is at version {version}); \
                                     `rill cluster status` shows it"
                                );
                            }
                        }
                    }
                }
                Err(e) => problem = Some(format!("{e:#}")),
            },
            Err(e) => problem = Some(format!("cannot reach {endpoint}: {e}")),
        }
        if Instant::now() >= deadline {
            let at = shown.map_or_else(
                || "no step seen done".to_owned(),
                |(done, total)| format!("{done}/{total} step(s) done"),
            );
            let cause = problem.map_or_else(String::new, |p| format!(" (last error: {p})"));
            bail!(
                "change {id} did not complete within {}: {at}{cause}; it goes on: `rill \
                 cluster status` follows it, `rill cluster cancel {id}` stops it",
                humantime::format_duration(timeout)
            );
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}

fn number(value: &Value) -> String {
    value
        .as_u64()
        .map_or_else(|| value.to_string(), |n| n.to_string())
}

/// One line per broker with its partitions (`id:priority`), then the change.
fn status_table(topology: &Value) -> String {
    let mut out = format!("version {}\n", number(&topology["version"]));
    out.push_str("BROKER  STATE    PARTITIONS (id:priority)\n");
    for broker in topology["brokers"].as_array().into_iter().flatten() {
        let partitions: Vec<String> = broker["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| format!("{}:{}", number(&p["id"]), number(&p["priority"])))
            .collect();
        out.push_str(&format!(
            "{:<7} {:<8} {}\n",
            number(&broker["id"]),
            broker["state"].as_str().unwrap_or("?"),
            partitions.join(" ")
        ));
    }
    match topology.get("pendingChange") {
        Some(change) => {
            out.push_str(&format!(
                "change {} in progress: {} step(s) done, {} to do\n",
                number(&change["id"]),
                change["completed"].as_array().map_or(0, Vec::len),
                change["pending"].as_array().map_or(0, Vec::len),
            ));
            for done in change["completed"].as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "  done  {} ({})\n",
                    operation_text(done),
                    done["completedAt"].as_str().unwrap_or("?")
                ));
            }
            for step in change["pending"].as_array().into_iter().flatten() {
                out.push_str(&format!("  to do {}\n", operation_text(step)));
            }
        }
        None => out.push_str("no change in progress\n"),
    }
    if let Some(last) = topology.get("lastChange") {
        out.push_str(&format!(
            "last change {}: {}\n",
            number(&last["id"]),
            last["status"].as_str().unwrap_or("?")
        ));
    }
    out
}

fn operation_text(op: &Value) -> String {
    let mut text = op["operation"].as_str().unwrap_or("?").to_owned();
    for (field, label) in [
        ("brokerId", "broker"),
        ("partitionId", "partition"),
        ("priority", "priority"),
        ("desiredPartitionCount", "partitions"),
    ] {
        if let Some(value) = op.get(field) {
            text.push_str(&format!(" {label} {}", number(value)));
        }
    }
    text
}

fn plan_text(planned: &Value, dry_run: bool) -> String {
    let steps = planned["plannedChanges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = if dry_run {
        format!(
            "dry run: change {} would take {} step(s)\n",
            number(&planned["changeId"]),
            steps.len()
        )
    } else {
        format!(
            "change {} started: {} step(s)\n",
            number(&planned["changeId"]),
            steps.len()
        )
    };
    for (i, step) in steps.iter().enumerate() {
        out.push_str(&format!("{:>3}. {}\n", i + 1, operation_text(step)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_table_lists_brokers_their_partitions_and_the_change() {
        let topology = json!({
            "version": 3,
            "brokers": [
                {"id": 0, "state": "ACTIVE", "partitions": [{"id": 1, "priority": 3}, {"id": 2, "priority": 1}]},
                {"id": 3, "state": "ACTIVE", "partitions": []},
            ],
            "pendingChange": {
                "id": 2,
                "completed": [{"operation": "BROKER_ADD", "brokerId": 3,
                    "completedAt": "2026-12-03T20:16:43.990Z"}],
                "pending": [
                    {"operation": "PARTITION_JOIN", "brokerId": 3, "partitionId": 2, "priority": 1},
                    {"operation": "PARTITION_LEAVE", "brokerId": 0, "partitionId": 2},
                ],
            },
        });
        let table = status_table(&topology);
        assert!(table.starts_with("version 3\n"), "{table}");
        assert!(table.contains("0       ACTIVE   1:3 2:1\n"), "{table}");
        assert!(table.contains("3       ACTIVE   \n"), "{table}");
        assert!(
            table.contains(
                "change 2 in progress: 1 step(s) done, 2 to do\n  done  BROKER_ADD broker 3 \
                 (2026-12-03T20:16:43.990Z)\n  to do PARTITION_JOIN broker 3 partition 2 \
                 priority 1\n  to do PARTITION_LEAVE broker 0 partition 2\n"
            ),
            "{table}"
        );
    }

    #[test]
    fn a_plan_is_listed_step_by_step() {
        let planned = json!({
            "changeId": 4,
            "plannedChanges": [
                {"operation": "BROKER_ADD", "brokerId": 3},
                {"operation": "PARTITION_JOIN", "brokerId": 3, "partitionId": 2, "priority": 1},
            ],
        });
        let text = plan_text(&planned, true);
        assert_eq!(
            text,
            "dry run: change 4 would take 2 step(s)\n  1. BROKER_ADD broker 3\n  2. \
             PARTITION_JOIN broker 3 partition 2 priority 1\n"
        );
    }

    #[test]
    fn progress_follows_the_change_to_its_end() {
        let running = json!({
            "version": 4,
            "pendingChange": {"id": 2, "completed": [{}, {}], "pending": [{}]},
            "lastChange": {"id": 1, "status": "CANCELLED"},
        });
        assert_eq!(progress(&running, 2), Progress::Running(2, 3));
        assert_eq!(
            progress(&running, 1),
            Progress::Ended("CANCELLED".to_owned())
        );
        assert_eq!(progress(&running, 7), Progress::Unseen);
        let done = json!({"version": 5, "lastChange": {"id": 2, "status": "COMPLETED"}});
        assert_eq!(progress(&done, 2), Progress::Ended("COMPLETED".to_owned()));
    }
}
