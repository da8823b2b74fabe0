//! Built-in functions, one module per family. Arity was checked at compile time; types
//! are checked here, and a wrong type is an error naming the function and the value.

use rust_decimal::Decimal;

use crate::builtins::Builtin;
use crate::eval::{Evaluator, Outcome, integer};
use crate::ranges;
use crate::value::Value;

mod boolean;
mod context;
mod conversion;
mod lists;
mod numeric;
mod strings;
mod temporal;

pub(crate) use conversion::temporal_literal;
pub(crate) use lists::sort;

pub(crate) fn call(evaluator: &mut Evaluator<'_>, builtin: Builtin, args: Vec<Value>) -> Outcome {
    let mut args = Arguments {
        name: builtin.name(),
        args,
    };
    use Builtin as B;
    match builtin {
        B::String
        | B::Number
        | B::Date
        | B::Time
        | B::DateAndTime
        | B::Duration
        | B::YearsAndMonthsDuration => conversion::call(builtin, args),
        B::Not | B::IsDefined | B::GetOrElse | B::Assert => boolean::call(builtin, args),
        B::Now
        | B::Today
        | B::DayOfWeek
        | B::DayOfYear
        | B::MonthOfYear
        | B::WeekOfYear
        | B::LastDayOfMonth => temporal::call(evaluator, builtin, args),
        B::Substring
        | B::StringLength
        | B::UpperCase
        | B::LowerCase
        | B::Trim
        | B::IsBlank
        | B::ToBase64
        | B::Uuid
        | B::SubstringBefore
        | B::SubstringAfter
        | B::Contains
        | B::StartsWith
        | B::EndsWith
        | B::Matches
        | B::Replace
        | B::Split
        | B::Extract
        | B::StringJoin => strings::call(evaluator, builtin, args),
        B::RandomNumber
        | B::Decimal
        | B::Floor
        | B::Ceiling
        | B::RoundUp
        | B::RoundDown
        | B::RoundHalfUp
        | B::RoundHalfDown
        | B::Abs
        | B::Modulo
        | B::Sqrt
        | B::Log
        | B::Exp
        | B::Odd
        | B::Even => numeric::call(evaluator, builtin, args),
        B::ListContains
        | B::Count
        | B::Min
        | B::Max
        | B::Sum
        | B::Product
        | B::Mean
        | B::Median
        | B::All
        | B::Any
        | B::Sublist
        | B::Append
        | B::Concatenate
        | B::InsertBefore
        | B::Remove
        | B::Reverse
        | B::IndexOf
        | B::Union
        | B::DistinctValues
        | B::DuplicateValues
        | B::Flatten
        | B::IsEmpty
        | B::Sort
        | B::Stddev
        | B::Mode
        | B::Partition => lists::call(evaluator, builtin, args),
        B::GetValue | B::GetEntries | B::ContextPut | B::Context | B::ContextMerge | B::PutAll => {
            context::call(builtin, args)
        }
        // Camunda 8.8's extension for AI agent tools: the value, unchanged. The other
        // arguments (description, type, schema, options) describe the value to whoever
        // reads the model (the AI Agent connector builds its tool schema from them).
        B::FromAi => Ok(args.take(0)),
        B::Before
        | B::After
        | B::Meets
        | B::MetBy
        | B::Overlaps
        | B::OverlapsBefore
        | B::OverlapsAfter
        | B::Finishes
        | B::FinishedBy
        | B::Includes
        | B::During
        | B::Starts
        | B::StartedBy
        | B::Coincides => ranges::call(builtin, args.take(0), args.take(1)),
    }
}

/// A family's answer to a builtin routed to it by mistake: [`call`] routes each builtin
/// to its family, so this is a broken invariant, reported rather than panicking.
fn misrouted(builtin: Builtin) -> String {
    format!(
        "internal error: {}() reached the wrong family of functions",
        builtin.name()
    )
}

struct Arguments {
    name: &'static str,
    args: Vec<Value>,
}

impl Arguments {
    fn take(&mut self, index: usize) -> Value {
        self.args.get_mut(index).map_or(Value::Null, std::mem::take)
    }

