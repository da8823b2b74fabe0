//! DMN: decision requirements graphs from Camunda Modeler's `.dmn` files, compiled at
//! deploy onto `rill-feel` and evaluated deterministically. See
//! `docs/decisions/dmn.md`.

mod evaluate;
mod model;
mod parse;
#[cfg(test)]
mod tests;

pub use evaluate::{
    DecisionEvaluation, DecisionFailure, EvaluatedDecision, EvaluatedInput, EvaluatedOutput,
    MatchedRule, evaluate_decision,
};
pub use model::{
    Aggregation, Decision, DecisionLogic, DecisionRequirements, DecisionTable, HitPolicy,
    ResultType, Rule, TableInput, TableOutput,
};
pub use parse::{MAX_DECISIONS, parse_dmn};
