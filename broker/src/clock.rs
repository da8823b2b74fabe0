//! The one place that reads the machine clock. Its value only enters the log as the
//! leader's entry timestamp; everything applied takes time from the entry.

use std::time::{SystemTime, UNIX_EPOCH};

use rill_protocol::Timestamp;

/// Milliseconds since the Unix epoch, now.
#[allow(clippy::disallowed_methods)]
pub(crate) fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Timestamp(millis)
}

/// Microseconds since the epoch, for seeding request ids unique across restarts.
#[allow(clippy::disallowed_methods)]
pub(crate) fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
