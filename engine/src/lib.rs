//! The BPMN engine: parses Camunda Modeler models and runs them deterministically,
//! with Zeebe's semantics, behind the [`rill_engine_api::Engine`] trait.
//!
//! ```text
//! command ─► processor (validate; reject or write the command record)
//!              └─► events ─► appliers ─► state        (the only writes to state)
//!              └─► element behaviours, in-line steps   (more events)
//!         ─► records, response, actions (JobsAvailable, WakeAt, Respond)
//! ```

mod appliers;
mod behavior;
mod budget;
mod commands;
mod context;
pub mod dmn;
mod engine;
mod error;
mod metrics;
pub mod model;
mod model_cache;
mod outcome;
mod parse;
mod query;
mod state;

pub use engine::BpmnEngine;
pub use error::{Error, Result};
pub use parse::{
    Checksum, DeployError, MAX_PROBLEMS, MAX_RESOURCE_BYTES, MAX_SCOPE_DEPTH, MAX_XML_NODES,
    ParsedResource, Problem, parse_bpmn, parse_deployment,
};
// The query contract is rill-protocol's; the history store answers it, the engine
// none (`query.rs`).
pub use query::{Query, QueryResult};
pub use rill_protocol::{ProcessInstanceState, ProcessInstanceView};
