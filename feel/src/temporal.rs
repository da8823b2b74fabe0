//! ISO 8601 values used by BPMN timers: durations (`PT30S`, `P1DT2H`), date-times
//! (`2026-11-30T10:00:00Z`, with offsets or zone ids), and cycles (`R3/PT10S`).

use crate::FeelError;
use crate::calendar::{
    self, MILLIS_PER_DAY, MILLIS_PER_HOUR, MILLIS_PER_MINUTE, MILLIS_PER_SECOND,
};
use crate::zone;

/// A duration in milliseconds. Years and months are not fixed lengths; they are added
/// calendar-wise to a start instant by [`add_duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsoDuration {
    pub months: i64,
    pub millis: i64,
}

/// A repeating timer: `repetitions` (-1 for unbounded) of `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsoCycle {
    pub repetitions: i32,
    pub interval: IsoDuration,
}

/// Parses an ISO 8601 duration such as `PT30S`, `P1DT2H30M`, `P1Y2M`, `P2W`, `-PT5M`.
pub fn parse_duration(text: &str) -> Result<IsoDuration, FeelError> {
    parse_duration_parts(text)
        .map(|parts| IsoDuration {
            months: parts.months,
            millis: parts.millis,
        })
        .map_err(|reason| syntax(text, reason))
}

/// Parses an ISO 8601 date-time with a zone offset or id into ms since the epoch:
/// `2026-11-30T10:00:00Z`, `2026-11-30T10:00:00+01:00`,
/// `2026-11-30T10:00:00[Europe/Berlin]`, `2026-11-30T10:00:00+01:00[Europe/Berlin]`.
pub fn parse_date_time(text: &str) -> Result<i64, FeelError> {
    let parsed = parse_date_time_parts(text.trim()).map_err(|reason| syntax(text, reason))?;
    let local_millis = parsed.local_millis();
    let offset_seconds = match (&parsed.zone, parsed.offset_seconds) {
        (_, Some(offset)) => offset,
        (Some(zone_id), None) => {
            zone::offset_for_local(zone_id, local_millis).map_err(|reason| syntax(text, reason))?
        }
        (None, None) => {
            return Err(syntax(
                text,
                "the date-time has no zone: add 'Z', an offset like '+01:00', or a zone id like '[Europe/Berlin]'"
                    .to_owned(),
            ));
        }
    };
    Ok(local_millis - i64::from(offset_seconds) * MILLIS_PER_SECOND)
}

/// Parses an ISO 8601 repeating interval such as `R5/PT10S` or `R/P1D` (unbounded).
pub fn parse_cycle(text: &str) -> Result<IsoCycle, FeelError> {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix('R') else {
        return Err(syntax(
            text,
            "a cycle starts with 'R', e.g. 'R5/PT10S' or 'R/P1D'".to_owned(),
        ));
    };
    let Some((count, interval)) = rest.split_once('/') else {
        return Err(syntax(
            text,
            "a cycle needs '/' between the repetitions and the interval, e.g. 'R5/PT10S'"
                .to_owned(),
        ));
    };
    let repetitions = if count.is_empty() {
        -1
    } else {
        if !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(syntax(
                text,
                format!("'{count}' is not a number of repetitions"),
            ));
        }
        count
            .parse::<i32>()
            .map_err(|_| syntax(text, format!("too many repetitions: '{count}'")))?
    };
    if interval.contains('/') {
        return Err(syntax(
            text,
            "cycles with a start or end date are not supported; use 'R<n>/<duration>'".to_owned(),
        ));
    }
    let interval = parse_duration(interval).map_err(|error| match error {
        FeelError::Syntax { reason, .. } => syntax(text, reason),
        other => other,
    })?;
    if interval.months <= 0 && interval.millis <= 0 {
        return Err(syntax(
            text,
            "the interval of a cycle must be positive".to_owned(),
        ));
    }
    Ok(IsoCycle {
        repetitions,
        interval,
    })
}

/// `start_millis + duration`, adding months on the calendar (UTC) first, then the fixed
/// part. Saturates at the ends of the representable range instead of overflowing.
pub fn add_duration(start_millis: i64, duration: IsoDuration) -> i64 {
    let with_months = match calendar::add_months_to_millis(start_millis, duration.months) {
        Some(millis) => millis,
        None if duration.months > 0 => i64::MAX,
        None => i64::MIN,
    };
    with_months.saturating_add(duration.millis)
}

