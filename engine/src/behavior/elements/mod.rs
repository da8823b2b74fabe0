//! Zeebe's element lifecycle, done in-line:
//!
//! ```text
//!  ACTIVATING ──► ACTIVATED ──► COMPLETING ──► COMPLETED ──► SEQUENCE_FLOW_TAKEN…
//!      │  (incident: stays)          │ (incident: stays)
//!      └──────────────┬──────────────┘
//!                TERMINATING ──► TERMINATED
//! ```
//!
//! This module runs the transitions that every element goes through (input and output
//! mappings, the lifecycle events, taking flows, ending an instance); what differs per
//! element kind is in one file per kind, behind [`ElementBehavior`], and [`behavior`] is
//! the one place that maps a kind to its file.
//!
//! An expression that fails raises an incident and leaves the element where it was;
//! resolving the incident runs the step again. Everything that can fail is evaluated
//! before the step emits anything.

mod ad_hoc_sub_process;
mod boundary_event;
mod business_rule_task;
mod call_activity;
mod end_event;
mod event_based_gateway;
mod exclusive_gateway;
mod inclusive_gateway;
mod intermediate_catch_event;
mod intermediate_throw_event;
mod migration;
mod modification;
mod multi_instance_body;
mod parallel_gateway;
mod process;
mod receive_task;
mod script_task;
mod service_task;
mod start_event;
mod sub_process;
mod task;
mod triggers;
mod user_task;

pub(crate) use ad_hoc_sub_process::{
    ad_hoc_definition, resolve_elements as resolve_ad_hoc_elements,
};
pub(crate) use migration::held_catch_event_ids;
pub(crate) use triggers::PreparedTriggers;

use std::sync::Arc;

use rill_protocol::value::{
    BpmnElementType, BpmnEventType, IncidentErrorType, JobKind, JobListenerEventType,
    ProcessInstanceRecord,
};
use rill_protocol::{Intent, Key};
use serde_json::{Map, Value};

use crate::behavior::EndingInstance;
use crate::behavior::process_events::EventTarget;
use crate::context::{Active, Processing, Step};
use crate::error::{Result, inconsistent};
use crate::model::{Element, ElementIdx, ElementKind, FlowIdx, ProcessModel, ThrowEventDefinition};
use crate::model_cache::DeployedProcess;
use crate::outcome::{Evaluated, Failure, Halt};
use crate::state::ElementState;

/// The hidden local variable of a sequential multi-instance body that keeps its input
/// collection as evaluated on entry (Zeebe 8.8 keeps it in its own record type, which
/// Rill's protocol does not have). Left out of "all variables" reads.
pub(super) const INPUT_SNAPSHOT: &str = rill_protocol::value::INPUT_COLLECTION_VARIABLE;

/// Variables of the event that triggered an element (a caught error, a message).
type Trigger = Option<Map<String, Value>>;

/// What one element kind does in each step of its lifecycle (Zeebe's
/// `BpmnElementProcessor`). Implemented by a unit struct per kind; [`behavior`] picks it.
trait ElementBehavior: Sync {
    /// Whether a token that arrived may enter the element now (a parallel join waits
    /// for a token on every incoming flow).
    fn may_enter(
        &self,
        _p: &Processing<'_>,
        _scope_key: Key,
        _model: &ProcessModel,
        _element: &Element,
    ) -> Result<bool> {
        Ok(true)
    }

