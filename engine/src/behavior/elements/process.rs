//! The process itself: the root scope of an instance. Entered by the creation command;
//! ending it ends the instance (see the lifecycle in the parent module). It holds the
//! triggers of its event subprocesses while it is active.

use super::{ElementBehavior, Trigger, enter_scope, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct Process;

impl ElementBehavior for Process {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::Process { start_event, .. } = &active.element().kind else {
            return Err(wrong_kind(active, "process").into());
        };
        // Creation and call activities check for a none start event first.
        let start_event =
            start_event.ok_or_else(|| wrong_kind(active, "process with a none start event"))?;
        p.open_event_triggers(active)?;
        enter_scope(p, active, start_event, None)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.resolve_element_incident(active.key())
    }
}
