//! Cron schedules (`backup.schedule`): five fields (minute hour day-of-month month
//! day-of-week) or six with seconds first, as Spring's cron expressions (which Camunda's
//! settings use) have them. Times are UTC.
//!
//! A field is `*` (or `?`), a number, a range `a-b`, a step `*/n`, `a/n` or `a-b/n`, or
//! a comma-separated list of those; months and days of the week also by their English
//! three-letter names. Sunday is 0 or 7. When both day fields are restricted, a day
//! matching either runs (as classic cron does).

use rill_protocol::civil_from_days;

/// A parsed schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronSchedule {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    /// Whether each day field was restricted (not `*`).
    day_of_month_restricted: bool,
    day_of_week_restricted: bool,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// A day has this many seconds; 1970-01-01 was a Thursday.
const DAY: i64 = 86_400;
const THURSDAY: i64 = 4;

impl CronSchedule {
    /// Parses `text`; the error says which field is wrong and why.
    pub fn parse(text: &str) -> Result<CronSchedule, String> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let fields: Vec<&str> = match fields.len() {
            5 => std::iter::once("0").chain(fields).collect(),
            6 => fields,
            n => {
                return Err(format!(
                    "`{text}` has {n} fields; a schedule has 5 (minute hour day-of-month \
                     month day-of-week) or 6 (seconds first), e.g. `0 2 * * *` for 02:00 UTC \
                     every day"
                ));
            }
        };
        let field = |index: usize, name: &str, min: u32, max: u32, names: &[&str]| {
            parse_field(fields[index], min, max, names)
                .map_err(|e| format!("`{text}`: the {name} field `{}` {e}", fields[index]))
        };
        let mut days_of_week = field(5, "day-of-week", 0, 7, &WEEKDAYS)?;
        // 7 is Sunday too.
        if days_of_week & (1 << 7) != 0 {
            days_of_week = (days_of_week & !(1 << 7)) | 1;
        }
        Ok(CronSchedule {
            seconds: field(0, "seconds", 0, 59, &[])?,
            minutes: field(1, "minute", 0, 59, &[])?,
            hours: field(2, "hour", 0, 23, &[])?,
            days_of_month: field(3, "day-of-month", 1, 31, &[])?,
            months: field(4, "month", 1, 12, &MONTHS)?,
            days_of_week,
            day_of_month_restricted: !is_any(fields[3]),
            day_of_week_restricted: !is_any(fields[5]),
        })
    }

    /// The first time after `epoch_seconds` the schedule runs (epoch seconds, UTC);
    /// `None` if none comes within five years (e.g. 31 February).
    pub fn next_after(&self, epoch_seconds: i64) -> Option<i64> {
        let start = epoch_seconds + 1;
        let first_day = start.div_euclid(DAY);
        let first_second = start.rem_euclid(DAY);
        for day in first_day..first_day + 5 * 366 {
            if !self.runs_on(day) {
                continue;
            }
            let from = if day == first_day { first_second } else { 0 };
            if let Some(second) = self.first_time_of_day(from) {
                return Some(day * DAY + second);
            }
        }
        None
    }

    fn runs_on(&self, day: i64) -> bool {
        let (_, month, day_of_month) = civil_from_days(day);
        if self.months & (1 << month) == 0 {
            return false;
        }
        let weekday = (day + THURSDAY).rem_euclid(7);
        let by_month_day = self.days_of_month & (1 << day_of_month) != 0;
        let by_weekday = self.days_of_week & (1 << weekday) != 0;
        match (self.day_of_month_restricted, self.day_of_week_restricted) {
            (true, true) => by_month_day || by_weekday,
            _ => by_month_day && by_weekday,
        }
    }

    /// The first second of a day at or after `from` (seconds into the day) that matches.
    fn first_time_of_day(&self, from: i64) -> Option<i64> {
        for hour in bits(self.hours) {
            for minute in bits(self.minutes) {
                let base = i64::from(hour) * 3600 + i64::from(minute) * 60;
                if base + 59 < from {
                    continue;
                }
                if let Some(second) = bits(self.seconds).find(|s| base + i64::from(*s) >= from) {
                    return Some(base + i64::from(second));
                }
            }
        }
        None
    }
}

impl std::fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |mask: u64| {
            bits(mask)
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(
            f,
            "{} {} {} {} {} {}",
            list(self.seconds),
            list(self.minutes),
            list(self.hours),
            list(self.days_of_month),
            list(self.months),
            list(self.days_of_week)
        )
    }
}

fn is_any(field: &str) -> bool {
    field == "*" || field == "?"
}

fn bits(mask: u64) -> impl Iterator<Item = u32> {
    (0..64).filter(move |b| mask & (1 << b) != 0)
}

