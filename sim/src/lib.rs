//! A seeded, deterministic simulation of one Rill partition group: three replicas with
//! the real openraft, Rill's raft network and state-machine adapter, the broker's stream
//! processor and the BPMN engine, on one thread with simulated time and a simulated
//! network whose faults the seed chooses. See docs/decisions/simulation.md.
//!
//! ```text
//!  seed ─► SimRng ─► network faults, nemesis (cuts, one-sided cuts, heals),
//!                    client think times, leader choice, sync delays, election jitter
//!  run:  faults + workload ─► heal ─► drain ─► settle ─► final checks
//!  checked while it runs: one leader per term, same entries at the same index,
//!  dense positions per batch, no job completion acknowledged twice
//! ```

mod log_store;
mod network;
mod node;
mod rng;
mod workload;
mod world;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rill_broker::RocksState;
use rill_protocol::{Intent, Key, Position, RecordType, RecordValue, ValueType, codec};
use rill_raft::StateOptions;
use tokio::time::Instant;

use crate::network::SimNetwork;
use crate::node::{NodeSetup, SimNode};
use crate::rng::{FNV_START, fnv};
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

    // The leader's due work (job time-outs), every half second until the end.
    let timers = {
        let (cluster, world) = (cluster.clone(), world.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
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

/// Delays stay below 100 ms one way: openraft gives an append request the heartbeat
/// interval (250 ms) for its round trip, so a longer one stops replication altogether
/// (found by this simulator; docs/decisions/simulation.md).
fn random_faults(rng: &mut rng::SimRng) -> NetFaults {
    let max_delay_ms = rng.between(2, 100);
    NetFaults {
        drop_per_mille: rng.below(150),
        duplicate_per_mille: rng.below(60),
        min_delay_ms: rng.between(1, max_delay_ms),
        max_delay_ms,
    }
}

/// Cuts and heals links, changes the network's faults, crashes a node and restarts it,
/// until `until`. At most one node is down at a time, so a quorum remains.
async fn nemesis(cluster: Arc<Cluster>, world: SharedWorld, members: Vec<NodeId>, until: Instant) {
    loop {
        let (pause, crash) = {
            let mut w = world.lock();
            (w.rng.between(300, 3_000), w.rng.below(5) == 0)
        };
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if Instant::now() >= until {
            return;
        }
        if crash {
            let (victim, down_ms) = {
                let mut w = world.lock();
                // Half the time the leader, whose unsynced appends are the interesting ones.
                let leader = cluster.nodes.iter().position(|n| n.is_leader().is_some());
                let victim = match leader {
                    Some(leader) if w.rng.chance(500) => leader,
                    _ => w.rng.below(cluster.nodes.len() as u64) as usize,
                };
                (victim, w.rng.between(200, 5_000))
            };
            // One node down at a time: the other two keep a quorum.
            let all_up = cluster.nodes.iter().all(|n| n.raft().is_some());
            if all_up && cluster.nodes[victim].crash().await {
                let cluster = cluster.clone();
                let world = world.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(down_ms)).await;
                    // After the faults, the heal restarts it.
                    if Instant::now() >= until {
                        return;
                    }
                    if let Err(e) = cluster.nodes[victim].restart().await {
                        world.lock().violation(format!("node restart failed: {e}"));
                    }
                });
            }
            continue;
        }
        let mut w = world.lock();
        let n = members.len() as u64;
        let node = members[w.rng.below(n) as usize];
        let other = members[w.rng.below(n) as usize];
        match w.rng.below(7) {
            0 => {
                for &m in members.iter().filter(|&&m| m != node) {
                    w.cut.insert((node, m));
                    w.cut.insert((m, node));
                }
                w.trace(format_args!("nemesis isolates n{node}"));
            }
            1 => {
                for &m in members.iter().filter(|&&m| m != node) {
                    w.cut.insert((node, m));
                }
                w.trace(format_args!("nemesis: n{node} can receive but not send"));
            }
            2 => {
                for &m in members.iter().filter(|&&m| m != node) {
                    w.cut.insert((m, node));
                }
                w.trace(format_args!("nemesis: n{node} can send but not receive"));
            }
            3 if node != other => {
                w.cut.insert((node, other));
                w.trace(format_args!("nemesis cuts n{node}->n{other}"));
            }
            4 if w.rng.chance(500) => {
                // A clock jump of up to ten minutes either way (longer ones only stretch
                // the wait for the jobs they push out, in simulated time that costs).
                let jump = w.rng.between(0, 1_200_000) as i64 - 600_000;
                *w.clock_skew.entry(node).or_default() += jump;
                w.trace(format_args!("nemesis: n{node}'s clock jumps {jump} ms"));
            }
            4 => {
                let faults = random_faults(&mut w.rng);
                w.trace(format_args!("nemesis: network now {faults:?}"));
                w.faults = faults;
            }
            _ => {
                w.cut.clear();
                w.trace(format_args!("nemesis heals every link"));
            }
        }
    }
}

