//! A seeded, deterministic simulation of one Rill partition group: three replicas with
//! the real openraft, Rill's raft network and state-machine adapter, the broker's stream
//! processor and the BPMN engine, on one thread with simulated time and a simulated
//! network whose faults the seed chooses. See docs/decisions/simulation.md.
//!
//! ```text
//!  seed ─► SimRng ─► network faults, nemesis (cuts, one-sided cuts, crashes,
//!                    clock jumps, heals),
//!                    client think times, leader choice, sync delays, election jitter
//!  run:  faults + workload ─► heal ─► drain ─► settle ─► final checks
//!  checked while it runs: same entries at the same index, no two leaders' entries
//!  in one term, dense positions per batch, no job completion acknowledged twice;
//!  at the end: equal state and records, nothing acknowledged lost, every
//!  acknowledged instance ended (checks.rs)
//! ```

mod checks;
mod clients;
mod faults;
mod log_store;
mod network;
mod node;
mod rng;
mod workload;
mod world;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rill_raft::StateOptions;
use tokio::time::Instant;

use crate::checks::{check_end_state, ended_instances};
use crate::clients::{drain, work};
use crate::faults::{nemesis, random_faults, restart_stopped};
use crate::network::SimNetwork;
use crate::node::{NodeSetup, SimNode};
use crate::workload::Outcome;
pub use crate::world::NetFaults;
use crate::world::{NodeId, SharedWorld, World};

/// Entry timestamps start here (2023-11-14), and move with simulated time.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

/// What a run does besides its seed.
#[derive(Clone, Debug)]
pub struct Options {
    pub replicas: u64,
    pub clients: u64,
    /// Keep the trace's text in the report.
    pub keep_trace: bool,
    /// A bug to plant, to show that the checks find it.
    pub planted: Option<PlantedBug>,
}

/// Bugs the simulator can plant on purpose, so a test shows the invariants catch them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    /// One replica applies entries with its own clock's time instead of the entry's
    /// (what the engine's determinism rule forbids).
    ReplicaReadsItsClock,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            replicas: 3,
            clients: 3,
            keep_trace: false,
            planted: None,
        }
    }
}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    pub seed: u64,
    /// FNV of the whole trace: the same seed gives the same value.
    pub trace_hash: u64,
    pub trace_lines: u64,
    pub trace: Option<String>,
    pub violations: Vec<String>,
    pub acknowledged: usize,
    /// Acknowledged process instances (each must have ended by the end of the run).
    pub instances: usize,
    pub applied_index: u64,
    pub records: u64,
    pub leaders: usize,
    /// Terms in which two nodes were elected one after the other (openraft's leader ids
    /// allow it; see `World::saw_leader`).
    pub terms_with_two_leaders: usize,
    pub simulated_ms: u64,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

pub struct Cluster {
    pub nodes: Vec<SimNode>,
}

/// Runs one seed to the end and checks it.
pub fn run(seed: u64, options: &Options) -> Report {
    let dir = scratch_dir();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let report = runtime.block_on(simulate(seed, options, dir.path()));
    drop(runtime);
    report
}

/// RocksDB state databases go to memory-backed storage where there is some.
fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    let made = if shm.is_dir() {
        tempfile::Builder::new().prefix("rill-sim-").tempdir_in(shm)
    } else {
        tempfile::Builder::new().prefix("rill-sim-").tempdir()
    };
    made.expect("a scratch directory")
}

