//! A full disk, with real `rill` processes whose data directories are small tmpfs
//! mounts (docs/decisions/disk-full.md): new commands are refused before the disk is
//! full, naming the disk and the setting, while commands that complete work still pass;
//! a write that fails with ENOSPC stops the partition's intake but not the partition;
//! once the tmpfs is grown, the partition serves again without a restart, with every
//! acknowledged instance still there; and in a cluster, a follower past the replication
//! watermark takes no entries until its disk has room, then catches up.
//!
//! Mounting a tmpfs needs root (CI runs the suite as root).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers, Standalone, deploy, gauge, metrics};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A tmpfs, unmounted when dropped (whatever the test did meanwhile).
struct Tmpfs {
    mount_point: PathBuf,
    /// The temporary directory it is mounted in, if it made one.
    _dir: Option<tempfile::TempDir>,
}

impl Tmpfs {
    /// A tmpfs of `megabytes` on a temporary directory of its own.
    fn mount(megabytes: u32) -> Tmpfs {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut tmpfs = Tmpfs::mount_at(&dir.path().join("volume"), megabytes);
        tmpfs._dir = Some(dir);
        tmpfs
    }

    /// A tmpfs of `megabytes` on `mount_point` (created).
    fn mount_at(mount_point: &Path, megabytes: u32) -> Tmpfs {
        std::fs::create_dir_all(mount_point).expect("mount point");
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(mount_point));
        Tmpfs {
            mount_point: mount_point.to_path_buf(),
            _dir: None,
        }
    }

    fn path(&self) -> &Path {
        &self.mount_point
    }

    /// Grows (or shrinks) the tmpfs in place: files and open handles stay.
    fn resize(&self, megabytes: u32) {
        run(Command::new("mount")
            .args(["-o", &format!("remount,size={megabytes}m")])
            .arg(&self.mount_point));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a process that still has files open (a failed test) does not keep it.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.mount_point)
            .status();
    }
}

fn run(command: &mut Command) {
    let output = command.output().expect("run mount");
    assert!(
        output.status.success(),
        "{command:?} failed (the disk tests mount a tmpfs and need root): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// 20 KB of variables that do not compress much.
fn bulky_variables(n: usize) -> Value {
    let mut x = n as u64 + 1;
    let text: String = (0..20_000)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(b'a' + ((x >> 59) as u8 % 26))
        })
        .collect();
    json!({"n": n, "payload": text})
}

async fn create(api: &Api, n: usize) -> (u16, Value) {
    api.post(
        "/v2/process-instances",
        json!({"processDefinitionId": "two-rest-calls", "variables": bulky_variables(n)}),
    )
    .await
    .unwrap_or_else(|e| (0, Value::String(e.to_string())))
}

/// The value of an unlabelled gauge on a metrics page.
fn plain_gauge(page: &str, name: &str) -> Option<f64> {
    page.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|value| value.trim().parse().ok())
}

async fn health(rill: &Standalone) -> u16 {
    reqwest::get(format!("{}/health", rill.monitoring()))
        .await
        .map_or(0, |r| r.status().as_u16())
}

