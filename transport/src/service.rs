//! Which service a frame is for. The receiving node's [`Handler`](crate::Handler) dispatches
//! on it.

use std::fmt;

/// Identifies the service a request is addressed to. New services take a new constant;
/// numbers are never reused, so a mixed-version cluster never misroutes a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceId(pub u16);

impl ServiceId {
    /// Raft `AppendEntries` (also carries heartbeats).
    pub const RAFT_APPEND: ServiceId = ServiceId(1);
    /// Raft `RequestVote`.
    pub const RAFT_VOTE: ServiceId = ServiceId(2);
    /// Raft snapshot transfer (one chunk per request).
    pub const RAFT_SNAPSHOT: ServiceId = ServiceId(3);
    /// Raft leadership transfer / timeout-now.
    pub const RAFT_TRANSFER_LEADER: ServiceId = ServiceId(4);
    /// The command API: a client command forwarded by a gateway to a partition leader.
    pub const COMMAND: ServiceId = ServiceId(16);
    /// Topology queries: which partitions a broker holds and leads.
    pub const TOPOLOGY: ServiceId = ServiceId(17);
    /// Commands sent from one partition to another (the replicated outbox).
    pub const PARTITION_SEND: ServiceId = ServiceId(18);
    /// Long poll for "jobs available" notifications of a broker's leading partitions.
    pub const JOBS_AVAILABLE: ServiceId = ServiceId(19);
    /// The cluster configuration between brokers: a broker asks a peer for a newer one.
    pub const CLUSTER: ServiceId = ServiceId(20);
    /// The version handshake: the request and its response carry each side's
    /// [`Announcement`](rill_protocol::version::Announcement). Served by the transport
    /// itself, never by a handler; a build before it answers "unknown service".
    pub const VERSION: ServiceId = ServiceId(21);

    pub const fn get(self) -> u16 {
        self.0
    }

    /// A readable name for logs; unknown ids print as a number.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            ServiceId::RAFT_APPEND => "raft-append",
            ServiceId::RAFT_VOTE => "raft-vote",
            ServiceId::RAFT_SNAPSHOT => "raft-snapshot",
            ServiceId::RAFT_TRANSFER_LEADER => "raft-transfer-leader",
            ServiceId::COMMAND => "command",
            ServiceId::TOPOLOGY => "topology",
            ServiceId::PARTITION_SEND => "partition-send",
            ServiceId::JOBS_AVAILABLE => "jobs-available",
            ServiceId::CLUSTER => "cluster",
            ServiceId::VERSION => "version",
            _ => return None,
        })
    }
}

impl fmt::Display for ServiceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "service-{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_services_print_their_name_and_unknown_ones_their_number() {
        assert_eq!(ServiceId::RAFT_VOTE.to_string(), "raft-vote");
        assert_eq!(ServiceId(999).to_string(), "service-999");
    }
}
