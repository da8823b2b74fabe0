//! The transport over real loopback sockets.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use rill_transport::{
    Handler, NodeId, PartitionId, ServiceId, Transport, TransportConfig, TransportError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

const LONG: Duration = Duration::from_secs(10);

fn config(node: u32) -> TransportConfig {
    let mut config = TransportConfig::new(NodeId(node), "127.0.0.1:0".parse().expect("literal"));
    config.connect_timeout = Duration::from_millis(500);
    config.reconnect_backoff_min = Duration::from_millis(5);
    config.reconnect_backoff_max = Duration::from_millis(50);
    config.shutdown_grace = Duration::from_millis(300);
    config
}

/// Answers `"<from>/<service>/<partition>/<payload>"`; partition 999 is an error.
fn echo() -> Arc<dyn Handler> {
    Arc::new(
        |from: NodeId,
         service: ServiceId,
         partition: PartitionId,
         payload: Bytes|
         -> BoxFuture<'static, Result<Bytes, String>> {
            async move {
                if partition == PartitionId(999) {
                    return Err(format!("partition {partition} is not on this node"));
                }
                let text = String::from_utf8_lossy(&payload);
                Ok(Bytes::from(format!(
                    "{from}/{}/{partition}/{text}",
                    service.get()
                )))
            }
            .boxed()
        },
    )
}

/// A handler that counts how many of its calls run at once and blocks each until the
/// gate hands out a permit.
struct Gated {
    gate: Arc<Semaphore>,
    running: AtomicUsize,
    max_running: AtomicUsize,
}

impl Gated {
    fn new() -> Arc<Gated> {
        Arc::new(Gated {
            gate: Arc::new(Semaphore::new(0)),
            running: AtomicUsize::new(0),
            max_running: AtomicUsize::new(0),
        })
    }
}

struct GatedHandler(Arc<Gated>);

impl Handler for GatedHandler {
    fn handle(
        &self,
        _from: NodeId,
        _service: ServiceId,
        _partition: PartitionId,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        let state = self.0.clone();
        async move {
            let now = state.running.fetch_add(1, Ordering::SeqCst) + 1;
            state.max_running.fetch_max(now, Ordering::SeqCst);
            let permit = state.gate.acquire().await;
            state.running.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
            Ok(payload)
        }
        .boxed()
    }
}

async fn start(config: TransportConfig, handler: Arc<dyn Handler>) -> Transport {
    Transport::start(config, handler)
        .await
        .expect("transport starts")
}

