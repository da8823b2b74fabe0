//! Evaluates a parsed expression against JSON variables.
//!
//! Camunda 8 (FEEL-Scala) semantics where they differ from the DMN text: a missing
//! variable or context entry is `null` (with a warning kept for error messages), paths
//! and arithmetic on `null` give `null`, ordering comparisons with `null` give `null`.
//! Type mismatches (`"a" - 1`, `1 < "b"`) are errors with a message naming the values.

use std::cmp::Ordering;

use rust_decimal::Decimal;
use serde_json::{Map, Value as Json};

use crate::ast::{ArithmeticOp, CompareOp, Expr, TypeName, UnaryTest};
use crate::builtins::Builtin;
use crate::calendar::{self, MILLIS_PER_DAY, MILLIS_PER_SECOND};
use crate::functions;
use crate::value::{self, DateTime, Range, Time, Value, Zone};

/// Upper bound on loop iterations, filter checks and generated list items in one
/// evaluation, so `for i in 1..1000000000 return i` fails fast instead of hanging.
#[cfg(not(fuzzing))]
pub(crate) const MAX_STEPS: u64 = 1_000_000;
/// Under the fuzzer the limit is lower, so inputs that run to it stay quick.
#[cfg(fuzzing)]
pub(crate) const MAX_STEPS: u64 = 10_000;

pub(crate) type Outcome = Result<Value, String>;

pub(crate) struct Evaluator<'a> {
    variables: &'a Map<String, Json>,
    pub(crate) now_millis: i64,
    /// Local bindings, innermost last: loop variables, `item`, context entries.
    locals: Vec<(String, Value)>,
    /// Why a `null` appeared (missing variables, missing entries), for messages.
    pub(crate) warnings: Vec<String>,
    steps: u64,
    /// How many lookups found nothing, for `is defined()`.
    missing: u64,
}

