//! Temporal functions: `now`, `today` (from the evaluation's environment, never the
//! clock) and the parts of a date (`day of week`, `month of year`, ...).

use super::{Arguments, misrouted};
use crate::builtins::Builtin;
use crate::calendar::{self, MILLIS_PER_DAY};
use crate::eval::{Evaluator, Outcome, number};
use crate::value::{self, DateTime, Value, Zone};

/// Calls `builtin`, one of this family's (see [`super::call`]).
pub(super) fn call(
    evaluator: &mut Evaluator<'_>,
    builtin: Builtin,
    mut args: Arguments,
) -> Outcome {
    use Builtin as B;
    match builtin {
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
        other => Err(misrouted(other)),
    }
}

/// ISO 8601 week number: weeks start on Monday; week 1 holds the year's first Thursday.
fn iso_week(days: i64) -> i64 {
    let weekday = i64::from(calendar::weekday_from_days(days));
    let thursday = days - weekday + 4;
    let (year, ..) = calendar::civil_from_days(thursday);
    (thursday - calendar::days_from_civil(year, 1, 1)) / 7 + 1
}