async fn pair() -> (Transport, Transport) {
    let server = start(config(1), echo()).await;
    let client = start(config(0), echo()).await;
    client.set_peer(NodeId(1), server.local_addr());
    (client, server)
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + LONG;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An address nothing listens on.
async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("addr")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_concurrent_requests_share_one_connection() {
    let (client, server) = pair().await;
    let services = [
        ServiceId::RAFT_APPEND,
        ServiceId::RAFT_VOTE,
        ServiceId::COMMAND,
    ];
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..5000u32 {
        let client = client.clone();
        let service = services[i as usize % services.len()];
        let partition = PartitionId((i % 8) as u16 + 1);
        requests.spawn(async move {
            let payload = Bytes::from(format!("m{i}"));
            let response = client
                .request(NodeId(1), service, partition, payload, LONG)
                .await;
            (i, service, partition, response)
        });
    }
    let mut answered = 0;
    while let Some(joined) = requests.join_next().await {
        let (i, service, partition, response) = joined.expect("request task");
        let response = response.unwrap_or_else(|e| panic!("request {i} failed: {e}"));
        let expected = format!("0/{}/{partition}/m{i}", service.get());
        assert_eq!(response, Bytes::from(expected));
        answered += 1;
    }
    assert_eq!(answered, 5000);

    let client_stats = client.stats();
    let server_stats = server.stats();
    assert_eq!(
        client_stats.outbound_connections_opened, 1,
        "{client_stats:?}"
    );
    assert_eq!(
        server_stats.inbound_connections_opened, 1,
        "{server_stats:?}"
    );
    assert_eq!(
        server_stats.outbound_connections_opened, 0,
        "{server_stats:?}"
    );
    assert_eq!(
        client_stats.frames_sent, 5002,
        "5000 requests, the hello and the version request"
    );
    assert_eq!(client_stats.requests_in_flight, 0);
    assert!(
        client_stats.write_batches < client_stats.frames_sent / 2,
        "queued requests are coalesced into few writes: {client_stats:?}"
    );
    assert!(
        server_stats.write_batches < server_stats.frames_sent,
        "{server_stats:?}"
    );
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_directions_work_between_two_nodes() {
    let (a, b) = pair().await;
    b.set_peer(NodeId(0), a.local_addr());
    let from_a = a.request(
        NodeId(1),
        ServiceId::RAFT_VOTE,
        PartitionId(1),
        "x".into(),
        LONG,
    );
    let from_b = b.request(
        NodeId(0),
        ServiceId::RAFT_VOTE,
        PartitionId(2),
        "y".into(),
        LONG,
    );
    let (from_a, from_b) = tokio::join!(from_a, from_b);
    assert_eq!(from_a.expect("a to b"), Bytes::from("0/2/1/x"));
    assert_eq!(from_b.expect("b to a"), Bytes::from("1/2/2/y"));
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_to_a_down_peer_fails_in_time_naming_peer_and_address() {
    let client = start(config(0), echo()).await;
    let down = closed_port().await;
    client.set_peer(NodeId(3), down);
    let timeout = Duration::from_millis(500);
    for _ in 0..3 {
        let started = Instant::now();
        let error = client
            .request(
                NodeId(3),
                ServiceId::COMMAND,
                PartitionId(1),
                "x".into(),
                timeout,
            )
            .await
            .expect_err("nobody listens");
        assert!(
            started.elapsed() < timeout + Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        match &error {
            TransportError::Unreachable { node, addr, .. } => {
                assert_eq!((*node, *addr), (NodeId(3), down));
            }
            other => panic!("expected Unreachable, got {other:?}"),
        }
        let message = error.to_string();
        assert!(
            message.contains("node 3") && message.contains(&down.to_string()),
            "{message}"
        );
    }
    assert!(client.stats().connect_failures >= 1);

    let unknown = client
        .request(
            NodeId(7),
            ServiceId::COMMAND,
            PartitionId(1),
            "x".into(),
            timeout,
        )
        .await
        .expect_err("no address for node 7");
    assert!(
        matches!(unknown, TransportError::UnknownPeer { node: NodeId(7) }),
        "{unknown:?}"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_answers_the_handshake_is_reported_unreachable() {
    // Accepts TCP connections and then says nothing, like a hung process.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let silent_addr = silent.local_addr().expect("addr");
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let client = start(config(0), echo()).await;
    client.set_peer(NodeId(1), silent_addr);
    let timeout = Duration::from_millis(200);
    let started = Instant::now();
    let error = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            "x".into(),
            timeout,
        )
        .await
        .expect_err("silent peer");
    assert!(started.elapsed() < timeout + Duration::from_millis(200));
    assert!(
        matches!(&error, TransportError::Unreachable { node: NodeId(1), addr, .. } if *addr == silent_addr),
        "{error:?}"
    );
    client.shutdown().await;
    holder.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_the_peer_restarts() {
    let (client, server) = pair().await;
    let addr = server.local_addr();
    let ask = |client: Transport| async move {
        client
            .request(
                NodeId(1),
                ServiceId::RAFT_APPEND,
                PartitionId(1),
                "hi".into(),
                LONG,
            )
            .await
    };
    assert_eq!(
        ask(client.clone()).await.expect("first"),
        Bytes::from("0/1/1/hi")
    );

    server.shutdown().await;
    let short = Duration::from_millis(300);
    let error = client
        .request(
            NodeId(1),
            ServiceId::RAFT_APPEND,
            PartitionId(1),
            "x".into(),
            short,
        )
        .await
        .expect_err("server is down");
    assert!(
        matches!(
            error,
            TransportError::Unreachable { .. } | TransportError::ConnectionLost { .. }
        ),
        "{error:?}"
    );

    let mut restarted_config = config(1);
    restarted_config.listen = addr;
    let restarted = start(restarted_config, echo()).await;
    // The client retries with backoff; a request succeeds within a few attempts.
    let deadline = Instant::now() + LONG;
    loop {
        match client
            .request(
                NodeId(1),
                ServiceId::RAFT_APPEND,
                PartitionId(1),
                "again".into(),
                short,
            )
            .await
        {
            Ok(response) => {
                assert_eq!(response, Bytes::from("0/1/1/again"));
                break;
            }
            Err(error) => assert!(Instant::now() < deadline, "never reconnected: {error}"),
        }
    }
    assert_eq!(client.stats().outbound_connections_opened, 2);
    assert_eq!(client.stats().outbound_connections_open, 1);
    client.shutdown().await;
    restarted.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_peer_address_moves_the_connection() {
    let (client, old) = pair().await;
    let ask = || {
        client.request(
            NodeId(1),
            ServiceId::TOPOLOGY,
            PartitionId(1),
            "q".into(),
            LONG,
        )
    };
    ask().await.expect("old address");
    let new = start(config(1), echo()).await;
    client.set_peer(NodeId(1), new.local_addr());
    assert_eq!(client.peer_addr(NodeId(1)), Some(new.local_addr()));
    ask().await.expect("new address");
    wait_until("the new node has the connection", || {
        new.stats().inbound_connections_opened == 1
    })
    .await;
    wait_until("the old connection is closed", || {
        old.stats().inbound_connections_open == 0
    })
    .await;
    client.shutdown().await;
    old.shutdown().await;
    new.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handshake_detects_a_stale_address() {
    let (client, server) = pair().await;
    // Node 1 listens where the client believes node 2 is.
    client.set_peer(NodeId(2), server.local_addr());
    let error = client
        .request(
            NodeId(2),
            ServiceId::COMMAND,
            PartitionId(1),
            "x".into(),
            LONG,
        )
        .await
        .expect_err("wrong node");
    let message = error.to_string();
    assert!(
        matches!(
            error,
            TransportError::Unreachable {
                node: NodeId(2),
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("this is node 1, not node 2"), "{message}");
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_errors_and_panics_travel_back_as_remote_errors() {
    let panicky: Arc<dyn Handler> = Arc::new(
        |_: NodeId,
         _: ServiceId,
         partition: PartitionId,
         _: Bytes|
         -> BoxFuture<'static, Result<Bytes, String>> {
            if partition == PartitionId(13) {
                panic!("handler bug");
            }
            async move { Err(format!("partition {partition} is not on this node")) }.boxed()
        },
    );
    let server = start(config(1), panicky).await;
    let client = start(config(0), echo()).await;
    client.set_peer(NodeId(1), server.local_addr());
    let error = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(9),
            "x".into(),
            LONG,
        )
        .await
        .expect_err("handler error");
    match error {
        TransportError::Remote(message) => assert_eq!(message, "partition 9 is not on this node"),
        other => panic!("expected Remote, got {other:?}"),
    }
    let panicked = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(13),
            "x".into(),
            LONG,
        )
        .await
        .expect_err("handler panic");
    assert!(
        matches!(&panicked, TransportError::Remote(m) if m.contains("panicked")),
        "{panicked:?}"
    );
    // The connection survives both.
    let again = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(2),
            "x".into(),
            LONG,
        )
        .await
        .expect_err("handler error again");
    assert!(matches!(again, TransportError::Remote(_)));
    assert_eq!(client.stats().outbound_connections_opened, 1);
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_payloads_are_refused_on_both_sides() {
    let mut small = config(1);
    small.max_frame_size = 1024;
    let big_answer: Arc<dyn Handler> = Arc::new(
        |_: NodeId,
         _: ServiceId,
         _: PartitionId,
         _: Bytes|
         -> BoxFuture<'static, Result<Bytes, String>> {
            async { Ok(Bytes::from(vec![7u8; 4096])) }.boxed()
        },
    );
    let server = start(small.clone(), big_answer).await;
    small.node_id = NodeId(0);
    let client = start(small, echo()).await;
    client.set_peer(NodeId(1), server.local_addr());

    let error = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            vec![0u8; 2000].into(),
            LONG,
        )
        .await
        .expect_err("too big to send");
    assert!(
        matches!(
            error,
            TransportError::FrameTooLarge {
                size: 2024,
                max: 1024
            }
        ),
        "{error:?}"
    );
    let error = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            "small".into(),
            LONG,
        )
        .await
        .expect_err("response too big");
    assert!(
        matches!(&error, TransportError::Remote(m) if m.contains("exceeds the maximum frame size")),
        "{error:?}"
    );
    client.shutdown().await;
    server.shutdown().await;
}

/// Encodes a frame by hand, following the layout documented in `frame.rs`, so these tests
/// check the wire format independently of the crate's encoder.
fn raw_frame(version: u8, kind: u8, request_id: u64, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(b"RL");
    frame.push(version);
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

fn raw_hello(from: u32, to: u32) -> Vec<u8> {
    let mut payload = from.to_be_bytes().to_vec();
    payload.extend_from_slice(&to.to_be_bytes());
    payload.extend_from_slice(&0x1234_5678_u64.to_be_bytes()); // instance id
    raw_frame(1, 1, 0, &payload)
}

/// Bytes of the hello-ack a server answers a raw hello with.
const ACK_LEN: usize = 24 + 12;

/// Reads until the server closes the connection; returns what it sent.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(LONG, stream.read_to_end(&mut received)).await;
    match read {
        Ok(_) => received, // EOF or reset: either way the server closed it.
        Err(_) => panic!("the server kept the connection open"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_oversized_and_truncated_frames_close_the_connection_only() {
    let (client, server) = pair().await;
    let addr = server.local_addr();
    let request = raw_frame(1, 4, 42, b"ping");

    let mut oversized = raw_frame(1, 4, 43, b"");
    oversized[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut corrupted = raw_frame(1, 4, 44, b"payload");
    *corrupted.last_mut().expect("payload") ^= 1;
    let truncated = request[..request.len() - 2].to_vec();
    let mut unknown_kind = raw_frame(1, 4, 45, b"");
    unknown_kind[3] = 200;

    let attacks: Vec<(&str, Vec<u8>, Vec<u8>)> = vec![
        (
            "http garbage",
            Vec::new(),
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        ("garbage after hello", raw_hello(5, 1), vec![0xff; 64]),
        ("4 GiB length", raw_hello(5, 1), oversized),
        ("bad checksum", raw_hello(5, 1), corrupted),
        ("unknown kind", raw_hello(5, 1), unknown_kind),
        ("request before hello", Vec::new(), request.clone()),
        (
            "response on inbound side",
            raw_hello(5, 1),
            raw_frame(1, 5, 1, b""),
        ),
    ];
    for (name, hello, attack) in attacks {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(&hello).await.expect("hello");
        stream.write_all(&attack).await.expect("attack");
        let received = read_until_closed(&mut stream).await;
        if !hello.is_empty() {
            // Only the hello-ack came back, no response to anything after it.
            assert_eq!(received.len(), ACK_LEN, "{name}: {received:?}");
            assert_eq!(received[3], 2, "{name}: hello-ack");
        }
    }

    // A truncated frame: the peer half-closes after sending part of it.
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(&raw_hello(5, 1)).await.expect("hello");
    stream.write_all(&truncated).await.expect("partial frame");
    stream.shutdown().await.expect("half close");
    assert_eq!(read_until_closed(&mut stream).await.len(), ACK_LEN);

    // A well-formed raw exchange works, proving the checks above are not over-eager.
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(&raw_hello(5, 1)).await.expect("hello");
    stream.write_all(&request).await.expect("request");
    let mut reply = vec![0u8; ACK_LEN + 24 + "5/16/1/ping".len()];
    stream
        .read_exact(&mut reply)
        .await
        .expect("ack and response");
    assert_eq!(&reply[24..28], &1u32.to_be_bytes(), "the ack names node 1");
    assert_eq!(reply[3 + ACK_LEN], 5, "response kind");
    assert_eq!(&reply[ACK_LEN + 8..ACK_LEN + 16], &42u64.to_be_bytes());
    assert_eq!(&reply[ACK_LEN + 24..], b"5/16/1/ping");

    // The server is unharmed and still serves real clients.
    let response = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(3),
            "still".into(),
            LONG,
        )
        .await
        .expect("server still serves");
    assert_eq!(response, Bytes::from("0/16/3/still"));
    assert!(server.stats().invalid_frames >= 7, "{:?}", server.stats());
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_on_another_protocol_version_is_told_why() {
    let server = start(config(1), echo()).await;
    let mut stream = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    let mut hello = raw_hello(5, 1);
    hello[2] = 2;
    stream.write_all(&hello).await.expect("hello");
    let reply = read_until_closed(&mut stream).await;
    assert!(reply.len() > 24, "{reply:?}");
    assert_eq!(reply[3], 3, "hello-reject");
    let reason = String::from_utf8_lossy(&reply[24..]);
    assert_eq!(reason, "node 1 speaks transport protocol version 1, not 2");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_pressure_bounds_in_flight_requests_and_running_handlers() {
    let gated = Gated::new();
    let mut server_config = config(1);
    server_config.max_concurrent_handlers_per_connection = 4;
    let server = start(server_config, Arc::new(GatedHandler(gated.clone()))).await;
    let mut client_config = config(0);
    client_config.max_in_flight_per_peer = 8;
    let client = start(client_config, echo()).await;
    client.set_peer(NodeId(1), server.local_addr());

    let mut held = tokio::task::JoinSet::new();
    for i in 0..8u32 {
        let client = client.clone();
        held.spawn(async move {
            let payload = Bytes::from(i.to_string());
            client
                .request(NodeId(1), ServiceId::COMMAND, PartitionId(1), payload, LONG)
                .await
        });
    }
    wait_until("four handlers run", || {
        gated.running.load(Ordering::SeqCst) == 4
    })
    .await;
    wait_until("eight requests are in flight", || {
        client.stats().requests_in_flight == 8
    })
    .await;

    // No slot frees up while the handlers are blocked: more requests are refused.
    let short = Duration::from_millis(150);
    for _ in 0..3 {
        let started = Instant::now();
        let error = client
            .request(
                NodeId(1),
                ServiceId::COMMAND,
                PartitionId(1),
                "more".into(),
                short,
            )
            .await
            .expect_err("no slot");
        assert!(
            matches!(
                error,
                TransportError::Backpressure {
                    node: NodeId(1),
                    limit: 8,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(started.elapsed() >= short, "waited for a slot first");
    }
    assert_eq!(gated.max_running.load(Ordering::SeqCst), 4);
    assert_eq!(server.stats().handlers_running, 4);

    gated.gate.add_permits(1000);
    let mut answered = 0;
    while let Some(joined) = held.join_next().await {
        joined.expect("task").expect("held request completes");
        answered += 1;
    }
    assert_eq!(answered, 8);
    assert_eq!(
        gated.max_running.load(Ordering::SeqCst),
        4,
        "never more than the bound"
    );
    wait_until("no request left in flight", || {
        client.stats().requests_in_flight == 0
    })
    .await;
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_fails_pending_requests_promptly() {
    let gated = Gated::new();
    let server = start(config(1), Arc::new(GatedHandler(gated.clone()))).await;
    let client = start(config(0), echo()).await;
    client.set_peer(NodeId(1), server.local_addr());
    let mut pending = tokio::task::JoinSet::new();
    for _ in 0..3 {
        let client = client.clone();
        pending.spawn(async move {
            client
                .request(
                    NodeId(1),
                    ServiceId::COMMAND,
                    PartitionId(1),
                    "x".into(),
                    LONG,
                )
                .await
        });
    }
    wait_until("three handlers run", || {
        gated.running.load(Ordering::SeqCst) == 3
    })
    .await;
    let started = Instant::now();
    client.shutdown().await;
    while let Some(joined) = pending.join_next().await {
        let error = joined.expect("task").expect_err("shut down");
        assert!(matches!(error, TransportError::ShuttingDown), "{error:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let after = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            "x".into(),
            LONG,
        )
        .await
        .expect_err("after shutdown");
    assert!(matches!(after, TransportError::ShuttingDown), "{after:?}");

    // The server's handlers are still blocked; its shutdown gives up after the grace.
    let started = Instant::now();
    server.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    gated.gate.add_permits(1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_requests_fail_when_the_server_goes_away() {
    let gated = Gated::new();
    let server = start(config(1), Arc::new(GatedHandler(gated.clone()))).await;
    let client = start(config(0), echo()).await;
    client.set_peer(NodeId(1), server.local_addr());
    let request = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .request(
                    NodeId(1),
                    ServiceId::COMMAND,
                    PartitionId(1),
                    "x".into(),
                    LONG,
                )
                .await
        })
    };
    wait_until("the handler runs", || {
        gated.running.load(Ordering::SeqCst) == 1
    })
    .await;
    let started = Instant::now();
    server.shutdown().await; // the handler never finishes; the grace is 300 ms
    let error = request.await.expect("task").expect_err("connection lost");
    assert!(
        matches!(&error, TransportError::ConnectionLost { node: NodeId(1), addr, .. } if *addr == server.local_addr()),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    client.shutdown().await;
    gated.gate.add_permits(1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_running_handlers_answer_within_the_grace() {
    let slow: Arc<dyn Handler> = Arc::new(
        |_: NodeId,
         _: ServiceId,
         _: PartitionId,
         payload: Bytes|
         -> BoxFuture<'static, Result<Bytes, String>> {
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(payload)
            }
            .boxed()
        },
    );
    let server = start(config(1), slow).await;
    let client = start(config(0), echo()).await;
    client.set_peer(NodeId(1), server.local_addr());
    let request = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .request(
                    NodeId(1),
                    ServiceId::COMMAND,
                    PartitionId(1),
                    "late".into(),
                    LONG,
                )
                .await
        })
    };
    wait_until("the server has the request", || {
        server.stats().handlers_running == 1
    })
    .await;
    server.shutdown().await;
    assert_eq!(
        request.await.expect("task").expect("answered during grace"),
        Bytes::from("late")
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_learns_the_node_id_behind_an_address() {
    let (client, server) = pair().await;
    assert_eq!(
        client.probe(server.local_addr()).await.expect("probe"),
        NodeId(1)
    );
    let down = closed_port().await;
    let error = client.probe(down).await.expect_err("nobody there");
    assert!(
        matches!(&error, TransportError::Probe { addr, .. } if *addr == down),
        "{error:?}"
    );
    assert!(error.to_string().contains(&down.to_string()), "{error}");
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_racing_a_restart_all_resolve_within_their_timeout() {
    let (client, server) = pair().await;
    let addr = server.local_addr();
    let timeout = Duration::from_millis(300);
    let run_until = Instant::now() + Duration::from_millis(1500);
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..100u16 {
        let client = client.clone();
        workers.spawn(async move {
            let (mut ok, mut failed) = (0u32, 0u32);
            while Instant::now() < run_until {
                let started = Instant::now();
                let partition = PartitionId(worker % 16 + 1);
                let result = client
                    .request(
                        NodeId(1),
                        ServiceId::RAFT_APPEND,
                        partition,
                        "x".into(),
                        timeout,
                    )
                    .await;
                let took = started.elapsed();
                assert!(
                    took < timeout + Duration::from_millis(250),
                    "took {took:?}: {result:?}"
                );
                match result {
                    Ok(_) => ok += 1,
                    Err(
                        TransportError::Unreachable { .. }
                        | TransportError::ConnectionLost { .. }
                        | TransportError::Timeout { .. }
                        | TransportError::Backpressure { .. },
                    ) => {
                        failed += 1;
                        // Do not spin while the peer is down.
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err(other) => panic!("unexpected error: {other:?}"),
                }
            }
            (ok, failed)
        });
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.shutdown().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut restarted_config = config(1);
    restarted_config.listen = addr;
    let restarted = start(restarted_config, echo()).await;
    let restarted_at = Instant::now();

    let (mut ok, mut failed) = (0, 0);
    while let Some(joined) = workers.join_next().await {
        let (worker_ok, worker_failed) = joined.expect("worker");
        ok += worker_ok;
        failed += worker_failed;
    }
    assert!(ok > 0 && failed > 0, "ok {ok}, failed {failed}");
    assert!(
        restarted_at.elapsed() > Duration::from_millis(100),
        "workers ran past the restart"
    );
    let served_after_restart = restarted.stats().frames_received;
    assert!(
        served_after_restart > 1,
        "the restarted node served requests"
    );
    let stats = client.stats();
    assert_eq!(stats.requests_in_flight, 0, "{stats:?}");
    assert_eq!(stats.outbound_connections_open, 1, "{stats:?}");
    client.shutdown().await;
    restarted.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_connections_beyond_the_limit_are_closed() {
    let mut limited = config(1);
    limited.max_inbound_connections = 1;
    let server = start(limited, echo()).await;
    let client = start(config(0), echo()).await;
    client.set_peer(NodeId(1), server.local_addr());
    client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            "x".into(),
            LONG,
        )
        .await
        .expect("first connection is accepted");

    let mut second = TcpStream::connect(server.local_addr())
        .await
        .expect("tcp connect");
    second.write_all(&raw_hello(5, 1)).await.ok();
    assert!(
        read_until_closed(&mut second).await.is_empty(),
        "closed without a hello-ack"
    );

    // The first connection is unaffected.
    client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            "y".into(),
            LONG,
        )
        .await
        .expect("still served");
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_with_the_same_node_id_are_refused_but_a_node_may_call_itself() {
    let first = start(config(1), echo()).await;
    let second = start(config(1), echo()).await;
    // Requests from one to the other: whichever side notices, the error says why.
    first.set_peer(NodeId(1), second.local_addr());
    let error = first
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            "x".into(),
            LONG,
        )
        .await
        .expect_err("duplicate id");
    let message = error.to_string();
    assert!(
        matches!(error, TransportError::Unreachable { .. }),
        "{message}"
    );
    assert!(
        message.contains("two nodes are configured with the same id"),
        "{message}"
    );
    let probed = first
        .probe(second.local_addr())
        .await
        .expect_err("duplicate id");
    assert!(
        probed.to_string().contains("distinct cluster.node-id"),
        "{probed}"
    );

    // A node reaching itself through its own address is fine.
    second.set_peer(NodeId(1), second.local_addr());
    let own = second
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(2),
            "me".into(),
            LONG,
        )
        .await
        .expect("self request");
    assert_eq!(own, Bytes::from("1/16/2/me"));
    assert_eq!(
        second.probe(second.local_addr()).await.expect("self probe"),
        NodeId(1)
    );
    first.shutdown().await;
    second.shutdown().await;
}

fn keepalive(mut config: TransportConfig) -> TransportConfig {
    config.keepalive_interval = Duration::from_millis(50);
    config.keepalive_timeout = Duration::from_millis(400);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_goes_silent_after_the_handshake_is_dropped_by_the_keepalive() {
    // Completes the handshake as node 1 (answering the version request as a build before
    // the version handshake does), then reads and ignores everything.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let silent_addr = silent.local_addr().expect("addr");
    let hung = tokio::spawn(async move {
        let (mut stream, _) = silent.accept().await.expect("accept");
        let mut hello = vec![0u8; 24 + 16];
        stream.read_exact(&mut hello).await.expect("hello");
        let mut ack = 1u32.to_be_bytes().to_vec();
        ack.extend_from_slice(&99u64.to_be_bytes());
        stream
            .write_all(&raw_frame(1, 2, 0, &ack))
            .await
            .expect("ack");
        let mut header = [0u8; 24];
        stream
            .read_exact(&mut header)
            .await
            .expect("version request");
        let len = u32::from_be_bytes(header[16..20].try_into().expect("4 bytes"));
        let mut payload = vec![0u8; len as usize];
        stream.read_exact(&mut payload).await.expect("announcement");
        stream
            .write_all(&raw_frame(1, 6, 0, b"unknown service service-21"))
            .await
            .expect("failure");
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    });
    let client = start(keepalive(config(0)), echo()).await;
    client.set_peer(NodeId(1), silent_addr);
    let started = Instant::now();
    let error = client
        .request(
            NodeId(1),
            ServiceId::COMMAND,
            PartitionId(1),
            "x".into(),
            LONG,
        )
        .await
        .expect_err("never answered");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let message = error.to_string();
    assert!(
        matches!(error, TransportError::ConnectionLost { .. }),
        "{message}"
    );
    assert!(message.contains("peer sent nothing for"), "{message}");
    client.shutdown().await;
    hung.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_silent_is_disconnected_by_the_server() {
    let server = start(keepalive(config(1)), echo()).await;
    let mut stream = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    stream.write_all(&raw_hello(5, 1)).await.expect("hello");
    let started = Instant::now();
    let received = read_until_closed(&mut stream).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(received[3], 2, "hello-ack first");
    // Then only heartbeats (kind 7) until the server gives up.
    let heartbeats = &received[ACK_LEN..];
    assert!(
        !heartbeats.is_empty() && heartbeats.len() % 24 == 0,
        "{received:?}"
    );
    assert!(
        heartbeats.chunks(24).all(|frame| frame[3] == 7),
        "{received:?}"
    );
    wait_until("the server closed its side", || {
        server.stats().inbound_connections_open == 0
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_handlers_longer_than_the_keepalive_timeout_keep_the_connection() {
    let gated = Gated::new();
    let mut server_config = keepalive(config(1));
    server_config.max_concurrent_handlers_per_connection = 2;
    let server = start(server_config, Arc::new(GatedHandler(gated.clone()))).await;
    let client = start(keepalive(config(0)), echo()).await;
    client.set_peer(NodeId(1), server.local_addr());
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..4u32 {
        let client = client.clone();
        requests.spawn(async move {
            let payload = Bytes::from(i.to_string());
            client
                .request(NodeId(1), ServiceId::COMMAND, PartitionId(1), payload, LONG)
                .await
        });
    }
    wait_until("both handler slots are busy", || {
        gated.running.load(Ordering::SeqCst) == 2
    })
    .await;
    // Twice the keepalive timeout with the server's reader paused and no responses.
    tokio::time::sleep(Duration::from_millis(800)).await;
    gated.gate.add_permits(1000);
    while let Some(joined) = requests.join_next().await {
        joined
            .expect("task")
            .expect("answered on the same connection");
    }
    assert_eq!(client.stats().outbound_connections_opened, 1);
    assert!(
        client.stats().frames_received > 4,
        "heartbeats arrived: {:?}",
        client.stats()
    );
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identify_names_the_node_behind_an_address_without_a_transport() {
    let server = start(config(3), echo()).await;
    let found = Transport::identify(server.local_addr(), LONG, None)
        .await
        .expect("identify");
    assert_eq!(found, NodeId(3));

    // Nothing listens: refused at once.
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let closed_addr = closed.local_addr().expect("addr");
    drop(closed);
    let error = Transport::identify(closed_addr, LONG, None)
        .await
        .expect_err("nothing listens");
    assert!(matches!(error, TransportError::Probe { .. }), "{error}");

    // Something that is not Rill accepts and never answers: given up after the timeout.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let error = Transport::identify(
        silent.local_addr().expect("addr"),
        Duration::from_millis(300),
        None,
    )
    .await
    .expect_err("no handshake");
    assert!(matches!(error, TransportError::Probe { .. }), "{error}");
    server.shutdown().await;
}
