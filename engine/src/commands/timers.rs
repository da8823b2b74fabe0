//! TIMER TRIGGER, proposed by the leader when a timer is due.

use rill_protocol::Intent;
use rill_protocol::Key;
use rill_protocol::value::TimerRecord;

use super::tenant;
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;
use crate::state::ElementState;

pub(super) fn trigger(p: &mut Processing<'_>, key: Key) -> Result<()> {
    let timer = p.read().timer(key)?;
    let element_active = match &timer {
        // A start event's timer belongs to its process definition.
        Some(t) if t.element_instance_key < 0 => {
            p.read().process(t.process_definition_key)?.is_some()
        }
        Some(t) => p
            .read()
            .peek_element_instance(t.element_instance_key, |i| {
                i.state == ElementState::Activated
            })?
            .unwrap_or(false),
        None => false,
    };
    if let Err(rejection) = check_timer(key, timer.as_ref(), p.now(), element_active) {
        let record = timer.unwrap_or_else(placeholder);
        p.reject(key, Intent::Trigger, record, rejection);
        return Ok(());
    }
    let Some(timer) = timer else {
        return Ok(());
    };
    p.command(key, Intent::Trigger, timer.clone());
    p.respond(key, Intent::Triggered, timer.clone());
    p.fire_timer(key, timer)
}

/// Refuses to trigger a timer that does not exist, is not due at `now`, or whose
/// element instance is no longer active.
fn check_timer(
    key: Key,
    timer: Option<&TimerRecord>,
    now: i64,
    element_active: bool,
) -> std::result::Result<(), Rejection> {
    let Some(timer) = timer else {
        return Err(Rejection::not_found(format!(
            "Expected to trigger timer with key '{key}', but no such timer was found"
        )));
    };
    if timer.due_date > now {
        return Err(Rejection::invalid_state(format!(
            "Expected to trigger timer with key '{key}', but it is not due before {}",
            timer.due_date
        )));
    }
    if !element_active {
        return Err(Rejection::invalid_state(format!(
            "Expected to trigger timer with key '{key}', but its element instance '{}' is not \
             active",
            timer.element_instance_key
        )));
    }
    Ok(())
}

pub(super) fn placeholder() -> TimerRecord {
    TimerRecord {
        element_instance_key: -1,
        process_instance_key: -1,
        process_definition_key: -1,
        due_date: -1,
        target_element_id: String::new(),
        repetitions: 0,
        tenant_id: tenant(),
    }
}
