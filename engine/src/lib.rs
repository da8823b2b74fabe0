//! The BPMN engine: parses Camunda Modeler models and runs them deterministically,
//! with Zeebe's semantics, behind the [`rill_engine_api::Engine`] trait.

pub mod model;
