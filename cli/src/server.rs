//! The server roles, each with graceful shutdown on SIGTERM and SIGINT:
//! `rill standalone` (a one-broker cluster with its embedded gateway, in one process, no
//! network between them),
//! `rill broker` (one node of a cluster, optionally with an embedded gateway) and
//! `rill gateway` (a gateway alone, routing to the brokers it finds).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use clap::Args;
use prometheus::Registry;
use rill_broker::cluster::api::LocalReplicas;
use rill_broker::cluster::{Announce, ClusterState};
use rill_broker::metrics::BackupMetrics;
use rill_broker::{
    BrokerNode, ClusterRouter, CommandApi, HealthCheck, JobPushes, JobsFeed, MonitoringServer,
};
use rill_client::CommandClient;
use rill_config::{ConfigLoader, RillConfig};
use rill_engine::BpmnEngine;
use rill_gateway::{Authenticator, GatewayBackend, GatewayMetrics, GatewayServer};
use rill_protocol::NodeId;
use rill_transport::{Transport, TransportConfig};
use tokio::sync::watch;

use crate::security;

/// The partitions a broker hosts.
type Partitions = rill_broker::Partitions<BpmnEngine>;

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
    /// Set once the gateway is up.
    client: std::sync::OnceLock<Arc<CommandClient>>,
    started: AtomicBool,
}

