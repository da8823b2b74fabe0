//! FEEL expressions for Rill: compile once at deploy time, evaluate many times against
//! JSON variables, deterministically (`now()` comes from the caller, never the clock).
//!
//! API contract (fixed; the implementation behind it is this crate's business):
//! - [`Expression::compile`] takes the text after the leading `=` of a Modeler attribute.
//! - [`Expression::variable_names`] lists the top-level variable names the expression
//!   may read, so the engine fetches only those.
//! - [`Expression::evaluate`] maps JSON in, JSON out. A failed evaluation is an error
//!   with a message a user can act on (the engine turns it into an incident).
//! - [`temporal`] parses ISO 8601 durations and date-times for timer definitions.

use std::fmt;

pub mod temporal;

/// Why an expression could not be compiled or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeelError {
    /// The text is not a valid FEEL expression.
    #[error("invalid FEEL expression '{source_text}': {reason}")]
    Syntax { source_text: String, reason: String },
    /// Evaluation failed (e.g. a missing variable used in arithmetic, a wrong type).
    #[error("failed to evaluate FEEL expression '{source_text}': {reason}")]
    Evaluation { source_text: String, reason: String },
}

/// A compiled FEEL expression.
#[derive(Clone)]
pub struct Expression {
    source: String,
    variable_names: Vec<String>,
}

impl Expression {
    /// Compiles `source` (without the leading `=`).
    pub fn compile(source: &str) -> Result<Expression, FeelError> {
        Err(FeelError::Syntax {
            source_text: source.to_owned(),
            reason: "FEEL is not implemented yet".to_owned(),
        })
    }

    /// The expression text as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Top-level variable names the expression may read, sorted and de-duplicated.
    pub fn variable_names(&self) -> &[String] {
        &self.variable_names
    }

    /// Evaluates against `variables`, with `now_millis` (ms since the Unix epoch, UTC)
    /// as the value of `now()`/`today()`.
    pub fn evaluate(
        &self,
        variables: &serde_json::Map<String, serde_json::Value>,
        now_millis: i64,
    ) -> Result<serde_json::Value, FeelError> {
        let _ = (variables, now_millis);
        Err(FeelError::Evaluation {
            source_text: self.source.clone(),
            reason: "FEEL is not implemented yet".to_owned(),
        })
    }
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Expression({:?})", self.source)
    }
}
