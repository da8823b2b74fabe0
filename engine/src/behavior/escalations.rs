//! BPMN escalations: thrown by an escalation intermediate throw event or end event,
//! caught by the nearest matching escalation event subprocess or boundary event (the
//! walk errors take, through call activities too). An escalation is not critical: an
//! uncaught one changes nothing, and the thrower completes unless an interrupting catch
//! event ended it.

use rill_protocol::{Intent, Key};

use super::errors::Thrown;
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::state::ElementState;

impl Processing<'_> {
    /// Throws an escalation from an entered throw or end event, then completes the
    /// event if it is still active.
    pub fn throw_escalation(&mut self, thrower: &Active, code: &str) -> Result<()> {
        self.mark(thrower, Intent::ElementActivated)?;
        let scope = Key(thrower.record().flow_scope_key);
        if let Some((holder, catch)) = self.find_catcher(scope, Thrown::Escalation, code)? {
            self.fire_catch_event(&holder, catch, None)?;
        }
        let alive = self
            .read()
            .peek_element_instance(thrower.key(), |i| i.state == ElementState::Activated)?;
        if alive == Some(true) {
            self.complete_with(thrower.key(), None)?;
        }
        Ok(())
    }
}
