//! Rill's internal transport: one persistent, multiplexed TCP connection from each node to
//! each peer, carrying request/response frames tagged with a service id, a partition id and
//! a request id. Used for raft traffic between brokers and for the command API.
//!
//! The wire format, batching and back-pressure policy are described in
//! `docs/decisions/transport.md`.

mod config;
mod error;
mod frame;
mod handler;
mod inbound;
mod metrics;
mod outbound;
mod service;
mod stream;
mod transport;
mod version;
mod writer;

pub use config::TransportConfig;
pub use error::{Result, TransportError};
pub use frame::{FRAME_HEADER_LEN, PROTOCOL_VERSION};
pub use handler::Handler;
pub use metrics::{TransportMetrics, TransportStats};
pub use rill_protocol::{NodeId, PartitionId};
pub use rill_tls::ClusterTls;
pub use service::ServiceId;
pub use transport::Transport;
