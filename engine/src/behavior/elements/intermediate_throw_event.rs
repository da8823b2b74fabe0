//! Intermediate throw events: a none event (a milestone) passes the token on at once; a
//! link event completes and the token continues at the link catch event of the same
//! name in its scope (the lifecycle does the jump, see `Processing::complete`); a
//! message event is, as in Zeebe, a job for a worker that sends the message, and waits
//! for it; an escalation event throws its escalation and, unless an interrupting catch
//! event ended it, passes the token on; a signal event broadcasts its signal (with its
//! input mappings as variables) and passes the token on; a compensation event
//! compensates the completed activities of its scope (`behavior/compensations.rs`) and
//! passes the token on once their handlers are done.

use rill_protocol::Intent;

use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{ElementKind, ThrowEventDefinition};
use crate::outcome::Evaluated;

pub(super) struct IntermediateThrowEvent;

impl ElementBehavior for IntermediateThrowEvent {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::IntermediateThrowEvent(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "intermediateThrowEvent").into());
        };
        match definition {
            ThrowEventDefinition::None | ThrowEventDefinition::Link { .. } => {
                p.mark(active, Intent::ElementActivated)?;
                p.complete(active, None, Outgoing::All)?;
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

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_job(active)?;
        p.resolve_element_incident(active.key())
    }
}