async fn simulate(seed: u64, options: &Options, dir: &std::path::Path) -> Report {
    let world: SharedWorld = Arc::new(Mutex::new(World::new(seed, options.keep_trace)));
    let (fault_ms, max_sync_ms, priority_election) = {
        let mut w = world.lock();
        let fault_ms = w.rng.between(8_000, 16_000);
        let max_sync_ms = w.rng.below(50);
        let priority_election = w.rng.chance(500);
        w.faults = random_faults(&mut w.rng);
        let faults = w.faults.clone();
        w.trace(format_args!(
            "seed {seed} faults {fault_ms}ms {faults:?} sync <= {max_sync_ms}ms priority election {priority_election}"
        ));
        (fault_ms, max_sync_ms, priority_election)
    };
    let network = SimNetwork::default();
    let state_options = StateOptions::with_cache_size(8 << 20);
    let members: Vec<NodeId> = (1..=options.replicas).collect();
    let mut nodes = Vec::new();
    for &id in &members {
        let node_dir = dir.join(format!("n{id}"));
        let setup = NodeSetup {
            members: &members,
            dir: &node_dir,
            state_options: &state_options,
            network: &network,
            world: &world,
            max_sync_ms,
            planted: options.planted,
            priority_election,
        };
        match SimNode::start(id, setup).await {
            Ok(node) => nodes.push(node),
            Err(e) => {
                world
                    .lock()
                    .violation(format!("node {id} did not start: {e}"));
                return report(seed, &world, &[], 0);
            }
        }
    }
    let cluster = Arc::new(Cluster { nodes });
    let start = Instant::now();

    // The process, deployed before any fault.
    let deadline = start + Duration::from_secs(30);
    while !matches!(
        workload::submit(&cluster, &world, 0, workload::deploy()).await,
        Outcome::Accepted { .. }
    ) {
        if Instant::now() > deadline {
            world
                .lock()
                .violation("no deployment acknowledged within 30 s".into());
            return finish(seed, &world, &cluster, start).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Every half second until the end: the leader's due work (job time-outs), and the
    // supervisor's restart of a replica whose raft stopped after a storage failure.
    let timers = {
        let (cluster, world) = (cluster.clone(), world.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                restart_stopped(&cluster, &world).await;
                workload::propose_due_work(&cluster, &world).await;
            }
        })
    };
    let faults_end = Instant::now() + Duration::from_millis(fault_ms);
    let nemesis = tokio::spawn(nemesis(
        cluster.clone(),
        world.clone(),
        members.clone(),
        faults_end,
    ));
    let mut clients = Vec::new();
    for client in 1..=options.clients {
        clients.push(tokio::spawn(work(
            cluster.clone(),
            world.clone(),
            client,
            faults_end,
        )));
    }
    let _ = nemesis.await;
    let mut leftover = Vec::new();
    for client in clients {
        leftover.push(client.await.unwrap_or_default());
    }
    {
        let mut w = world.lock();
        w.faults = NetFaults::CALM;
        w.cut.clear();
        w.clock_skew.clear();
        w.trace(format_args!("healed (clocks set right)"));
    }
    restart_stopped(&cluster, &world).await;
    for node in &cluster.nodes {
        if let Err(e) = node.restart().await {
            world
                .lock()
                .violation(format!("node {} restart failed: {e}", node.id));
        }
    }
    // Drain: complete what the clients hold, then whatever else is activatable.
    // Jobs whose activation was lost come back when they time out, which a clock that
    // jumped ahead may have put minutes off: the drain lasts until every acknowledged
    // instance ended, or half an hour.
    let drain_end = Instant::now() + Duration::from_secs(1_800);
    let all_ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut drains = Vec::new();
    for (client, jobs) in leftover.into_iter().enumerate() {
        drains.push(tokio::spawn(drain(
            cluster.clone(),
            world.clone(),
            client as u64 + 1,
            jobs,
            (drain_end, all_ended.clone()),
        )));
    }
    while Instant::now() < drain_end {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let instances = world.lock().instances.clone();
        if let Some(ended) = ended_instances(&cluster)
            && instances.iter().all(|i| ended.contains(i))
        {
            break;
        }
    }
    all_ended.store(true, std::sync::atomic::Ordering::SeqCst);
    for drain in drains {
        let _ = drain.await;
    }
    timers.abort();
    finish(seed, &world, &cluster, start).await
}

/// Waits until the replicas applied the same entries, checks the end state, shuts down.
async fn finish(seed: u64, world: &SharedWorld, cluster: &Cluster, start: Instant) -> Report {
    let settle_end = Instant::now() + Duration::from_secs(30);
    loop {
        let converged = {
            let w = world.lock();
            let lengths: Vec<usize> = cluster
                .nodes
                .iter()
                .map(|n| w.applied.get(&n.id).map_or(0, Vec::len))
                .collect();
            let last_logs: Vec<u64> = cluster
                .nodes
                .iter()
                .map(|n| {
                    n.raft()
                        .and_then(|r| r.metrics().borrow().last_log_index)
                        .unwrap_or(0)
                })
                .collect();
            let applied: Vec<u64> = cluster
                .nodes
                .iter()
                .map(|n| {
                    w.applied
                        .get(&n.id)
                        .and_then(|a| a.last())
                        .map_or(0, |e| e.index)
                })
                .collect();
            lengths.windows(2).all(|p| p[0] == p[1])
                && applied.iter().zip(&last_logs).all(|(a, l)| a == l)
                && applied.windows(2).all(|p| p[0] == p[1])
        };
        if converged {
            break;
        }
        restart_stopped(cluster, world).await;
        if Instant::now() > settle_end {
            world
                .lock()
                .violation("replicas did not converge within 30 s after the faults".into());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let records = check_end_state(world, cluster);
    for node in &cluster.nodes {
        node.shutdown().await;
    }
    let simulated_ms = Instant::now().duration_since(start).as_millis() as u64;
    let mut report = report(seed, world, &cluster.nodes, records);
    report.simulated_ms = simulated_ms;
    report
}

fn report(seed: u64, world: &SharedWorld, nodes: &[SimNode], records: u64) -> Report {
    let mut w = world.lock();
    Report {
        seed,
        trace_hash: w.trace_hash(),
        trace_lines: w.trace_lines(),
        trace: w.take_trace_text(),
        violations: w.violations.clone(),
        acknowledged: w.acks.len(),
        instances: w.instances.len(),
        applied_index: nodes
            .first()
            .and_then(|n| w.applied.get(&n.id))
            .and_then(|a| a.last())
            .map_or(0, |e| e.index),
        records,
        leaders: w.leaders.len(),
        terms_with_two_leaders: w.terms_with_two_leaders(),
        simulated_ms: 0,
    }
}
