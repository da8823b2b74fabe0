//! Undefined tasks (`bpmn:task`) and manual tasks: work the engine does not know about,
//! done by someone it need not know of. They pass the token on at once, applying their
//! input and output mappings on the way.

use super::{ElementBehavior, Trigger, pass_through_activity};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::outcome::Evaluated;

pub(super) struct Task;

impl ElementBehavior for Task {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        pass_through_activity(p, active)
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.resolve_element_incident(active.key())
    }
}
