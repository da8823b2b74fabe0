//! The coordinator: on the broker leading partition 1, runs the steps of the change in
//! progress one after another (docs/decisions/cluster-scaling.md).
//!
//! ```text
//!   pending change's first step ─► do it (against the partition's actual voters)
//!        ▲                                 │
//!        └── configuration, one version ◄──┴─ propose `complete_next_step` (partition 1)
//! ```
//!
//! The plan and its progress are in partition 1's state, not here: whichever broker
//! leads partition 1 runs the first pending step, so after a coordinator dies (or
//! loses partition 1's leadership) the next leader runs it again. Every step is
//! therefore done or skipped against the raft membership as it is.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rill_protocol::{NodeId, PartitionId};

use super::{ClusterConfiguration, ClusterState, MembershipRequest, Operation};

/// How often the coordinator looks whether it has a step to run, besides every change
/// of the configuration.
const POLL: Duration = Duration::from_millis(500);
/// How long after a failed step it is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long a proposal may take to be applied here before the step is looked at again.
const APPLY_TIMEOUT: Duration = Duration::from_secs(10);

#[allow(clippy::disallowed_methods)] // times shown to operators, stamped into proposals
fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Runs until the process ends.
pub(super) async fn run(state: ClusterState) {
    let mut watcher = state.subscribe();
    loop {
        let _ = tokio::time::timeout(POLL, watcher.changed()).await;
        let Some((_, local)) = state.attached() else {
            return;
        };
        if !local.leads_partition_1() {
            continue;
        }
        let current = state.current();
        let Some(change) = &current.pending_change else {
            continue;
        };
        let step = change.pending.first().copied();
        if let Some(step) = step {
            tracing::info!(change = change.id, step = ?step, "running a cluster change step");
        }
        let next = match step {
            None => current.complete_next_step(now_millis()),
            Some(step) => {
                match until_cancelled(&state, change.id, run_step(&state, &current, &step)).await {
                    None => {
                        tracing::info!(change = change.id, step = ?step, "the change was cancelled: its step in flight stops");
                        continue;
                    }
                    Some(Ok(next)) => Some(next),
                    Some(Err(reason)) => {
                        tracing::warn!(change = change.id, step = ?step, %reason, "cluster change step not done yet; trying again");
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                }
            }
        };
        let Some(next) = next else { continue };
        if let Err(reason) = state.propose(current.version, &next).await {
            tracing::warn!(%reason, "cannot record a cluster change step");
            tokio::time::sleep(RETRY).await;
            continue;
        }
        if state.wait_version(next.version, APPLY_TIMEOUT).await {
            let recorded = state.current();
            if recorded.version == next.version && recorded != next {
                // Another value took this version: the change was cancelled meanwhile.
                tracing::info!(
                    version = recorded.version,
                    step = ?step,
                    "the configuration moved on before this step was recorded"
                );
                continue;
            }
            match &next.pending_change {
                Some(_) => {
                    tracing::info!(version = next.version, step = ?step, "cluster change step completed")
                }
                None => tracing::info!(version = next.version, "cluster change completed"),
            }
        }
    }
}

/// Runs `step` unless change `id` stops being the one in progress first (it was
/// cancelled): then `None`, and the step is dropped where it stands.
async fn until_cancelled<T>(
    state: &ClusterState,
    id: u64,
    step: impl std::future::Future<Output = T>,
) -> Option<T> {
    let mut watcher = state.subscribe();
    let cancelled = async move {
        let moved_on = watcher
            .wait_for(|c| c.pending_change.as_ref().map(|p| p.id) != Some(id))
            .await
            .is_ok();
        if !moved_on {
            // The configuration is gone (the broker stops): let the step decide.
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        done = step => Some(done),
        () = cancelled => None,
    }
}

/// Does `step` (or finds it done) and returns the configuration that records it.
async fn run_step(
    state: &ClusterState,
    current: &ClusterConfiguration,
    step: &Operation,
) -> Result<ClusterConfiguration, String> {
    let complete = || {
        current
            .complete_next_step(now_millis())
            .ok_or_else(|| "no change in progress".to_owned())
    };
    match *step {
        Operation::BrokerAdd { broker } => {
            // Recorded in the configuration, so every broker reaches it after restarts.
            let announced = state.announced(broker);
            if announced.is_none() && address(state, current, broker).is_none() {
                return Err(format!(
                    "broker {broker} has not announced itself yet (is it running, with \
                     cluster.initial-contact-points naming the running brokers?)"
                ));
            }
            let mut next = complete()?;
            if let (Some(announce), Some(entry)) = (announced, next.brokers.get_mut(&broker)) {
                entry.internal_address = Some(announce.internal);
                entry.command_address = Some(announce.command);
            }
            Ok(next)
        }
        Operation::PartitionJoin {
            broker, partition, ..
        } => {
            let address = address(state, current, broker)
                .ok_or_else(|| format!("no internal address known for broker {broker}"))?;
            state
                .on_leader(MembershipRequest::AddVoter {
                    partition,
                    node: broker,
                    address,
                })
                .await?;
            complete()
        }
        Operation::PartitionLeave { broker, partition } => {
            state
                .on_leader(MembershipRequest::RemoveVoter {
                    partition,
                    node: broker,
                })
                .await?;
            complete()
        }
        // Priorities live in the configuration: each replica's election driver reads
        // its rank from it once the step is recorded.
        Operation::PartitionReconfigurePriority { .. } | Operation::BrokerRemove { .. } => {
            complete()
        }
        Operation::PartitionBootstrap {
            broker, partition, ..
        } => {
            // The broker starts the replica as soon as its copy shows this step next:
            // a raft group of itself alone, which it leads at once.
            state
                .bootstrapped(NodeId(broker), PartitionId(partition))
                .await
                .map_err(|e| format!("partition {partition} is not bootstrapped yet: {e}"))?;
            complete()
        }
        Operation::AwaitRedistributionCompletion {
            desired_partition_count,
            ..
        } => {
            let first = PartitionId(current.active_partitions() + 1);
            let (count, pending) = state.redistribution(first).await?;
            if count < desired_partition_count || pending > 0 {
                return Err(format!(
                    "partition 1 distributes over {count} partitions and has {pending}                      deployment(s) or deletion(s) on their way to partitions {first} to                      {desired_partition_count}"
                ));
            }
            complete()
        }
    }
}

/// Where `broker`'s internal port is: the configuration's record, what it announced,
/// or the contact points this broker was started with.
fn address(state: &ClusterState, config: &ClusterConfiguration, broker: u32) -> Option<String> {
    config
        .brokers
        .get(&broker)
        .and_then(|b| b.internal_address.clone())
        .or_else(|| state.announced(broker).map(|a| a.internal))
        .or_else(|| {
            state
                .attached()
                .and_then(|(_, local)| local.address_of(NodeId(broker)))
        })
}
