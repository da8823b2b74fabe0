//! The executable process graph: parsed once at deploy time, immutable afterwards.
//!
//! Elements and flows live in arenas indexed by [`ElementIdx`] and [`FlowIdx`];
//! expressions are compiled. The parser (`crate::parse_bpmn`) builds it, and a model it
//! returns is guaranteed to satisfy everything the processors rely on:
//!
//! - ids are unique; [`ProcessModel::element_index`] and [`ProcessModel::flow_index`]
//!   hold every element and flow (look up only: never iterate them, their order is
//!   not deterministic);
//! - elements are in document order, the process first, each subprocess directly
//!   followed by its content; `incoming`/`outgoing` are in the document order of the
//!   `sequenceFlow` elements (an exclusive gateway tries its conditions in that order);
//! - every flow joins two elements of the same scope (no flow crosses a subprocess
//!   boundary); no flow leaves an end event or enters a start or boundary event;
//! - every subprocess has exactly one none start event, which is in its `children`; the
//!   process has at most one, and none only when it has a timer, message or signal start event
//!   (then it cannot be created by a command or a call activity); an event subprocess
//!   (`triggered_by_event`) instead has exactly one [`ElementKind::EventStartEvent`]
//!   (timer, message, signal, error or escalation), its `start_event`, and no none start
//!   event;
//! - an event subprocess has no incoming or outgoing flow, no boundary event and no
//!   multi-instance; event start events appear only directly in an event subprocess,
//!   and one with an error trigger is interrupting;
//! - timer, message and signal start events appear only directly in the process; a signal
//!   start event has a static, non-empty signal name; a timer start
//!   event has a date or a cycle (ISO 8601 or cron), never a duration; a message start
//!   event has a static, non-empty message name, unique among the process's message
//!   start events;
//! - a flow has a `condition` only if it leaves an exclusive or inclusive gateway; such
//!   a gateway with several outgoing flows has a condition on each of them except its
//!   default flow, which is one of its outgoing flows and has no condition;
//! - an inclusive gateway with several incoming flows (a join) lists in `upstream` every
//!   element of its scope from which a token can reach it without passing through it
//!   (over flows, boundary events and links), sorted; its scope lists it in
//!   `inclusive_joins`;
//! - gateways and boundary events have at least one outgoing flow. Other elements may
//!   have none: a token that reaches such an element ends there (Zeebe's implicit end),
//!   and the scope completes when no token is left in it;
//! - a call activity names a called process id (static and non-empty, or an
//!   expression); a `VersionTag` binding carries a non-empty tag;
//! - a boundary event is attached to a task (undefined, manual, service, script, send,
//!   receive), a call activity or a subprocess (not an event subprocess) of its own scope
//!   and is listed in that element's `boundary_events`; an error boundary is
//!   interrupting, and no two error boundaries of one element catch the same code;
//! - the catch events one element instance holds triggers for (its own message, its
//!   boundary events, the start events of its event subprocesses, the events after an
//!   event-based gateway) have distinct static message names; the error and the
//!   escalation catch events among them catch each code (and "any") once; their static
//!   signal names differ too;
//! - an event-based gateway has at least two outgoing flows, each to a timer, message or
//!   signal intermediate catch event that has no other incoming flow;
//! - a timer cycle appears only on a non-interrupting boundary event or event
//!   subprocess start event;
//! - a link throw event's `catch_event` is the one link catch event of its own scope
//!   with its name; no two link catch events of a scope share a name; a link throw
//!   event has no outgoing flow and a link catch event no incoming flow;
//! - service and send tasks, job-worker script tasks, message throw and message end
//!   events have a job type (static and non-empty, or an expression); static retries
//!   are non-negative; a script task has exactly one of `zeebe:script` (with a
//!   compiled expression and a non-empty result variable) and `zeebe:taskDefinition`;
//! - `multi_instance` appears only on tasks (undefined, manual, service, script, send,
//!   receive), call activities and subprocesses (ad-hoc ones too); `output_collection`
//!   and `output_element` are both set or both unset; variable names are non-empty;
//! - `inputs` appear only on tasks, call activities, subprocesses, intermediate catch events, message
//!   and signal throw events and message and signal end events (a signal's variables); `outputs` on those and on every other event
//!   but error end events (start, none, link and escalation throw, none, terminate and
//!   escalation end, boundary). Mapping targets are non-empty dotted paths of variable names;
//! - execution listeners have a job type (static and non-empty, or an expression) and
//!   no two of one event type share a type; there are no start listeners on start and
//!   boundary events, no end listeners on gateways, error and escalation end events and
//!   escalation throw events, and no start listeners on a process with timer or message
//!   start events;
//! - an ad-hoc subprocess is directly followed by its inner instance element
//!   (`AdHocInnerInstance`, id `<id>#innerInstance`, its `inner_instance`), the flow scope
//!   of its content; the content has at least one activity and no start or end event;
//!   `activatable` lists the content's elements with no incoming flow (not boundary or
//!   link catch events, not compensation handlers), in document order; `output_collection` and
//!   `output_element` are both set or both unset. Its event subprocesses are not part of
//!   the content: their flow scope is the ad-hoc subprocess itself (the instance that
//!   holds their triggers), they are its `children` (`event_sub_processes`), and none is
//!   activatable;
//! - a compensation boundary event (`TriggerDefinition::Compensation`) has no outgoing
//!   flow and names its handler: an activity of the same scope with `for_compensation`,
//!   no incoming or outgoing flow and no boundary event; an activity has at most one;
//!   a compensation throw or end event's `activity` is an activity with a compensation
//!   boundary event, or a subprocess, of the thrower's scope (or, for a thrower in an
//!   event subprocess, of the event subprocess's scope). `has_compensation` is set
//!   when the process has a compensation boundary event;
//! - no cycle of elements that pass a token on at once is reachable from an undefined,
//!   manual, FEEL script or decision business rule task, a call activity or an
//!   intermediate throw event (Zeebe's straight-through processing loop rule,
//!   `parse/loops.rs`).

