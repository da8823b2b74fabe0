//! The requesting side: one `Peer` per known node, with a task that owns the connection.
//!
//! ```text
//!            first queued request            connect + handshake ok
//!   Idle ───────────────────────────► Connecting ───────────────────► Connected
//!    ▲                                   │  failed: fail pending,        │ read/write error,
//!    │                                   ▼  back off, wait for work      │ address change:
//!    │                                  Down ──► (next request) ──►      │ fail pending
//!    └───────────────────────────────────────────────────────────────────┘
//! ```
//!
//! Requests are registered in `pending` before they are queued; whoever resolves a request
//! (the reader on a response, the task on a connection loss or connect failure, shutdown)
//! removes it from there, so each request is answered exactly once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use parking_lot::Mutex;
use rill_protocol::{NodeId, PartitionId};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::time::{Instant, timeout, timeout_at};
use tracing::{debug, info, warn};

use crate::frame::{ANY_NODE, Frame, FrameKind, Hello, HelloAck};
use crate::metrics::{Direction, GaugeGuard};
use crate::stream::{Reader, WriteHalf, reader, split_any, split_tcp};
use crate::transport::{Shared, duplicate_node_id};
use crate::writer::write_frames;
use crate::{PROTOCOL_VERSION, Result, ServiceId, TransportError};

/// While a peer stays unreachable, how often its connect failures are logged at warn.
const UNREACHABLE_LOG_INTERVAL: Duration = Duration::from_secs(30);

type Reply = oneshot::Sender<Result<Bytes>>;

/// A request registered with its peer, waiting for its response.
struct Pending {
    reply: Reply,
    /// Handed to the writer of a connection. Only such requests fail when that connection
    /// drops; the others are still queued and go out on the next one.
    sent: bool,
}

/// A request waiting in the peer's queue for the writer.
struct QueuedRequest {
    /// [`HEARTBEAT_ID`] for a heartbeat; requests are numbered from 1.
    id: u64,
    service: ServiceId,
    partition: PartitionId,
    payload: Bytes,
}

const HEARTBEAT_ID: u64 = 0;

impl QueuedRequest {
    fn heartbeat() -> QueuedRequest {
        QueuedRequest {
            id: HEARTBEAT_ID,
            service: ServiceId(0),
            partition: PartitionId(0),
            payload: Bytes::new(),
        }
    }
}

#[derive(Clone, Debug)]
enum PeerStatus {
    Idle,
    Connecting,
    Connected,
    Down { reason: String },
}

pub(crate) struct Peer {
    node: NodeId,
    addr: watch::Sender<SocketAddr>,
    /// One permit per request queued or awaiting its response.
    in_flight: Semaphore,
    queue: mpsc::Sender<QueuedRequest>,
    pending: Mutex<HashMap<u64, Pending>>,
    status: Mutex<PeerStatus>,
    next_request_id: AtomicU64,
    shared: Arc<Shared>,
}

impl Peer {
    pub fn start(node: NodeId, addr: SocketAddr, shared: Arc<Shared>) -> Arc<Peer> {
        let limit = shared.config.max_in_flight_per_peer;
        let (queue, queue_rx) = mpsc::channel(limit);
        let (addr, addr_rx) = watch::channel(addr);
        let peer = Arc::new(Peer {
            node,
            addr,
            in_flight: Semaphore::new(limit),
            queue,
            pending: Mutex::new(HashMap::new()),
            status: Mutex::new(PeerStatus::Idle),
            next_request_id: AtomicU64::new(1),
            shared: shared.clone(),
        });
        shared.spawn(run(peer.clone(), queue_rx, addr_rx));
        peer
    }

    pub fn addr(&self) -> SocketAddr {
        *self.addr.borrow()
    }

    pub fn set_addr(&self, addr: SocketAddr) {
        self.addr.send_if_modified(|current| {
            let changed = *current != addr;
            *current = addr;
            changed
        });
    }

    /// Wakes requests waiting for an in-flight slot; they fail with `ShuttingDown`.
    pub fn close(&self) {
        self.in_flight.close();
    }

