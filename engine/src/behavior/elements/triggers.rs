//! Event triggers an element instance holds for catch events other than itself:
//!
//! ```text
//!  holder                catch events it holds         when one fires
//!  activity              its boundary events           interrupting: terminate the activity,
//!                                                        then enter the boundary event;
//!                                                        else enter it beside the activity
//!  process / subprocess  its event subprocesses'       interrupting: close the event
//!  / ad-hoc subprocess   start events                    subprocesses' triggers (and an
//!                                                        ad-hoc subprocess's job), terminate
//!                                                        the children, enter the event
//!                                                        subprocess; else just enter it
//!  event-based gateway   the catch events after it     complete the gateway (closing the
//!                                                        others), take the flow to the one
//!                                                        that fired; it passes through
//! ```
//!
//! Timers, message and signal subscriptions are opened when the holder is entered (all
//! evaluated first, so a failure opens none) and closed when it is left. A timer's
//! `targetElementId`, a message subscription's `elementId` and a signal
//! subscription's `catchEventId` name the catch event; the element instance key is the
//! holder's. Errors and escalations are caught by walking up the scopes
//! (`behavior/errors.rs`) and fired here like any trigger. A new kind of trigger adds a
//! variant to [`Opening`] and its open and close calls.

use rill_protocol::Key;
use rill_protocol::value::BpmnElementType;

use super::{Outgoing, Trigger};
use crate::behavior::messages::NewSubscription;
use crate::behavior::process_events::EventTarget;
use crate::behavior::timers::Due;
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{CatchEventDefinition, ElementIdx, ElementKind, TriggerDefinition};
use crate::outcome::{Evaluated, Failure};
use crate::state::ElementState;

/// A trigger evaluated and ready to open.
enum Opening {
    Timer {
        catch_event: String,
        due: Due,
    },
    Message(NewSubscription),
    Signal {
        catch_event: String,
        signal_name: String,
    },
}

/// Triggers evaluated and ready to open.
pub(crate) struct PreparedTriggers(Vec<Opening>);

/// The catch events whose triggers an element instance holds.
pub(crate) fn held_catch_events(active: &Active) -> Vec<ElementIdx> {
    let element = active.element();
    let model = &active.process.model;
    let mut held = Vec::new();
    // The boundary events of a multi-instance activity belong to its body; the event
    // subprocesses of a multi-instance subprocess to each inner instance.
    if !active.is_multi_instance_inner() {
        // A compensation boundary event waits for nothing while the activity runs.
        held.extend(element.boundary_events.iter().copied().filter(|b| {
            !matches!(
                model.element(*b).kind.trigger(),
                Some((TriggerDefinition::Compensation { .. }, _))
            )
        }));
    }
    if !active.is_multi_instance_body() {
        held.extend(model.event_subprocess_starts(active.idx));
    }
    if matches!(element.kind, ElementKind::EventBasedGateway) {
        held.extend(element.outgoing.iter().map(|f| model.flow(*f).target));
    }
    held
}

/// What a held catch event waits for that is opened with its holder.
enum Waits<'m> {
    Timer(&'m crate::model::TimerDefinition),
    Message(&'m crate::model::MessageDefinition),
    Signal(&'m crate::model::SignalDefinition),
}

/// What a held catch event waits for and whether it interrupts; `None` for an event
/// thrown inside (an error, an escalation), which needs nothing opened.
fn waits_for(kind: &ElementKind) -> Option<(Waits<'_>, bool)> {
    match kind {
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(timer)) => {
            Some((Waits::Timer(timer), true))
        }
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(message)) => {
            Some((Waits::Message(message), true))
        }
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Signal(signal)) => {
            Some((Waits::Signal(signal), true))
        }
        _ => match kind.trigger()? {
            (TriggerDefinition::Timer(timer), interrupting) => {
                Some((Waits::Timer(timer), interrupting))
            }
            (TriggerDefinition::Message(message), interrupting) => {
                Some((Waits::Message(message), interrupting))
            }
            (TriggerDefinition::Signal(signal), interrupting) => {
                Some((Waits::Signal(signal), interrupting))
            }
            (
                TriggerDefinition::Error { .. }
                | TriggerDefinition::Escalation { .. }
                | TriggerDefinition::Compensation { .. },
                _,
            ) => None,
        },
    }
}

