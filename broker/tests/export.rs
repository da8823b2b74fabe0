//! The exporter director: every record exported once across leader changes, the export
//! column family trimmed behind the exporters and never ahead of them, and new work
//! throttled while the backlog is too large.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::Cluster;
use rill_broker::testing::ListCommand;
use rill_broker::{Error, ExporterFactory};
use rill_config::{JsonlExporterConfig, RecordFilterConfig};
use rill_exporter::{AnyExporter, ExporterMetrics, JsonlExporter};
use rill_protocol::Position;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn jsonl_exporters(path: PathBuf) -> ExporterFactory {
    let metrics = ExporterMetrics::new().expect("metrics");
    Arc::new(move |_| {
        let config = JsonlExporterConfig {
            path: path.clone(),
            flush_size: 100,
            flush_delay: Duration::from_millis(50),
            filter: RecordFilterConfig::all(),
        };
        vec![AnyExporter::Jsonl(Box::new(
            JsonlExporter::new(config, metrics.clone()).expect("exporter"),
        ))]
    })
}

/// Record positions in a JSON-lines export, and how many lines repeated one.
fn exported_positions(file: &Path) -> (BTreeSet<u64>, usize) {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut positions = BTreeSet::new();
    let mut repeats = 0;
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if !positions.insert(record["position"].as_u64().expect("position")) {
            repeats += 1;
        }
    }
    (positions, repeats)
}