impl<'a> Evaluator<'a> {
    pub(crate) fn new(variables: &'a Map<String, Json>, now_millis: i64) -> Evaluator<'a> {
        Evaluator {
            variables,
            now_millis,
            locals: Vec::new(),
            warnings: Vec::new(),
            steps: 0,
            missing: 0,
        }
    }

    pub(crate) fn step(&mut self) -> Result<(), String> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(format!(
                "the expression needs more than {MAX_STEPS} steps (loops, filters or list items)"
            ));
        }
        Ok(())
    }

    fn warn(&mut self, warning: String) {
        self.missing += 1;
        if self.warnings.len() < 8 && !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    fn local(&self, name: &str) -> Option<&Value> {
        self.locals
            .iter()
            .rev()
            .find(|(local, _)| local == name)
            .map(|(_, value)| value)
    }

    pub(crate) fn eval(&mut self, expr: &Expr) -> Outcome {
        match expr {
            Expr::Null => Ok(Value::Null),
            Expr::Bool(value) => Ok(Value::Bool(*value)),
            Expr::Number(number) => Ok(Value::Number(*number)),
            Expr::String(text) => Ok(Value::String(text.clone())),
            Expr::Name(name) => self.name(name),
            Expr::NamePath(root, keys) => self.name_path(root, keys),
            Expr::Path(base, key) => {
                let base = self.eval(base)?;
                self.property(base, key)
            }
            Expr::Filter(base, filter) => {
                let base = self.eval(base)?;
                self.filter(base, filter)
            }
            Expr::Call(Builtin::IsDefined, arguments) => {
                // Defined means found, even if the value found is null.
                let before = self.missing;
                for argument in arguments {
                    self.eval(argument)?;
                }
                Ok(Value::Bool(self.missing == before))
            }
            Expr::Call(builtin, arguments) => {
                let mut values = Vec::with_capacity(arguments.len());
                for argument in arguments {
                    values.push(self.eval(argument)?);
                }
                functions::call(self, *builtin, values)
            }
            Expr::List(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.eval(item)?);
                }
                Ok(Value::List(values))
            }
            Expr::Context(entries) => self.context(entries),
            Expr::Range(range) => {
                let start = self.eval(&range.start)?;
                let end = self.eval(&range.end)?;
                Ok(Value::Range(Box::new(Range {
                    start,
                    start_closed: range.start_closed,
                    end,
                    end_closed: range.end_closed,
                })))
            }
            Expr::Negate(operand) => negate(self.eval(operand)?),
            Expr::Arithmetic(op, left, right) => {
                let left = self.eval(left)?;
                let right = self.eval(right)?;
                arithmetic(*op, left, right)
            }
            Expr::Compare(op, left, right) => {
                let left = self.eval(left)?;
                let right = self.eval(right)?;
                compare(*op, &left, &right)
            }
            Expr::And(left, right) => {
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
            Expr::Or(left, right) => {
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
            Expr::Between(value, low, high) => {
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
            Expr::In(value, tests) => {
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
            Expr::InstanceOf(value, type_name) => {
                let value = self.eval(value)?;
                Ok(Value::Bool(instance_of(&value, *type_name)))
            }
            Expr::If(condition, then, otherwise) => {
                if self.eval(condition)? == Value::Bool(true) {
                    self.eval(then)
                } else {
                    self.eval(otherwise)
                }
            }
            Expr::For(bindings, body) => {
                let mut results = Vec::new();
                self.for_loop(bindings, body, &mut results)?;
                Ok(Value::List(results))
            }
            Expr::Quantified {
                every,
                bindings,
                condition,
            } => self.quantified(*every, bindings, condition),
        }
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
    fn filter(&mut self, base: Value, filter: &Expr) -> Outcome {
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
        let mut kept = Vec::new();
        for (position, item) in items.iter().enumerate() {
            self.step()?;
            let depth = self.locals.len();
            if let Value::Context(entries) = item {
                for (key, value) in entries {
                    self.locals.push((key.clone(), value.clone()));
                }
            }
            self.locals.push(("item".to_owned(), item.clone()));
            let result = self.eval(filter);
            self.locals.truncate(depth);
            match result? {
                Value::Bool(true) => kept.push(item.clone()),
                Value::Number(index) if position == 0 => return Ok(pick(&items, index)),
                _ => {}
            }
        }
        Ok(Value::List(kept))
    }

    fn context(&mut self, entries: &[(String, Expr)]) -> Outcome {
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
            // Later entries may refer to earlier ones: `{a: 1, b: a + 1}`.
            self.locals.push((key.clone(), value.clone()));
            result.push((key.clone(), value));
        }
        self.locals.truncate(depth);
        Ok(Value::Context(result))
    }

    fn iteration_items(&mut self, source: &Expr) -> Result<Vec<Value>, String> {
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
        bindings: &[(String, Expr)],
        body: &Expr,
        results: &mut Vec<Value>,
    ) -> Result<(), String> {
        let Some(((name, source), rest)) = bindings.split_first() else {
            self.step()?;
            results.push(self.eval(body)?);
            return Ok(());
        };
        let items = self.iteration_items(source)?;
        for item in items {
            self.locals.push((name.clone(), item));
            let result = self.for_loop(rest, body, results);
            self.locals.pop();
            result?;
        }
        Ok(())
    }

    fn quantified(
        &mut self,
        every: bool,
        bindings: &[(String, Expr)],
        condition: &Expr,
    ) -> Outcome {
        let Some(((name, source), rest)) = bindings.split_first() else {
            self.step()?;
            return Ok(Value::Bool(self.eval(condition)? == Value::Bool(true)));
        };
        let items = self.iteration_items(source)?;
        for item in items {
            self.locals.push((name.clone(), item));
            let result = self.quantified(every, rest, condition);
            self.locals.pop();
            let satisfied = result? == Value::Bool(true);
            if satisfied != every {
                return Ok(Value::Bool(satisfied));
            }
        }
        Ok(Value::Bool(every))
    }

    fn unary_test(&mut self, value: &Value, test: &UnaryTest) -> Outcome {
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

fn instance_of(value: &Value, type_name: TypeName) -> bool {
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
