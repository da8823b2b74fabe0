//! The S3 backup store against a real S3-compatible server: moto's server mode (PyPI
//! `moto[server]`, unmodified, run by `tests/clients/s3-server/run.sh`) with request
//! signatures checked, so every request Rill signs is verified by another SigV4
//! implementation than Rill's own.
//!
//! - the store alone: a multipart upload read back whole, listings over several pages,
//!   a delete;
//! - the real `rill` binary: a backup of a standalone under load taken to S3, listed and
//!   read back, a damaged object named at restore, a restore from S3 into an empty data
//!   directory (credentials from the AWS environment variables), and the restored
//!   standalone holds exactly what was acknowledged before the checkpoint; the backup
//!   deleted; three brokers under load backed up through one of them and every data
//!   directory restored from the bucket;
//! - a broker with wrong credentials or a missing bucket refuses to start, naming the
//!   setting.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rill_broker::backup::{
    BackupState, BackupStore, PartitionBackupStatus, S3Environment, S3Store,
};
use serde_json::json;
use support::{Api, Standalone, deploy, free_port, rill_binary};

const BUCKET: &str = "rill-backups";

/// A running moto server, stopped when dropped.
struct S3Server {
    child: Child,
    endpoint: String,
    access_key: String,
    secret_key: String,
}

