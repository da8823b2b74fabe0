//! Backup and restore with real processes: a standalone under load takes a backup
//! through the management API, more instances are created after it, the data directory
//! is wiped and restored, and the restored standalone holds exactly what was
//! acknowledged before the checkpoint. A damaged backup file is named at restore.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Api, Standalone, deploy, rill_binary};
use tokio::sync::Mutex;

/// Runs `rill <args>`: success, stdout, stderr.
fn rill(args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(rill_binary())
        .args(args)
        .output()
        .expect("run rill");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn restore(store: &Path, data: &Path, backup: u64) -> (bool, String, String) {
    rill(&[
        "restore",
        "--backup-id",
        &backup.to_string(),
        "--data-dir",
        data.to_str().unwrap(),
        "--set",
        "backup.store=filesystem",
        "--set",
        &format!("backup.filesystem.base-path={}", store.display()),
    ])
}

/// An instance created and when its creation was sent and answered.
#[derive(Clone, Debug)]
struct Created {
    key: String,
    sent: Instant,
    acknowledged: Instant,
}

async fn exists(api: &Api, key: &str) -> bool {
    let (status, body) = api
        .get(&format!("/v2/process-instances/{key}"))
        .await
        .unwrap();
    assert!(status == 200 || status == 404, "{status}: {body}");
    status == 200
}

#[test]
fn a_restored_standalone_holds_exactly_what_was_acknowledged_before_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("backups");
    let data = dir.path().join("data");
    let settings = [
        "backup.store=filesystem".to_owned(),
        format!("backup.filesystem.base-path={}", store.display()),
    ];
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut rill_process = Standalone::start(&data, &settings);
        rill_process.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill_process.rest());
        let management = rill_process.monitoring();
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let logs = || rill_process.log_text();
        let before = api
            .create_on_every_partition("two-rest-calls", 20, 2, logs)
            .await;

        // Load keeps running while the backup is taken.
        let created: Arc<Mutex<Vec<Created>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let load = {
            let (api, created, stop) = (api.clone(), created.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let (status, body) = api
                        .post(
                            "/v2/process-instances",
                            json!({"processDefinitionId": "two-rest-calls"}),
                        )
                        .await
                        .unwrap();
                    assert_eq!(status, 200, "{body}");
                    created.lock().await.push(Created {
                        key: body["processInstanceKey"].as_str().unwrap().to_owned(),
                        sent,
                        acknowledged: Instant::now(),
                    });
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let asked = Instant::now();
        let (ok, out, err) = rill(&[
            "backup",
            "take",
            "7",
            "--wait",
            "--timeout",
            "60s",
            "--management",
            &management,
        ]);
        let answered = Instant::now();
        assert!(ok, "rill backup take failed: {out}{err}\n{}", rill_process.log_text());
        assert!(out.contains("backup 7: COMPLETED"), "{out}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.store(true, Ordering::Relaxed);
        load.await.unwrap();
        let created = created.lock().await.clone();
        let acknowledged_before: Vec<&Created> =
            created.iter().filter(|c| c.acknowledged < asked).collect();
        let sent_after: Vec<&Created> = created.iter().filter(|c| c.sent > answered).collect();
        assert!(
            !acknowledged_before.is_empty() && !sent_after.is_empty(),
            "the load ran before and after the backup: {} before, {} after",
            acknowledged_before.len(),
            sent_after.len()
        );

        // The API: the backup's status, the list, and ids that must grow.
        let http = reqwest::Client::new();
        let status: serde_json::Value = http
            .get(format!("{management}/actuator/backups/7"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(status["state"], "COMPLETED", "{status}");
        let details = status["details"].as_array().unwrap();
        assert_eq!(details.len(), 2, "{status}");
        for part in details {
            assert_eq!(part["state"], "COMPLETED", "{status}");
            assert!(part["sizeBytes"].as_u64().unwrap() > 0, "{status}");
            assert!(part["checkpointPosition"].as_u64().unwrap() > 0, "{status}");
        }
        let again = http
            .post(format!("{management}/actuator/backups"))
            .json(&json!({"backupId": 7}))
            .send()
            .await
            .unwrap();
        assert_eq!(again.status().as_u16(), 409);
        let lower = http
            .post(format!("{management}/actuator/backups"))
            .json(&json!({"backupId": 3}))
            .send()
            .await
            .unwrap();
        assert_eq!(lower.status().as_u16(), 409, "{}", lower.text().await.unwrap());
        let missing = http
            .get(format!("{management}/actuator/backups/8"))
            .send()
            .await
            .unwrap();
        assert_eq!(missing.status().as_u16(), 404);
        let (ok, out, err) = rill(&["backup", "list", "--management", &management]);
        assert!(ok, "{err}");
        assert!(out.contains('7') && out.contains("COMPLETED"), "{out}");

        assert!(rill_process.terminate(Duration::from_secs(30)));

        // A restore refuses a directory that holds data.
        let (ok, _, err) = restore(&store, &data, 7);
        assert!(!ok);
        assert!(err.contains("is not empty"), "{err}");
        std::fs::remove_dir_all(&data).unwrap();

        // A damaged file is named, and nothing is restored.
        let damaged = dir.path().join("damaged");
        let part = store.join("7").join("partition-2");
        let victim = std::fs::read_dir(&part)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "kv"))
            .expect("a data file");
        let original = std::fs::read(&victim).unwrap();
        let mut bytes = original.clone();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&victim, &bytes).unwrap();
        let (ok, _, err) = restore(&store, &damaged, 7);
        assert!(!ok);
        let name = victim.file_name().unwrap().to_str().unwrap();
        assert!(err.contains(name) && err.contains("damaged"), "{err}");
        assert!(
            !damaged.exists() || std::fs::read_dir(&damaged).unwrap().next().is_none(),
            "a refused restore writes nothing"
        );
        std::fs::write(&victim, &original).unwrap();

        // Another partition count than the backup's is refused, and so is a backup
        // that does not exist.
        let (ok, _, err) = rill(&[
            "restore",
            "--backup-id",
            "7",
            "--data-dir",
            damaged.to_str().unwrap(),
            "--partitions",
            "3",
            "--set",
            "backup.store=filesystem",
            "--set",
            &format!("backup.filesystem.base-path={}", store.display()),
        ]);
        assert!(!ok);
        assert!(err.contains("partition count"), "{err}");
        let (ok, _, err) = restore(&store, &damaged, 70);
        assert!(!ok);
        assert!(err.contains("there is no backup 70"), "{err}");

        // Restore and start.
        let (ok, out, err) = restore(&store, &data, 7);
        assert!(ok, "restore failed: {out}{err}");
        assert!(out.contains("partition 1") && out.contains("partition 2"), "{out}");
        // A part this broker was taking when it stopped (as a kill -9 during the upload
        // leaves it): marked failed when the broker starts.
        let interrupted = store.join("9").join("partition-1");
        std::fs::create_dir_all(&interrupted).unwrap();
        std::fs::write(
            interrupted.join("status.json"),
            json!({
                "backupId": 9, "partitionId": 1, "nodeId": 0, "state": "IN_PROGRESS",
                "checkpointPosition": 1, "createdAt": 1, "lastUpdated": 1, "sizeBytes": 0,
                "fileCount": 0, "brokerVersion": "test",
            })
            .to_string(),
        )
        .unwrap();
        let mut restored = Standalone::start(&data, &settings);
        restored.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(restored.rest());
        let (ok, out, err) = rill(&["backup", "status", "9", "--management", &restored.monitoring()]);
        assert!(ok, "{err}");
        assert!(out.contains("backup 9: FAILED") && out.contains("stopped while it took"), "{out}");
        for key in before.iter().chain(acknowledged_before.iter().map(|c| &c.key)) {
            assert!(
                exists(&api, key).await,
                "instance {key}, acknowledged before the checkpoint, is missing\n{}",
                restored.log_text()
            );
        }
        for created in &sent_after {
            assert!(
                !exists(&api, &created.key).await,
                "instance {}, created after the backup, was restored",
                created.key
            );
        }

        // Work goes on: jobs of instances from before the backup complete them, and new
        // instances are created.
        let mut completed = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        while completed < 4 {
            assert!(Instant::now() < deadline, "no jobs after the restore\n{}", restored.log_text());
            let (s, b) = api
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "restCall", "timeout": 30000, "maxJobsToActivate": 4, "requestTimeout": 2000}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            for job in b["jobs"].as_array().unwrap() {
                let key = job["jobKey"].as_str().unwrap();
                let (s, b) = api
                    .post(&format!("/v2/jobs/{key}/completion"), json!({}))
                    .await
                    .unwrap();
                assert_eq!(s, 204, "{b}");
                completed += 1;
            }
        }
        for _ in 0..10 {
            api.create("two-rest-calls", json!({})).await;
        }
        assert!(restored.terminate(Duration::from_secs(30)));
    });
}

