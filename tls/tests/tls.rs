//! Loading checks and reloading, with certificates made here, and handshakes over real
//! sockets.

use std::sync::Arc;
use std::time::Duration;

use rill_tls::testing::{TestCa, Validity, replace};
use rill_tls::{ClusterTls, IdentityFiles, PemFile, ReloadingIdentity, TlsError};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const FAST: Duration = Duration::from_millis(50);

fn files(dir: &std::path::Path, stem: &str) -> IdentityFiles {
    IdentityFiles::new(
        "gateway.tls",
        dir.join(format!("{stem}.crt")),
        dir.join(format!("{stem}.key")),
    )
}

fn load_error(files: IdentityFiles) -> String {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _guard = runtime.enter();
    ReloadingIdentity::load(files, FAST)
        .expect_err("must be refused")
        .to_string()
}

#[test]
fn a_missing_file_names_its_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("test CA");
    ca.issue(&["localhost"]).write(dir.path(), "server");
    std::fs::remove_file(dir.path().join("server.key")).expect("remove");
    let message = load_error(files(dir.path(), "server"));
    assert!(
        message.starts_with("gateway.tls.private-key: cannot read"),
        "{message}"
    );
    assert!(message.contains("server.key"), "{message}");
}

#[test]
fn unparsable_pem_names_its_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("test CA");
    ca.issue(&["localhost"]).write(dir.path(), "server");
    std::fs::write(dir.path().join("server.crt"), "not a certificate\n").expect("write");
    let message = load_error(files(dir.path(), "server"));
    assert!(message.starts_with("gateway.tls.certificate:"), "{message}");
    assert!(message.contains("no usable PEM certificate"), "{message}");

    ca.issue(&["localhost"]).write(dir.path(), "server");
    std::fs::write(
        dir.path().join("server.key"),
        "-----BEGIN PRIVATE KEY-----\n!!\n",
    )
    .expect("write");
    let message = load_error(files(dir.path(), "server"));
    assert!(message.starts_with("gateway.tls.private-key:"), "{message}");
}

#[test]
fn a_key_of_another_certificate_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("test CA");
    let (certificate, _) = ca.issue(&["localhost"]).write(dir.path(), "one");
    let (_, key) = ca.issue(&["localhost"]).write(dir.path(), "two");
    let message = load_error(IdentityFiles::new("monitoring.tls", certificate, key));
    assert!(
        message.starts_with("monitoring.tls.private-key:"),
        "{message}"
    );
    assert!(
        message.contains("does not belong to the certificate"),
        "{message}"
    );
    assert!(message.contains("monitoring.tls.certificate"), "{message}");
}

#[test]
fn expired_and_not_yet_valid_certificates_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("test CA");
    ca.issue_with(&["localhost"], Validity::Expired)
        .write(dir.path(), "old");
    let message = load_error(files(dir.path(), "old"));
    assert!(message.starts_with("gateway.tls.certificate:"), "{message}");
    assert!(message.contains("expired on"), "{message}");

    ca.issue_with(&["localhost"], Validity::NotYetValid)
        .write(dir.path(), "future");
    let message = load_error(files(dir.path(), "future"));
    assert!(message.contains("is not valid before"), "{message}");
}

#[test]
fn a_ca_file_without_certificates_names_its_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("test CA");
    let (certificate, key) = ca.issue(&["127.0.0.1"]).write(dir.path(), "node");
    let bad_ca = dir.path().join("ca.crt");
    std::fs::write(&bad_ca, "").expect("write");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _guard = runtime.enter();
    let error = ClusterTls::load(
        IdentityFiles::new("cluster.tls", certificate, key),
        PemFile::new("cluster.tls.ca", bad_ca),
        FAST,
    )
    .expect_err("must be refused");
    assert!(matches!(error, TlsError::Pem { .. }), "{error:?}");
    assert!(error.to_string().starts_with("cluster.tls.ca:"), "{error}");
}

async fn served_certificate(ca: &TestCa, port: u16) -> CertificateDer<'static> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem().as_bytes()).expect("CA pem"))
        .expect("root");
    let config = rustls::ClientConfig::builder_with_provider(rill_tls::provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = rill_tls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let tls = connector
        .connect("localhost".try_into().expect("name"), tcp)
        .await
        .expect("handshake");
    tls.get_ref().1.peer_certificates().expect("certificates")[0].clone()
}