use std::collections::HashMap;

pub mod cron;
mod events;
mod tasks;
pub use cron::CronSchedule;
pub use events::*;
pub use tasks::*;

use rill_feel::Expression;
use rill_feel::temporal::{IsoCycle, IsoDuration};
use rill_protocol::value::{BpmnElementType, BpmnEventType};

/// Index of an element in [`ProcessModel::elements`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ElementIdx(pub u32);

/// Index of a sequence flow in [`ProcessModel::flows`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowIdx(pub u32);

/// A static value from the model, or a FEEL expression (`=...`) evaluated on entry.
#[derive(Clone, Debug)]
pub enum ValueOrExpr<T> {
    Static(T),
    Expr(Expression),
}

/// One executable process (`bpmn:process` with `isExecutable="true"`).
#[derive(Debug)]
pub struct ProcessModel {
    pub bpmn_process_id: String,
    pub name: Option<String>,
    /// `zeebe:versionTag` on the process (call activities can bind to it).
    pub version_tag: Option<String>,
    /// All flow nodes, the process itself first (index 0).
    pub elements: Vec<Element>,
    pub flows: Vec<SequenceFlow>,
    /// Whether an activity has a compensation boundary event: only then does the engine
    /// look for compensation subscriptions when activities complete and instances end.
    pub has_compensation: bool,
    /// The form on the process's none start event (`zeebe:formDefinition`): what task
    /// lists show to start an instance. The engine does nothing with it; clients read
    /// it (`GET /v2/process-definitions/{key}/form` serves a linked one).
    pub start_form: Option<StartForm>,
    /// Element id -> index, for elements and flows alike lookups go through these.
    pub element_index: HashMap<String, ElementIdx>,
    pub flow_index: HashMap<String, FlowIdx>,
}

impl ProcessModel {
    /// The process element itself.
    pub const ROOT: ElementIdx = ElementIdx(0);

    pub fn element(&self, idx: ElementIdx) -> &Element {
        &self.elements[idx.0 as usize]
    }

    pub fn flow(&self, idx: FlowIdx) -> &SequenceFlow {
        &self.flows[idx.0 as usize]
    }

    pub fn element_by_id(&self, id: &str) -> Option<ElementIdx> {
        self.element_index.get(id).copied()
    }

    pub fn flow_by_id(&self, id: &str) -> Option<FlowIdx> {
        self.flow_index.get(id).copied()
    }