impl Processing<'_> {
    /// Opens the timers and message subscriptions of the catch events an element
    /// instance holds. Everything is evaluated first: when one fails, none is opened.
    pub(super) fn open_event_triggers(&mut self, active: &Active) -> Evaluated {
        let prepared = self.prepare_event_triggers(active, |_| true)?;
        self.open_prepared_triggers(active, prepared)?;
        Ok(())
    }

    /// Evaluates the triggers of the held catch events that `wanted` selects, opening
    /// nothing yet (a migration evaluates before it writes anything).
    pub(crate) fn prepare_event_triggers(
        &mut self,
        active: &Active,
        wanted: impl Fn(ElementIdx) -> bool,
    ) -> Evaluated<PreparedTriggers> {
        let process = active.process.clone();
        let mut openings = Vec::new();
        for catch in held_catch_events(active) {
            if !wanted(catch) {
                continue;
            }
            let element = process.model.element(catch);
            match waits_for(&element.kind) {
                Some((Waits::Timer(definition), _)) => openings.push(Opening::Timer {
                    catch_event: element.id.clone(),
                    due: self.evaluate_timer(definition, active)?,
                }),
                Some((Waits::Message(definition), interrupting)) => {
                    let subscription = self
                        .evaluate_subscription(definition, active)?
                        .for_catch_event(&element.id, interrupting);
                    self.check_message_free(active, &openings, &subscription.message_name)?;
                    openings.push(Opening::Message(subscription));
                }
                Some((Waits::Signal(definition), _)) => openings.push(Opening::Signal {
                    catch_event: element.id.clone(),
                    signal_name: self.evaluate_string(&definition.signal_name, active)?,
                }),
                None => {}
            }
        }
        Ok(PreparedTriggers(openings))
    }

    /// Opens triggers evaluated by [`Processing::prepare_event_triggers`].
    pub(crate) fn open_prepared_triggers(
        &mut self,
        active: &Active,
        prepared: PreparedTriggers,
    ) -> Result<()> {
        for opening in prepared.0 {
            match opening {
                Opening::Timer { catch_event, due } => {
                    self.create_timer(active, &catch_event, due)?
                }
                Opening::Message(subscription) => {
                    self.create_process_message_subscription(active, subscription)?
                }
                Opening::Signal {
                    catch_event,
                    signal_name,
                } => self.open_signal_subscription(active, &catch_event, signal_name)?,
            }
        }
        Ok(())
    }

    /// An element instance tells its subscriptions apart by message name: a name that
    /// an expression gave twice cannot be awaited twice (static names are checked at
    /// deploy).
    fn check_message_free(&self, active: &Active, openings: &[Opening], name: &str) -> Evaluated {
        let opening = openings
            .iter()
            .any(|o| matches!(o, Opening::Message(s) if s.message_name == name));
        if opening
            || self
                .read()
                .process_message_subscription(active.key(), name)?
                .is_some()
        {
            return Err(Failure::extract_value(format!(
                "Expected to subscribe to the message '{name}' for '{}', but it already waits \
                 for a message with that name; give the events different message names",
                active.element().id
            ))
            .into());
        }
        Ok(())
    }

    /// Closes what an element instance holds for its catch events: it is being left.
    pub(super) fn close_event_triggers(&mut self, active: &Active) -> Result<()> {
        let held = held_catch_events(active);
        if held.is_empty() {
            return Ok(());
        }
        self.cancel_timers(active.key())?;
        self.close_message_subscriptions(active.key())?;
        let model = &active.process.model;
        if held.iter().any(|c| {
            matches!(
                waits_for(&model.element(*c).kind),
                Some((Waits::Signal(_), _))
            )
        }) {
            self.close_signal_subscriptions(active.key())?;
        }
        Ok(())
    }

    /// Closes the triggers of a scope's event subprocesses, keeping those of its
    /// boundary events: an interrupting event subprocess started.
    fn close_event_subprocess_triggers(&mut self, scope: &Active) -> Result<()> {
        let model = &scope.process.model;
        let starts: Vec<String> = model
            .event_subprocess_starts(scope.idx)
            .map(|start| model.element(start).id.clone())
            .collect();
        if starts.is_empty() {
            return Ok(());
        }
        let reader = self.read();
        let mut timers = Vec::new();
        for key in reader.timers_of_element(scope.key())? {
            if let Some(timer) = reader.timer(key)?
                && starts.contains(&timer.target_element_id)
            {
                timers.push((key, timer));
            }
        }
        let names: Vec<String> = reader
            .process_message_subscriptions(scope.key())?
            .into_iter()
            .filter(|s| starts.contains(&s.record.element_id))
            .map(|s| s.record.message_name)
            .collect();
        let signals: Vec<_> = reader
            .signal_subscriptions_of(scope.key())?
            .into_iter()
            .filter(|s| starts.contains(&s.record.catch_event_id))
            .collect();
        for (key, timer) in timers {
            self.event(key, rill_protocol::Intent::Canceled, timer)?;
        }
        for name in names {
            self.close_message_subscription(scope.key(), &name)?;
        }
        for subscription in signals {
            self.event(
                subscription.key,
                rill_protocol::Intent::Deleted,
                subscription.record,
            )?;
        }
        Ok(())
    }

    /// A timer, a message or a signal of `catch_event`, held by the element instance `holder`,
    /// arrived: the holder completes when it is the catch event itself (an intermediate
    /// catch event, a receive task), else the catch event fires.
    pub fn trigger_catch_event(
        &mut self,
        holder: Key,
        catch_event: &str,
        trigger: Trigger,
    ) -> Result<()> {
        let Some(active) = self.active(holder)? else {
            return Ok(());
        };
        if active.instance.state != ElementState::Activated {
            return Ok(());
        }
        let holds_itself = active.element().id == catch_event;
        let catch = active.process.model.element_by_id(catch_event);
        if !holds_itself && catch.is_none() {
            return Ok(());
        }
        let record = active.record();
        let event = EventTarget {
            scope_key: holder.get(),
            element_id: catch_event,
            process_definition_key: record.process_definition_key,
            process_instance_key: record.process_instance_key,
            tenant_id: &record.tenant_id,
        };
        let event_key = self.process_event_triggering(&event, trigger.as_ref())?;
        match catch {
            Some(catch) if !holds_itself => {
                self.fire_catch_event(&active, catch, trigger, Some(event_key))
            }
            _ => {
                self.process_event_triggered(event_key, &event)?;
                self.complete_with(holder, trigger)
            }
        }
    }

    /// Fires a catch event whose trigger `holder` holds (see the module's table).
    /// `event` is its PROCESS_EVENT TRIGGERING, if one was written (a timer, a message,
    /// a signal); TRIGGERED follows when the catch event is activated. An interrupting
    /// event waits while canceling task listeners hold up the termination it needs: its
    /// trigger is kept with the holder (TRIGGERING, written now for an error or an
    /// escalation) and activated once the termination ends.
    pub(crate) fn fire_catch_event(
        &mut self,
        holder: &Active,
        catch: ElementIdx,
        trigger: Trigger,
        event: Option<Key>,
    ) -> Result<()> {
        let process = holder.process.clone();
        let element = process.model.element(catch);
        match &element.kind {
            ElementKind::BoundaryEvent { interrupting, .. } => {
                let scope_key = Key(holder.record().flow_scope_key);
                if *interrupting && !self.terminate(holder.key())? {
                    return self.keep_trigger(holder, catch, trigger.as_ref(), event);
                }
                self.event_triggered(holder, catch, event)?;
                self.activate(scope_key, &process, catch, trigger)
            }
            ElementKind::EventStartEvent { interrupting, .. } => {
                let Some(subprocess) = element.flow_scope else {
                    return Ok(());
                };
                if *interrupting {
                    self.close_event_subprocess_triggers(holder)?;
                    self.interrupt_ad_hoc_job(holder)?;
                    if !self.terminate_children(holder.key())? {
                        return self.keep_trigger(holder, catch, trigger.as_ref(), event);
                    }
                }
                self.event_triggered(holder, catch, event)?;
                self.activate(holder.key(), &process, subprocess, trigger)
            }
            ElementKind::IntermediateCatchEvent(_) => {
                let Some(flow) = holder
                    .element()
                    .outgoing
                    .iter()
                    .copied()
                    .find(|f| process.model.flow(*f).target == catch)
                else {
                    return Ok(());
                };
                self.event_triggered(holder, catch, event)?;
                self.complete(holder, None, Outgoing::Triggered(flow, trigger))
            }
            _ => self.event_triggered(holder, catch, event),
        }
    }

    fn event_target<'a>(holder: &'a Active, catch: ElementIdx) -> EventTarget<'a> {
        let record = holder.record();
        EventTarget {
            scope_key: holder.key().get(),
            element_id: &holder.process.model.element(catch).id,
            process_definition_key: record.process_definition_key,
            process_instance_key: record.process_instance_key,
            tenant_id: &record.tenant_id,
        }
    }

    /// Writes TRIGGERED for the PROCESS_EVENT `event`, if one was written.
    pub(super) fn event_triggered(
        &mut self,
        holder: &Active,
        catch: ElementIdx,
        event: Option<Key>,
    ) -> Result<()> {
        match event {
            Some(key) => self.process_event_triggered(key, &Self::event_target(holder, catch)),
            None => Ok(()),
        }
    }

    /// An interrupting event waits for a held-up termination: its trigger stays kept with
    /// the holder (TRIGGERING's applier keeps it; written now if it was not yet).
    fn keep_trigger(
        &mut self,
        holder: &Active,
        catch: ElementIdx,
        trigger: Option<&serde_json::Map<String, serde_json::Value>>,
        event: Option<Key>,
    ) -> Result<()> {
        if event.is_none() {
            self.process_event_triggering(&Self::event_target(holder, catch), trigger)?;
        }
        Ok(())
    }

    /// Whether an ad-hoc subprocess activates nothing more: an interrupting event
    /// subprocess runs in it, or waits to start (its trigger kept while canceling
    /// listeners hold up the termination of the inner instances).
    pub(crate) fn ad_hoc_interrupted(&self, ad_hoc: &Active) -> Result<bool> {
        if self.interrupted_by_event_subprocess(ad_hoc)? {
            return Ok(true);
        }
        let kept = self.kept_trigger(ad_hoc, |kind| {
            matches!(kind, ElementKind::EventStartEvent { .. })
        })?;
        Ok(kept.is_some())
    }

    /// Whether an interrupting event subprocess already runs in a scope: then none of
    /// its event subprocesses can start again.
    pub(crate) fn interrupted_by_event_subprocess(&self, scope: &Active) -> Result<bool> {
        let model = &scope.process.model;
        for child in self.read().children(scope.key())? {
            let Some(instance) = self.read().element_instance(child)? else {
                continue;
            };
            if instance.record.bpmn_element_type != BpmnElementType::EventSubProcess {
                continue;
            }
            let interrupting = model
                .element_by_id(&instance.record.element_id)
                .and_then(|idx| model.start_event(idx))
                .is_some_and(|start| {
                    matches!(model.element(start).kind.trigger(), Some((_, true)))
                });
            if interrupting {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
