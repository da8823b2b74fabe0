//! The client APIs over TLS (`gateway.tls.*`), with certificates made here: REST with
//! reqwest and raw TLS connections (HTTP/1.1 and HTTP/2 by ALPN), gRPC with tonic's TLS
//! client, the start-up errors that name the setting, and a certificate rotation under a
//! running gateway.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rill_config::GatewayConfig;
use rill_gateway::grpc::proto::TopologyRequest;
use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::{GatewayMetrics, GatewayServer};
use rill_tls::testing::{TestCa, TestIdentity, Validity};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::support::engine_backend::EngineBackend;
use crate::support::test_config;

fn tls_config(dir: &Path, identity: &TestIdentity) -> GatewayConfig {
    let (certificate, key) = identity.write(dir, "gateway");
    let mut config = test_config();
    config.grpc_port = 0;
    config.tls.enabled = true;
    config.tls.certificate = Some(certificate);
    config.tls.private_key = Some(key);
    config
}

struct Running {
    rest: std::net::SocketAddr,
    grpc: std::net::SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn start(config: &GatewayConfig) -> Running {
    let metrics = GatewayMetrics::register(&prometheus::Registry::new()).expect("metrics");
    let server = GatewayServer::bind(
        config,
        Arc::new(rill_gateway::Authenticator::none()),
        EngineBackend::new(1),
        metrics,
    )
    .await
    .expect("bind");
    let (rest, grpc) = (
        server.rest_addr().expect("rest"),
        server.grpc_addr().expect("grpc"),
    );
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    Running {
        rest,
        grpc,
        _stop: stop,
    }
}

async fn bind_error(config: &GatewayConfig) -> String {
    let metrics = GatewayMetrics::register(&prometheus::Registry::new()).expect("metrics");
    match GatewayServer::bind(
        config,
        Arc::new(rill_gateway::Authenticator::none()),
        EngineBackend::new(1),
        metrics,
    )
    .await
    {
        Ok(_) => panic!("the gateway started with bad TLS files"),
        Err(error) => error.to_string(),
    }
}

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("certificate PEM")
}

type ClientTls = tokio_rustls::client::TlsStream<TcpStream>;

/// A TLS connection that trusts `ca` and offers `alpn`.
async fn connect(ca: &TestCa, addr: std::net::SocketAddr, alpn: &[&[u8]]) -> ClientTls {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(ca.pem())).expect("root");
    let mut config = rustls::ClientConfig::builder_with_provider(rill_tls::provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await.expect("connect");
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().expect("name"), tcp)
        .await
        .expect("TLS handshake")
}

fn served(connection: &ClientTls) -> CertificateDer<'static> {
    connection
        .get_ref()
        .1
        .peer_certificates()
        .expect("certificates")[0]
        .clone()
}

/// One HTTP/1.1 request on a kept-alive connection; returns the status code.
async fn get_http1(connection: &mut ClientTls, path: &str) -> u16 {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    connection
        .write_all(request.as_bytes())
        .await
        .expect("write");
    connection.flush().await.expect("flush");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        connection
            .read_exact(&mut byte)
            .await
            .expect("response head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("ASCII head");
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().expect("length"))
        })
        .expect("content-length");
    let mut body = vec![0u8; length];
    connection.read_exact(&mut body).await.expect("body");
    head[9..12].parse().expect("status code")
}

