//! Evaluates a parsed expression against JSON variables.
//!
//! Camunda 8 (FEEL-Scala) semantics where they differ from the DMN text: a missing
//! variable or context entry is `null` (with a warning kept for error messages), paths
//! and arithmetic on `null` give `null`, ordering comparisons with `null` give `null`.
//! Type mismatches (`"a" - 1`, `1 < "b"`) are errors with a message naming the values.

use std::cmp::Ordering;
use std::sync::Arc;

use rust_decimal::Decimal;
use serde_json::{Map, Value as Json};

use crate::ast::{
    Arguments, ArithmeticOp, CompareOp, Expr, Lambda, RangeExpr, TypeName, UnaryTest,
};
use crate::builtins::Builtin;
use crate::calendar::{self, MILLIS_PER_DAY, MILLIS_PER_SECOND};
use crate::value::{self, DateTime, Function, Range, Time, Value, Zone};
use crate::{Environment, functions};

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

    /// `f(1, 2)`, `f(b: 2, a: 1)`: calls the function value `callee` evaluates to.
    fn apply(&mut self, callee: &'a Expr, arguments: &'a Arguments) -> Outcome {
        let function = match self.eval(callee)? {
            Value::Function(function) => function,
            other => {
                let shown = match callee {
                    Expr::Name(name) => format!("'{name}'"),
                    Expr::NamePath(root, keys) => format!("'{root}.{}'", keys.join(".")),
                    _ => "the called value".to_owned(),
                };
                return Err(format!(
                    "{shown} is not a function but {}",
                    other.describe()
                ));
            }
        };
        let values = match arguments {
            Arguments::Positional(arguments) => {
                let mut values = Vec::with_capacity(arguments.len());
                for argument in arguments {
                    values.push(self.eval(argument)?);
                }
                values
            }
            Arguments::Named(arguments) => {
                let params = &function.lambda.params;
                for (name, _) in arguments {
                    if !params.iter().any(|(param, _)| param == name) {
                        return Err(format!(
                            "{} has no parameter '{name}'",
                            Value::Function(function.clone()).to_feel_string()
                        ));
                    }
                }
                let mut values = Vec::with_capacity(params.len());
                for (param, _) in params {
                    match arguments.iter().find(|(name, _)| name == param) {
                        Some((_, argument)) => values.push(self.eval(argument)?),
                        None => {
                            return Err(format!(
                                "{} is called without its parameter '{param}'",
                                Value::Function(function.clone()).to_feel_string()
                            ));
                        }
                    }
                }
                values
            }
        };
        self.call_function(&function, values)
    }

    /// Runs a function value with `arguments` (in parameter order). The body runs in an
    /// evaluator of its own that sees the parameters, the captured bindings and the
    /// variables, and shares this evaluation's budgets.
    pub(crate) fn call_function(
        &mut self,
        function: &Arc<Function>,
        arguments: Vec<Value>,
    ) -> Outcome {
        let function = Arc::clone(function);
        let params = &function.lambda.params;
        if arguments.len() != params.len() {
            return Err(format!(
                "{} takes {} argument{}, but {} were given",
                Value::Function(function.clone()).to_feel_string(),
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                arguments.len()
            ));
        }
        for ((param, declared), argument) in params.iter().zip(&arguments) {
            if let Some(declared) = declared
                && !matches!(argument, Value::Null)
                && !instance_of(argument, *declared)
            {
                return Err(format!(
                    "the parameter '{param}' of {} expects {}, but got {}",
                    Value::Function(function.clone()).to_feel_string(),
                    declared.name(),
                    argument.describe()
                ));
            }
        }
        self.step()?;
        if self.shared.depth + CALL_COST > MAX_DEPTH {
            return Err(too_deep());
        }
        let mut inner = Evaluator {
            variables: self.variables,
            environment: self.environment,
            locals: Vec::with_capacity(function.captured.len() + params.len()),
            shared: std::mem::take(&mut self.shared),
        };
        inner.shared.depth += CALL_COST;
        for (name, value) in &function.captured {
            inner.locals.push(Local::Named(name, value.clone()));
        }
        for ((param, _), argument) in params.iter().zip(arguments) {
            inner.locals.push(Local::Named(param, argument));
        }
        let result = inner.eval(&function.lambda.body);
        self.shared = std::mem::take(&mut inner.shared);
        self.shared.depth -= CALL_COST;
        let result = result?;
        // A function calling itself could otherwise wrap its result level upon level.
        if value::too_nested(&result) {
            return Err(format!(
                "the result of {} is nested more than {} levels deep",
                Value::Function(function.clone()).to_feel_string(),
                value::MAX_VALUE_NESTING
            ));
        }
        Ok(result)
    }

    fn name(&mut self, name: &str) -> Outcome {
        if let Some(value) = self.local(name) {
            return Ok(value.clone());
        }
        match self.variables.get(name) {
            Some(json) => {
                value::from_json(json).map_err(|reason| format!("variable '{name}': {reason}"))
            }
            None => {
                self.warn(format!("no variable found with name '{name}'"));
                Ok(Value::Null)
            }
        }
    }

    /// `a.b.c`: walks the JSON of a variable directly and converts only what is read.
    fn name_path(&mut self, root: &str, keys: &[String]) -> Outcome {
        if self.local(root).is_some() {
            let mut value = self.name(root)?;
            for key in keys {
                value = self.property(value, key)?;
            }
            return Ok(value);
        }
        let walked = |count: usize| {
            let mut text = root.to_owned();
            for key in &keys[..count] {
                text.push('.');
                text.push_str(key);
            }
            text
        };
        let Some(mut json) = self.variables.get(root) else {
            self.warn(format!("no variable found with name '{root}'"));
            return Ok(Value::Null);
        };
        for (index, key) in keys.iter().enumerate() {
            match json {
                Json::Object(entries) => match entries.get(key.as_str()) {
                    Some(next) => json = next,
                    None => {
                        self.warn(format!(
                            "no context entry found with key '{key}' in '{}'",
                            walked(index)
                        ));
                        return Ok(Value::Null);
                    }
                },
                _ => {
                    let mut value = value::from_json(json)
                        .map_err(|reason| format!("variable '{}': {reason}", walked(index)))?;
                    for key in &keys[index..] {
                        value = self.property(value, key)?;
                    }
                    return Ok(value);
                }
            }
        }
        value::from_json(json)
            .map_err(|reason| format!("variable '{}': {reason}", walked(keys.len())))
    }

    /// `value.key`: a context entry, a projection over a list, or a temporal property.
    pub(crate) fn property(&mut self, value: Value, key: &str) -> Outcome {
        let missing = |evaluator: &mut Self, what: &Value| {
            evaluator.warn(format!("no property '{key}' on {}", what.type_name()));
            Ok(Value::Null)
        };
        match value {
            Value::Null => Ok(Value::Null),
            Value::Context(entries) => match entries.into_iter().find(|(entry, _)| entry == key) {
                Some((_, value)) => Ok(value),
                None => {
                    self.warn(format!("no context entry found with key '{key}'"));
                    Ok(Value::Null)
                }
            },
            Value::List(items) => {
                let mut projected = Vec::with_capacity(items.len());
                for item in items {
                    self.step()?;
                    projected.push(self.property(item, key)?);
                }
                Ok(Value::List(projected))
            }
            Value::Date(days) => {
                let (year, month, day) = calendar::civil_from_days(days);
                Ok(match key {
                    "year" => number(year),
                    "month" => number(i64::from(month)),
                    "day" => number(i64::from(day)),
                    "weekday" => number(i64::from(calendar::weekday_from_days(days))),
                    _ => return missing(self, &Value::Date(days)),
                })
            }
            Value::DateTime(date_time) => {
                let (year, month, day) = calendar::civil_from_days(date_time.date());
                let time = date_time.time_millis();
                Ok(match key {
                    "year" => number(year),
                    "month" => number(i64::from(month)),
                    "day" => number(i64::from(day)),
                    "weekday" => number(i64::from(calendar::weekday_from_days(date_time.date()))),
                    "hour" => number(time / 3_600_000),
                    "minute" => number(time % 3_600_000 / 60_000),
                    "second" => number(time % 60_000 / 1000),
                    "time offset" => match date_time.offset() {
                        Some(offset) => Value::DayTime(i64::from(offset) * MILLIS_PER_SECOND),
                        None => Value::Null,
                    },
                    "timezone" => match &date_time.zone {
                        Zone::Named(id, _) => Value::String(id.clone()),
                        _ => Value::Null,
                    },
                    _ => return missing(self, &Value::DateTime(date_time)),
                })
            }
            Value::Time(time) => Ok(match key {
                "hour" => number(time.millis / 3_600_000),
                "minute" => number(time.millis % 3_600_000 / 60_000),
                "second" => number(time.millis % 60_000 / 1000),
                "time offset" => match time.offset {
                    Some(offset) => Value::DayTime(i64::from(offset) * MILLIS_PER_SECOND),
                    None => Value::Null,
                },
                _ => return missing(self, &Value::Time(time)),
            }),
            Value::DayTime(millis) => Ok(match key {
                "days" => number(millis / MILLIS_PER_DAY),
                "hours" => number(millis % MILLIS_PER_DAY / 3_600_000),
                "minutes" => number(millis % 3_600_000 / 60_000),
                "seconds" => number(millis % 60_000 / 1000),
                _ => return missing(self, &Value::DayTime(millis)),
            }),
            Value::YearMonth(months) => Ok(match key {
                "years" => number(months / 12),
                "months" => number(months % 12),
                _ => return missing(self, &Value::YearMonth(months)),
            }),
            Value::Range(range) => Ok(match key {
                "start" => range.start,
                "end" => range.end,
                "start included" => Value::Bool(range.start_closed),
                "end included" => Value::Bool(range.end_closed),
                _ => return missing(self, &Value::Range(range)),
            }),
            other => missing(self, &other),
        }
    }

    /// `list[condition]` keeps the items for which the condition is true;
    /// `list[n]` picks the n-th item (1-based, negative from the end).
    fn filter(&mut self, base: Value, filter: &'a Expr) -> Outcome {
        let items = match base {
            Value::Null => return Ok(Value::Null),
            Value::List(items) => items,
            // A single value filters like a list of one.
            other => vec![other],
        };
        // An index does not depend on the item: a literal or an expression that
        // evaluates to a number without `item`.
        if let Expr::Number(index) = filter {
            return Ok(pick(&items, *index));
        }
        let mut items = items;
        let mut keep = Vec::with_capacity(items.len());
        for position in 0..items.len() {
            self.step()?;
            // The item moves into the binding and back, so testing it copies nothing.
            let item = std::mem::take(&mut items[position]);
            self.locals.push(Local::Item(item));
            let result = self.eval(filter);
            if let Some(Local::Item(item)) = self.locals.pop() {
                items[position] = item;
            }
            match result? {
                Value::Bool(true) => {
                    self.charge(weight(&items[position]))?;
                    keep.push(true);
                }
                Value::Number(index) if position == 0 => return Ok(pick(&items, index)),
                _ => keep.push(false),
            }
        }
        Ok(Value::List(
            items
                .into_iter()
                .zip(keep)
                .filter_map(|(item, keep)| keep.then_some(item))
                .collect(),
        ))
    }

    fn context(&mut self, entries: &'a [(String, Expr)]) -> Outcome {
        let depth = self.locals.len();
        let mut result = Vec::with_capacity(entries.len());
        for (key, expr) in entries {
            let value = match self.eval(expr) {
                Ok(value) => value,
                Err(error) => {
                    self.locals.truncate(depth);
                    return Err(error);
                }
            };
            // A later entry may wrap an earlier one (`{a: [], b: [a], c: [b], …}`), so
            // nesting grows with the number of entries unless it is checked here.
            if value::too_nested(&value) {
                self.locals.truncate(depth);
                return Err(format!(
                    "the value of the context entry '{key}' is nested more than {} levels deep",
                    value::MAX_VALUE_NESTING
                ));
            }
            // Later entries may refer to earlier ones: `{a: 1, b: a + 1}`.
            self.locals.push(Local::Named(key, value.clone()));
            result.push((key.clone(), value));
        }
        self.locals.truncate(depth);
        Ok(Value::Context(result))
    }

    fn iteration_items(&mut self, source: &'a Expr) -> Result<Vec<Value>, String> {
        match self.eval(source)? {
            Value::List(items) => Ok(items),
            Value::Range(range) => {
                let (Value::Number(start), Value::Number(end)) = (&range.start, &range.end) else {
                    return Err(format!(
                        "can only iterate over a range of numbers, not {}..{}",
                        range.start.describe(),
                        range.end.describe()
                    ));
                };
                let (Some(start), Some(end)) = (integer(*start), integer(*end)) else {
                    return Err("can only iterate over a range of integers".to_owned());
                };
                let count = start.abs_diff(end).saturating_add(1);
                if count > MAX_STEPS {
                    return Err(format!(
                        "the range {start}..{end} has more than {MAX_STEPS} items"
                    ));
                }
                let step: i64 = if end >= start { 1 } else { -1 };
                let mut items = Vec::new();
                let mut current = start;
                loop {
                    self.step()?;
                    items.push(number(current));
                    if current == end {
                        break;
                    }
                    current += step;
                }
                Ok(items)
            }
            Value::Null => Err("can't iterate over null".to_owned()),
            other => Ok(vec![other]),
        }
    }

    fn for_loop(
        &mut self,
        bindings: &'a [(String, Expr)],
        body: &'a Expr,
        results: &mut Vec<Value>,
    ) -> Result<(), String> {
        let Some(((name, source), rest)) = bindings.split_first() else {
            self.step()?;
            let result = self.eval(body)?;
            self.charge(weight(&result))?;
            results.push(result);
            return Ok(());
        };
        let items = self.iteration_items(source)?;
        for item in items {
            self.locals.push(Local::Named(name, item));
            let result = self.for_loop(rest, body, results);
            self.locals.pop();
            result?;
        }
        Ok(())
    }

    fn quantified(
        &mut self,
        every: bool,
        bindings: &'a [(String, Expr)],
        condition: &'a Expr,
    ) -> Outcome {
        let Some(((name, source), rest)) = bindings.split_first() else {
            self.step()?;
            return Ok(Value::Bool(self.eval(condition)? == Value::Bool(true)));
        };
        let items = self.iteration_items(source)?;
        for item in items {
            self.locals.push(Local::Named(name, item));
            let result = self.quantified(every, rest, condition);
            self.locals.pop();
            let satisfied = result? == Value::Bool(true);
            if satisfied != every {
                return Ok(Value::Bool(satisfied));
            }
        }
        Ok(Value::Bool(every))
    }

    /// Binds the input of a decision table's input entry to `?`.
    pub(crate) fn bind_input(&mut self, input: Value) {
        self.locals.push(Local::Named("?", input));
    }

    /// Whether `input` passes one test of an input entry. A test whose value is a
    /// boolean is the answer itself when it reads `?` or the input is not a boolean
    /// (`? > 5`, `contains(?, "x")`); otherwise the input must equal the value, lie in
    /// the range, or be an item of the list.
    pub(crate) fn input_entry_test(
        &mut self,
        input: &Value,
        test: &'a UnaryTest,
        reads_input: bool,
    ) -> Result<bool, String> {
        if let UnaryTest::Value(operand) = test {
            let value = self.eval(operand)?;
            if let Value::Bool(answer) = value
                && (reads_input || !matches!(input, Value::Bool(_)))
            {
                return Ok(answer);
            }
            return Ok(match value {
                Value::Range(range) => range_contains(&range, input)? == Value::Bool(true),
                Value::List(items) if !matches!(input, Value::List(_)) => items
                    .iter()
                    .any(|item| equals(input, item).unwrap_or(Some(false)) == Some(true)),
                other => equals(input, &other).unwrap_or(Some(false)) == Some(true),
            });
        }
        Ok(self.unary_test(input, test)? == Value::Bool(true))
    }

    fn unary_test(&mut self, value: &Value, test: &'a UnaryTest) -> Outcome {
        match test {
            UnaryTest::Compare(op, operand) => {
                let operand = self.eval(operand)?;
                compare(*op, value, &operand)
            }
            UnaryTest::Value(operand) => match self.eval(operand)? {
                Value::Range(range) => range_contains(&range, value),
                // Membership: an item of another type is simply not a match, so
                // `x in (1, "a")` works for numbers and strings alike.
                Value::List(items) if !matches!(value, Value::List(_)) => {
                    for item in &items {
                        self.step()?;
                        if equals(value, item).unwrap_or(Some(false)) == Some(true) {
                            return Ok(Value::Bool(true));
                        }
                    }
                    Ok(Value::Bool(false))
                }
                other => Ok(Value::Bool(
                    equals(value, &other).unwrap_or(Some(false)) == Some(true),
                )),
            },
        }
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

fn pick(items: &[Value], index: Decimal) -> Value {
    let Some(index) = integer(index) else {
        return Value::Null;
    };
    let length = items.len() as i64;
    let position = if index > 0 {
        index - 1
    } else if index < 0 {
        length + index
    } else {
        return Value::Null;
    };
    usize::try_from(position)
        .ok()
        .and_then(|position| items.get(position))
        .cloned()
        .unwrap_or(Value::Null)
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

fn negate(value: Value) -> Outcome {
    match value {
        Value::Null => Ok(Value::Null),
        Value::Number(number) => Ok(Value::Number(-number)),
        Value::DayTime(millis) => millis
            .checked_neg()
            .map(Value::DayTime)
            .ok_or_else(overflow),
        Value::YearMonth(months) => months
            .checked_neg()
            .map(Value::YearMonth)
            .ok_or_else(overflow),
        other => Err(format!("can't negate {}", other.describe())),
    }
}

fn overflow() -> String {
    "the result is too large".to_owned()
}

pub(crate) fn arithmetic(op: ArithmeticOp, left: Value, right: Value) -> Outcome {
    use ArithmeticOp::*;
    use Value::*;
    let mismatch = |left: &Value, right: &Value| {
        let verb = match op {
            Add => "add",
            Subtract => "subtract",
            Multiply => "multiply",
            Divide => "divide",
            Power => "raise",
        };
        let joiner = match op {
            Add | Multiply => "and",
            Subtract => "from",
            Divide => "by",
            Power => "to the power of",
        };
        // "subtract B from A" reads the other way round.
        let (first, second) = if op == Subtract {
            (right, left)
        } else {
            (left, right)
        };
        Err(format!(
            "can't {verb} {} {joiner} {}",
            first.describe(),
            second.describe()
        ))
    };
    match (op, left, right) {
        (_, Null, _) | (_, _, Null) => Ok(Null),
        (Add, Number(a), Number(b)) => a.checked_add(b).map(Number).ok_or_else(overflow),
        (Subtract, Number(a), Number(b)) => a.checked_sub(b).map(Number).ok_or_else(overflow),
        (Multiply, Number(a), Number(b)) => a.checked_mul(b).map(Number).ok_or_else(overflow),
        (Divide, Number(a), Number(b)) => {
            if b.is_zero() {
                return Err(format!("division by zero ({} / 0)", a.normalize()));
            }
            a.checked_div(b).map(Number).ok_or_else(overflow)
        }
        (Power, Number(a), Number(b)) => power(a, b).map(Number),
        (Add, String(a), String(b)) => Ok(String(a + &b)),
        // Durations with durations.
        (Add, DayTime(a), DayTime(b)) => a.checked_add(b).map(DayTime).ok_or_else(overflow),
        (Subtract, DayTime(a), DayTime(b)) => a.checked_sub(b).map(DayTime).ok_or_else(overflow),
        (Add, YearMonth(a), YearMonth(b)) => a.checked_add(b).map(YearMonth).ok_or_else(overflow),
        (Subtract, YearMonth(a), YearMonth(b)) => {
            a.checked_sub(b).map(YearMonth).ok_or_else(overflow)
        }
        (Multiply, DayTime(d), Number(n)) | (Multiply, Number(n), DayTime(d)) => {
            scale_duration(d, n, false).map(DayTime)
        }
        (Multiply, YearMonth(d), Number(n)) | (Multiply, Number(n), YearMonth(d)) => {
            scale_duration(d, n, false).map(YearMonth)
        }
        (Divide, DayTime(d), Number(n)) => scale_duration(d, n, true).map(DayTime),
        (Divide, YearMonth(d), Number(n)) => scale_duration(d, n, true).map(YearMonth),
        (Divide, DayTime(a), DayTime(b)) | (Divide, YearMonth(a), YearMonth(b)) => {
            if b == 0 {
                return Err("division by a zero duration".to_owned());
            }
            Decimal::from(a)
                .checked_div(Decimal::from(b))
                .map(Number)
                .ok_or_else(overflow)
        }
        // Dates and date-times with durations.
        (Add | Subtract, DateTime(date_time), DayTime(millis)) => {
            let millis = if op == Subtract {
                millis.checked_neg().ok_or_else(overflow)?
            } else {
                millis
            };
            shift_date_time(&date_time, millis).map(DateTime)
        }
        (Add, DayTime(millis), DateTime(date_time)) => {
            shift_date_time(&date_time, millis).map(DateTime)
        }
        (Add | Subtract, DateTime(date_time), YearMonth(months)) => {
            let months = if op == Subtract {
                months.checked_neg().ok_or_else(overflow)?
            } else {
                months
            };
            add_months_to_date_time(&date_time, months).map(DateTime)
        }
        (Add, YearMonth(months), DateTime(date_time)) => {
            add_months_to_date_time(&date_time, months).map(DateTime)
        }
        (Add | Subtract, Date(days), DayTime(millis)) => {
            let millis = if op == Subtract {
                millis.checked_neg().ok_or_else(overflow)?
            } else {
                millis
            };
            let shifted = days
                .checked_mul(MILLIS_PER_DAY)
                .and_then(|start| start.checked_add(millis))
                .ok_or_else(overflow)?;
            value::checked_date(shifted.div_euclid(MILLIS_PER_DAY))
        }
        (Add, DayTime(millis), Date(days)) => arithmetic(Add, Date(days), DayTime(millis)),
        (Add | Subtract, Date(days), YearMonth(months)) => {
            let months = if op == Subtract {
                months.checked_neg().ok_or_else(overflow)?
            } else {
                months
            };
            let (year, month, day) = calendar::civil_from_days(days);
            let (year, month, day) = calendar::add_months_to_date(year, month, day, months)
                .ok_or_else(|| "the date is out of range".to_owned())?;
            Ok(Date(calendar::days_from_civil(year, month, day)))
        }
        (Add, YearMonth(months), Date(days)) => arithmetic(Add, Date(days), YearMonth(months)),
        (Add | Subtract, Time(time), DayTime(millis)) => {
            let millis = if op == Subtract {
                -(millis % MILLIS_PER_DAY)
            } else {
                millis % MILLIS_PER_DAY
            };
            Ok(Time(crate::value::Time {
                millis: (time.millis + millis).rem_euclid(MILLIS_PER_DAY),
                offset: time.offset,
            }))
        }
        // Differences.
        (Subtract, DateTime(a), DateTime(b)) => date_time_difference(&a, &b).map(DayTime),
        (Subtract, Date(a), Date(b)) => a
            .checked_sub(b)
            .and_then(|days| days.checked_mul(MILLIS_PER_DAY))
            .map(DayTime)
            .ok_or_else(overflow),
        (Subtract, DateTime(a), Date(b)) => {
            let b = date_at_midnight(b, &a.zone)?;
            date_time_difference(&a, &b).map(DayTime)
        }
        (Subtract, Date(a), DateTime(b)) => {
            let a = date_at_midnight(a, &b.zone)?;
            date_time_difference(&a, &b).map(DayTime)
        }
        (Subtract, Time(a), Time(b)) => {
            if a.offset.is_some() != b.offset.is_some() {
                return Err("can't subtract a time with an offset and one without".to_owned());
            }
            let shift = |time: &crate::value::Time| {
                time.millis - i64::from(time.offset.unwrap_or(0)) * MILLIS_PER_SECOND
            };
            Ok(DayTime(shift(&a) - shift(&b)))
        }
        (_, left, right) => mismatch(&left, &right),
    }
}

fn date_at_midnight(days: i64, zone: &Zone) -> Result<DateTime, String> {
    let local = days.checked_mul(MILLIS_PER_DAY).ok_or_else(overflow)?;
    DateTime::at_local(local, zone)
}

fn date_time_difference(a: &DateTime, b: &DateTime) -> Result<i64, String> {
    match (a.instant(), b.instant()) {
        (Some(a), Some(b)) => a.checked_sub(b).ok_or_else(overflow),
        (None, None) => a.local.checked_sub(b.local).ok_or_else(overflow),
        _ => Err(format!(
            "can't subtract {} from {}: one has a zone and the other has none",
            Value::DateTime(b.clone()).describe(),
            Value::DateTime(a.clone()).describe()
        )),
    }
}

fn shift_date_time(date_time: &DateTime, millis: i64) -> Result<DateTime, String> {
    match (&date_time.zone, date_time.instant()) {
        (Zone::Named(..), Some(instant)) => {
            let instant = instant.checked_add(millis).ok_or_else(overflow)?;
            DateTime::at_instant(instant, &date_time.zone)
        }
        _ => {
            let local = date_time.local.checked_add(millis).ok_or_else(overflow)?;
            DateTime::at_local(local, &date_time.zone)
        }
    }
}

fn add_months_to_date_time(date_time: &DateTime, months: i64) -> Result<DateTime, String> {
    let local = calendar::add_months_to_millis(date_time.local, months)
        .ok_or_else(|| "the date-time is out of range".to_owned())?;
    DateTime::at_local(local, &date_time.zone)
}

fn scale_duration(duration: i64, factor: Decimal, divide: bool) -> Result<i64, String> {
    use rust_decimal::prelude::ToPrimitive;
    let duration = Decimal::from(duration);
    let scaled = if divide {
        if factor.is_zero() {
            return Err("division of a duration by zero".to_owned());
        }
        duration.checked_div(factor)
    } else {
        duration.checked_mul(factor)
    };
    scaled
        .and_then(|value| value.round().to_i64())
        .ok_or_else(overflow)
}

fn power(base: Decimal, exponent: Decimal) -> Result<Decimal, String> {
    use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
    if let Some(exponent) = integer(exponent)
        && exponent.abs() <= 1_000
    {
        let mut result = Decimal::ONE;
        for _ in 0..exponent.abs() {
            result = result.checked_mul(base).ok_or_else(overflow)?;
        }
        if exponent < 0 {
            if result.is_zero() {
                return Err("division by zero (0 to a negative power)".to_owned());
            }
            result = Decimal::ONE.checked_div(result).ok_or_else(overflow)?;
        }
        return Ok(result);
    }
    let (Some(base), Some(exponent)) = (base.to_f64(), exponent.to_f64()) else {
        return Err(overflow());
    };
    let result = base.powf(exponent);
    if result.is_nan() {
        return Err(format!("{base} to the power of {exponent} is not a number"));
    }
    Decimal::from_f64(result).ok_or_else(overflow)
}

fn range_contains(range: &Range, value: &Value) -> Outcome {
    let start_op = if range.start_closed {
        CompareOp::GreaterEqual
    } else {
        CompareOp::Greater
    };
    let end_op = if range.end_closed {
        CompareOp::LessEqual
    } else {
        CompareOp::Less
    };
    let after_start = compare(start_op, value, &range.start)?;
    let before_end = compare(end_op, value, &range.end)?;
    Ok(match (after_start, before_end) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
        (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
        _ => Value::Null,
    })
}

/// `=` and `!=` are defined for every pair (`null = null` is true); ordering
/// comparisons with `null` give `null`; ordering different types is an error.
pub(crate) fn compare(op: CompareOp, left: &Value, right: &Value) -> Outcome {
    match op {
        CompareOp::Equal | CompareOp::NotEqual => {
            let equal = equals(left, right)?;
            Ok(match equal {
                Some(equal) => Value::Bool(equal == (op == CompareOp::Equal)),
                None => Value::Null,
            })
        }
        _ => {
            if matches!(left, Value::Null) || matches!(right, Value::Null) {
                return Ok(Value::Null);
            }
            let ordering = order(left, right)?;
            Ok(Value::Bool(match op {
                CompareOp::Less => ordering == Ordering::Less,
                CompareOp::LessEqual => ordering != Ordering::Greater,
                CompareOp::Greater => ordering == Ordering::Greater,
                _ => ordering != Ordering::Less,
            }))
        }
    }
}

/// Equality; `Ok(None)` where FEEL has no answer (`null` inside a list comparison).
pub(crate) fn equals(left: &Value, right: &Value) -> Result<Option<bool>, String> {
    use Value::*;
    Ok(Some(match (left, right) {
        (Null, Null) => true,
        (Null, _) | (_, Null) => false,
        (Bool(a), Bool(b)) => a == b,
        (Number(a), Number(b)) => a == b,
        (String(a), String(b)) => a == b,
        (List(a), List(b)) => {
            if a.len() != b.len() {
                return Ok(Some(false));
            }
            for (a, b) in a.iter().zip(b) {
                match equals(a, b)? {
                    Some(true) => {}
                    other => return Ok(other),
                }
            }
            true
        }
        (Context(a), Context(b)) => {
            if a.len() != b.len() {
                return Ok(Some(false));
            }
            for (key, a) in a {
                let Some((_, b)) = b.iter().find(|(other, _)| other == key) else {
                    return Ok(Some(false));
                };
                match equals(a, b)? {
                    Some(true) => {}
                    other => return Ok(other),
                }
            }
            true
        }
        (Range(a), Range(b)) => {
            a.start_closed == b.start_closed
                && a.end_closed == b.end_closed
                && equals(&a.start, &b.start)? == Some(true)
                && equals(&a.end, &b.end)? == Some(true)
        }
        (Date(_), Date(_))
        | (Time(_), Time(_))
        | (DateTime(_), DateTime(_))
        | (DayTime(_), DayTime(_))
        | (YearMonth(_), YearMonth(_)) => order(left, right)? == Ordering::Equal,
        _ => {
            return Err(format!(
                "can't compare {} with {}",
                left.describe(),
                right.describe()
            ));
        }
    }))
}

pub(crate) fn order(left: &Value, right: &Value) -> Result<Ordering, String> {
    use Value::*;
    match (left, right) {
        (Number(a), Number(b)) => Ok(a.cmp(b)),
        (String(a), String(b)) => Ok(a.cmp(b)),
        (Date(a), Date(b)) => Ok(a.cmp(b)),
        (DayTime(a), DayTime(b)) => Ok(a.cmp(b)),
        (YearMonth(a), YearMonth(b)) => Ok(a.cmp(b)),
        (Time(a), Time(b)) => time_order(a, b),
        (DateTime(a), DateTime(b)) => match (a.instant(), b.instant()) {
            (Some(a), Some(b)) => Ok(a.cmp(&b)),
            (None, None) => Ok(a.local.cmp(&b.local)),
            _ => Err(format!(
                "can't compare {} with {}: one has a zone and the other has none",
                left.describe(),
                right.describe()
            )),
        },
        _ => Err(format!(
            "can't compare {} with {}",
            left.describe(),
            right.describe()
        )),
    }
}

fn time_order(a: &Time, b: &Time) -> Result<Ordering, String> {
    match (a.offset, b.offset) {
        (Some(offset_a), Some(offset_b)) => {
            let a = a.millis - i64::from(offset_a) * MILLIS_PER_SECOND;
            let b = b.millis - i64::from(offset_b) * MILLIS_PER_SECOND;
            Ok(a.cmp(&b))
        }
        (None, None) => Ok(a.millis.cmp(&b.millis)),
        _ => Err("can't compare a time with an offset and one without".to_owned()),
    }
}