/// Three brokers, partitions led by different brokers: the backup is asked of one
/// broker, which reaches the other leaders; each broker's directory is restored with its
/// own settings.
#[test]
fn a_restored_cluster_of_three_brokers_holds_what_was_acknowledged_before_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("backups");
    let store_settings = [
        "backup.store=filesystem".to_owned(),
        format!("backup.filesystem.base-path={}", store.display()),
    ];
    let extra: Vec<&str> = store_settings.iter().map(String::as_str).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut brokers = support::Brokers::start(dir.path(), 3, 3, 2, &extra);
        brokers.wait_ready(Duration::from_secs(90)).await;
        let api = brokers.api(0);
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let before = api
            .create_on_every_partition("two-rest-calls", 30, 3, || brokers.logs())
            .await;
        let management = brokers.nodes[0].monitoring();
        let (ok, out, err) = rill(&[
            "backup",
            "take",
            "11",
            "--wait",
            "--timeout",
            "90s",
            "--management",
            &management,
        ]);
        assert!(
            ok,
            "rill backup take failed: {out}{err}\n{}",
            brokers.logs()
        );
        assert!(out.contains("backup 11: COMPLETED"), "{out}");
        let mut after = Vec::new();
        for _ in 0..15 {
            after.push(api.create("two-rest-calls", json!({})).await);
        }
        // Any broker answers for the whole backup (the store is shared).
        let (ok, out, _) = rill(&[
            "backup",
            "status",
            "11",
            "--management",
            &brokers.nodes[2].monitoring(),
        ]);
        assert!(ok && out.contains("backup 11: COMPLETED"), "{out}");

        brokers.restore_all(11);
        brokers.wait_ready(Duration::from_secs(90)).await;
        let api = brokers.api(1);
        for key in &before {
            assert!(
                exists(&api, key).await,
                "instance {key}, acknowledged before the checkpoint, is missing\n{}",
                brokers.logs()
            );
        }
        for key in &after {
            assert!(
                !exists(&api, key).await,
                "instance {key}, created after the backup, was restored"
            );
        }
        for _ in 0..6 {
            api.create("two-rest-calls", json!({})).await;
        }
        for node in &mut brokers.nodes {
            assert!(node.terminate(Duration::from_secs(30)));
        }
    });
}

