//! List functions, the aggregates (`sum`, `mean`, `stddev`, ...) and `sort` among them.

use std::cmp::Ordering;

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use super::{Arguments, misrouted, position};
use crate::builtins::Builtin;
use crate::eval::{self, Evaluator, Outcome, number};
use crate::value::{self, Function, Value};

/// Calls `builtin`, one of this family's (see [`super::call`]).
pub(super) fn call(
    evaluator: &mut Evaluator<'_>,
    builtin: Builtin,
    mut args: Arguments,
) -> Outcome {
    let name = args.name;
    use Builtin as B;
    match builtin {
        B::ListContains => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let wanted = args.take(1);
            for item in &items {
                if eval::equals(item, &wanted).unwrap_or(Some(false)) == Some(true) {
                    return Ok(Value::Bool(true));
                }
            }
            Ok(Value::Bool(false))
        }
        B::Count => Ok(args
            .list_or_null(0)?
            .map_or(Value::Null, |items| number(items.len() as i64))),
        B::Min | B::Max => {
            let items = args.items();
            if items.contains(&Value::Null) {
                return Ok(Value::Null);
            }
            let mut best: Option<Value> = None;
            for item in items {
                best = Some(match best {
                    None => item,
                    Some(current) => {
                        let ordering = eval::order(&item, &current)
                            .map_err(|reason| format!("{name}(): {reason}"))?;
                        let better = if builtin == B::Min {
                            ordering == Ordering::Less
                        } else {
                            ordering == Ordering::Greater
                        };
                        if better { item } else { current }
                    }
                });
            }
            Ok(best.unwrap_or(Value::Null))
        }
        B::Sum | B::Product => {
            let numbers = args.numbers()?;
            let Some(numbers) = numbers else {
                return Ok(Value::Null);
            };
            if numbers.is_empty() {
                return Ok(Value::Null);
            }
            let mut total = if builtin == B::Sum {
                Decimal::ZERO
            } else {
                Decimal::ONE
            };
            for n in numbers {
                let next = if builtin == B::Sum {
                    total.checked_add(n)
                } else {
                    total.checked_mul(n)
                };
                total = next.ok_or_else(|| format!("{name}(): the result is too large"))?;
            }
            Ok(Value::Number(total))
        }
        B::Mean => {
            let Some(numbers) = args.numbers()? else {
                return Ok(Value::Null);
            };
            if numbers.is_empty() {
                return Ok(Value::Null);
            }
            let mut total = Decimal::ZERO;
            for n in &numbers {
                total = total
                    .checked_add(*n)
                    .ok_or_else(|| format!("{name}(): the result is too large"))?;
            }
            total
                .checked_div(Decimal::from(numbers.len() as i64))
                .map(Value::Number)
                .ok_or_else(|| format!("{name}(): the result is too large"))
        }
        B::Median => {
            let Some(mut numbers) = args.numbers()? else {
                return Ok(Value::Null);
            };
            if numbers.is_empty() {
                return Ok(Value::Null);
            }
            numbers.sort();
            let middle = numbers.len() / 2;
            if numbers.len() % 2 == 1 {
                return Ok(Value::Number(numbers[middle]));
            }
            numbers[middle - 1]
                .checked_add(numbers[middle])
                .and_then(|sum| sum.checked_div(Decimal::TWO))
                .map(Value::Number)
                .ok_or_else(|| format!("{name}(): the result is too large"))
        }
        B::All | B::Any => {
            let items = args.items();
            let decisive = builtin == B::Any;
            let mut saw_other = false;
            for item in items {
                match item {
                    Value::Bool(value) if value == decisive => return Ok(Value::Bool(decisive)),
                    Value::Bool(_) => {}
                    _ => saw_other = true,
                }
            }
            Ok(if saw_other {
                Value::Null
            } else {
                Value::Bool(!decisive)
            })
        }
        B::Sublist => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let start = args.integer(1)?;
            let length = match args.args.get(2) {
                Some(_) => Some(args.integer(2)?),
                None => None,
            };
            let begin = position(name, start, items.len())?;
            let end = match length {
                None => items.len(),
                Some(length) if length < 0 => {
                    return Err(format!("{name}(): the length {length} is negative"));
                }
                Some(length) => begin.saturating_add(length as usize).min(items.len()),
            };
            Ok(Value::List(items[begin..end].to_vec()))
        }
        B::Append => {
            let Some(mut items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            items.extend(args.args.drain(1..));
            Ok(Value::List(items))
        }
        B::Concatenate => {
            let mut all = Vec::new();
            for index in 0..args.args.len() {
                let Some(items) = args.list_or_null(index)? else {
                    return Ok(Value::Null);
                };
                all.extend(items);
            }
            Ok(Value::List(all))
        }
        B::InsertBefore => {
            let Some(mut items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let at = position(name, args.integer(1)?, items.len())?;
            items.insert(at, args.take(2));
            Ok(Value::List(items))
        }
        B::Remove => {
            let Some(mut items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let at = position(name, args.integer(1)?, items.len())?;
            if at >= items.len() {
                return Err(format!("{name}(): position {} is outside the list", at + 1));
            }
            items.remove(at);
            Ok(Value::List(items))
        }
        B::Reverse => Ok(args.list_or_null(0)?.map_or(Value::Null, |mut items| {
            items.reverse();
            Value::List(items)
        })),
        B::IndexOf => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let wanted = args.take(1);
            let positions = items
                .iter()
                .enumerate()
                .filter(|(_, item)| eval::equals(item, &wanted).unwrap_or(None) == Some(true))
                .map(|(index, _)| number(index as i64 + 1))
                .collect();
            Ok(Value::List(positions))
        }
        B::Union | B::DistinctValues => {
            let mut all = Vec::new();
            for index in 0..args.args.len() {
                let Some(items) = args.list_or_null(index)? else {
                    return Ok(Value::Null);
                };
                all.extend(items);
            }
            let mut distinct: Vec<Value> = Vec::new();
            for item in all {
                evaluator.step()?;
                if !contains(&distinct, &item) {
                    distinct.push(item);
                }
            }
            Ok(Value::List(distinct))
        }
        B::DuplicateValues => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let mut seen: Vec<Value> = Vec::new();
            let mut duplicates: Vec<Value> = Vec::new();
            for item in items {
                evaluator.step()?;
                if contains(&seen, &item) {
                    if !contains(&duplicates, &item) {
                        duplicates.push(item);
                    }
                } else {
                    seen.push(item);
                }
            }
            Ok(Value::List(duplicates))
        }
        B::Flatten => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let mut flat = Vec::new();
            flatten_into(evaluator, items, &mut flat)?;
            Ok(Value::List(flat))
        }
        B::IsEmpty => Ok(args
            .list_or_null(0)?
            .map_or(Value::Null, |items| Value::Bool(items.is_empty()))),
        B::Sort => sort(evaluator, args.args),
        B::Stddev => {
            let Some(numbers) = args.numbers()? else {
                return Ok(Value::Null);
            };
            // The sample standard deviation: undefined for fewer than two values.
            if numbers.len() < 2 {
                return Ok(Value::Null);
            }
            let too_large = || format!("{name}(): the result is too large");
            let count = Decimal::from(numbers.len() as i64);
            let mut total = Decimal::ZERO;
            for n in &numbers {
                total = total.checked_add(*n).ok_or_else(too_large)?;
            }
            let mean = total.checked_div(count).ok_or_else(too_large)?;
            let mut squares = Decimal::ZERO;
            for n in &numbers {
                let deviation = n.checked_sub(mean).ok_or_else(too_large)?;
                let square = deviation.checked_mul(deviation).ok_or_else(too_large)?;
                squares = squares.checked_add(square).ok_or_else(too_large)?;
            }
            let variance = squares
                .checked_div(count - Decimal::ONE)
                .ok_or_else(too_large)?;
            let root = variance.to_f64().map(f64::sqrt).unwrap_or(f64::NAN);
            value::decimal_from_f64(root)
                .map(|d| Value::Number(d.normalize()))
                .ok_or_else(too_large)
        }
        B::Mode => {
            let Some(mut numbers) = args.numbers()? else {
                return Ok(Value::Null);
            };
            // The most frequent values, ascending: sorted, each run's length counts.
            numbers.sort();
            let mut best = 0;
            let mut modes: Vec<Decimal> = Vec::new();
            let mut start = 0;
            while start < numbers.len() {
                evaluator.step()?;
                let run = numbers[start..]
                    .iter()
                    .take_while(|n| **n == numbers[start])
                    .count();
                if run > best {
                    best = run;
                    modes.clear();
                }
                if run == best {
                    modes.push(numbers[start]);
                }
                start += run;
            }
            Ok(Value::List(modes.into_iter().map(Value::Number).collect()))
        }
        // Camunda's extension: consecutive sublists of `size` items.
        B::Partition => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let size = args.integer(1)?;
            let Ok(size) = usize::try_from(size) else {
                return Err(format!("{name}(): the size {size} is not positive"));
            };
            if size == 0 {
                return Err(format!("{name}(): the size 0 is not positive"));
            }
            Ok(Value::List(
                items
                    .chunks(size)
                    .map(|chunk| Value::List(chunk.to_vec()))
                    .collect(),
            ))
        }
        other => Err(misrouted(other)),
    }
}