impl S3Server {
    fn start(dir: &Path, buckets: &[&str]) -> S3Server {
        let port = free_port();
        let log = dir.join(format!("s3-{port}.log"));
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/s3-server/run.sh");
        let child = Command::new("bash")
            .arg(script)
            .arg(port.to_string())
            .args(buckets)
            .env(
                "RILL_S3_VENV",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("s3-server"),
            )
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(std::fs::File::create(log.with_extension("err")).expect("log"))
            .spawn()
            .expect("start the S3 server (needs bash and python3 with venv)");
        let mut server = S3Server {
            child,
            endpoint: String::new(),
            access_key: String::new(),
            secret_key: String::new(),
        };
        // A pip install on a cold cache is bounded by run.sh (600 s).
        let deadline = Instant::now() + Duration::from_secs(620);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.starts_with("s3 ")) {
                let fields: Vec<&str> = line.split_whitespace().collect();
                server.endpoint = fields[1].to_owned();
                server.access_key = fields[2].to_owned();
                server.secret_key = fields[3].to_owned();
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "the S3 server exited ({status}): {text}\n{}",
                    std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "the S3 server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The store settings, without credentials.
    fn settings(&self, bucket: &str) -> Vec<String> {
        vec![
            "backup.store=s3".to_owned(),
            format!("backup.s3.bucket={bucket}"),
            "backup.s3.base-path=cluster-a".to_owned(),
            format!("backup.s3.endpoint={}", self.endpoint),
            "backup.s3.region=us-east-1".to_owned(),
        ]
    }

    /// The store settings with the credentials as settings.
    fn settings_with_keys(&self, bucket: &str, secret_key: &str) -> Vec<String> {
        let mut settings = self.settings(bucket);
        settings.push(format!("backup.s3.access-key={}", self.access_key));
        settings.push(format!("backup.s3.secret-key={secret_key}"));
        settings
    }

    fn store(&self) -> S3Store {
        let config = rill_config::S3BackupConfig {
            bucket: Some(BUCKET.to_owned()),
            base_path: Some("store-test".to_owned()),
            endpoint: Some(self.endpoint.clone()),
            region: Some("us-east-1".to_owned()),
            access_key: Some(self.access_key.clone()),
            secret_key: Some(self.secret_key.clone()),
        };
        S3Store::from_config(&config, &S3Environment::default()).expect("the store")
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn as_args(settings: &[String]) -> Vec<String> {
    settings
        .iter()
        .flat_map(|s| ["--set".to_owned(), s.clone()])
        .collect()
}

/// Runs `rill <args>` with `env`: success, stdout, stderr.
fn rill(args: &[String], env: &[(&str, &str)]) -> (bool, String, String) {
    let output = Command::new(rill_binary())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run rill");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn status(backup_id: u64, partition_id: u16) -> PartitionBackupStatus {
    PartitionBackupStatus {
        backup_id,
        partition_id,
        node_id: 0,
        state: BackupState::Completed,
        failure_reason: None,
        checkpoint_position: 1,
        created_at: 1,
        last_updated: 1,
        size_bytes: 0,
        file_count: 0,
        broker_version: "test".to_owned(),
    }
}

#[test]
fn the_s3_store_uploads_in_parts_lists_in_pages_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(dir.path(), &[BUCKET]);
    // Parts of 5 MiB (S3's smallest) and list pages of 2 keys.
    let store = server.store().with_sizes(5 << 20, 2);
    store.check().expect("the bucket is reachable");

    // 12 MiB and a bit: two full parts and a small last one.
    let data: Vec<u8> = (0..(12 << 20) + 4321u32).map(|i| (i % 251) as u8).collect();
    let mut file = store.create_file(3, 1, "default-0000.kv").unwrap();
    for piece in data.chunks(1 << 20) {
        file.write(piece).unwrap();
    }
    file.finish().unwrap();
    let (mut input, what) = store.open_file(3, 1, "default-0000.kv").unwrap();
    assert_eq!(
        what,
        format!("s3://{BUCKET}/store-test/3/partition-1/default-0000.kv")
    );
    let mut read = Vec::new();
    input.read_to_end(&mut read).unwrap();
    assert!(read == data, "the object reads back as written");
    // A small file goes up in one piece.
    let mut small = store.create_file(3, 1, "export-0000.kv").unwrap();
    small.write(b"RILLKV1\n").unwrap();
    small.finish().unwrap();

    for backup_id in [1, 2, 3, 10, 11] {
        for partition in [1, 2, 3] {
            store
                .write_status(&status(backup_id, partition), true)
                .unwrap();
        }
    }
    assert_eq!(store.backup_ids().unwrap(), vec![1, 2, 3, 10, 11]);
    assert_eq!(store.partitions(10).unwrap(), vec![1, 2, 3]);
    assert_eq!(store.status(10, 2).unwrap(), Some(status(10, 2)));
    assert_eq!(store.status(10, 4).unwrap(), None);
    assert_eq!(store.manifest(10, 2).unwrap(), None);

    assert!(store.delete(3).unwrap());
    assert!(!store.delete(3).unwrap());
    assert_eq!(store.backup_ids().unwrap(), vec![1, 2, 10, 11]);
    assert_eq!(store.partitions(3).unwrap(), Vec::<u16>::new());
    let Err(gone) = store.open_file(3, 1, "default-0000.kv") else {
        panic!("a deleted object reads");
    };
    assert!(
        gone.contains("NoSuchKey") && gone.contains("default-0000.kv"),
        "{gone}"
    );
}

/// Whether the instance `key` exists.
async fn exists(api: &Api, key: &str) -> bool {
    let (status, body) = api
        .get(&format!("/v2/process-instances/{key}"))
        .await
        .unwrap();
    assert!(status == 200 || status == 404, "{status}: {body}");
    status == 200
}

#[test]
fn a_standalone_backed_up_to_s3_is_restored_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(dir.path(), &[BUCKET]);
    let data = dir.path().join("data");
    let settings = server.settings_with_keys(BUCKET, &server.secret_key);
    let set: Vec<&str> = settings.iter().map(String::as_str).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut standalone = Standalone::start(&data, &set);
        standalone.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(standalone.rest());
        let management = standalone.monitoring();
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let mut before = api
            .create_on_every_partition("two-rest-calls", 10, 2, || standalone.log_text())
            .await;
        // 1 MiB variables, so that a partition's files go up in several parts.
        let blob = "x".repeat(1 << 20);
        for _ in 0..24 {
            before.push(api.create("two-rest-calls", json!({ "blob": blob })).await);
        }

        let take = strings(&[
            "backup",
            "take",
            "5",
            "--wait",
            "--timeout",
            "60s",
            "--management",
            &management,
        ]);
        let (ok, out, err) = rill(&take, &[]);
        assert!(
            ok,
            "rill backup take failed: {out}{err}\n{}",
            standalone.log_text()
        );
        assert!(out.contains("backup 5: COMPLETED"), "{out}");
        let mut after = Vec::new();
        for _ in 0..6 {
            after.push(api.create("two-rest-calls", json!({})).await);
        }
        let (ok, out, err) = rill(
            &strings(&["backup", "list", "--management", &management]),
            &[],
        );
        assert!(
            ok && out.contains('5') && out.contains("COMPLETED"),
            "{out}{err}"
        );
        let (ok, out, err) = rill(
            &strings(&[
                "backup",
                "status",
                "5",
                "--json",
                "--management",
                &management,
            ]),
            &[],
        );
        assert!(ok, "{err}");
        let status: serde_json::Value = serde_json::from_str(&out).unwrap();
        let details = status["details"].as_array().unwrap();
        assert_eq!(details.len(), 2, "{status}");
        let bytes: u64 = details
            .iter()
            .map(|d| d["sizeBytes"].as_u64().unwrap())
            .sum();
        assert!(
            bytes > 24 << 20,
            "the variables are in the backup: {status}"
        );
        assert!(standalone.terminate(Duration::from_secs(30)));

        // The objects as the filesystem store lays out files.
        let store = S3Store::from_config(
            &rill_config::S3BackupConfig {
                bucket: Some(BUCKET.to_owned()),
                base_path: Some("cluster-a".to_owned()),
                endpoint: Some(server.endpoint.clone()),
                region: None,
                access_key: Some(server.access_key.clone()),
                secret_key: Some(server.secret_key.clone()),
            },
            &S3Environment::default(),
        )
        .unwrap();
        assert_eq!(store.backup_ids().unwrap(), vec![5]);
        assert_eq!(store.partitions(5).unwrap(), vec![1, 2]);
        let manifest = store.manifest(5, 2).unwrap().expect("a manifest");
        let victim = manifest
            .files
            .iter()
            .find(|f| f.size > 1000)
            .expect("a data file with entries")
            .clone();

        // Credentials from the environment, as in a Kubernetes pod with a Secret.
        let env = [
            ("AWS_ACCESS_KEY_ID", server.access_key.as_str()),
            ("AWS_SECRET_ACCESS_KEY", server.secret_key.as_str()),
        ];
        let restore = |into: &Path| {
            let mut args = strings(&["restore", "--backup-id", "5", "--data-dir"]);
            args.push(into.display().to_string());
            args.extend(as_args(&server.settings(BUCKET)));
            rill(&args, &env)
        };

        // A damaged object is named, and nothing is restored.
        let original = {
            let (mut input, _) = store.open_file(5, 2, &victim.name).unwrap();
            let mut bytes = Vec::new();
            input.read_to_end(&mut bytes).unwrap();
            bytes
        };
        let put = |bytes: &[u8]| {
            let mut file = store.create_file(5, 2, &victim.name).unwrap();
            file.write(bytes).unwrap();
            file.finish().unwrap();
        };
        let mut damaged = original.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x20;
        put(&damaged);
        let elsewhere = dir.path().join("elsewhere");
        let (ok, _, err) = restore(&elsewhere);
        assert!(!ok);
        assert!(
            err.contains(&format!(
                "s3://{BUCKET}/cluster-a/5/partition-2/{}",
                victim.name
            )) && err.contains("damaged"),
            "{err}"
        );
        assert!(
            !elsewhere.exists() || std::fs::read_dir(&elsewhere).unwrap().next().is_none(),
            "a refused restore writes nothing"
        );
        put(&original);

        std::fs::remove_dir_all(&data).unwrap();
        let (ok, out, err) = restore(&data);
        assert!(ok, "restore failed: {out}{err}");
        assert!(
            out.contains("partition 1") && out.contains("partition 2"),
            "{out}"
        );

        let mut restored = Standalone::start(&data, &set);
        restored.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(restored.rest());
        for key in &before {
            assert!(
                exists(&api, key).await,
                "instance {key}, acknowledged before the checkpoint, is missing\n{}",
                restored.log_text()
            );
        }
        for key in &after {
            assert!(
                !exists(&api, key).await,
                "instance {key}, created after the backup, was restored"
            );
        }
        api.create("two-rest-calls", json!({})).await;

        // Deleted through the API: the objects are gone.
        let management = restored.monitoring();
        let (ok, out, err) = rill(
            &strings(&["backup", "delete", "5", "--management", &management]),
            &[],
        );
        assert!(ok, "{out}{err}");
        let (ok, out, _) = rill(
            &strings(&["backup", "list", "--management", &management]),
            &[],
        );
        assert!(ok && out.contains("no backups"), "{out}");
        assert_eq!(store.backup_ids().unwrap(), Vec::<u64>::new());
        assert!(restored.terminate(Duration::from_secs(30)));
    });
}

