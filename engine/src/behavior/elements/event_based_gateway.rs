//! Event-based gateway: holds the triggers of the message and timer catch events after
//! it and waits. The first that fires completes the gateway (closing the others'
//! triggers) and takes the flow to that event, which is entered with the event's
//! variables (`triggers.rs`).

use rill_protocol::Intent;

use super::{ElementBehavior, Trigger};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::outcome::Evaluated;

pub(super) struct EventBasedGateway;

impl ElementBehavior for EventBasedGateway {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        p.open_event_triggers(active)?;
        p.mark(active, Intent::ElementActivated)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.resolve_element_incident(active.key())
    }
}
