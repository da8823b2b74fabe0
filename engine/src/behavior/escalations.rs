//! BPMN escalations: thrown by an escalation intermediate throw event or end event,
//! caught by the nearest matching escalation event subprocess or boundary event (the
//! walk errors take, through call activities too). An escalation is not critical: an
//! uncaught one changes nothing but its `ESCALATION NOT_ESCALATED` record (a caught one
//! writes `ESCALATED`, as Zeebe does), and the thrower completes unless an interrupting
//! catch event ended it.

use rill_protocol::value::EscalationRecord;
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
        let caught = self.find_catcher(scope, Thrown::Escalation, code)?;
        let record = EscalationRecord {
            process_instance_key: thrower.record().process_instance_key,
            escalation_code: code.to_owned(),
            throw_element_id: thrower.element().id.clone(),
            catch_element_id: caught
                .as_ref()
                .map(|(holder, catch)| holder.process.model.element(*catch).id.clone())
                .unwrap_or_default(),
            tenant_id: thrower.record().tenant_id.clone(),
        };
        let key = self.next_key()?;
        let intent = match caught {
            Some(_) => Intent::Escalated,
            None => Intent::NotEscalated,
        };
        self.event(key, intent, record)?;
        if let Some((holder, catch)) = caught {
            self.fire_catch_event(&holder, catch, None, None)?;
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