/// Every acknowledged instance reads back.
async fn assert_all_present(api: &Api, keys: &[String], logs: impl Fn() -> String) {
    for key in keys {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = api
                .get(&format!("/v2/process-instances/{key}"))
                .await
                .unwrap_or((0, Value::Null));
            if status == 200 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "acknowledged instance {key} is gone: {status} {body}\n{}",
                logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Below the command watermark every create is taken; past it, creates get 503
/// RESOURCE_EXHAUSTED naming the data directory's disk and the setting, while a job
/// completion still passes. Growing the disk lets creates in again, with no restart.
#[test]
fn new_commands_are_refused_past_the_watermark_and_completions_still_pass() {
    let volume = Tmpfs::mount(96);
    let data = volume.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(
            &data,
            &[
                "cluster.partitions-count=1",
                "data.disk-usage-command-watermark=0.6",
                "data.disk-usage-replication-watermark=0.95",
            ],
        );
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let logs = || rill.log_text();
        deploy(&api, &["two-rest-calls.bpmn"]).await;

        let mut acknowledged = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(300);
        let refusal = loop {
            let (status, body) = create(&api, acknowledged.len()).await;
            match status {
                200 => acknowledged.push(body["processInstanceKey"].as_str().unwrap().to_owned()),
                503 if body["title"] == "RESOURCE_EXHAUSTED"
                    && body["detail"]
                        .as_str()
                        .is_some_and(|d| d.contains("disk-usage-command-watermark")) =>
                {
                    break body;
                }
                _ => panic!("create answered {status} {body}\n{}", logs()),
            }
            assert!(
                Instant::now() < deadline,
                "never refused after {} creates\n{}",
                acknowledged.len(),
                logs()
            );
        };
        let detail = refusal["detail"].as_str().unwrap();
        assert!(detail.contains(&data.display().to_string()), "{detail}");
        assert!(detail.contains("% full"), "{detail}");
        let page = metrics(&rill).await;
        let usage = plain_gauge(&page, "rill_disk_usage_ratio").expect("usage gauge");
        assert!(usage >= 0.6, "refused at a usage of {usage}");
        assert_eq!(
            plain_gauge(&page, "rill_disk_command_watermark_ratio"),
            Some(0.6)
        );
        eprintln!(
            "refused after {} creates at {:.1}% usage: {detail}",
            acknowledged.len(),
            usage * 100.0
        );

        // Completing work frees space in time: it passes.
        let (status, jobs) = api
            .post(
                "/v2/jobs/activation",
                json!({"type": "restCall", "maxJobsToActivate": 1, "timeout": 60000}),
            )
            .await
            .expect("activate");
        assert_eq!(status, 200, "activation while refusing creates: {jobs}");
        let job = jobs["jobs"][0]["jobKey"]
            .as_str()
            .unwrap_or_else(|| panic!("a job: {jobs}"));
        let (status, body) = api
            .post(&format!("/v2/jobs/{job}/completion"), json!({}))
            .await
            .expect("complete");
        assert_eq!(status, 204, "completion while refusing creates: {body}");
        let (status, _) = create(&api, acknowledged.len()).await;
        assert_eq!(status, 503, "still refused");

        // More room: creates are taken again, by the same process.
        volume.resize(512);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = create(&api, acknowledged.len()).await;
            if status == 200 {
                acknowledged.push(body["processInstanceKey"].as_str().unwrap().to_owned());
                break;
            }
            assert_eq!(status, 503, "{body}");
            assert!(Instant::now() < deadline, "still refused: {body}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(rill.is_running());
        assert_all_present(&api, &acknowledged, logs).await;
        assert!(rill.terminate(Duration::from_secs(30)), "clean shutdown");
    });
}

/// With the watermarks at 1, creates go on until a write fails with ENOSPC. The
/// partition stops taking commands and reports unhealthy, but keeps running; once the
/// tmpfs is grown, it serves again by itself, and every acknowledged instance is there.
#[test]
fn a_partition_survives_enospc_and_serves_again_once_space_returns() {
    let volume = Tmpfs::mount(96);
    let data = volume.path().join("data");
    runtime().block_on(async {
        let mut rill = Standalone::start(
            &data,
            &[
                "cluster.partitions-count=1",
                "data.disk-usage-command-watermark=1",
                "data.disk-usage-replication-watermark=1",
                "gateway.request-timeout=3s",
            ],
        );
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let logs = || rill.log_text();
        deploy(&api, &["two-rest-calls.bpmn"]).await;

        let mut acknowledged = Vec::new();
        let mut failed = 0;
        let mut unhealthy = false;
        let deadline = Instant::now() + Duration::from_secs(300);
        while !unhealthy || failed < 5 {
            let (status, body) = create(&api, acknowledged.len() + failed).await;
            match status {
                200 => acknowledged.push(body["processInstanceKey"].as_str().unwrap().to_owned()),
                // Refused while the disk cannot be written; or no answer in time.
                503 | 504 => failed += 1,
                _ => panic!("create answered {status} {body}\n{}", logs()),
            }
            if failed > 0 {
                unhealthy = health(&rill).await != 200;
            }
            assert!(rill.is_running(), "rill exited\n{}", logs());
            assert!(
                Instant::now() < deadline,
                "no write failure after {} creates ({failed} failed, unhealthy: {unhealthy})\n{}",
                acknowledged.len(),
                logs()
            );
        }
        let page = metrics(&rill).await;
        assert_eq!(
            support::gauge(&page, "rill_storage_write_failing", 1),
            Some(1),
            "the failing write shows in the metrics"
        );
        let (status, body) = create(&api, 999_999).await;
        assert_eq!(status, 503, "{body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("cannot write to disk"), "{detail}");
        assert!(logs().contains("No space left on device"), "{}", logs());
        eprintln!(
            "{} creates acknowledged before ENOSPC; refused: {detail}",
            acknowledged.len()
        );

        // Space comes back: the same process serves again by itself.
        volume.resize(512);
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut n = 0;
        loop {
            n += 1;
            let (status, body) = create(&api, 1_000_000 + n).await;
            if status == 200 && health(&rill).await == 200 {
                acknowledged.push(body["processInstanceKey"].as_str().unwrap().to_owned());
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no recovery after the disk grew: {status} {body}\n{}",
                logs()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(rill.is_running(), "rill exited\n{}", logs());
        assert!(
            !logs().contains("stopped after a fatal error"),
            "the partition stopped\n{}",
            logs()
        );
        let page = metrics(&rill).await;
        assert_eq!(
            support::gauge(&page, "rill_storage_write_failing", 1),
            Some(0)
        );
        assert_all_present(&api, &acknowledged, logs).await;
        assert!(rill.terminate(Duration::from_secs(30)), "clean shutdown");
    });
}

/// The applied index of partition 1 on `broker` (`None` while it does not answer).
async fn applied(brokers: &Brokers, broker: usize) -> Option<i64> {
    gauge(
        &metrics(&brokers.nodes[broker]).await,
        "rill_raft_applied_index",
        1,
    )
}

/// Three brokers, each on a tmpfs of its own. Broker 2's watermarks are so low that its
/// disk is past them: as a follower it refuses the leader's entries (without standing
/// for election), while the other two commit every create. Once its tmpfs is grown far
/// enough, it takes the entries again and catches up, with no restart.
#[test]
fn a_follower_past_the_replication_watermark_takes_no_entries_until_its_disk_has_room() {
    let dir = tempfile::tempdir().expect("tempdir");
    let volumes: Vec<Tmpfs> = (0..3)
        .map(|i| Tmpfs::mount_at(&dir.path().join(format!("broker-{i}")), 128))
        .collect();
    runtime().block_on(async {
        let mut brokers = Brokers::start_with(dir.path(), 3, 1, 3, &[], |i| {
            if i == 2 {
                vec![
                    "data.disk-usage-command-watermark=0.05".to_owned(),
                    "data.disk-usage-replication-watermark=0.05".to_owned(),
                ]
            } else {
                Vec::new()
            }
        });
        brokers.wait_ready(Duration::from_secs(60)).await;
        let logs = || brokers.logs();
        let leader = brokers
            .wait_leader(1, Duration::from_secs(30))
            .await
            .expect("a leader");
        assert_ne!(leader, 2, "broker 2 stands last in the priority order");
        let api = brokers.api(leader as usize);
        deploy(&api, &["two-rest-calls.bpmn"]).await;

        // Enough for broker 2's tmpfs to be past 5% by the time most entries come.
        let mut acknowledged = Vec::new();
        for n in 0..300 {
            let (status, body) = create(&api, n).await;
            assert_eq!(status, 200, "create {n}: {body}\n{}", logs());
            acknowledged.push(body["processInstanceKey"].as_str().unwrap().to_owned());
        }
        let page = metrics(&brokers.nodes[2]).await;
        let usage = plain_gauge(&page, "rill_disk_usage_ratio").expect("usage gauge");
        assert!(usage >= 0.05, "broker 2's disk is only {usage} full");
        let (ahead, behind) = (
            applied(&brokers, leader as usize)
                .await
                .expect("leader's index"),
            applied(&brokers, 2).await.expect("broker 2's index"),
        );
        assert!(
            behind + 100 < ahead,
            "broker 2 applied up to {behind}, the leader {ahead}: it took the entries\n{}",
            logs()
        );
        assert_eq!(
            gauge(&page, "rill_raft_role", 1),
            Some(1),
            "broker 2 stays a follower"
        );
        eprintln!(
            "broker 2 at {:.1}% stopped at index {behind}; the leader is at {ahead}",
            usage * 100.0
        );

        // Room again: broker 2 catches up by itself.
        volumes[2].resize(64 * 1024);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let target = applied(&brokers, leader as usize).await.unwrap_or(i64::MAX);
            if applied(&brokers, 2)
                .await
                .is_some_and(|index| index >= target)
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "broker 2 did not catch up: {:?} of {target}\n{}",
                applied(&brokers, 2).await,
                logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(
            brokers.wait_leader(1, Duration::from_secs(5)).await,
            Some(leader),
            "no election on the way"
        );
        assert_all_present(&api, &acknowledged, logs).await;
        for node in &mut brokers.nodes {
            assert!(node.terminate(Duration::from_secs(30)), "clean shutdown");
        }
    });
    drop(volumes);
}
