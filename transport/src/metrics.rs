//! Metric names and help texts in one place. Each transport owns its metrics (tests run
//! several in one process); the broker registers them into its registry with
//! [`TransportMetrics::register`].

use prometheus::{IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

const FRAMES_SENT: (&str, &str) = ("rill_transport_frames_sent_total", "Frames written.");
const FRAMES_RECEIVED: (&str, &str) = ("rill_transport_frames_received_total", "Frames read.");
const BYTES_SENT: (&str, &str) = ("rill_transport_bytes_sent_total", "Bytes written.");
const BYTES_RECEIVED: (&str, &str) = ("rill_transport_bytes_received_total", "Bytes read.");
const WRITE_BATCHES: (&str, &str) = (
    "rill_transport_write_batches_total",
    "Socket writes; frames sent divided by this is the mean batch size.",
);
const REQUESTS_IN_FLIGHT: (&str, &str) = (
    "rill_transport_requests_in_flight",
    "Outgoing requests queued or awaiting their response.",
);
const HANDLERS_RUNNING: (&str, &str) = (
    "rill_transport_handlers_running",
    "Inbound requests being served by the handler.",
);
const CONNECTIONS_OPENED: (&str, &str) = (
    "rill_transport_connections_opened_total",
    "Connections established (outbound) or accepted after a handshake (inbound).",
);
const CONNECTIONS_OPEN: (&str, &str) = ("rill_transport_connections_open", "Open connections.");
const CONNECT_FAILURES: (&str, &str) = (
    "rill_transport_connect_failures_total",
    "Failed connect or handshake attempts to peers.",
);
const INVALID_FRAMES: (&str, &str) = (
    "rill_transport_invalid_frames_total",
    "Connections closed because a peer sent a garbage, oversized or truncated frame.",
);
const INCOMPATIBLE_PEERS: (&str, &str) = (
    "rill_transport_incompatible_peers_total",
    "Connections refused by the version handshake: the peer runs a Rill release too old \
     or too new to talk to (both versions are in the log line).",
);
const DIRECTION: &str = "direction";

/// Counters of one transport instance; every metric carries a `transport` label.
#[derive(Clone)]
pub struct TransportMetrics {
    pub(crate) frames_sent: IntCounter,
    pub(crate) frames_received: IntCounter,
    pub(crate) bytes_sent: IntCounter,
    pub(crate) bytes_received: IntCounter,
    pub(crate) write_batches: IntCounter,
    pub(crate) requests_in_flight: IntGauge,
    pub(crate) handlers_running: IntGauge,
    connections_opened: IntCounterVec,
    connections_open: IntGaugeVec,
    pub(crate) connect_failures: IntCounter,
    pub(crate) invalid_frames: IntCounter,
    pub(crate) incompatible_peers: IntCounter,
}

/// A point-in-time copy of the counters, for tests and logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    pub frames_sent: u64,
    pub frames_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub write_batches: u64,
    pub requests_in_flight: i64,
    pub handlers_running: i64,
    pub outbound_connections_opened: u64,
    pub inbound_connections_opened: u64,
    pub outbound_connections_open: i64,
    pub inbound_connections_open: i64,
    pub connect_failures: u64,
    pub invalid_frames: u64,
    pub incompatible_peers: u64,
}

#[derive(Clone, Copy)]
pub(crate) enum Direction {
    Outbound,
    Inbound,
}

impl Direction {
    fn label(self) -> &'static str {
        match self {
            Direction::Outbound => "outbound",
            Direction::Inbound => "inbound",
        }
    }
}

impl TransportMetrics {
    pub(crate) fn new(transport_name: &str) -> prometheus::Result<TransportMetrics> {
        let opts = |(name, help): (&str, &str)| {
            Opts::new(name, help).const_label("transport", transport_name)
        };
        Ok(TransportMetrics {
            frames_sent: IntCounter::with_opts(opts(FRAMES_SENT))?,
            frames_received: IntCounter::with_opts(opts(FRAMES_RECEIVED))?,
            bytes_sent: IntCounter::with_opts(opts(BYTES_SENT))?,
            bytes_received: IntCounter::with_opts(opts(BYTES_RECEIVED))?,
            write_batches: IntCounter::with_opts(opts(WRITE_BATCHES))?,
            requests_in_flight: IntGauge::with_opts(opts(REQUESTS_IN_FLIGHT))?,
            handlers_running: IntGauge::with_opts(opts(HANDLERS_RUNNING))?,
            connections_opened: IntCounterVec::new(opts(CONNECTIONS_OPENED), &[DIRECTION])?,
            connections_open: IntGaugeVec::new(opts(CONNECTIONS_OPEN), &[DIRECTION])?,
            connect_failures: IntCounter::with_opts(opts(CONNECT_FAILURES))?,
            invalid_frames: IntCounter::with_opts(opts(INVALID_FRAMES))?,
            incompatible_peers: IntCounter::with_opts(opts(INCOMPATIBLE_PEERS))?,
        })
    }

