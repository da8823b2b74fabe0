//! FEEL expressions for Rill: compile once at deploy time, evaluate many times against
//! JSON variables, deterministically (`now()` comes from the caller, never the clock).
//!
//! API contract (fixed; the implementation behind it is this crate's business):
//! - [`Expression::compile`] takes the text after the leading `=` of a Modeler attribute.
//! - [`Expression::variable_names`] lists the top-level variable names the expression
//!   may read, so the engine fetches only those.
//! - [`Expression::evaluate`] maps JSON in, JSON out. A failed evaluation is an error
//!   with a message a user can act on (the engine turns it into an incident).
//! - Every evaluation takes an [`Environment`]: the clock (`now()`) and the seed of
//!   `random number()` and `uuid()`, both taken from the log entry being applied, so
//!   every replica computes the same value. A plain `i64` (the entry's timestamp)
//!   converts into one.
//! - [`temporal`] parses ISO 8601 durations and date-times for timer definitions.
//! - [`Expression::from_ai_calls`] lists the `fromAi(...)` calls with their arguments as
//!   written, for the tool descriptions an AI agent reads (`adHocSubProcessElements`).
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
mod from_ai;
mod functions;
mod lexer;
mod parser;
mod ranges;
pub mod temporal;
mod unary;
mod value;
mod zone;

pub use crate::from_ai::{FromAiArgument, FromAiCall};
use crate::temporal::{IsoCycle, IsoDuration};
pub use crate::unary::{TestInput, UnaryTests};
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

/// What an evaluation may depend on besides its variables. Both parts must come from
/// the log entry being applied (never the machine's clock or random source), so every
/// replica that applies the entry computes the same result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Environment {
    /// The value of `now()`/`today()`: ms since the Unix epoch, UTC.
    pub now_millis: i64,
    /// Where the values of `random number()` and `uuid()` come from. Evaluations with
    /// the same seed draw the same values, in the same order.
    pub seed: u64,
}

impl Environment {
    /// An environment whose seed is derived from the clock alone. Two evaluations in the
    /// same millisecond then draw the same random numbers and UUIDs; an engine should
    /// use [`Environment::for_entry`].
    pub fn at(now_millis: i64) -> Environment {
        Environment {
            now_millis,
            seed: mix(now_millis as u64),
        }
    }

    /// The environment of the `evaluation`-th expression (counting from 0) evaluated
    /// while applying the log entry at `position` of `partition`, with the entry's
    /// timestamp as `now_millis`. Distinct (partition, position, evaluation) triples give
    /// unrelated seeds, so `uuid()` differs between instances, entries and partitions.
    pub fn for_entry(
        now_millis: i64,
        partition: u32,
        position: u64,
        evaluation: u64,
    ) -> Environment {
        let seed = mix(mix(mix(u64::from(partition)) ^ position) ^ evaluation);
        Environment { now_millis, seed }
    }

    /// The same clock with another seed.
    pub fn with_seed(self, seed: u64) -> Environment {
        Environment { seed, ..self }
    }
}

/// The entry's timestamp alone: see [`Environment::at`].
impl From<i64> for Environment {
    fn from(now_millis: i64) -> Environment {
        Environment::at(now_millis)
    }
}

