//! Start events (none, and the timer, message and error start events of event
//! subprocesses and of the process): pass the token on at once, with the variables of
//! the event that fired.

use rill_protocol::Intent;

use super::{ElementBehavior, Outgoing, Trigger};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::outcome::Evaluated;

pub(super) struct StartEvent;

impl ElementBehavior for StartEvent {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, trigger: Trigger) -> Evaluated {
        p.mark(active, Intent::ElementActivated)?;
        p.complete(active, trigger, Outgoing::All)?;
        Ok(())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.resolve_element_incident(active.key())
    }
}
