//! Built-in functions. Arity was checked at compile time; types are checked here, and a
//! wrong type is an error naming the function and the value.

use std::cmp::Ordering;

use regex::{Regex, RegexBuilder};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::builtins::Builtin;
use crate::calendar::{self, MILLIS_PER_DAY, MILLIS_PER_SECOND};
use crate::eval::{self, Evaluator, Outcome, integer, number};
use crate::value::{self, DateTime, Function, Time, Value, Zone};
use crate::{ranges, temporal, zone};

/// Compiled regular expressions are bounded so a pattern from a model cannot take
/// unbounded memory; the regex crate matches in linear time.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

pub(crate) fn call(evaluator: &mut Evaluator<'_>, builtin: Builtin, args: Vec<Value>) -> Outcome {
    let name = builtin.name();
    let mut args = Arguments { name, args };
    use Builtin as B;
    match builtin {
        B::String => Ok(match args.take(0) {
            Value::Null => Value::Null,
            other => Value::String(other.to_feel_string()),
        }),
        B::Number => match args.take(0) {
            Value::Null => Ok(Value::Null),
            Value::Number(n) => Ok(Value::Number(n)),
            Value::String(text) => parse_number(text.trim())
                .map(Value::Number)
                .ok_or_else(|| format!("{name}(): \"{text}\" is not a number")),
            other => Err(args.wrong(&other, "a string")),
        },
        B::Date => date(&mut args),
        B::Time => time(&mut args),
        B::DateAndTime => date_and_time(&mut args),
        B::Duration => match args.take(0) {
            Value::Null => Ok(Value::Null),
            Value::String(text) => duration(&text),
            other => Err(args.wrong(&other, "a string")),
        },
        B::YearsAndMonthsDuration => {
            let (from, to) = (args.take(0), args.take(1));
            if from == Value::Null || to == Value::Null {
                return Ok(Value::Null);
            }
            let from = args.date_like(from)?;
            let to = args.date_like(to)?;
            Ok(Value::YearMonth(months_between(from, to)))
        }
        B::Not => Ok(match args.take(0) {
            Value::Bool(value) => Value::Bool(!value),
            _ => Value::Null,
        }),
        B::IsDefined => Ok(Value::Bool(args.take(0) != Value::Null)),
        // Camunda 8.8's extension for AI agent tools: the value, unchanged. The other
        // arguments (description, type, schema, options) describe the value to whoever
        // reads the model (the AI Agent connector builds its tool schema from them).
        B::FromAi => Ok(args.take(0)),
        // Camunda's extension: the value, or the default when the value is null.
        B::GetOrElse => Ok(match args.take(0) {
            Value::Null => args.take(1),
            value => value,
        }),
        B::Now => Ok(Value::DateTime(DateTime::at_instant(
            evaluator.now_millis(),
            &Zone::Offset(0),
        )?)),
        B::Today => value::checked_date(evaluator.now_millis().div_euclid(MILLIS_PER_DAY)),
        B::DayOfWeek => args.with_date(0, |days| {
            const NAMES: [&str; 7] = [
                "Monday",
                "Tuesday",
                "Wednesday",
                "Thursday",
                "Friday",
                "Saturday",
                "Sunday",
            ];
            let index = calendar::weekday_from_days(days) as usize - 1;
            Value::String(NAMES[index % 7].to_owned())
        }),
        B::DayOfYear => args.with_date(0, |days| {
            let (year, ..) = calendar::civil_from_days(days);
            number(days - calendar::days_from_civil(year, 1, 1) + 1)
        }),
        B::MonthOfYear => args.with_date(0, |days| {
            const NAMES: [&str; 12] = [
                "January",
                "February",
                "March",
                "April",
                "May",
                "June",
                "July",
                "August",
                "September",
                "October",
                "November",
                "December",
            ];
            let (_, month, _) = calendar::civil_from_days(days);
            Value::String(NAMES[(month as usize + 11) % 12].to_owned())
        }),
        B::WeekOfYear => args.with_date(0, |days| number(iso_week(days))),
        B::LastDayOfMonth => args.with_date(0, |days| {
            let (year, month, _) = calendar::civil_from_days(days);
            Value::Date(calendar::days_from_civil(
                year,
                month,
                calendar::days_in_month(year, month),
            ))
        }),
        B::Substring => substring(&mut args),
        B::StringLength => args.with_string(0, |text| number(text.chars().count() as i64)),
        B::UpperCase => args.with_string(0, |text| Value::String(text.to_uppercase())),
        B::LowerCase => args.with_string(0, |text| Value::String(text.to_lowercase())),
        B::Trim => args.with_string(0, |text| Value::String(text.trim().to_owned())),
        B::IsBlank => args.with_string(0, |text| Value::Bool(text.trim().is_empty())),
        B::ToBase64 => args.with_string(0, |text| Value::String(base64(text.as_bytes()))),
        // Random, but drawn from the environment's seed: the same on every replica.
        B::Uuid => {
            let (high, low) = (evaluator.draw(), evaluator.draw());
            Ok(Value::String(uuid_v4(high, low)))
        }
        B::RandomNumber => {
            // 18 random decimal digits in [0, 1); the modulo bias is below 1e-19.
            const SCALE: u64 = 1_000_000_000_000_000_000;
            let digits = evaluator.draw() % SCALE;
            Ok(Value::Number(
                Decimal::from_i128_with_scale(i128::from(digits), 18).normalize(),
            ))
        }
        B::SubstringBefore => args.with_two_strings(|text, pattern| {
            Value::String(
                text.find(pattern)
                    .map_or(String::new(), |index| text[..index].to_owned()),
            )
        }),
        B::SubstringAfter => args.with_two_strings(|text, pattern| {
            Value::String(text.find(pattern).map_or(String::new(), |index| {
                text[index + pattern.len()..].to_owned()
            }))
        }),
        B::Contains => args.with_two_strings(|text, pattern| Value::Bool(text.contains(pattern))),
        B::StartsWith => {
            args.with_two_strings(|text, pattern| Value::Bool(text.starts_with(pattern)))
        }
        B::EndsWith => args.with_two_strings(|text, pattern| Value::Bool(text.ends_with(pattern))),
        B::Matches => {
            let (Some(text), Some(pattern)) = (args.string_or_null(0)?, args.string_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            let flags = args.optional_string(2)?;
            let regex = compile_regex(name, &pattern, flags.as_deref())?;
            Ok(Value::Bool(regex.is_match(&text)))
        }
        B::Replace => {
            let (Some(text), Some(pattern), Some(replacement)) = (
                args.string_or_null(0)?,
                args.string_or_null(1)?,
                args.string_or_null(2)?,
            ) else {
                return Ok(Value::Null);
            };
            let flags = args.optional_string(3)?;
            let regex = compile_regex(name, &pattern, flags.as_deref())?;
            // Bound the result before building it: each match may add the replacement.
            let mut matches = 0usize;
            for _ in regex.find_iter(&text) {
                evaluator.step()?;
                matches += 1;
            }
            evaluator.charge(
                text.len()
                    .saturating_add(matches.saturating_mul(replacement.len())),
            )?;
            Ok(Value::String(
                regex.replace_all(&text, replacement.as_str()).into_owned(),
            ))
        }
        B::Split => {
            let (Some(text), Some(delimiter)) = (args.string_or_null(0)?, args.string_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            let regex = compile_regex(name, &delimiter, None)?;
            let mut parts = Vec::new();
            for part in regex.split(&text) {
                evaluator.step()?;
                parts.push(Value::String(part.to_owned()));
            }
            Ok(Value::List(parts))
        }
        B::Extract => {
            let (Some(text), Some(pattern)) = (args.string_or_null(0)?, args.string_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            let regex = compile_regex(name, &pattern, None)?;
            let mut found = Vec::new();
            for matched in regex.find_iter(&text) {
                evaluator.step()?;
                found.push(Value::String(matched.as_str().to_owned()));
            }
            Ok(Value::List(found))
        }
        B::StringJoin => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let delimiter = args.optional_string(1)?.unwrap_or_default();
            let prefix = args.optional_string(2)?.unwrap_or_default();
            let suffix = args.optional_string(3)?.unwrap_or_default();
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Null => {}
                    Value::String(text) => parts.push(text),
                    other => return Err(args.wrong(&other, "a list of strings")),
                }
            }
            let size = parts.iter().map(String::len).sum::<usize>()
                + parts.len().saturating_mul(delimiter.len())
                + prefix.len()
                + suffix.len();
            evaluator.charge(size)?;
            Ok(Value::String(format!(
                "{prefix}{}{suffix}",
                parts.join(&delimiter)
            )))
        }
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
        // Camunda's extension: the value if the condition holds, else a failure whose
        // message is the cause (so a model can raise a clear incident).
        B::Assert => {
            let (value, condition) = (args.take(0), args.take(1));
            if condition == Value::Bool(true) {
                return Ok(value);
            }
            Err(match args.take(2) {
                Value::String(cause) => cause,
                Value::Null => format!("the assertion failed for {}", value.describe()),
                other => format!("the assertion failed: {}", other.to_feel_string()),
            })
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
        B::Decimal => round(&mut args, RoundingStrategy::MidpointNearestEven, true),
        B::Floor => round(&mut args, RoundingStrategy::ToNegativeInfinity, false),
        B::Ceiling => round(&mut args, RoundingStrategy::ToPositiveInfinity, false),
        B::RoundUp => round(&mut args, RoundingStrategy::AwayFromZero, true),
        B::RoundDown => round(&mut args, RoundingStrategy::ToZero, true),
        B::RoundHalfUp => round(&mut args, RoundingStrategy::MidpointAwayFromZero, true),
        B::RoundHalfDown => round(&mut args, RoundingStrategy::MidpointTowardZero, true),
        B::Abs => match args.take(0) {
            Value::Null => Ok(Value::Null),
            Value::Number(n) => Ok(Value::Number(n.abs())),
            Value::DayTime(millis) => millis
                .checked_abs()
                .map(Value::DayTime)
                .ok_or_else(|| format!("{name}(): the result is too large")),
            Value::YearMonth(months) => months
                .checked_abs()
                .map(Value::YearMonth)
                .ok_or_else(|| format!("{name}(): the result is too large")),
            other => Err(args.wrong(&other, "a number")),
        },
        B::Modulo => {
            let (Some(dividend), Some(divisor)) =
                (args.number_or_null(0)?, args.number_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            if divisor.is_zero() {
                return Err(format!("{name}(): division by zero"));
            }
            // The result takes the divisor's sign: modulo(-5, 3) = 1.
            let remainder = dividend
                .checked_rem(divisor)
                .ok_or_else(|| format!("{name}(): the result is too large"))?;
            let adjusted = if !remainder.is_zero()
                && (remainder.is_sign_negative() != divisor.is_sign_negative())
            {
                remainder + divisor
            } else {
                remainder
            };
            Ok(Value::Number(adjusted))
        }
        B::Sqrt | B::Log | B::Exp => {
            let Some(n) = args.number_or_null(0)? else {
                return Ok(Value::Null);
            };
            let float = n.to_f64().unwrap_or(f64::NAN);
            let result = match builtin {
                B::Sqrt if n.is_sign_negative() && !n.is_zero() => {
                    return Err(format!("{name}(): {} is negative", n.normalize()));
                }
                B::Log if n <= Decimal::ZERO => {
                    return Err(format!("{name}(): {} is not positive", n.normalize()));
                }
                B::Sqrt => float.sqrt(),
                B::Log => float.ln(),
                _ => float.exp(),
            };
            value::decimal_from_f64(result)
                .map(|d| Value::Number(d.normalize()))
                .ok_or_else(|| format!("{name}(): the result is out of range"))
        }
        B::Odd | B::Even => {
            let Some(n) = args.number_or_null(0)? else {
                return Ok(Value::Null);
            };
            if !n.fract().is_zero() {
                return Err(format!("{name}(): {} is not an integer", n.normalize()));
            }
            let is_even = (n % Decimal::TWO).is_zero();
            Ok(Value::Bool(is_even == (builtin == B::Even)))
        }
        B::GetValue => {
            let context = args.take(0);
            let key = args.take(1);
            match (context, key) {
                (Value::Null, _) | (_, Value::Null) => Ok(Value::Null),
                (Value::Context(entries), Value::String(key)) => Ok(entries
                    .into_iter()
                    .find(|(entry, _)| *entry == key)
                    .map_or(Value::Null, |(_, value)| value)),
                // Camunda's extension: a path of keys into nested contexts.
                (Value::Context(entries), Value::List(keys)) => {
                    let keys = args.keys(keys)?;
                    if keys.is_empty() {
                        return Ok(Value::Null);
                    }
                    let mut current = Value::Context(entries);
                    for key in keys {
                        let Value::Context(entries) = current else {
                            return Ok(Value::Null);
                        };
                        current = match entries.into_iter().find(|(entry, _)| *entry == key) {
                            Some((_, value)) => value,
                            None => return Ok(Value::Null),
                        };
                    }
                    Ok(current)
                }
                (Value::Context(_), other) => {
                    Err(args.wrong(&other, "a string key or a list of keys"))
                }
                (other, _) => Err(args.wrong(&other, "a context")),
            }
        }
        B::GetEntries => match args.take(0) {
            Value::Null => Ok(Value::Null),
            Value::Context(entries) => Ok(Value::List(
                entries
                    .into_iter()
                    .map(|(key, value)| {
                        Value::Context(vec![
                            ("key".to_owned(), Value::String(key)),
                            ("value".to_owned(), value),
                        ])
                    })
                    .collect(),
            )),
            other => Err(args.wrong(&other, "a context")),
        },
        B::ContextPut => {
            let (context, key, value) = (args.take(0), args.take(1), args.take(2));
            match (context, key) {
                (Value::Null, _) | (_, Value::Null) => Ok(Value::Null),
                (Value::Context(entries), Value::String(key)) => {
                    Ok(Value::Context(put_path(entries, &[key], value)))
                }
                // Camunda's extension: a path of keys; missing contexts on the way are
                // created, and an entry on the way that is not a context is replaced.
                (Value::Context(entries), Value::List(keys)) => {
                    let keys = args.keys(keys)?;
                    if keys.is_empty() {
                        return Ok(Value::Null);
                    }
                    if keys.len() > value::MAX_VALUE_NESTING {
                        return Err(format!(
                            "{name}(): the key path has more than {} keys",
                            value::MAX_VALUE_NESTING
                        ));
                    }
                    let result = Value::Context(put_path(entries, &keys, value));
                    if value::too_nested(&result) {
                        return Err(format!(
                            "{name}(): the result is nested more than {} levels deep",
                            value::MAX_VALUE_NESTING
                        ));
                    }
                    Ok(result)
                }
                (Value::Context(_), other) => {
                    Err(args.wrong(&other, "a string key or a list of keys"))
                }
                (other, _) => Err(args.wrong(&other, "a context")),
            }
        }
        // The inverse of `get entries`: a list of {key, value} contexts to a context.
        B::Context => {
            let Some(entries) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let mut context: Vec<(String, Value)> = Vec::new();
            for entry in entries {
                let Value::Context(fields) = &entry else {
                    return Err(args.wrong(&entry, "a list of {key, value} contexts"));
                };
                let field = |name: &str| {
                    fields
                        .iter()
                        .find(|(key, _)| key == name)
                        .map(|(_, value)| value.clone())
                };
                let (Some(Value::String(key)), Some(value)) = (field("key"), field("value")) else {
                    return Err(args.wrong(&entry, "a list of {key, value} contexts"));
                };
                match context.iter_mut().find(|(existing, _)| *existing == key) {
                    Some(existing) => existing.1 = value,
                    None => context.push((key, value)),
                }
            }
            Ok(Value::Context(context))
        }
        B::ContextMerge | B::PutAll => {
            // `put all` is FEEL-Scala's older form: the contexts as separate arguments.
            let contexts = if builtin == B::PutAll {
                args.items()
            } else {
                let Some(contexts) = args.list_or_null(0)? else {
                    return Ok(Value::Null);
                };
                contexts
            };
            let mut merged: Vec<(String, Value)> = Vec::new();
            for context in contexts {
                let Value::Context(entries) = context else {
                    return Err(args.wrong(&context, "a list of contexts"));
                };
                for (key, value) in entries {
                    match merged.iter_mut().find(|(entry, _)| *entry == key) {
                        Some(entry) => entry.1 = value,
                        None => merged.push((key, value)),
                    }
                }
            }
            Ok(Value::Context(merged))
        }
    }
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

/// `sort(list)` in natural order, `sort(list, precedes)` by a function. Reached from the
/// evaluator directly rather than through [`call`], whose frame is large in a debug
/// build: a `precedes` function may sort again, recursively.
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

/// Sets `value` at the key path `keys` (not empty) inside `entries`, keeping the order
/// of existing entries and appending new ones.
fn put_path(
    mut entries: Vec<(String, Value)>,
    keys: &[String],
    value: Value,
) -> Vec<(String, Value)> {
    let Some((key, rest)) = keys.split_first() else {
        return entries;
    };
    let position = entries.iter().position(|(entry, _)| entry == key);
    let value = if rest.is_empty() {
        value
    } else {
        let inner = match position.map(|index| std::mem::take(&mut entries[index].1)) {
            Some(Value::Context(inner)) => inner,
            _ => Vec::new(),
        };
        Value::Context(put_path(inner, rest, value))
    };
    match position {
        Some(index) => entries[index].1 = value,
        None => entries.push((key.clone(), value)),
    }
    entries
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

/// Standard Base64 (RFC 4648, with padding).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let group = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (index, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if index <= chunk.len() {
                text.push(char::from(ALPHABET[(group >> shift) as usize & 63]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// A version-4 (random) UUID from 128 random bits: `xxxxxxxx-xxxx-4xxx-Yxxx-xxxxxxxxxxxx`.
fn uuid_v4(high: u64, low: u64) -> String {
    let high = (high & !0xf000) | 0x4000;
    let low = (low & !(0xc000 << 48)) | (0x8000 << 48);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

fn parse_number(text: &str) -> Option<Decimal> {
    let valid = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    if !valid {
        return None;
    }
    if text.contains(['e', 'E']) {
        Decimal::from_scientific(text).ok()
    } else {
        text.parse().ok()
    }
}

fn compile_regex(name: &str, pattern: &str, flags: Option<&str>) -> Result<Regex, String> {
    let mut builder = RegexBuilder::new(pattern);
    builder
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT);
    for flag in flags.unwrap_or_default().chars() {
        match flag {
            'i' => builder.case_insensitive(true),
            's' => builder.dot_matches_new_line(true),
            'm' => builder.multi_line(true),
            'x' => builder.ignore_whitespace(true),
            other => {
                return Err(format!(
                    "{name}(): unknown regular expression flag '{other}'"
                ));
            }
        };
    }
    builder
        .build()
        .map_err(|error| format!("{name}(): invalid regular expression \"{pattern}\": {error}"))
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

fn substring(args: &mut Arguments) -> Outcome {
    let name = args.name;
    let Some(text) = args.string_or_null(0)? else {
        return Ok(Value::Null);
    };
    let start = args.integer(1)?;
    let length = match args.args.get(2) {
        Some(Value::Null) | None => None,
        Some(_) => Some(args.integer(2)?),
    };
    let chars: Vec<char> = text.chars().collect();
    let count = chars.len() as i64;
    let begin = if start > 0 {
        start - 1
    } else if start < 0 {
        (count + start).max(0)
    } else {
        return Err(format!("{name}(): positions start at 1, not 0"));
    };
    let begin = begin.min(count) as usize;
    let end = match length {
        None => chars.len(),
        Some(length) if length < 0 => {
            return Err(format!("{name}(): the length {length} is negative"));
        }
        Some(length) => (begin as i64).saturating_add(length).min(count) as usize,
    };
    Ok(Value::String(chars[begin..end].iter().collect()))
}

fn round(args: &mut Arguments, strategy: RoundingStrategy, scale_required: bool) -> Outcome {
    let name = args.name;
    let Some(n) = args.number_or_null(0)? else {
        return Ok(Value::Null);
    };
    let scale = if scale_required || args.args.len() > 1 {
        match args.take(1) {
            Value::Null => return Ok(Value::Null),
            Value::Number(scale) => integer(scale).ok_or_else(|| {
                format!(
                    "{name}() expects an integer scale, but got {}",
                    scale.normalize()
                )
            })?,
            other => return Err(args.wrong(&other, "an integer scale")),
        }
    } else {
        0
    };
    if scale < 0 {
        return Err(format!("{name}(): the scale {scale} is negative"));
    }
    // A decimal holds at most 28 fractional digits; a larger scale changes nothing.
    let scale = u32::try_from(scale.min(28)).unwrap_or(28);
    Ok(Value::Number(n.round_dp_with_strategy(scale, strategy)))
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

/// ISO 8601 week number: weeks start on Monday; week 1 holds the year's first Thursday.
fn iso_week(days: i64) -> i64 {
    let weekday = i64::from(calendar::weekday_from_days(days));
    let thursday = days - weekday + 4;
    let (year, ..) = calendar::civil_from_days(thursday);
    (thursday - calendar::days_from_civil(year, 1, 1)) / 7 + 1
}

fn months_between(from: i64, to: i64) -> i64 {
    let (y1, m1, d1) = calendar::civil_from_days(from);
    let (y2, m2, d2) = calendar::civil_from_days(to);
    let mut months = (y2 - y1) * 12 + i64::from(m2) - i64::from(m1);
    if months > 0 && d2 < d1 {
        months -= 1;
    } else if months < 0 && d2 > d1 {
        months += 1;
    }
    months
}

pub(crate) fn duration(text: &str) -> Outcome {
    let parts =
        temporal::parse_duration_parts(text).map_err(|reason| format!("duration(): {reason}"))?;
    match (parts.months, parts.millis) {
        (0, millis) => Ok(Value::DayTime(millis)),
        (months, 0) => Ok(Value::YearMonth(months)),
        _ => Err(format!(
            "duration(): '{text}' mixes years or months with days or time; FEEL has no such duration"
        )),
    }
}

fn date(args: &mut Arguments) -> Outcome {
    let name = args.name;
    if args.args.len() == 3 {
        let (year, month, day) = (args.take(0), args.take(1), args.take(2));
        let (Value::Number(year), Value::Number(month), Value::Number(day)) = (&year, &month, &day)
        else {
            if [&year, &month, &day].contains(&&Value::Null) {
                return Ok(Value::Null);
            }
            return Err(format!("{name}() expects three numbers (year, month, day)"));
        };
        let (Some(year), Some(month), Some(day)) = (integer(*year), integer(*month), integer(*day))
        else {
            return Err(format!("{name}() expects integers for year, month and day"));
        };
        let (Ok(month), Ok(day)) = (u32::try_from(month), u32::try_from(day)) else {
            return Err(format!(
                "{name}(): {year}-{month}-{day} is not a valid date"
            ));
        };
        if !calendar::is_valid_date(year, month, day) {
            return Err(format!(
                "{name}(): {year}-{month}-{day} is not a valid date"
            ));
        }
        return Ok(Value::Date(calendar::days_from_civil(year, month, day)));
    }
    if args.args.len() == 2 {
        return Err(format!("{name}() takes 1 or 3 arguments, but 2 were given"));
    }
    match args.take(0) {
        Value::Null => Ok(Value::Null),
        Value::Date(days) => Ok(Value::Date(days)),
        Value::DateTime(date_time) => Ok(Value::Date(date_time.date())),
        Value::String(text) => {
            let (year, month, day) = temporal::parse_date_parts(text.trim())
                .map_err(|reason| format!("{name}(): {reason}"))?;
            Ok(Value::Date(calendar::days_from_civil(year, month, day)))
        }
        other => Err(args.wrong(&other, "a string")),
    }
}

fn time(args: &mut Arguments) -> Outcome {
    let name = args.name;
    if args.args.len() >= 3 {
        let values: Vec<Value> = (0..args.args.len()).map(|index| args.take(index)).collect();
        if values[..3].contains(&Value::Null) {
            return Ok(Value::Null);
        }
        let (Value::Number(hour), Value::Number(minute), Value::Number(second)) =
            (&values[0], &values[1], &values[2])
        else {
            return Err(format!(
                "{name}() expects numbers for hour, minute and second"
            ));
        };
        let (Some(hour), Some(minute)) = (integer(*hour), integer(*minute)) else {
            return Err(format!("{name}() expects integers for hour and minute"));
        };
        let second_millis = second
            .checked_mul(Decimal::from(1000))
            .and_then(|millis| millis.trunc().to_i64())
            .unwrap_or(-1);
        if !(0..24).contains(&hour)
            || !(0..60).contains(&minute)
            || !(0..60_000).contains(&second_millis)
        {
            return Err(format!(
                "{name}(): {hour}:{minute}:{second} is not a valid time"
            ));
        }
        let offset = match values.get(3) {
            None | Some(Value::Null) => None,
            Some(Value::DayTime(millis)) if millis.abs() <= 18 * 3_600_000 => {
                Some((millis / MILLIS_PER_SECOND) as i32)
            }
            Some(other) => {
                return Err(format!(
                    "{name}() expects an offset duration within 18 hours, but got {}",
                    other.describe()
                ));
            }
        };
        return Ok(Value::Time(Time {
            millis: hour * 3_600_000 + minute * 60_000 + second_millis,
            offset,
        }));
    }
    if args.args.len() == 2 {
        return Err(format!(
            "{name}() takes 1, 3 or 4 arguments, but 2 were given"
        ));
    }
    match args.take(0) {
        Value::Null => Ok(Value::Null),
        Value::Time(time) => Ok(Value::Time(time)),
        Value::DateTime(date_time) => Ok(Value::Time(Time {
            millis: date_time.time_millis(),
            offset: date_time.offset(),
        })),
        Value::Date(_) => Ok(Value::Time(Time {
            millis: 0,
            offset: Some(0),
        })),
        Value::String(text) => {
            time_value(text.trim()).map_err(|reason| format!("{name}(): {reason}"))
        }
        other => Err(args.wrong(&other, "a string")),
    }
}

fn date_and_time(args: &mut Arguments) -> Outcome {
    let name = args.name;
    if args.args.len() == 2 {
        let (date, time) = (args.take(0), args.take(1));
        if let Value::String(zone) = &time {
            return date_time_at_zone(args, date, zone);
        }
        let days = match date {
            Value::Null => return Ok(Value::Null),
            Value::Date(days) => days,
            Value::DateTime(date_time) => date_time.date(),
            other => return Err(args.wrong(&other, "a date")),
        };
        let time = match time {
            Value::Null => return Ok(Value::Null),
            Value::Time(time) => time,
            other => return Err(args.wrong(&other, "a time")),
        };
        let local = days * MILLIS_PER_DAY + time.millis;
        let zone = time.offset.map_or(Zone::Local, Zone::Offset);
        return Ok(Value::DateTime(DateTime::at_local(local, &zone)?));
    }
    match args.take(0) {
        Value::Null => Ok(Value::Null),
        Value::DateTime(date_time) => Ok(Value::DateTime(date_time)),
        Value::Date(days) => Ok(Value::DateTime(DateTime::at_local(
            days * MILLIS_PER_DAY,
            &Zone::Local,
        )?)),
        Value::String(text) => parse_date_time_value(text.trim())
            .map(Value::DateTime)
            .map_err(|reason| format!("{name}(): {reason}")),
        other => Err(args.wrong(&other, "a string")),
    }
}

/// Camunda's `date and time(date, timezone)`: the same instant in another zone (an id
/// like "Europe/Berlin" or an offset like "Z", "+01:00"). A date-time without a zone is
/// taken as UTC, as on Camunda 8's servers, never the host's zone.
fn date_time_at_zone(args: &Arguments, date: Value, zone: &str) -> Outcome {
    let name = args.name;
    let instant = match date {
        Value::Null => return Ok(Value::Null),
        Value::DateTime(date_time) => date_time.instant().unwrap_or(date_time.local),
        other => return Err(args.wrong(&other, "a date and time")),
    };
    let zone = zone.trim();
    let zone = if zone.starts_with(['+', '-']) || zone.eq_ignore_ascii_case("z") {
        Zone::Offset(temporal::parse_offset(zone).map_err(|reason| format!("{name}(): {reason}"))?)
    } else {
        zone::validate(zone).map_err(|reason| format!("{name}(): {reason}"))?;
        Zone::Named(zone.to_owned(), 0)
    };
    DateTime::at_instant(instant, &zone)
        .map(Value::DateTime)
        .map_err(|reason| format!("{name}(): {reason}"))
}

/// The value of a temporal literal `@"…"`: a date, a time, a date-time or a duration,
/// told apart by their form.
pub(crate) fn temporal_literal(text: &str) -> Outcome {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    if body.starts_with('P') {
        return duration(text);
    }
    if text.contains('T') {
        return parse_date_time_value(text).map(Value::DateTime);
    }
    if text.contains(':') {
        return time_value(text);
    }
    let (year, month, day) = temporal::parse_date_parts(text)?;
    Ok(Value::Date(calendar::days_from_civil(year, month, day)))
}

/// A time from its text: `10:00:00`, `10:00:00+01:00` (a zone id is refused: a time of
/// day has no date to resolve the zone's offset at).
fn time_value(text: &str) -> Outcome {
    let parts = temporal::parse_time_parts(text)?;
    if parts.zone.is_some() {
        return Err(format!(
            "a time can't have a zone id (\"{text}\"); use an offset like '+01:00'"
        ));
    }
    Ok(Value::Time(Time {
        millis: parts.millis % MILLIS_PER_DAY,
        offset: parts.offset_seconds,
    }))
}

pub(crate) fn parse_date_time_value(text: &str) -> Result<DateTime, String> {
    if !text.contains('T') {
        let (year, month, day) = temporal::parse_date_parts(text)?;
        let local = calendar::days_from_civil(year, month, day) * MILLIS_PER_DAY;
        return DateTime::at_local(local, &Zone::Local);
    }
    let parts = temporal::parse_date_time_parts(text)?;
    let local = parts.local_millis();
    let zone = match (parts.zone, parts.offset_seconds) {
        (Some(id), offset) => {
            let resolved = DateTime::at_local(local, &Zone::Named(id.clone(), 0))?;
            // An explicit offset picks between the two readings of an overlap.
            if let Some(offset) = offset
                && Some(offset) != resolved.offset()
            {
                let instant = local - i64::from(offset) * MILLIS_PER_SECOND;
                return DateTime::at_instant(instant, &Zone::Named(id, offset));
            }
            return Ok(resolved);
        }
        (None, Some(offset)) => Zone::Offset(offset),
        (None, None) => Zone::Local,
    };
    DateTime::at_local(local, &zone)
}
