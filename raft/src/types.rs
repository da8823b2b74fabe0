//! openraft's type configuration for a Rill partition, and short names for its types.
//!
//! The log carries opaque bytes: the broker's encoded command batches. Nothing in this
//! crate knows what a command is.

use std::fmt;

use bytes::Bytes;
use rill_protocol::Term;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A node id as openraft sees it (the broker's `NodeId` widened to `u64`).
pub type RaftNodeId = u64;

openraft::declare_raft_types!(
    /// The openraft type configuration of a partition.
    pub TypeConfig:
        D = EntryData,
        R = EntryResponse,
        NodeId = RaftNodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = crate::snapshot::SnapshotFile,
        AsyncRuntime = openraft::TokioRuntime,
        Responder = openraft::impls::OneshotResponder<TypeConfig>,
);

pub type Raft = openraft::Raft<TypeConfig>;
pub type LogId = openraft::LogId<RaftNodeId>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type Vote = openraft::Vote<RaftNodeId>;
pub type StoredMembership = openraft::StoredMembership<RaftNodeId, openraft::BasicNode>;
pub type SnapshotMeta = openraft::SnapshotMeta<RaftNodeId, openraft::BasicNode>;
pub type Snapshot = openraft::Snapshot<TypeConfig>;
pub type StorageError = openraft::StorageError<RaftNodeId>;
pub type RaftMetrics = openraft::RaftMetrics<RaftNodeId, openraft::BasicNode>;

/// The payload of a normal log entry: opaque bytes (a command batch).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct EntryData(pub Bytes);

/// What applying one entry returned to the proposer: opaque bytes.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct EntryResponse(pub Bytes);

macro_rules! opaque_bytes {
    ($name:ident) => {
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({} bytes)", stringify!($name), self.0.len())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }

        // Written as one byte string (a length and a copy), not a sequence of u8s.
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer
                    .deserialize_byte_buf(BytesVisitor)
                    .map(|bytes| $name(Bytes::from(bytes)))
            }
        }
    };
}

opaque_bytes!(EntryData);
opaque_bytes!(EntryResponse);

struct BytesVisitor;

impl<'de> serde::de::Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            out.push(b);
        }
        Ok(out)
    }
}

/// Serde for a `Vec<u8>` written as one byte string (`#[serde(with = "byte_string")]`):
/// the same bytes in the codec as the derived sequence of `u8`s, without the per-element
/// calls.
pub(crate) mod byte_string {
    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(bytes)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        deserializer.deserialize_byte_buf(super::BytesVisitor)
    }
}

/// Builds a log id (term, leader node, index).
pub fn log_id(term: Term, node: RaftNodeId, index: u64) -> LogId {
    openraft::LogId::new(openraft::CommittedLeaderId::new(term.get(), node), index)
}

/// The [`Term`] of an openraft value. openraft keeps terms as bare `u64`s; this is the one
/// place they become Rill's type.
pub trait RaftTerm {
    fn term(&self) -> Term;
}

impl RaftTerm for LogId {
    /// The term of the leader that appended the entry.
    fn term(&self) -> Term {
        Term(self.leader_id.term)
    }
}

impl RaftTerm for Vote {
    /// The term the vote was cast in.
    fn term(&self) -> Term {
        Term(self.leader_id.term)
    }
}

impl RaftTerm for RaftMetrics {
    /// The term the replica is in.
    fn term(&self) -> Term {
        Term(self.current_term)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_data_round_trips_through_the_codec() {
        let data = EntryData(Bytes::from_static(b"\x00\x01batch"));
        let bytes = rill_protocol::codec::encode(&data).unwrap();
        // format byte + varint length + payload: no per-byte overhead
        assert_eq!(bytes.len(), 1 + 1 + 7);
        let back: EntryData = rill_protocol::codec::decode(&bytes).unwrap();
        assert_eq!(back, data);
    }
}
