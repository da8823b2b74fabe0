//! The version handshake over real loopback sockets: compatible peers learn each
//! other's versions, an incompatible one is refused on both sides with both versions
//! named, and a peer of a build before the handshake (either side) still talks.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use rill_protocol::version::{Announcement, EngineVersions};
use rill_transport::{
    Handler, NodeId, PartitionId, ServiceId, Transport, TransportConfig, TransportError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LONG: Duration = Duration::from_secs(10);

fn config(node: u32) -> TransportConfig {
    let mut config = TransportConfig::new(NodeId(node), "127.0.0.1:0".parse().expect("literal"));
    config.connect_timeout = Duration::from_millis(500);
    config.reconnect_backoff_min = Duration::from_millis(5);
    config.reconnect_backoff_max = Duration::from_millis(50);
    config.shutdown_grace = Duration::from_millis(300);
    config
}

/// Answers `"<from>/<payload>"`.
fn echo() -> Arc<dyn Handler> {
    Arc::new(
        |from: NodeId,
         _service: ServiceId,
         _partition: PartitionId,
         payload: Bytes|
         -> BoxFuture<'static, Result<Bytes, String>> {
            async move {
                Ok(Bytes::from(format!(
                    "{from}/{}",
                    String::from_utf8_lossy(&payload)
                )))
            }
            .boxed()
        },
    )
}

async fn start(config: TransportConfig) -> Transport {
    Transport::start(config, echo())
        .await
        .expect("transport starts")
}