    pub async fn request(
        &self,
        service: ServiceId,
        partition: PartitionId,
        payload: Bytes,
        request_timeout: Duration,
    ) -> Result<Bytes> {
        let deadline = Instant::now() + request_timeout;
        let _slot = match timeout_at(deadline, self.in_flight.acquire()).await {
            Ok(Ok(slot)) => slot,
            Ok(Err(_closed)) => return Err(TransportError::ShuttingDown),
            Err(_elapsed) => return Err(self.backpressure()),
        };
        let _in_flight = GaugeGuard::new(&self.shared.metrics.requests_in_flight);
        let id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let (reply, response) = oneshot::channel();
        self.pending
            .lock()
            .insert(id, Pending { reply, sent: false });
        let _registered = PendingGuard { peer: self, id };
        // Checked after registering: either shutdown sees this request and fails it, or
        // this sees the shutdown.
        if self.shared.cancel.is_cancelled() {
            return Err(TransportError::ShuttingDown);
        }
        let queued = QueuedRequest {
            id,
            service,
            partition,
            payload,
        };
        match timeout_at(deadline, self.queue.send(queued)).await {
            Ok(Ok(())) => {}
            Ok(Err(_closed)) => return Err(TransportError::ShuttingDown),
            Err(_elapsed) => return Err(self.backpressure()),
        }
        match timeout_at(deadline, response).await {
            Ok(Ok(result)) => result,
            Ok(Err(_dropped)) => Err(TransportError::ShuttingDown),
            Err(_elapsed) => Err(self.timeout_error(request_timeout)),
        }
    }

    fn backpressure(&self) -> TransportError {
        TransportError::Backpressure {
            node: self.node,
            addr: self.addr(),
            limit: self.shared.config.max_in_flight_per_peer,
        }
    }

    fn timeout_error(&self, request_timeout: Duration) -> TransportError {
        let (node, addr) = (self.node, self.addr());
        match self.status.lock().clone() {
            PeerStatus::Down { reason } => TransportError::Unreachable { node, addr, reason },
            PeerStatus::Connecting => TransportError::Unreachable {
                node,
                addr,
                reason: format!("still connecting after {request_timeout:?}"),
            },
            PeerStatus::Idle | PeerStatus::Connected => TransportError::Timeout {
                node,
                addr,
                timeout: request_timeout,
            },
        }
    }

    fn set_status(&self, status: PeerStatus) {
        *self.status.lock() = status;
    }

    /// The frame for a queued request, marked as sent, unless its requester has given up.
    fn frame_if_pending(&self, request: QueuedRequest) -> Option<Frame> {
        if request.id == HEARTBEAT_ID {
            return Some(Frame::heartbeat());
        }
        let mut pending = self.pending.lock();
        let entry = pending.get_mut(&request.id)?;
        entry.sent = true;
        Some(Frame {
            kind: FrameKind::Request,
            service: request.service,
            partition: request.partition,
            request_id: request.id,
            payload: request.payload,
        })
    }

    fn complete(&self, id: u64, result: Result<Bytes>) {
        // No entry: the requester timed out meanwhile; the late response is dropped.
        if let Some(entry) = self.pending.lock().remove(&id) {
            let _ = entry.reply.send(result);
        }
    }

    /// Fails every registered request, sent or still queued.
    fn fail_pending(&self, error: impl Fn() -> TransportError) {
        let failed: Vec<Pending> = self
            .pending
            .lock()
            .drain()
            .map(|(_, entry)| entry)
            .collect();
        for entry in failed {
            let _ = entry.reply.send(Err(error()));
        }
    }

    /// Fails the requests written to a connection that dropped: their fate is unknown.
    fn fail_sent(&self, error: impl Fn() -> TransportError) {
        let failed: Vec<Pending> = {
            let mut pending = self.pending.lock();
            let sent: Vec<u64> = pending
                .iter()
                .filter(|(_, entry)| entry.sent)
                .map(|(id, _)| *id)
                .collect();
            sent.iter().filter_map(|id| pending.remove(id)).collect()
        };
        for entry in failed {
            let _ = entry.reply.send(Err(error()));
        }
    }
}

/// Removes a request's registration when its requester returns, whatever the outcome.
struct PendingGuard<'a> {
    peer: &'a Peer,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.peer.pending.lock().remove(&self.id);
    }
}