/// `sort(list)` in natural order, `sort(list, precedes)` by a function. Reached from the
/// evaluator directly rather than through [`super::call`] and this family's [`call`],
/// whose frames are large in a debug build: a `precedes` function may sort again,
/// recursively.
pub(crate) fn sort(evaluator: &mut Evaluator<'_>, values: Vec<Value>) -> Outcome {
    let name = Builtin::Sort.name();
    let mut args = Arguments { name, args: values };
    let Some(mut items) = args.list_or_null(0)? else {
        return Ok(Value::Null);
    };
    if args.args.len() == 2 {
        return match args.take(1) {
            Value::Function(precedes) => sort_with(evaluator, items, &precedes).map(Value::List),
            other => Err(args.wrong(&other, "a function as 'precedes'")),
        };
    }
    // Check every pair the sort will meet is comparable before sorting.
    for pair in items.windows(2) {
        eval::order(&pair[0], &pair[1]).map_err(|reason| format!("{name}(): {reason}"))?;
    }
    let mut failure = None;
    items.sort_by(|a, b| {
        eval::order(a, b).unwrap_or_else(|reason| {
            failure = Some(reason);
            Ordering::Equal
        })
    });
    match failure {
        Some(reason) => Err(format!("{name}(): {reason}")),
        None => Ok(Value::List(items)),
    }
}

