//! Names, paths, filters and contexts: reaching into variables and values.

use rust_decimal::Decimal;
use serde_json::Value as Json;

use super::{Evaluator, Local, Outcome, integer, number, weight};
use crate::ast::Expr;
use crate::calendar::{self, MILLIS_PER_DAY, MILLIS_PER_SECOND};
use crate::value::{self, Value, Zone};

impl<'a> Evaluator<'a> {
    pub(super) fn name(&mut self, name: &str) -> Outcome {
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
    pub(super) fn name_path(&mut self, root: &str, keys: &[String]) -> Outcome {
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
    pub(super) fn filter(&mut self, base: Value, filter: &'a Expr) -> Outcome {
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

    pub(super) fn context(&mut self, entries: &'a [(String, Expr)]) -> Outcome {
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