    /// The elements directly inside a process or subprocess, in document order; for an
    /// ad-hoc subprocess, its event subprocesses (its other content is its inner
    /// instance element's); empty for any other element.
    pub fn children(&self, scope: ElementIdx) -> &[ElementIdx] {
        match &self.element(scope).kind {
            ElementKind::Process { children, .. }
            | ElementKind::SubProcess { children, .. }
            | ElementKind::AdHocInnerInstance { children, .. } => children,
            ElementKind::AdHocSubProcess(definition) => &definition.event_sub_processes,
            _ => &[],
        }
    }

    /// The ad-hoc subprocess an element is directly inside of (its flow scope is the
    /// ad-hoc subprocess's inner instance element).
    pub fn enclosing_ad_hoc(&self, idx: ElementIdx) -> Option<ElementIdx> {
        let scope = self.element(idx).flow_scope?;
        match self.element(scope).kind {
            ElementKind::AdHocInnerInstance { .. } => self.element(scope).flow_scope,
            _ => None,
        }
    }

    /// Whether an element is an ad-hoc subprocess's inner instance element or lies
    /// (at any depth) inside an ad-hoc subprocess, in its content or in one of its
    /// event subprocesses.
    pub fn inside_ad_hoc(&self, idx: ElementIdx) -> bool {
        if matches!(
            self.element(idx).kind,
            ElementKind::AdHocInnerInstance { .. }
        ) {
            return true;
        }
        let mut current = self.element(idx).flow_scope;
        while let Some(at) = current {
            if matches!(
                self.element(at).kind,
                ElementKind::AdHocInnerInstance { .. } | ElementKind::AdHocSubProcess(_)
            ) {
                return true;
            }
            current = self.element(at).flow_scope;
        }
        false
    }

    /// The timer, message and signal start events of the process, in document order.
    pub fn event_start_events(&self) -> impl Iterator<Item = ElementIdx> + '_ {
        self.children(Self::ROOT).iter().copied().filter(|c| {
            matches!(
                self.element(*c).kind,
                ElementKind::TimerStartEvent(_)
                    | ElementKind::MessageStartEvent { .. }
                    | ElementKind::SignalStartEvent { .. }
            )
        })
    }

    /// The start events of the event subprocesses directly inside a process or
    /// subprocess, in document order: their triggers belong to that scope.
    pub fn event_subprocess_starts(
        &self,
        scope: ElementIdx,
    ) -> impl Iterator<Item = ElementIdx> + '_ {
        self.children(scope)
            .iter()
            .filter_map(|c| match &self.element(*c).kind {
                ElementKind::SubProcess {
                    triggered_by_event: true,
                    start_event,
                    ..
                } => Some(*start_event),
                _ => None,
            })
    }

    /// The joining inclusive gateways directly inside a process or subprocess.
    pub fn inclusive_joins(&self, scope: ElementIdx) -> &[ElementIdx] {
        match &self.element(scope).kind {
            ElementKind::Process {
                inclusive_joins, ..
            }
            | ElementKind::SubProcess {
                inclusive_joins, ..
            }
            | ElementKind::AdHocInnerInstance {
                inclusive_joins, ..
            } => inclusive_joins,
            _ => &[],
        }
    }

    /// The compensation boundary event of an activity and the handler associated
    /// with it, if the activity has one.
    pub fn compensation_boundary(&self, activity: ElementIdx) -> Option<(ElementIdx, ElementIdx)> {
        self.element(activity)
            .boundary_events
            .iter()
            .find_map(|boundary| match &self.element(*boundary).kind {
                ElementKind::BoundaryEvent {
                    definition: TriggerDefinition::Compensation { handler },
                    ..
                } => Some((*boundary, *handler)),
                _ => None,
            })
    }

    /// The none start event of a process or subprocess.
    pub fn start_event(&self, scope: ElementIdx) -> Option<ElementIdx> {
        match &self.element(scope).kind {
            ElementKind::Process { start_event, .. } => *start_event,
            ElementKind::SubProcess { start_event, .. } => Some(*start_event),
            _ => None,
        }
    }
}

