//! The BPMN engine: parses Camunda Modeler models and runs them deterministically,
//! with Zeebe's semantics, behind the [`rill_engine_api::Engine`] trait.

pub mod model;
mod parse;

pub use parse::{
    Checksum, DeployError, MAX_PROBLEMS, MAX_RESOURCE_BYTES, MAX_SCOPE_DEPTH, MAX_XML_NODES,
    ParsedResource, Problem, parse_bpmn, parse_deployment,
};
