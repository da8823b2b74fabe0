//! TIMER: armed timers and their due index.

use rill_protocol::Key;
use rill_protocol::value::TimerRecord;

use super::Apply;
use crate::error::Result;

pub(super) fn created(ctx: &mut Apply<'_, '_>, key: Key, value: &TimerRecord) -> Result<()> {
    ctx.state.put_timer(key, value)
}

/// TRIGGERED and CANCELED: the timer goes.
pub(super) fn removed(ctx: &mut Apply<'_, '_>, key: Key, _value: &TimerRecord) -> Result<()> {
    let state = &mut *ctx.state;
    if let Some(timer) = state.read().timer(key)? {
        state.delete_timer(key, &timer);
    }
    Ok(())
}
