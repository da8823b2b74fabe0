//! Proleptic Gregorian calendar arithmetic on plain integers (UTC, no leap seconds).
//! Used by the timer parser and by FEEL's date/time values alike.

pub(crate) const MILLIS_PER_SECOND: i64 = 1_000;
pub(crate) const MILLIS_PER_MINUTE: i64 = 60 * MILLIS_PER_SECOND;
pub(crate) const MILLIS_PER_HOUR: i64 = 60 * MILLIS_PER_MINUTE;
pub(crate) const MILLIS_PER_DAY: i64 = 24 * MILLIS_PER_HOUR;

/// Years outside this range are rejected: it keeps every millisecond count far from
/// `i64` overflow and matches what Java's `java.time` accepts for practical purposes.
pub(crate) const MIN_YEAR: i64 = -999_999;
pub(crate) const MAX_YEAR: i64 = 999_999;

pub(crate) fn is_leap_year(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

pub(crate) fn is_valid_date(year: i64, month: u32, day: u32) -> bool {
    (MIN_YEAR..=MAX_YEAR).contains(&year)
        && (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let m = i64::from(month);
    let day_of_year = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The civil date of a day count since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Day of week, 1 = Monday … 7 = Sunday.
pub(crate) fn weekday_from_days(days: i64) -> u32 {
    // 1970-01-01 was a Thursday.
    ((days + 3).rem_euclid(7) + 1) as u32
}

/// Adds `months` to a civil date, clamping the day to the target month's length
/// (2026-01-31 + 1 month = 2026-02-28), as `java.time` does. `None` if out of range.
pub(crate) fn add_months_to_date(
    year: i64,
    month: u32,
    day: u32,
    months: i64,
) -> Option<(i64, u32, u32)> {
    let total = year.checked_mul(12)?.checked_add(i64::from(month) - 1)?;
    let total = total.checked_add(months)?;
    let new_year = total.div_euclid(12);
    let new_month = (total.rem_euclid(12) + 1) as u32;
    if !(MIN_YEAR..=MAX_YEAR).contains(&new_year) {
        return None;
    }
    let new_day = day.min(days_in_month(new_year, new_month));
    Some((new_year, new_month, new_day))
}

/// Adds calendar months to an instant in UTC, keeping the time of day.
pub(crate) fn add_months_to_millis(millis: i64, months: i64) -> Option<i64> {
    if months == 0 {
        return Some(millis);
    }
    let days = millis.div_euclid(MILLIS_PER_DAY);
    let time_of_day = millis.rem_euclid(MILLIS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (year, month, day) = add_months_to_date(year, month, day, months)?;
    days_from_civil(year, month, day)
        .checked_mul(MILLIS_PER_DAY)?
        .checked_add(time_of_day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip_over_wide_range() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert!(is_valid_date(y, m, d), "{y}-{m}-{d}");
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(weekday_from_days(days_from_civil(2026, 11, 30)), 1);
    }

    #[test]
    fn adding_months_clamps_to_month_end() {
        assert_eq!(add_months_to_date(2026, 1, 31, 1), Some((2026, 2, 28)));
        assert_eq!(add_months_to_date(2028, 1, 31, 1), Some((2028, 2, 29)));
        assert_eq!(add_months_to_date(2026, 12, 15, 1), Some((2027, 1, 15)));
        assert_eq!(add_months_to_date(2026, 1, 15, -13), Some((2024, 12, 15)));
        assert_eq!(add_months_to_date(2026, 1, 15, i64::MAX), None);
    }
}
