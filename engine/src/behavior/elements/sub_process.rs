//! Embedded subprocess: a scope inside the process, entered at its none start event,
//! completed when no token is left in it. It may carry boundary events.

use rill_protocol::Intent;

use super::{ElementBehavior, Trigger, wrong_kind};
use crate::context::{Active, Processing, Step};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct SubProcess;

impl ElementBehavior for SubProcess {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::SubProcess { start_event, .. } = &active.element().kind else {
            return Err(wrong_kind(active, "subProcess").into());
        };
        p.arm_boundary_timers(active)?;
        p.mark(active, Intent::ElementActivated)?;
        p.push_step(Step::Activate {
            scope_key: active.key(),
            process: active.process.clone(),
            element: *start_event,
            trigger: None,
        });
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_boundary_timers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_boundary_timers(active)?;
        p.resolve_element_incident(active.key())?;
        p.terminate_children(active.key())
    }
}
