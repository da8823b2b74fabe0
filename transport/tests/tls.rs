//! Mutual TLS on the transport (`cluster.tls.*`), over loopback sockets with certificates
//! made here: members of the cluster's CA talk; a peer with a certificate from another CA
//! is refused on the internal port, and so is a peer without TLS.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use rill_tls::testing::TestCa;
use rill_tls::{ClusterTls, IdentityFiles, PemFile};
use rill_transport::{
    Handler, NodeId, PartitionId, ServiceId, Transport, TransportConfig, TransportError,
};
use rustls_pki_types::pem::PemObject;

const TIMEOUT: Duration = Duration::from_secs(5);

/// `issuer` signs the node's certificate; the node trusts `trusted`.
fn tls(dir: &Path, stem: &str, issuer: &TestCa, trusted: &TestCa) -> ClusterTls {
    let (certificate, key) = issuer.issue(&["rill-broker"]).write(dir, stem);
    let ca = trusted.write(dir, &format!("{stem}-ca.crt"));
    ClusterTls::load(
        IdentityFiles::new("cluster.tls", certificate, key),
        PemFile::new("cluster.tls.ca", ca),
        Duration::from_millis(100),
    )
    .expect("cluster TLS loads")
}

fn config(node: u32, tls: Option<ClusterTls>) -> TransportConfig {
    let mut config = TransportConfig::new(NodeId(node), "127.0.0.1:0".parse().expect("literal"));
    config.connect_timeout = Duration::from_millis(1000);
    config.reconnect_backoff_min = Duration::from_millis(5);
    config.reconnect_backoff_max = Duration::from_millis(50);
    config.shutdown_grace = Duration::from_millis(300);
    config.tls = tls;
    config
}

/// Echoes the payload and counts its calls.
fn echo(calls: Arc<AtomicUsize>) -> Arc<dyn Handler> {
    Arc::new(
        move |_: NodeId,
              _: ServiceId,
              _: PartitionId,
              payload: Bytes|
              -> BoxFuture<'static, Result<Bytes, String>> {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Ok(payload) }.boxed()
        },
    )
}

async fn request(client: &Transport, node: u32, payload: Bytes) -> Result<Bytes, TransportError> {
    client
        .request(NodeId(node), ServiceId(7), PartitionId(1), payload, TIMEOUT)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_of_the_cluster_ca_talk_over_mutual_tls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("cluster CA");
    let calls = Arc::new(AtomicUsize::new(0));
    let server = Transport::start(
        config(1, Some(tls(dir.path(), "node-1", &ca, &ca))),
        echo(calls.clone()),
    )
    .await
    .expect("start");
    let client = Transport::start(
        config(2, Some(tls(dir.path(), "node-2", &ca, &ca))),
        echo(Arc::new(AtomicUsize::new(0))),
    )
    .await
    .expect("start");
    client.set_peer(NodeId(1), server.local_addr());

    assert_eq!(
        request(&client, 1, Bytes::from_static(b"hello"))
            .await
            .expect("answer"),
        Bytes::from_static(b"hello")
    );
    // Many requests at once, and a large one, through the TLS writer's batches.
    let many = (0..200).map(|i| request(&client, 1, Bytes::from(format!("request {i}"))));
    for (i, answer) in futures::future::join_all(many)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(answer.expect("answer"), Bytes::from(format!("request {i}")));
    }
    let large = Bytes::from(vec![7u8; 3 * 1024 * 1024]);
    assert_eq!(
        request(&client, 1, large.clone()).await.expect("large"),
        large
    );
    assert_eq!(calls.load(Ordering::SeqCst), 202);

    // `identify` with the cluster's TLS finds the node; without it, it finds nothing.
    let member = tls(dir.path(), "probe", &ca, &ca);
    let found = Transport::identify(server.local_addr(), TIMEOUT, Some(member))
        .await
        .expect("identify");
    assert_eq!(found, NodeId(1));
    Transport::identify(server.local_addr(), Duration::from_millis(500), None)
        .await
        .expect_err("a plain probe gets no answer from a TLS port");

    client.shutdown().await;
    server.shutdown().await;
}