    fn wrong(&self, value: &Value, expected: &str) -> String {
        format!(
            "{}() expects {expected}, but got {}",
            self.name,
            value.describe()
        )
    }

    fn string_or_null(&mut self, index: usize) -> Result<Option<String>, String> {
        match self.take(index) {
            Value::Null => Ok(None),
            Value::String(text) => Ok(Some(text)),
            other => Err(self.wrong(&other, "a string")),
        }
    }

    fn optional_string(&mut self, index: usize) -> Result<Option<String>, String> {
        self.string_or_null(index)
    }

    fn number_or_null(&mut self, index: usize) -> Result<Option<Decimal>, String> {
        match self.take(index) {
            Value::Null => Ok(None),
            Value::Number(n) => Ok(Some(n)),
            other => Err(self.wrong(&other, "a number")),
        }
    }

    fn integer(&mut self, index: usize) -> Result<i64, String> {
        match self.take(index) {
            Value::Number(n) => integer(n).ok_or_else(|| {
                format!(
                    "{}() expects an integer, but got {}",
                    self.name,
                    n.normalize()
                )
            }),
            other => Err(self.wrong(&other, "an integer")),
        }
    }

    /// The keys of a key path: strings only.
    fn keys(&self, keys: Vec<Value>) -> Result<Vec<String>, String> {
        keys.into_iter()
            .map(|key| match key {
                Value::String(key) => Ok(key),
                other => Err(self.wrong(&other, "a list of string keys")),
            })
            .collect()
    }

    fn list_or_null(&mut self, index: usize) -> Result<Option<Vec<Value>>, String> {
        match self.take(index) {
            Value::Null => Ok(None),
            Value::List(items) => Ok(Some(items)),
            other => Err(self.wrong(&other, "a list")),
        }
    }

    /// A single list argument, or the arguments themselves: `max([1, 2])`, `max(1, 2)`.
    fn items(&mut self) -> Vec<Value> {
        if let [Value::List(items)] = self.args.as_mut_slice() {
            return std::mem::take(items);
        }
        std::mem::take(&mut self.args)
    }

    /// The items as numbers; `None` if any is null.
    fn numbers(&mut self) -> Result<Option<Vec<Decimal>>, String> {
        let items = self.items();
        let mut numbers = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::Null => return Ok(None),
                Value::Number(n) => numbers.push(n),
                other => return Err(self.wrong(&other, "numbers")),
            }
        }
        Ok(Some(numbers))
    }

    fn with_string(&mut self, index: usize, f: impl FnOnce(&str) -> Value) -> Outcome {
        Ok(self
            .string_or_null(index)?
            .map_or(Value::Null, |text| f(&text)))
    }

    fn with_two_strings(&mut self, f: impl FnOnce(&str, &str) -> Value) -> Outcome {
        match (self.string_or_null(0)?, self.string_or_null(1)?) {
            (Some(a), Some(b)) => Ok(f(&a, &b)),
            _ => Ok(Value::Null),
        }
    }

    /// Days since the epoch of a date or a date-time argument.
    fn date_like(&self, value: Value) -> Result<i64, String> {
        match value {
            Value::Date(days) => Ok(days),
            Value::DateTime(date_time) => Ok(date_time.date()),
            other => Err(self.wrong(&other, "a date")),
        }
    }

    fn with_date(&mut self, index: usize, f: impl FnOnce(i64) -> Value) -> Outcome {
        match self.take(index) {
            Value::Null => Ok(Value::Null),
            other => Ok(f(self.date_like(other)?)),
        }
    }
}

/// A 1-based (or negative, from the end) position to a 0-based index.
fn position(name: &str, position: i64, length: usize) -> Result<usize, String> {
    let length = length as i64;
    let index = if position > 0 {
        position - 1
    } else if position < 0 {
        length + position
    } else {
        return Err(format!("{name}(): positions start at 1, not 0"));
    };
    if index < 0 || index > length {
        return Err(format!("{name}(): position {position} is outside the list"));
    }
    Ok(index as usize)
}
