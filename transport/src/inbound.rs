//! The serving side: accept connections, check the handshake, run handlers with a bound
//! on how many run at once per connection, and send their responses back in batches.

use std::net::{IpAddr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use rill_protocol::NodeId;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::timeout;
use tracing::{debug, info, warn};

use crate::frame::{ANY_NODE, Frame, FrameKind, Hello, HelloAck};
use crate::metrics::{Direction, GaugeGuard};
use crate::stream::{Reader, WriteHalf, reader, split_any, split_tcp};
use crate::transport::{Shared, duplicate_node_id};
use crate::writer::write_frames;
use crate::{Result, ServiceId, TransportError};

/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(50);

pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let connection_slots = Arc::new(Semaphore::new(shared.config.max_inbound_connections));
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, remote)) => match connection_slots.clone().try_acquire_owned() {
                Ok(slot) => {
                    let shared_for_task = shared.clone();
                    shared.spawn(async move {
                        serve_connection(stream, remote, shared_for_task).await;
                        drop(slot);
                    });
                }
                Err(_) => {
                    warn!(
                        %remote,
                        limit = shared.config.max_inbound_connections,
                        "too many inbound transport connections; closing the new one"
                    );
                    drop(stream);
                }
            },
            Err(error) => {
                warn!(%error, "accepting a transport connection failed");
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
            }
        }
    }
}

async fn serve_connection(stream: TcpStream, remote: SocketAddr, shared: Arc<Shared>) {
    let metrics = &shared.metrics;
    if let Err(error) = stream.set_nodelay(true) {
        debug!(%remote, %error, "cannot set TCP_NODELAY");
    }
    // The TLS handshake (with the peer's certificate checked against the cluster CA)
    // and the hello exchange share the connect timeout.
    let handshake = timeout(shared.config.connect_timeout, async {
        let (read, mut writer) = match &shared.config.tls {
            None => split_tcp(stream),
            Some(tls) => match tls.acceptor().accept(stream).await {
                Ok(stream) => split_any(stream),
                Err(error) => return Err(Refused::Tls(error)),
            },
        };
        let mut reader = reader(read, shared.config.max_frame_size);
        match accept_handshake(&mut reader, &mut writer, &shared).await {
            Ok(from) => Ok((reader, writer, from)),
            Err(error) => Err(Refused::Hello(error)),
        }
    });
    let (reader, mut writer, from) = tokio::select! {
        biased;
        _ = shared.cancel.cancelled() => return,
        handshake = handshake => match handshake {
            Ok(Ok(accepted)) => accepted,
            Ok(Err(Refused::Tls(error))) => {
                warn!(
                    %remote,
                    %error,
                    "refused transport connection: TLS handshake failed (a peer needs a \
                     certificate issued by cluster.tls.ca)"
                );
                return;
            }
            Ok(Err(Refused::Hello(error))) => {
                if !matches!(error, TransportError::Io(_)) {
                    metrics.invalid_frames.inc();
                }
                warn!(%remote, %error, "refused transport connection");
                return;
            }
            Err(_elapsed) => {
                warn!(%remote, "no handshake within {:?}; closing", shared.config.connect_timeout);
                return;
            }
        },
    };
    let _open = metrics.connection(Direction::Inbound);
    debug!(%remote, node = %from, "accepted transport connection");
    warn_if_elsewhere(&shared, from, remote);

    let handler_limit = shared.config.max_concurrent_handlers_per_connection;
    // A handler holds its slot until its response is queued, so the queue never holds
    // more than `handler_limit` responses either.
    let (responses, mut response_queue) = mpsc::channel(handler_limit);
    let slots = Arc::new(Semaphore::new(handler_limit));
    let write = write_frames(
        &mut writer,
        &mut response_queue,
        None,
        shared.config.max_write_batch_bytes,
        metrics,
        Some,
    );
    tokio::pin!(write);
    // Heartbeats come from the writer side, so they keep flowing while the reader waits
    // for a handler slot; the peer then knows this node is alive, only busy.
    let heartbeats = {
        let responses = responses.clone();
        let interval = shared.config.keepalive_interval;
        async move {
            let start = tokio::time::Instant::now() + interval;
            let mut ticks = tokio::time::interval_at(start, interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                // A full queue means frames are going out anyway.
                let _ = responses.try_send(Frame::heartbeat());
            }
        }
    };
    let read = read_requests(reader, from, remote, responses, slots, &shared);
    tokio::select! {
        written = &mut write => {
            if let Err(error) = written {
                debug!(%remote, node = %from, %error, "writing responses failed; closing");
            }
            return;
        }
        () = read => {}
        () = heartbeats => {}
    }
    // Reading stopped (peer closed, bad frame or shutdown): the writer ends once every
    // running handler has queued its response, or when the grace runs out.
    if timeout(shared.config.shutdown_grace, write).await.is_err() {
        info!(%remote, node = %from, "handlers still running after the grace; closing");
    }
}

