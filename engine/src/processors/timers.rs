//! TIMER TRIGGER, proposed by the leader when a timer is due.

use rill_protocol::value::TimerRecord;
use rill_protocol::{Intent, RejectionType};

use super::tenant;
use crate::error::Result;
use crate::processing::Processing;
use crate::state::ElementState;

pub(super) fn trigger(p: &mut Processing<'_>, key: i64) -> Result<()> {
    let timer = p.read().timer(key)?;
    let problem = match &timer {
        None => Some((
            RejectionType::NotFound,
            format!("Expected to trigger timer with key '{key}', but no such timer was found"),
        )),
        Some(t) if t.due_date > p.now() => Some((
            RejectionType::InvalidState,
            format!(
                "Expected to trigger timer with key '{key}', but it is not due before {}",
                t.due_date
            ),
        )),
        Some(t) => match p.read().element_instance(t.element_instance_key)? {
            Some(i) if i.state == ElementState::Activated => None,
            _ => Some((
                RejectionType::InvalidState,
                format!(
                    "Expected to trigger timer with key '{key}', but its element instance '{}' \
                     is not active",
                    t.element_instance_key
                ),
            )),
        },
    };
    if let Some((rejection_type, reason)) = problem {
        let record = timer.unwrap_or_else(placeholder);
        p.reject(key, Intent::Trigger, record, rejection_type, reason);
        return Ok(());
    }
    let Some(timer) = timer else {
        return Ok(());
    };
    p.command(key, Intent::Trigger, timer.clone());
    p.respond(key, Intent::Triggered, timer.clone());
    p.fire_timer(key, timer)
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