/// A field as a bit mask of the values it allows.
fn parse_field(field: &str, min: u32, max: u32, names: &[&str]) -> Result<u64, String> {
    let value = |text: &str| -> Result<u32, String> {
        if let Some(index) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
            // Months count from 1, weekdays from 0 (Sunday).
            return Ok(index as u32 + if names.len() == 12 { 1 } else { 0 });
        }
        let number: u32 = text
            .parse()
            .map_err(|_| format!("has `{text}`, which is not a number from {min} to {max}"))?;
        if number < min || number > max {
            return Err(format!("has {number}, outside {min}-{max}"));
        }
        Ok(number)
    };
    let mut mask = 0u64;
    for part in field.split(',') {
        if part.is_empty() {
            return Err("has an empty list element".to_owned());
        }
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| format!("has the step `{step}`, not a number above 0"))?;
                (range, step)
            }
            None => (part, 1),
        };
        let (low, high) = if is_any(range) {
            (min, max)
        } else if let Some((low, high)) = range.split_once('-') {
            (value(low)?, value(high)?)
        } else {
            let low = value(range)?;
            // `a/n` runs from a to the end.
            (low, if part.contains('/') { max } else { low })
        };
        if low > high {
            return Err(format!("has the range {low}-{high}, which is empty"));
        }
        let mut v = low;
        while v <= high {
            mask |= 1 << v;
            v += step;
        }
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Epoch seconds of a UTC time written as RFC 3339.
    fn at(text: &str) -> i64 {
        humantime::parse_rfc3339(text)
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    fn next(schedule: &str, after: &str) -> String {
        let next = CronSchedule::parse(schedule)
            .unwrap()
            .next_after(at(after))
            .unwrap();
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(next as u64),
        )
        .to_string()
    }

    #[test]
    fn the_calendar_is_right_across_leap_years() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(
            civil_from_days(at("2024-02-29T00:00:00Z") / DAY),
            (2024, 2, 29)
        );
        assert_eq!(
            civil_from_days(at("2100-03-01T00:00:00Z") / DAY),
            (2100, 3, 1)
        );
        assert_eq!(
            civil_from_days(at("2000-12-31T00:00:00Z") / DAY),
            (2000, 12, 31)
        );
    }

    #[test]
    fn next_times_follow_the_fields() {
        assert_eq!(
            next("0 2 * * *", "2026-12-06T17:00:00Z"),
            "2026-12-07T02:00:00Z"
        );
        assert_eq!(
            next("0 2 * * *", "2026-12-06T01:59:59Z"),
            "2026-12-06T02:00:00Z"
        );
        assert_eq!(
            next("*/15 * * * *", "2026-12-06T17:14:00Z"),
            "2026-12-06T17:15:00Z"
        );
        assert_eq!(
            next("*/2 * * * * *", "2026-12-06T17:14:01Z"),
            "2026-12-06T17:14:02Z"
        );
        assert_eq!(
            next("30 0 0 1 * ?", "2026-12-06T17:14:01Z"),
            "2027-01-01T00:00:30Z"
        );
        // Sunday by name, by 0 and by 7; 2026-12-06 is a Sunday.
        for sunday in ["0 3 * * SUN", "0 3 * * 0", "0 3 * * 7"] {
            assert_eq!(next(sunday, "2026-12-06T04:00:00Z"), "2026-12-13T03:00:00Z");
        }
        assert_eq!(
            next("0 0 29 FEB *", "2026-01-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
        // Both day fields restricted: either matches (the 1st, or a Monday).
        assert_eq!(
            next("0 0 1 * MON", "2026-12-06T12:00:00Z"),
            "2026-12-07T00:00:00Z"
        );
        assert_eq!(
            next("0 8-10/2 * * MON-FRI", "2026-12-05T12:00:00Z"),
            "2026-12-07T08:00:00Z"
        );
        assert_eq!(
            CronSchedule::parse("0 0 31 2 *").unwrap().next_after(0),
            None
        );
    }

    #[test]
    fn a_wrong_schedule_names_the_field() {
        let error = CronSchedule::parse("0 25 * * *").unwrap_err();
        assert!(
            error.contains("hour field `25`") && error.contains("0-23"),
            "{error}"
        );
        let error = CronSchedule::parse("daily").unwrap_err();
        assert!(error.contains("has 1 fields"), "{error}");
        let error = CronSchedule::parse("*/0 * * * *").unwrap_err();
        assert!(
            error.contains("minute field") && error.contains("step"),
            "{error}"
        );
        let error = CronSchedule::parse("0 0 * JUNE *").unwrap_err();
        assert!(error.contains("month field"), "{error}");
        let error = CronSchedule::parse("0 5-3 * * *").unwrap_err();
        assert!(error.contains("empty"), "{error}");
    }
}