/// A client until `until`: creates instances, activates jobs, completes them. Returns
/// the jobs it holds uncompleted.
async fn work(cluster: Arc<Cluster>, world: SharedWorld, client: u64, until: Instant) -> Vec<Key> {
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
async fn drain(
    cluster: Arc<Cluster>,
    world: SharedWorld,
    client: u64,
    mut jobs: Vec<Key>,
    until: (Instant, Arc<std::sync::atomic::AtomicBool>),
) {
    let (deadline, stop) = until;
    // Idle polls back off up to 30 s, as a worker's long poll would wait.
    let mut idle = Duration::from_millis(500);
    while Instant::now() < deadline && !stop.load(std::sync::atomic::Ordering::SeqCst) {
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

/// The process instances that ended, by the records of the first replica that is up.
fn ended_instances(cluster: &Cluster) -> Option<std::collections::BTreeSet<i64>> {
    let node = cluster.nodes.iter().find(|n| n.raft().is_some())?;
    let records = rill_broker::read_records(&node.state.current(), Position(1), usize::MAX).ok()?;
    Some(
        records
            .iter()
            .filter(|r| {
                r.value_type == ValueType::ProcessInstance && r.intent == Intent::ElementCompleted
            })
            .map(|r| r.key.0)
            .collect(),
    )
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

/// The checks at the end: equal state digests, equal dense records, every acknowledged
/// command in the log, no job completed twice. Returns the record count.
fn check_end_state(world: &SharedWorld, cluster: &Cluster) -> u64 {
    let mut problems = Vec::new();
    let mut digests = BTreeMap::new();
    let mut record_digests = BTreeMap::new();
    let mut record_count = 0;
    for node in &cluster.nodes {
        let db = node.state.current();
        match rill_engine_api::state_digest(&RocksState::new(&db)) {
            Ok(digest) => {
                digests.insert(node.id, digest);
            }
            Err(e) => problems.push(format!("node {}: state digest: {e}", node.id)),
        }
        let records = match rill_broker::read_records(&db, Position(1), usize::MAX) {
            Ok(records) => records,
            Err(e) => {
                problems.push(format!("node {}: read records: {e}", node.id));
                continue;
            }
        };
        let mut hash = FNV_START;
        let mut completed: BTreeMap<i64, u32> = BTreeMap::new();
        let mut ended = std::collections::BTreeSet::new();
        let mut last_timestamp = i64::MIN;
        for (i, record) in records.iter().enumerate() {
            if record.position.get() != i as u64 + 1 {
                problems.push(format!(
                    "node {}: record {} is at position {}",
                    node.id,
                    i + 1,
                    record.position.get()
                ));
                break;
            }
            if record.timestamp.millis() < last_timestamp {
                problems.push(format!(
                    "node {}: record {} has a timestamp before the one at {}",
                    node.id,
                    record.position.get(),
                    i
                ));
            }
            last_timestamp = last_timestamp.max(record.timestamp.millis());
            if record.value_type == ValueType::ProcessInstance
                && record.intent == Intent::ElementCompleted
            {
                ended.insert(record.key.0);
            }
            if let Ok(bytes) = codec::encode(record) {
                hash = fnv(hash, &bytes);
            }
            if record.value_type == ValueType::Job
                && record.intent == Intent::Completed
                && record.record_type == RecordType::Event
            {
                *completed.entry(record.key.0).or_default() += 1;
            }
        }
        for (job, times) in completed {
            if times > 1 {
                problems.push(format!(
                    "node {}: job {job} completed {times} times",
                    node.id
                ));
            }
        }
        let unfinished: Vec<i64> = {
            let w = world.lock();
            w.instances
                .iter()
                .copied()
                .filter(|key| !ended.contains(key))
                .collect()
        };
        if !unfinished.is_empty() {
            problems.push(format!(
                "node {}: {} acknowledged instances did not end after the faults: {:?}",
                node.id,
                unfinished.len(),
                &unfinished[..unfinished.len().min(5)]
            ));
        }
        record_count = records.len() as u64;
        record_digests.insert(node.id, (records.len(), hash));
    }
    if digests
        .values()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1
    {
        problems.push(format!("state digests differ: {digests:?}"));
    }
    if record_digests
        .values()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1
    {
        problems.push(format!(
            "records differ (count, digest): {record_digests:?}"
        ));
    }
    let mut w = world.lock();
    for node in &cluster.nodes {
        let applied = w.applied.get(&node.id).cloned().unwrap_or_default();
        let first = applied.first().map_or(0, |e| e.index);
        for ack in &w.acks {
            let found = ack
                .index
                .checked_sub(first)
                .and_then(|i| applied.get(i as usize));
            if !found.is_some_and(|e| e.term == ack.term && e.data == ack.data) {
                problems.push(format!(
                    "acknowledged {} at index {} term {} is not in node {}'s applied log (found {found:?})",
                    ack.what, ack.index, ack.term, node.id
                ));
            }
        }
    }
    w.trace(format_args!(
        "end: digests {digests:?} records {record_digests:?}"
    ));
    for problem in problems {
        w.violation(problem);
    }
    record_count
}