fn syntax(text: &str, reason: String) -> FeelError {
    FeelError::Syntax {
        source_text: text.to_owned(),
        reason,
    }
}

/// A parsed duration. ISO 8601 allows mixing calendar and fixed parts (`P1Y2DT3H`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DurationParts {
    pub(crate) months: i64,
    pub(crate) millis: i64,
}

pub(crate) fn parse_duration_parts(text: &str) -> Result<DurationParts, String> {
    let text = text.trim();
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let Some(body) = body.strip_prefix('P') else {
        return Err(format!(
            "'{text}' is not an ISO 8601 duration: it must start with 'P', e.g. 'PT30S' or 'P1DT2H'"
        ));
    };
    let (date_part, time_part) = match body.split_once('T') {
        Some((date, time)) => {
            if time.is_empty() {
                return Err(format!("'{text}' has a 'T' with no time part after it"));
            }
            (date, Some(time))
        }
        None => (body, None),
    };
    if date_part.is_empty() && time_part.is_none() {
        return Err(format!("'{text}' has no components, e.g. 'PT30S'"));
    }
    let mut months: i64 = 0;
    let mut millis: i64 = 0;
    let overflow = || format!("'{text}' is too large");
    let mut last_rank = 0;
    for (number, fraction, designator) in components(date_part, text)? {
        if fraction.is_some() {
            return Err(format!("'{text}': only seconds may have a fraction"));
        }
        let (rank, months_per_unit, millis_per_unit) = match designator {
            'Y' => (1, 12, 0),
            'M' => (2, 1, 0),
            'W' => (3, 0, 7 * MILLIS_PER_DAY),
            'D' => (4, 0, MILLIS_PER_DAY),
            other => {
                return Err(format!(
                    "'{text}': unexpected '{other}' before 'T' (expected Y, M, W or D)"
                ));
            }
        };
        if rank <= last_rank {
            return Err(format!("'{text}': components are out of order or repeated"));
        }
        last_rank = rank;
        months = number
            .checked_mul(months_per_unit)
            .and_then(|m| months.checked_add(m))
            .ok_or_else(overflow)?;
        millis = number
            .checked_mul(millis_per_unit)
            .and_then(|m| millis.checked_add(m))
            .ok_or_else(overflow)?;
    }
    if let Some(time_part) = time_part {
        let mut last_rank = 0;
        for (number, fraction, designator) in components(time_part, text)? {
            let (rank, millis_per_unit) = match designator {
                'H' => (1, MILLIS_PER_HOUR),
                'M' => (2, MILLIS_PER_MINUTE),
                'S' => (3, MILLIS_PER_SECOND),
                other => {
                    return Err(format!(
                        "'{text}': unexpected '{other}' after 'T' (expected H, M or S)"
                    ));
                }
            };
            if rank <= last_rank {
                return Err(format!("'{text}': components are out of order or repeated"));
            }
            last_rank = rank;
            if fraction.is_some() && designator != 'S' {
                return Err(format!("'{text}': only seconds may have a fraction"));
            }
            let fraction_millis = fraction.unwrap_or(0);
            millis = number
                .checked_mul(millis_per_unit)
                .and_then(|m| m.checked_add(fraction_millis))
                .and_then(|m| millis.checked_add(m))
                .ok_or_else(overflow)?;
        }
    }
    if negative {
        months = -months;
        millis = -millis;
    }
    Ok(DurationParts { months, millis })
}

/// Splits `12H30M1.5S` into `(12, None, 'H'), (30, None, 'M'), (1, Some(500), 'S')`.
fn components(part: &str, text: &str) -> Result<Vec<(i64, Option<i64>, char)>, String> {
    let mut result = Vec::new();
    let bytes = part.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        let start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        if index == start {
            return Err(format!(
                "'{text}': expected a number at '{}'",
                &part[start..]
            ));
        }
        let number: i64 = part[start..index]
            .parse()
            .map_err(|_| format!("'{text}' is too large"))?;
        let mut fraction = None;
        if index < bytes.len() && (bytes[index] == b'.' || bytes[index] == b',') {
            index += 1;
            let fraction_start = index;
            while index < bytes.len() && bytes[index].is_ascii_digit() {
                index += 1;
            }
            if index == fraction_start {
                return Err(format!("'{text}': a fraction needs digits after the point"));
            }
            fraction = Some(fraction_to_millis(&part[fraction_start..index]));
        }
        // The unit may be any character (a wrong one is reported by the caller); step
        // over all of its bytes so the next slice starts on a character boundary.
        let Some(designator) = part[index..].chars().next() else {
            return Err(format!(
                "'{text}': the number {number} has no unit (Y, M, W, D, H, M or S)"
            ));
        };
        index += designator.len_utf8();
        result.push((number, fraction, designator));
    }
    Ok(result)
}