/// A flow node (or the process itself).
#[derive(Debug)]
pub struct Element {
    pub id: String,
    pub name: Option<String>,
    pub kind: ElementKind,
    /// The enclosing process or subprocess; `None` only for the process.
    pub flow_scope: Option<ElementIdx>,
    pub incoming: Vec<FlowIdx>,
    pub outgoing: Vec<FlowIdx>,
    /// `zeebe:ioMapping` inputs, applied on activation into the element's local scope.
    pub inputs: Vec<Mapping>,
    /// `zeebe:ioMapping` outputs, applied on completion into the flow scope.
    pub outputs: Vec<Mapping>,
    /// Boundary events attached to this element, in document order.
    pub boundary_events: Vec<ElementIdx>,
    /// Multi-instance characteristics: the element runs as a multi-instance body
    /// holding one inner instance per item of the input collection.
    pub multi_instance: Option<MultiInstance>,
    /// `zeebe:executionListeners`: jobs run before and after the element's own work.
    pub listeners: ExecutionListeners,
    /// `isForCompensation`: a compensation handler, entered only when the activity its
    /// compensation boundary event is attached to is compensated.
    pub for_compensation: bool,
}

impl Element {
    pub fn element_type(&self) -> BpmnElementType {
        self.kind.element_type()
    }

    pub fn event_type(&self) -> BpmnEventType {
        self.kind.event_type()
    }
}

#[derive(Debug)]
pub enum ElementKind {
    Process {
        /// The none start event, if the process has one.
        start_event: Option<ElementIdx>,
        children: Vec<ElementIdx>,
        /// The inclusive gateways among `children` that join (several incoming flows).
        inclusive_joins: Vec<ElementIdx>,
    },
    SubProcess {
        /// The none start event; for an event subprocess, its one event start event.
        start_event: ElementIdx,
        children: Vec<ElementIdx>,
        inclusive_joins: Vec<ElementIdx>,
        /// An event subprocess (`triggeredByEvent`): no flow enters it; its start event's
        /// trigger, held by the enclosing scope, starts it.
        triggered_by_event: bool,
    },
    StartEvent,
    /// A timer start event of the process: creates an instance when its timer is due.
    TimerStartEvent(TimerDefinition),
    /// A message start event of the process: a published message of this name creates
    /// an instance.
    MessageStartEvent {
        message_name: String,
    },
    /// A signal start event of the process: a broadcast signal of this name creates an
    /// instance (on every partition, as signals reach them all).
    SignalStartEvent {
        signal_name: String,
    },
    /// The start event of an event subprocess: its trigger is held by the subprocess's
    /// enclosing scope for as long as that scope is active.
    EventStartEvent {
        /// `isInterrupting` (the default): terminates the other children of the scope.
        interrupting: bool,
        definition: TriggerDefinition,
    },
    EndEvent(ThrowEventDefinition),
    /// An undefined task (`bpmn:task`): passes the token on at once.
    Task,
    /// A manual task: work outside the engine; passes the token on at once.
    ManualTask,
    ServiceTask(JobDefinition),
    /// A script task: a FEEL expression the engine evaluates, or a job for a worker.
    ScriptTask(ScriptDefinition),
    /// A send task: a job for a worker (as in Zeebe).
    SendTask(JobDefinition),
    /// A business rule task: a DMN decision the engine evaluates, or a job for a worker.
    BusinessRuleTask(BusinessRuleDefinition),
    ReceiveTask(MessageDefinition),
    /// A user task: a Camunda user task (`zeebe:userTask`), or a job for a task-list
    /// worker (the job-worker user task).
    UserTask(Box<UserTaskDefinition>),
    /// Creates an instance of another process and completes when it completes.
    CallActivity(CalledElement),
    ExclusiveGateway {
        default_flow: Option<FlowIdx>,
    },
    ParallelGateway,
    /// Holds the triggers of the catch events its outgoing flows lead to; the first one
    /// that fires wins and the gateway takes the flow to it.
    EventBasedGateway,
    /// Takes every outgoing flow whose condition is true (else the default flow); as a
    /// join it waits for every token that can still arrive.
    InclusiveGateway {
        default_flow: Option<FlowIdx>,
        /// For a join: the elements of its scope from which a token can still reach it
        /// without passing through it, sorted (empty for a fork-only gateway).
        upstream: Vec<ElementIdx>,
    },
    IntermediateCatchEvent(CatchEventDefinition),
    IntermediateThrowEvent(ThrowEventDefinition),
    BoundaryEvent {
        attached_to: ElementIdx,
        /// `cancelActivity`: interrupting (the default) or not.
        interrupting: bool,
        definition: TriggerDefinition,
    },
    /// An ad-hoc subprocess (`bpmn:adHocSubProcess`): its inner elements run when
    /// activated, each in an inner instance of its own.
    AdHocSubProcess(Box<AdHocDefinition>),
    /// The inner instance of an ad-hoc subprocess (a synthetic element, id
    /// `<ad-hoc id>#innerInstance`, directly after the ad-hoc subprocess): the flow
    /// scope of the ad-hoc subprocess's content. An activation enters one of its
    /// `activatable` elements in a new instance of it.
    AdHocInnerInstance {
        children: Vec<ElementIdx>,
        inclusive_joins: Vec<ElementIdx>,
    },
}

