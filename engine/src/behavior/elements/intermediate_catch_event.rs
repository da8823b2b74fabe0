//! Intermediate catch events: a timer (waits until it fires), a message or a signal
//! (opens a subscription and waits for it), or a link (entered from a link throw event
//! of its scope; passes the token on at once). After an event-based gateway, the
//! gateway held the trigger: the event is entered once it fired, with its variables,
//! and passes the token on at once.

use rill_protocol::Intent;

use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{CatchEventDefinition, ElementKind};
use crate::outcome::Evaluated;

pub(super) struct IntermediateCatchEvent;

fn definition(active: &Active) -> Result<&CatchEventDefinition> {
    match &active.element().kind {
        ElementKind::IntermediateCatchEvent(definition) => Ok(definition),
        _ => Err(wrong_kind(active, "intermediateCatchEvent")),
    }
}

impl ElementBehavior for IntermediateCatchEvent {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, trigger: Trigger) -> Evaluated {
        if after_event_gateway(active) {
            p.mark(active, Intent::ElementActivated)?;
            p.complete(active, trigger, Outgoing::All)?;
            return Ok(());
        }
        match definition(active)? {
            CatchEventDefinition::Message(definition) => {
                let subscription = p.evaluate_subscription(definition, active)?;
                p.create_process_message_subscription(active, subscription)?;
            }
            CatchEventDefinition::Timer(definition) => {
                let due = p.evaluate_timer(definition, active)?;
                p.create_timer(active, &active.element().id, due)?;
            }
            CatchEventDefinition::Signal(definition) => {
                let name = p.evaluate_string(&definition.signal_name, active)?;
                p.open_signal_subscription(active, &active.element().id, name)?;
            }
            CatchEventDefinition::Link { .. } => {
                p.mark(active, Intent::ElementActivated)?;
                p.complete(active, None, Outgoing::All)?;
                return Ok(());
            }
        }
        p.mark(active, Intent::ElementActivated)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        if after_event_gateway(active) {
            return Ok(());
        }
        release(p, active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        release(p, active)?;
        p.resolve_element_incident(active.key())
    }
}

/// Whether the event follows an event-based gateway (the only way in, as validated at
/// deploy).
fn after_event_gateway(active: &Active) -> bool {
    let model = &active.process.model;
    active.element().incoming.iter().any(|flow| {
        matches!(
            model.element(model.flow(*flow).source).kind,
            ElementKind::EventBasedGateway
        )
    })
}

/// Cancels the event's timer or closes its subscription.
fn release(p: &mut Processing<'_>, active: &Active) -> Result<()> {
    match definition(active)? {
        CatchEventDefinition::Timer(_) => p.cancel_timers(active.key()),
        CatchEventDefinition::Message(_) => p.close_message_subscriptions(active.key()),
        CatchEventDefinition::Signal(_) => p.close_signal_subscriptions(active.key()),
        CatchEventDefinition::Link { .. } => Ok(()),
    }
}
