//! TLS on every port of real `rill` processes (issue 42), with certificates made here: a
//! three-broker cluster with mutual TLS on the internal and command ports and TLS on the
//! client APIs, a standalone gateway reaching it over mutual TLS, a peer with a
//! certificate from another CA refused on the internal port, the monitoring port and
//! `rill cluster` / `rill status` over TLS, and the start-up errors that name the setting.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use rill_tls::testing::TestCa;
use rill_tls::{ClusterTls, IdentityFiles, PemFile};
use rill_transport::{Handler, NodeId, PartitionId, ServiceId, Transport, TransportConfig};
use support::{Api, Brokers, RillProcess, Workload, deploy, free_port, rill_binary};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The files of one member or server: `(certificate, key)`.
fn issue(ca: &TestCa, dir: &Path, stem: &str) -> (PathBuf, PathBuf) {
    ca.issue(&["localhost", "127.0.0.1"]).write(dir, stem)
}

fn https_client(ca: &Path) -> reqwest::Client {
    let pem = std::fs::read(ca).expect("CA file");
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("CA"))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

fn tls_api(port: u16, ca: &Path) -> Api {
    Api {
        base: format!("https://localhost:{port}"),
        http: https_client(ca),
    }
}

/// `--set` options for cluster TLS and gateway TLS with the files of `stem`.
fn tls_options(dir: &Path, ca: &TestCa, ca_file: &Path, stem: &str) -> Vec<String> {
    let (certificate, key) = issue(ca, dir, stem);
    vec![
        "cluster.tls.enabled=true".to_owned(),
        format!("cluster.tls.certificate={}", certificate.display()),
        format!("cluster.tls.private-key={}", key.display()),
        format!("cluster.tls.ca={}", ca_file.display()),
        "gateway.tls.enabled=true".to_owned(),
        format!("gateway.tls.certificate={}", certificate.display()),
        format!("gateway.tls.private-key={}", key.display()),
    ]
}

fn counting_handler(calls: Arc<AtomicUsize>) -> Arc<dyn Handler> {
    Arc::new(
        move |_: NodeId,
              _: ServiceId,
              _: PartitionId,
              _: Bytes|
              -> BoxFuture<'static, Result<Bytes, String>> {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err("nothing here".to_owned()) }.boxed()
        },
    )
}

