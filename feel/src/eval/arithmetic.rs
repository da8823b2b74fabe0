//! Arithmetic on numbers, strings, dates, times and durations.

use rust_decimal::Decimal;

use super::{Outcome, integer};
use crate::ast::ArithmeticOp;
use crate::calendar::{self, MILLIS_PER_DAY, MILLIS_PER_SECOND};
use crate::value::{self, DateTime, Value, Zone};

pub(super) fn negate(value: Value) -> Outcome {
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