impl HealthCheck for StandaloneHealth {
    fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Ready once every partition has a leader and the gateway's client knows it.
    fn ready(&self) -> bool {
        self.started()
            && self.node.is_ready()
            && self
                .client
                .get()
                .is_some_and(|client| client.topology().all_partitions_led())
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

/// Creates the data directory, or checks that the data in it is in this Rill's format.
fn create_data_directory(config: &RillConfig) -> Result<()> {
    std::fs::create_dir_all(&config.data.directory).with_context(|| {
        format!(
            "cannot create the data directory {} (set data.directory)",
            config.data.directory.display()
        )
    })?;
    rill_broker::prepare_data_directory(&config.data.directory, env!("CARGO_PKG_VERSION"))
        .map_err(anyhow::Error::msg)
}

/// A broker with a backup store starts only if it can use it (an S3 bucket that is
/// missing or refuses the credentials is found now, not at the first backup).
fn check_backup_store(config: &RillConfig) -> Result<()> {
    let store =
        rill_broker::backup::configured_store(&config.backup).map_err(anyhow::Error::msg)?;
    if let Some(store) = store {
        store.check().map_err(anyhow::Error::msg)?;
        tracing::info!(store = %store.location(), "backup store reachable");
    }
    Ok(())
}

/// Runs a single-node broker with its gateway until SIGTERM or SIGINT.
pub fn standalone(mut config: RillConfig) -> Result<()> {
    // Standalone is a one-node cluster that hosts every partition and the gateway.
    config.cluster.size = 1;
    config.cluster.node_id = 0;
    config.cluster.replication_factor = 1;
    config.gateway.enabled = true;
    let config = validated(config)?;
    if config.cluster.tls.enabled {
        bail!(
            "cluster.tls.enabled is true, but a standalone opens no internal or command port \
             for it to protect: turn it off (gateway.tls and monitoring.tls protect the ports \
             a standalone serves), or run `rill broker`"
        );
    }
    let authenticator = security::authenticator(&config)?;
    create_data_directory(&config)?;
    check_backup_store(&config)?;

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
    let node = BrokerNode::start(
        config.clone(),
        &registry,
        transport,
        raft_service,
        addresses.clone(),
        |_| BpmnEngine::new(),
    )
    .context("starting the broker")?;
    let node = Arc::new(node);
    let io = node.runtimes().io().clone();

    let health = Arc::new(StandaloneHealth {
        node: node.clone(),
        client: std::sync::OnceLock::new(),
        started: AtomicBool::new(false),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    // No command port is opened: the topology reports where it would be.
    let command_address = host_port(
        config
            .cluster
            .advertised_host
            .as_deref()
            .unwrap_or("localhost"),
        config.cluster.command_port,
    );

    let servers = io.block_on({
        let node = node.clone();
        let config = config.clone();
        let registry = registry.clone();
        let health = health.clone();
        let cluster = node.cluster().clone();
        async move {
            let partitions: Partitions = node.partitions().clone();
            let api = command_api(&partitions, &config, &registry, &cluster, command_address)?;
            // The same client as a broker's, reaching only this broker, in process.
            let client = own_client(&partitions, api, None, &addresses);
            let _ = health.client.set(client.clone());
            let backend: Arc<dyn GatewayBackend> = client;
            let metrics = GatewayMetrics::register(&registry)
                .map_err(|e| anyhow::anyhow!("gateway metrics: {e}"))?;
            let gateway =
                GatewayServer::bind(&config.gateway, authenticator.clone(), backend, metrics)
                    .await?;
            let addrs = (gateway.rest_addr()?, gateway.grpc_addr()?);
            let (monitoring_addr, monitoring_task) = serve_monitoring(
                &config,
                registry,
                health,
                Some((
                    cluster,
                    local_replicas(&partitions),
                    partitions.clone(),
                    node.metrics().backup().clone(),
                )),
                authenticator,
                stop_rx.clone(),
            )
            .await?;
            let rest_task = tokio::spawn(gateway.serve(wait_for_stop(stop_rx)));
            anyhow::Ok((addrs, monitoring_addr, rest_task, monitoring_task))
        }
    })?;
    let ((rest_addr, grpc_addr), monitoring_addr, rest_task, monitoring_task) = servers;
    health.started.store(true, Ordering::Release);
    tracing::info!(
        rest = %rest_addr,
        grpc = %grpc_addr,
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
            tracing::warn!(error = %e, "gateway server stopped with an error");
        }
        if let Ok(Err(e)) = monitoring_task.await {
            tracing::warn!(error = %e, "monitoring server stopped with an error");
        }
    });
    drop(health);
    match Arc::try_unwrap(node) {
        Ok(node) => node.shutdown(),
        // Still held by a server task finishing its last connection: stop the
        // partitions anyway (their databases are closed when this returns).
        Err(node) => node.stop_partitions(),
    }
    tracing::info!("stopped");
    Ok(())
}

/// Every broker's internal address by node id. In a cluster,
/// `cluster.initial-contact-points` lists them all, node 0 first (the Helm chart does).
fn cluster_addresses(config: &RillConfig) -> Result<BTreeMap<NodeId, String>> {
    let size = config.cluster.size;
    if size == 1 {
        let own = host_port(advertised_host(config), config.cluster.internal_port);
        return Ok(BTreeMap::from([(NodeId(config.cluster.node_id), own)]));
    }
    let points = &config.cluster.initial_contact_points;
    if points.len() != size as usize {
        bail!(
            "cluster.initial-contact-points lists {} address(es), but cluster.size is {size}: \
             list the internal address (host:port) of every broker, node 0 first",
            points.len()
        );
    }
    let mut addresses: BTreeMap<NodeId, String> = points
        .iter()
        .enumerate()
        .map(|(i, point)| (NodeId(i as u32), point.clone()))
        .collect();
    // A broker beyond cluster.size joins the running cluster: it is not among the
    // contact points, and tells the others its own address.
    let own = NodeId(config.cluster.node_id);
    addresses
        .entry(own)
        .or_insert_with(|| host_port(advertised_host(config), config.cluster.internal_port));
    Ok(addresses)
}

fn advertised_host(config: &RillConfig) -> &str {
    config
        .cluster
        .advertised_host
        .as_deref()
        .unwrap_or(match config.cluster.host.as_str() {
            "0.0.0.0" | "::" => "127.0.0.1",
            host => host,
        })
}

async fn resolve(what: &str, address: &str) -> Result<std::net::SocketAddr> {
    tokio::net::lookup_host(address)
        .await
        .with_context(|| format!("cannot resolve {what} {address}"))?
        .next()
        .with_context(|| format!("{what} {address} resolves to no address"))
}

struct BrokerHealth {
    partitions: Partitions,
    cluster: ClusterState,
    started: AtomicBool,
}

impl HealthCheck for BrokerHealth {
    fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// A broker that is not a member of the cluster (started beyond `cluster.size`,
    /// waiting for a change to add it) serves nothing, so it is not ready.
    fn ready(&self) -> bool {
        self.started()
            && self.cluster.current().is_member(self.cluster.node_id())
            && self.partitions.values().iter().all(|p| {
                let status = p.status();
                status.healthy && status.leader.is_some()
            })
    }

    fn healthy(&self) -> bool {
        self.partitions.values().iter().all(|p| p.status().healthy)
    }
}

/// Runs one broker of a cluster until SIGTERM or SIGINT: its partitions' replicas, the
/// command API for gateways, and (with `gateway.enabled`) a gateway routing to the
/// whole cluster.
pub fn broker(config: RillConfig) -> Result<()> {
    let config = validated(config)?;
    let authenticator = security::authenticator(&config)?;
    create_data_directory(&config)?;
    check_backup_store(&config)?;
    let addresses = cluster_addresses(&config)?;
    // A taken port stops the broker; better before its partitions start and elect.
    let cluster_host = config.cluster.host.trim_matches(['[', ']']);
    check_port_free(
        "cluster.command-port",
        "cluster.host",
        cluster_host,
        config.cluster.command_port,
    )?;
    if config.gateway.enabled {
        check_port_free(
            "gateway.rest-port",
            "gateway.host",
            &config.gateway.host,
            config.gateway.rest_port,
        )?;
        check_port_free(
            "gateway.grpc-port",
            "gateway.host",
            &config.gateway.host,
            config.gateway.grpc_port,
        )?;
    }
    check_port_free(
        "monitoring.port",
        "monitoring.host",
        &config.monitoring.host,
        config.monitoring.port,
    )?;
    let started_at = std::time::Instant::now();
    let registry = Registry::new();
    let node_id = NodeId(config.cluster.node_id);
    let node = BrokerNode::start(
        config.clone(),
        &registry,
        rill_broker::single_node_transport(),
        rill_raft::RaftService::new(),
        addresses.clone(),
        |_| BpmnEngine::new(),
    )
    .context("starting the broker")?;
    let partitions: Partitions = node.partitions().clone();
    let network = node.raft_network().cloned();
    let io = node.runtimes().io().clone();
    let cluster = node.cluster().clone();
    cluster.announce(Announce {
        internal: host_port(advertised_host(&config), config.cluster.internal_port),
        command: host_port(advertised_host(&config), config.cluster.command_port),
    });
    let health = Arc::new(BrokerHealth {
        partitions: partitions.clone(),
        cluster: cluster.clone(),
        started: AtomicBool::new(false),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let backup_metrics = node.metrics().backup().clone();

    let servers = io.block_on({
        let config = config.clone();
        let registry = registry.clone();
        let health = health.clone();
        let partitions = partitions.clone();
        let cluster = cluster.clone();
        async move {
            let listen = resolve(
                "the command API address (cluster.host, cluster.command-port)",
                &host_port(&config.cluster.host, config.cluster.command_port),
            )
            .await?;
            let mut transport_config = TransportConfig::new(node_id, listen);
            transport_config.metrics_name = "command".to_owned();
            // The command port speaks the same mutual TLS as the internal port.
            transport_config.tls = match network.as_ref().and_then(|n| n.tls()) {
                Some(tls) => Some(tls.clone()),
                None => rill_broker::cluster_tls(&config)?,
            };
            let api = command_api(
                &partitions,
                &config,
                &registry,
                &cluster,
                host_port(advertised_host(&config), config.cluster.command_port),
            )?;
            let transport = Transport::start(transport_config, api.clone())
                .await
                .map_err(command_port_error)?;
            transport
                .metrics()
                .register(&registry)
                .map_err(|e| anyhow::anyhow!("transport metrics: {e}"))?;
            // Brokers reach each other's command API over the internal port, where they
            // already know each other; a broker alone reaches the brokers a cluster
            // change adds over its command port.
            let client = match &network {
                Some(network) => {
                    network.serve_others(api.clone());
                    own_client(
                        &partitions,
                        api.clone(),
                        Some(network.transport().clone()),
                        &addresses,
                    )
                }
                None => own_client(
                    &partitions,
                    api.clone(),
                    Some(transport.clone()),
                    &addresses,
                ),
            };
            // Brokers a cluster change adds are reached like the ones started with.
            follow_new_brokers(&cluster, &client);
            let rest = if config.gateway.enabled {
                let backend: Arc<dyn GatewayBackend> = client;
                let metrics = GatewayMetrics::register(&registry)
                    .map_err(|e| anyhow::anyhow!("gateway metrics: {e}"))?;
                let gateway =
                    GatewayServer::bind(&config.gateway, authenticator.clone(), backend, metrics)
                        .await?;
                let addrs = (gateway.rest_addr()?, gateway.grpc_addr()?);
                Some((
                    addrs,
                    tokio::spawn(gateway.serve(wait_for_stop(stop_rx.clone()))),
                ))
            } else {
                None
            };
            let (monitoring_addr, monitoring_task) = serve_monitoring(
                &config,
                registry,
                health,
                Some((
                    cluster.clone(),
                    local_replicas(&partitions),
                    partitions.clone(),
                    backup_metrics.clone(),
                )),
                authenticator,
                stop_rx,
            )
            .await?;
            anyhow::Ok((
                transport,
                rest,
                monitoring_addr,
                monitoring_task,
                api.jobs.clone(),
            ))
        }
    })?;
    let (transport, rest, monitoring_addr, monitoring_task, jobs) = servers;
    health.started.store(true, Ordering::Release);
    tracing::info!(
        node = %node_id,
        cluster_size = config.cluster.size,
        partitions = ?partitions.keys().iter().map(|p| p.get()).collect::<Vec<_>>(),
        command = %transport.local_addr(),
        rest = ?rest.as_ref().map(|((addr, _), _)| *addr),
        grpc = ?rest.as_ref().map(|((_, addr), _)| *addr),
        monitoring = %monitoring_addr,
        startup_ms = started_at.elapsed().as_millis() as u64,
        "Rill broker is running"
    );

    io.block_on(shutdown_signal())?;
    tracing::info!("shutting down: finishing requests in flight");
    let _ = stop_tx.send(true);
    io.block_on(async {
        if let Some((_, task)) = rest
            && let Ok(Err(e)) = task.await
        {
            tracing::warn!(error = %e, "gateway server stopped with an error");
        }
        let _ = monitoring_task.await;
        jobs.close();
        transport.shutdown().await;
    });
    drop(health);
    drop(partitions);
    node.shutdown();
    tracing::info!("stopped");
    Ok(())
}

/// A broker's command API (the standalone's too), its job feed and job push (their
/// metrics in `registry`). Call inside the runtime the API serves on.
fn command_api(
    partitions: &Partitions,
    config: &RillConfig,
    registry: &Registry,
    cluster: &ClusterState,
    command_address: String,
) -> Result<Arc<CommandApi<BpmnEngine>>> {
    Ok(Arc::new(CommandApi {
        partitions: partitions.clone(),
        config: config.clone(),
        jobs: JobsFeed::start(partitions),
        push: JobPushes::start(partitions.clone(), Some(registry))
            .map_err(|e| anyhow::anyhow!("job push metrics: {e}"))?,
        command_address,
        cluster: Some(cluster.clone()),
    }))
}

/// A broker's own command-API client: it asks `api` in process and the other brokers
/// (`addresses`) over `transport`. The partitions' cross-partition sends go through it
/// to partitions led elsewhere, and the embedded gateway serves clients with it.
fn own_client(
    partitions: &Partitions,
    api: Arc<CommandApi<BpmnEngine>>,
    transport: Option<Transport>,
    addresses: &BTreeMap<NodeId, String>,
) -> Arc<CommandClient> {
    let client = CommandClient::start_known(transport, addresses, api);
    partitions.set_router(Arc::new(ClusterRouter {
        partitions: partitions.clone(),
        client: client.clone(),
    }));
    client
}

/// Points `client` (a broker's own) at every broker the cluster configuration records
/// an internal address for (a change added it), now and on every new version.
fn follow_new_brokers(cluster: &ClusterState, client: &Arc<CommandClient>) {
    let mut watcher = cluster.subscribe();
    let client = Arc::downgrade(client);
    tokio::spawn(async move {
        loop {
            let config = watcher.borrow_and_update().clone();
            let Some(client) = client.upgrade() else {
                return;
            };
            for (&id, broker) in &config.brokers {
                if let Some(address) = &broker.internal_address {
                    client.add_broker(NodeId(id), address.clone());
                }
            }
            drop(client);
            if watcher.changed().await.is_err() {
                return;
            }
        }
    });
}

/// Fails when `host:port` (`host_setting`, `setting`) cannot be listened on right now.
/// The probe is closed at once; the real listener binds it later.
fn check_port_free(setting: &str, host_setting: &str, host: &str, port: u16) -> Result<()> {
    use std::net::ToSocketAddrs;
    if port == 0 {
        return Ok(());
    }
    // A name that does not resolve is reported where the listener is bound.
    let Some(addr) = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
    else {
        return Ok(());
    };
    match std::net::TcpListener::bind(addr) {
        Ok(_probe) => Ok(()),
        Err(e) => Err(listen_error(addr, setting, host_setting, &e)),
    }
}

/// A failed start of the command API, with the setting to change.
fn command_port_error(error: rill_transport::TransportError) -> anyhow::Error {
    match error {
        rill_transport::TransportError::Bind { addr, source } => {
            listen_error(addr, "cluster.command-port", "cluster.host", &source)
        }
        other => anyhow::Error::new(other).context("starting the command API"),
    }
}

/// Why `addr` cannot be listened on, naming the settings to change.
fn listen_error(
    addr: std::net::SocketAddr,
    setting: &str,
    host_setting: &str,
    source: &std::io::Error,
) -> anyhow::Error {
    if source.kind() == std::io::ErrorKind::AddrInUse {
        anyhow::anyhow!(
            "cannot listen on {addr} for {setting}: the address is in use by another \
             process; stop it, or choose another {setting}"
        )
    } else {
        anyhow::anyhow!(
            "cannot listen on {addr} ({host_setting}, {setting}): {source}; set \
             {host_setting} to an address of this machine and {setting} to a free port"
        )
    }
}

struct GatewayHealth {
    client: Arc<CommandClient>,
}

impl HealthCheck for GatewayHealth {
    fn started(&self) -> bool {
        true
    }

    fn ready(&self) -> bool {
        self.client.topology().all_partitions_led()
    }

    fn healthy(&self) -> bool {
        true
    }
}

/// Runs a gateway alone until SIGTERM or SIGINT: REST for clients, routing to the
/// brokers found at `gateway.contact-points` (their command API addresses).
pub fn gateway(config: RillConfig) -> Result<()> {
    let config = validated(config)?;
    let authenticator = security::authenticator(&config)?;
    if config.gateway.contact_points.is_empty() {
        bail!(
            "gateway.contact-points is empty: list the command API address (host:26501) of \
             at least one broker"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("rill-gateway")
        .worker_threads(config.threads.io_thread_count.max(1))
        .enable_all()
        .build()
        .context("starting the gateway's runtime")?;
    let registry = Registry::new();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (rest_task, monitoring_task, transport) = runtime.block_on(async {
        // A gateway takes no requests over the transport; it listens only because every
        // transport does. Its node id is outside any cluster's range.
        let listen = resolve("a local address", "127.0.0.1:0").await?;
        let mut transport_config = TransportConfig::new(NodeId(u32::MAX), listen);
        transport_config.metrics_name = "command".to_owned();
        // With cluster.tls, the gateway presents its certificate to the brokers' command
        // ports and checks theirs.
        transport_config.tls = rill_broker::cluster_tls(&config)?;
        let no_service = Arc::new(
            |_: NodeId,
             service: rill_transport::ServiceId,
             _: rill_protocol::PartitionId,
             _: bytes::Bytes|
             -> futures::future::BoxFuture<'static, Result<bytes::Bytes, String>> {
                Box::pin(async move { Err(format!("a gateway serves no {service}")) })
            },
        );
        let transport = Transport::start(transport_config, no_service).await?;
        transport
            .metrics()
            .register(&registry)
            .map_err(|e| anyhow::anyhow!("transport metrics: {e}"))?;
        let client = CommandClient::start(transport.clone(), config.gateway.contact_points.clone());
        let backend: Arc<dyn GatewayBackend> = client.clone();
        let metrics = GatewayMetrics::register(&registry)
            .map_err(|e| anyhow::anyhow!("gateway metrics: {e}"))?;
        let rest =
            GatewayServer::bind(&config.gateway, authenticator.clone(), backend, metrics).await?;
        let (monitoring_addr, monitoring_task) = serve_monitoring(
            &config,
            registry.clone(),
            Arc::new(GatewayHealth { client }),
            None,
            authenticator,
            stop_rx.clone(),
        )
        .await?;
        tracing::info!(
            rest = %rest.rest_addr()?,
            grpc = %rest.grpc_addr()?,
            monitoring = %monitoring_addr,
            contact_points = ?config.gateway.contact_points,
            "Rill gateway is running"
        );
        let rest_task = tokio::spawn(rest.serve(wait_for_stop(stop_rx)));
        anyhow::Ok((rest_task, monitoring_task, transport))
    })?;
    runtime.block_on(shutdown_signal())?;
    tracing::info!("shutting down: finishing requests in flight");
    let _ = stop_tx.send(true);
    runtime.block_on(async {
        let _ = rest_task.await;
        let _ = monitoring_task.await;
        transport.shutdown().await;
    });
    tracing::info!("stopped");
    Ok(())
}

/// Binds the monitoring port (metrics, probes and, on a broker, the cluster management
/// API) and serves it until `stop` is set.
async fn serve_monitoring(
    config: &RillConfig,
    registry: Registry,
    health: Arc<dyn HealthCheck>,
    broker: Option<(ClusterState, LocalReplicas, Partitions, BackupMetrics)>,
    authenticator: Arc<Authenticator>,
    stop: watch::Receiver<bool>,
) -> Result<(
    std::net::SocketAddr,
    tokio::task::JoinHandle<rill_broker::Result<()>>,
)> {
    let monitoring = MonitoringServer::bind(
        &host_port(&config.monitoring.host, config.monitoring.port),
        registry,
        health,
    )
    .await?
    .with_tls(&config.monitoring.tls)?;
    let store =
        rill_broker::backup::configured_store(&config.backup).map_err(anyhow::Error::msg)?;
    if let (Some(store), Some((_, _, _, metrics))) = (&store, &broker) {
        metrics.set_configured(true);
        backups_at_start(store.clone(), config.cluster.node_id, metrics.clone()).await;
    }
    // Every route is added before the guard, so that it covers them all.
    let monitoring = match broker {
        Some((cluster, local, partitions, metrics)) => {
            let backup_partitions = Arc::new(rill_broker::backup::LocalPartitions {
                partitions,
                cluster: cluster.clone(),
            });
            // Runs until the runtime stops with the broker.
            let _scheduler = rill_broker::backup::spawn_scheduler(
                &config.backup,
                store.clone(),
                backup_partitions.clone(),
                metrics.clone(),
            );
            monitoring
                .with_cluster(cluster, local)
                .with_backups(store, backup_partitions, metrics)
        }
        None => monitoring,
    };
    let monitoring = if authenticator.is_enabled() {
        monitoring.guarded(Arc::new(security::ManagementGuard(authenticator)))
    } else {
        monitoring
    };
    let addr = monitoring.local_addr()?;
    Ok((addr, tokio::spawn(monitoring.serve(wait_for_stop(stop)))))
}

/// The raft view of the replicas `partitions` holds, for the management API.
fn local_replicas(partitions: &Partitions) -> LocalReplicas {
    let partitions = partitions.clone();
    Arc::new(move || partitions.values().iter().map(|p| p.status()).collect())
}

/// A broker that starts runs no backup upload: the parts it left in progress failed.
/// The time of the latest completed part in the store starts the metric the backup
/// alert watches.
async fn backups_at_start(store: rill_broker::backup::Store, node: u32, metrics: BackupMetrics) {
    #[allow(clippy::disallowed_methods)] // shown to operators as the status's time
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let checked = tokio::task::spawn_blocking(move || {
        let marked = store.fail_interrupted(node, now)?;
        let latest = rill_broker::backup::latest_completed(store.as_ref())?;
        Ok::<_, String>((marked, latest))
    })
    .await;
    match checked {
        Ok(Ok((marked, latest))) => {
            for (backup, partition) in marked {
                tracing::warn!(
                    backup,
                    partition,
                    "a backup part this broker was taking when it stopped is marked failed"
                );
            }
            if let Some(millis) = latest {
                metrics.completed_at(millis / 1000);
            }
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cannot check the backup store for interrupted backups")
        }
        Err(e) => tracing::warn!(error = %e, "checking the backup store stopped"),
    }
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
