//! Manual task: work done outside the engine, by someone it need not know of. For the
//! engine it passes the token on at once, applying its input and output mappings.

use super::{ElementBehavior, Trigger, pass_through_activity};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::outcome::Evaluated;

pub(super) struct ManualTask;

impl ElementBehavior for ManualTask {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        pass_through_activity(p, active)
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_boundary_timers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_boundary_timers(active)?;
        p.resolve_element_incident(active.key())
    }
}