/// The peer's connection task; see the state diagram at the top of the module.
async fn run(
    peer: Arc<Peer>,
    mut queue: mpsc::Receiver<QueuedRequest>,
    mut addr: watch::Receiver<SocketAddr>,
) {
    let shared = peer.shared.clone();
    let node = peer.node;
    let mut failures = 0u32;
    let mut last_warned: Option<Instant> = None;
    loop {
        // Connect only when there is something to send.
        let first = tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => break,
            next = queue.recv() => match next {
                Some(request) => request,
                None => break,
            },
        };
        if !peer.pending.lock().contains_key(&first.id) {
            continue;
        }
        let target = *addr.borrow_and_update();
        peer.set_status(PeerStatus::Connecting);
        let connected = tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => break,
            connected = connect(&shared, Some(node), target) => connected,
        };
        match connected {
            Ok((reader, writer, _node)) => {
                if failures > 0 {
                    info!(
                        %node,
                        addr = %target,
                        failures,
                        "reached node {node} at {target} after {failures} failed attempt(s)"
                    );
                } else {
                    debug!(%node, addr = %target, "connected");
                }
                failures = 0;
                peer.set_status(PeerStatus::Connected);
                let reason = serve(&peer, reader, writer, first, &mut queue, &mut addr).await;
                peer.set_status(PeerStatus::Idle);
                if shared.cancel.is_cancelled() {
                    break;
                }
                warn!(%node, addr = %target, %reason, "connection closed; requests sent on it fail");
                peer.fail_sent(|| TransportError::ConnectionLost {
                    node,
                    addr: target,
                    reason: reason.clone(),
                });
            }
            Err(reason) => {
                failures += 1;
                shared.metrics.connect_failures.inc();
                // One line when a peer becomes unreachable, then one per interval while
                // it stays so, whatever the number of attempts in between.
                let due = last_warned.is_none_or(|at| at.elapsed() >= UNREACHABLE_LOG_INTERVAL);
                if failures == 1 || due {
                    last_warned = Some(Instant::now());
                    warn!(
                        %node,
                        addr = %target,
                        %reason,
                        failures,
                        "cannot reach node {node} at {target} ({reason}); retrying"
                    );
                } else {
                    debug!(%node, addr = %target, %reason, failures, "cannot connect");
                }
                peer.set_status(PeerStatus::Down {
                    reason: reason.clone(),
                });
                peer.fail_pending(|| TransportError::Unreachable {
                    node,
                    addr: target,
                    reason: reason.clone(),
                });
                let delay = shared.config.backoff(failures);
                tokio::select! {
                    biased;
                    _ = shared.cancel.cancelled() => break,
                    _ = addr.changed() => failures = 0,
                    _ = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
    peer.set_status(PeerStatus::Idle);
    peer.fail_pending(|| TransportError::ShuttingDown);
}

/// TCP connect plus handshake, within `connect_timeout`. `expected` is the node that
/// must answer (`None`: whichever node listens there). The error is a reason for logs and
/// for `Unreachable`.
pub(crate) async fn connect(
    shared: &Shared,
    expected: Option<NodeId>,
    addr: SocketAddr,
) -> std::result::Result<(Reader, WriteHalf, NodeId), String> {
    let attempt = async {
        let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        // Latency matters more than packet count; the writer batches by itself.
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (read, mut writer) = match &shared.config.tls {
            None => split_tcp(stream),
            Some(tls) => {
                let stream = tls
                    .connector()
                    .connect(rill_tls::member_server_name(addr), stream)
                    .await
                    .map_err(|e| {
                        format!(
                            "TLS handshake failed: {e} (members need certificates issued by \
                             cluster.tls.ca, and cluster.tls on everywhere)"
                        )
                    })?;
                split_any(stream)
            }
        };
        let mut reader = reader(read, shared.config.max_frame_size);
        let node = handshake(&mut reader, &mut writer, shared, expected)
            .await
            .map_err(|e| format!("handshake failed: {e}"))?;
        exchange_versions(&mut reader, &mut writer, shared, node).await?;
        Ok((reader, writer, node))
    };
    let limit = shared.config.connect_timeout;
    match timeout(limit, attempt).await {
        Ok(result) => result,
        Err(_elapsed) => Err(format!("no connection and handshake within {limit:?}")),
    }
}

/// Returns the node id the listener gave.
async fn handshake(
    reader: &mut Reader,
    writer: &mut WriteHalf,
    shared: &Shared,
    expected: Option<NodeId>,
) -> Result<NodeId> {
    let own = shared.config.node_id;
    let hello = Hello {
        from: own,
        target: expected.map_or(ANY_NODE, |node| node.0),
        instance: shared.instance,
    };
    let mut buf = BytesMut::new();
    Frame::control(FrameKind::Hello, hello.encode()).encode(&mut buf);
    writer.write_all(&buf).await?;
    writer.flush().await?;
    shared.metrics.control_frame_sent(buf.len());
    let reply = match reader.next().await {
        Some(reply) => reply?,
        None => {
            return Err(TransportError::InvalidFrame {
                reason: "peer closed the connection during the handshake".to_owned(),
            });
        }
    };
    shared.metrics.frame_received(reply.wire_len());
    match reply.kind {
        FrameKind::HelloAck => {
            let ack = HelloAck::decode(reply.payload)?;
            let actual = ack.node;
            if actual == own && ack.instance != shared.instance {
                return Err(TransportError::InvalidFrame {
                    reason: duplicate_node_id(own),
                });
            }
            match expected {
                Some(expected) if expected != actual => Err(TransportError::InvalidFrame {
                    reason: format!(
                        "the address belongs to node {actual}, not node {expected} \
                         (stale peer address?)"
                    ),
                }),
                _ => Ok(actual),
            }
        }
        FrameKind::HelloReject => Err(TransportError::InvalidFrame {
            reason: format!("peer refused: {}", String::from_utf8_lossy(&reply.payload)),
        }),
        kind => Err(TransportError::InvalidFrame {
            reason: format!("expected a hello reply (protocol {PROTOCOL_VERSION}), got {kind:?}"),
        }),
    }
}

/// The version handshake after the hello (see `crate::version`): `Err` is why the two
/// do not talk (logged already), or why the exchange failed.
async fn exchange_versions(
    reader: &mut Reader,
    writer: &mut WriteHalf,
    shared: &Shared,
    node: NodeId,
) -> std::result::Result<(), String> {
    let failed = |e: &dyn std::fmt::Display| format!("version handshake failed: {e}");
    let mut buf = BytesMut::new();
    crate::version::request(shared).encode(&mut buf);
    writer.write_all(&buf).await.map_err(|e| failed(&e))?;
    writer.flush().await.map_err(|e| failed(&e))?;
    shared.metrics.control_frame_sent(buf.len());
    loop {
        let frame = match reader.next().await {
            Some(Ok(frame)) => frame,
            Some(Err(error)) => return Err(failed(&error)),
            None => return Err(failed(&"the peer closed the connection")),
        };
        shared.metrics.frame_received(frame.wire_len());
        match frame.kind {
            FrameKind::Heartbeat => continue,
            FrameKind::Response | FrameKind::Failure
                if frame.request_id == crate::version::VERSION_REQUEST_ID =>
            {
                return crate::version::read_answer(shared, node, frame.kind, &frame.payload);
            }
            kind => return Err(failed(&format!("unexpected {kind:?} frame"))),
        }
    }
}

/// Runs one established connection until it fails, the address changes or the transport
/// shuts down; returns why it ended.
async fn serve(
    peer: &Peer,
    mut reader: Reader,
    mut writer: WriteHalf,
    first: QueuedRequest,
    queue: &mut mpsc::Receiver<QueuedRequest>,
    addr: &mut watch::Receiver<SocketAddr>,
) -> String {
    let shared = &peer.shared;
    let metrics = &shared.metrics;
    let _open = metrics.connection(Direction::Outbound);
    let write = write_frames(
        &mut writer,
        queue,
        Some(first),
        shared.config.max_write_batch_bytes,
        metrics,
        |request| peer.frame_if_pending(request),
    );
    // Milliseconds since `started` at which the last frame arrived (an atomic, not a
    // Cell, so this future stays `Send`).
    let started = Instant::now();
    let last_received = AtomicU64::new(0);
    let read = async {
        loop {
            let next = reader.next().await;
            last_received.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
            let frame = match next {
                None => return "peer closed the connection".to_owned(),
                Some(Err(TransportError::Io(error))) => return format!("read failed: {error}"),
                Some(Err(error)) => {
                    metrics.invalid_frames.inc();
                    return error.to_string();
                }
                Some(Ok(frame)) => frame,
            };
            metrics.frame_received(frame.wire_len());
            match frame.kind {
                FrameKind::Response => peer.complete(frame.request_id, Ok(frame.payload)),
                FrameKind::Failure => {
                    let message = String::from_utf8_lossy(&frame.payload).into_owned();
                    peer.complete(frame.request_id, Err(TransportError::Remote(message)));
                }
                FrameKind::Heartbeat => {}
                kind => {
                    metrics.invalid_frames.inc();
                    return format!("protocol violation: peer sent a {kind:?} frame");
                }
            }
        }
    };
    let keepalive = async {
        let (interval, limit) = (
            shared.config.keepalive_interval,
            shared.config.keepalive_timeout,
        );
        let mut ticks = tokio::time::interval_at(started + interval, interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let heard = Duration::from_millis(last_received.load(Ordering::Relaxed));
            let silent = started.elapsed().saturating_sub(heard);
            if silent >= limit {
                return format!("peer sent nothing for {silent:?} (keepalive timeout {limit:?})");
            }
            // A full queue means frames are going out anyway.
            let _ = peer.queue.try_send(QueuedRequest::heartbeat());
        }
    };
    // Cancellation safety: every branch ends the connection, and the caller fails all
    // pending requests, including any the dropped writer had taken but not written.
    tokio::select! {
        biased;
        _ = shared.cancel.cancelled() => "the transport is shutting down".to_owned(),
        _ = addr.changed() => format!("peer address changed to {}", *addr.borrow()),
        reason = keepalive => reason,
        written = write => match written {
            Ok(()) => "request queue closed".to_owned(),
            Err(error) => format!("write failed: {error}"),
        },
        reason = read => reason,
    }
}