async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn every_record_is_exported_across_leader_changes_and_the_column_family_is_trimmed() {
    let rt = runtime();
    rt.block_on(async {
        let mut cluster = Cluster::new(3, |_| {});
        let file = cluster.dir.path().join("records.jsonl");
        cluster.exporters = Some(jsonl_exporters(file.clone()));
        cluster.start_all().await;

        let mut id = 0;
        for round in 0..2 {
            for _ in 0..200 {
                id += 1;
                // A leader change under load refuses the command unapplied: ask the
                // next leader.
                loop {
                    let leader = cluster.leader(Duration::from_secs(10)).await;
                    match cluster
                        .node(leader)
                        .submit(ListCommand::Append { id })
                        .await
                    {
                        Ok(_) => break,
                        Err(Error::NotLeader { .. }) => continue,
                        Err(e) => panic!("append {id}: {e}"),
                    }
                }
            }
            if round == 0 {
                let leader = cluster.leader(Duration::from_secs(10)).await;
                // A leader change: the next leader resumes from the replicated position.
                cluster.stop(leader).await;
                cluster.leader(Duration::from_secs(10)).await;
                cluster.start(leader).await;
            }
        }
        let leader = cluster.leader(Duration::from_secs(10)).await;
        // Answers go out before the status is updated: let the replicas settle first.
        cluster.converged(Duration::from_secs(10)).await;
        let last = cluster.node(leader).status().last_position.get();
        assert!(last >= 400, "{last} records");

        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (positions, _) = exported_positions(&file);
            let missing: Vec<u64> = (1..=last).filter(|p| !positions.contains(p)).collect();
            if missing.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {last} records not exported, from {:?} on",
                missing.len(),
                missing.first()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (positions, _repeats) = exported_positions(&file);
        assert_eq!(positions, (1..=last).collect::<BTreeSet<u64>>());

        // Once the exported position is replicated, every replica deletes what all
        // exporters have.
        let deadline = Instant::now() + Duration::from_secs(10);
        for (i, node) in cluster.running() {
            loop {
                let left = node.read_records(Position(1), 10).await.expect("read");
                if left.first().is_none_or(|r| r.position.get() > last / 2) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "replica {i} still holds records from {}",
                    left[0].position
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
}

#[test]
fn records_wait_for_a_stuck_exporter_and_new_work_is_throttled_until_it_catches_up() {
    let rt = runtime();
    rt.block_on(async {
        let mut cluster = Cluster::new(1, |c| c.export_backlog_limit = Some(30));
        // The export file's directory is a regular file: the exporter cannot open it
        // until the test removes that file.
        let blocker = cluster.dir.path().join("export");
        std::fs::write(&blocker, b"in the way").unwrap();
        let file = blocker.join("records.jsonl");
        cluster.exporters = Some(jsonl_exporters(file.clone()));
        cluster.start_all().await;
        let leader = cluster.leader(Duration::from_secs(10)).await;
        let node = cluster.node(leader).clone();

        let mut accepted = 0u64;
        let mut throttled = false;
        for id in 1..=200 {
            match node.submit(ListCommand::Append { id }).await {
                Ok(_) => accepted += 1,
                Err(Error::ResourceExhausted { .. }) => {
                    throttled = true;
                    break;
                }
                Err(e) => panic!("append {id}: {e}"),
            }
        }
        assert!(throttled, "no throttling after {accepted} appends");
        let backlog = node.status().last_position.get();
        assert!(backlog > 30, "throttled at a backlog of {backlog}");
        // Work that finishes something is never refused.
        node.submit(ListCommand::Finish { id: 1000 })
            .await
            .expect("finishing work passes");

        // A snapshot (and the log purge behind it) keeps every unexported record.
        node.take_snapshot().await.expect("snapshot");
        let held = node.read_records(Position(1), 10_000).await.expect("read");
        assert_eq!(held.first().map(|r| r.position), Some(Position(1)));
        assert_eq!(
            held.last().map(|r| r.position),
            Some(node.status().last_position)
        );

        // The exporter gets going: the backlog drains and new work is accepted again.
        std::fs::remove_file(&blocker).unwrap();
        let last = node.status().last_position.get();
        wait_until("the backlog is exported", Duration::from_secs(30), || {
            exported_positions(&file).0.len() as u64 >= last
        })
        .await;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match node.submit(ListCommand::Append { id: 5000 }).await {
                Ok(_) => break,
                Err(Error::ResourceExhausted { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("still refused after the backlog drained: {e}"),
            }
        }
    });
}

/// A replica that was down while the others exported, trimmed and purged their logs
/// catches up from a snapshot, and takes the export floor from it: it would otherwise
/// judge the backlog (and throttle, once it leads) against the floor it had before.
#[test]
fn a_replica_catching_up_from_a_snapshot_takes_its_export_floor() {
    let rt = runtime();
    rt.block_on(async {
        let mut cluster = Cluster::new(3, |c| c.raft.log_retention_entries = 10);
        let file = cluster.dir.path().join("records.jsonl");
        cluster.exporters = Some(jsonl_exporters(file.clone()));
        cluster.start_all().await;
        let leader = cluster.leader(Duration::from_secs(10)).await;
        let behind = (leader + 1) % 3;
        let state_dir = cluster.configs[behind].directory.join("state");
        let generation_before = std::fs::read_to_string(state_dir.join("CURRENT")).unwrap();
        cluster.stop(behind).await;

        for id in 1..=300 {
            cluster.submit(ListCommand::Append { id }).await;
        }
        // Answers go out before the status is updated: let the replicas settle first.
        cluster.converged(Duration::from_secs(10)).await;
        let leader = cluster.leader(Duration::from_secs(10)).await;
        let last = cluster.node(leader).status().last_position;
        wait_until("the export is replicated", Duration::from_secs(30), || {
            cluster.running().all(|(_, p)| p.status().exported == last)
        })
        .await;
        for (_, p) in cluster.running() {
            p.take_snapshot().await.expect("snapshot");
        }
        // Purged behind the snapshot: the stopped replica can only catch up by snapshot.
        wait_until("the log is purged", Duration::from_secs(30), || {
            cluster
                .running()
                .all(|(_, p)| p.log_stats().purged.load(Ordering::Relaxed) >= 250)
        })
        .await;

        cluster.start(behind).await;
        cluster.converged(Duration::from_secs(30)).await;
        let generation_after = std::fs::read_to_string(state_dir.join("CURRENT")).unwrap();
        assert_ne!(
            generation_before, generation_after,
            "the state was replaced by a snapshot"
        );
        let caught_up = cluster.node(behind).clone();
        wait_until(
            "the replica has the export floor of the snapshot",
            Duration::from_secs(30),
            || {
                let status = caught_up.status();
                status.last_position == last && status.exported == last
            },
        )
        .await;
    });
}