#[test]
fn a_cluster_with_tls_everywhere_runs_and_refuses_a_stranger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).expect("certs dir");
    let ca = TestCa::new("rill cluster CA");
    let ca_file = ca.write(&certs, "ca.crt");
    runtime().block_on(async {
        let mut brokers = Brokers::start_with(dir.path(), 3, 2, 3, &[], |i| {
            tls_options(&certs, &ca, &ca_file, &format!("broker-{i}"))
        });
        brokers.wait_ready(Duration::from_secs(90)).await;
        let apis: Vec<Api> = brokers
            .nodes
            .iter()
            .map(|node| tls_api(node.rest_port, &ca_file))
            .collect();
        // Plain HTTP gets nowhere on the client API.
        assert!(brokers.api(0).get("/v2/topology").await.is_err());
        deploy(&apis[0], &["two-rest-calls.bpmn"]).await;
        let workload = Workload::start(apis.clone(), 30);
        let keys = workload
            .finish(&apis[1], Duration::from_secs(120), &brokers)
            .await;
        assert_eq!(keys.len(), 30);

        // A gateway of its own reaches the brokers' command ports over mutual TLS.
        let command_ports: Vec<String> = brokers
            .options
            .iter()
            .map(|options| {
                let port = options
                    .iter()
                    .find_map(|o| o.strip_prefix("cluster.command-port="))
                    .expect("command port");
                format!("127.0.0.1:{port}")
            })
            .collect();
        let mut gateway_options = tls_options(&certs, &ca, &ca_file, "gateway");
        gateway_options.push(format!(
            "gateway.contact-points={}",
            command_ports.join(",")
        ));
        gateway_options.push("gateway.host=127.0.0.1".to_owned());
        let options: Vec<&str> = gateway_options.iter().map(String::as_str).collect();
        let mut gateway = RillProcess::start_role("gateway", &dir.path().join("gateway"), &options);
        gateway.wait_ready(Duration::from_secs(60)).await;
        let via_gateway = tls_api(gateway.rest_port, &ca_file);
        let (status, topology) = via_gateway.get("/v2/topology").await.expect("topology");
        assert_eq!(status, 200, "{topology}");
        assert_eq!(
            topology["brokers"].as_array().map(Vec::len),
            Some(3),
            "{topology}"
        );
        let (status, created) = via_gateway
            .post(
                "/v2/process-instances",
                serde_json::json!({"processDefinitionId": "two-rest-calls"}),
            )
            .await
            .expect("create");
        assert_eq!(status, 200, "{created}");

        // A peer that knows the cluster's CA certificate but holds a certificate from
        // another CA is refused on the internal port, and the broker says why.
        let stranger_ca = TestCa::new("another CA");
        let (certificate, key) = issue(&stranger_ca, &certs, "stranger");
        let stranger_tls = ClusterTls::load(
            IdentityFiles::new("cluster.tls", certificate, key),
            PemFile::new("cluster.tls.ca", ca_file.clone()),
            Duration::from_secs(5),
        )
        .expect("stranger TLS");
        let mut config = TransportConfig::new(NodeId(7), "127.0.0.1:0".parse().expect("addr"));
        config.tls = Some(stranger_tls);
        let calls = Arc::new(AtomicUsize::new(0));
        let stranger = Transport::start(config, counting_handler(calls))
            .await
            .expect("stranger transport");
        let internal: std::net::SocketAddr = brokers.internal[0].parse().expect("internal");
        stranger.set_peer(NodeId(0), internal);
        let refused = stranger
            .request(
                NodeId(0),
                ServiceId(1),
                PartitionId(1),
                Bytes::from_static(b"vote for me"),
                Duration::from_secs(3),
            )
            .await
            .expect_err("refused");
        assert!(!refused.to_string().is_empty());
        brokers.nodes[0]
            .wait_log(Duration::from_secs(10), |log| {
                log.contains("TLS handshake failed")
            })
            .await;
        stranger.shutdown().await;

        // The cluster carries on.
        let (status, _) = apis[2].get("/v2/topology").await.expect("topology");
        assert_eq!(status, 200);
        gateway.terminate(Duration::from_secs(20));
    });
}

