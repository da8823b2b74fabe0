//! Named time zones (`Europe/Berlin`) from the IANA database compiled into the binary
//! (chrono-tz), so every replica resolves offsets identically whatever its host has.

use chrono::{DateTime, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

fn lookup(zone_id: &str) -> Result<Tz, String> {
    zone_id
        .parse::<Tz>()
        .map_err(|_| format!("unknown time zone '{zone_id}'"))
}

/// Checks that `zone_id` names a zone of the database.
pub(crate) fn validate(zone_id: &str) -> Result<(), String> {
    lookup(zone_id).map(|_| ())
}

fn naive(millis: i64) -> Result<NaiveDateTime, String> {
    DateTime::from_timestamp_millis(millis)
        .map(|instant| instant.naive_utc())
        .ok_or_else(|| "the date is outside the range time zones can be applied to".to_owned())
}

/// The offset (seconds east of UTC) of `zone_id` at the UTC instant `utc_millis`.
pub(crate) fn offset_at_instant(zone_id: &str, utc_millis: i64) -> Result<i32, String> {
    let zone = lookup(zone_id)?;
    Ok(zone
        .offset_from_utc_datetime(&naive(utc_millis)?)
        .fix()
        .local_minus_utc())
}

/// The offset of `zone_id` for a local wall-clock time (`local_millis` counted as if it
/// were UTC). Like `java.time`: in an overlap the earlier offset wins; in a gap the
/// offset before the gap applies, which moves the time forward by the gap's length.
pub(crate) fn offset_for_local(zone_id: &str, local_millis: i64) -> Result<i32, String> {
    let zone = lookup(zone_id)?;
    let local = naive(local_millis)?;
    match zone.offset_from_local_datetime(&local) {
        chrono::LocalResult::Single(offset) => Ok(offset.fix().local_minus_utc()),
        chrono::LocalResult::Ambiguous(earliest, _) => Ok(earliest.fix().local_minus_utc()),
        chrono::LocalResult::None => {
            let day_before = naive(local_millis.saturating_sub(crate::calendar::MILLIS_PER_DAY))?;
            Ok(zone
                .offset_from_utc_datetime(&day_before)
                .fix()
                .local_minus_utc())
        }
    }
}