/// `rill standalone` with `settings`: it must exit on its own, failing; its output.
fn refused_start(dir: &Path, name: &str, settings: &[String]) -> String {
    let data: PathBuf = dir.join(name);
    let mut args = strings(&["standalone", "--data-dir"]);
    args.push(data.display().to_string());
    for (setting, port) in [
        ("gateway.rest-port", free_port()),
        ("gateway.grpc-port", free_port()),
        ("monitoring.port", free_port()),
    ] {
        args.push("--set".to_owned());
        args.push(format!("{setting}={port}"));
    }
    args.extend(as_args(settings));
    let mut child = Command::new(rill_binary())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rill");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(!status.success(), "rill started: {text}");
            return text;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("rill with {settings:?} did not refuse to start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_broker_with_wrong_s3_credentials_or_a_missing_bucket_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(dir.path(), &[BUCKET]);

    let text = refused_start(
        dir.path(),
        "wrong-secret",
        &server.settings_with_keys(BUCKET, "not-the-secret-key"),
    );
    assert!(
        text.contains("backup.s3.access-key and backup.s3.secret-key")
            && text.contains("SignatureDoesNotMatch")
            && text.contains(BUCKET),
        "{text}"
    );
    assert!(
        !text.contains("not-the-secret-key"),
        "the secret never shows: {text}"
    );

    let mut unknown_key = server.settings(BUCKET);
    unknown_key.push("backup.s3.access-key=AKIAUNKNOWNUNKNOWN00".to_owned());
    unknown_key.push(format!("backup.s3.secret-key={}", server.secret_key));
    let text = refused_start(dir.path(), "unknown-key", &unknown_key);
    assert!(
        text.contains("backup.s3.access-key") && text.contains("InvalidAccessKeyId"),
        "{text}"
    );

    let text = refused_start(
        dir.path(),
        "missing-bucket",
        &server.settings_with_keys("no-such-bucket", &server.secret_key),
    );
    assert!(
        text.contains("backup.s3.bucket")
            && text.contains("NoSuchBucket")
            && text.contains("no-such-bucket"),
        "{text}"
    );

    // No credentials at all (none set, none in the environment).
    let mut args = strings(&["restore", "--backup-id", "1", "--data-dir"]);
    args.push(dir.path().join("none").display().to_string());
    args.extend(as_args(&server.settings(BUCKET)));
    let output = Command::new(rill_binary())
        .args(&args)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(text.contains("AWS_ACCESS_KEY_ID"), "{text}");
}

/// An instance created and when its creation was sent and answered.
#[derive(Clone, Debug)]
struct Created {
    key: String,
    sent: Instant,
    acknowledged: Instant,
}

/// Three brokers under load back up to S3 through one of them (the checkpoints of the
/// partitions led elsewhere are forwarded, every leader writes its part to the bucket);
/// every data directory is wiped and restored from the bucket with its broker's own
/// settings, and the restored cluster holds exactly the instances acknowledged before
/// the backup was asked for (and none sent after it was answered).
#[test]
fn a_cluster_under_load_backed_up_to_s3_is_restored_from_it() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let server = S3Server::start(dir.path(), &[BUCKET]);
    let settings = server.settings_with_keys(BUCKET, &server.secret_key);
    let extra: Vec<&str> = settings.iter().map(String::as_str).collect();
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
            .create_on_every_partition("two-rest-calls", 15, 3, || brokers.logs())
            .await;

        let created: Arc<tokio::sync::Mutex<Vec<Created>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let load = {
            let (api, created, stop) = (api.clone(), created.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let key = api.create("two-rest-calls", json!({})).await;
                    created.lock().await.push(Created {
                        key,
                        sent,
                        acknowledged: Instant::now(),
                    });
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let management = brokers.nodes[1].monitoring();
        let asked = Instant::now();
        let (ok, out, err) = rill(
            &strings(&[
                "backup",
                "take",
                "21",
                "--wait",
                "--timeout",
                "60s",
                "--management",
                &management,
            ]),
            &[],
        );
        let answered = Instant::now();
        assert!(
            ok,
            "rill backup take failed: {out}{err}\n{}",
            brokers.logs()
        );
        assert!(out.contains("backup 21: COMPLETED"), "{out}");
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
        // Any broker answers for the whole backup from the bucket.
        let (ok, out, _) = rill(
            &strings(&[
                "backup",
                "status",
                "21",
                "--management",
                &brokers.nodes[2].monitoring(),
            ]),
            &[],
        );
        assert!(ok && out.contains("backup 21: COMPLETED"), "{out}");

        brokers.restore_all(21);
        brokers.wait_ready(Duration::from_secs(90)).await;
        let api = brokers.api(2);
        for key in before
            .iter()
            .chain(acknowledged_before.iter().map(|c| &c.key))
        {
            assert!(
                exists(&api, key).await,
                "instance {key}, acknowledged before the checkpoint, is missing\n{}",
                brokers.logs()
            );
        }
        for created in &sent_after {
            assert!(
                !exists(&api, &created.key).await,
                "instance {}, created after the backup, was restored",
                created.key
            );
        }
        api.create("two-rest-calls", json!({})).await;
        for node in &mut brokers.nodes {
            assert!(node.terminate(Duration::from_secs(30)));
        }
    });
}
