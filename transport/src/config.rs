//! Options of one transport instance.

use std::net::SocketAddr;
use std::time::Duration;

use rill_protocol::NodeId;

use crate::frame::FRAME_HEADER_LEN;
use crate::{Result, TransportError};

/// Options of one transport. [`TransportConfig::new`] fills in defaults suited to raft
/// traffic on a LAN; adjust fields afterwards.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// This node's id, sent in the handshake and checked by peers.
    pub node_id: NodeId,
    /// Address to listen on; port 0 picks a free port (see [`Transport::local_addr`]).
    ///
    /// [`Transport::local_addr`]: crate::Transport::local_addr
    pub listen: SocketAddr,
    /// Largest frame (header plus payload) sent or accepted. A peer announcing a bigger
    /// frame is disconnected before anything is allocated for it.
    pub max_frame_size: usize,
    /// Requests to one peer that may be queued or awaiting their response at once. A
    /// request beyond it waits for a slot until its timeout, then fails with
    /// [`TransportError::Backpressure`].
    pub max_in_flight_per_peer: usize,
    /// Handlers running at once for one inbound connection. When all are busy the
    /// connection stops reading, and TCP flow control pushes back on the sender.
    pub max_concurrent_handlers_per_connection: usize,
    /// Inbound connections open at once (handshaking or established); one more is closed
    /// as soon as it is accepted. Together with the per-connection handler bound this caps
    /// the work peers can start on this node.
    pub max_inbound_connections: usize,
    /// Time allowed for the TCP connect plus the handshake (both directions).
    pub connect_timeout: Duration,
    /// Each side of a connection sends a heartbeat this often...
    pub keepalive_interval: Duration,
    /// ...and closes the connection when nothing at all has arrived for this long (a
    /// peer that hangs, or a host that vanished without closing its sockets).
    pub keepalive_timeout: Duration,
    /// First delay before retrying a failed connect; it doubles per failure...
    pub reconnect_backoff_min: Duration,
    /// ...up to this.
    pub reconnect_backoff_max: Duration,
    /// Queued frames are coalesced into one write until a batch holds this many bytes.
    pub max_write_batch_bytes: usize,
    /// How long [`Transport::shutdown`](crate::Transport::shutdown) lets running
    /// inbound handlers finish and their responses go out.
    pub shutdown_grace: Duration,
    /// Value of the `transport` label on this instance's metrics (a process may run
    /// several transports, e.g. `internal` and `command`).
    pub metrics_name: String,
    /// Mutual TLS on every connection, both ways (`cluster.tls.*`); `None`: plain TCP.
    /// All members of a cluster have it or none: a plain peer and a TLS one cannot talk.
    pub tls: Option<rill_tls::ClusterTls>,
    /// What this node announces in the version handshake on every connection (its
    /// release, wire and engine versions); peers it is not compatible with are refused.
    pub announcement: rill_protocol::version::Announcement,
}

impl TransportConfig {
    /// Defaults: 16 MiB frames, 1024 requests in flight per peer, 256 concurrent handlers
    /// per connection, 256 inbound connections, 1 s connect timeout, heartbeats every 1 s
    /// with a 6 s keepalive timeout, reconnect backoff 10 ms doubling to 1 s,
    /// 256 KiB write batches, 1 s shutdown grace.
    pub fn new(node_id: NodeId, listen: SocketAddr) -> TransportConfig {
        TransportConfig {
            node_id,
            listen,
            max_frame_size: 16 * 1024 * 1024,
            max_in_flight_per_peer: 1024,
            max_concurrent_handlers_per_connection: 256,
            max_inbound_connections: 256,
            connect_timeout: Duration::from_secs(1),
            keepalive_interval: Duration::from_secs(1),
            keepalive_timeout: Duration::from_secs(6),
            reconnect_backoff_min: Duration::from_millis(10),
            reconnect_backoff_max: Duration::from_secs(1),
            max_write_batch_bytes: 256 * 1024,
            shutdown_grace: Duration::from_secs(1),
            metrics_name: "internal".to_owned(),
            tls: None,
            announcement: rill_protocol::version::Announcement::this_build(),
        }
    }

    /// Every problem at once, so an operator fixes them in one go.
    pub fn validate(&self) -> Result<()> {
        let mut problems = Vec::new();
        if self.max_frame_size <= FRAME_HEADER_LEN || self.max_frame_size > u32::MAX as usize {
            problems.push(format!(
                "max_frame_size is {}; it must be above the {FRAME_HEADER_LEN}-byte header \
                 and at most {}",
                self.max_frame_size,
                u32::MAX
            ));
        }
        if self.max_in_flight_per_peer == 0 {
            problems.push("max_in_flight_per_peer must be at least 1".to_owned());
        }
        if self.max_concurrent_handlers_per_connection == 0 {
            problems.push("max_concurrent_handlers_per_connection must be at least 1".to_owned());
        }
        if self.max_inbound_connections == 0 {
            problems.push("max_inbound_connections must be at least 1".to_owned());
        }
        if self.connect_timeout.is_zero() {
            problems.push("connect_timeout must be above zero".to_owned());
        }
        if self.keepalive_interval.is_zero() || self.keepalive_timeout <= self.keepalive_interval {
            problems.push(format!(
                "keepalive_interval ({:?}) must be above zero and below keepalive_timeout \
                 ({:?})",
                self.keepalive_interval, self.keepalive_timeout
            ));
        }
        if self.reconnect_backoff_min.is_zero()
            || self.reconnect_backoff_min > self.reconnect_backoff_max
        {
            problems.push(format!(
                "reconnect_backoff_min ({:?}) must be above zero and at most \
                 reconnect_backoff_max ({:?})",
                self.reconnect_backoff_min, self.reconnect_backoff_max
            ));
        }
        if self.max_write_batch_bytes == 0 {
            problems.push("max_write_batch_bytes must be at least 1".to_owned());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(TransportError::InvalidConfig {
                problems: problems.join("; "),
            })
        }
    }

    /// The delay before connect attempt number `failures + 1` after `failures` failures
    /// in a row (`failures >= 1`).
    pub(crate) fn backoff(&self, failures: u32) -> Duration {
        let factor = 1u32 << failures.saturating_sub(1).min(16);
        self.reconnect_backoff_min
            .saturating_mul(factor)
            .min(self.reconnect_backoff_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TransportConfig {
        TransportConfig::new(NodeId(0), "127.0.0.1:0".parse().expect("literal address"))
    }

    #[test]
    fn defaults_are_valid() {
        config().validate().expect("defaults must validate");
    }

    #[test]
    fn validate_reports_every_problem() {
        let mut config = config();
        config.max_frame_size = 3;
        config.max_in_flight_per_peer = 0;
        config.reconnect_backoff_min = Duration::from_secs(5);
        let message = config.validate().expect_err("invalid config").to_string();
        assert!(message.contains("max_frame_size is 3"), "{message}");
        assert!(message.contains("max_in_flight_per_peer"), "{message}");
        assert!(message.contains("reconnect_backoff_min"), "{message}");
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let config = config();
        assert_eq!(config.backoff(1), Duration::from_millis(10));
        assert_eq!(config.backoff(2), Duration::from_millis(20));
        assert_eq!(config.backoff(4), Duration::from_millis(80));
        assert_eq!(config.backoff(8), Duration::from_secs(1));
        assert_eq!(config.backoff(u32::MAX), Duration::from_secs(1));
    }
}