/// A peer connecting from a host other than the one its configured address names is
/// either a second process running with its node id, or a sign of stale contact points.
/// Only hosts are compared (the source port is ephemeral), and loopback is one host.
fn warn_if_elsewhere(shared: &Shared, from: NodeId, remote: SocketAddr) {
    if from == shared.config.node_id {
        return;
    }
    let Some(configured) = shared.peer_addrs.read().get(&from).copied() else {
        return;
    };
    let actual = remote.ip();
    if !elsewhere(configured.ip(), actual) {
        return;
    }
    warn!(
        node = %from,
        %remote,
        %configured,
        "node {from} connected from {actual}, but the contact points place node {from} at \
         {configured}: either two brokers run as node {from} (give each its own \
         cluster.node-id) or cluster.initial-contact-points is stale"
    );
}

/// Whether a connection from `actual` cannot come from the host at `configured`.
fn elsewhere(configured: IpAddr, actual: IpAddr) -> bool {
    let same = configured == actual
        || configured.is_unspecified()
        || (configured.is_loopback() && actual.is_loopback());
    !same
}

/// Why an inbound connection was closed before it was established.
enum Refused {
    Tls(std::io::Error),
    Hello(TransportError),
}

async fn accept_handshake(
    reader: &mut Reader,
    writer: &mut WriteHalf,
    shared: &Shared,
) -> Result<NodeId> {
    let own = shared.config.node_id;
    let hello = match reader.next().await {
        Some(Ok(frame)) => frame,
        Some(Err(TransportError::VersionMismatch { theirs, ours })) => {
            let reason =
                format!("node {own} speaks transport protocol version {ours}, not {theirs}");
            reject(writer, reason, shared).await;
            return Err(TransportError::VersionMismatch { theirs, ours });
        }
        Some(Err(error)) => return Err(error),
        None => {
            return Err(TransportError::InvalidFrame {
                reason: "connection closed before the handshake".to_owned(),
            });
        }
    };
    shared.metrics.frame_received(hello.wire_len());
    if hello.kind != FrameKind::Hello {
        return Err(TransportError::InvalidFrame {
            reason: format!("expected a hello frame first, got {:?}", hello.kind),
        });
    }
    let Hello {
        from,
        target,
        instance,
    } = Hello::decode(hello.payload)?;
    let refusal = if target != own.0 && target != ANY_NODE {
        Some(format!("this is node {own}, not node {target}"))
    } else if from == own && instance != shared.instance {
        Some(duplicate_node_id(own))
    } else {
        None
    };
    if let Some(reason) = refusal {
        reject(writer, reason.clone(), shared).await;
        return Err(TransportError::InvalidFrame {
            reason: format!("refused node {from}: {reason}"),
        });
    }
    let ack = HelloAck {
        node: own,
        instance: shared.instance,
    };
    let mut buf = BytesMut::new();
    Frame::control(FrameKind::HelloAck, ack.encode()).encode(&mut buf);
    writer.write_all(&buf).await?;
    writer.flush().await?;
    shared.metrics.control_frame_sent(buf.len());
    Ok(from)
}

/// Best effort: the connection is closed right after anyway.
async fn reject(writer: &mut WriteHalf, reason: String, shared: &Shared) {
    let mut buf = BytesMut::new();
    Frame::control(FrameKind::HelloReject, Bytes::from(reason)).encode(&mut buf);
    if writer.write_all(&buf).await.is_ok() && writer.flush().await.is_ok() {
        shared.metrics.control_frame_sent(buf.len());
    }
}

