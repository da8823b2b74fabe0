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
use rill_broker::{Error, Partition, Role};
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
async fn acknowledged_commands_survive_repeated_leader_kills() {
    const COMMANDS: u64 = 10_000;
    const CLIENTS: usize = 32;
    let mut cluster = Cluster::new(3, |c| c.request_timeout = Duration::from_secs(3));
    cluster.start_all().await;
    cluster.leader(Duration::from_secs(10)).await;
    let replicas: Replicas = Arc::new(RwLock::new(cluster));

    let next_id = Arc::new(AtomicU64::new(1));
    // id -> seq it was acknowledged at
    let acked = Arc::new(Mutex::new(BTreeMap::<u64, u64>::new()));
    let ambiguous = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Clients go on past COMMANDS until the leader was killed a few times: a fast
    // machine must not finish the load before the chaos happened.
    let kills_so_far = Arc::new(AtomicU64::new(0));

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (replicas, next_id, acked, ambiguous, kills_so_far) = (
            replicas.clone(),
            next_id.clone(),
            acked.clone(),
            ambiguous.clone(),
            kills_so_far.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut id = next_id.fetch_add(1, Ordering::Relaxed);
            while id <= COMMANDS || kills_so_far.load(Ordering::Relaxed) < 3 {
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
    let chaos = {
        let (replicas, done, kills_so_far) = (replicas.clone(), done.clone(), kills_so_far.clone());
        tokio::spawn(async move {
            let mut kills = 0;
            while !done.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(700)).await;
                let leader = {
                    let cluster = replicas.read().await;
                    cluster
                        .running()
                        .find(|(_, p)| p.status().role == Role::Leader)
                        .map(|(i, _)| i)
                };
                let Some(leader) = leader else { continue };
                replicas.write().await.stop(leader).await;
                kills += 1;
                kills_so_far.store(kills, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(400)).await;
                replicas.write().await.start(leader).await;
            }
            kills
        })
    };

    let started = Instant::now();
    for client in clients {
        client.await.unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let kills = chaos.await.unwrap();
    assert!(
        kills >= 3,
        "the leader was killed only {kills} times in {:?}",
        started.elapsed()
    );

    let cluster = replicas.read().await;
    assert_eq!(cluster.running().count(), 3);
    cluster.leader(Duration::from_secs(10)).await;
    let applied_index = cluster.converged(Duration::from_secs(30)).await;

    let mut digests = BTreeSet::new();
    let mut streams = Vec::new();
    for (_, p) in cluster.running() {
        let digest = p.state_digest().await.unwrap();
        assert_eq!(digest.applied_index, applied_index);
        digests.insert(digest.digest);
        streams.push(applied_ids(p).await);
    }
    assert_eq!(digests.len(), 1, "state digests differ: {digests:?}");
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
        "{} acknowledged, {ambiguous} ambiguous, {} applied, {kills} leader kills in {:?}",
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
    let p = cluster.node(leader).clone();
    for id in 1..=300 {
        p.submit(ListCommand::Append { id }).await.unwrap();
    }
    for (_, p) in cluster.running() {
        p.take_snapshot().await.unwrap();
    }
    // The leader purges its log behind the snapshot (keeping the 10 entries of
    // retention) once no replication reads there: from then on the lagging replica, at
    // index 2 or so, can only catch up by snapshot.
    let log = p.log_stats();
    let deadline = Instant::now() + Duration::from_secs(30);
    while log.purged.load(Ordering::Relaxed) < 250 {
        assert!(
            Instant::now() < deadline,
            "the leader did not purge its log"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for id in 301..=320 {
        p.submit(ListCommand::Append { id }).await.unwrap();
    }

    cluster.start(lagging).await;
    let applied = cluster.converged(Duration::from_secs(30)).await;
    assert!(applied > 300);
    let generation_after = std::fs::read_to_string(state_dir.join("CURRENT")).unwrap();
    assert_ne!(
        generation_before, generation_after,
        "the state was replaced by a snapshot"
    );

    let digests: BTreeSet<u64> = {
        let mut d = BTreeSet::new();
        for (_, p) in cluster.running() {
            d.insert(p.state_digest().await.unwrap().digest);
        }
        d
    };
    assert_eq!(digests.len(), 1);
    // It carries on applying normally afterwards (through whichever replica leads: a
    // loaded machine may see an election here).
    for id in 321..=330 {
        loop {
            let leader = cluster.leader(Duration::from_secs(10)).await;
            match cluster
                .node(leader)
                .submit(ListCommand::Append { id })
                .await
            {
                Ok(_) => break,
                Err(rill_broker::Error::NotLeader { .. }) => continue,
                Err(e) => panic!("append {id}: {e}"),
            }
        }
    }
    cluster.converged(Duration::from_secs(30)).await;
    let status = cluster.node(lagging).status();
    assert_eq!(status.role, Role::Follower);
    let _ = (status, Instant::now());
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
