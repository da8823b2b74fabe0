//! Runs the real `rill` binary for end-to-end tests: fresh ports, a temporary data
//! directory, readiness via the monitoring port, SIGKILL and SIGTERM.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Mutex;

/// A port nobody listens on right now, below the kernel's ephemeral range (32768 and up
/// on Linux): a port taken from that range and released can be handed to any process's
/// next outgoing connection before the broker meant to listen on it starts. Each test
/// process starts at its own place in the range, so parallel tests rarely meet. Rill's
/// own default ports (26500–26502, and the README's three brokers up to 26522) are never
/// handed out: a process that keeps a default would refuse the same port for another
/// setting.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    if NEXT.load(Ordering::Relaxed) == u32::MAX {
        #[allow(clippy::disallowed_methods)] // a seed for the port range, not engine time
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let start = (std::process::id().wrapping_mul(7919) ^ nanos) % COUNT;
        let _ = NEXT.compare_exchange(u32::MAX, start, Ordering::Relaxed, Ordering::Relaxed);
    }
    for _ in 0..COUNT {
        let port = (FIRST + NEXT.fetch_add(1, Ordering::Relaxed) % COUNT) as u16;
        if (26_500..=26_522).contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between {FIRST} and {}", FIRST + COUNT)
}

/// A `rill standalone` process.
pub type Standalone = RillProcess;

/// A `rill` server process (`standalone`, `broker` or `gateway`).
pub struct RillProcess {
    role: &'static str,
    child: Option<Child>,
    pub data_dir: PathBuf,
    pub rest_port: u16,
    pub grpc_port: u16,
    pub monitoring_port: u16,
    pub log: PathBuf,
    extra: Vec<String>,
    /// The address its REST, gRPC and monitoring ports listen on.
    host: String,
    /// What runs `rill` (e.g. `ip netns exec NAME`); empty: started directly.
    launcher: Vec<String>,
    /// Environment variables set for the process (from its next start on).
    pub env: Vec<(String, String)>,
}

impl RillProcess {
    /// Starts `rill standalone` on fresh ports with `data_dir`, plus `--set` overrides.
    pub fn start(data_dir: &Path, extra: &[&str]) -> RillProcess {
        RillProcess::start_role("standalone", data_dir, extra)
    }

    /// Starts `rill ROLE` on fresh REST, gRPC and monitoring ports with `data_dir`, plus
    /// `--set` overrides.
    pub fn start_role(role: &'static str, data_dir: &Path, extra: &[&str]) -> RillProcess {
        let mut process = RillProcess::prepare_role(role, data_dir, extra);
        process.spawn();
        process
    }