/// Suffix of the id of an ad-hoc subprocess's inner instance element (Zeebe's).
pub const AD_HOC_INNER_INSTANCE_SUFFIX: &str = "#innerInstance";

/// `bpmn:adHocSubProcess` with its `zeebe:adHoc`.
#[derive(Debug)]
pub struct AdHocDefinition {
    /// The synthetic inner instance element holding the content.
    pub inner_instance: ElementIdx,
    /// `activeElementsCollection`: evaluated on entry, a list of element ids.
    pub active_elements: Option<Expression>,
    /// `bpmn:completionCondition`: evaluated (in the ad-hoc subprocess's scope) each
    /// time an inner instance completes.
    pub completion_condition: Option<Expression>,
    /// `cancelRemainingInstances` (default true): when the condition holds, terminate
    /// the inner instances still active and complete at once.
    pub cancel_remaining_instances: bool,
    /// `outputCollection`: a local list of the ad-hoc subprocess, one `outputElement`
    /// per completed inner instance, propagated when it completes.
    pub output_collection: Option<String>,
    pub output_element: Option<Expression>,
    /// The elements that may be activated: those of the content with no incoming
    /// sequence flow (not boundary events or compensation handlers), document order.
    pub activatable: Vec<ElementIdx>,
    /// The `adHocSubProcessElements` variable: one entry per activatable element
    /// (`elementId`, `elementName`, `documentation`, `properties`, `parameters`).
    pub elements_metadata: serde_json::Value,
    /// `zeebe:taskDefinition` (Zeebe 8.8's job-worker implementation): a job's worker
    /// decides what to activate and when to complete, instead of
    /// `active_elements` and `completion_condition`.
    pub job: Option<JobDefinition>,
    /// Its event subprocesses, in document order: their triggers are held by the
    /// ad-hoc subprocess instance, and a triggered one runs directly in it, beside the
    /// inner instances.
    pub event_sub_processes: Vec<ElementIdx>,
}

impl AdHocDefinition {
    /// The variable `output_element` reads when it is a plain variable reference.
    pub fn output_element_variable(&self) -> Option<&str> {
        plain_variable(self.output_element.as_ref()?)
    }
}