/// The files are replaced under a running server: new handshakes get the new certificate,
/// an open connection carries on, and a broken file keeps the last good certificate.
#[tokio::test]
async fn a_replaced_certificate_is_served_to_the_next_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("test CA");
    let first = ca.issue(&["localhost"]);
    first.write(dir.path(), "server");
    let identity = ReloadingIdentity::load(files(dir.path(), "server"), FAST).expect("load");
    let acceptor = rill_tls::server_acceptor(&identity, rill_tls::ALPN_HTTP).expect("acceptor");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let mut tls_listener =
        rill_tls::TlsListener::new(listener, acceptor, "test").expect("listener");
    // An echo server.
    tokio::spawn(async move {
        loop {
            let (mut connection, _) = axum::serve::Listener::accept(&mut tls_listener).await;
            tokio::spawn(async move {
                let mut buf = [0u8; 64];
                while let Ok(n) = connection.read(&mut buf).await {
                    if n == 0 || connection.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                    let _ = connection.flush().await;
                }
            });
        }
    });
    let pem_of = |text: &str| CertificateDer::from_pem_slice(text.as_bytes()).expect("pem");
    assert_eq!(
        served_certificate(&ca, port).await,
        pem_of(&first.certificate_pem)
    );

    // A connection opened before the rotation.
    let open = {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pem_of(ca.pem())).expect("root");
        let config = rustls::ClientConfig::builder_with_provider(rill_tls::provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let tcp = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        rill_tls::TlsConnector::from(Arc::new(config))
            .connect("localhost".try_into().expect("name"), tcp)
            .await
            .expect("handshake")
    };
    let mut open = open;

    let second = ca.issue(&["localhost"]);
    second.write(dir.path(), "server");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while served_certificate(&ca, port).await != pem_of(&second.certificate_pem) {
        assert!(tokio::time::Instant::now() < deadline, "not reloaded");
        tokio::time::sleep(FAST).await;
    }
    open.write_all(b"still here").await.expect("write");
    open.flush().await.expect("flush");
    let mut echoed = [0u8; 10];
    open.read_exact(&mut echoed).await.expect("read");
    assert_eq!(&echoed, b"still here");

    // A broken key: the second certificate stays.
    replace(&dir.path().join("server.key"), "garbage");
    tokio::time::sleep(FAST * 6).await;
    assert_eq!(
        served_certificate(&ca, port).await,
        pem_of(&second.certificate_pem)
    );
    assert_eq!(
        identity.current().cert[0],
        pem_of(&second.certificate_pem),
        "the last good certificate stays in use"
    );
}