    /// Adds every metric of this transport to `registry`.
    pub fn register(&self, registry: &Registry) -> prometheus::Result<()> {
        registry.register(Box::new(self.frames_sent.clone()))?;
        registry.register(Box::new(self.frames_received.clone()))?;
        registry.register(Box::new(self.bytes_sent.clone()))?;
        registry.register(Box::new(self.bytes_received.clone()))?;
        registry.register(Box::new(self.write_batches.clone()))?;
        registry.register(Box::new(self.requests_in_flight.clone()))?;
        registry.register(Box::new(self.handlers_running.clone()))?;
        registry.register(Box::new(self.connections_opened.clone()))?;
        registry.register(Box::new(self.connections_open.clone()))?;
        registry.register(Box::new(self.connect_failures.clone()))?;
        registry.register(Box::new(self.invalid_frames.clone()))?;
        registry.register(Box::new(self.incompatible_peers.clone()))?;
        Ok(())
    }

    pub fn stats(&self) -> TransportStats {
        let opened = |d: Direction| {
            self.connections_opened
                .with_label_values(&[d.label()])
                .get()
        };
        let open = |d: Direction| self.connections_open.with_label_values(&[d.label()]).get();
        TransportStats {
            frames_sent: self.frames_sent.get(),
            frames_received: self.frames_received.get(),
            bytes_sent: self.bytes_sent.get(),
            bytes_received: self.bytes_received.get(),
            write_batches: self.write_batches.get(),
            requests_in_flight: self.requests_in_flight.get(),
            handlers_running: self.handlers_running.get(),
            outbound_connections_opened: opened(Direction::Outbound),
            inbound_connections_opened: opened(Direction::Inbound),
            outbound_connections_open: open(Direction::Outbound),
            inbound_connections_open: open(Direction::Inbound),
            connect_failures: self.connect_failures.get(),
            invalid_frames: self.invalid_frames.get(),
            incompatible_peers: self.incompatible_peers.get(),
        }
    }

    /// Counts a connection as opened and open until the returned guard drops.
    pub(crate) fn connection(&self, direction: Direction) -> ConnectionGauge {
        self.connections_opened
            .with_label_values(&[direction.label()])
            .inc();
        let open = self
            .connections_open
            .with_label_values(&[direction.label()]);
        open.inc();
        ConnectionGauge(open)
    }

    /// Counts a frame written outside the batching writer (the handshake).
    pub(crate) fn control_frame_sent(&self, wire_len: usize) {
        self.frames_sent.inc();
        self.bytes_sent.inc_by(wire_len as u64);
        self.write_batches.inc();
    }

    pub(crate) fn frame_received(&self, wire_len: usize) {
        self.frames_received.inc();
        self.bytes_received.inc_by(wire_len as u64);
    }
}

pub(crate) struct ConnectionGauge(IntGauge);

impl Drop for ConnectionGauge {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Increments a gauge for as long as it lives.
pub(crate) struct GaugeGuard(IntGauge);

impl GaugeGuard {
    pub fn new(gauge: &IntGauge) -> GaugeGuard {
        gauge.inc();
        GaugeGuard(gauge.clone())
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_transports_register_side_by_side() {
        let registry = Registry::new();
        let internal = TransportMetrics::new("internal").expect("valid metrics");
        let command = TransportMetrics::new("command").expect("valid metrics");
        internal.register(&registry).expect("first registration");
        command
            .register(&registry)
            .expect("second transport, other label");
        internal.frames_sent.inc_by(3);
        let families = registry.gather();
        let sent = families
            .iter()
            .find(|family| family.name() == FRAMES_SENT.0)
            .expect("frames sent is exported");
        assert_eq!(sent.get_metric().len(), 2);
        assert!(
            internal.register(&registry).is_err(),
            "double registration is refused"
        );
    }
}