/// Waits until `/ready` answers 200 over HTTPS.
async fn wait_ready_https(process: &RillProcess, client: &reqwest::Client) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = format!("https://localhost:{}/ready", process.monitoring_port);
    loop {
        if let Ok(response) = client.get(&url).send().await
            && response.status().is_success()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not ready over HTTPS:\n{}",
            process.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

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

/// A broker with TLS on its monitoring port and client APIs: probes and metrics over
/// HTTPS, and `rill cluster status` / `rill status` with `--ca-certificate`.
#[test]
fn monitoring_and_the_cli_work_over_tls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).expect("certs dir");
    let ca = TestCa::new("rill CA");
    let ca_file = ca.write(&certs, "ca.crt");
    let (certificate, key) = issue(&ca, &certs, "server");
    let options = [
        "cluster.host=127.0.0.1".to_owned(),
        format!("cluster.internal-port={}", free_port()),
        format!("cluster.command-port={}", free_port()),
        "monitoring.tls.enabled=true".to_owned(),
        format!("monitoring.tls.certificate={}", certificate.display()),
        format!("monitoring.tls.private-key={}", key.display()),
        "gateway.tls.enabled=true".to_owned(),
        format!("gateway.tls.certificate={}", certificate.display()),
        format!("gateway.tls.private-key={}", key.display()),
    ];
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut broker = RillProcess::start_role("broker", &dir.path().join("broker"), &options);
    runtime().block_on(async {
        let client = https_client(&ca_file);
        wait_ready_https(&broker, &client).await;
        let metrics = client
            .get(format!(
                "https://localhost:{}/metrics",
                broker.monitoring_port
            ))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        assert!(metrics.contains("rill_"), "{metrics}");
        assert!(
            reqwest::get(broker.monitoring()).await.is_err(),
            "plain HTTP on a TLS monitoring port"
        );
    });
    let management = format!("https://localhost:{}", broker.monitoring_port);
    let ca_arg = ca_file.display().to_string();
    let (ok, out, err) = rill(&[
        "cluster",
        "status",
        "--management",
        &management,
        "--ca-certificate",
        &ca_arg,
    ]);
    assert!(ok, "rill cluster status over TLS: {out}{err}");
    let (ok, _, err) = rill(&["cluster", "status", "--management", &management]);
    assert!(!ok, "without the CA the certificate must be refused");
    assert!(err.contains("cannot reach"), "{err}");
    // The chart's scale Jobs give the CA through the environment.
    let output = std::process::Command::new(rill_binary())
        .args(["cluster", "status", "--management", &management])
        .env("RILL_CA_CERTIFICATE", &ca_arg)
        .output()
        .expect("run rill");
    assert!(
        output.status.success(),
        "RILL_CA_CERTIFICATE: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    let address = format!("https://localhost:{}", broker.rest_port);
    let (ok, out, err) = rill(&["--address", &address, "--ca-certificate", &ca_arg, "status"]);
    assert!(ok, "rill status over TLS: {out}{err}");
    let missing = dir.path().join("missing.crt").display().to_string();
    let (ok, _, err) = rill(&[
        "--address",
        &address,
        "--ca-certificate",
        &missing,
        "status",
    ]);
    assert!(!ok);
    assert!(err.contains("--ca-certificate: cannot read"), "{err}");
    broker.terminate(Duration::from_secs(20));
}

/// Bad TLS files stop a broker at start with the setting named; TLS on without its files
/// is a configuration problem; a standalone refuses cluster TLS it would not use.
#[test]
fn bad_tls_settings_stop_the_start_and_name_the_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("rill CA");
    let ca_file = ca.write(dir.path(), "ca.crt");
    let (certificate, key) = issue(&ca, dir.path(), "node");
    let expired = ca
        .issue_with(&["localhost"], rill_tls::testing::Validity::Expired)
        .write(dir.path(), "expired");
    let base = |data: &str| {
        vec![
            "broker".to_owned(),
            "--set".to_owned(),
            format!("data.directory={}", dir.path().join(data).display()),
            "--set".to_owned(),
            "cluster.host=127.0.0.1".to_owned(),
            "--set".to_owned(),
            format!("cluster.internal-port={}", free_port()),
            "--set".to_owned(),
            format!("cluster.command-port={}", free_port()),
            "--set".to_owned(),
            format!("monitoring.port={}", free_port()),
            "--set".to_owned(),
            format!("gateway.rest-port={}", free_port()),
            "--set".to_owned(),
            format!("gateway.grpc-port={}", free_port()),
        ]
    };
    let run = |data: &str, sets: &[String]| {
        let mut args = base(data);
        for set in sets {
            args.push("--set".to_owned());
            args.push(set.clone());
        }
        let output = std::process::Command::new(rill_binary())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run rill broker");
        assert!(!output.status.success(), "must not start with {sets:?}");
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    };

    let message = run(
        "a",
        &[
            "cluster.tls.enabled=true".to_owned(),
            format!("cluster.tls.certificate={}", certificate.display()),
            format!("cluster.tls.private-key={}", key.display()),
            format!(
                "cluster.tls.ca={}",
                dir.path().join("nowhere.crt").display()
            ),
        ],
    );
    assert!(message.contains("cluster.tls.ca: cannot read"), "{message}");

    let message = run(
        "b",
        &[
            "gateway.tls.enabled=true".to_owned(),
            format!("gateway.tls.certificate={}", expired.0.display()),
            format!("gateway.tls.private-key={}", expired.1.display()),
        ],
    );
    assert!(message.contains("gateway.tls.certificate"), "{message}");
    assert!(message.contains("expired"), "{message}");

    let message = run(
        "c",
        &[
            "monitoring.tls.enabled=true".to_owned(),
            format!("monitoring.tls.certificate={}", certificate.display()),
            format!("monitoring.tls.private-key={}", expired.1.display()),
        ],
    );
    assert!(message.contains("monitoring.tls.private-key"), "{message}");
    assert!(message.contains("does not belong"), "{message}");

    let message = run("d", &["gateway.tls.enabled=true".to_owned()]);
    assert!(message.contains("gateway.tls.certificate"), "{message}");
    assert!(message.contains("gateway.tls.private-key"), "{message}");

    let output = std::process::Command::new(rill_binary())
        .args([
            "standalone",
            "--set",
            &format!("data.directory={}", dir.path().join("e").display()),
            "--set",
            "cluster.tls.enabled=true",
            "--set",
            &format!("cluster.tls.certificate={}", certificate.display()),
            "--set",
            &format!("cluster.tls.private-key={}", key.display()),
            "--set",
            &format!("cluster.tls.ca={}", ca_file.display()),
        ])
        .output()
        .expect("run rill standalone");
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("cluster.tls.enabled"), "{message}");
}

