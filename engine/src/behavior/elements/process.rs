//! The process itself: the root scope of an instance. Entered by the creation command;
//! ending it ends the instance (see the lifecycle in the parent module). It holds the
//! triggers of its event subprocesses while it is active.

use super::{ElementBehavior, Trigger, enter_scope, wrong_kind};
use crate::behavior::{MESSAGE_START_VARIABLE, MessageStart};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{ElementIdx, ElementKind};
use crate::outcome::Evaluated;

pub(super) struct Process;

impl ElementBehavior for Process {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::Process { start_event, .. } = &active.element().kind else {
            return Err(wrong_kind(active, "process").into());
        };
        // Creation and call activities check for a none start event first; without one,
        // the instance was started by a message or a timer and stopped on an incident
        // while opening its event subprocesses' triggers.
        let start_event = match start_event {
            Some(start) => *start,
            None => event_start(p, active)?
                .ok_or_else(|| wrong_kind(active, "process with a none start event"))?,
        };
        p.open_event_triggers(active)?;
        enter_scope(p, active, start_event, None)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.delete_compensation_subscriptions(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.delete_compensation_subscriptions(active)?;
        p.resolve_element_incident(active.key())
    }
}

/// The event start event an instance without a none start event was started at: the
/// message start event of the message that started it, else its first timer or signal
/// start event (with several of those, the one that fired is not kept).
fn event_start(p: &Processing<'_>, active: &Active) -> Result<Option<ElementIdx>> {
    let model = &active.process.model;
    let started_by = p
        .read()
        .variable(active.key(), active.key(), MESSAGE_START_VARIABLE)?
        .and_then(|v| serde_json::from_str::<MessageStart>(&v.value).ok());
    Ok(model
        .event_start_events()
        .find(|start| match (&model.element(*start).kind, &started_by) {
            (ElementKind::MessageStartEvent { message_name }, Some(marker)) => {
                *message_name == marker.message_name
            }
            (ElementKind::TimerStartEvent(_) | ElementKind::SignalStartEvent { .. }, None) => true,
            _ => false,
        }))
}