/// The variable an expression reads when it is a plain variable reference (or a path
/// into one).
fn plain_variable(expression: &Expression) -> Option<&str> {
    let source = expression.source().trim();
    let first = source.split('.').next()?;
    let is_name = first
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && first.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !matches!(first, "null" | "true" | "false" | "not");
    let path = source
        .split('.')
        .all(|part| !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_'));
    (is_name && path).then_some(first)
}

impl ElementKind {
    /// A task, subprocess or call activity: what boundary events attach to and what an
    /// ad-hoc subprocess needs at least one of.
    pub fn is_activity(&self) -> bool {
        matches!(
            self,
            ElementKind::Task
                | ElementKind::ManualTask
                | ElementKind::ServiceTask(_)
                | ElementKind::ScriptTask(_)
                | ElementKind::BusinessRuleTask(_)
                | ElementKind::SendTask(_)
                | ElementKind::ReceiveTask(_)
                | ElementKind::UserTask(_)
                | ElementKind::CallActivity(_)
                | ElementKind::SubProcess { .. }
                | ElementKind::AdHocSubProcess(_)
        )
    }

    /// The BPMN XML element name, for messages (`serviceTask`, `exclusiveGateway`...).
    pub fn bpmn_name(&self) -> &'static str {
        match self {
            ElementKind::Process { .. } => "process",
            ElementKind::SubProcess { .. } => "subProcess",
            ElementKind::StartEvent
            | ElementKind::EventStartEvent { .. }
            | ElementKind::TimerStartEvent(_)
            | ElementKind::MessageStartEvent { .. }
            | ElementKind::SignalStartEvent { .. } => "startEvent",
            ElementKind::EndEvent(_) => "endEvent",
            ElementKind::Task => "task",
            ElementKind::ManualTask => "manualTask",
            ElementKind::ServiceTask(_) => "serviceTask",
            ElementKind::ScriptTask(_) => "scriptTask",
            ElementKind::BusinessRuleTask(_) => "businessRuleTask",
            ElementKind::SendTask(_) => "sendTask",
            ElementKind::ReceiveTask(_) => "receiveTask",
            ElementKind::UserTask(_) => "userTask",
            ElementKind::CallActivity(_) => "callActivity",
            ElementKind::ExclusiveGateway { .. } => "exclusiveGateway",
            ElementKind::ParallelGateway => "parallelGateway",
            ElementKind::EventBasedGateway => "eventBasedGateway",
            ElementKind::InclusiveGateway { .. } => "inclusiveGateway",
            ElementKind::IntermediateCatchEvent(_) => "intermediateCatchEvent",
            ElementKind::IntermediateThrowEvent(_) => "intermediateThrowEvent",
            ElementKind::BoundaryEvent { .. } => "boundaryEvent",
            ElementKind::AdHocSubProcess(_) => "adHocSubProcess",
            ElementKind::AdHocInnerInstance { .. } => "ad-hoc inner instance",
        }
    }

    /// What a boundary event or an event subprocess's start event waits for, and
    /// whether it interrupts.
    pub fn trigger(&self) -> Option<(&TriggerDefinition, bool)> {
        match self {
            ElementKind::BoundaryEvent {
                definition,
                interrupting,
                ..
            }
            | ElementKind::EventStartEvent {
                definition,
                interrupting,
            } => Some((definition, *interrupting)),
            _ => None,
        }
    }

    /// The job of an element that waits on one: service and send tasks, job-worker
    /// script tasks, message throw and message end events.
    pub fn job_definition(&self) -> Option<&JobDefinition> {
        match self {
            ElementKind::ServiceTask(job)
            | ElementKind::SendTask(job)
            | ElementKind::ScriptTask(ScriptDefinition::Job(job))
            | ElementKind::BusinessRuleTask(BusinessRuleDefinition::Job(job))
            | ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Message(job))
            | ElementKind::EndEvent(ThrowEventDefinition::Message(job)) => Some(job),
            ElementKind::UserTask(task) => match task.as_ref() {
                UserTaskDefinition::Job(task) => Some(&task.job),
                UserTaskDefinition::Camunda(_) => None,
            },
            _ => None,
        }
    }

    /// The element's `zeebe:taskHeaders` (those of its job, of a Camunda user task, or
    /// of an ad-hoc subprocess's job); empty for other elements.
    pub fn task_headers(&self) -> &[(String, String)] {
        if let Some(job) = self.job_definition() {
            return &job.headers;
        }
        match self {
            ElementKind::UserTask(task) => match task.as_ref() {
                UserTaskDefinition::Camunda(task) => &task.headers,
                UserTaskDefinition::Job(task) => &task.job.headers,
            },
            ElementKind::AdHocSubProcess(definition) => {
                definition.job.as_ref().map_or(&[], |job| &job.headers)
            }
            _ => &[],
        }
    }

    pub fn element_type(&self) -> BpmnElementType {
        match self {
            ElementKind::Process { .. } => BpmnElementType::Process,
            ElementKind::SubProcess {
                triggered_by_event: true,
                ..
            } => BpmnElementType::EventSubProcess,
            ElementKind::SubProcess { .. } => BpmnElementType::SubProcess,
            ElementKind::StartEvent
            | ElementKind::EventStartEvent { .. }
            | ElementKind::TimerStartEvent(_)
            | ElementKind::MessageStartEvent { .. }
            | ElementKind::SignalStartEvent { .. } => BpmnElementType::StartEvent,
            ElementKind::EndEvent(_) => BpmnElementType::EndEvent,
            ElementKind::Task => BpmnElementType::Task,
            ElementKind::ManualTask => BpmnElementType::ManualTask,
            ElementKind::ServiceTask(_) => BpmnElementType::ServiceTask,
            ElementKind::ScriptTask(_) => BpmnElementType::ScriptTask,
            ElementKind::BusinessRuleTask(_) => BpmnElementType::BusinessRuleTask,
            ElementKind::SendTask(_) => BpmnElementType::SendTask,
            ElementKind::ReceiveTask(_) => BpmnElementType::ReceiveTask,
            ElementKind::UserTask(_) => BpmnElementType::UserTask,
            ElementKind::CallActivity(_) => BpmnElementType::CallActivity,
            ElementKind::ExclusiveGateway { .. } => BpmnElementType::ExclusiveGateway,
            ElementKind::ParallelGateway => BpmnElementType::ParallelGateway,
            ElementKind::EventBasedGateway => BpmnElementType::EventBasedGateway,
            ElementKind::InclusiveGateway { .. } => BpmnElementType::InclusiveGateway,
            ElementKind::IntermediateCatchEvent(_) => BpmnElementType::IntermediateCatchEvent,
            ElementKind::IntermediateThrowEvent(_) => BpmnElementType::IntermediateThrowEvent,
            ElementKind::BoundaryEvent { .. } => BpmnElementType::BoundaryEvent,
            ElementKind::AdHocSubProcess(_) => BpmnElementType::AdHocSubProcess,
            ElementKind::AdHocInnerInstance { .. } => BpmnElementType::AdHocSubProcessInnerInstance,
        }
    }

    pub fn event_type(&self) -> BpmnEventType {
        match self {
            ElementKind::StartEvent => BpmnEventType::None,
            ElementKind::TimerStartEvent(_) => BpmnEventType::Timer,
            ElementKind::MessageStartEvent { .. } => BpmnEventType::Message,
            ElementKind::SignalStartEvent { .. }
            | ElementKind::IntermediateCatchEvent(CatchEventDefinition::Signal(_)) => {
                BpmnEventType::Signal
            }
            ElementKind::EndEvent(definition) | ElementKind::IntermediateThrowEvent(definition) => {
                definition.event_type()
            }
            ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(_)) => {
                BpmnEventType::Timer
            }
            ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(_)) => {
                BpmnEventType::Message
            }
            ElementKind::IntermediateCatchEvent(CatchEventDefinition::Link { .. }) => {
                BpmnEventType::Link
            }
            ElementKind::BoundaryEvent { definition, .. }
            | ElementKind::EventStartEvent { definition, .. } => definition.event_type(),
            ElementKind::ReceiveTask(_) => BpmnEventType::Message,
            _ => BpmnEventType::Unspecified,
        }
    }
}

