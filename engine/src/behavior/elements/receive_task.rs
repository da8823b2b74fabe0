//! Receive task: opens a message subscription and waits for the message. It may carry
//! boundary events.

use rill_protocol::Intent;

use super::{ElementBehavior, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct ReceiveTask;

impl ElementBehavior for ReceiveTask {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::ReceiveTask(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "receiveTask").into());
        };
        let subscription = p.evaluate_subscription(definition, active)?;
        p.open_event_triggers(active)?;
        p.create_process_message_subscription(active, subscription)?;
        p.mark(active, Intent::ElementActivated)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.close_message_subscriptions(active.key())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        p.close_message_subscriptions(active.key())?;
        p.resolve_element_incident(active.key())
    }
}
