//! The server roles' logging: `RILL_LOG` picks what is logged (default
//! `info,openraft=warn`), `RILL_LOG_FORMAT=json` logs JSON lines, all to stderr.
//!
//! openraft logs every failed RPC to a peer it cannot reach, at error: with one broker
//! down that is a line per election round or replication retry, per partition. The
//! transport already says so itself, once per unreachable peer and then every 30 s
//! (`cannot reach node N at ADDR (...); retrying`), so those openraft events are
//! dropped. So are its errors saying only that the raft core has stopped (`Stopped`): a
//! peer's request that arrives while a partition shuts down gets one, and a core that
//! stopped for a real reason logged that reason itself. Every other openraft event
//! passes.

use std::fmt::Debug;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub fn init() {
    let filter = EnvFilter::try_from_env("RILL_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,openraft=warn"));
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(QuietUnreachable);
    let output = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    if std::env::var("RILL_LOG_FORMAT").as_deref() == Ok("json") {
        registry.with(output.json()).init();
    } else {
        registry.with(output).init();
    }
}

/// Drops openraft's events about a peer the transport could not connect to, and its
/// "the core has stopped" errors.
pub struct QuietUnreachable;

impl<S: Subscriber> Layer<S> for QuietUnreachable {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        if !event.metadata().target().starts_with("openraft") {
            return true;
        }
        let mut found = FindUnreachable(false);
        event.record(&mut found);
        !found.0
    }
}

/// Whether an error's text is the raft network's "could not connect to the peer"
/// (`TransportFailure::Unreachable` around `TransportError::Unreachable`), or "no
/// address yet" for a peer whose name does not resolve (the raft network logs that
/// itself, at start, and keeps looking it up).
fn is_unreachable(text: &str) -> bool {
    (text.contains("peer unreachable: node ") && text.contains(" is unreachable: "))
        || text.contains("peer unreachable: no address is known for node ")
}

struct FindUnreachable(bool);

impl Visit for FindUnreachable {
    fn record_str(&mut self, _: &Field, value: &str) {
        self.0 = self.0 || is_unreachable(value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if !self.0 {
            let text = format!("{value:?}");
            self.0 = is_unreachable(&text) || (field.name() == "error" && text == "Stopped");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Count(Arc<AtomicUsize>);

    impl<S: Subscriber> Layer<S> for Count {
        fn on_event(&self, _: &Event<'_>, _: Context<'_, S>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[derive(Debug)]
    struct Stopped;

    #[test]
    fn openraft_events_about_an_unreachable_peer_are_dropped_and_others_pass() {
        let seen = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry()
            .with(QuietUnreachable)
            .with(Count(seen.clone()));
        let unreachable = "Unreachable node: rill_raft::network::TransportFailure: peer \
                           unreachable: node 1 at 127.0.0.1:26512 is unreachable: Connection \
                           refused (os error 111)";
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "openraft::core::raft_core", error = %unreachable, target = 1, "while requesting vote");
            tracing::error!(target: "openraft::replication", err = %unreachable, "RPCError");
            let unresolved = "Unreachable node: rill_raft::network::TransportFailure: peer \
                              unreachable: no address is known for node 1; call Transport::set_peer";
            tracing::error!(target: "openraft::core::raft_core", error = %unresolved, "while requesting vote");
            // A peer's request that reached a partition shutting down.
            tracing::error!(target: "openraft::raft::raft_inner", error = ?Stopped, "error when recv_msg");
            assert_eq!(seen.load(Ordering::Relaxed), 0, "dropped");

            // A remote failure, a timeout, and our own transport's line all pass.
            let remote = "Unreachable node: remote raft failed: storage error";
            tracing::error!(target: "openraft::replication", err = %remote, "RPCError");
            tracing::error!(target: "openraft::core::raft_core", error = "timeout after 1s", "timeout");
            tracing::error!(target: "openraft::core::raft_core", error = ?"Stopped", "a string, not the Stopped error");
            tracing::warn!(target: "rill_transport::outbound", reason = %unreachable, "cannot reach node 1");
            assert_eq!(seen.load(Ordering::Relaxed), 4, "kept");
        });
    }
}