/// `"5"` → 500, `"123456"` → 123 (sub-millisecond digits are dropped).
fn fraction_to_millis(digits: &str) -> i64 {
    let mut millis = 0;
    for (position, digit) in digits.bytes().take(3).enumerate() {
        millis += i64::from(digit - b'0') * [100, 10, 1][position];
    }
    millis
}

/// A date-time as written: the local fields plus whatever zone information was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DateTimeParts {
    pub(crate) year: i64,
    pub(crate) month: u32,
    pub(crate) day: u32,
    /// Milliseconds since midnight.
    pub(crate) time_millis: i64,
    pub(crate) offset_seconds: Option<i32>,
    pub(crate) zone: Option<String>,
}

impl DateTimeParts {
    pub(crate) fn local_millis(&self) -> i64 {
        calendar::days_from_civil(self.year, self.month, self.day) * MILLIS_PER_DAY
            + self.time_millis
    }
}

pub(crate) fn parse_date_time_parts(text: &str) -> Result<DateTimeParts, String> {
    let Some((date, time)) = text.split_once('T') else {
        return Err(format!(
            "'{text}' is not an ISO 8601 date-time like '2026-11-30T10:00:00Z'"
        ));
    };
    let (year, month, day) = parse_date_parts(date)?;
    let time = parse_time_parts(time)?;
    Ok(DateTimeParts {
        year,
        month,
        day,
        time_millis: time.millis,
        offset_seconds: time.offset_seconds,
        zone: time.zone,
    })
}

