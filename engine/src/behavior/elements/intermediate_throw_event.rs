//! Intermediate throw events: a none event (a milestone) passes the token on at once; a
//! link event completes and the token continues at the link catch event of the same
//! name in its scope (the lifecycle does the jump, see `Processing::complete`); a
//! message event is, as in Zeebe, a job for a worker that sends the message, and waits
//! for it; an escalation event throws its escalation and, unless an interrupting catch
//! event ended it, passes the token on; a signal event broadcasts its signal (with its
//! input mappings as variables) and passes the token on; a compensation event
//! compensates the completed activities of its scope (`behavior/compensations.rs`) and
//! passes the token on once their handlers are done.

use super::{ElementBehavior, Trigger, end_event, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct IntermediateThrowEvent;

impl ElementBehavior for IntermediateThrowEvent {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::IntermediateThrowEvent(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "intermediateThrowEvent").into());
        };
        // The same as an end event's (`end_event::throw`); the token goes on afterwards.
        end_event::throw(p, active, definition)
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_job(active)?;
        p.resolve_element_incident(active.key())
    }
}