/// Reads requests and runs each in its own task once a handler slot is free. While every
/// slot is busy this stops reading, so the sender feels TCP back-pressure instead of this
/// node queueing unbounded work.
async fn read_requests(
    mut reader: Reader,
    from: NodeId,
    remote: SocketAddr,
    responses: mpsc::Sender<Frame>,
    slots: Arc<Semaphore>,
    shared: &Arc<Shared>,
) {
    let metrics = &shared.metrics;
    // Whether the peer has announced its versions (or shown it is a build before the
    // handshake by sending something else first).
    let mut announced = false;
    loop {
        let limit = shared.config.keepalive_timeout;
        let next = tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => return,
            next = timeout(limit, reader.next()) => next,
        };
        let Ok(next) = next else {
            info!(%remote, node = %from, "peer sent nothing for {limit:?}; closing");
            return;
        };
        let request = match next {
            None => return,
            Some(Ok(frame)) => frame,
            Some(Err(TransportError::Io(error))) => {
                debug!(%remote, node = %from, %error, "read failed; closing");
                return;
            }
            Some(Err(error)) => {
                metrics.invalid_frames.inc();
                warn!(%remote, node = %from, %error, "closing transport connection");
                return;
            }
        };
        metrics.frame_received(request.wire_len());
        if request.kind == FrameKind::Heartbeat {
            continue;
        }
        if request.kind != FrameKind::Request {
            metrics.invalid_frames.inc();
            warn!(%remote, node = %from, kind = ?request.kind, "protocol violation; closing");
            return;
        }
        if request.service == ServiceId::VERSION {
            announced = true;
            let (answer, keep) = crate::version::answer(shared, from, &request);
            // A refusal goes out before the connection closes.
            if responses.send(answer).await.is_err() || !keep {
                return;
            }
            continue;
        }
        if !announced {
            announced = true;
            if crate::version::judge_legacy(shared, from).is_err() {
                return;
            }
        }
        let slot = tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => return,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_closed) => return,
            },
        };
        let running = GaugeGuard::new(&metrics.handlers_running);
        let responses = responses.clone();
        let handler = shared.handler.clone();
        let max_frame_size = shared.config.max_frame_size;
        shared.spawn(async move {
            let (service, partition, request_id) =
                (request.service, request.partition, request.request_id);
            // The handler is called inside the guarded future, so a panic while building
            // its future is caught as well.
            let outcome = AssertUnwindSafe(async move {
                handler
                    .handle(from, service, partition, request.payload)
                    .await
            })
            .catch_unwind()
            .await;
            let (kind, payload) = match outcome {
                Ok(Ok(payload)) => (FrameKind::Response, payload),
                Ok(Err(message)) => (FrameKind::Failure, Bytes::from(message)),
                Err(_panic) => {
                    warn!(node = %from, %service, %partition, "transport handler panicked");
                    (
                        FrameKind::Failure,
                        Bytes::from_static(b"the handler panicked"),
                    )
                }
            };
            let mut response = Frame {
                kind,
                service,
                partition,
                request_id,
                payload,
            };
            if response.wire_len() > max_frame_size {
                let message = format!(
                    "response of {} bytes exceeds the maximum frame size of {max_frame_size} bytes",
                    response.wire_len()
                );
                warn!(node = %from, %service, %partition, "{message}");
                response.kind = FrameKind::Failure;
                response.payload = Bytes::from(message);
            }
            drop(running);
            // Fails only when the connection is gone; the requester learns that itself.
            let _ = responses.send(response).await;
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("literal address")
    }

    #[test]
    fn a_peer_from_another_host_than_configured_is_elsewhere() {
        assert!(elsewhere(ip("10.0.0.7"), ip("10.0.0.5")));
        assert!(elsewhere(ip("10.0.0.7"), ip("127.0.0.1")));
        assert!(!elsewhere(ip("10.0.0.7"), ip("10.0.0.7")));
        // Loopback is one host, and an unspecified address says nothing.
        assert!(!elsewhere(ip("127.0.0.1"), ip("127.0.0.2")));
        assert!(!elsewhere(ip("::1"), ip("127.0.0.1")));
        assert!(!elsewhere(ip("0.0.0.0"), ip("10.0.0.5")));
    }
}
