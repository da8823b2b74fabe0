//! The process itself: the root scope of an instance. Entered by the creation command;
//! ending it ends the instance (see the lifecycle in the parent module).

use rill_protocol::Intent;

use super::{ElementBehavior, Trigger, wrong_kind};
use crate::context::{Active, Processing, Step};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct Process;

impl ElementBehavior for Process {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::Process { start_event, .. } = &active.element().kind else {
            return Err(wrong_kind(active, "process").into());
        };
        p.mark(active, Intent::ElementActivated)?;
        p.push_step(Step::Activate {
            scope_key: active.key(),
            process: active.process.clone(),
            element: *start_event,
            trigger: None,
        });
        Ok(())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.resolve_element_incident(active.key())?;
        p.terminate_children(active.key())
    }
}