    /// Like [`RillProcess::start_role`], without starting it (see [`RillProcess::launch`]).
    pub fn prepare_role(role: &'static str, data_dir: &Path, extra: &[&str]) -> RillProcess {
        RillProcess {
            role,
            child: None,
            data_dir: data_dir.to_path_buf(),
            rest_port: free_port(),
            grpc_port: free_port(),
            monitoring_port: free_port(),
            log: data_dir.with_extension("log"),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            host: "127.0.0.1".to_owned(),
            launcher: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Serves on `host` and runs under `launcher` (before it is started).
    pub fn place(&mut self, host: &str, launcher: &[String]) {
        assert!(self.child.is_none(), "already running");
        self.host = host.to_owned();
        self.launcher = launcher.to_vec();
    }

    /// Starts a prepared process.
    pub fn launch(&mut self) {
        assert!(self.child.is_none(), "already running");
        self.spawn();
    }

    /// Waits for the process to exit on its own; `None` if it still runs after `timeout`.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            let child = self.child.as_mut()?;
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the log satisfies `done`; returns the log then.
    pub async fn wait_log(&self, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let text = self.log_text();
            if done(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "the log did not show what was awaited within {timeout:?}:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The series of metric `name` on `/metrics`, by their `partition` label ("" when
    /// they have none).
    pub async fn metric(&self, name: &str) -> std::collections::BTreeMap<String, f64> {
        parse_metric(&metrics(self).await, name)
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the log file");
        let mut command = match self.launcher.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(rill_binary());
                command
            }
            None => Command::new(rill_binary()),
        };
        command
            .arg(self.role)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--set", &format!("gateway.rest-port={}", self.rest_port)])
            .args(["--set", &format!("gateway.grpc-port={}", self.grpc_port)])
            .args(["--set", &format!("gateway.host={}", self.host)])
            .args([
                "--set",
                &format!("monitoring.port={}", self.monitoring_port),
            ])
            .args(["--set", &format!("monitoring.host={}", self.host)])
            .env("RILL_LOG", "info,openraft=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log);
        for option in &self.extra {
            command.args(["--set", option]);
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        self.child = Some(command.spawn().expect("start rill standalone"));
    }

    pub fn rest(&self) -> String {
        format!("http://{}:{}", self.host, self.rest_port)
    }

    /// The gRPC API's address, as a tonic channel takes it.
    pub fn grpc(&self) -> String {
        format!("http://{}:{}", self.host, self.grpc_port)
    }

    pub fn monitoring(&self) -> String {
        format!("http://{}:{}", self.host, self.monitoring_port)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("running")
    }

    /// Waits until `/ready` answers 200.
    pub async fn wait_ready(&mut self, timeout: Duration) {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "rill exited with {status} while starting:\n{}",
                    self.log_text()
                );
            }
            let ready = client
                .get(format!("{}/ready", self.monitoring()))
                .send()
                .await
                .map(|r| r.status().is_success())
                .unwrap_or(false);
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "rill was not ready within {timeout:?}:\n{}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL: no shutdown, no flush.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM and wait for a graceful exit; returns its exit status success.
    pub fn terminate(&mut self, timeout: Duration) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        // SAFETY-free: `kill` is a plain command here.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the process again on the same ports and data.
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGSTOP or SIGCONT: freeze the process (as a network cut looks to its peers) or
    /// let it go on.
    pub fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(child.id().to_string())
                .status();
        }
    }
}

/// The replicas `node` hosts as its own `GET /actuator/partitions` reports them:
/// (partition, raft term, role); `None` if it does not answer (a cut or stopped broker).
pub async fn replica_roles(node: &RillProcess) -> Option<Vec<(u64, u64, String)>> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .ok()?;
    let response = client
        .get(format!("{}/actuator/partitions", node.monitoring()))
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body: Value = response.json().await.ok()?;
    Some(
        body.as_object()?
            .iter()
            .filter_map(|(id, p)| {
                Some((
                    id.parse().ok()?,
                    p["term"].as_u64()?,
                    p["role"].as_str()?.to_owned(),
                ))
            })
            .collect(),
    )
}

/// The samples of `name` in Prometheus text, by their `partition` label.
pub fn parse_metric(text: &str, name: &str) -> std::collections::BTreeMap<String, f64> {
    let mut values = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (labels, value) = match rest.strip_prefix('{') {
            Some(rest) => match rest.split_once('}') {
                Some((labels, value)) => (labels, value),
                None => continue,
            },
            None if rest.starts_with(' ') => ("", rest),
            None => continue,
        };
        let partition = labels
            .split(',')
            .find_map(|l| l.strip_prefix("partition=\""))
            .map(|p| p.trim_end_matches('"').to_owned())
            .unwrap_or_default();
        if let Ok(value) = value.trim().parse::<f64>() {
            values.insert(partition, value);
        }
    }
    values
}

impl Drop for RillProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A small REST client for the tests.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub http: reqwest::Client,
}

impl Api {
    pub fn new(base: String) -> Api {
        Api {
            base,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("http client"),
        }
    }

