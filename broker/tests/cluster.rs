//! Three replicas in one process on the loopback network, with real RocksDB: leader
//! failover under load, and catch-up by snapshot.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{Cluster, applied_ids};
use parking_lot::Mutex;
use rill_broker::testing::{ListCommand, ListResponse};
use rill_broker::{Error, Partition, Role, metrics};
use rill_protocol::NodeId;
use tokio::sync::RwLock;

type Replicas = Arc<RwLock<Cluster>>;

async fn current_leader(
    replicas: &Replicas,
) -> Option<Partition<rill_broker::testing::ListEngine>> {
    let cluster = replicas.read().await;
    cluster
        .running()
        .find(|(_, p)| p.status().role == Role::Leader)
        .map(|(_, p)| p.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_answers_in_its_own_later_term() {
    let timeout = Duration::from_secs(5);
    let mut cluster = Cluster::new(3, |_| {});
    cluster.start_all().await;
    let old = cluster.leader(Duration::from_secs(10)).await;
    let old_term = cluster.node(old).status().term;
    let answered = cluster
        .node(old)
        .submit_answered(ListCommand::Append { id: 1 }, timeout)
        .await
        .unwrap();
    assert_eq!(answered.term, old_term);

    cluster.stop(old).await;
    let new = cluster.leader(Duration::from_secs(30)).await;
    let new_term = cluster.node(new).status().term;
    assert!(new_term > old_term, "{new_term} after {old_term}");
    let answered = cluster
        .node(new)
        .submit_answered(ListCommand::Append { id: 2 }, timeout)
        .await
        .unwrap();
    assert_eq!(answered.term, new_term);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_commands_survive_repeated_leader_kills() {
    const COMMANDS: u64 = 10_000;
    const CLIENTS: usize = 32;
    const KILLS: usize = 3;
    let mut cluster = Cluster::new(3, |c| c.request_timeout = Duration::from_secs(3));
    cluster.start_all().await;
    cluster.leader(Duration::from_secs(10)).await;
    let replicas: Replicas = Arc::new(RwLock::new(cluster));

    let next_id = Arc::new(AtomicU64::new(1));
    // id -> seq it was acknowledged at
    let acked = Arc::new(Mutex::new(BTreeMap::<u64, u64>::new()));
    let ambiguous = Arc::new(AtomicU64::new(0));
    let chaos_over = Arc::new(AtomicBool::new(false));

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (replicas, next_id, acked, ambiguous, chaos_over) = (
            replicas.clone(),
            next_id.clone(),
            acked.clone(),
            ambiguous.clone(),
            chaos_over.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut id = next_id.fetch_add(1, Ordering::Relaxed);
            // At least COMMANDS, and on until the chaos is over, however fast this runs.
            while id <= COMMANDS || !chaos_over.load(Ordering::Relaxed) {
                let Some(leader) = current_leader(&replicas).await else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                match leader.submit(ListCommand::Append { id }).await {
                    Ok(ListResponse::Appended { seq, .. }) => {
                        assert!(
                            acked.lock().insert(id, seq).is_none(),
                            "id {id} acknowledged twice"
                        );
                        id = next_id.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(other) => panic!("unexpected {other:?}"),
                    // Certainly not applied: the same id may be sent again.
                    Err(e) if e.is_definitely_not_applied() => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    // Maybe applied: never send this id again.
                    Err(Error::Timeout { .. } | Error::ShuttingDown { .. }) => {
                        ambiguous.fetch_add(1, Ordering::Relaxed);
                        id = next_id.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
        }));
    }

    // Chaos: kill the leader, let the others take over, bring it back; repeat.
    let started = Instant::now();
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let leader = replicas.read().await.leader(Duration::from_secs(30)).await;
        replicas.write().await.stop(leader).await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        replicas.write().await.start(leader).await;
    }
    chaos_over.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }

    // A last acknowledged command: once it is applied everywhere, so is everything
    // proposed before it (a request that timed out may have been in flight until now).
    loop {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let leader = replicas.read().await.leader(Duration::from_secs(30)).await;
        let leader = replicas.read().await.node(leader).clone();
        match leader.submit(ListCommand::Append { id }).await {
            Ok(ListResponse::Appended { seq, .. }) => {
                acked.lock().insert(id, seq);
                break;
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) if e.is_definitely_not_applied() => {}
            Err(Error::Timeout { .. } | Error::ShuttingDown { .. }) => {
                ambiguous.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }

    let cluster = replicas.read().await;
    assert_eq!(cluster.running().count(), 3);
    cluster.leader(Duration::from_secs(10)).await;
    cluster.converged(Duration::from_secs(30)).await;
    let digests = cluster.digests(Duration::from_secs(30)).await;
    assert_eq!(digests.len(), 1, "state digests differ: {digests:?}");
    let mut streams = Vec::new();
    for (_, p) in cluster.running() {
        streams.push(applied_ids(p).await);
    }
    assert!(
        streams.windows(2).all(|w| w[0] == w[1]),
        "replicas applied different sequences"
    );

    let ids = &streams[0];
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "some command was applied twice");
    let acked = acked.lock();
    for (id, seq) in acked.iter() {
        assert_eq!(
            ids.get(*seq as usize - 1),
            Some(id),
            "acknowledged id {id} is not at seq {seq}"
        );
    }
    let ambiguous = ambiguous.load(Ordering::Relaxed);
    assert!(
        acked.len() as u64 + ambiguous >= COMMANDS,
        "{} acked + {ambiguous} ambiguous",
        acked.len()
    );
    assert!(ids.len() as u64 <= acked.len() as u64 + ambiguous);
    eprintln!(
        "{} acknowledged, {ambiguous} ambiguous, {} applied, {KILLS} leader kills in {:?}",
        acked.len(),
        ids.len(),
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_behind_the_purged_log_catches_up_by_snapshot() {
    let mut cluster = Cluster::new(3, |c| c.raft.log_retention_entries = 10);
    cluster.start_all().await;
    let leader = cluster.leader(Duration::from_secs(10)).await;
    let lagging = (leader + 1) % 3;
    let state_dir = cluster.configs[lagging].directory.join("state");
    let generation_before = std::fs::read_to_string(state_dir.join("CURRENT")).unwrap();
    cluster.stop(lagging).await;

    // Load while it is down, in many entries.
    for id in 1..=300 {
        cluster.submit(ListCommand::Append { id }).await;
    }
    for (_, p) in cluster.running() {
        p.take_snapshot().await.unwrap();
    }
    // Both purge their log behind the snapshot (keeping the 10 entries of retention),
    // a leader once no replication reads there: from then on the lagging replica, at
    // index 2 or so, can only catch up by snapshot.
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster
        .running()
        .any(|(_, p)| p.log_stats().purged.load(Ordering::Relaxed) < 250)
    {
        assert!(Instant::now() < deadline, "the log was not purged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for id in 301..=320 {
        cluster.submit(ListCommand::Append { id }).await;
    }

    cluster.start(lagging).await;
    let applied = cluster.converged(Duration::from_secs(30)).await;
    assert!(applied > 300);
    let generation_after = std::fs::read_to_string(state_dir.join("CURRENT")).unwrap();
    assert_ne!(
        generation_before, generation_after,
        "the state was replaced by a snapshot"
    );
    assert_eq!(cluster.digests(Duration::from_secs(30)).await.len(), 1);

    // It carries on applying normally afterwards (it may even lead by now: a replica
    // that rejoins can start an election, and raft without pre-vote lets it).
    for id in 321..=330 {
        cluster.submit(ListCommand::Append { id }).await;
    }
    cluster.converged(Duration::from_secs(30)).await;
    let status = cluster.node(lagging).status();
    assert!(
        matches!(status.role, Role::Follower | Role::Leader),
        "{status:?}"
    );
    assert_eq!(cluster.digests(Duration::from_secs(30)).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_refuse_with_the_leader_named() {
    let mut cluster = Cluster::new(3, |_| {});
    cluster.start_all().await;
    let leader = cluster.leader(Duration::from_secs(10)).await;
    cluster
        .node(leader)
        .submit(ListCommand::Append { id: 1 })
        .await
        .unwrap();
    let follower = (leader + 1) % 3;
    // Followers learn the leader from its heartbeats.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match cluster
            .node(follower)
            .submit(ListCommand::Append { id: 2 })
            .await
        {
            Err(Error::NotLeader {
                leader: Some(l), ..
            }) => {
                assert_eq!(l.0 as usize, leader);
                break;
            }
            Err(Error::NotLeader { leader: None, .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Priority election: the preferred replica leads when all start together, even when it
/// starts last (the others hold back until they see a leader).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preferred_replica_leads_when_all_start() {
    let mut cluster = Cluster::new(3, |c| c.preferred_leader = Some(NodeId(2)));
    cluster.start_all().await;
    assert_eq!(cluster.leader(Duration::from_secs(10)).await, 2);
}

/// Without the preferred replica, the next one in priority order starts the partition
/// after its patience (an election timeout and a priority step), not at once, so that
/// a preferred replica that starts a little later still wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_preferred_replica_the_next_one_starts_after_its_patience() {
    let mut cluster = Cluster::new(3, |c| c.preferred_leader = Some(NodeId(0)));
    let timeout = cluster.configs[0].raft.election_timeout;
    let started = Instant::now();
    cluster.start(1).await;
    cluster.start(2).await;
    let leader = cluster.leader(Duration::from_secs(10)).await;
    assert!(leader == 1 || leader == 2, "leader {leader}");
    assert!(started.elapsed() >= timeout, "elected after the timeout");
}

/// A candidate whose log is behind cannot win. The replica ahead of it stands, and in a
/// later term than the candidate's even with a lower node id: the candidate keeps the
/// vote it gave itself in its own term, so a rival of that same term never gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replica_ahead_wins_over_a_preferred_one_behind_in_its_term() {
    // Priority order 1, 2, 0.
    let mut cluster = Cluster::new(3, |c| c.preferred_leader = Some(NodeId(1)));
    cluster.start_all().await;
    assert_eq!(cluster.leader(Duration::from_secs(10)).await, 1);
    // Equal logs, so that the next in priority order takes over.
    cluster.submit(ListCommand::Append { id: 1 }).await;
    cluster.converged(Duration::from_secs(10)).await;
    cluster.stop(1).await;
    assert_eq!(cluster.leader(Duration::from_secs(10)).await, 2);
    // Node 1 comes back into node 2's term, then leaves again and misses an entry.
    cluster.start(1).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while cluster.node(1).status().leader != Some(NodeId(2)) {
        assert!(Instant::now() < deadline, "node 1 did not rejoin");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.stop(1).await;
    cluster.submit(ListCommand::Append { id: 2 }).await;
    cluster.stop(2).await;
    // Node 1 (first in priority, behind) and node 0 (ahead) are in one term.
    cluster.start(1).await;
    assert_eq!(cluster.leader(Duration::from_secs(15)).await, 0);
    assert_eq!(applied_ids(cluster.node(0)).await, [1, 2]);
}

/// When the leader stops, another replica takes over, and the replicas count the change
/// and how long the partition went without a leader: at least the election timeout
/// minus a heartbeat, from the old leader's last message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_leader_is_counted_with_the_time_without_one() {
    let mut cluster = Cluster::new(3, |c| c.preferred_leader = Some(NodeId(0)));
    let raft = cluster.configs[0].raft.clone();
    cluster.start_all().await;
    let first = cluster.leader(Duration::from_secs(10)).await;
    cluster.submit(ListCommand::Append { id: 1 }).await;
    // Every replica has seen the first leader.
    let (changes, gaps, _) = wait_for_leader_metrics(&cluster, |changes, _| changes >= 3.0).await;
    cluster.stop(first).await;
    let second = cluster.leader(Duration::from_secs(10)).await;
    assert_ne!(first, second);
    let (changes_after, gaps_after, leaderless_sum) =
        wait_for_leader_metrics(&cluster, |c, _| c >= changes + 2.0).await;
    assert_eq!(
        changes_after,
        changes + 2.0,
        "each survivor saw one new leader"
    );
    assert_eq!(gaps_after, gaps + 2.0);
    let least = (raft.election_timeout - raft.heartbeat_interval).as_secs_f64() * 2.0;
    assert!(
        leaderless_sum >= least,
        "{leaderless_sum} s without a leader in all, under {least}"
    );
}

/// (leader changes, leaderless periods, their total seconds) of partition 1, summed
/// over the replicas (they share one registry), once `done` holds.
async fn wait_for_leader_metrics(
    cluster: &Cluster,
    done: impl Fn(f64, f64) -> bool,
) -> (f64, f64, f64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let families = cluster.metrics().registry().gather();
        let find = |name: &str| families.iter().find(|f| f.name() == name);
        let changes = find(metrics::LEADER_CHANGES)
            .map_or(0.0, |f| f.get_metric()[0].get_counter().get_value());
        let (count, sum) = find(metrics::LEADERLESS_DURATION).map_or((0.0, 0.0), |f| {
            let h = f.get_metric()[0].get_histogram();
            (h.get_sample_count() as f64, h.get_sample_sum())
        });
        if done(changes, count) {
            return (changes, count, sum);
        }
        assert!(
            Instant::now() < deadline,
            "leader metrics stuck at {changes} changes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
