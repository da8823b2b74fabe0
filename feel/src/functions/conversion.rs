//! Conversion functions: `string`, `number`, and the dates, times, date-times and
//! durations made from text or parts (`date`, `time`, `date and time`, `duration`,
//! `years and months duration`), with the temporal literals `@"…"`.

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use super::{Arguments, misrouted};
use crate::builtins::Builtin;
use crate::calendar::{self, MILLIS_PER_DAY, MILLIS_PER_SECOND};
use crate::eval::{Outcome, integer};
use crate::value::{DateTime, Time, Value, Zone};
use crate::{temporal, zone};

/// Calls `builtin`, one of this family's (see [`super::call`]).
pub(super) fn call(builtin: Builtin, mut args: Arguments) -> Outcome {
    let name = args.name;
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
        other => Err(misrouted(other)),
    }
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