    /// Runs in ELEMENT_ACTIVATING, after the input mappings: evaluates what the element
    /// needs, creates what it waits on and writes ELEMENT_ACTIVATED; an element that
    /// does not wait goes on to complete. Nothing is written before everything that can
    /// fail was evaluated: a [`Failure`](crate::outcome::Failure) becomes an incident
    /// and the element stays in ELEMENT_ACTIVATING.
    fn activate(&self, p: &mut Processing<'_>, active: &Active, trigger: Trigger) -> Evaluated;

    /// Runs in ELEMENT_COMPLETING, after the output mappings: releases what the element
    /// holds (timers, subscriptions) before ELEMENT_COMPLETED.
    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()>;

    /// Runs in ELEMENT_TERMINATING: releases what the element holds and resolves its
    /// incident. What runs inside it (children, a called instance) is terminated next by
    /// the lifecycle, before ELEMENT_TERMINATED.
    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()>;
}

/// The behaviour of an element kind.
fn behavior(kind: &ElementKind) -> &'static dyn ElementBehavior {
    match kind {
        ElementKind::Process { .. } => &process::Process,
        ElementKind::SubProcess { .. } => &sub_process::SubProcess,
        ElementKind::StartEvent
        | ElementKind::EventStartEvent { .. }
        | ElementKind::TimerStartEvent(_)
        | ElementKind::MessageStartEvent { .. }
        | ElementKind::SignalStartEvent { .. } => &start_event::StartEvent,
        ElementKind::EndEvent(_) => &end_event::EndEvent,
        ElementKind::Task | ElementKind::ManualTask => &task::Task,
        ElementKind::ServiceTask(_) | ElementKind::SendTask(_) => &service_task::ServiceTask,
        ElementKind::ScriptTask(_) => &script_task::ScriptTask,
        ElementKind::BusinessRuleTask(_) => &business_rule_task::BusinessRuleTask,
        ElementKind::ReceiveTask(_) => &receive_task::ReceiveTask,
        ElementKind::UserTask(_) => &user_task::UserTask,
        ElementKind::CallActivity(_) => &call_activity::CallActivity,
        ElementKind::ExclusiveGateway { .. } => &exclusive_gateway::ExclusiveGateway,
        ElementKind::ParallelGateway => &parallel_gateway::ParallelGateway,
        ElementKind::EventBasedGateway => &event_based_gateway::EventBasedGateway,
        ElementKind::InclusiveGateway { .. } => &inclusive_gateway::InclusiveGateway,
        ElementKind::IntermediateCatchEvent(_) => &intermediate_catch_event::IntermediateCatchEvent,
        ElementKind::IntermediateThrowEvent(_) => &intermediate_throw_event::IntermediateThrowEvent,
        ElementKind::BoundaryEvent { .. } => &boundary_event::BoundaryEvent,
        ElementKind::AdHocSubProcess(_) => &ad_hoc_sub_process::AdHocSubProcess,
        ElementKind::AdHocInnerInstance { .. } => &ad_hoc_sub_process::InnerInstance,
    }
}

/// The behaviour of a live element instance: a multi-instance body has its own, an
/// inner instance runs its element's kind.
fn behavior_of(active: &Active) -> &'static dyn ElementBehavior {
    if active.is_multi_instance_body() {
        &multi_instance_body::MultiInstanceBody
    } else {
        behavior(&active.element().kind)
    }
}

/// An element was dispatched to a behaviour that does not fit its kind.
fn wrong_kind(active: &Active, expected: &str) -> crate::error::Error {
    inconsistent(format!(
        "element '{}' is a {}, not a {expected}",
        active.element().id,
        active.element().kind.bpmn_name()
    ))
}

/// Marks a scope (a process or a subprocess) activated and enters its start event,
/// with the variables of the event that started it (an event subprocess's trigger).
fn enter_scope(
    p: &mut Processing<'_>,
    active: &Active,
    start_event: ElementIdx,
    trigger: Trigger,
) -> Result<()> {
    p.mark(active, Intent::ElementActivated)?;
    p.push_step(Step::Activate {
        scope_key: active.key(),
        process: active.process.clone(),
        element: start_event,
        trigger,
    });
    Ok(())
}

/// An activity that does no work (undefined and manual tasks): it opens its boundary
/// events' triggers as every activity does on entry, and completes at once, which
/// closes them.
fn pass_through_activity(p: &mut Processing<'_>, active: &Active) -> Evaluated {
    p.open_event_triggers(active)?;
    p.mark(active, Intent::ElementActivated)?;
    p.complete(active, None, Outgoing::All)?;
    Ok(())
}

/// Which outgoing flows a completing element takes.
enum Outgoing {
    All,
    One(FlowIdx),
    Many(Vec<FlowIdx>),
    /// One flow, whose target is entered with the variables of the event that chose it
    /// (an event-based gateway).
    Triggered(FlowIdx, Trigger),
}

