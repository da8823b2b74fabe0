//! Cron schedules for timer cycles, in the six-field form Zeebe 8.8 accepts
//! (`second minute hour day-of-month month day-of-week`, e.g. `0 0 9-17 * * MON-FRI`)
//! and its `@daily`-style macros. Times are UTC. A field is `*` or `?`, a number, a
//! range `a-b`, a step `*/n` or `a-b/n` or `a/n`, or a comma-separated list of these;
//! months and weekdays also by name (`JAN`, `MON`); a weekday is 0-7 with 0 and 7 both
//! Sunday. Day-of-month and day-of-week must both match. `L`, `W` and `#` are not
//! supported.

use rill_protocol::civil_from_days;

/// A parsed cron expression: the allowed values of each field as bit sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronSchedule {
    source: String,
    seconds: u64,
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    /// Bit 0 = Sunday ... bit 6 = Saturday.
    days_of_week: u64,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

impl CronSchedule {
    /// Parses a cron expression, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<CronSchedule, String> {
        let trimmed = text.trim();
        let expanded = match trimmed.to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 0 1 1 *",
            "@monthly" => "0 0 0 1 * *",
            "@weekly" => "0 0 0 * * 0",
            "@daily" | "@midnight" => "0 0 0 * * *",
            "@hourly" => "0 0 * * * *",
            _ if trimmed.starts_with('@') => {
                return Err(format!(
                    "'{trimmed}' is not a cron macro (use @yearly, @monthly, @weekly, @daily or \
                     @hourly)"
                ));
            }
            _ => trimmed,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 6 {
            return Err(format!(
                "a cron expression has six fields (second minute hour day-of-month month \
                 day-of-week), '{trimmed}' has {}",
                fields.len()
            ));
        }
        let mut days_of_week = field(fields[5], "day-of-week", 0, 7, &WEEKDAYS, 0)?;
        if days_of_week & (1 << 7) != 0 {
            days_of_week = (days_of_week & !(1 << 7)) | 1;
        }
        Ok(CronSchedule {
            source: trimmed.to_owned(),
            seconds: field(fields[0], "second", 0, 59, &[], 0)?,
            minutes: field(fields[1], "minute", 0, 59, &[], 0)?,
            hours: field(fields[2], "hour", 0, 23, &[], 0)?,
            days_of_month: field(fields[3], "day-of-month", 1, 31, &[], 0)?,
            months: field(fields[4], "month", 1, 12, &MONTHS, 1)?,
            days_of_week,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The first time strictly after `after` (ms since the epoch, UTC) that matches, on a
    /// whole second; `None` if nothing matches within 400 years (e.g. `0 0 0 30 2 *`).
    pub fn next_after(&self, after: i64) -> Option<i64> {
        let start = after.div_euclid(1000) + 1;
        let first_day = start.div_euclid(86_400);
        for day in first_day..first_day.saturating_add(146_097) {
            let from = if day == first_day {
                start.rem_euclid(86_400)
            } else {
                0
            };
            let (_, month, dom) = civil_from_days(day);
            let (month, dom) = (i64::from(month), i64::from(dom));
            let weekday = (day + 4).rem_euclid(7);
            if bit(self.months, month)
                && bit(self.days_of_month, dom)
                && bit(self.days_of_week, weekday)
                && let Some(second) = self.time_of_day(from)
            {
                return day
                    .checked_mul(86_400)
                    .and_then(|seconds| seconds.checked_add(second))
                    .and_then(|seconds| seconds.checked_mul(1000));
            }
        }
        None
    }

    /// The first second of the day at or after `from` whose hour, minute and second match.
    fn time_of_day(&self, from: i64) -> Option<i64> {
        let (h0, m0, s0) = (from / 3600, from / 60 % 60, from % 60);
        for h in h0..24 {
            if !bit(self.hours, h) {
                continue;
            }
            let m_start = if h == h0 { m0 } else { 0 };
            for m in m_start..60 {
                if !bit(self.minutes, m) {
                    continue;
                }
                let s_start = if h == h0 && m == m0 { s0 } else { 0 };
                if let Some(s) = (s_start..60).find(|s| bit(self.seconds, *s)) {
                    return Some(h * 3600 + m * 60 + s);
                }
            }
        }
        None
    }
}

fn bit(set: u64, value: i64) -> bool {
    (0..64).contains(&value) && set & (1 << value) != 0
}

/// One field as a bit set of allowed values in `min..=max`. `names` are the values
/// from `name_base` on (months from 1, weekdays from 0).
fn field(
    text: &str,
    what: &str,
    min: i64,
    max: i64,
    names: &[&str],
    name_base: i64,
) -> Result<u64, String> {
    let value = |raw: &str| -> Result<i64, String> {
        let upper = raw.to_ascii_uppercase();
        if let Some(i) = names.iter().position(|n| *n == upper) {
            return Ok(i as i64 + name_base);
        }
        match raw.parse::<i64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(v),
            _ => Err(format!(
                "the {what} '{raw}' is not a value from {min} to {max}{}",
                if names.is_empty() { "" } else { " or a name" }
            )),
        }
    };
    let mut set = 0u64;
    for part in text.split(',') {
        let without_names = names.iter().fold(part.to_ascii_uppercase(), |rest, name| {
            rest.replace(name, "")
        });
        if without_names.contains(['L', 'W', '#']) {
            return Err(format!(
                "the {what} '{part}' uses L, W or #, which Rill does not support in cron \
                 expressions"
            ));
        }
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => match step.parse::<i64>() {
                Ok(step) if step > 0 => (range, step),
                _ => {
                    return Err(format!(
                        "the step in the {what} '{part}' must be a positive number"
                    ));
                }
            },
            None => (part, 1),
        };
        let (from, to) = match range {
            "*" | "?" => (min, max),
            _ => match range.split_once('-') {
                Some((a, b)) => (value(a)?, value(b)?),
                None if part.contains('/') => (value(range)?, max),
                None => {
                    let v = value(range)?;
                    (v, v)
                }
            },
        };
        if from > to {
            return Err(format!("the {what} range '{range}' goes backwards"));
        }
        let mut v = from;
        while v <= to {
            set |= 1 << v;
            v += step;
        }
    }
    if set == 0 {
        return Err(format!("the {what} field '{text}' is empty"));
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MILLIS_PER_DAY: i64 = 86_400_000;

    /// 2026-12-03T12:00:00Z, a Thursday.
    const THURSDAY_NOON: i64 = 1_796_299_200_000;

    #[test]
    fn civil_dates_and_weekdays() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(
            civil_from_days(THURSDAY_NOON / MILLIS_PER_DAY),
            (2026, 12, 3)
        );
        assert_eq!((THURSDAY_NOON / MILLIS_PER_DAY + 4) % 7, 4);
    }

