//! The server roles: `rill standalone` (a broker and its gateway in one process), with
//! graceful shutdown on SIGTERM and SIGINT.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use clap::Args;
use prometheus::Registry;
use rill_broker::{BrokerNode, HealthCheck, MonitoringServer};
use rill_config::{ConfigLoader, RillConfig};
use rill_engine::{BpmnEngine, EngineOptions};
use rill_gateway::{GatewayMetrics, RestServer};
use rill_protocol::NodeId;
use tokio::sync::watch;

use crate::backend::LocalBackend;

/// Where the configuration comes from.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// A TOML configuration file.
    #[arg(long, short = 'c', env = "RILL_CONFIG")]
    pub config: Option<PathBuf>,
    /// Override one option, e.g. `--set cluster.partitions-count=4` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Shortcut for `--set data.directory=DIR`.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Shortcut for `--set cluster.partitions-count=N`.
    #[arg(long)]
    pub partitions: Option<u16>,
}

impl ConfigArgs {
    /// Loads the layered configuration (defaults, file, `RILL_…` environment, flags).
    pub fn load(&self) -> Result<RillConfig> {
        let mut overrides = self.overrides.clone();
        if let Some(dir) = &self.data_dir {
            overrides.push(format!("data.directory={}", dir.display()));
        }
        if let Some(n) = self.partitions {
            overrides.push(format!("cluster.partitions-count={n}"));
        }
        let mut loader = ConfigLoader::new().process_env().overrides(overrides);
        if let Some(file) = &self.config {
            loader = loader.file(file);
        }
        Ok(loader.load()?)
    }
}

/// Reports every validation problem at once.
pub fn validated(config: RillConfig) -> Result<RillConfig> {
    let problems = config.problems();
    if problems.is_empty() {
        return Ok(config);
    }
    let mut message = format!("the configuration has {} problem(s):", problems.len());
    for problem in &problems {
        message.push_str(&format!("\n  - {problem}"));
    }
    bail!(message)
}

struct StandaloneHealth {
    node: Arc<BrokerNode<BpmnEngine>>,
    started: AtomicBool,
}

impl HealthCheck for StandaloneHealth {
    fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    fn ready(&self) -> bool {
        self.started() && self.node.is_ready()
    }

    fn healthy(&self) -> bool {
        self.node.is_healthy()
    }
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Runs a single-node broker with its gateway until SIGTERM or SIGINT.
pub fn standalone(mut config: RillConfig) -> Result<()> {
    // Standalone is a one-node cluster that hosts every partition and the gateway.
    config.cluster.size = 1;
    config.cluster.node_id = 0;
    config.cluster.replication_factor = 1;
    config.gateway.enabled = true;
    let config = validated(config)?;
    std::fs::create_dir_all(&config.data.directory).with_context(|| {
        format!(
            "cannot create the data directory {} (set data.directory)",
            config.data.directory.display()
        )
    })?;

    let started_at = std::time::Instant::now();
    let registry = Registry::new();
    let node_id = NodeId(config.cluster.node_id);
    let internal = host_port(
        config
            .cluster
            .advertised_host
            .as_deref()
            .unwrap_or("127.0.0.1"),
        config.cluster.internal_port,
    );
    let addresses = BTreeMap::from([(node_id, internal)]);
    let raft_service = rill_raft::RaftService::new();
    let transport = rill_broker::single_node_transport();
    let engine_options = EngineOptions {
        instance_retention: config.engine.instance_retention,
    };
    let node = BrokerNode::start(
        config.clone(),
        &registry,
        transport,
        raft_service,
        addresses,
        |_| BpmnEngine::new(engine_options.clone()),
    )
    .context("starting the broker")?;
    let node = Arc::new(node);
    let io = node.runtimes().io().clone();

    let health = Arc::new(StandaloneHealth {
        node: node.clone(),
        started: AtomicBool::new(false),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let advertised = config
        .cluster
        .advertised_host
        .clone()
        .unwrap_or_else(|| "localhost".to_owned());

    let servers = io.block_on({
        let node = node.clone();
        let config = config.clone();
        let registry = registry.clone();
        let health = health.clone();
        async move {
            let backend = Arc::new(LocalBackend::new(node, advertised));
            let metrics = GatewayMetrics::register(&registry)
                .map_err(|e| anyhow::anyhow!("gateway metrics: {e}"))?;
            let rest = RestServer::bind(&config.gateway, backend, metrics).await?;
            let rest_addr = rest.local_addr()?;
            let monitoring = MonitoringServer::bind(
                &host_port(&config.monitoring.host, config.monitoring.port),
                registry,
                health,
            )
            .await?;
            let monitoring_addr = monitoring.local_addr()?;
            let rest_task = tokio::spawn(rest.serve(wait_for_stop(stop_rx.clone())));
            let monitoring_task = tokio::spawn(monitoring.serve(wait_for_stop(stop_rx)));
            anyhow::Ok((rest_addr, monitoring_addr, rest_task, monitoring_task))
        }
    })?;
    let (rest_addr, monitoring_addr, rest_task, monitoring_task) = servers;
    health.started.store(true, Ordering::Release);
    tracing::info!(
        rest = %rest_addr,
        monitoring = %monitoring_addr,
        partitions = config.cluster.partitions_count,
        data = %config.data.directory.display(),
        startup_ms = started_at.elapsed().as_millis() as u64,
        "Rill standalone is running"
    );

    io.block_on(shutdown_signal())?;
    tracing::info!("shutting down: finishing requests in flight");
    let _ = stop_tx.send(true);
    io.block_on(async {
        if let Ok(Err(e)) = rest_task.await {
            tracing::warn!(error = %e, "REST server stopped with an error");
        }
        if let Ok(Err(e)) = monitoring_task.await {
            tracing::warn!(error = %e, "monitoring server stopped with an error");
        }
    });
    drop(health);
    match Arc::try_unwrap(node) {
        Ok(node) => node.shutdown(),
        Err(_) => tracing::warn!("the broker is still referenced; stopping without waiting"),
    }
    tracing::info!("stopped");
    Ok(())
}

async fn wait_for_stop(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

async fn shutdown_signal() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
    Ok(())
}