impl Processing<'_> {
    /// Enters an element: ELEMENT_ACTIVATING, then its activation behaviour.
    pub fn activate(
        &mut self,
        scope_key: Key,
        process: &Arc<DeployedProcess>,
        idx: ElementIdx,
        trigger: Trigger,
    ) -> Result<()> {
        let Some(scope) = self.read().element_instance(scope_key)? else {
            return Ok(());
        };
        if scope.state != ElementState::Activated {
            // The scope is ending; the token dies with it.
            return Ok(());
        }
        let element = process.model.element(idx);
        if !behavior(&element.kind).may_enter(self, scope_key, &process.model, element)? {
            return Ok(());
        }
        let active = self.enter_element(scope_key, scope.record, process, idx)?;
        self.run_activation(active, trigger)
    }

    /// Writes ELEMENT_ACTIVATING of an element entered in the scope `scope_key` (whose
    /// record is `scope`), as its multi-instance body when it has one.
    fn enter_element(
        &mut self,
        scope_key: Key,
        scope: ProcessInstanceRecord,
        process: &Arc<DeployedProcess>,
        idx: ElementIdx,
    ) -> Result<Active> {
        let element = process.model.element(idx);
        // A multi-instance element is entered as its body; the body enters the element
        // itself once per item (its inner instances).
        let inner = scope.bpmn_element_type == BpmnElementType::MultiInstanceBody
            && scope.element_id == element.id;
        // A compensation handler runs with the event type COMPENSATION (its body, for a
        // multi-instance one).
        let (bpmn_element_type, bpmn_event_type) = if element.multi_instance.is_some() && !inner {
            let event_type = if element.for_compensation {
                BpmnEventType::Compensation
            } else {
                BpmnEventType::Unspecified
            };
            (BpmnElementType::MultiInstanceBody, event_type)
        } else if element.for_compensation && !inner {
            (element.element_type(), BpmnEventType::Compensation)
        } else {
            (element.element_type(), element.event_type())
        };
        let record = ProcessInstanceRecord {
            bpmn_element_type,
            element_id: element.id.clone(),
            flow_scope_key: scope_key.get(),
            bpmn_event_type,
            ..scope
        };
        let key = self.next_key()?;
        let mut activating = record.clone();
        self.fill_tree_path(key, &mut activating)?;
        self.event(key, Intent::ElementActivating, activating)?;
        Ok(Active {
            instance: crate::state::ElementInstance {
                key,
                state: ElementState::Activating,
                record,
                active_children: 0,
                active_flows: 0,
                job_key: Key::NONE,
                has_variables: false,
                awaited: false,
                listeners_done: 0,
                ad_hoc_completion_fulfilled: false,
            },
            process: process.clone(),
            idx,
        })
    }

    /// Enters a new process instance (ELEMENT_ACTIVATING of the process element).
    pub fn enter_process(&mut self, key: Key, mut record: ProcessInstanceRecord) -> Result<()> {
        self.fill_tree_path(key, &mut record)?;
        self.event(key, Intent::ElementActivating, record)
    }

    /// Runs the activation of an entered process instance (then its start event).
    pub fn start_process(&mut self, key: Key) -> Result<()> {
        let active = self
            .active(key)?
            .ok_or_else(|| inconsistent(format!("process instance {key} vanished")))?;
        self.run_activation(active, None)
    }

    /// Creates an instance that starts at a timer, message or signal start event, with
    /// `variables` in its process scope (a message's or a signal's); returns its key.
    pub fn start_instance_at(
        &mut self,
        process: &Arc<DeployedProcess>,
        start: ElementIdx,
        variables: Map<String, Value>,
    ) -> Result<Key> {
        let key = self.next_key()?;
        let root = Processing::root_record(process, key);
        let event = EventTarget {
            scope_key: process.key.get(),
            element_id: &process.model.element(start).id,
            process_definition_key: process.key.get(),
            process_instance_key: key.get(),
            tenant_id: &root.tenant_id,
        };
        // The event's own variables, without Rill's bookkeeping of message starts.
        let mut event_variables = variables.clone();
        event_variables.remove(crate::behavior::MESSAGE_START_VARIABLE);
        let event_key = self.process_event_triggering(&event, Some(&event_variables))?;
        for (name, value) in &variables {
            self.set_variable(&root, key, name, value)?;
        }
        self.enter_process(key, root.clone())?;
        let active = self
            .active(key)?
            .ok_or_else(|| inconsistent(format!("process instance {key} vanished")))?;
        // The event subprocesses' triggers first, as when a process is entered by a
        // command; one that cannot be evaluated is an incident on the process.
        if let Err(halt) = self.open_event_triggers(&active) {
            self.incident_on(&active, halt)?;
            return Ok(key);
        }
        let event = EventTarget {
            scope_key: process.key.get(),
            element_id: &process.model.element(start).id,
            process_definition_key: process.key.get(),
            process_instance_key: key.get(),
            tenant_id: &root.tenant_id,
        };
        self.process_event_triggered(event_key, &event)?;
        enter_scope(self, &active, start, None)?;
        Ok(key)
    }

    /// The activation of an element in ELEMENT_ACTIVATING (first time, or again after an
    /// incident was resolved): its input mappings, then its kind's behaviour. A failure
    /// to evaluate either becomes an incident, and the element stays in
    /// ELEMENT_ACTIVATING.
    pub fn run_activation(&mut self, active: Active, trigger: Trigger) -> Result<()> {
        match self.activation(&active, trigger) {
            Ok(()) => Ok(()),
            Err(halt) => self.incident_on(&active, halt),
        }
    }

    fn activation(&mut self, active: &Active, mut trigger: Trigger) -> Evaluated {
        if active.is_multi_instance_inner() {
            // The item, the output element and the loop counter come before the input
            // mappings, which may read them.
            self.set_loop_variables(active, trigger.take())?;
        }
        // A command that has written too much enters no further element: this one
        // waits in ELEMENT_ACTIVATING with an incident, and resolving it goes on.
        if let Some(reason) = self.work_exhausted()? {
            return Err(Failure::new(
                IncidentErrorType::MessageSizeExceeded,
                format!(
                    "Processing stopped before entering element '{}': the command wrote {reason}. \
                     The process may loop without a wait state; resolve the incident to go on",
                    active.element().id
                ),
            )
            .into());
        }
        if !active.element().inputs.is_empty() && !active.is_multi_instance_body() {
            let locals = self.evaluate_inputs(active)?;
            self.set_local_variables(&active.instance, locals)?;
        }
        // Start listeners run first; elements that take a trigger (boundary events)
        // have none.
        if self.next_listener(active, JobListenerEventType::Start)? {
            return Ok(());
        }
        behavior_of(active).activate(self, active, trigger)
    }

    /// A start listener of an element in ELEMENT_ACTIVATING completed: the next one, or
    /// the element's own activation (its input mappings are not applied again).
    pub(crate) fn resume_activation_after_listener(&mut self, key: Key) -> Result<()> {
        let Some(active) = self.active(key)? else {
            return Ok(());
        };
        let step = match self.next_listener(&active, JobListenerEventType::Start) {
            Ok(true) => Ok(()),
            Ok(false) => behavior_of(&active).activate(self, &active, None),
            Err(halt) => Err(halt),
        };
        match step {
            Ok(()) => Ok(()),
            Err(halt) => self.incident_on(&active, halt),
        }
    }

    /// An end listener of an element in ELEMENT_COMPLETING completed: the next one, or
    /// the rest of the completion (its output mappings are not applied again).
    pub(crate) fn resume_completion_after_listener(&mut self, key: Key) -> Result<()> {
        let Some(active) = self.active(key)? else {
            return Ok(());
        };
        self.complete_after_outputs(&active, Outgoing::All)
    }

    /// Writes a lifecycle event for an instance with its stored record.
    pub fn mark(&mut self, active: &Active, intent: Intent) -> Result<()> {
        self.event(active.key(), intent, active.record().clone())
    }

    /// Where an element step that stopped early ends: a failure becomes an incident on
    /// the element; an error aborts the command.
    fn incident_on(&mut self, active: &Active, halt: Halt) -> Result<()> {
        match halt {
            Halt::Failed(failure) => self.raise_incident(
                active.record(),
                active.key(),
                failure.error_type,
                failure.message,
                Key::NONE,
            ),
            Halt::Error(error) => Err(error),
        }
    }

    /// Completes an element whose work is done (a task's job completed, a message
    /// correlated, a timer fired), with the variables of that event.
    pub fn complete_with(&mut self, key: Key, trigger: Trigger) -> Result<()> {
        let Some(active) = self.active(key)? else {
            return Ok(());
        };
        if active.instance.state != ElementState::Activated {
            return Ok(());
        }
        self.complete(&active, trigger, Outgoing::All)
    }

    /// Completes a scope once no token is left in it (queued step).
    pub fn complete_scope(&mut self, key: Key) -> Result<()> {
        let Some(active) = self.active(key)? else {
            return Ok(());
        };
        if active.instance.state != ElementState::Activated {
            return Ok(());
        }
        self.complete(&active, None, Outgoing::All)
    }

    /// Runs the completion again after an incident in ELEMENT_COMPLETING was resolved.
    pub fn resume_completion(&mut self, active: Active) -> Result<()> {
        self.complete(&active, None, Outgoing::All)
    }

    /// Completes an element: ELEMENT_COMPLETING, the output mappings, its kind's
    /// completion, then ELEMENT_COMPLETED and the outgoing flows. A failing output
    /// mapping becomes an incident, and the element stays in ELEMENT_COMPLETING.
    fn complete(&mut self, active: &Active, trigger: Trigger, outgoing: Outgoing) -> Result<()> {
        if active.instance.state != ElementState::Completing {
            self.mark(active, Intent::ElementCompleting)?;
        }
        // A body's mappings belong to its inner instances.
        let has_outputs = !active.element().outputs.is_empty() && !active.is_multi_instance_body();
        if let Some(variables) = trigger {
            if has_outputs {
                self.set_local_variables(&active.instance, variables)?;
            } else {
                self.propagate_variables(active.key(), &active.instance, variables)?;
            }
        }
        if has_outputs {
            match self.evaluate_outputs(active) {
                Ok(values) => {
                    let scope = Key(active.record().flow_scope_key);
                    self.propagate_variables(scope, &active.instance, values)?;
                }
                Err(halt) => return self.incident_on(active, halt),
            }
        }
        self.complete_after_outputs(active, outgoing)
    }

    /// The completion after the output mappings: the end listeners one by one (the
    /// element waits in ELEMENT_COMPLETING for each), then the element's own
    /// completion, ELEMENT_COMPLETED and the outgoing flows.
    fn complete_after_outputs(&mut self, active: &Active, outgoing: Outgoing) -> Result<()> {
        if !active.element().listeners.end.is_empty() {
            // Catch events fire only on an activated element: a timer left armed while
            // the end listeners run would be proposed again and again by the leader.
            self.close_event_triggers(active)?;
        }
        match self.next_listener(active, JobListenerEventType::End) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(halt) => return self.incident_on(active, halt),
        }
        let mut inner_output = None;
        if active.is_multi_instance_inner() {
            match self.collect_inner_output(active) {
                Ok(output) => inner_output = Some(output),
                Err(halt) => return self.incident_on(active, halt),
            }
        }
        let ends_body = inner_output.as_ref().is_some_and(|o| o.ends_body);
        // An ad-hoc subprocess's own output collection may be named like the
        // multi-instance output collection: its completion propagates it before the
        // iteration's output is kept under that name.
        let own_output_first = matches!(active.element().kind, ElementKind::AdHocSubProcess(_));
        if !own_output_first && let Some(output) = inner_output.take() {
            self.keep_inner_output(active, output)?;
        }
        // An execution path of an ad-hoc subprocess ends: it decides what follows.
        let ad_hoc_path = if active.is_ad_hoc_inner() {
            Some(self.ad_hoc_inner_verdict(active))
        } else if ad_hoc_sub_process::is_ad_hoc_event_subprocess(active) {
            Some(self.ad_hoc_event_subprocess_verdict(active))
        } else {
            None
        };
        let ad_hoc_verdict = match ad_hoc_path {
            Some(Ok(verdict)) => Some(verdict),
            Some(Err(halt)) => return self.incident_on(active, halt),
            None => None,
        };
        behavior_of(active).complete(self, active)?;
        if let Some(output) = inner_output {
            self.keep_inner_output(active, output)?;
        }
        let record = active.record();
        let compensation = active.process.model.has_compensation;
        if compensation && record.bpmn_element_type != BpmnElementType::Process {
            self.open_compensation_subscription(active)?;
        }
        if record.bpmn_element_type == BpmnElementType::Process {
            let registration = if active.instance.awaited {
                self.read().await_registration(active.key())?
            } else {
                None
            };
            // A called instance hands its variables to its call activity.
            let parent = Key(record.parent_element_instance_key);
            let handed_back = if parent.get() > 0 {
                Some(self.child_variables(active)?)
            } else {
                None
            };
            let mut ending = self.ending_instance(active.key(), registration)?;
            self.mark(active, Intent::ElementCompleted)?;
            self.instance_finished(record, &mut ending, true);
            if let Some(variables) = handed_back {
                self.called_instance_completed(parent, variables)?;
            }
            return self.root_ended(active, &ending);
        }
        self.mark(active, Intent::ElementCompleted)?;
        let element = active.element();
        let scope_key = Key(record.flow_scope_key);
        if compensation && element.for_compensation && !active.is_multi_instance_inner() {
            self.compensation_handler_completed(active)?;
        }
        if active.is_multi_instance_inner() {
            // The body goes on: the next item, or its own completion.
            return self.inner_instance_completed(scope_key, active, ends_body);
        }
        if let Some(holds) = ad_hoc_verdict {
            // The ad-hoc subprocess decides: wait, or complete.
            return self.ad_hoc_inner_completed(scope_key, holds);
        }
        self.left_scope(active, scope_key);
        if let ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Link {
            catch_event, ..
        }) = &element.kind
        {
            // The token jumps to the link catch event: entered at once, in this step, so
            // that no other step sees the scope without it.
            return self.activate(scope_key, &active.process, *catch_event, None);
        }
        let (flows, carried): (Vec<FlowIdx>, Trigger) = match outgoing {
            Outgoing::One(flow) => (vec![flow], None),
            Outgoing::Many(flows) => (flows, None),
            Outgoing::All => (element.outgoing.clone(), None),
            Outgoing::Triggered(flow, trigger) => (vec![flow], trigger),
        };
        if flows.is_empty() {
            return self.token_ended(scope_key);
        }
        self.take_flows(scope_key, record, &active.process, &flows, carried)
    }

    /// A token ended in `scope_key`: complete the scope when it was the last one.
    fn token_ended(&mut self, scope_key: Key) -> Result<()> {
        let done = self.read().peek_element_instance(scope_key, |scope| {
            scope.state == ElementState::Activated
                && scope.active_children == 0
                && scope.active_flows == 0
        })?;
        if done == Some(true) {
            self.push_step(Step::Complete { key: scope_key });
        }
        Ok(())
    }

    fn take_flows(
        &mut self,
        scope_key: Key,
        from: &ProcessInstanceRecord,
        process: &Arc<DeployedProcess>,
        flows: &[FlowIdx],
        trigger: Trigger,
    ) -> Result<()> {
        let model: &ProcessModel = &process.model;
        for flow in flows {
            let key = self.next_key()?;
            let record = ProcessInstanceRecord {
                bpmn_element_type: BpmnElementType::SequenceFlow,
                element_id: model.flow(*flow).id.clone(),
                flow_scope_key: scope_key.get(),
                bpmn_event_type: BpmnEventType::Unspecified,
                ..from.clone()
            };
            self.event(key, Intent::SequenceFlowTaken, record)?;
        }
        for flow in flows {
            self.push_step(Step::Activate {
                scope_key,
                process: process.clone(),
                element: model.flow(*flow).target,
                trigger: trigger.clone(),
            });
        }
        Ok(())
    }

    /// Terminates an element instance and everything in it, depth-first: each instance
    /// writes ELEMENT_TERMINATING and releases what it holds, then what runs inside it
    /// (its children, a call activity's child instance) is terminated in order, then it
    /// writes ELEMENT_TERMINATED. Done with an explicit stack, not recursion: call
    /// activities nest instances up to `MAX_CALL_DEPTH` deep.
    ///
    /// A Camunda user task with `canceling` listeners holds its termination up: it stays
    /// in ELEMENT_TERMINATING while they run, and so does every instance above it in this
    /// walk (the rest is terminated as usual). Its last listener resumes the walk
    /// ([`Processing::resume_termination`]). Returns whether `key` is terminated now.
    pub fn terminate(&mut self, key: Key) -> Result<bool> {
        enum Work {
            Enter(Key),
            Leave(Box<Active>),
        }
        let mut work = vec![Work::Enter(key)];
        while let Some(item) = work.pop() {
            match item {
                Work::Enter(key) => {
                    let Some(active) = self.active(key)? else {
                        continue;
                    };
                    if active.instance.state != ElementState::Terminating {
                        self.mark(&active, Intent::ElementTerminating)?;
                    }
                    self.cancel_listener_job(&active)?;
                    behavior_of(&active).terminate(self, &active)?;
                    if self.termination_held(&active)? {
                        continue;
                    }
                    let inside = self.runs_inside(&active)?;
                    work.push(Work::Leave(Box::new(active)));
                    work.extend(inside.into_iter().rev().map(Work::Enter));
                }
                Work::Leave(active) => {
                    // Something inside still waits for its canceling listeners.
                    if !self.nothing_inside(&active)? {
                        continue;
                    }
                    self.terminated(&active)?
                }
            }
        }
        Ok(self.read().element_instance(key)?.is_none())
    }

    /// Whether nothing runs inside a terminating instance any more (no live child, no
    /// live called instance).
    fn nothing_inside(&self, active: &Active) -> Result<bool> {
        if active.record().bpmn_element_type == BpmnElementType::CallActivity {
            let child = active.instance.job_key;
            return Ok(child.get() <= 0 || self.read().element_instance(child)?.is_none());
        }
        let children = self
            .read()
            .peek_element_instance(active.key(), |i| i.active_children)?;
        Ok(children.unwrap_or(0) == 0)
    }

    /// The canceling listeners of the terminated user task `key` ran (its CANCELED is
    /// written): the task is terminated, then each terminating instance above it that
    /// waited only for it, then what waited for those: the interrupting boundary event
    /// kept for one of them, or the scope the last of them was in (which activates its
    /// interrupting event subprocess, or completes as its kind does once it is empty).
    pub(crate) fn resume_termination(&mut self, key: Key) -> Result<()> {
        let mut next = key;
        loop {
            let Some(active) = self.active(next)? else {
                return Ok(());
            };
            if active.instance.state != ElementState::Terminating
                || !self.nothing_inside(&active)?
            {
                return Ok(());
            }
            let boundary = self.kept_trigger(&active, |kind| {
                matches!(kind, ElementKind::BoundaryEvent { .. })
            })?;
            let record = active.record();
            let up = if record.bpmn_element_type == BpmnElementType::Process {
                Key(record.parent_element_instance_key)
            } else {
                Key(record.flow_scope_key)
            };
            self.terminated(&active)?;
            if let Some((event_key, catch, trigger)) = boundary {
                let scope_key = Key(active.record().flow_scope_key);
                self.activate_kept(&active, event_key, catch, scope_key, catch, trigger)?;
            }
            if up.get() <= 0 {
                return Ok(());
            }
            let Some(scope) = self.active(up)? else {
                return Ok(());
            };
            match scope.instance.state {
                ElementState::Terminating => next = up,
                // A called instance ends only with its call activity's termination.
                ElementState::Activated
                    if scope.record().bpmn_element_type != BpmnElementType::CallActivity =>
                {
                    return self.child_terminated_in(&scope);
                }
                ElementState::Completing if self.nothing_inside(&scope)? => {
                    // An ad-hoc subprocess that completes once what it canceled is gone.
                    return self.resume_completion(scope);
                }
                _ => return Ok(()),
            }
        }
    }

    /// A child of the live scope `scope` finished a termination that its canceling
    /// listeners held up: once nothing is left inside, the interrupting event
    /// subprocess kept for the scope starts, or else the scope goes on as if a token
    /// had ended in it.
    fn child_terminated_in(&mut self, scope: &Active) -> Result<()> {
        if !self.nothing_inside(scope)? {
            return Ok(());
        }
        let model = &scope.process.model;
        let kept = self.kept_trigger(scope, |kind| {
            matches!(kind, ElementKind::EventStartEvent { .. })
        })?;
        if let Some((event_key, start, trigger)) = kept {
            let Some(subprocess) = model.element(start).flow_scope else {
                return Ok(());
            };
            return self.activate_kept(scope, event_key, start, scope.key(), subprocess, trigger);
        }
        if let ElementKind::AdHocSubProcess(definition) = &scope.element().kind
            && !scope.is_multi_instance_body()
            && definition.completion_condition.is_some()
        {
            // It completes when an inner instance completes and its condition holds.
            return Ok(());
        }
        self.token_ended(scope.key())
    }

    /// The interrupting trigger kept for `holder` (PROCESS_EVENT TRIGGERING) whose catch
    /// event is of a kind `wanted` selects: its event key, the catch event and its
    /// variables.
    fn kept_trigger(
        &self,
        holder: &Active,
        wanted: impl Fn(&ElementKind) -> bool,
    ) -> Result<Option<(Key, ElementIdx, Trigger)>> {
        let model = &holder.process.model;
        for (event_key, kept) in self.read().pending_triggers(holder.key())? {
            let Some(catch) = model.element_by_id(&kept.catch_event) else {
                continue;
            };
            if !wanted(&model.element(catch).kind) {
                continue;
            }
            let trigger = serde_json::from_str::<Value>(&kept.variables)
                .ok()
                .and_then(|v| match v {
                    Value::Object(map) if !map.is_empty() => Some(map),
                    _ => None,
                });
            return Ok(Some((event_key, catch, trigger)));
        }
        Ok(None)
    }

    /// Writes TRIGGERED for the kept trigger `event_key` of `holder` and activates
    /// `element` in `scope_key` with its variables (nothing when the scope is ending).
    fn activate_kept(
        &mut self,
        holder: &Active,
        event_key: Key,
        catch: ElementIdx,
        scope_key: Key,
        element: ElementIdx,
        trigger: Trigger,
    ) -> Result<()> {
        let live = self
            .read()
            .peek_element_instance(scope_key, |s| s.state == ElementState::Activated)?;
        if live != Some(true) {
            return Ok(());
        }
        self.event_triggered(holder, catch, Some(event_key))?;
        self.activate(scope_key, &holder.process, element, trigger)
    }

    /// What a terminating instance must terminate before it is itself terminated: its
    /// live children in order, or a call activity's child instance.
    fn runs_inside(&self, active: &Active) -> Result<Vec<Key>> {
        if active.record().bpmn_element_type == BpmnElementType::CallActivity {
            // The applier of the child's ELEMENT_ACTIVATING noted it on the call activity.
            let child = active.instance.job_key;
            let alive = child.get() > 0 && self.read().element_instance(child)?.is_some();
            return Ok(if alive { vec![child] } else { Vec::new() });
        }
        Ok(self
            .read()
            .children(active.key())?
            .into_iter()
            .map(Key)
            .collect())
    }

    /// The last step of a termination, once everything inside is terminated.
    fn terminated(&mut self, active: &Active) -> Result<()> {
        let key = active.key();
        if active.record().bpmn_element_type == BpmnElementType::Process {
            let registration = if active.instance.awaited {
                self.read().await_registration(key)?
            } else {
                None
            };
            let mut ending = self.ending_instance(key, registration)?;
            self.mark(active, Intent::ElementTerminated)?;
            self.instance_finished(active.record(), &mut ending, false);
            return self.root_ended(active, &ending);
        }
        self.mark(active, Intent::ElementTerminated)?;
        self.left_scope(active, Key(active.record().flow_scope_key));
        Ok(())
    }

    /// A process instance ended: if a message started it, a buffered message may start
    /// the next one.
    fn root_ended(&mut self, active: &Active, ending: &EndingInstance) -> Result<()> {
        let has_message_start = active.process.model.event_start_events().any(|start| {
            matches!(
                active.process.model.element(start).kind,
                ElementKind::MessageStartEvent { .. }
            )
        });
        if has_message_start {
            let process_id = active.record().bpmn_process_id.clone();
            self.message_started_instance_ended(ending.message_start.as_ref(), &process_id)?;
        }
        self.definition_instance_ended(active.process.key)
    }

    /// An element instance left its scope: a joining inclusive gateway there may no
    /// longer have to wait for it (looked at once the queued steps before it ran).
    fn left_scope(&mut self, active: &Active, scope_key: Key) {
        let Some(scope) = active.element().flow_scope else {
            return;
        };
        if active.is_multi_instance_inner() {
            return;
        }
        if !active.process.model.inclusive_joins(scope).is_empty() {
            self.push_step(Step::RecheckJoins { scope_key });
        }
    }

    /// Cancels the job of a listener the terminated element waits for, if any (its own
    /// job, if it has one, is its kind's to cancel).
    fn cancel_listener_job(&mut self, active: &Active) -> Result<()> {
        let job_key = active.instance.job_key;
        let is_listener = job_key.get() > 0
            && self
                .read()
                .job(job_key)?
                .is_some_and(|job| job.record.job_kind == JobKind::ExecutionListener);
        if is_listener {
            self.cancel_job(active)?;
        }
        Ok(())
    }

    /// Terminates every live child of a scope; returns whether none is left (false
    /// while canceling task listeners hold one up).
    pub fn terminate_children(&mut self, scope_key: Key) -> Result<bool> {
        for child in self.read().children(scope_key)? {
            self.terminate(Key(child))?;
        }
        let left = self
            .read()
            .peek_element_instance(scope_key, |i| i.active_children)?;
        Ok(left.unwrap_or(0) == 0)
    }

    /// Resolves the incident an element instance is stuck on, if any.
    fn resolve_element_incident(&mut self, key: Key) -> Result<()> {
        if let Some(incident_key) = self.read().incident_of_element(key)?
            && let Some(incident) = self.read().incident(incident_key)?
        {
            self.event(incident_key, Intent::Resolved, incident.record)?;
        }
        Ok(())
    }

    /// The element id of the process element is its BPMN process id.
    pub fn root_record(
        process: &DeployedProcess,
        process_instance_key: Key,
    ) -> ProcessInstanceRecord {
        ProcessInstanceRecord {
            bpmn_element_type: BpmnElementType::Process,
            element_id: process.model.bpmn_process_id.clone(),
            bpmn_process_id: process.model.bpmn_process_id.clone(),
            version: process.version,
            process_definition_key: process.key.get(),
            process_instance_key: process_instance_key.get(),
            flow_scope_key: -1,
            bpmn_event_type: BpmnEventType::Unspecified,
            parent_process_instance_key: -1,
            parent_element_instance_key: -1,
            tenant_id: rill_protocol::value::DEFAULT_TENANT.to_owned(),
            root_process_instance_key: process_instance_key.get(),
            tags: Vec::new(),
            tree_path: None,
        }
    }
}
