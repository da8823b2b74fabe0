//! The version handshake, right after the hello (see `rill_protocol::version`):
//!
//! ```text
//!  dialer ── Request{VERSION, id 0, its Announcement} ──► listener: judges, records
//!         ◄── Response{its Announcement} ─────────────── compatible
//!         ◄── Failure{"incompatible versions: …"} ─────── refused; closes
//!         ◄── Failure{"unknown service …"} ────────────── a build before the handshake
//! ```
//!
//! A dialer of a build before the handshake sends no VERSION request: the listener
//! takes its first other request as the sign, and judges it as such a build
//! ([`Announcement::legacy`]). Both sides keep what each peer announced, by node id.

use bytes::Bytes;
use rill_protocol::version::{Announcement, REFUSAL_PREFIX, compatibility, refusal};
use rill_protocol::{NodeId, PartitionId};
use tracing::warn;

use crate::ServiceId;
use crate::frame::{ANY_NODE, Frame, FrameKind};
use crate::transport::Shared;

/// The request id of the dialer's version request (requests proper count from 1).
pub(crate) const VERSION_REQUEST_ID: u64 = 0;

fn name(node: NodeId) -> String {
    if node.0 == ANY_NODE {
        "a gateway or client".to_owned()
    } else {
        format!("node {node}")
    }
}

/// The dialer's version request.
pub(crate) fn request(shared: &Shared) -> Frame {
    Frame {
        kind: FrameKind::Request,
        service: ServiceId::VERSION,
        partition: PartitionId(0),
        request_id: VERSION_REQUEST_ID,
        payload: Bytes::from(shared.config.announcement.encode()),
    }
}

/// Judges what `from` announced and records it if compatible; `Err` is the refusal's
/// log line (logged and counted here).
pub(crate) fn judge(shared: &Shared, from: NodeId, theirs: Announcement) -> Result<(), String> {
    let ours = &shared.config.announcement;
    if let Err(why) = compatibility(ours, &theirs) {
        let own = name(shared.config.node_id);
        let line = refusal(&own, ours, &name(from), &theirs, &why);
        shared.metrics.incompatible_peers.inc();
        warn!(node = %from, "{line}");
        return Err(line);
    }
    shared.peer_versions.write().insert(from, theirs);
    Ok(())
}

/// The listener's answer to a VERSION request from `from`, and whether the connection
/// stays open after it.
pub(crate) fn answer(shared: &Shared, from: NodeId, request: &Frame) -> (Frame, bool) {
    let verdict = Announcement::decode(&request.payload)
        .map_err(|e| format!("{e} from {}", name(from)))
        .and_then(|theirs| judge(shared, from, theirs));
    let (kind, payload, keep) = match verdict {
        Ok(()) => (
            FrameKind::Response,
            Bytes::from(shared.config.announcement.encode()),
            true,
        ),
        Err(line) => (FrameKind::Failure, Bytes::from(line), false),
    };
    let frame = Frame {
        kind,
        service: ServiceId::VERSION,
        partition: request.partition,
        request_id: request.request_id,
        payload,
    };
    (frame, keep)
}

/// A dialer of a build before the handshake sent its first request: judge it as such.
pub(crate) fn judge_legacy(shared: &Shared, from: NodeId) -> Result<(), String> {
    judge(shared, from, Announcement::legacy())
}

/// The dialer's reading of the listener's answer: what node `node` announced, if the
/// two are compatible.
pub(crate) fn read_answer(
    shared: &Shared,
    node: NodeId,
    kind: FrameKind,
    payload: &[u8],
) -> Result<(), String> {
    let text = || String::from_utf8_lossy(payload).into_owned();
    match kind {
        FrameKind::Response => {
            let theirs = Announcement::decode(payload)?;
            judge(shared, node, theirs)
        }
        FrameKind::Failure if text().starts_with(REFUSAL_PREFIX) => {
            shared.metrics.incompatible_peers.inc();
            let line = format!("{} refused the connection: {}", name(node), text());
            warn!(%node, "{line}");
            Err(line)
        }
        // Any other failure: a build that does not know the service.
        FrameKind::Failure => judge(shared, node, Announcement::legacy()),
        other => Err(format!(
            "expected an answer to the version request, got a {other:?} frame"
        )),
    }
}
