//! The batching writer shared by both directions: it takes one frame from the queue,
//! then everything else already queued (up to a byte budget), and writes the lot with a
//! single `write_all`. Many small raft messages thus share a syscall, while a lone
//! request goes out at once (no timer, no added latency).

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::frame::Frame;
use crate::metrics::TransportMetrics;

/// A batch buffer that grew past this (one huge frame) is given back afterwards.
const RETAINED_BUFFER_BYTES: usize = 1024 * 1024;

/// Writes frames from `queue` until it is closed (returns `Ok`) or a write fails.
/// `to_frame` turns a queued item into its frame, or `None` when it is no longer wanted
/// (e.g. the requester gave up before it was written).
///
/// Cancellation safety: a frame taken from the queue but not yet fully written is lost
/// when this future is dropped. Callers drop it only when they tear the connection down,
/// and then fail every request that was awaiting a response on it.
pub(crate) async fn write_frames<W, T>(
    socket: &mut W,
    queue: &mut mpsc::Receiver<T>,
    mut first: Option<T>,
    max_batch_bytes: usize,
    metrics: &TransportMetrics,
    mut to_frame: impl FnMut(T) -> Option<Frame>,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::with_capacity(max_batch_bytes.min(64 * 1024));
    loop {
        let item = match first.take() {
            Some(item) => item,
            None => match queue.recv().await {
                Some(item) => item,
                None => return Ok(()),
            },
        };
        let mut frames = 0u64;
        if let Some(frame) = to_frame(item) {
            frame.encode(&mut buf);
            frames += 1;
        }
        // Let the producers that are ready run once before collecting the batch: under
        // load this gathers many frames per write; when idle it costs one scheduler pass.
        tokio::task::yield_now().await;
        while buf.len() < max_batch_bytes {
            match queue.try_recv() {
                Ok(item) => {
                    if let Some(frame) = to_frame(item) {
                        frame.encode(&mut buf);
                        frames += 1;
                    }
                }
                Err(_) => break,
            }
        }
        if frames == 0 {
            continue;
        }
        socket.write_all(&buf).await?;
        // TLS keeps what it could not write yet; plain TCP flushes at no cost.
        socket.flush().await?;
        metrics.write_batches.inc();
        metrics.frames_sent.inc_by(frames);
        metrics.bytes_sent.inc_by(buf.len() as u64);
        buf.clear();
        if buf.capacity() > RETAINED_BUFFER_BYTES.max(max_batch_bytes) {
            buf = BytesMut::with_capacity(max_batch_bytes.min(64 * 1024));
        }
    }
}
