//! Zeebe's element lifecycle, done in-line:
//!
//! ```text
//!  ACTIVATING ──► ACTIVATED ──► COMPLETING ──► COMPLETED ──► SEQUENCE_FLOW_TAKEN…
//!      │  (incident: stays)          │ (incident: stays)
//!      └──────────────┬──────────────┘
//!                TERMINATING ──► TERMINATED
//! ```
//!
//! An expression that fails raises an incident and leaves the element where it was;
//! resolving the incident runs the step again. Everything that can fail is evaluated
//! before the step emits anything.

use std::sync::Arc;

use rill_protocol::Intent;
use rill_protocol::value::{BpmnElementType, BpmnEventType, ProcessInstanceRecord};
use serde_json::{Map, Value};

use crate::context::{Active, Processing, Step};
use crate::error::{Result, inconsistent};
use crate::model::{
    CatchEventDefinition, ElementIdx, ElementKind, EndEventKind, FlowIdx, ProcessModel,
};
use crate::model_cache::DeployedProcess;
use crate::outcome::{Evaluated, Halt};
use crate::state::ElementState;

/// Which outgoing flows a completing element takes.
enum Outgoing {
    All,
    One(FlowIdx),
}

impl Processing<'_> {
    /// Enters an element: ELEMENT_ACTIVATING, then its activation behaviour.
    pub fn activate(
        &mut self,
        scope_key: i64,
        process: &Arc<DeployedProcess>,
        idx: ElementIdx,
        trigger: Option<Map<String, Value>>,
    ) -> Result<()> {
        let Some(scope) = self.read().element_instance(scope_key)? else {
            return Ok(());
        };
        if scope.state != ElementState::Activated {
            // The scope is ending; the token dies with it.
            return Ok(());
        }
        let element = process.model.element(idx);
        if matches!(element.kind, ElementKind::ParallelGateway) && element.incoming.len() > 1 {
            let waiting = self.read().join_tokens(scope_key, &element.id)?;
            let arrived = element.incoming.iter().all(|flow| {
                let id = &process.model.flow(*flow).id;
                waiting.iter().any(|(f, n)| f == id && *n > 0)
            });
            if !arrived {
                return Ok(());
            }
        }
        let record = ProcessInstanceRecord {
            bpmn_element_type: element.element_type(),
            element_id: element.id.clone(),
            flow_scope_key: scope_key,
            bpmn_event_type: element.event_type(),
            ..scope.record
        };
        let key = self.next_key()?;
        self.event(key, Intent::ElementActivating, record.clone())?;
        let active = Active {
            instance: crate::state::ElementInstance {
                key,
                state: ElementState::Activating,
                record,
                active_children: 0,
                active_flows: 0,
                job_key: -1,
                has_variables: false,
                awaited: false,
                start_date: self.now(),
            },
            process: process.clone(),
            idx,
        };
        self.run_activation(active, trigger)
    }

    /// Enters a new process instance (ELEMENT_ACTIVATING of the process element).
    pub fn enter_process(&mut self, key: i64, record: ProcessInstanceRecord) -> Result<()> {
        self.event(key, Intent::ElementActivating, record)
    }

    /// Runs the activation of an entered process instance (then its start event).
    pub fn start_process(&mut self, key: i64) -> Result<()> {
        let active = self
            .active(key)?
            .ok_or_else(|| inconsistent(format!("process instance {key} vanished")))?;
        self.run_activation(active, None)
    }

    /// The activation behaviour of an element in ELEMENT_ACTIVATING (first time, or
    /// again after an incident was resolved). A failure to evaluate what the element
    /// needs becomes an incident, and the element stays in ELEMENT_ACTIVATING.
    pub fn run_activation(
        &mut self,
        active: Active,
        trigger: Option<Map<String, Value>>,
    ) -> Result<()> {
        match self.activation(&active, trigger) {
            Ok(()) => Ok(()),
            Err(halt) => self.incident_on(&active, halt),
        }
    }

    fn activation(&mut self, active: &Active, trigger: Option<Map<String, Value>>) -> Evaluated {
        let element = active.element();
        if !element.inputs.is_empty() {
            let locals = self.evaluate_inputs(active)?;
            self.set_local_variables(&active.instance, locals)?;
        }
        let process = active.process.clone();
        let model = &process.model;
        let element = model.element(active.idx);
        match &element.kind {
            ElementKind::Process { start_event, .. }
            | ElementKind::SubProcess { start_event, .. } => {
                self.arm_boundary_timers(active)?;
                self.mark(active, Intent::ElementActivated)?;
                self.push_step(Step::Activate {
                    scope_key: active.key(),
                    process: process.clone(),
                    element: *start_event,
                    trigger: None,
                });
            }
            ElementKind::StartEvent
            | ElementKind::ParallelGateway
            | ElementKind::EndEvent(EndEventKind::None) => {
                self.mark(active, Intent::ElementActivated)?;
                self.complete(active, None, Outgoing::All)?;
            }
            ElementKind::EndEvent(EndEventKind::Terminate) => {
                self.mark(active, Intent::ElementActivated)?;
                let scope_key = active.record().flow_scope_key;
                self.complete(active, None, Outgoing::All)?;
                self.terminate_children(scope_key)?;
                self.complete_scope(scope_key)?;
            }
            ElementKind::EndEvent(EndEventKind::Error { error_code }) => {
                let code = self.evaluate_string(error_code, active)?;
                self.throw_error_from_element(active, &code, "", None)?;
            }
            ElementKind::ExclusiveGateway { default_flow } => {
                let flow = self.choose_flow(active, *default_flow)?;
                self.mark(active, Intent::ElementActivated)?;
                self.complete(active, None, Outgoing::One(flow))?;
            }
            ElementKind::ServiceTask(definition) => {
                let job = self.evaluate_job(definition, active)?;
                self.arm_boundary_timers(active)?;
                self.create_job(active, job)?;
                self.mark(active, Intent::ElementActivated)?;
            }
            ElementKind::ReceiveTask(definition)
            | ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(definition)) => {
                let subscription = self.evaluate_subscription(definition, active)?;
                self.arm_boundary_timers(active)?;
                self.create_process_message_subscription(active, subscription)?;
                self.mark(active, Intent::ElementActivated)?;
            }
            ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(definition)) => {
                let due = self.evaluate_timer(definition, active)?;
                self.create_timer(active, &element.id, due)?;
                self.mark(active, Intent::ElementActivated)?;
            }
            ElementKind::BoundaryEvent { .. } => {
                self.mark(active, Intent::ElementActivated)?;
                self.complete(active, trigger, Outgoing::All)?;
            }
        }
        Ok(())
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
                -1,
            ),
            Halt::Error(error) => Err(error),
        }
    }

    /// Completes an element whose work is done (a task's job completed, a message
    /// correlated, a timer fired), with the variables of that event.
    pub fn complete_with(&mut self, key: i64, trigger: Option<Map<String, Value>>) -> Result<()> {
        let Some(active) = self.active(key)? else {
            return Ok(());
        };
        if active.instance.state != ElementState::Activated {
            return Ok(());
        }
        self.complete(&active, trigger, Outgoing::All)
    }

    /// Completes a scope once no token is left in it (queued step).
    pub fn complete_scope(&mut self, key: i64) -> Result<()> {
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

    /// Completes an element: ELEMENT_COMPLETING, the output mappings, then
    /// ELEMENT_COMPLETED and the outgoing flows. A failing output mapping becomes an
    /// incident, and the element stays in ELEMENT_COMPLETING.
    fn complete(
        &mut self,
        active: &Active,
        trigger: Option<Map<String, Value>>,
        outgoing: Outgoing,
    ) -> Result<()> {
        if active.instance.state != ElementState::Completing {
            self.mark(active, Intent::ElementCompleting)?;
        }
        let has_outputs = !active.element().outputs.is_empty();
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
                    let scope = active.record().flow_scope_key;
                    self.propagate_variables(scope, &active.instance, values)?;
                }
                Err(halt) => return self.incident_on(active, halt),
            }
        }
        self.leave_events(active)?;
        let record = active.record();
        if record.bpmn_element_type == BpmnElementType::Process {
            let registration = if active.instance.awaited {
                self.read().await_registration(active.key())?
            } else {
                None
            };
            self.mark(active, Intent::ElementCompleted)?;
            return self.instance_finished(active.key(), registration, true);
        }
        self.mark(active, Intent::ElementCompleted)?;
        let element = active.element();
        let flows: Vec<FlowIdx> = match outgoing {
            Outgoing::One(flow) => vec![flow],
            Outgoing::All => element.outgoing.clone(),
        };
        if flows.is_empty() {
            return self.token_ended(record.flow_scope_key);
        }
        self.take_flows(record.flow_scope_key, record, &active.process, &flows)
    }

    /// A token ended in `scope_key`: complete the scope when it was the last one.
    fn token_ended(&mut self, scope_key: i64) -> Result<()> {
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
        scope_key: i64,
        from: &ProcessInstanceRecord,
        process: &Arc<DeployedProcess>,
        flows: &[FlowIdx],
    ) -> Result<()> {
        let model: &ProcessModel = &process.model;
        for flow in flows {
            let key = self.next_key()?;
            let record = ProcessInstanceRecord {
                bpmn_element_type: BpmnElementType::SequenceFlow,
                element_id: model.flow(*flow).id.clone(),
                flow_scope_key: scope_key,
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
                trigger: None,
            });
        }
        Ok(())
    }

    /// Terminates an element instance and everything in it.
    pub fn terminate(&mut self, key: i64) -> Result<()> {
        let Some(active) = self.active(key)? else {
            return Ok(());
        };
        if active.instance.state != ElementState::Terminating {
            self.mark(&active, Intent::ElementTerminating)?;
        }
        self.cancel_job(&active)?;
        self.leave_events(&active)?;
        self.resolve_element_incident(key)?;
        if matches!(
            active.element().kind,
            ElementKind::Process { .. } | ElementKind::SubProcess { .. }
        ) {
            self.terminate_children(key)?;
        }
        if active.record().bpmn_element_type == BpmnElementType::Process {
            let registration = if active.instance.awaited {
                self.read().await_registration(key)?
            } else {
                None
            };
            self.mark(&active, Intent::ElementTerminated)?;
            return self.instance_finished(key, registration, false);
        }
        self.mark(&active, Intent::ElementTerminated)
    }

    /// Cancels the timers and closes the message subscriptions an element holds (only
    /// elements that can hold them are looked at).
    fn leave_events(&mut self, active: &Active) -> Result<()> {
        let element = active.element();
        let timers = !element.boundary_events.is_empty()
            || matches!(
                element.kind,
                ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(_))
            );
        if timers {
            self.cancel_timers(active.key())?;
        }
        if matches!(
            element.kind,
            ElementKind::ReceiveTask(_)
                | ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(_))
        ) {
            self.close_message_subscriptions(active.key())?;
        }
        Ok(())
    }

    /// Terminates every live child of a scope.
    pub fn terminate_children(&mut self, scope_key: i64) -> Result<()> {
        for child in self.read().children(scope_key)? {
            self.terminate(child)?;
        }
        Ok(())
    }

    fn resolve_element_incident(&mut self, key: i64) -> Result<()> {
        if let Some(incident_key) = self.read().incident_of_element(key)?
            && let Some(incident) = self.read().incident(incident_key)?
        {
            self.event(incident_key, Intent::Resolved, incident.record)?;
        }
        Ok(())
    }

    /// Interrupts `attached` because one of its boundary events fired, then enters the
    /// boundary event with the event's variables.
    pub fn interrupt_and_activate_boundary(
        &mut self,
        attached: &Active,
        boundary: ElementIdx,
        trigger: Option<Map<String, Value>>,
    ) -> Result<()> {
        let scope_key = attached.record().flow_scope_key;
        self.terminate(attached.key())?;
        self.activate(scope_key, &attached.process, boundary, trigger)
    }

    /// The element id of the process element is its BPMN process id.
    pub fn root_record(
        process: &DeployedProcess,
        process_instance_key: i64,
    ) -> ProcessInstanceRecord {
        ProcessInstanceRecord {
            bpmn_element_type: BpmnElementType::Process,
            element_id: process.model.bpmn_process_id.clone(),
            bpmn_process_id: process.model.bpmn_process_id.clone(),
            version: process.version,
            process_definition_key: process.key,
            process_instance_key,
            flow_scope_key: -1,
            bpmn_event_type: BpmnEventType::Unspecified,
            parent_process_instance_key: -1,
            parent_element_instance_key: -1,
            tenant_id: rill_protocol::value::DEFAULT_TENANT.to_owned(),
        }
    }
}