    pub async fn post(&self, path: &str, body: Value) -> reqwest::Result<(u16, Value)> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }

    pub async fn get(&self, path: &str) -> reqwest::Result<(u16, Value)> {
        let response = self.http.get(format!("{}{path}", self.base)).send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }

    /// Creates an instance of the latest version of `process` with `variables` and
    /// returns its key; anything but a 200 fails the test.
    pub async fn create(&self, process: &str, variables: Value) -> String {
        let body = serde_json::json!({"processDefinitionId": process, "variables": variables});
        let (s, b) = self.post("/v2/process-instances", body).await.unwrap();
        assert_eq!(s, 200, "create {process}: {b}");
        b["processInstanceKey"].as_str().unwrap().to_owned()
    }

    /// Creates instances of `process` until there are at least `min` and every one of
    /// `partitions` holds some, and returns their keys. The deploy answer comes from
    /// partition 1; until the deployment reaches another partition, creates meant for it
    /// land on partition 1, so a fixed count may miss a partition.
    pub async fn create_on_every_partition(
        &self,
        process: &str,
        min: usize,
        partitions: usize,
        logs: impl Fn() -> String,
    ) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while keys.len() < min || seen.len() < partitions {
            assert!(
                Instant::now() < deadline,
                "creates of {process} reached only partitions {seen:?}\n{}",
                logs()
            );
            let key = self
                .create(process, serde_json::json!({"n": keys.len()}))
                .await;
            seen.insert(key.parse::<u64>().expect("a key") >> 51);
            keys.push(key);
            if seen.len() < partitions {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        keys
    }

    /// Waits until every instance in `keys` reads back `COMPLETED`; `logs` goes into the
    /// failure message.
    pub async fn wait_completed(
        &self,
        keys: &[String],
        timeout: Duration,
        logs: impl Fn() -> String,
    ) {
        let deadline = Instant::now() + timeout;
        for key in keys {
            loop {
                let (s, b) = self
                    .get(&format!("/v2/process-instances/{key}"))
                    .await
                    .unwrap();
                assert_eq!(s, 200, "{b}");
                if b["state"] == "COMPLETED" {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "instance {key} did not finish: {b}\n{}",
                    logs()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    pub async fn deploy(&self, files: &[&Path]) -> reqwest::Result<(u16, Value)> {
        let response = self
            .http
            .post(format!("{}/v2/deployments", self.base))
            .multipart(deployment_form(files))
            .send()
            .await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }
}

/// The value of the gauge `name` for `partition` in a Prometheus text page.
pub fn gauge(page: &str, name: &str, partition: u64) -> Option<i64> {
    let series = format!("{name}{{partition=\"{partition}\"}} ");
    page.lines()
        .find_map(|line| line.strip_prefix(series.as_str()))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .map(|value| value as i64)
}

/// The `/metrics` page of a process (empty if it does not answer).
pub async fn metrics(process: &RillProcess) -> String {
    let url = format!("{}/metrics", process.monitoring());
    match reqwest::get(url).await {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The repository's `examples/` directory.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// A cluster of `rill broker` processes on loopback, each with an embedded gateway.
pub struct Brokers {
    pub nodes: Vec<RillProcess>,
    /// Every broker's internal address (`cluster.initial-contact-points`), by node id.
    pub internal: Vec<String>,
    /// The `--set` options each broker was started with.
    pub options: Vec<Vec<String>>,
}

impl Brokers {
    /// Stops every broker, wipes its data directory, restores backup `backup_id` into it
    /// with `rill restore` and the broker's own settings, and starts it again (the
    /// caller waits for readiness).
    pub fn restore_all(&mut self, backup_id: u64) {
        for node in &mut self.nodes {
            assert!(node.terminate(Duration::from_secs(30)));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            std::fs::remove_dir_all(&node.data_dir).unwrap();
            let mut command = Command::new(rill_binary());
            command
                .args([
                    "restore",
                    "--backup-id",
                    &backup_id.to_string(),
                    "--data-dir",
                ])
                .arg(&node.data_dir);
            for option in &self.options[i] {
                command.args(["--set", option]);
            }
            let output = command.output().expect("run rill restore");
            assert!(
                output.status.success(),
                "restore of broker {i} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        for node in &mut self.nodes {
            node.launch();
        }
    }

    /// Starts `size` brokers with data under `dir`, plus `--set` overrides for all.
    pub fn start(
        dir: &Path,
        size: u32,
        partitions: u16,
        replication: u16,
        extra: &[&str],
    ) -> Brokers {
        Brokers::start_with(dir, size, partitions, replication, extra, |_| Vec::new())
    }

    /// Like [`Brokers::start`], with `per_node(i)` overrides for broker `i`.
    pub fn start_with(
        dir: &Path,
        size: u32,
        partitions: u16,
        replication: u16,
        extra: &[&str],
        per_node: impl Fn(u32) -> Vec<String>,
    ) -> Brokers {
        let mut brokers = Brokers::prepare(dir, size, partitions, replication, extra, per_node);
        for node in &mut brokers.nodes {
            node.launch();
        }
        brokers
    }

    /// Like [`Brokers::start_with`], with the raft timings a user gets by default rather
    /// than the fast ones for loopback: for tests whose bars are stated for defaults.
    pub fn start_with_default_raft(
        dir: &Path,
        size: u32,
        partitions: u16,
        replication: u16,
        extra: &[&str],
        per_node: impl Fn(u32) -> Vec<String>,
    ) -> Brokers {
        let mut brokers =
            Brokers::prepare_raft(dir, size, partitions, replication, extra, per_node, false);
        for node in &mut brokers.nodes {
            node.launch();
        }
        brokers
    }

    /// Like [`Brokers::start_with`], without starting any broker: start each with
    /// `nodes[i].launch()`.
    pub fn prepare(
        dir: &Path,
        size: u32,
        partitions: u16,
        replication: u16,
        extra: &[&str],
        per_node: impl Fn(u32) -> Vec<String>,
    ) -> Brokers {
        Brokers::prepare_raft(dir, size, partitions, replication, extra, per_node, true)
    }

    fn prepare_raft(
        dir: &Path,
        size: u32,
        partitions: u16,
        replication: u16,
        extra: &[&str],
        per_node: impl Fn(u32) -> Vec<String>,
        loopback_raft: bool,
    ) -> Brokers {
        let hosts = vec!["127.0.0.1".to_owned(); size as usize];
        Brokers::prepare_on(
            dir,
            &hosts,
            partitions,
            replication,
            extra,
            per_node,
            loopback_raft,
        )
    }

    /// Like [`Brokers::prepare`], with broker `i` on address `hosts[i]` (all its ports),
    /// and raft's default timings unless `fast_raft`.
    pub fn prepare_on(
        dir: &Path,
        hosts: &[String],
        partitions: u16,
        replication: u16,
        extra: &[&str],
        per_node: impl Fn(u32) -> Vec<String>,
        fast_raft: bool,
    ) -> Brokers {
        let size = hosts.len() as u32;
        let internal_ports: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let internal: Vec<String> = internal_ports
            .iter()
            .zip(hosts)
            .map(|(port, host)| format!("{host}:{port}"))
            .collect();
        let contact_points = internal.join(",");
        let options: Vec<Vec<String>> = (0..size)
            .map(|i| {
                let mut args = vec![
                    format!("cluster.node-id={i}"),
                    format!("cluster.size={size}"),
                    format!("cluster.partitions-count={partitions}"),
                    format!("cluster.replication-factor={replication}"),
                    format!("cluster.host={}", hosts[i as usize]),
                    format!("cluster.internal-port={}", internal_ports[i as usize]),
                    format!("cluster.command-port={}", free_port()),
                    format!("cluster.initial-contact-points={contact_points}"),
                ];
                if fast_raft {
                    // Fast failure detection on loopback.
                    args.push("raft.heartbeat-interval=100ms".to_owned());
                    args.push("raft.election-timeout=1s".to_owned());
                }
                args.extend(extra.iter().map(|s| s.to_string()));
                args.extend(per_node(i));
                args
            })
            .collect();
        let nodes = options
            .iter()
            .enumerate()
            .map(|(i, args)| {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let mut node =
                    RillProcess::prepare_role("broker", &dir.join(format!("broker-{i}")), &args);
                node.place(&hosts[i], &[]);
                node
            })
            .collect();
        Brokers {
            nodes,
            internal,
            options,
        }
    }

    /// Waits until every running broker reports every partition it hosts led.
    pub async fn wait_ready(&mut self, timeout: Duration) {
        for node in self.nodes.iter_mut().filter(|n| n.is_running()) {
            node.wait_ready(timeout).await;
        }
    }

    /// The REST API of broker `i`'s embedded gateway.
    pub fn api(&self, i: usize) -> Api {
        Api::new(self.nodes[i].rest())
    }

    /// The node leading `partition`, according to broker `via`'s gateway topology.
    pub async fn leader_of(&self, via: usize, partition: u64) -> Option<u64> {
        let (status, topology) = self.api(via).get("/v2/topology").await.ok()?;
        if status != 200 {
            return None;
        }
        topology["brokers"].as_array()?.iter().find_map(|broker| {
            let leads = broker["partitions"]
                .as_array()?
                .iter()
                .any(|p| p["partitionId"].as_u64() == Some(partition) && p["role"] == "leader");
            leads.then(|| broker["nodeId"].as_u64()).flatten()
        })
    }

    /// The node leading `partition`, asking every running broker until one names it;
    /// `None` when none does within `timeout` (right after a restart an election may
    /// still be going on, and gateways learn the topology by polling).
    pub async fn wait_leader(&self, partition: u64, timeout: Duration) -> Option<u64> {
        let deadline = Instant::now() + timeout;
        loop {
            for via in (0..self.nodes.len()).filter(|&i| self.nodes[i].is_running()) {
                if let Some(leader) = self.leader_of(via, partition).await {
                    return Some(leader);
                }
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| format!("--- broker {i} ---\n{}", n.log_text()))
            .collect()
    }
}

/// A broker with the options of broker 0 but its own node id and ports, as a
/// StatefulSet scale-up starts one.
pub fn extra_broker(brokers: &Brokers, dir: &Path, id: u32) -> RillProcess {
    let mut options: Vec<String> = brokers.options[0]
        .iter()
        .filter(|o| {
            !o.starts_with("cluster.node-id=")
                && !o.starts_with("cluster.internal-port=")
                && !o.starts_with("cluster.command-port=")
        })
        .cloned()
        .collect();
    options.push(format!("cluster.node-id={id}"));
    options.push(format!("cluster.internal-port={}", free_port()));
    options.push(format!("cluster.command-port={}", free_port()));
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    RillProcess::start_role("broker", &dir.join(format!("broker-{id}")), &options)
}

/// Job COMPLETED events in JSON-lines exports, de-duplicated by partition and position
/// (export is at least once), by job key; only those of `instances` if given. A line
/// cut by a crash is not a record.
pub fn job_completions(
    files: &[PathBuf],
    instances: Option<&std::collections::BTreeSet<&str>>,
) -> std::collections::BTreeMap<i64, usize> {
    let mut seen = std::collections::BTreeSet::new();
    let mut completions = std::collections::BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for record in text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            let id = (record["partitionId"].as_i64(), record["position"].as_i64());
            if !seen.insert(id)
                || record["valueType"] != "JOB"
                || record["recordType"] != "EVENT"
                || record["intent"] != "COMPLETED"
            {
                continue;
            }
            let instance = record["value"]["processInstanceKey"]
                .as_i64()
                .map(|k| k.to_string())
                .unwrap_or_default();
            if instances.is_none_or(|i| i.contains(instance.as_str())) {
                *completions
                    .entry(record["key"].as_i64().unwrap())
                    .or_default() += 1;
            }
        }
    }
    completions
}

/// Starters and workers of the two-rest-calls process, spread over every broker's
/// gateway and riding out brokers that are down.
pub struct Workload {
    /// Jobs of all instances together (two each).
    total_jobs: usize,
    created: Arc<Mutex<Vec<String>>>,
    completed_jobs: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Workload {
    pub fn start(apis: Vec<Api>, instances: usize) -> Workload {
        let created: Arc<Mutex<Vec<String>>> = Arc::default();
        let completed_jobs = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for s in 0..3 {
            let (apis, created, next) = (apis.clone(), created.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                let mut turn = s;
                while next.fetch_add(1, Ordering::Relaxed) < instances {
                    loop {
                        turn += 1;
                        let api = &apis[turn % apis.len()];
                        let body = json!({"processDefinitionId": "two-rest-calls"});
                        match api.post("/v2/process-instances", body).await {
                            Ok((200, v)) => {
                                let key = v["processInstanceKey"].as_str().unwrap().to_owned();
                                created.lock().await.push(key);
                                break;
                            }
                            // A broker down, a leader change in progress, or overload.
                            Err(_) | Ok((502..=504, _)) => {
                                tokio::time::sleep(Duration::from_millis(50)).await
                            }
                            Ok((status, v)) => panic!("create failed with {status}: {v}"),
                        }
                    }
                }
            }));
        }
        for w in 0..3 {
            let (apis, done, stop) = (apis.clone(), completed_jobs.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                let mut turn = w;
                while !stop.load(Ordering::Relaxed) {
                    turn += 1;
                    let api = &apis[turn % apis.len()];
                    let request = json!({"type": "restCall", "worker": format!("w{w}"),
                        "timeout": 5000, "maxJobsToActivate": 32, "requestTimeout": 300});
                    let jobs = match api.post("/v2/jobs/activation", request).await {
                        Ok((200, v)) => v["jobs"].as_array().cloned().unwrap_or_default(),
                        _ => {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    for job in jobs {
                        let key = job["jobKey"].as_str().unwrap();
                        let path = format!("/v2/jobs/{key}/completion");
                        if let Ok((204, _)) = api.post(&path, json!({})).await {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
        Workload {
            total_jobs: 2 * instances,
            created,
            completed_jobs,
            stop,
            tasks,
        }
    }

    pub async fn created(&self) -> usize {
        self.created.lock().await.len()
    }

    /// Waits until `more` further jobs were completed (or every job, on a fast machine).
    pub async fn progress(&self, more: usize, timeout: Duration, brokers: &Brokers) {
        let target = (self.completed_jobs.load(Ordering::Relaxed) + more).min(self.total_jobs);
        let deadline = Instant::now() + timeout;
        while self.completed_jobs.load(Ordering::Relaxed) < target {
            assert!(
                Instant::now() < deadline,
                "no progress: {} jobs completed\n{}",
                self.completed_jobs.load(Ordering::Relaxed),
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until at least `jobs` jobs were completed in all (capped at every job).
    pub async fn completed(&self, jobs: usize, timeout: Duration, brokers: &Brokers) {
        let done = self.completed_jobs.load(Ordering::Relaxed);
        self.progress(jobs.saturating_sub(done), timeout, brokers)
            .await;
    }

    /// Waits for every starter, then for every created instance to complete (asking
    /// `api`), then stops the workers. Returns the instance keys.
    pub async fn finish(self, api: &Api, timeout: Duration, brokers: &Brokers) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let (starters, workers): (Vec<_>, Vec<_>) = self
            .tasks
            .into_iter()
            .enumerate()
            .partition(|(i, _)| *i < 3);
        for (_, starter) in starters {
            starter.await.expect("starter");
        }
        let keys = self.created.lock().await.clone();
        let mut pending = keys.clone();
        while !pending.is_empty() {
            assert!(
                Instant::now() < deadline,
                "{} of {} instances did not finish, e.g. {}\n{}",
                pending.len(),
                keys.len(),
                pending[0],
                brokers.logs()
            );
            let mut still = Vec::new();
            for key in pending {
                match api.get(&format!("/v2/process-instances/{key}")).await {
                    Ok((200, v)) if v["state"] == "COMPLETED" => {}
                    _ => still.push(key),
                }
            }
            pending = still;
            if !pending.is_empty() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        self.stop.store(true, Ordering::Relaxed);
        for (_, worker) in workers {
            worker.await.expect("worker");
        }
        assert_eq!(
            keys.iter().collect::<BTreeSet<_>>().len(),
            keys.len(),
            "instance keys are unique"
        );
        keys
    }
}

/// The multipart body of `POST /v2/deployments` with `files`.
pub fn deployment_form(files: &[&Path]) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for file in files {
        let bytes = std::fs::read(file).expect("read model");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        form = form.part(
            "resources",
            reqwest::multipart::Part::bytes(bytes).file_name(name),
        );
    }
    form
}

/// `POST {rest}/v2/deployments` of `examples/{file}`, for the caller to add credentials.
pub fn deployment_request(
    http: &reqwest::Client,
    rest: &str,
    file: &str,
) -> reqwest::RequestBuilder {
    http.post(format!("{rest}/v2/deployments"))
        .multipart(deployment_form(&[&examples().join(file)]))
}

pub async fn deploy(api: &Api, files: &[&str]) {
    let paths: Vec<PathBuf> = files.iter().map(|f| examples().join(f)).collect();
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match api.deploy(&refs).await {
            Ok((200, _)) => return,
            other => assert!(Instant::now() < deadline, "deploy failed: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `rill` binary the tests run: `RILL_TEST_BIN` when set (worktrees sharing one target
/// directory each point it at a copy of their own build), else the one Cargo built. Always
/// absolute: tests hand it to processes that run in other directories.
pub fn rill_binary() -> std::path::PathBuf {
    let path: std::path::PathBuf = std::env::var_os("RILL_TEST_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_rill").into());
    let path = std::path::absolute(&path).expect("the current directory is readable");
    assert!(
        path.is_file(),
        "the rill binary under test, {}, does not exist (RILL_TEST_BIN names it when set)",
        path.display()
    );
    path
}

/// Runs `rill cluster <args>` against `node`'s management port: success, stdout, stderr.
pub fn rill_cluster(node: &RillProcess, args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(rill_binary())
        .arg("cluster")
        .args(args)
        .args(["--management", &node.monitoring()])
        .output()
        .expect("run rill cluster");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `tests/clients/{script}` (a client library's flow, installed by the script under
/// the target dir: `install_var` names where, `install_dir` is the folder) against a fresh
/// standalone, and expects it to print "all checks passed".
pub fn run_client_script(script: &str, install_var: &str, install_dir: &str) {
    run_client_script_with(script, install_var, install_dir, &[], &[]);
}

/// Runs `tests/clients/{script}` with `env` and expects it to print "all checks passed";
/// a failure shows the script's output and `server_log()`.
pub fn assert_client_passes(
    script: &str,
    env: &[(&str, String)],
    server_log: impl FnOnce() -> String,
) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/clients")
        .join(script);
    let output = Command::new("bash")
        .arg(&path)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap_or_else(|e| panic!("run {} (needs bash): {e}", path.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "{script} failed ({}):\n{stdout}\n{stderr}\n{}",
        output.status,
        server_log()
    );
}

/// Like [`run_client_script`], with `settings` for the standalone and `env` for the
/// script (e.g. the credentials a client authenticates with).
pub fn run_client_script_with(
    script: &str,
    install_var: &str,
    install_dir: &str,
    settings: &[&str],
    env: &[(&str, &str)],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rill = Standalone::start(&dir.path().join("data"), settings);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(rill.wait_ready(Duration::from_secs(30)));
    let mut script_env = vec![
        ("RILL_REST_ADDRESS", rill.rest()),
        ("RILL_GRPC_ADDRESS", format!("127.0.0.1:{}", rill.grpc_port)),
        (
            install_var,
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(install_dir)
                .display()
                .to_string(),
        ),
    ];
    script_env.extend(env.iter().map(|(k, v)| (*k, v.to_string())));
    assert_client_passes(script, &script_env, || rill.log_text());
    assert!(rill.terminate(Duration::from_secs(20)));
}