/// The internal port refuses a peer whose certificate another CA issued, even when that
/// peer knows (trusts) the cluster's CA certificate, and a peer without TLS. Neither
/// reaches the handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_with_a_certificate_from_another_ca_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = TestCa::new("cluster CA");
    let theirs = TestCa::new("another CA");
    let calls = Arc::new(AtomicUsize::new(0));
    let server = Transport::start(
        config(1, Some(tls(dir.path(), "node-1", &ours, &ours))),
        echo(calls.clone()),
    )
    .await
    .expect("start");

    let stranger = Transport::start(
        config(5, Some(tls(dir.path(), "stranger", &theirs, &ours))),
        echo(Arc::new(AtomicUsize::new(0))),
    )
    .await
    .expect("start");
    stranger.set_peer(NodeId(1), server.local_addr());
    let error = request(&stranger, 1, Bytes::from_static(b"let me in"))
        .await
        .expect_err("refused");
    let message = error.to_string();
    assert!(
        matches!(
            error,
            TransportError::Unreachable { .. } | TransportError::ConnectionLost { .. }
        ),
        "{message}"
    );
    assert!(
        message.contains("UnknownCA") || message.contains("closed") || message.contains("TLS"),
        "{message}"
    );

    let plain = Transport::start(config(6, None), echo(Arc::new(AtomicUsize::new(0))))
        .await
        .expect("start");
    plain.set_peer(NodeId(1), server.local_addr());
    request(&plain, 1, Bytes::from_static(b"plain"))
        .await
        .expect_err("a peer without TLS is refused");

    // A member trusting the cluster CA refuses a node whose certificate another CA issued.
    let imposter = Transport::start(
        config(1, Some(tls(dir.path(), "imposter", &theirs, &theirs))),
        echo(Arc::new(AtomicUsize::new(0))),
    )
    .await
    .expect("start");
    let member = Transport::start(
        config(2, Some(tls(dir.path(), "node-2", &ours, &ours))),
        echo(Arc::new(AtomicUsize::new(0))),
    )
    .await
    .expect("start");
    member.set_peer(NodeId(1), imposter.local_addr());
    let error = request(&member, 1, Bytes::from_static(b"secret"))
        .await
        .expect_err("the imposter is refused");
    assert!(error.to_string().contains("UnknownIssuer"), "{error}");

    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "nothing refused reached the handler"
    );
    for transport in [stranger, plain, imposter, member, server] {
        transport.shutdown().await;
    }
}

/// The node's certificate is renewed under a running transport (same CA, as cert-manager
/// renews it): the next connection is served the new certificate, and the connection
/// already open between two members carries on, not reopened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_member_certificate_is_served_without_reconnecting_members() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("cluster CA");
    let calls = Arc::new(AtomicUsize::new(0));
    let server = Transport::start(
        config(1, Some(tls(dir.path(), "node-1", &ca, &ca))),
        echo(calls.clone()),
    )
    .await
    .expect("start");
    let member = tls(dir.path(), "node-2", &ca, &ca);
    let client = Transport::start(
        config(2, Some(member.clone())),
        echo(Arc::new(AtomicUsize::new(0))),
    )
    .await
    .expect("start");
    client.set_peer(NodeId(1), server.local_addr());
    request(&client, 1, Bytes::from_static(b"before"))
        .await
        .expect("answer");
    assert_eq!(client.stats().outbound_connections_opened, 1);

    let served = || {
        let connector = member.connector().clone();
        let addr = server.local_addr();
        async move {
            let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
            let tls = connector
                .connect(rill_tls::member_server_name(addr), tcp)
                .await
                .expect("handshake");
            tls.get_ref().1.peer_certificates().expect("certificate")[0].to_vec()
        }
    };
    let renewed = ca.issue(&["rill-broker"]);
    let renewed_der =
        rustls_pki_types::CertificateDer::from_pem_slice(renewed.certificate_pem.as_bytes())
            .expect("pem")
            .to_vec();
    assert_ne!(served().await, renewed_der);
    renewed.write(dir.path(), "node-1");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while served().await != renewed_der {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the renewed certificate is not served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    request(&client, 1, Bytes::from_static(b"after"))
        .await
        .expect("answer on the connection opened before");
    assert_eq!(
        client.stats().outbound_connections_opened,
        1,
        "the members' connection was not reopened"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    client.shutdown().await;
    server.shutdown().await;
}
