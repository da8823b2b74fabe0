//! Embedded subprocess: a scope inside the process, entered at its none start event,
//! completed when no token is left in it. It may carry boundary events.

use super::{ElementBehavior, Trigger, enter_scope, wrong_kind};
use crate::context::{Active, Processing};
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
        enter_scope(p, active, *start_event)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_boundary_timers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_boundary_timers(active)?;
        p.resolve_element_incident(active.key())
    }
}
