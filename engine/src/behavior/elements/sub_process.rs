//! Embedded subprocess: a scope inside the process, entered at its none start event,
//! completed when no token is left in it. It may carry boundary events, and holds the
//! triggers of its event subprocesses while it is active. An event subprocess is entered
//! when its start event's trigger fires, and enters that start event with the trigger's
//! variables.

use super::{ElementBehavior, Trigger, enter_scope, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct SubProcess;

impl ElementBehavior for SubProcess {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, trigger: Trigger) -> Evaluated {
        let ElementKind::SubProcess { start_event, .. } = &active.element().kind else {
            return Err(wrong_kind(active, "subProcess").into());
        };
        p.open_event_triggers(active)?;
        enter_scope(p, active, *start_event, trigger)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.delete_compensation_subscriptions(active)?;
        p.resolve_element_incident(active.key())
    }
}
