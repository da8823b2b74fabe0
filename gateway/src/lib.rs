//! Rill's gateway: the REST API (Camunda Orchestration Cluster API v2 paths and shapes)
//! and Zeebe's gRPC API (`gateway_protocol.Gateway`) in front of the brokers, routing
//! each request to its partition and long polling for jobs. The brokers are reached
//! through the [`GatewayBackend`] trait, which the command-API client
//! (`rill_client::CommandClient`) implements.

pub mod activation;
pub mod auth;
mod backend;
mod error;
pub mod grpc;
#[cfg(test)]
mod layering;
mod limits;
mod metrics;
mod ops;
mod rest;
mod server;

pub use auth::{Authenticator, Principal};
pub use backend::{
    Answered, BrokerInfo, GatewayBackend, JobsAvailable, JobsNotice, PartitionHealth,
    PartitionInfo, PartitionRole, Topology,
};
pub use error::{GatewayError, Result};
pub use metrics::GatewayMetrics;
pub use ops::ClientError;
pub use rest::{CONTENT_TYPE_PROBLEM, Problem, admit};
pub use server::{GatewayServer, RestServer, router, serve};