/// Mutual TLS: members of one CA talk; a peer with a certificate of another CA is refused
/// by the server, and a server of another CA is refused by the client.
#[tokio::test]
async fn members_of_another_ca_are_refused_both_ways() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = TestCa::new("cluster CA");
    let theirs = TestCa::new("another CA");
    // `issuer` signs the certificate; `trusted` is the CA the node trusts.
    let load = |issuer: &TestCa, trusted: &TestCa, stem: &str| {
        let (certificate, key) = issuer.issue(&["broker.example"]).write(dir.path(), stem);
        let ca_path = trusted.write(dir.path(), &format!("{stem}-ca.crt"));
        ClusterTls::load(
            IdentityFiles::new("cluster.tls", certificate, key),
            PemFile::new("cluster.tls.ca", ca_path),
            FAST,
        )
        .expect("load")
    };
    let server = load(&ours, &ours, "server");
    let member = load(&ours, &ours, "member");
    // Knows the cluster's CA certificate (it is no secret), has no certificate from it.
    let stranger = load(&theirs, &ours, "stranger");
    let stranger_server = load(&theirs, &theirs, "stranger-server");

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let acceptor = server.acceptor().clone();
    let accepted = tokio::spawn(async move {
        let (mut results, mut open) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let (tcp, _) = listener.accept().await.expect("accept");
            match acceptor.accept(tcp).await {
                Ok(stream) => {
                    open.push(stream);
                    results.push(Ok(()));
                }
                Err(e) => results.push(Err(e.to_string())),
            }
        }
        results
    });
    let connect = |tls: &ClusterTls| {
        let connector = tls.connector().clone();
        async move {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            let mut stream = connector
                .connect(rill_tls::member_server_name(addr), tcp)
                .await?;
            // TLS 1.3 reports a refused client certificate on the first read.
            stream.write_all(b"x").await?;
            stream.flush().await?;
            let mut byte = [0u8; 1];
            match tokio::time::timeout(Duration::from_millis(500), stream.read(&mut byte)).await {
                Ok(Ok(0)) => Err(std::io::Error::other("closed")),
                Ok(Err(e)) => Err(e),
                _ => Ok(()),
            }
        }
    };
    connect(&member).await.expect("a member connects");
    let refused = connect(&stranger).await.expect_err("a stranger is refused");
    assert!(refused.to_string().contains("UnknownCA"), "{refused}");
    // The stranger's own server refuses our member too.
    let results = accepted;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let stranger_addr = listener.local_addr().expect("addr");
    let stranger_acceptor = stranger_server.acceptor().clone();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let _ = stranger_acceptor.accept(tcp).await;
    });
    let tcp = TcpStream::connect(stranger_addr).await.expect("connect");
    let error = member
        .connector()
        .connect(rill_tls::member_server_name(stranger_addr), tcp)
        .await
        .expect_err("the member refuses a server of another CA");
    assert!(error.to_string().contains("UnknownIssuer"), "{error}");
    // Third connection so the server task ends.
    let _ = TcpStream::connect(addr).await;
    let results = results.await.expect("server task");
    assert!(results[0].is_ok(), "{results:?}");
    assert!(
        results[1]
            .as_ref()
            .is_err_and(|e| e.contains("UnknownIssuer")),
        "{results:?}"
    );
}

/// Handlers see the peer's address the same way behind a plain and a TLS listener
/// (`ConnectInfo<PeerAddr>`): the REST and monitoring servers count failed logins by it.
#[tokio::test]
async fn handlers_see_the_peer_address_over_tls_and_plain_tcp() {
    use axum::extract::ConnectInfo;
    use rill_tls::PeerAddr;

    let router = || {
        axum::Router::new().route(
            "/",
            axum::routing::get(|ConnectInfo(PeerAddr(peer)): ConnectInfo<PeerAddr>| async move {
                peer.to_string()
            }),
        )
    };
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

    // Plain TCP.
    let plain = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let plain_port = plain.local_addr().expect("addr").port();
    let service = router().into_make_service_with_connect_info::<PeerAddr>();
    tokio::spawn(async move { axum::serve(plain, service).await });
    let mut tcp = TcpStream::connect(("127.0.0.1", plain_port))
        .await
        .expect("connect");
    let me = tcp.local_addr().expect("local addr");
    tcp.write_all(request).await.expect("write");
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.expect("read");
    assert!(answer.ends_with(&me.to_string()), "{answer}");

    // TLS.
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new("test CA");
    ca.issue(&["localhost"]).write(dir.path(), "server");
    let identity = ReloadingIdentity::load(files(dir.path(), "server"), FAST).expect("load");
    let acceptor = rill_tls::server_acceptor(&identity, rill_tls::ALPN_HTTP).expect("acceptor");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let tls_listener = rill_tls::TlsListener::new(listener, acceptor, "test").expect("listener");
    let service = router().into_make_service_with_connect_info::<PeerAddr>();
    tokio::spawn(async move { axum::serve(tls_listener, service).await });
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem().as_bytes()).expect("CA pem"))
        .expect("root");
    let mut config = rustls::ClientConfig::builder_with_provider(rill_tls::provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let me = tcp.local_addr().expect("local addr");
    let mut tls = rill_tls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().expect("name"), tcp)
        .await
        .expect("handshake");
    tls.write_all(request).await.expect("write");
    let mut answer = Vec::new();
    // The server may close without a TLS close_notify; what was read counts.
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.ends_with(&me.to_string()), "{answer}");
}
