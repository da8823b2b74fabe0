//! Evaluates a parsed expression against JSON variables.
//!
//! Camunda 8 (FEEL-Scala) semantics where they differ from the DMN text: a missing
//! variable or context entry is `null` (with a warning kept for error messages), paths
//! and arithmetic on `null` give `null`, ordering comparisons with `null` give `null`.
//! Type mismatches (`"a" - 1`, `1 < "b"`) are errors with a message naming the values.

use std::sync::Arc;

use rust_decimal::Decimal;
use serde_json::{Map, Value as Json};

use crate::ast::{ArithmeticOp, CompareOp, Expr, Lambda, RangeExpr, TypeName, UnaryTest};
use crate::builtins::Builtin;
use crate::value::{Function, Range, Value};
use crate::{Environment, functions};

mod access;
mod arithmetic;
mod calls;
mod comparison;
mod iteration;
mod unary_tests;

pub(crate) use arithmetic::arithmetic;
use arithmetic::negate;
pub(crate) use comparison::{compare, equals, order};

/// Upper bound on loop iterations, filter checks and generated list items in one
/// evaluation, so `for i in 1..1000000000 return i` fails fast instead of hanging.
#[cfg(not(fuzzing))]
pub(crate) const MAX_STEPS: u64 = 1_000_000;
/// Under the fuzzer the limit is lower, so inputs that run to it stay quick.
#[cfg(fuzzing)]
pub(crate) const MAX_STEPS: u64 = 10_000;

/// Upper bound on the bytes of strings and lists one evaluation may build (loop
/// results, filter results, concatenations), so `for i in 1..100000 return big` or
/// `replace(big, "", big)` fail with a message instead of exhausting memory.
#[cfg(not(fuzzing))]
pub(crate) const MAX_BYTES: usize = 256 << 20;
#[cfg(fuzzing)]
pub(crate) const MAX_BYTES: usize = 16 << 20;

/// Upper bound on how deeply evaluation recurses (expression nodes inside each other,
/// plus [`CALL_COST`] per function call in progress). The parser's limits keep an
/// expression without function calls far below it; it stops functions that call each
/// other without end (`{f: function(g) g(g), r: f(f)}`) before the stack runs out.
pub(crate) const MAX_DEPTH: usize = 400;

/// What a function call in progress counts towards [`MAX_DEPTH`]: its own frames
/// (the call, the built-in that makes it, the evaluator it runs in) are larger than an
/// expression node's.
const CALL_COST: usize = 8;

pub(crate) type Outcome = Result<Value, String>;

/// A name bound inside the expression. Names borrow from the expression, so binding
/// one per loop iteration allocates nothing.
enum Local<'a> {
    Named(&'a str, Value),
    /// The element a filter is testing: `item`, and for a context also its entries.
    Item(Value),
}

pub(crate) struct Evaluator<'a> {
    variables: &'a Map<String, Json>,
    environment: Environment,
    /// Local bindings, innermost last: loop variables, `item`, context entries,
    /// parameters and captured values of the function being called.
    locals: Vec<Local<'a>>,
    shared: Shared,
}

