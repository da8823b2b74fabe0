//! The system under test: a `rill standalone` started for one run (fresh data
//! directory, free ports, fsync on as always), or a running one given by URL. Also CPU
//! time of a process from `/proc/<pid>/stat`.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::api::{Api, ClientSecurity};

/// Unit of the times in `/proc/<pid>/stat`: the kernel reports them in USER_HZ
/// ticks, which Linux fixes at 100 on every architecture it exports them for.
const USER_HZ: f64 = 100.0;

/// Utime + stime of a process in seconds, as `getrusage` reports them for the process
/// itself (same kernel counters, clock-tick resolution).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    parse_cpu_seconds(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_cpu_seconds(stat: &str) -> Option<f64> {
    // The command name (field 2) may contain spaces; the rest follows the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the file, counted from 3 here.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

/// Options for a standalone broker started by the benchmark.
pub struct StandaloneOptions {
    pub binary: PathBuf,
    pub work_dir: PathBuf,
    pub partitions: u16,
    /// JSON-lines export of the history to a file in the data directory.
    pub export_jsonl: bool,
    /// More `--set key=value` overrides.
    pub overrides: Vec<String>,
    pub keep_data: bool,
    /// TLS on the gateway (a certificate made for the run) and basic authentication.
    pub secure: bool,
}

/// The benchmark user of a `--secure` broker.
const BENCH_USER: &str = "bench";

/// A running `rill standalone`; stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Standalone {
    child: Child,
    pub rest_url: String,
    /// The gRPC API's address (`http://host:port`).
    pub grpc_url: String,
    pub monitoring_url: String,
    pub data_dir: PathBuf,
    pub export_file: Option<PathBuf>,
    /// How a client reaches a `--secure` broker's gateway.
    pub security: Option<ClientSecurity>,
    _temp: Option<tempfile::TempDir>,
    kept: Option<PathBuf>,
}

/// A free loopback port below the kernel's ephemeral range (32768 and up on Linux): a
/// port the kernel hands out for `:0` and that is released again can be taken by an
/// outgoing connection (the load's own) before the broker binds it.
fn free_port() -> Result<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static TRIED: AtomicU32 = AtomicU32::new(0);
    let offset = std::process::id().wrapping_mul(7_919);
    for _ in 0..SPAN {
        let port = (LOW + offset.wrapping_add(TRIED.fetch_add(1, Ordering::Relaxed)) % SPAN) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port from {LOW} to {}", LOW + SPAN)
}

impl Standalone {
    pub fn start(options: &StandaloneOptions) -> Result<Standalone> {
        if !options.binary.exists() {
            bail!(
                "{} does not exist: build it with `cargo build --release -p rill`, or pass \
                 --rill PATH (or --url to use a running gateway)",
                options.binary.display()
            );
        }
        std::fs::create_dir_all(&options.work_dir)?;
        let temp = tempfile::Builder::new()
            .prefix("rill-bench-")
            .tempdir_in(&options.work_dir)
            .with_context(|| {
                format!(
                    "creating a data directory in {}",
                    options.work_dir.display()
                )
            })?;
        let data_dir = temp.path().join("data");
        let rest_port = free_port()?;
        let grpc_port = free_port()?;
        let monitoring_port = free_port()?;
        let mut sets = vec![
            format!("cluster.partitions-count={}", options.partitions),
            "cluster.host=127.0.0.1".to_owned(),
            format!("cluster.command-port={}", free_port()?),
            format!("cluster.internal-port={}", free_port()?),
            "gateway.host=127.0.0.1".to_owned(),
            format!("gateway.rest-port={rest_port}"),
            format!("gateway.grpc-port={grpc_port}"),
            "monitoring.host=127.0.0.1".to_owned(),
            format!("monitoring.port={monitoring_port}"),
            format!("data.directory={}", data_dir.display()),
        ];
        let export_file = options
            .export_jsonl
            .then(|| temp.path().join("records.jsonl"));
        if let Some(file) = &export_file {
            sets.push(format!("exporters.jsonl.path={}", file.display()));
        }
        let mut environment = Vec::new();
        let security = if options.secure {
            let ca = rill_tls::testing::TestCa::new("rill-bench CA");
            let (certificate, key) = ca
                .issue(&["localhost", "127.0.0.1"])
                .write(temp.path(), "gateway");
            sets.extend([
                "gateway.tls.enabled=true".to_owned(),
                format!("gateway.tls.certificate={}", certificate.display()),
                format!("gateway.tls.private-key={}", key.display()),
                "security.authentication.method=basic".to_owned(),
            ]);
            // A password as long as a generated one; argon2 cost is the broker's default.
            let password = format!("bench-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
            environment.push((
                "RILL_SECURITY__INITIALIZATION__USERS__0__USERNAME",
                BENCH_USER.to_owned(),
            ));
            environment.push((
                "RILL_SECURITY__INITIALIZATION__USERS__0__PASSWORD",
                password.clone(),
            ));
            Some(ClientSecurity {
                ca_pem: ca.pem().to_owned(),
                username: BENCH_USER.to_owned(),
                password,
            })
        } else {
            None
        };
        sets.extend(options.overrides.iter().cloned());

        let log_path = temp.path().join("rill.log");
        let log = File::create(&log_path)?;
        let mut command = Command::new(&options.binary);
        command.arg("standalone");
        for set in &sets {
            command.arg("--set").arg(set);
        }
        command
            .env(
                "RILL_LOG",
                std::env::var("RILL_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(environment)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", options.binary.display()))?;
        // A kept directory is detached from the guard that would delete it.
        let (temp, kept) = if options.keep_data {
            (None, Some(temp.keep()))
        } else {
            (Some(temp), None)
        };
        Ok(Standalone {
            child,
            rest_url: if security.is_some() {
                format!("https://localhost:{rest_port}")
            } else {
                format!("http://127.0.0.1:{rest_port}")
            },
            grpc_url: format!("http://127.0.0.1:{grpc_port}"),
            monitoring_url: format!("http://127.0.0.1:{monitoring_port}"),
            data_dir,
            export_file,
            security,
            _temp: temp,
            kept,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log_tail(&self) -> String {
        let dir = self.data_dir.parent().unwrap_or(Path::new("."));
        let log = std::fs::read_to_string(dir.join("rill.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits until `/ready` answers 200, or fails if the process exits or 60 s pass.
    pub async fn wait_ready(&mut self, api: &Api) -> Result<()> {
        let ready = format!("{}/ready", self.monitoring_url);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("rill standalone exited with {status}:\n{}", self.log_tail());
            }
            if api.is_up(&ready).await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "rill standalone was not ready after 60 s:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Size of everything under the data directory, in bytes.
    pub fn data_bytes(&self) -> u64 {
        dir_size(&self.data_dir)
    }
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

impl Drop for Standalone {
    fn drop(&mut self) {
        // SIGTERM for a clean shutdown; SIGKILL if it takes longer than 10 s.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.kept {
            eprintln!("kept the run's data and log in {}", dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_are_read_after_the_command_name() {
        // A command name with spaces and a ')' must not shift the fields.
        let line = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_cpu_seconds(line), Some(3.0));
        assert_eq!(parse_cpu_seconds("42 (x) S 1"), None);
        assert_eq!(parse_cpu_seconds("42 (x)"), None);
    }

    #[test]
    fn cpu_time_of_a_live_and_of_a_missing_process() {
        assert!(cpu_seconds(std::process::id()).is_some_and(|s| s >= 0.0));
        assert_eq!(cpu_seconds(u32::MAX), None);
    }
}