/// A broker killed with SIGKILL while it writes its parts: after its restart the backup
/// is failed (or completed, if the parts were written before the kill), never left in
/// progress, and nothing acknowledged is lost.
#[test]
fn a_backup_interrupted_by_kill_9_is_failed_and_the_data_is_intact() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("backups");
    let data = dir.path().join("data");
    let settings = [
        "backup.store=filesystem".to_owned(),
        format!("backup.filesystem.base-path={}", store.display()),
    ];
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut rill_process = Standalone::start(&data, &settings);
        rill_process.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill_process.rest());
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        // About 200 MB of state (each variable is in the engine's state and the
        // history), so that writing the parts takes a while.
        let blob = "x".repeat(1 << 20);
        let mut keys = Vec::new();
        for _ in 0..100 {
            keys.push(api.create("two-rest-calls", json!({ "blob": blob })).await);
        }
        let management = rill_process.monitoring();
        let http = reqwest::Client::new();
        let taken = http
            .post(format!("{management}/actuator/backups"))
            .json(&json!({"backupId": 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            taken.status().as_u16(),
            202,
            "{}",
            taken.text().await.unwrap()
        );
        rill_process.kill9();

        rill_process.restart();
        rill_process.wait_ready(Duration::from_secs(60)).await;
        let status: serde_json::Value = http
            .get(format!("{management}/actuator/backups/1"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let state = status["state"].as_str().unwrap();
        assert!(state == "FAILED" || state == "COMPLETED", "{status}");
        for part in status["details"].as_array().unwrap() {
            assert_ne!(part["state"], "IN_PROGRESS", "{status}");
        }
        for key in &keys {
            assert!(exists(&api, key).await, "instance {key} was lost");
        }
        // A new backup after the failed one completes.
        let (ok, out, err) = rill(&[
            "backup",
            "take",
            "2",
            "--wait",
            "--timeout",
            "60s",
            "--management",
            &management,
        ]);
        assert!(ok && out.contains("backup 2: COMPLETED"), "{out}{err}");
        eprintln!("the interrupted backup ended {state}");
        assert!(rill_process.terminate(Duration::from_secs(30)));
    });
}

/// `backup.schedule` every two seconds with `backup.retention.max-backups = 2`: the
/// standalone takes backups by itself, their ids are the scheduled times in epoch
/// seconds, and only the two newest completed ones (and any newer in progress) stay.
#[test]
fn scheduled_backups_take_growing_ids_and_the_retention_deletes_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("backups");
    let settings = [
        "backup.store=filesystem".to_owned(),
        format!("backup.filesystem.base-path={}", store.display()),
        "backup.schedule=*/2 * * * * *".to_owned(),
        "backup.retention.max-backups=2".to_owned(),
    ];
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut rill_process = Standalone::start(&dir.path().join("data"), &settings);
        rill_process.wait_ready(Duration::from_secs(60)).await;
        let management = rill_process.monitoring();
        let http = reqwest::Client::new();
        #[allow(clippy::disallowed_methods)] // compared with ids taken from the wall clock
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let deadline = Instant::now() + Duration::from_secs(30);
        let deleted_line = r#"rill_backup_operations_total{operation="delete",result="completed"}"#;
        loop {
            let page = support::metrics(&rill_process).await;
            let deleted = page
                .lines()
                .find_map(|l| l.strip_prefix(deleted_line))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0);
            if deleted >= 2.0 {
                assert!(page.contains("rill_backup_store_configured 1"), "{page}");
                let last_completed = page
                    .lines()
                    .find_map(|l| l.strip_prefix("rill_backup_last_completed_timestamp_seconds "))
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .unwrap_or(0.0);
                assert!(
                    last_completed + 5.0 >= started as f64,
                    "the last completed backup's time is recent: {last_completed}"
                );
                assert!(
                    page.contains(
                        r#"rill_backup_operations_total{operation="schedule",result="completed"}"#
                    ),
                    "{page}"
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the retention deleted no backups within 30 s\n{}",
                rill_process.log_text()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let backups: serde_json::Value = http
            .get(format!("{management}/actuator/backups"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let listed: Vec<(u64, String)> = backups
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["backupId"].as_u64().unwrap(),
                    b["state"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let completed = listed.iter().filter(|(_, s)| s == "COMPLETED").count();
        assert!(
            (1..=2).contains(&completed) && listed.len() <= 3,
            "the retention keeps two completed backups: {listed:?}"
        );
        for (id, _) in &listed {
            assert!(
                id % 2 == 0 && *id + 5 >= started && *id <= started + 60,
                "ids are the schedule's times in epoch seconds: {listed:?} (started {started})"
            );
        }
        assert!(listed.windows(2).all(|w| w[0].0 < w[1].0), "{listed:?}");
        // The store holds only what is listed.
        let mut on_disk: Vec<u64> = std::fs::read_dir(&store)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        on_disk.sort_unstable();
        let ids: Vec<u64> = listed.iter().map(|(id, _)| *id).collect();
        assert!(
            on_disk
                .iter()
                .all(|id| ids.contains(id) || *id > *ids.last().unwrap()),
            "deleted backups are gone from the store: {on_disk:?} listed {ids:?}"
        );
        assert!(rill_process.terminate(Duration::from_secs(30)));
    });
}

/// Waits at a message `go` correlated by the `key` variable.
const AWAIT_GO: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="await-go" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition messageRef="go" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
  <bpmn:message id="go" name="go"><bpmn:extensionElements><zeebe:subscription correlationKey="=key" /></bpmn:extensionElements></bpmn:message>
</bpmn:definitions>"#;

async fn publish_go(api: &Api, key: &str) {
    let (status, body) = api
        .post(
            "/v2/messages/publication",
            json!({"name": "go", "correlationKey": key, "timeToLive": 600_000}),
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "publish {key}: {body}");
}

/// Creates an instance of `await-go` waiting for `correlation`, through `api`, until a
/// partition with a leader takes it.
async fn create_retrying(api: &Api, correlation: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = api
            .post(
                "/v2/process-instances",
                json!({"processDefinitionId": "await-go", "variables": {"key": correlation}}),
            )
            .await
            .unwrap();
        if status == 200 {
            return body["processInstanceKey"].as_str().unwrap().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "create {correlation}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn instance_state(api: &Api, key: &str) -> Option<String> {
    let (status, body) = api
        .get(&format!("/v2/process-instances/{key}"))
        .await
        .unwrap();
    assert!(status == 200 || status == 404, "{status}: {body}");
    (status == 200).then(|| body["state"].as_str().unwrap_or_default().to_owned())
}

/// The checkpoint id each partition's leader reports on its broker's
/// `/actuator/partitions`, by partition.
async fn checkpoint_ids(brokers: &support::Brokers) -> Vec<(u64, u64)> {
    let mut ids = Vec::new();
    for node in &brokers.nodes {
        let partitions: serde_json::Value =
            reqwest::get(format!("{}/actuator/partitions", node.monitoring()))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        for (id, partition) in partitions.as_object().unwrap() {
            if partition["role"] == "LEADER" {
                ids.push((
                    id.parse().unwrap(),
                    partition["checkpointId"].as_u64().unwrap(),
                ));
            }
        }
    }
    ids.sort_unstable();
    ids
}

/// Backups taken while messages cross partitions, on two brokers that each lead one of
/// the two partitions (so cross-partition commands travel between processes, and the
/// backup's checkpoint reaches partition 2 through broker 0's forwarding): each instance
/// subscribes on the partition of its correlation key's hash, each message correlates to
/// an instance on either partition. Every subscription, correlation and acknowledgement
/// in flight at a cut lands on the same side of it on both partitions, so the restored
/// cluster has no instance that waits for a subscription the other partition never
/// opened: every restored instance either completed or takes a message published after
/// the restore, and both partitions report the restored backup's checkpoint id.
#[test]
fn a_backup_cut_through_messages_crossing_partitions_leaves_no_instance_stuck() {
    const LOAD_CLIENTS: usize = 6;
    const BACKUPS: [u64; 5] = [10, 20, 30, 40, 50];
    /// Asked while partition 2 is down; partition 2 records it from a delivery.
    const DELIVERED: u64 = 60;
    /// Taken in the middle of the load.
    const UNDER_LOAD: u64 = 30;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("backups");
    let store_settings = [
        "backup.store=filesystem".to_owned(),
        format!("backup.filesystem.base-path={}", store.display()),
    ];
    let extra: Vec<&str> = store_settings.iter().map(String::as_str).collect();
    let model = dir.path().join("await-go.bpmn");
    std::fs::write(&model, AWAIT_GO).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut brokers = support::Brokers::start(dir.path(), 2, 2, 1, &extra);
        brokers.wait_ready(Duration::from_secs(90)).await;
        let apis = [brokers.api(0), brokers.api(1)];
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match apis[0].deploy(&[model.as_path()]).await {
                Ok((200, _)) => break,
                other => assert!(Instant::now() < deadline, "deploy failed: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Until the deployment reaches partition 2, creates meant for it fail there.
        tokio::time::sleep(Duration::from_millis(500)).await;

        // The load: instances waiting for `go` with their own key, each message
        // published a few instances later, so subscriptions are being opened, messages
        // correlated and acknowledgements recorded across the partitions all the time.
        // Several clients at once, through both brokers' gateways.
        let created: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let loads: Vec<_> = (0..LOAD_CLIENTS)
            .map(|client| {
                let api = apis[client % 2].clone();
                let (created, stop) = (created.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let correlation = format!("order-{client}-{n}");
                        let key = api.create("await-go", json!({"key": correlation})).await;
                        created.lock().await.push((key, correlation));
                        if n >= 3 {
                            publish_go(&api, &format!("order-{client}-{}", n - 3)).await;
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        let management = brokers.nodes[0].monitoring();
        for backup in BACKUPS {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let (ok, out, err) = rill(&[
                "backup",
                "take",
                &backup.to_string(),
                "--wait",
                "--timeout",
                "60s",
                "--management",
                &management,
            ]);
            assert!(
                ok && out.contains(&format!("backup {backup}: COMPLETED")),
                "backup {backup}: {out}{err}\n{}",
                brokers.logs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.store(true, Ordering::Relaxed);
        for load in loads {
            load.await.unwrap();
        }
        let created = created.lock().await.clone();
        let partitions: std::collections::BTreeSet<u64> = created
            .iter()
            .map(|(key, _)| key.parse::<u64>().unwrap() >> 51)
            .collect();
        assert_eq!(partitions.len(), 2, "instances on both partitions");
        // Every partition agrees on the latest checkpoint.
        let ids = checkpoint_ids(&brokers).await;
        assert_eq!(ids, vec![(1, BACKUPS[4]), (2, BACKUPS[4])]);
        let logs = brokers.logs();
        eprintln!(
            "{} instances; checkpoints a partition recorded first for a command from the \
             other: {}, for an acknowledgement: {}; found recorded when the backup asked: {}",
            created.len(),
            logs.matches("a command from another partition carries a later checkpoint")
                .count(),
            logs.matches("another partition acknowledged after a later checkpoint")
                .count(),
            logs.matches("checkpoint recorded already").count(),
        );

        // A partition the backup's request cannot reach records the checkpoint from the
        // first command the other partition delivers to it, and takes its part then:
        // broker 1 (partition 2) is down while backup 60 is asked for, and instances on
        // partition 1 wait to open their subscriptions on partition 2 meanwhile.
        assert!(brokers.nodes[1].terminate(Duration::from_secs(30)));
        let mut late = Vec::new();
        for n in 0..20 {
            let correlation = format!("late-{n}");
            let key = create_retrying(&apis[0], &correlation).await;
            late.push((key, correlation));
        }
        let asked = reqwest::Client::new()
            .post(format!("{management}/actuator/backups"))
            .json(&json!({"backupId": DELIVERED}))
            .send()
            .await
            .unwrap();
        let status = asked.status().as_u16();
        let answer = asked.text().await.unwrap();
        assert!(
            status == 503 && answer.contains("partition 2"),
            "{status}: {answer}"
        );
        brokers.nodes[1].launch();
        brokers.wait_ready(Duration::from_secs(90)).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status: serde_json::Value =
                reqwest::get(format!("{management}/actuator/backups/{DELIVERED}"))
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
            if status["state"] == "COMPLETED" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "backup {DELIVERED} not completed: {status}\n{}",
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Through a command partition 1 delivered, or the answer to one partition 2
        // delivered again after its restart: whichever came first.
        let log = brokers.nodes[1].log_text();
        assert!(
            log.contains("a command from another partition carries a later checkpoint")
                || log.contains("another partition acknowledged after a later checkpoint"),
            "{}",
            brokers.logs()
        );
        let ids = checkpoint_ids(&brokers).await;
        assert_eq!(ids, vec![(1, DELIVERED), (2, DELIVERED)]);
        let created: Vec<(String, String)> = created.into_iter().chain(late).collect();

        // Restore a backup taken under the load, then the one whose part of partition 2
        // was taken at a delivery.
        restore_and_check(&mut brokers, UNDER_LOAD, &created).await;
        restore_and_check(&mut brokers, DELIVERED, &created).await;
        for node in &mut brokers.nodes {
            assert!(node.terminate(Duration::from_secs(30)));
        }
    });
}

/// Stops `brokers`, restores `backup` into their emptied data directories (each with
/// its own settings) and starts them; then checks that both partitions report the
/// backup's checkpoint id and that no instance of `created` is stuck: each one there
/// either completed or completes on a message published now.
async fn restore_and_check(
    brokers: &mut support::Brokers,
    backup: u64,
    created: &[(String, String)],
) {
    brokers.restore_all(backup);
    brokers.wait_ready(Duration::from_secs(90)).await;
    let api = brokers.api(0);

    // The restored partitions' checkpoint ids agree: both cut at the restored backup.
    let ids = checkpoint_ids(brokers).await;
    assert_eq!(ids, vec![(1, backup), (2, backup)]);
    let lower = reqwest::Client::new()
        .post(format!(
            "{}/actuator/backups",
            brokers.nodes[0].monitoring()
        ))
        .json(&json!({"backupId": backup - 5}))
        .send()
        .await
        .unwrap();
    let refusal = lower.text().await.unwrap();
    assert!(
        refusal.contains(&format!("partition 1 has backup {backup}"))
            && refusal.contains(&format!("partition 2 has backup {backup}")),
        "{refusal}"
    );

    // Nothing is stuck: a waiting instance takes a message published now.
    let mut waiting = Vec::new();
    let mut completed = 0;
    for (key, correlation) in created {
        match instance_state(&api, key).await.as_deref() {
            // Created after the cut.
            None => {}
            Some("COMPLETED") => completed += 1,
            Some("ACTIVE") => waiting.push((key, correlation)),
            Some(other) => panic!("instance {key} is {other}"),
        }
    }
    eprintln!(
        "backup {backup} restored: {} waiting, {completed} completed",
        waiting.len()
    );
    assert!(
        !waiting.is_empty() && completed > 0,
        "the backup holds instances waiting and completed: {} waiting, {completed} completed",
        waiting.len()
    );
    for (_, correlation) in &waiting {
        publish_go(&api, correlation).await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    for (key, correlation) in &waiting {
        loop {
            let state = instance_state(&api, key).await;
            if state.as_deref() == Some("COMPLETED") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "instance {key} ({correlation}) of backup {backup} is stuck: {state:?}\n{}",
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
