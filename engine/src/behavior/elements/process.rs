//! The process itself: the root scope of an instance. Entered by the creation command;
//! ending it ends the instance (see the lifecycle in the parent module).

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
        enter_scope(p, active, start_event)?;
        Ok(())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.resolve_element_incident(active.key())
    }
}
