//! Intermediate throw events: a none event (a milestone) passes the token on at once; a
//! link event completes and the token continues at the link catch event of the same
//! name in its scope (the lifecycle does the jump, see `Processing::complete`).

use rill_protocol::Intent;

use super::{ElementBehavior, Outgoing, Trigger};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::outcome::Evaluated;

pub(super) struct IntermediateThrowEvent;

impl ElementBehavior for IntermediateThrowEvent {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        p.mark(active, Intent::ElementActivated)?;
        p.complete(active, None, Outgoing::All)?;
        Ok(())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.resolve_element_incident(active.key())
    }
}