/// Parses `2026-11-30` (a year may have more than four digits and a sign).
pub(crate) fn parse_date_parts(text: &str) -> Result<(i64, u32, u32), String> {
    let invalid = || format!("'{text}' is not a date like '2026-11-30'");
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let mut fields = body.split('-');
    let (Some(year), Some(month), Some(day), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(invalid());
    };
    if year.len() < 4
        || year.len() > 6
        || month.len() != 2
        || day.len() != 2
        || ![year, month, day]
            .iter()
            .all(|field| field.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(invalid());
    }
    let year: i64 = year.parse().map_err(|_| invalid())?;
    let year = if negative { -year } else { year };
    let month: u32 = month.parse().map_err(|_| invalid())?;
    let day: u32 = day.parse().map_err(|_| invalid())?;
    if !calendar::is_valid_date(year, month, day) {
        return Err(format!("'{text}' is not a valid calendar date"));
    }
    Ok((year, month, day))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TimeParts {
    pub(crate) millis: i64,
    pub(crate) offset_seconds: Option<i32>,
    pub(crate) zone: Option<String>,
}

/// Parses `10:00`, `10:00:05.250`, each optionally followed by `Z`, `+01:00`, `+0100`,
/// `+01`, `[Europe/Berlin]` or `@Europe/Berlin`.
pub(crate) fn parse_time_parts(text: &str) -> Result<TimeParts, String> {
    let invalid = || format!("'{text}' is not a time like '10:00:00' or '10:00:00+01:00'");
    // Split the local time from the zone designator.
    let zone_start = text.find(['Z', '+', '-', '[', '@']).unwrap_or(text.len());
    let (local, zone_text) = text.split_at(zone_start);
    let mut fields = local.split(':');
    let (Some(hour), Some(minute), second) = (fields.next(), fields.next(), fields.next()) else {
        return Err(invalid());
    };
    if fields.next().is_some() {
        return Err(invalid());
    }
    let (second, fraction) = match second {
        Some(second) => match second.split_once('.') {
            Some((whole, fraction)) => (Some(whole), Some(fraction)),
            None => (Some(second), None),
        },
        None => (None, None),
    };
    let two_digits = |field: &str| field.len() == 2 && field.bytes().all(|b| b.is_ascii_digit());
    if !two_digits(hour) || !two_digits(minute) || second.is_some_and(|s| !two_digits(s)) {
        return Err(invalid());
    }
    if let Some(fraction) = fraction
        && (fraction.is_empty()
            || fraction.len() > 9
            || !fraction.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(invalid());
    }
    let hour: i64 = hour.parse().map_err(|_| invalid())?;
    let minute: i64 = minute.parse().map_err(|_| invalid())?;
    let second: i64 = second.map_or(Ok(0), str::parse).map_err(|_| invalid())?;
    // 24:00:00 is midnight at the end of the day, as FEEL allows.
    let end_of_day = hour == 24
        && minute == 0
        && second == 0
        && fraction.is_none_or(|f| f.bytes().all(|b| b == b'0'));
    if !end_of_day && (hour > 23 || minute > 59 || second > 59) {
        return Err(format!("'{text}' is not a valid time of day"));
    }
    let millis = hour * MILLIS_PER_HOUR
        + minute * MILLIS_PER_MINUTE
        + second * MILLIS_PER_SECOND
        + fraction.map_or(0, fraction_to_millis);
    let (offset_seconds, zone) = parse_zone_designator(zone_text)?;
    Ok(TimeParts {
        millis,
        offset_seconds,
        zone,
    })
}

fn parse_zone_designator(text: &str) -> Result<(Option<i32>, Option<String>), String> {
    if text.is_empty() {
        return Ok((None, None));
    }
    if let Some(zone_id) = text.strip_prefix('@') {
        return Ok((None, Some(checked_zone_id(zone_id)?)));
    }
    let (offset_text, zone_text) = match text.find('[') {
        Some(bracket) => (&text[..bracket], Some(&text[bracket..])),
        None => (text, None),
    };
    let zone = match zone_text {
        Some(zone_text) => {
            let Some(zone_id) = zone_text
                .strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
            else {
                return Err(format!(
                    "'{zone_text}' is not a zone id like '[Europe/Berlin]'"
                ));
            };
            Some(checked_zone_id(zone_id)?)
        }
        None => None,
    };
    let offset = if offset_text.is_empty() {
        None
    } else {
        Some(parse_offset(offset_text)?)
    };
    Ok((offset, zone))
}

fn checked_zone_id(zone_id: &str) -> Result<String, String> {
    zone::validate(zone_id)?;
    Ok(zone_id.to_owned())
}

/// `Z`, `+01:00`, `-0530`, `+01`, `+01:00:30` → seconds east of UTC.
pub(crate) fn parse_offset(text: &str) -> Result<i32, String> {
    if text == "Z" || text == "z" {
        return Ok(0);
    }
    let invalid = || format!("'{text}' is not a zone offset like 'Z' or '+01:00'");
    let (sign, body) = match text.as_bytes().first() {
        Some(b'+') => (1, &text[1..]),
        Some(b'-') => (-1, &text[1..]),
        _ => return Err(invalid()),
    };
    let digits: String = body.chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![2, 4, 6].contains(&digits.len()) {
        return Err(invalid());
    }
    let field = |range: std::ops::Range<usize>| -> i32 {
        digits.get(range).and_then(|f| f.parse().ok()).unwrap_or(0)
    };
    let (hours, minutes, seconds) = (field(0..2), field(2..4), field(4..6));
    if hours > 18 || minutes > 59 || seconds > 59 {
        return Err(invalid());
    }
    Ok(sign * (hours * 3600 + minutes * 60 + seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(text: &str) -> i64 {
        parse_date_time(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn durations() {
        let cases: &[(&str, i64, i64)] = &[
            ("PT30S", 0, 30_000),
            ("PT2S", 0, 2_000),
            ("P1DT2H", 0, 26 * 3_600_000),
            ("PT1H30M", 0, 5_400_000),
            ("PT0.5S", 0, 500),
            ("PT1,25S", 0, 1_250),
            ("P2W", 0, 14 * 86_400_000),
            ("P1Y2M", 14, 0),
            ("P1Y2M3DT4H", 14, 3 * 86_400_000 + 4 * 3_600_000),
            ("-PT5M", 0, -300_000),
            ("PT36H", 0, 36 * 3_600_000),
        ];
        for (text, months, millis) in cases {
            assert_eq!(
                parse_duration(text),
                Ok(IsoDuration {
                    months: *months,
                    millis: *millis
                }),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_durations_name_the_problem() {
        let cases: &[(&str, &str)] = &[
            ("30S", "must start with 'P'"),
            ("P", "no components"),
            ("PT", "no time part"),
            ("P1H", "unexpected 'H' before 'T'"),
            ("PT1D", "unexpected 'D' after 'T'"),
            ("PT5", "has no unit"),
            ("P1.5D", "only seconds may have a fraction"),
            ("PT1S2M", "out of order"),
            ("P99999999999999999999D", "too large"),
            ("P9999999999999999D", "too large"),
            ("PTxS", "expected a number"),
            // Found by the fuzzer: a multi-byte unit once split a character.
            ("P0000026666664666\u{4ac}P14", "expected a number at 'P14'"),
            ("P1\u{4ac}", "unexpected 'Ҭ' before 'T'"),
            ("PT1\u{e9}2S", "unexpected 'é' after 'T'"),
        ];
        for (text, expected) in cases {
            match parse_duration(text) {
                Err(FeelError::Syntax { reason, .. }) => {
                    assert!(reason.contains(expected), "{text}: {reason}")
                }
                other => panic!("{text}: expected an error, got {other:?}"),
            }
        }
    }

    #[test]
    fn date_times_with_offsets_and_zones() {
        let utc = millis("2026-11-30T10:00:00Z");
        assert_eq!(utc, 1_796_032_800_000);
        assert_eq!(millis("2026-11-30T11:00:00+01:00"), utc);
        assert_eq!(millis("2026-11-30T11:00:00+0100"), utc);
        assert_eq!(millis("2026-11-30T11:00+01"), utc);
        assert_eq!(millis("2026-11-30T05:00:00-05:00"), utc);
        assert_eq!(millis("2026-11-30T10:00:00.250Z"), utc + 250);
        // Berlin is +01:00 in winter and +02:00 in summer.
        assert_eq!(millis("2026-11-30T11:00:00[Europe/Berlin]"), utc);
        assert_eq!(
            millis("2026-07-01T12:00:00[Europe/Berlin]"),
            millis("2026-07-01T10:00:00Z")
        );
        assert_eq!(millis("2026-11-30T11:00:00+01:00[Europe/Berlin]"), utc);
        assert_eq!(millis("2026-11-30T11:00:00@Europe/Berlin"), utc);
    }

    #[test]
    fn bad_date_times_name_the_problem() {
        let cases: &[(&str, &str)] = &[
            ("2026-11-30T10:00:00", "has no zone"),
            ("2026-11-30", "not an ISO 8601 date-time"),
            ("2026-02-30T10:00:00Z", "not a valid calendar date"),
            ("2026-11-30T25:00:00Z", "not a valid time"),
            ("2026-11-30T10:00:00[Mars/Olympus]", "unknown time zone"),
            ("2026-11-30T10:00:00+25:00", "not a zone offset"),
            ("26-11-30T10:00:00Z", "not a date"),
        ];
        for (text, expected) in cases {
            match parse_date_time(text) {
                Err(FeelError::Syntax { reason, .. }) => {
                    assert!(reason.contains(expected), "{text}: {reason}")
                }
                other => panic!("{text}: expected an error, got {other:?}"),
            }
        }
    }

    #[test]
    fn cycles() {
        assert_eq!(
            parse_cycle("R5/PT10S"),
            Ok(IsoCycle {
                repetitions: 5,
                interval: IsoDuration {
                    months: 0,
                    millis: 10_000
                }
            })
        );
        assert_eq!(
            parse_cycle("R/P1D"),
            Ok(IsoCycle {
                repetitions: -1,
                interval: IsoDuration {
                    months: 0,
                    millis: 86_400_000
                }
            })
        );
        for bad in [
            "PT10S",
            "R5",
            "Rx/PT1S",
            "R5/PT0S",
            "R5/2026-01-01T00:00:00Z/PT1S",
            "R99999999999/PT1S",
        ] {
            assert!(parse_cycle(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn adding_durations_uses_the_calendar_for_months() {
        let jan31 = millis("2026-01-31T08:00:00Z");
        let one_month = parse_duration("P1M").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            add_duration(jan31, one_month),
            millis("2026-02-28T08:00:00Z")
        );
        let mixed = parse_duration("P1Y1DT1H").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(add_duration(jan31, mixed), millis("2027-02-01T09:00:00Z"));
        assert_eq!(
            add_duration(
                i64::MAX - 1,
                IsoDuration {
                    months: 0,
                    millis: 10
                }
            ),
            i64::MAX
        );
        assert_eq!(
            add_duration(
                0,
                IsoDuration {
                    months: i64::MAX,
                    millis: 0
                }
            ),
            i64::MAX
        );
    }
}
