//! End events: none (the token ends), terminate (ends every token of its scope, then
//! the scope), error (throws to the nearest catching boundary event or event
//! subprocess, else an incident), escalation (throws, then the token ends), signal
//! (broadcasts the signal with its input mappings as variables, then the token ends), and
//! message (as in Zeebe, a job for a worker that sends the message; the token ends
//! when the job is completed), and compensation (compensates the completed activities
//! of its scope, `behavior/compensations.rs`; the token ends when their handlers are
//! done).

use rill_protocol::Intent;
use rill_protocol::Key;

use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{ElementKind, ThrowEventDefinition};
use crate::outcome::Evaluated;

pub(super) struct EndEvent;

impl ElementBehavior for EndEvent {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::EndEvent(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "endEvent").into());
        };
        throw(p, active, definition)
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_job(active)?;
        p.resolve_element_incident(active.key())
    }
}

/// Activates an end event or an intermediate throw event: what it throws decides. An
/// end event has no outgoing flows, so "going on" ends its token.
pub(super) fn throw(
    p: &mut Processing<'_>,
    active: &Active,
    definition: &ThrowEventDefinition,
) -> Evaluated {
    match definition {
        ThrowEventDefinition::None | ThrowEventDefinition::Link { .. } => {
            p.mark(active, Intent::ElementActivated)?;
            p.complete(active, None, Outgoing::All)?;
        }
        ThrowEventDefinition::Terminate => {
            p.mark(active, Intent::ElementActivated)?;
            let scope_key = active.record().flow_scope_key;
            p.complete(active, None, Outgoing::All)?;
            // Canceling task listeners may hold a child up: the scope then completes
            // once it is terminated (`resume_termination`).
            if p.terminate_children(Key(scope_key))? {
                p.complete_scope(Key(scope_key))?;
            }
        }
        ThrowEventDefinition::Error { error_code } => {
            let code = p.evaluate_string(error_code, active)?;
            p.throw_error_from_element(active, &code, "", None)?;
        }
        ThrowEventDefinition::Escalation { escalation_code } => {
            let code = p.evaluate_string(escalation_code, active)?;
            p.throw_escalation(active, &code)?;
        }
        ThrowEventDefinition::Signal(definition) => {
            let name = p.evaluate_string(&definition.signal_name, active)?;
            p.mark(active, Intent::ElementActivated)?;
            p.throw_signal(active, name)?;
            p.complete(active, None, Outgoing::All)?;
        }
        ThrowEventDefinition::Compensation { activity } => {
            p.throw_compensation(active, *activity)?;
        }
        ThrowEventDefinition::Message(definition) => {
            let job = p.evaluate_job(definition, active)?;
            p.create_job(active, job)?;
            p.mark(active, Intent::ElementActivated)?;
        }
    }
    Ok(())
}
