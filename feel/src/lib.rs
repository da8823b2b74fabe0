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
//!
//! Semantics follow Camunda 8 (FEEL-Scala) where it differs from the DMN text: a
//! missing variable is `null`, a path on `null` is `null`, ordering comparisons with
//! `null` are `null`. The typed helpers ([`Expression::evaluate_condition`] and
//! friends) turn a `null` where a value is required into an error that says why it
//! was `null` ("no variable found with name 'x'"). See `docs/decisions/feel.md`.

use std::fmt;

use serde_json::{Map, Value as Json};

mod ast;
mod builtins;
mod calendar;
mod eval;
mod functions;
mod lexer;
mod parser;
pub mod temporal;
mod value;
mod zone;

use crate::temporal::{IsoCycle, IsoDuration};
use crate::value::Value;

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

impl FeelError {
    /// The reason alone, without the expression text.
    pub fn reason(&self) -> &str {
        match self {
            FeelError::Syntax { reason, .. } | FeelError::Evaluation { reason, .. } => reason,
        }
    }
}

/// A compiled FEEL expression. Cheap to share: it holds no per-evaluation state.
#[derive(Clone)]
pub struct Expression {
    source: String,
    variable_names: Vec<String>,
    expr: ast::Expr,
}

impl Expression {
    /// Compiles `source` (without the leading `=`). Syntax errors, unknown functions
    /// and wrong argument counts are reported here, with the position where known.
    pub fn compile(source: &str) -> Result<Expression, FeelError> {
        let expr = parser::parse(source).map_err(|reason| FeelError::Syntax {
            source_text: source.to_owned(),
            reason,
        })?;
        let mut names = Vec::new();
        ast::free_names(&expr, &mut Vec::new(), &mut names);
        names.sort();
        names.dedup();
        Ok(Expression {
            source: source.to_owned(),
            variable_names: names,
            expr,
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
    ///
    /// A result of `null` is `Ok(Json::Null)` (missing variables are `null`, as in
    /// Camunda 8). Type errors, invalid arguments and results with no JSON form (a
    /// range) are errors. Numbers that are integral come out as JSON integers;
    /// dates, times, date-times and durations come out as ISO 8601 strings.
    pub fn evaluate(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<Json, FeelError> {
        let (value, _) = self.evaluate_value(variables, now_millis)?;
        value::to_json(&value).map_err(|reason| self.evaluation_error(reason))
    }

    /// For conditions (sequence flows): `true` only if the result is `true`; `null`
    /// (e.g. `x > 5` with no `x`) is not true. Any other type is an error.
    pub fn evaluate_condition(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<bool, FeelError> {
        match self.evaluate_value(variables, now_millis)? {
            (Value::Bool(value), _) => Ok(value),
            (Value::Null, _) => Ok(false),
            (other, warnings) => Err(self.type_error("a boolean", &other, &warnings)),
        }
    }

    /// For job types, message names, error codes: the result must be a string.
    pub fn evaluate_string(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<String, FeelError> {
        match self.evaluate_value(variables, now_millis)? {
            (Value::String(text), _) => Ok(text),
            (other, warnings) => Err(self.type_error("a string", &other, &warnings)),
        }
    }

    /// For correlation keys: a string, or a number converted to its text (`42`, not
    /// `42.0`), as Zeebe accepts.
    pub fn evaluate_correlation_key(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<String, FeelError> {
        match self.evaluate_value(variables, now_millis)? {
            (Value::String(text), _) => Ok(text),
            (value @ Value::Number(_), _) => Ok(value.to_feel_string()),
            (other, warnings) => Err(self.type_error("a string or a number", &other, &warnings)),
        }
    }

    /// For retries and other counts: the result must be an integral number.
    pub fn evaluate_integer(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<i64, FeelError> {
        match self.evaluate_value(variables, now_millis)? {
            (Value::Number(number), warnings) => eval::integer(number)
                .ok_or_else(|| self.type_error("an integer", &Value::Number(number), &warnings)),
            (other, warnings) => Err(self.type_error("an integer", &other, &warnings)),
        }
    }

    /// For timer durations: a duration value (`duration("PT5S")`) or an ISO 8601
    /// duration string (`"PT5S"`).
    pub fn evaluate_duration(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<IsoDuration, FeelError> {
        match self.evaluate_value(variables, now_millis)? {
            (Value::DayTime(millis), _) => Ok(IsoDuration { months: 0, millis }),
            (Value::YearMonth(months), _) => Ok(IsoDuration { months, millis: 0 }),
            (Value::String(text), _) => temporal::parse_duration(&text)
                .map_err(|error| self.evaluation_error(error.reason().to_owned())),
            (other, warnings) => Err(self.type_error("a duration", &other, &warnings)),
        }
    }

    /// For timer dates: a date-time with a zone, or an ISO 8601 string with one; the
    /// result is ms since the epoch.
    pub fn evaluate_date_time(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<i64, FeelError> {
        match self.evaluate_value(variables, now_millis)? {
            (Value::DateTime(date_time), warnings) => date_time.instant().ok_or_else(|| {
                let value = Value::DateTime(date_time);
                self.type_error("a date and time with a zone", &value, &warnings)
            }),
            (Value::String(text), _) => temporal::parse_date_time(&text)
                .map_err(|error| self.evaluation_error(error.reason().to_owned())),
            (other, warnings) => Err(self.type_error("a date and time", &other, &warnings)),
        }
    }

    /// For timer cycles: an ISO 8601 repeating interval string such as `R5/PT10S`.
    pub fn evaluate_cycle(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<IsoCycle, FeelError> {
        match self.evaluate_value(variables, now_millis)? {
            (Value::String(text), _) => temporal::parse_cycle(&text)
                .map_err(|error| self.evaluation_error(error.reason().to_owned())),
            (other, warnings) => {
                Err(self.type_error("a cycle such as \"R5/PT10S\"", &other, &warnings))
            }
        }
    }

    fn evaluate_value(
        &self,
        variables: &Map<String, Json>,
        now_millis: i64,
    ) -> Result<(Value, Vec<String>), FeelError> {
        let mut evaluator = eval::Evaluator::new(variables, now_millis);
        let value = evaluator
            .eval(&self.expr)
            .map_err(|reason| self.evaluation_error(reason))?;
        Ok((value, evaluator.warnings))
    }

    fn evaluation_error(&self, reason: String) -> FeelError {
        FeelError::Evaluation {
            source_text: self.source.clone(),
            reason,
        }
    }

    fn type_error(&self, expected: &str, actual: &Value, warnings: &[String]) -> FeelError {
        let mut reason = format!(
            "expected {expected}, but the result was {}",
            actual.describe()
        );
        if matches!(actual, Value::Null) && !warnings.is_empty() {
            reason = format!("{reason} ({})", warnings.join("; "));
        }
        self.evaluation_error(reason)
    }
}

/// Two expressions are equal when their text is: the text determines the compiled form.
impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for Expression {}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Expression({:?})", self.source)
    }
}