/// Sorts by a FEEL function `precedes(a, b)` that is true when `a` comes first. A merge
/// sort: it needs no consistent order from the function (the standard library's sorts
/// may panic on one that is not), keeps equal items in order, and makes O(n log n) calls.
fn sort_with(
    evaluator: &mut Evaluator<'_>,
    mut items: Vec<Value>,
    precedes: &std::sync::Arc<Function>,
) -> Result<Vec<Value>, String> {
    if items.len() < 2 {
        return Ok(items);
    }
    let right = items.split_off(items.len() / 2);
    let left = sort_with(evaluator, items, precedes)?;
    let right = sort_with(evaluator, right, precedes)?;
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    while let (Some(a), Some(b)) = (left.peek(), right.peek()) {
        // The right item goes first only if it strictly precedes: equal items keep
        // their order.
        let arguments = vec![b.clone(), a.clone()];
        let right_first = match evaluator.call_function(precedes, arguments)? {
            Value::Bool(value) => value,
            Value::Null => false,
            other => {
                return Err(format!(
                    "sort(): the precedes function must return a boolean, but returned {}",
                    other.describe()
                ));
            }
        };
        let next = if right_first {
            right.next()
        } else {
            left.next()
        };
        merged.extend(next);
    }
    merged.extend(left);
    merged.extend(right);
    Ok(merged)
}

fn contains(items: &[Value], wanted: &Value) -> bool {
    items
        .iter()
        .any(|item| eval::equals(item, wanted).unwrap_or(None) == Some(true))
}

fn flatten_into(
    evaluator: &mut Evaluator<'_>,
    items: Vec<Value>,
    flat: &mut Vec<Value>,
) -> Result<(), String> {
    for item in items {
        evaluator.step()?;
        match item {
            Value::List(inner) => flatten_into(evaluator, inner, flat)?,
            other => flat.push(other),
        }
    }
    Ok(())
}
