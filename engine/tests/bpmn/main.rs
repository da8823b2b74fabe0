//! Parsing and deploy-time validation of BPMN models, driven by the files in
//! `tests/fixtures/`: the Modeler samples, one model per element family
//! (`elements/`), and one model per kind of bad input (`invalid/`).

mod ad_hoc;
mod compensation;
mod elements;
mod extensions;
mod fuzz_seeds;
mod limits;
mod loops;
mod problems;
mod samples;
mod zeebe_accepts;

use rill_engine::model::{Element, ElementIdx, ProcessModel, SequenceFlow, ValueOrExpr};
use rill_engine::{DeployError, parse_bpmn};

fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {full}: {e}"))
}

/// The processes of a fixture that must parse.
fn parse_ok(path: &str) -> Vec<ProcessModel> {
    parse_bpmn(path, &fixture(path)).unwrap_or_else(|e| panic!("{path} should parse:\n{e}"))
}

/// The only process of a fixture that must parse.
fn parse_one(path: &str) -> ProcessModel {
    let mut models = parse_ok(path);
    assert_eq!(models.len(), 1, "{path} has one executable process");
    models.remove(0)
}

/// The problems of a fixture that must be rejected.
fn parse_err(path: &str) -> DeployError {
    match parse_bpmn(path, &fixture(path)) {
        Ok(models) => panic!(
            "{path} should be rejected, parsed {} process(es)",
            models.len()
        ),
        Err(error) => error,
    }
}

fn idx(model: &ProcessModel, id: &str) -> ElementIdx {
    model
        .element_by_id(id)
        .unwrap_or_else(|| panic!("no element '{id}' in {}", model.bpmn_process_id))
}

fn el<'m>(model: &'m ProcessModel, id: &str) -> &'m Element {
    model.element(idx(model, id))
}

fn flow<'m>(model: &'m ProcessModel, id: &str) -> &'m SequenceFlow {
    let flow = model
        .flow_by_id(id)
        .unwrap_or_else(|| panic!("no flow '{id}' in {}", model.bpmn_process_id));
    model.flow(flow)
}

/// Ids of the elements at `indices`.
fn ids(model: &ProcessModel, indices: &[ElementIdx]) -> Vec<String> {
    indices
        .iter()
        .map(|&i| model.element(i).id.clone())
        .collect()
}

/// Ids of the flows leaving (or entering) `id`.
fn outgoing(model: &ProcessModel, id: &str) -> Vec<String> {
    el(model, id)
        .outgoing
        .iter()
        .map(|&f| model.flow(f).id.clone())
        .collect()
}

fn incoming(model: &ProcessModel, id: &str) -> Vec<String> {
    el(model, id)
        .incoming
        .iter()
        .map(|&f| model.flow(f).id.clone())
        .collect()
}

fn static_value<T: Clone + std::fmt::Debug>(value: &ValueOrExpr<T>) -> T {
    match value {
        ValueOrExpr::Static(v) => v.clone(),
        ValueOrExpr::Expr(e) => panic!("expected a static value, found expression {e:?}"),
    }
}

fn expr_source<T: std::fmt::Debug>(value: &ValueOrExpr<T>) -> String {
    match value {
        ValueOrExpr::Expr(e) => e.source().to_owned(),
        ValueOrExpr::Static(v) => panic!("expected an expression, found static {v:?}"),
    }
}