/// `bpmn:multiInstanceLoopCharacteristics` with its `zeebe:loopCharacteristics`.
#[derive(Debug)]
pub struct MultiInstance {
    /// `isSequential`: one inner instance after the other, else all at once.
    pub sequential: bool,
    /// Evaluated once, when the body is entered; must be a list.
    pub input_collection: Expression,
    /// The local variable of each inner instance that holds its item.
    pub input_element: Option<String>,
    /// The variable that collects the outputs, in input order; set with `output_element`.
    pub output_collection: Option<String>,
    /// Evaluated in each inner instance when it completes.
    pub output_element: Option<Expression>,
    /// Evaluated when an inner instance completes; `true` ends the body early.
    pub completion_condition: Option<Expression>,
}

impl MultiInstance {
    /// The variable `output_element` reads when it is a plain variable reference (or a
    /// path into one): created as a local of each inner instance, as in Zeebe, so that
    /// what a worker sets under that name stays in the instance.
    pub fn output_element_variable(&self) -> Option<&str> {
        plain_variable(self.output_element.as_ref()?)
    }
}

/// `zeebe:executionListeners` of an element, each a job (type and retries; headers only
/// when the listener has its own `zeebe:taskHeaders`, Camunda 8.10's), in document
/// order. On a multi-instance activity they run for each inner instance.
#[derive(Debug, Default)]
pub struct ExecutionListeners {
    /// Run one after the other after the input mappings, before the element's work.
    pub start: Vec<JobDefinition>,
    /// Run one after the other after the output mappings, before the element is left.
    pub end: Vec<JobDefinition>,
}

/// A sequence flow, with its condition when it leaves an exclusive gateway.
#[derive(Debug)]
pub struct SequenceFlow {
    pub id: String,
    pub source: ElementIdx,
    pub target: ElementIdx,
    pub condition: Option<Expression>,
}

/// A `zeebe:input` or `zeebe:output`: evaluate `source`, write it at `target`
/// (a dotted path: `payment.transactionId` writes into a context `payment`).
/// A mapping written without a source maps `null`.
#[derive(Debug)]
pub struct Mapping {
    pub source: Expression,
    pub target: Vec<String>,
}