/// SplitMix64's finalizer: spreads every input bit over the output, so nearby inputs
/// (consecutive positions) give unrelated seeds.
pub(crate) fn mix(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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

    /// The FEEL string literal of `text`: an expression that evaluates to exactly
    /// `text`. Zeebe reads a static input mapping source (`source="noAuth"`) this way.
    /// Its source is the quoted literal, which compiles back to the same expression.
    pub fn string_literal(text: &str) -> Expression {
        let mut source = String::with_capacity(text.len() + 2);
        source.push('"');
        for c in text.chars() {
            if matches!(c, '"' | '\\') {
                source.push('\\');
            }
            source.push(c);
        }
        source.push('"');
        Expression {
            source,
            variable_names: Vec::new(),
            expr: ast::Expr::String(text.to_owned()),
        }
    }

    /// The expression text as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Top-level variable names the expression may read, sorted and de-duplicated.
    pub fn variable_names(&self) -> &[String] {
        &self.variable_names
    }

    /// The `fromAi(...)` calls in the expression, in the order they are written, each
    /// with its arguments as written (a reference, a literal, or something computed).
    /// The arguments of a call are not searched for more calls.
    pub fn from_ai_calls(&self) -> Vec<FromAiCall> {
        from_ai::from_ai_calls(&self.expr)
    }

    /// Evaluates against `variables` in `environment` (or just the entry's timestamp, ms
    /// since the Unix epoch, UTC, as the value of `now()`/`today()`).
    ///
    /// A result of `null` is `Ok(Json::Null)` (missing variables are `null`, as in
    /// Camunda 8). Type errors, invalid arguments and results with no JSON form (a
    /// range) are errors. Numbers that are integral come out as JSON integers;
    /// dates, times, date-times and durations come out as ISO 8601 strings.
    pub fn evaluate(
        &self,
        variables: &Map<String, Json>,
        environment: impl Into<Environment>,
    ) -> Result<Json, FeelError> {
        let (value, _) = self.evaluate_value(variables, environment.into())?;
        value::to_json(&value).map_err(|reason| self.evaluation_error(reason))
    }

    /// For a decision table's input expression: what the rules' input entries test, with
    /// its FEEL type kept (an expression that builds a date gives a date, not its ISO
    /// text), and its JSON form for the evaluation record.
    pub fn evaluate_test_input(
        &self,
        variables: &Map<String, Json>,
        environment: impl Into<Environment>,
    ) -> Result<(TestInput, Json), FeelError> {
        let (value, _) = self.evaluate_value(variables, environment.into())?;
        let json = value::to_json(&value).map_err(|reason| self.evaluation_error(reason))?;
        Ok((TestInput(value), json))
    }

    /// For conditions (sequence flows): `true` only if the result is `true`; `null`
    /// (e.g. `x > 5` with no `x`) is not true. Any other type is an error.
    pub fn evaluate_condition(
        &self,
        variables: &Map<String, Json>,
        environment: impl Into<Environment>,
    ) -> Result<bool, FeelError> {
        match self.evaluate_value(variables, environment.into())? {
            (Value::Bool(value), _) => Ok(value),
            (Value::Null, _) => Ok(false),
            (other, warnings) => Err(self.type_error("a boolean", &other, &warnings)),
        }
    }

    /// For job types, message names, error codes: the result must be a string.
    pub fn evaluate_string(
        &self,
        variables: &Map<String, Json>,
        environment: impl Into<Environment>,
    ) -> Result<String, FeelError> {
        match self.evaluate_value(variables, environment.into())? {
            (Value::String(text), _) => Ok(text),
            (other, warnings) => Err(self.type_error("a string", &other, &warnings)),
        }
    }

    /// For correlation keys: a string, or a number converted to its text (`42`, not
    /// `42.0`), as Zeebe accepts.
    pub fn evaluate_correlation_key(
        &self,
        variables: &Map<String, Json>,
        environment: impl Into<Environment>,
    ) -> Result<String, FeelError> {
        match self.evaluate_value(variables, environment.into())? {
            (Value::String(text), _) => Ok(text),
            (value @ Value::Number(_), _) => Ok(value.to_feel_string()),
            (other, warnings) => Err(self.type_error("a string or a number", &other, &warnings)),
        }
    }

    /// For retries and other counts: the result must be an integral number.
    pub fn evaluate_integer(
        &self,
        variables: &Map<String, Json>,
        environment: impl Into<Environment>,
    ) -> Result<i64, FeelError> {
        match self.evaluate_value(variables, environment.into())? {
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
        environment: impl Into<Environment>,
    ) -> Result<IsoDuration, FeelError> {
        match self.evaluate_value(variables, environment.into())? {
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
        environment: impl Into<Environment>,
    ) -> Result<i64, FeelError> {
        match self.evaluate_value(variables, environment.into())? {
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
        environment: impl Into<Environment>,
    ) -> Result<IsoCycle, FeelError> {
        match self.evaluate_value(variables, environment.into())? {
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
        environment: Environment,
    ) -> Result<(Value, Vec<String>), FeelError> {
        let mut evaluator = eval::Evaluator::new(variables, environment);
        let value = evaluator
            .eval(&self.expr)
            .map_err(|reason| self.evaluation_error(reason))?;
        Ok((value, evaluator.into_warnings()))
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
