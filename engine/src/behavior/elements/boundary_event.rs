//! Boundary events: entered when the event they wait for (a timer, a message, a caught
//! error) happens on the element they are attached to, with that event's variables;
//! they pass the token on at once. Opening their triggers and interrupting are the
//! attached element's business (`triggers.rs`).

use rill_protocol::Intent;

use super::{ElementBehavior, Outgoing, Trigger};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::outcome::Evaluated;

pub(super) struct BoundaryEvent;

impl ElementBehavior for BoundaryEvent {
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
