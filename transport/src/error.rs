//! The crate's one error type.

use std::net::SocketAddr;
use std::time::Duration;

use rill_protocol::NodeId;

pub type Result<T, E = TransportError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("invalid transport configuration: {problems}")]
    InvalidConfig { problems: String },

    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },

    #[error("no address is known for node {node}; call Transport::set_peer first")]
    UnknownPeer { node: NodeId },

    #[error("node {node} at {addr} is unreachable: {reason}")]
    Unreachable {
        node: NodeId,
        addr: SocketAddr,
        reason: String,
    },

    #[error("connection to node {node} at {addr} was lost before the response arrived: {reason}")]
    ConnectionLost {
        node: NodeId,
        addr: SocketAddr,
        reason: String,
    },

    #[error("request to node {node} at {addr} got no response within {timeout:?}")]
    Timeout {
        node: NodeId,
        addr: SocketAddr,
        timeout: Duration,
    },

    #[error(
        "back-pressure: {limit} requests to node {node} at {addr} are already in flight \
         and none finished within the request timeout"
    )]
    Backpressure {
        node: NodeId,
        addr: SocketAddr,
        limit: usize,
    },

    #[error("cannot learn which node listens at {addr}: {reason}")]
    Probe { addr: SocketAddr, reason: String },

    #[error("frame of {size} bytes exceeds the maximum frame size of {max} bytes")]
    FrameTooLarge { size: usize, max: usize },

    #[error("peer speaks transport protocol version {theirs}, this node speaks {ours}")]
    VersionMismatch { theirs: u8, ours: u8 },

    /// The version handshake found the peer too old or too new to talk to; `reason`
    /// names both sides' versions.
    #[error("{reason}")]
    Incompatible { reason: String },

    #[error("invalid frame: {reason}")]
    InvalidFrame { reason: String },

    /// The remote handler returned an error; the message is the handler's.
    #[error("remote handler failed: {0}")]
    Remote(String),

    #[error("the transport is shutting down")]
    ShuttingDown,

    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}