/// Runs `tests/clients/{script}` with `env`, expecting "all checks passed".
fn run_client(script: &str, env: &[(&str, String)], rill: &RillProcess) {
    support::assert_client_passes(script, env, || rill.log_text());
}

/// Real clients, unmodified, configured for TLS as docs/security.md shows, against a
/// standalone whose client APIs speak TLS only: pyzeebe with a secure channel, the
/// `@camunda8/sdk` `ZeebeGrpcClient` with `grpcs://` and a custom root certificate (both
/// gRPC stacks insist on `h2` by ALPN), and Camunda's Python orchestration SDK over
/// `https://` with the CA in `SSL_CERT_FILE`.
#[test]
fn real_clients_complete_their_flows_against_a_tls_gateway() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).expect("certs dir");
    let ca = TestCa::new("rill CA");
    let ca_file = ca.write(&certs, "ca.crt");
    let (certificate, key) = issue(&ca, &certs, "gateway");
    let options = [
        "gateway.tls.enabled=true".to_owned(),
        format!("gateway.tls.certificate={}", certificate.display()),
        format!("gateway.tls.private-key={}", key.display()),
    ];
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut rill = RillProcess::start(&dir.path().join("data"), &options);
    runtime().block_on(rill.wait_ready(Duration::from_secs(30)));
    let installs = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let grpc = format!("localhost:{}", rill.grpc_port);
    let ca_path = ca_file.display().to_string();
    run_client(
        "pyzeebe/run.sh",
        &[
            ("RILL_GRPC_ADDRESS", grpc.clone()),
            ("RILL_GRPC_CA", ca_path.clone()),
            (
                "RILL_PYZEEBE_VENV",
                installs.join("pyzeebe-clients").display().to_string(),
            ),
        ],
        &rill,
    );
    run_client(
        "zeebe-node/run.sh",
        &[
            ("RILL_GRPC_ADDRESS", grpc),
            ("RILL_GRPC_CA", ca_path.clone()),
            (
                "RILL_ZEEBE_NODE_DIR",
                installs.join("zeebe-node-clients").display().to_string(),
            ),
        ],
        &rill,
    );
    run_client(
        "python/run.sh",
        &[
            (
                "RILL_REST_ADDRESS",
                format!("https://localhost:{}", rill.rest_port),
            ),
            ("SSL_CERT_FILE", ca_path),
            (
                "RILL_PY_VENV",
                installs.join("python-clients").display().to_string(),
            ),
        ],
        &rill,
    );
    assert!(rill.terminate(Duration::from_secs(20)));
}
