//! The clients' loops: work during the faults, then drain until every instance ended.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rill_protocol::{Key, RecordValue};
use tokio::time::Instant;

use crate::Cluster;
use crate::workload::{self, Outcome};
use crate::world::SharedWorld;

/// A client until `until`: creates instances, activates jobs, completes them. Returns
/// the jobs it holds uncompleted.
pub(crate) async fn work(
    cluster: Arc<Cluster>,
    world: SharedWorld,
    client: u64,
    until: Instant,
) -> Vec<Key> {
    let mut jobs: Vec<Key> = Vec::new();
    while Instant::now() < until {
        let (think, choice) = {
            let mut w = world.lock();
            (w.rng.between(5, 80), w.rng.below(10))
        };
        tokio::time::sleep(Duration::from_millis(think)).await;
        if !jobs.is_empty() && choice < 4 {
            let job = jobs.remove(0);
            complete_job(&cluster, &world, client, job, &mut jobs).await;
        } else if choice < 7 {
            activate(&cluster, &world, client, &mut jobs).await;
        } else if let Outcome::Accepted { value } =
            workload::submit(&cluster, &world, client, workload::create()).await
            && let RecordValue::ProcessInstanceCreation(created) = *value
        {
            world.lock().instances.push(created.process_instance_key);
        }
    }
    jobs
}

/// After the faults: completes the jobs held, and activates more, until told to stop
/// (`until`: a deadline and a flag).
pub(crate) async fn drain(
    cluster: Arc<Cluster>,
    world: SharedWorld,
    client: u64,
    mut jobs: Vec<Key>,
    until: (Instant, Arc<AtomicBool>),
) {
    let (deadline, stop) = until;
    // Idle polls back off up to 30 s, as a worker's long poll would wait.
    let mut idle = Duration::from_millis(500);
    while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        match jobs.pop() {
            Some(job) => complete_job(&cluster, &world, client, job, &mut jobs).await,
            None => match activate(&cluster, &world, client, &mut jobs).await {
                Some(0) | None => {
                    tokio::time::sleep(idle).await;
                    idle = (idle * 2).min(Duration::from_secs(30));
                }
                Some(_) => idle = Duration::from_millis(500),
            },
        }
    }
}

/// Activates jobs; returns how many, or `None` if the activation was not acknowledged.
async fn activate(
    cluster: &Cluster,
    world: &SharedWorld,
    client: u64,
    jobs: &mut Vec<Key>,
) -> Option<usize> {
    match workload::submit(cluster, world, client, workload::activate(3)).await {
        Outcome::Accepted { value, .. } => match *value {
            RecordValue::JobBatch(batch) => {
                jobs.extend(batch.job_keys.iter().map(|&k| Key(k)));
                Some(batch.job_keys.len())
            }
            _ => None,
        },
        _ => None,
    }
}

async fn complete_job(
    cluster: &Cluster,
    world: &SharedWorld,
    client: u64,
    job: Key,
    jobs: &mut Vec<Key>,
) {
    match workload::submit(cluster, world, client, workload::complete(job)).await {
        Outcome::Accepted { .. } => {
            let mut w = world.lock();
            if !w.completed_jobs.insert(job.0) {
                w.violation(format!("job {} completed twice (both acknowledged)", job.0));
            }
        }
        // Perhaps applied, perhaps not: completing it again settles it.
        Outcome::Unknown => jobs.push(job),
        Outcome::Rejected => {}
    }
}