#[tokio::test]
async fn rest_and_grpc_are_served_over_tls_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("gateway test CA");
    let identity = ca.issue(&["localhost", "127.0.0.1"]);
    let gateway = start(&tls_config(dir.path(), &identity)).await;

    // REST with reqwest trusting the test CA.
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.pem().as_bytes()).expect("CA"))
        .build()
        .expect("client");
    let url = format!("https://localhost:{}/v2/topology", gateway.rest.port());
    let response = client.get(&url).send().await.expect("HTTPS request");
    assert_eq!(response.status(), 200);
    let topology: serde_json::Value = response.json().await.expect("topology");
    assert_eq!(topology["partitionsCount"], 1, "{topology}");
    // Plain HTTP is not answered.
    let plain = format!("http://127.0.0.1:{}/v2/topology", gateway.rest.port());
    assert!(reqwest::get(&plain).await.is_err(), "plain HTTP must fail");
    // A client that does not trust the CA refuses the certificate.
    let error = reqwest::get(&url).await.expect_err("unknown CA");
    assert!(format!("{error:?}").contains("UnknownIssuer"), "{error:?}");

    // REST offers HTTP/2 and HTTP/1.1 by ALPN.
    let mut h2 = connect(&ca, gateway.rest, &[b"h2", b"http/1.1"]).await;
    assert_eq!(h2.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    assert_eq!(
        h2.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    // The server speaks HTTP/2 there: its first frame answers the preface with SETTINGS.
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .expect("preface");
    h2.flush().await.expect("flush");
    let mut frame_header = [0u8; 9];
    h2.read_exact(&mut frame_header).await.expect("a frame");
    assert_eq!(frame_header[3], 0x4, "a SETTINGS frame: {frame_header:?}");
    let mut h1 = connect(&ca, gateway.rest, &[b"http/1.1"]).await;
    assert_eq!(h1.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(get_http1(&mut h1, "/v2/topology").await, 200);

    // gRPC with tonic's TLS client (which insists on `h2` by ALPN).
    let tls = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(ca.pem()))
        .domain_name("localhost");
    let channel = tonic::transport::Endpoint::from_shared(format!(
        "https://localhost:{}",
        gateway.grpc.port()
    ))
    .expect("endpoint")
    .tls_config(tls)
    .expect("tls config")
    .connect()
    .await
    .expect("gRPC over TLS connects");
    let topology = GatewayClient::new(channel)
        .topology(TopologyRequest {})
        .await
        .expect("topology over gRPC")
        .into_inner();
    assert_eq!(topology.partitions_count, 1);
    // The gRPC port speaks TLS only.
    let plain = tonic::transport::Endpoint::from_shared(format!(
        "http://127.0.0.1:{}",
        gateway.grpc.port()
    ))
    .expect("endpoint")
    .connect()
    .await;
    let refused = match plain {
        Err(_) => true,
        Ok(channel) => GatewayClient::new(channel)
            .topology(TopologyRequest {})
            .await
            .is_err(),
    };
    assert!(refused, "plaintext gRPC must fail on a TLS port");
}

#[tokio::test]
async fn bad_files_stop_the_start_and_name_the_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("gateway test CA");

    let mut config = tls_config(dir.path(), &ca.issue(&["localhost"]));
    config.tls.private_key = Some(dir.path().join("missing.key"));
    let message = bind_error(&config).await;
    assert!(
        message.starts_with("gateway.tls.private-key: cannot read"),
        "{message}"
    );

    let config = tls_config(dir.path(), &ca.issue(&["localhost"]));
    let other = ca.issue(&["localhost"]);
    std::fs::write(
        config.tls.private_key.as_ref().expect("key"),
        other.private_key_pem,
    )
    .expect("write");
    let message = bind_error(&config).await;
    assert!(message.starts_with("gateway.tls.private-key:"), "{message}");
    assert!(
        message.contains("does not belong to the certificate"),
        "{message}"
    );

    let config = tls_config(
        dir.path(),
        &ca.issue_with(&["localhost"], Validity::Expired),
    );
    let message = bind_error(&config).await;
    assert!(message.starts_with("gateway.tls.certificate:"), "{message}");
    assert!(message.contains("expired"), "{message}");

    let config = tls_config(dir.path(), &ca.issue(&["localhost"]));
    std::fs::write(
        config.tls.certificate.as_ref().expect("cert"),
        "-----BEGIN CERTIFICATE-----\n",
    )
    .expect("write");
    let message = bind_error(&config).await;
    assert!(message.starts_with("gateway.tls.certificate:"), "{message}");
}

/// cert-manager replaces the files of a running gateway: the next connection gets the
/// new certificate, and a connection opened before carries on with requests.
#[tokio::test]
async fn a_rotated_certificate_is_served_without_dropping_open_connections() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("gateway test CA");
    let first = ca.issue(&["localhost"]);
    let gateway = start(&tls_config(dir.path(), &first)).await;

    let mut open = connect(&ca, gateway.rest, &[b"http/1.1"]).await;
    assert_eq!(served(&open), der(&first.certificate_pem));
    assert_eq!(get_http1(&mut open, "/v2/topology").await, 200);

    let second = ca.issue(&["localhost"]);
    second.write(dir.path(), "gateway");
    // Files are polled every few seconds.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let fresh = connect(&ca, gateway.grpc, &[b"h2"]).await;
        if served(&fresh) == der(&second.certificate_pem) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate is not served"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let fresh = connect(&ca, gateway.rest, &[b"http/1.1"]).await;
    assert_eq!(served(&fresh), der(&second.certificate_pem));

    // The connection from before the rotation is still up, with its certificate.
    assert_eq!(get_http1(&mut open, "/v2/topology").await, 200);
    assert_eq!(served(&open), der(&first.certificate_pem));
}
