//! Rill's command-API client: the one way to send commands and queries to partition
//! leaders. It learns the topology from the brokers, routes each request to the leader of
//! its partition (over the transport, or in process to the broker it is embedded in),
//! and says why a request failed in one [`Error`]. The gateway (apart or embedded in a
//! broker, the standalone's included) and a broker's cross-partition sends both use it;
//! each converts [`Error`] once into its own error type.

mod client;
mod types;

pub use client::{CommandClient, LocalCommandApi};
pub use types::{
    Answered, BrokerInfo, Error, JobsAvailable, JobsNotice, PartitionHealth, PartitionInfo,
    PartitionRole, Topology, stream_answer,
};