    #[test]
    fn office_hours_on_weekdays() {
        let cron = CronSchedule::parse("0 0 9-17 * * MON-FRI").unwrap();
        // Thursday 12:00 → 13:00 the same day.
        assert_eq!(
            cron.next_after(THURSDAY_NOON),
            Some(THURSDAY_NOON + 3_600_000)
        );
        // Friday 17:00 → Monday 09:00.
        let friday_five = THURSDAY_NOON + 29 * 3_600_000;
        let monday_nine = THURSDAY_NOON + (24 * 4 - 3) * 3_600_000;
        assert_eq!(cron.next_after(friday_five), Some(monday_nine));
    }

    #[test]
    fn steps_lists_macros_and_sunday_as_seven() {
        let every_15s = CronSchedule::parse("*/15 * * * * ?").unwrap();
        assert_eq!(
            every_15s.next_after(THURSDAY_NOON),
            Some(THURSDAY_NOON + 15_000)
        );
        assert_eq!(
            every_15s.next_after(THURSDAY_NOON + 1),
            Some(THURSDAY_NOON + 15_000)
        );
        let daily = CronSchedule::parse("@daily").unwrap();
        assert_eq!(
            daily.next_after(THURSDAY_NOON),
            Some(THURSDAY_NOON + 12 * 3_600_000)
        );
        let sunday = CronSchedule::parse("0 30 8 * * 7").unwrap();
        let sunday_830 = THURSDAY_NOON + (3 * 24 - 12) * 3_600_000 + 8 * 3_600_000 + 1_800_000;
        assert_eq!(sunday.next_after(THURSDAY_NOON), Some(sunday_830));
        let list = CronSchedule::parse("0 0,30 12 3 DEC *").unwrap();
        assert_eq!(
            list.next_after(THURSDAY_NOON),
            Some(THURSDAY_NOON + 1_800_000)
        );
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        for (text, fragment) in [
            ("0 0 9 * *", "six fields"),
            ("0 0 25 * * *", "hour '25'"),
            ("0 0 9 L * *", "L, W or #"),
            ("0 0 9 * * MON#2", "L, W or #"),
            ("0 0 17-9 * * *", "goes backwards"),
            ("@often", "not a cron macro"),
            ("*/0 * * * * *", "positive"),
        ] {
            let error = CronSchedule::parse(text).unwrap_err();
            assert!(error.contains(fragment), "{text}: {error}");
        }
        let never = CronSchedule::parse("0 0 0 30 2 *").unwrap();
        assert_eq!(never.next_after(THURSDAY_NOON), None);
    }
}
