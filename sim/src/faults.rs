//! The nemesis: what goes wrong during a run, chosen by the seed.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::Cluster;
use crate::rng::SimRng;
use crate::world::{NetFaults, NodeId, SharedWorld};

/// Delays stay below 100 ms one way: openraft gives an append request the heartbeat
/// interval (250 ms) for its round trip, so a longer one stops replication altogether
/// (found by this simulator; docs/decisions/simulation.md).
pub(crate) fn random_faults(rng: &mut SimRng) -> NetFaults {
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
pub(crate) async fn nemesis(
    cluster: Arc<Cluster>,
    world: SharedWorld,
    members: Vec<NodeId>,
    until: Instant,
) {
    loop {
        let (pause, crash, disk_fails) = {
            let mut w = world.lock();
            let pause = w.rng.between(300, 3_000);
            let action = w.rng.below(10);
            (pause, action < 2, action == 2)
        };
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if Instant::now() >= until {
            return;
        }
        restart_stopped(&cluster, &world).await;
        let all_up = cluster
            .nodes
            .iter()
            .all(|n| n.raft().is_some() && !n.is_stopped());
        if disk_fails && all_up {
            let mut w = world.lock();
            let victim = w.rng.below(cluster.nodes.len() as u64) as usize;
            w.trace(format_args!(
                "nemesis: n{}'s next log sync fails",
                cluster.nodes[victim].id
            ));
            drop(w);
            cluster.nodes[victim].fail_next_sync();
            continue;
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

/// Restarts the nodes whose raft stopped after a storage failure, as a broker's partition
/// is restarted: a failed write stops it, never for good.
pub(crate) async fn restart_stopped(cluster: &Cluster, world: &SharedWorld) {
    for node in &cluster.nodes {
        if node.is_stopped() {
            world
                .lock()
                .trace(format_args!("n{} stopped after a storage failure", node.id));
            node.crash().await;
            if let Err(e) = node.restart().await {
                world
                    .lock()
                    .violation(format!("node {} restart failed: {e}", node.id));
            }
        }
    }
}