async fn ask(client: &Transport, node: u32, text: &'static str) -> Result<Bytes, TransportError> {
    client
        .request(
            NodeId(node),
            ServiceId::COMMAND,
            PartitionId(1),
            Bytes::from_static(text.as_bytes()),
            LONG,
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compatible_peers_learn_each_others_versions() {
    let mut older = config(1);
    older.announcement.engine = Some(EngineVersions { min: 1, max: 1 });
    let server = start(older).await;
    let client = start(config(0)).await;
    client.set_peer(NodeId(1), server.local_addr());
    assert_eq!(ask(&client, 1, "hi").await.expect("served"), "0/hi");

    let learned = client
        .peer_version(NodeId(1))
        .expect("the server announced");
    assert_eq!(learned.engine, Some(EngineVersions { min: 1, max: 1 }));
    assert_eq!(&learned, server.announcement());
    let learned = server
        .peer_version(NodeId(0))
        .expect("the client announced");
    assert_eq!(&learned, client.announcement());
    assert_eq!(
        client.announce(NodeId(1), LONG).await.expect("asked again"),
        *server.announcement()
    );
    assert_eq!(client.stats().incompatible_peers, 0);
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incompatible_peer_is_refused_on_both_sides_naming_both_versions() {
    let mut future = config(1);
    future.announcement.rill = "7.0.0".to_owned();
    let server = start(future).await;
    let client = start(config(0)).await;
    client.set_peer(NodeId(1), server.local_addr());

    let error = ask(&client, 1, "hi").await.expect_err("refused");
    let message = error.to_string();
    assert!(
        matches!(error, TransportError::Unreachable { .. }),
        "{message}"
    );
    assert!(message.contains("incompatible versions"), "{message}");
    assert!(message.contains("node 1 runs Rill 7.0.0"), "{message}");
    let ours = format!("node 0 runs Rill {}", rill_protocol::BROKER_VERSION);
    assert!(message.contains(&ours), "{message}");
    assert!(message.contains("major"), "{message}");
    assert!(
        server.stats().incompatible_peers >= 1,
        "{:?}",
        server.stats()
    );
    assert!(
        client.stats().incompatible_peers >= 1,
        "{:?}",
        client.stats()
    );
    assert_eq!(server.peer_version(NodeId(0)), None);
    assert_eq!(client.peer_version(NodeId(1)), None);

    // Asking explicitly says the same.
    let error = client.announce(NodeId(1), LONG).await.expect_err("refused");
    assert!(error.to_string().contains("Rill 7.0.0"), "{error}");
    client.shutdown().await;
    server.shutdown().await;
}

/// Encodes a frame by hand (the layout of `frame.rs`), as a build before the handshake
/// writes it.
fn raw_frame(kind: u8, request_id: u64, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(b"RL");
    frame.push(1);
    frame.push(kind);
    frame.extend_from_slice(&16u16.to_be_bytes());
    frame.extend_from_slice(&1u16.to_be_bytes());
    frame.extend_from_slice(&request_id.to_be_bytes());
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&frame);
    crc.update(payload);
    frame.extend_from_slice(&crc.finalize().to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// Reads one frame: `(kind, service, request id, payload)`.
async fn read_frame(stream: &mut TcpStream) -> (u8, u16, u64, Vec<u8>) {
    let mut header = [0u8; 24];
    stream.read_exact(&mut header).await.expect("a header");
    let service = u16::from_be_bytes([header[4], header[5]]);
    let id = u64::from_be_bytes(header[8..16].try_into().expect("8 bytes"));
    let len = u32::from_be_bytes(header[16..20].try_into().expect("4 bytes")) as usize;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await.expect("a payload");
    (header[3], service, id, payload)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialer_before_the_handshake_is_served_as_engine_version_1() {
    let server = start(config(1)).await;
    let mut stream = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let mut hello = 5u32.to_be_bytes().to_vec();
    hello.extend_from_slice(&1u32.to_be_bytes());
    hello.extend_from_slice(&7u64.to_be_bytes());
    stream
        .write_all(&raw_frame(1, 0, &hello))
        .await
        .expect("hello");
    let (kind, ..) = read_frame(&mut stream).await;
    assert_eq!(kind, 2, "hello-ack");
    // Straight to a request, as builds before the handshake do.
    stream
        .write_all(&raw_frame(4, 9, b"ping"))
        .await
        .expect("request");
    let (kind, _, id, payload) = read_frame(&mut stream).await;
    assert_eq!((kind, id), (5, 9));
    assert_eq!(payload, b"5/ping");
    let learned = server.peer_version(NodeId(5)).expect("recorded");
    assert_eq!(learned, Announcement::legacy());
    assert_eq!(learned.engine, Some(EngineVersions { min: 1, max: 1 }));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_before_the_handshake_is_talked_to_as_engine_version_1() {
    // What a build before the handshake does: ack the hello, answer an unknown service
    // with a failure, answer the rest.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let old = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let (kind, ..) = read_frame(&mut stream).await;
        assert_eq!(kind, 1, "hello");
        let mut ack = 1u32.to_be_bytes().to_vec();
        ack.extend_from_slice(&99u64.to_be_bytes());
        stream.write_all(&raw_frame(2, 0, &ack)).await.expect("ack");
        loop {
            let (kind, service, id, payload) = read_frame(&mut stream).await;
            if kind != 4 {
                continue; // heartbeats
            }
            let reply = if service == ServiceId::VERSION.get() {
                raw_frame(
                    6,
                    id,
                    format!("unknown service service-{service}").as_bytes(),
                )
            } else {
                raw_frame(5, id, &[b"old:".as_slice(), &payload].concat())
            };
            stream.write_all(&reply).await.expect("reply");
            if service != ServiceId::VERSION.get() {
                return;
            }
        }
    });
    let client = start(config(0)).await;
    client.set_peer(NodeId(1), addr);
    assert_eq!(ask(&client, 1, "hi").await.expect("served"), "old:hi");
    let learned = client.peer_version(NodeId(1)).expect("recorded");
    assert!(learned.legacy, "{learned:?}");
    assert_eq!(learned.engine, Some(EngineVersions { min: 1, max: 1 }));
    old.await.expect("the old listener ran");
    client.shutdown().await;
}