/// What one evaluation accounts for as a whole, across the functions it calls (each call
/// runs in an evaluator of its own, which takes this over for the call).
#[derive(Default)]
struct Shared {
    /// Why a `null` appeared (missing variables, missing entries), for messages.
    warnings: Vec<String>,
    steps: u64,
    /// Bytes built so far, see [`MAX_BYTES`].
    bytes: usize,
    /// How many lookups found nothing, for `is defined()`.
    missing: u64,
    /// See [`MAX_DEPTH`].
    depth: usize,
    /// Values drawn by `random number()` and `uuid()` so far.
    draws: u64,
}
impl<'a> Evaluator<'a> {
    pub(crate) fn new(variables: &'a Map<String, Json>, environment: Environment) -> Evaluator<'a> {
        Evaluator {
            variables,
            environment,
            locals: Vec::new(),
            shared: Shared::default(),
        }
    }

    pub(crate) fn into_warnings(self) -> Vec<String> {
        self.shared.warnings
    }

    pub(crate) fn now_millis(&self) -> i64 {
        self.environment.now_millis
    }

    /// The next 64 random bits of this evaluation: a SplitMix64 stream seeded by the
    /// environment, so the same entry draws the same values on every replica.
    pub(crate) fn draw(&mut self) -> u64 {
        self.shared.draws += 1;
        crate::mix(
            self.environment
                .seed
                .wrapping_add(self.shared.draws.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        )
    }

    pub(crate) fn step(&mut self) -> Result<(), String> {
        self.shared.steps += 1;
        if self.shared.steps > MAX_STEPS {
            return Err(format!(
                "the expression needs more than {MAX_STEPS} steps (loops, filters or list items)"
            ));
        }
        Ok(())
    }

    /// Accounts for `size` more bytes built by this evaluation.
    pub(crate) fn charge(&mut self, size: usize) -> Result<(), String> {
        self.shared.bytes = self.shared.bytes.saturating_add(size);
        if self.shared.bytes > MAX_BYTES {
            return Err(format!(
                "the expression builds more than {} MiB of strings and lists",
                MAX_BYTES >> 20
            ));
        }
        Ok(())
    }

    fn warn(&mut self, warning: String) {
        self.shared.missing += 1;
        let warnings = &mut self.shared.warnings;
        if warnings.len() < 8 && !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }

    fn local(&self, name: &str) -> Option<&Value> {
        self.locals.iter().rev().find_map(|local| match local {
            Local::Named(bound, value) => (*bound == name).then_some(value),
            Local::Item(item) if name == "item" => Some(item),
            Local::Item(Value::Context(entries)) => entries
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value),
            Local::Item(_) => None,
        })
    }

    pub(crate) fn eval(&mut self, expr: &'a Expr) -> Outcome {
        self.shared.depth += 1;
        let result = if self.shared.depth > MAX_DEPTH {
            Err(too_deep())
        } else {
            self.eval_node(expr)
        };
        self.shared.depth -= 1;
        result
    }

    /// One node. Each kind with work of its own is a method: in a debug build a function's
    /// frame holds every temporary of every arm, and this one is on the path of every
    /// nested node, so keeping it small keeps deep expressions within a thread's stack.
    fn eval_node(&mut self, expr: &'a Expr) -> Outcome {
        match expr {
            Expr::Null | Expr::Omitted => Ok(Value::Null),
            Expr::Bool(value) => Ok(Value::Bool(*value)),
            Expr::Number(number) => Ok(Value::Number(*number)),
            Expr::String(text) => Ok(Value::String(text.clone())),
            Expr::Constant(value) => Ok(value.clone()),
            Expr::Name(name) => self.name(name),
            Expr::NamePath(root, keys) => self.name_path(root, keys),
            Expr::Path(base, key) => self.path(base, key),
            Expr::Filter(base, filter) => self.filter_expr(base, filter),
            Expr::Call(builtin, arguments) => self.call(*builtin, arguments),
            Expr::Apply(callee, arguments) => self.apply(callee, arguments),
            Expr::Function(lambda) => Ok(self.function_value(lambda)),
            Expr::List(items) => self.list(items),
            Expr::Context(entries) => self.context(entries),
            Expr::Range(range) => self.range(range),
            Expr::Negate(operand) => self.negate(operand),
            Expr::Arithmetic(op, left, right) => self.arithmetic(*op, left, right),
            Expr::Compare(op, left, right) => self.compare(*op, left, right),
            Expr::And(left, right) => self.and(left, right),
            Expr::Or(left, right) => self.or(left, right),
            Expr::Between(value, low, high) => self.between(value, low, high),
            Expr::In(value, tests) => self.in_tests(value, tests),
            Expr::InstanceOf(value, type_name) => self.instance_of(value, *type_name),
            Expr::If(condition, then, otherwise) => self.if_then_else(condition, then, otherwise),
            Expr::For(bindings, body) => self.for_expr(bindings, body),
            Expr::Quantified {
                every,
                bindings,
                condition,
            } => self.quantified(*every, bindings, condition),
        }
    }

    fn path(&mut self, base: &'a Expr, key: &str) -> Outcome {
        let base = self.eval(base)?;
        self.property(base, key)
    }

    fn filter_expr(&mut self, base: &'a Expr, filter: &'a Expr) -> Outcome {
        let base = self.eval(base)?;
        self.filter(base, filter)
    }

    fn call(&mut self, builtin: Builtin, arguments: &'a [Expr]) -> Outcome {
        if builtin == Builtin::IsDefined {
            // Defined means found, even if the value found is null.
            let before = self.shared.missing;
            for argument in arguments {
                self.eval(argument)?;
            }
            return Ok(Value::Bool(self.shared.missing == before));
        }
        let mut values = Vec::with_capacity(arguments.len());
        for argument in arguments {
            values.push(self.eval(argument)?);
        }
        if builtin == Builtin::Sort {
            return functions::sort(self, values);
        }
        functions::call(self, builtin, values)
    }

    fn list(&mut self, items: &'a [Expr]) -> Outcome {
        let mut values = Vec::with_capacity(items.len());
        for item in items {
            values.push(self.eval(item)?);
        }
        Ok(Value::List(values))
    }

    fn range(&mut self, range: &'a RangeExpr) -> Outcome {
        let start = self.eval(&range.start)?;
        let end = self.eval(&range.end)?;
        Ok(Value::Range(Box::new(Range {
            start,
            start_closed: range.start_closed,
            end,
            end_closed: range.end_closed,
        })))
    }

    fn negate(&mut self, operand: &'a Expr) -> Outcome {
        negate(self.eval(operand)?)
    }

    fn arithmetic(&mut self, op: ArithmeticOp, left: &'a Expr, right: &'a Expr) -> Outcome {
        let left = self.eval(left)?;
        let right = self.eval(right)?;
        if let (ArithmeticOp::Add, Value::String(a), Value::String(b)) = (op, &left, &right) {
            self.charge(a.len() + b.len())?;
        }
        arithmetic(op, left, right)
    }

    fn compare(&mut self, op: CompareOp, left: &'a Expr, right: &'a Expr) -> Outcome {
        let left = self.eval(left)?;
        let right = self.eval(right)?;
        compare(op, &left, &right)
    }

    fn and(&mut self, left: &'a Expr, right: &'a Expr) -> Outcome {
        let left = self.eval(left)?;
        if left == Value::Bool(false) {
            return Ok(left);
        }
        let right = self.eval(right)?;
        Ok(match (left, right) {
            (_, Value::Bool(false)) => Value::Bool(false),
            (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
            _ => Value::Null,
        })
    }

    fn or(&mut self, left: &'a Expr, right: &'a Expr) -> Outcome {
        let left = self.eval(left)?;
        if left == Value::Bool(true) {
            return Ok(left);
        }
        let right = self.eval(right)?;
        Ok(match (left, right) {
            (_, Value::Bool(true)) => Value::Bool(true),
            (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
            _ => Value::Null,
        })
    }

    fn between(&mut self, value: &'a Expr, low: &'a Expr, high: &'a Expr) -> Outcome {
        let value = self.eval(value)?;
        let low = self.eval(low)?;
        let high = self.eval(high)?;
        let above = compare(CompareOp::GreaterEqual, &value, &low)?;
        let below = compare(CompareOp::LessEqual, &value, &high)?;
        Ok(match (above, below) {
            (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
            (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
            _ => Value::Null,
        })
    }

    fn in_tests(&mut self, value: &'a Expr, tests: &'a [UnaryTest]) -> Outcome {
        let value = self.eval(value)?;
        let mut saw_null = false;
        for test in tests {
            match self.unary_test(&value, test)? {
                Value::Bool(true) => return Ok(Value::Bool(true)),
                Value::Bool(false) => {}
                _ => saw_null = true,
            }
        }
        Ok(if saw_null {
            Value::Null
        } else {
            Value::Bool(false)
        })
    }

    fn instance_of(&mut self, value: &'a Expr, type_name: TypeName) -> Outcome {
        let value = self.eval(value)?;
        Ok(Value::Bool(instance_of(&value, type_name)))
    }

    fn if_then_else(
        &mut self,
        condition: &'a Expr,
        then: &'a Expr,
        otherwise: &'a Expr,
    ) -> Outcome {
        if self.eval(condition)? == Value::Bool(true) {
            self.eval(then)
        } else {
            self.eval(otherwise)
        }
    }

    fn for_expr(&mut self, bindings: &'a [(String, Expr)], body: &'a Expr) -> Outcome {
        let mut results = Vec::new();
        self.for_loop(bindings, body, &mut results)?;
        Ok(Value::List(results))
    }

    /// A function value: the literal plus the values of the enclosing bindings its body
    /// reads (names it reads that are not bound here are variables, read at the call).
    fn function_value(&self, lambda: &Arc<Lambda>) -> Value {
        let captured = lambda
            .free
            .iter()
            .filter_map(|name| self.local(name).map(|value| (name.clone(), value.clone())))
            .collect();
        Value::Function(Arc::new(Function {
            lambda: Arc::clone(lambda),
            captured,
        }))
    }
}

/// Roughly the bytes a value occupies: what copying it into a result costs.
pub(crate) fn weight(value: &Value) -> usize {
    const NODE: usize = 16;
    match value {
        Value::String(text) => NODE + text.len(),
        Value::List(items) => items
            .iter()
            .fold(NODE, |total, item| total.saturating_add(weight(item))),
        Value::Context(entries) => entries.iter().fold(NODE, |total, (key, item)| {
            total.saturating_add(key.len()).saturating_add(weight(item))
        }),
        Value::Range(range) => NODE + weight(&range.start) + weight(&range.end),
        _ => NODE,
    }
}

fn too_deep() -> String {
    format!(
        "the expression is evaluated too deeply (more than {MAX_DEPTH} levels; functions calling each other without end?)"
    )
}

pub(crate) fn number(value: i64) -> Value {
    Value::Number(Decimal::from(value))
}

/// The value as an `i64`, if it is an integer.
pub(crate) fn integer(number: Decimal) -> Option<i64> {
    use rust_decimal::prelude::ToPrimitive;
    if number.fract().is_zero() {
        number.to_i64()
    } else {
        None
    }
}

pub(crate) fn instance_of(value: &Value, type_name: TypeName) -> bool {
    match type_name {
        TypeName::Any => !matches!(value, Value::Null),
        TypeName::Null => matches!(value, Value::Null),
        TypeName::Boolean => matches!(value, Value::Bool(_)),
        TypeName::Number => matches!(value, Value::Number(_)),
        TypeName::String => matches!(value, Value::String(_)),
        TypeName::Date => matches!(value, Value::Date(_)),
        TypeName::Time => matches!(value, Value::Time(_)),
        TypeName::DateTime => matches!(value, Value::DateTime(_)),
        TypeName::DayTimeDuration => matches!(value, Value::DayTime(_)),
        TypeName::YearMonthDuration => matches!(value, Value::YearMonth(_)),
        TypeName::List => matches!(value, Value::List(_)),
        TypeName::Context => matches!(value, Value::Context(_)),
        TypeName::Range => matches!(value, Value::Range(_)),
        TypeName::Function => matches!(value, Value::Function(_)),
    }
}
