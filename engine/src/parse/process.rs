//! One executable process: collect its elements and flows scope by scope, reading each
//! element's definition and `zeebe:` extensions. References between elements are
//! resolved afterwards (`link.rs`), once every element of the process is known.
//!
//! An element whose definition has a problem is still added, with a placeholder where
//! the bad value would be, so that flows to it do not raise follow-on problems; the
//! placeholders never escape because any problem rejects the whole resource.

use std::collections::{HashMap, HashSet};

use rill_feel::temporal::IsoDuration;
use roxmltree::Node;

use super::document::{Context, ZEEBE_NS, article, bpmn_children, text_of};
use super::error::Problems;
use super::extensions::{Owner, Verdict, verdict};
use super::values::{self, TimerKind};
use super::{MAX_SCOPE_DEPTH, link};
use crate::model::{
    AD_HOC_INNER_INSTANCE_SUFFIX, AdHocDefinition, BusinessRuleDefinition, CalledBinding,
    CalledElement, CatchEventDefinition, Element, ElementIdx, ElementKind, ExecutionListeners,
    JobDefinition, Mapping, MessageDefinition, MultiInstance, ProcessModel, ScriptDefinition,
    SignalDefinition, StartForm, ThrowEventDefinition, TimerDefinition, TriggerDefinition,
    ValueOrExpr,
};

/// Flow node types Rill runs, as named in BPMN XML.
const SUPPORTED: &str = "startEvent, endEvent, task, manualTask, serviceTask, scriptTask, \
                         businessRuleTask, sendTask, receiveTask, userTask, exclusiveGateway, parallelGateway, \
                         inclusiveGateway, eventBasedGateway, intermediateCatchEvent, \
                         intermediateThrowEvent, boundaryEvent, subProcess, adHocSubProcess, callActivity";

/// Children of a process or subprocess that carry no behaviour (artifacts, lanes,
/// data) or belong to the subprocess element itself; read past.
const READ_PAST_IN_SCOPE: &[&str] = &[
    "documentation",
    "extensionElements",
    "incoming",
    "outgoing",
    "laneSet",
    "textAnnotation",
    "association",
    "group",
    "dataObject",
    "dataObjectReference",
    "dataStoreReference",
    "dataInputAssociation",
    "dataOutputAssociation",
    "ioSpecification",
    "property",
    "multiInstanceLoopCharacteristics",
    "standardLoopCharacteristics",
];

/// Elements that can be multi-instance.
const MULTI_INSTANCE_HOSTS: &[&str] = &[
    "callActivity",
    "task",
    "manualTask",
    "serviceTask",
    "scriptTask",
    "businessRuleTask",
    "sendTask",
    "receiveTask",
    "userTask",
    "subProcess",
    "adHocSubProcess",
];

/// Which thrown and caught codes a reference names.
#[derive(Clone, Copy)]
enum CodeKind {
    Error,
    Escalation,
}

impl CodeKind {
    fn what(self) -> &'static str {
        match self {
            CodeKind::Error => "error",
            CodeKind::Escalation => "escalation",
        }
    }

    fn reference(self) -> &'static str {
        match self {
            CodeKind::Error => "errorRef",
            CodeKind::Escalation => "escalationRef",
        }
    }

    fn code(self) -> &'static str {
        match self {
            CodeKind::Error => "errorCode",
            CodeKind::Escalation => "escalationCode",
        }
    }

    fn definitions<'d, 'a, 'input>(
        self,
        ctx: &'d Context<'a, 'input>,
    ) -> &'d HashMap<&'a str, Node<'a, 'input>> {
        match self {
            CodeKind::Error => &ctx.errors,
            CodeKind::Escalation => &ctx.escalations,
        }
    }
}

/// Default job retries when `zeebe:taskDefinition` has none (as in Zeebe).
pub(super) const DEFAULT_RETRIES: i32 = 3;

/// A sequence flow as written, before its ends are resolved.
pub(super) struct RawFlow<'a, 'input> {
    pub node: Node<'a, 'input>,
    pub id: &'a str,
    /// The process or subprocess the flow is written in.
    pub scope: ElementIdx,
    pub source_ref: Option<&'a str>,
    pub target_ref: Option<&'a str>,
    /// The `conditionExpression` text and its node, when there is one.
    pub condition: Option<(String, Node<'a, 'input>)>,
}

/// The `<incoming>`/`<outgoing>` references an element lists (Modeler writes them).
pub(super) struct DeclaredFlows {
    pub element: ElementIdx,
    pub incoming: Vec<String>,
    pub outgoing: Vec<String>,
}

/// The `zeebe:` extension elements of one flow node.
#[derive(Default)]
pub(super) struct Extensions<'a, 'input> {
    pub(super) task_definition: Option<Node<'a, 'input>>,
    pub(super) task_headers: Option<Node<'a, 'input>>,
    pub(super) io_mapping: Option<Node<'a, 'input>>,
    pub(super) script: Option<Node<'a, 'input>>,
    pub(super) called_element: Option<Node<'a, 'input>>,
    pub(super) called_decision: Option<Node<'a, 'input>>,
    pub(super) execution_listeners: Option<Node<'a, 'input>>,
    pub(super) task_listeners: Option<Node<'a, 'input>>,
    pub(super) user_task: Option<Node<'a, 'input>>,
    pub(super) assignment: Option<Node<'a, 'input>>,
    pub(super) schedule: Option<Node<'a, 'input>>,
    pub(super) priority: Option<Node<'a, 'input>>,
    pub(super) form: Option<Node<'a, 'input>>,
    pub(super) ad_hoc: Option<Node<'a, 'input>>,
}

pub(super) struct Builder<'c, 'a, 'input> {
    pub ctx: &'c Context<'a, 'input>,
    pub problems: &'c mut Problems,
    pub process_id: &'a str,
    pub elements: Vec<Element>,
    /// The XML node of each element, by element index.
    pub nodes: Vec<Node<'a, 'input>>,
    pub element_index: HashMap<String, ElementIdx>,
    /// Ids of unsupported elements already reported; flows to them raise nothing more.
    pub unsupported: HashSet<&'a str>,
    pub raw_flows: Vec<RawFlow<'a, 'input>>,
    /// Boundary events with their `attachedToRef`.
    pub raw_attachments: Vec<(ElementIdx, Option<&'a str>)>,
    /// Exclusive and inclusive gateways with their `default` attribute.
    pub raw_defaults: Vec<(ElementIdx, &'a str)>,
    /// Link throw and catch events with their link name, in document order.
    pub link_throws: Vec<(ElementIdx, String)>,
    pub link_catches: Vec<(ElementIdx, String)>,
    pub declared: Vec<DeclaredFlows>,
    /// `zeebe:versionTag` of the process.
    pub version_tag: Option<String>,
    /// Compensation boundary events, whose handler is found by association later.
    pub compensation_boundaries: Vec<ElementIdx>,
    /// Compensation throw and end events with their `compensateEventDefinition`.
    pub compensation_throws: Vec<(ElementIdx, Node<'a, 'input>)>,
    /// The form of the process's none start event.
    pub start_form: Option<StartForm>,
}

/// A process's model, and whether it is complete: one built with problems holds
/// placeholders and may only be read by checks that report more problems.
pub(super) struct Built {
    pub model: ProcessModel,
    pub complete: bool,
}

/// Builds the model of one executable process, reporting every problem it has; `None`
/// when the process has no id.
pub(super) fn build<'a, 'input>(
    ctx: &Context<'a, 'input>,
    process_node: Node<'a, 'input>,
    problems: &mut Problems,
) -> Option<Built> {
    let Some(process_id) = process_node
        .attribute("id")
        .filter(|id| !id.trim().is_empty())
    else {
        problems.add(
            None,
            ctx.line(process_node),
            "an executable process has no id; set the process id (bpmnProcessId)".to_owned(),
        );
        return None;
    };
    let problems_before = problems.count();
    let mut builder = Builder {
        ctx,
        problems,
        process_id,
        elements: Vec::new(),
        nodes: Vec::new(),
        element_index: HashMap::new(),
        unsupported: HashSet::new(),
        raw_flows: Vec::new(),
        raw_attachments: Vec::new(),
        raw_defaults: Vec::new(),
        link_throws: Vec::new(),
        link_catches: Vec::new(),
        declared: Vec::new(),
        version_tag: None,
        compensation_boundaries: Vec::new(),
        compensation_throws: Vec::new(),
        start_form: None,
    };
    builder.push_element(
        process_node,
        Element {
            id: process_id.to_owned(),
            name: process_node.attribute("name").map(str::to_owned),
            kind: ElementKind::Process {
                start_event: None,
                children: Vec::new(),
                inclusive_joins: Vec::new(),
            },
            flow_scope: None,
            incoming: Vec::new(),
            outgoing: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            boundary_events: Vec::new(),
            multi_instance: None,
            listeners: ExecutionListeners::default(),
            for_compensation: false,
        },
    );
    let process_owner = Owner {
        element: "process",
        message_throw: false,
    };
    // The version tag and the execution listeners of the process itself run; what is
    // not metadata is rejected.
    let mut listeners = None;
    for extension in builder.checked_extensions(process_id, process_node, process_owner) {
        if extension.tag_name().name() == "executionListeners" {
            builder.once(process_id, extension, &mut listeners);
            continue;
        }
        if extension.tag_name().name() != "versionTag" {
            continue;
        }
        match extension.attribute("value").map(str::trim) {
            Some(tag) if !tag.is_empty() => {
                if builder.version_tag.is_some() {
                    builder.problem(
                        Some(process_id),
                        extension,
                        "zeebe:versionTag appears more than once; keep one".to_owned(),
                    );
                }
                builder.version_tag = Some(tag.to_owned());
            }
            _ => builder.problem(
                Some(process_id),
                extension,
                "zeebe:versionTag has no value; set the tag (e.g. value=\"v1.0\") or remove it"
                    .to_owned(),
            ),
        }
    }
    builder.walk_scope(ProcessModel::ROOT, process_node, 0);
    let event_started = builder.elements.iter().skip(1).any(|e| {
        e.flow_scope == Some(ProcessModel::ROOT)
            && matches!(
                e.kind,
                ElementKind::TimerStartEvent(_)
                    | ElementKind::MessageStartEvent { .. }
                    | ElementKind::SignalStartEvent { .. }
            )
    });
    let refused_start = event_started.then_some(
        "start listeners on a process with timer, message or signal start events are not \
         supported yet; put them on the element after the start event",
    );
    let process_listeners =
        builder.execution_listeners(process_id, listeners, refused_start, None, &[]);
    builder.elements[ProcessModel::ROOT.0 as usize].listeners = process_listeners;
    let model = link::link(builder);
    Some(Built {
        model,
        complete: problems.count() == problems_before,
    })
}

impl<'c, 'a, 'input> Builder<'c, 'a, 'input> {
    pub fn problem(&mut self, element_id: Option<&str>, node: Node<'_, '_>, message: String) {
        self.problems.add(element_id, self.ctx.line(node), message);
    }

    /// A `zeebe:loopCharacteristics` attribute that must be a FEEL expression (`=…`),
    /// compiled; `None` after reporting why it is not one.
    fn loop_expression(
        &mut self,
        id: &str,
        extension: Node<'_, '_>,
        attribute: &str,
        what: &str,
        raw: &str,
    ) -> Option<rill_feel::Expression> {
        let Some(source) = raw.strip_prefix('=') else {
            self.problem(
                Some(id),
                extension,
                format!(
                    "the {attribute} '{raw}' must be a FEEL expression starting with '=' \
                     (e.g. '={raw}')"
                ),
            );
            return None;
        };
        match values::expression(what, source) {
            Ok(expression) => Some(expression),
            Err(message) => {
                self.problem(Some(id), extension, message);
                None
            }
        }
    }

    fn push_element(&mut self, node: Node<'a, 'input>, element: Element) -> ElementIdx {
        let idx = ElementIdx(u32::try_from(self.elements.len()).unwrap_or(u32::MAX));
        self.element_index.insert(element.id.clone(), idx);
        self.elements.push(element);
        self.nodes.push(node);
        idx
    }

    fn walk_scope(&mut self, scope: ElementIdx, scope_node: Node<'a, 'input>, depth: usize) {
        for child in bpmn_children(scope_node) {
            let name = child.tag_name().name();
            match name {
                "startEvent"
                | "endEvent"
                | "task"
                | "manualTask"
                | "serviceTask"
                | "scriptTask"
                | "businessRuleTask"
                | "sendTask"
                | "receiveTask"
                | "userTask"
                | "exclusiveGateway"
                | "parallelGateway"
                | "inclusiveGateway"
                | "eventBasedGateway"
                | "intermediateCatchEvent"
                | "intermediateThrowEvent"
                | "boundaryEvent"
                | "callActivity"
                | "subProcess"
                | "adHocSubProcess" => self.add_flow_node(scope, child, depth),
                "sequenceFlow" => self.add_flow(scope, child),
                // Read with the ad-hoc subprocess itself.
                "completionCondition"
                    if matches!(
                        self.elements[scope.0 as usize].kind,
                        ElementKind::AdHocInnerInstance { .. }
                    ) => {}
                _ if READ_PAST_IN_SCOPE.contains(&name) => {}
                _ => {
                    let id = child.attribute("id");
                    let message = format!("{name} is not supported (Rill runs: {SUPPORTED})");
                    self.unsupported(id, child, message);
                }
            }
        }
    }

    /// The flow scope of a flow node read in `scope`: an event subprocess written in an
    /// ad-hoc subprocess belongs to the ad-hoc subprocess itself (as in Zeebe, it holds
    /// its triggers and runs it beside the inner instances), everything else to `scope`.
    fn event_scope_of(&self, scope: ElementIdx, node: Node<'a, 'input>) -> ElementIdx {
        let event_subprocess = node.tag_name().name() == "subProcess"
            && node.attribute("triggeredByEvent").map(str::trim) == Some("true");
        match self.elements[scope.0 as usize] {
            Element {
                kind: ElementKind::AdHocInnerInstance { .. },
                flow_scope: Some(ad_hoc),
                ..
            } if event_subprocess => ad_hoc,
            _ => scope,
        }
    }

    /// Reports an element Rill cannot run; flows to and from it raise nothing more.
    fn unsupported(&mut self, id: Option<&'a str>, node: Node<'a, 'input>, message: String) {
        if let Some(id) = id {
            self.unsupported.insert(id);
        }
        self.problem(id, node, message);
    }

    fn add_flow_node(&mut self, scope: ElementIdx, node: Node<'a, 'input>, depth: usize) {
        let name = node.tag_name().name();
        let Some(id) = node.attribute("id").filter(|id| !id.trim().is_empty()) else {
            let a = article(name);
            self.problem(None, node, format!("{a} {name} has no id; give it one"));
            return;
        };
        if self.element_index.contains_key(id) {
            // A duplicate id, already reported for the whole document.
            return;
        }
        let scope = self.event_scope_of(scope, node);
        let in_event_subprocess = matches!(
            self.elements[scope.0 as usize].kind,
            ElementKind::SubProcess {
                triggered_by_event: true,
                ..
            }
        );
        let mut start_definition = None;
        if name == "startEvent"
            && let Some(definition) = self.event_definition(id, node)
        {
            // Timer and message start events run on the process itself; any other kind
            // is not built at all, so it cannot count as the scope's start event.
            let kind = definition.tag_name().name();
            let runs = if in_event_subprocess {
                matches!(
                    kind,
                    "timerEventDefinition"
                        | "messageEventDefinition"
                        | "signalEventDefinition"
                        | "errorEventDefinition"
                        | "escalationEventDefinition"
                )
            } else {
                matches!(
                    kind,
                    "timerEventDefinition" | "messageEventDefinition" | "signalEventDefinition"
                )
            };
            if in_event_subprocess && !runs {
                let message = format!(
                    "an event subprocess started by a {kind} is not supported; use a timer, \
                     message, signal, error or escalation start event"
                );
                self.unsupported(Some(id), definition, message);
                return;
            }
            if !runs {
                let message = format!(
                    "a start event with a {kind} is not supported; use a none, timer, message \
                     or signal start event"
                );
                self.unsupported(Some(id), definition, message);
                return;
            }
            if scope != ProcessModel::ROOT && !in_event_subprocess {
                let message = format!(
                    "a start event with a {kind} inside a subprocess needs an event subprocess \
                     (triggeredByEvent=\"true\"); a subprocess starts at a none start event"
                );
                self.unsupported(Some(id), definition, message);
                return;
            }
            start_definition = Some(definition);
        }
        let multi_instance = self.loop_characteristics(id, node, name);
        let extensions = self.extensions(id, node, name);
        let idx = ElementIdx(u32::try_from(self.elements.len()).unwrap_or(u32::MAX));
        let kind = match name {
            "startEvent" => match start_definition {
                None => ElementKind::StartEvent,
                Some(definition) if in_event_subprocess => {
                    self.event_subprocess_start(id, node, definition)
                }
                Some(definition) => self.event_start(id, definition),
            },
            "endEvent" => self.end_event(id, node, &extensions),
            "task" => ElementKind::Task,
            "manualTask" => ElementKind::ManualTask,
            "serviceTask" => {
                let missing =
                    "a service task needs a job type; add zeebe:taskDefinition with a type";
                ElementKind::ServiceTask(self.job(id, node, &extensions, Some(missing)))
            }
            "sendTask" => {
                let missing = "a send task needs a job type; add zeebe:taskDefinition with a type \
                               (as in Zeebe, a send task is a job for a worker that sends the \
                               message)";
                ElementKind::SendTask(self.job(id, node, &extensions, Some(missing)))
            }
            "scriptTask" => self.script_task(id, node, &extensions),
            "businessRuleTask" => self.business_rule_task(id, node, &extensions),
            "receiveTask" => {
                let message = self.message(id, node, node.attribute("messageRef"));
                ElementKind::ReceiveTask(message)
            }
            "userTask" => self.user_task(id, node, &extensions),
            "exclusiveGateway" => {
                if let Some(default) = node.attribute("default") {
                    self.raw_defaults.push((idx, default));
                }
                ElementKind::ExclusiveGateway { default_flow: None }
            }
            "parallelGateway" => ElementKind::ParallelGateway,
            "eventBasedGateway" => self.event_based_gateway(id, node),
            "inclusiveGateway" => {
                if let Some(default) = node.attribute("default") {
                    self.raw_defaults.push((idx, default));
                }
                ElementKind::InclusiveGateway {
                    default_flow: None,
                    upstream: Vec::new(),
                }
            }
            "intermediateCatchEvent" => self.intermediate_catch_event(idx, id, node),
            "intermediateThrowEvent" => self.intermediate_throw_event(idx, id, node, &extensions),
            "boundaryEvent" => self.boundary_event(idx, id, node),
            "callActivity" => self.call_activity(id, node, &extensions),
            "adHocSubProcess" => self.ad_hoc_sub_process(idx, id, node, &extensions),
            _ => ElementKind::SubProcess {
                start_event: idx,
                children: Vec::new(),
                inclusive_joins: Vec::new(),
                triggered_by_event: node.attribute("triggeredByEvent").map(str::trim)
                    == Some("true"),
            },
        };
        if name == "startEvent"
            && let Some(form) = extensions.form
        {
            if matches!(kind, ElementKind::StartEvent) && scope == ProcessModel::ROOT {
                self.start_form = self.start_form(id, form);
            } else {
                self.problem(
                    Some(id),
                    form,
                    "zeebe:formDefinition on a start event is a start form, which only the \
                     process's none start event can have"
                        .to_owned(),
                );
            }
        }
        let for_compensation = self.for_compensation(id, node, name);
        if let Some(definition) = self.compensation_definition(&kind, node) {
            self.compensation_throws.push((idx, definition));
        }
        let (inputs, outputs) = self.io_mapping(id, &kind, extensions.io_mapping);
        let (refused_start, refused_end) = listeners_refused(&kind);
        let listeners = self.execution_listeners(
            id,
            extensions.execution_listeners,
            refused_start,
            refused_end,
            kind.task_headers(),
        );
        let declared = DeclaredFlows {
            element: idx,
            incoming: flow_refs(node, "incoming"),
            outgoing: flow_refs(node, "outgoing"),
        };
        self.declared.push(declared);
        self.push_element(
            node,
            Element {
                id: id.to_owned(),
                name: node.attribute("name").map(str::to_owned),
                kind,
                flow_scope: Some(scope),
                incoming: Vec::new(),
                outgoing: Vec::new(),
                inputs,
                outputs,
                boundary_events: Vec::new(),
                multi_instance,
                listeners,
                for_compensation,
            },
        );
        match &mut self.elements[scope.0 as usize].kind {
            ElementKind::Process { children, .. }
            | ElementKind::SubProcess { children, .. }
            | ElementKind::AdHocInnerInstance { children, .. } => children.push(idx),
            ElementKind::AdHocSubProcess(definition) => definition.event_sub_processes.push(idx),
            _ => {}
        }
        if name == "adHocSubProcess" {
            // The content's flow scope: the inner instance element, right after it.
            let inner = self.push_element(
                node,
                Element {
                    id: format!("{id}{AD_HOC_INNER_INSTANCE_SUFFIX}"),
                    name: None,
                    kind: ElementKind::AdHocInnerInstance {
                        children: Vec::new(),
                        inclusive_joins: Vec::new(),
                    },
                    flow_scope: Some(idx),
                    incoming: Vec::new(),
                    outgoing: Vec::new(),
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                    boundary_events: Vec::new(),
                    multi_instance: None,
                    listeners: ExecutionListeners::default(),
                    for_compensation: false,
                },
            );
            if depth + 1 > MAX_SCOPE_DEPTH {
                self.problem(
                    Some(id),
                    node,
                    format!("subprocesses are nested more than {MAX_SCOPE_DEPTH} deep"),
                );
            } else {
                self.walk_scope(inner, node, depth + 1);
            }
        }
        if name == "subProcess" {
            if depth + 1 > MAX_SCOPE_DEPTH {
                self.problem(
                    Some(id),
                    node,
                    format!("subprocesses are nested more than {MAX_SCOPE_DEPTH} deep"),
                );
            } else {
                self.walk_scope(idx, node, depth + 1);
            }
        }
    }

    fn add_flow(&mut self, scope: ElementIdx, node: Node<'a, 'input>) {
        let Some(id) = node.attribute("id").filter(|id| !id.trim().is_empty()) else {
            self.problem(
                None,
                node,
                "a sequenceFlow has no id; give it one".to_owned(),
            );
            return;
        };
        let flow_owner = Owner {
            element: "sequenceFlow",
            message_throw: false,
        };
        // Nothing on a flow runs: what is not metadata is rejected.
        self.checked_extensions(id, node, flow_owner);
        let condition = bpmn_children(node)
            .find(|child| child.tag_name().name() == "conditionExpression")
            .map(|child| (text_of(child), child))
            .filter(|(text, _)| !text.is_empty());
        self.raw_flows.push(RawFlow {
            node,
            id,
            scope,
            source_ref: node.attribute("sourceRef"),
            target_ref: node.attribute("targetRef"),
            condition,
        });
    }

    /// Reads a `bpmn:adHocSubProcess`: `cancelRemainingInstances`, its
    /// `bpmn:completionCondition`, its `zeebe:adHoc` (active elements, output
    /// collection) and, for the job-worker implementation, its `zeebe:taskDefinition`
    /// and `zeebe:taskHeaders`. Its content is read into the inner instance element
    /// (`idx + 1`).
    fn ad_hoc_sub_process(
        &mut self,
        idx: ElementIdx,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let mut definition = AdHocDefinition {
            inner_instance: ElementIdx(idx.0 + 1),
            active_elements: None,
            completion_condition: None,
            cancel_remaining_instances: true,
            output_collection: None,
            output_element: None,
            activatable: Vec::new(),
            elements_metadata: serde_json::Value::Array(Vec::new()),
            job: None,
            event_sub_processes: Vec::new(),
        };
        if extensions.task_definition.is_some() {
            definition.job = Some(self.job(id, node, extensions, None));
        } else if let Some(headers) = extensions.task_headers {
            self.problem(
                Some(id),
                headers,
                "zeebe:taskHeaders on an ad-hoc subprocess belong to its job-worker \
                 implementation, which needs a zeebe:taskDefinition (the job type); add one or \
                 remove the headers"
                    .to_owned(),
            );
        }
        match node.attribute("cancelRemainingInstances").map(str::trim) {
            None | Some("true") => {}
            Some("false") => definition.cancel_remaining_instances = false,
            Some(other) => self.problem(
                Some(id),
                node,
                format!("cancelRemainingInstances must be 'true' or 'false', not '{other}'"),
            ),
        }
        match node.attribute("ordering").map(str::trim) {
            None | Some("Parallel") => {}
            Some(other) => self.problem(
                Some(id),
                node,
                format!(
                    "an ad-hoc subprocess with ordering '{other}' is not supported (as in \
                     Zeebe, its activated elements run in parallel); remove the ordering \
                     attribute"
                ),
            ),
        }
        if let Some(ad_hoc) = extensions.ad_hoc {
            let attribute = |name: &str| {
                ad_hoc
                    .attribute(name)
                    .map(str::trim)
                    .filter(|value| !value.is_empty())
            };
            if let Some(raw) = attribute("activeElementsCollection") {
                definition.active_elements = self.loop_expression(
                    id,
                    ad_hoc,
                    "activeElementsCollection",
                    "activeElementsCollection",
                    raw,
                );
            }
            match (attribute("outputCollection"), attribute("outputElement")) {
                (Some(collection), Some(element)) => {
                    let is_name = !collection.starts_with('=')
                        && collection.chars().all(|c| c.is_alphanumeric() || c == '_');
                    if is_name {
                        definition.output_collection = Some(collection.to_owned());
                    } else {
                        self.problem(
                            Some(id),
                            ad_hoc,
                            format!(
                                "the outputCollection '{collection}' must be a variable name \
                                 (e.g. 'results')"
                            ),
                        );
                    }
                    definition.output_element =
                        self.loop_expression(id, ad_hoc, "outputElement", "outputElement", element);
                }
                (None, None) => {}
                (collection, element) => self.problem(
                    Some(id),
                    ad_hoc,
                    format!(
                        "zeebe:adHoc outputCollection and outputElement must both be set, or \
                         neither (outputCollection: '{}', outputElement: '{}')",
                        collection.unwrap_or(""),
                        element.unwrap_or("")
                    ),
                ),
            }
        }
        for child in bpmn_children(node) {
            if child.tag_name().name() != "completionCondition" {
                continue;
            }
            let text = text_of(child);
            match text.strip_prefix('=') {
                Some(source) => match values::expression("completion condition", source) {
                    Ok(expression) => definition.completion_condition = Some(expression),
                    Err(message) => self.problem(Some(id), child, message),
                },
                None if text.is_empty() => {}
                None => self.problem(
                    Some(id),
                    child,
                    format!(
                        "the completion condition '{text}' must be a FEEL expression starting \
                         with '=' (e.g. '=approved')"
                    ),
                ),
            }
        }
        ElementKind::AdHocSubProcess(Box::new(definition))
    }

    /// Reads `bpmn:multiInstanceLoopCharacteristics` with its `zeebe:loopCharacteristics`
    /// (tasks and subprocesses only); a standard loop is not supported.
    fn loop_characteristics(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        element_name: &str,
    ) -> Option<MultiInstance> {
        let mut found = None;
        for child in bpmn_children(node) {
            match child.tag_name().name() {
                "standardLoopCharacteristics" => self.problem(
                    Some(id),
                    child,
                    "a standard loop is not supported (Zeebe does not run it either); use \
                     multi-instance with an inputCollection"
                        .to_owned(),
                ),
                "multiInstanceLoopCharacteristics" => {
                    if found.is_some() {
                        self.problem(
                            Some(id),
                            child,
                            "multiInstanceLoopCharacteristics appears more than once; keep one"
                                .to_owned(),
                        );
                        continue;
                    }
                    if element_name == "subProcess"
                        && node.attribute("triggeredByEvent").map(str::trim) == Some("true")
                    {
                        self.problem(
                            Some(id),
                            child,
                            "an event subprocess cannot be multi-instance; its start event \
                             decides when it runs"
                                .to_owned(),
                        );
                        continue;
                    }
                    if !MULTI_INSTANCE_HOSTS.contains(&element_name) {
                        self.problem(
                            Some(id),
                            child,
                            format!(
                                "{} {element_name} cannot be multi-instance; only tasks, call \
                                 activities and subprocesses can",
                                article(element_name)
                            ),
                        );
                        continue;
                    }
                    // On a problem the whole resource is rejected; the element is built
                    // without its loop so that nothing else is reported about it.
                    found = self.multi_instance(id, child);
                }
                _ => {}
            }
        }
        found
    }

    fn multi_instance(&mut self, id: &str, node: Node<'a, 'input>) -> Option<MultiInstance> {
        let sequential = node.attribute("isSequential").map(str::trim) == Some("true");
        let owner = Owner {
            element: "multiInstanceLoopCharacteristics",
            message_throw: false,
        };
        let runs = self.checked_extensions(id, node, owner);
        let mut characteristics = None;
        for extension in runs {
            if extension.tag_name().name() != "loopCharacteristics" {
                continue;
            }
            if characteristics.is_some() {
                self.problem(
                    Some(id),
                    extension,
                    "zeebe:loopCharacteristics appears more than once; merge them into one"
                        .to_owned(),
                );
            } else {
                characteristics = Some(extension);
            }
        }
        let mut completion_condition = None;
        for child in bpmn_children(node) {
            match child.tag_name().name() {
                "completionCondition" => {
                    let text = text_of(child);
                    match text.strip_prefix('=') {
                        Some(source) => match values::expression("completion condition", source) {
                            Ok(expression) => completion_condition = Some(expression),
                            Err(message) => self.problem(Some(id), child, message),
                        },
                        None if text.is_empty() => {}
                        None => self.problem(
                            Some(id),
                            child,
                            format!(
                                "the completion condition '{text}' must be a FEEL expression \
                                 starting with '=' (e.g. '=numberOfCompletedInstances >= 2')"
                            ),
                        ),
                    }
                }
                "loopCardinality"
                | "loopDataInputRef"
                | "loopDataOutputRef"
                | "inputDataItem"
                | "outputDataItem"
                | "complexBehaviorDefinition" => {
                    let name = child.tag_name().name();
                    self.problem(
                        Some(id),
                        child,
                        format!(
                            "{name} is not supported (as in Zeebe); set the collection with \
                             zeebe:loopCharacteristics inputCollection (for a count n: '=for i \
                             in 1..n return i')"
                        ),
                    );
                }
                _ => {}
            }
        }
        let Some(extension) = characteristics else {
            self.problem(
                Some(id),
                node,
                "a multi-instance activity needs zeebe:loopCharacteristics with an \
                 inputCollection (e.g. '=items')"
                    .to_owned(),
            );
            return None;
        };
        let input_collection = match extension.attribute("inputCollection").map(str::trim) {
            None | Some("") => {
                self.problem(
                    Some(id),
                    extension,
                    "zeebe:loopCharacteristics needs an inputCollection, the list to iterate \
                 over (e.g. '=items')"
                        .to_owned(),
                );
                None
            }
            Some(raw) => {
                self.loop_expression(id, extension, "inputCollection", "input collection", raw)
            }
        };
        let name = |attribute: &str, this: &mut Self| -> Option<String> {
            let raw = extension.attribute(attribute)?.trim();
            if raw.is_empty() {
                return None;
            }
            if raw.starts_with('=') || raw.contains(char::is_whitespace) {
                this.problem(
                    Some(id),
                    extension,
                    format!("the {attribute} '{raw}' must be a variable name, not an expression"),
                );
                return None;
            }
            Some(raw.to_owned())
        };
        let input_element = name("inputElement", self);
        let output_collection = name("outputCollection", self);
        let output_element = match extension
            .attribute("outputElement")
            .map(str::trim)
            .filter(|raw| !raw.is_empty())
        {
            None => None,
            Some(raw) => {
                self.loop_expression(id, extension, "outputElement", "output element", raw)
            }
        };
        let has_collection = extension
            .attribute("outputCollection")
            .is_some_and(|v| !v.trim().is_empty());
        let has_element = extension
            .attribute("outputElement")
            .is_some_and(|v| !v.trim().is_empty());
        if has_collection != has_element {
            self.problem(
                Some(id),
                extension,
                "outputCollection and outputElement go together: set both (the collection \
                 to fill and what each instance adds to it) or neither"
                    .to_owned(),
            );
        }
        Some(MultiInstance {
            sequential,
            input_collection: input_collection?,
            input_element,
            output_collection,
            output_element,
            completion_condition,
        })
    }

    /// Reads the `zeebe:` extensions, reporting those this element cannot have (see
    /// `extensions::verdict`). Extensions of other vendors are read past.
    fn extensions(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        element_name: &str,
    ) -> Extensions<'a, 'input> {
        let mut found = Extensions::default();
        // Message throw and message end events are jobs (as in Zeebe).
        let message_throw = matches!(element_name, "intermediateThrowEvent" | "endEvent")
            && bpmn_children(node).any(|n| n.tag_name().name() == "messageEventDefinition");
        let owner = Owner {
            element: element_name,
            message_throw,
        };
        for extension in self.checked_extensions(id, node, owner) {
            let name = extension.tag_name().name();
            let slot = match name {
                "taskDefinition" => &mut found.task_definition,
                "taskHeaders" => &mut found.task_headers,
                "script" => &mut found.script,
                "ioMapping" => &mut found.io_mapping,
                "calledElement" => &mut found.called_element,
                "calledDecision" => &mut found.called_decision,
                "executionListeners" => &mut found.execution_listeners,
                "taskListeners" => &mut found.task_listeners,
                "userTask" => &mut found.user_task,
                "assignmentDefinition" => &mut found.assignment,
                "taskSchedule" => &mut found.schedule,
                "priorityDefinition" => &mut found.priority,
                "formDefinition" => &mut found.form,
                "adHoc" => &mut found.ad_hoc,
                _ => continue,
            };
            self.once(id, extension, slot);
        }
        found
    }

    /// Keeps `extension` in `slot`, or reports that it appears twice.
    fn once(&mut self, id: &str, extension: Node<'a, 'input>, slot: &mut Option<Node<'a, 'input>>) {
        if slot.is_some() {
            let name = extension.tag_name().name();
            self.problem(
                Some(id),
                extension,
                format!("zeebe:{name} appears more than once; merge them into one"),
            );
        } else {
            *slot = Some(extension);
        }
    }

    /// The job of a listener (execution or task listener) of type `raw_type` declared
    /// by `node`: its type and retries, static or FEEL; a bad one is reported on `id`.
    pub(super) fn listener_job(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        raw_type: &str,
    ) -> JobDefinition {
        let mut job = JobDefinition {
            job_type: ValueOrExpr::Static(String::new()),
            retries: ValueOrExpr::Static(DEFAULT_RETRIES),
            headers: Vec::new(),
        };
        match values::string_or_expr("listener type", raw_type) {
            Ok(job_type) => job.job_type = job_type,
            Err(message) => self.problem(Some(id), node, message),
        }
        if let Some(raw) = node.attribute("retries").filter(|r| !r.trim().is_empty()) {
            match values::retries(raw) {
                Ok(retries) => job.retries = retries,
                Err(message) => self.problem(Some(id), node, message),
            }
        }
        job
    }

    /// Reads `zeebe:executionListeners`: each `zeebe:executionListener` is a job (a
    /// `type`, static or `=`FEEL, and `retries`, default 3) run at its `eventType`
    /// (`start` or `end`). A listener of an event type the element refuses is reported
    /// with the reason, as is a second listener of one event type with the same type.
    ///
    /// A listener's own `zeebe:taskHeaders` (Camunda 8.10) are its job's headers, over
    /// the element's `element_headers`, as 8.10 documents; a listener without them has
    /// none (Zeebe 8.8). Any other child of a listener is refused.
    fn execution_listeners(
        &mut self,
        id: &str,
        container: Option<Node<'a, 'input>>,
        refused_start: Option<&str>,
        refused_end: Option<&str>,
        element_headers: &[(String, String)],
    ) -> ExecutionListeners {
        let mut listeners = ExecutionListeners::default();
        let Some(container) = container else {
            return listeners;
        };
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for node in container.children().filter(|n| n.is_element()) {
            let name = node.tag_name().name();
            if node.tag_name().namespace() != Some(ZEEBE_NS) || name != "executionListener" {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "'{name}' is not expected in zeebe:executionListeners (only \
                         zeebe:executionListener)"
                    ),
                );
                continue;
            }
            let event = node.attribute("eventType").map(str::trim).unwrap_or("");
            let (into, refused) = match event {
                "start" => (&mut listeners.start, refused_start),
                "end" => (&mut listeners.end, refused_end),
                _ => {
                    self.problem(
                        Some(id),
                        node,
                        format!(
                            "an execution listener's eventType must be 'start' or 'end', not \
                             '{event}'"
                        ),
                    );
                    continue;
                }
            };
            if let Some(reason) = refused {
                self.problem(Some(id), node, reason.to_owned());
                continue;
            }
            let raw_type = node.attribute("type").map(str::trim).unwrap_or("");
            if raw_type.is_empty() {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "a {event} execution listener has no type; set the job type that \
                         workers subscribe to"
                    ),
                );
                continue;
            }
            if seen.contains(&(event, raw_type)) {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "two {event} execution listeners have the type '{raw_type}'; give each \
                         listener of an event type its own type"
                    ),
                );
                continue;
            }
            seen.push((event, raw_type));
            let mut job = self.listener_job(id, node, raw_type);
            if let Some(own) = self.listener_headers(id, node) {
                job.headers = element_headers.to_vec();
                for (key, value) in own {
                    match job
                        .headers
                        .iter_mut()
                        .find(|(existing, _)| *existing == key)
                    {
                        Some(header) => header.1 = value,
                        None => job.headers.push((key, value)),
                    }
                }
            }
            into.push(job);
        }
        listeners
    }

    /// The `zeebe:taskHeaders` of an execution listener, if it has them; any other
    /// child element is reported (Rill would not run it).
    fn listener_headers(
        &mut self,
        id: &str,
        listener: Node<'a, 'input>,
    ) -> Option<Vec<(String, String)>> {
        let mut found = None;
        for child in listener.children().filter(|n| n.is_element()) {
            let name = child.tag_name().name();
            if child.tag_name().namespace() != Some(ZEEBE_NS) || name != "taskHeaders" {
                self.problem(
                    Some(id),
                    child,
                    format!(
                        "'{name}' inside a zeebe:executionListener is not supported; a listener \
                         takes only zeebe:taskHeaders"
                    ),
                );
                continue;
            }
            if found.is_some() {
                self.problem(
                    Some(id),
                    child,
                    "zeebe:taskHeaders appears more than once in one execution listener; merge \
                     them into one"
                        .to_owned(),
                );
                continue;
            }
            found = Some(self.task_headers(id, child));
        }
        found
    }

    /// The `zeebe:` extension elements of `node` that Rill runs; those it rejects are
    /// reported, metadata and other vendors' extensions are read past.
    pub fn checked_extensions(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        owner: Owner<'_>,
    ) -> Vec<Node<'a, 'input>> {
        let mut runs = Vec::new();
        let containers = bpmn_children(node).filter(|n| n.tag_name().name() == "extensionElements");
        for container in containers {
            for extension in container.children().filter(|n| n.is_element()) {
                if extension.tag_name().namespace() != Some(ZEEBE_NS) {
                    continue;
                }
                match verdict(extension.tag_name().name(), owner) {
                    Verdict::Runs => runs.push(extension),
                    Verdict::Metadata => {}
                    Verdict::Rejected(reason) => self.problem(Some(id), extension, reason),
                }
            }
        }
        runs
    }

    fn io_mapping(
        &mut self,
        id: &str,
        kind: &ElementKind,
        io_mapping: Option<Node<'a, 'input>>,
    ) -> (Vec<Mapping>, Vec<Mapping>) {
        let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
        let Some(io_mapping) = io_mapping else {
            return (inputs, outputs);
        };
        for mapping in io_mapping.children().filter(|n| n.is_element()) {
            let name = mapping.tag_name().name();
            let is_zeebe = mapping.tag_name().namespace() == Some(ZEEBE_NS);
            let into = match name {
                "input" if is_zeebe => match inputs_refused(kind) {
                    Some(reason) => {
                        self.problem(Some(id), mapping, reason.to_owned());
                        continue;
                    }
                    None => &mut inputs,
                },
                "output" if is_zeebe => match outputs_refused(kind) {
                    Some(reason) => {
                        self.problem(Some(id), mapping, reason.to_owned());
                        continue;
                    }
                    None => &mut outputs,
                },
                _ => {
                    self.problem(
                        Some(id),
                        mapping,
                        format!("'{name}' is not expected in zeebe:ioMapping (only zeebe:input and zeebe:output)"),
                    );
                    continue;
                }
            };
            let source = match mapping.attribute("source") {
                None => values::expression("mapping source", "null"),
                Some(raw) if raw.trim().is_empty() => values::expression("mapping source", "null"),
                Some(raw) => match raw.trim().strip_prefix('=') {
                    Some(source) => {
                        values::expression(&format!("mapping source '{}'", raw.trim()), source)
                    }
                    // A static input source is a string constant, as in Zeebe (connector
                    // templates write `source="noAuth"`): the text as written, even when
                    // it looks like a number or a boolean.
                    None if name == "input" => Ok(rill_feel::Expression::string_literal(raw)),
                    None => Err(format!(
                        "the output mapping source '{raw}' must be a FEEL expression starting \
                         with '=' (e.g. '={raw}'); only an input mapping can have a static value"
                    )),
                },
            };
            let target = values::target_path(mapping.attribute("target").unwrap_or(""));
            match (source, target) {
                (Ok(source), Ok(target)) => into.push(Mapping { source, target }),
                (source, target) => {
                    for message in [source.err(), target.err()].into_iter().flatten() {
                        self.problem(Some(id), mapping, message);
                    }
                }
            }
        }
        (inputs, outputs)
    }

    /// A timer, message or signal start event of the process.
    fn event_start(&mut self, id: &str, definition: Node<'a, 'input>) -> ElementKind {
        if definition.tag_name().name() == "signalEventDefinition" {
            let signal = self.signal(id, definition);
            let signal_name = match signal.signal_name {
                ValueOrExpr::Static(name) => name,
                ValueOrExpr::Expr(expression) => {
                    self.problem(
                        Some(id),
                        definition,
                        format!(
                            "the signal of a signal start event has the name expression '={}'; \
                             a signal start event needs a static name",
                            expression.source()
                        ),
                    );
                    String::new()
                }
            };
            return ElementKind::SignalStartEvent { signal_name };
        }
        if definition.tag_name().name() == "timerEventDefinition" {
            let timer = self
                .start_timer(id, definition)
                .unwrap_or(TimerDefinition::Date(ValueOrExpr::Static(0)));
            return ElementKind::TimerStartEvent(timer);
        }
        let message_name = match definition.attribute("messageRef") {
            None => {
                self.problem(
                    Some(id),
                    definition,
                    "the message start event names no message (messageRef); reference a \
                     bpmn:message with a name"
                        .to_owned(),
                );
                String::new()
            }
            Some(reference) => self.start_message_name(id, definition, reference),
        };
        ElementKind::MessageStartEvent { message_name }
    }

    /// The timer of a timer start event: a date or a cycle (ISO 8601 or cron), static
    /// or FEEL evaluated when the process is deployed.
    fn start_timer(&mut self, id: &str, definition: Node<'a, 'input>) -> Option<TimerDefinition> {
        let values: Vec<Node<'a, 'input>> = bpmn_children(definition)
            .filter(|n| TimerKind::from_element_name(n.tag_name().name()).is_some())
            .collect();
        let [value] = values.as_slice() else {
            self.problem(
                Some(id),
                definition,
                "a timer start event needs exactly one timeDate or timeCycle".to_owned(),
            );
            return None;
        };
        let kind = TimerKind::from_element_name(value.tag_name().name())?;
        let raw = text_of(*value);
        if kind == TimerKind::Duration {
            self.problem(
                Some(id),
                *value,
                "a timer start event cannot have a timeDuration (a duration from what?); use \
                 timeDate or timeCycle"
                    .to_owned(),
            );
            return None;
        }
        if let Some(source) = raw.trim_start().strip_prefix('=') {
            // Evaluated when the process is deployed (without variables), as in Zeebe,
            // and a cycle again each time it fires; the deployment checks that it gives
            // a date, or a cycle (ISO 8601 or cron).
            return match values::expression(kind.element_name(), source) {
                Ok(expression) if kind == TimerKind::Cycle => {
                    Some(TimerDefinition::Cycle(ValueOrExpr::Expr(expression)))
                }
                Ok(expression) => Some(TimerDefinition::Date(ValueOrExpr::Expr(expression))),
                Err(message) => {
                    self.problem(Some(id), *value, message);
                    None
                }
            };
        }
        match values::timer(kind, raw.trim()) {
            Ok(timer) => Some(timer),
            Err(message) => {
                self.problem(Some(id), *value, message);
                None
            }
        }
    }

    /// The static name of the message a message start event waits for.
    fn start_message_name(&mut self, id: &str, at: Node<'a, 'input>, reference: &str) -> String {
        let Some(&message) = self.ctx.messages.get(reference) else {
            self.problem(
                Some(id),
                at,
                format!(
                    "the message start event references message '{reference}', which does not exist"
                ),
            );
            return String::new();
        };
        match message.attribute("name").map(str::trim) {
            Some(name) if !name.is_empty() && !name.starts_with('=') => name.to_owned(),
            Some(name) if name.starts_with('=') => {
                self.problem(
                    Some(id),
                    at,
                    format!(
                        "the message '{reference}' of a message start event has the name \
                         expression '{name}'; a message start event needs a static name"
                    ),
                );
                String::new()
            }
            _ => {
                self.problem(
                    Some(id),
                    at,
                    format!("the message '{reference}' has no name; give it one"),
                );
                String::new()
            }
        }
    }

    /// A call activity: `zeebe:calledElement` with the called process id, the binding
    /// and the two propagation flags.
    fn call_activity(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let mut called = CalledElement {
            process_id: ValueOrExpr::Static(String::new()),
            binding: CalledBinding::Latest,
            propagate_all_child_variables: true,
            propagate_all_parent_variables: true,
        };
        let Some(definition) = extensions.called_element else {
            self.problem(
                Some(id),
                node,
                "a call activity needs the process to call; add zeebe:calledElement with a \
                 processId"
                    .to_owned(),
            );
            return ElementKind::CallActivity(called);
        };
        match definition
            .attribute("processId")
            .filter(|p| !p.trim().is_empty())
        {
            None => self.problem(
                Some(id),
                definition,
                "zeebe:calledElement has no processId; set the BPMN process id to call".to_owned(),
            ),
            Some(raw) => match values::string_or_expr("called process id", raw.trim()) {
                Ok(process_id) => called.process_id = process_id,
                Err(message) => self.problem(Some(id), definition, message),
            },
        }
        for (attribute, slot) in [
            (
                "propagateAllChildVariables",
                &mut called.propagate_all_child_variables,
            ),
            (
                "propagateAllParentVariables",
                &mut called.propagate_all_parent_variables,
            ),
        ] {
            match definition.attribute(attribute).map(str::trim) {
                None | Some("true") => {}
                Some("false") => *slot = false,
                Some(other) => self.problem(
                    Some(id),
                    definition,
                    format!("{attribute} is '{other}'; it must be true or false"),
                ),
            }
        }
        let version_tag = definition
            .attribute("versionTag")
            .map(str::trim)
            .filter(|t| !t.is_empty());
        match definition.attribute("bindingType").map(str::trim) {
            None | Some("latest") => {}
            Some("deployment") => called.binding = CalledBinding::Deployment,
            Some("versionTag") => match version_tag {
                Some(tag) => called.binding = CalledBinding::VersionTag(tag.to_owned()),
                None => self.problem(
                    Some(id),
                    definition,
                    "bindingType is versionTag but zeebe:calledElement has no versionTag; set \
                     the version tag of the process to call"
                        .to_owned(),
                ),
            },
            Some(other) => self.problem(
                Some(id),
                definition,
                format!("bindingType '{other}' is not known; use latest, deployment or versionTag"),
            ),
        }
        ElementKind::CallActivity(called)
    }

    /// The job of a job-based element: `zeebe:taskDefinition` and `zeebe:taskHeaders`.
    /// Without a task definition, `missing` is reported (when given).
    pub(super) fn job(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
        missing: Option<&str>,
    ) -> JobDefinition {
        let mut job = JobDefinition {
            job_type: ValueOrExpr::Static(String::new()),
            retries: ValueOrExpr::Static(DEFAULT_RETRIES),
            headers: Vec::new(),
        };
        match extensions.task_definition {
            None => {
                if let Some(message) = missing {
                    self.problem(Some(id), node, message.to_owned());
                }
            }
            Some(definition) => {
                match definition
                    .attribute("type")
                    .filter(|t| !t.trim().is_empty())
                {
                    None => self.problem(
                        Some(id),
                        definition,
                        "zeebe:taskDefinition has no type; set the job type that workers \
                         subscribe to"
                            .to_owned(),
                    ),
                    Some(raw) => match values::string_or_expr("job type", raw) {
                        Ok(job_type) => job.job_type = job_type,
                        Err(message) => self.problem(Some(id), definition, message),
                    },
                }
                if let Some(raw) = definition
                    .attribute("retries")
                    .filter(|r| !r.trim().is_empty())
                {
                    match values::retries(raw) {
                        Ok(retries) => job.retries = retries,
                        Err(message) => self.problem(Some(id), definition, message),
                    }
                }
            }
        }
        if let Some(headers) = extensions.task_headers {
            job.headers = self.task_headers(id, headers);
        }
        job
    }

    /// The `zeebe:header`s of a `zeebe:taskHeaders`, in document order; a header
    /// without a key or with a key already given is reported.
    fn task_headers(&mut self, id: &str, headers: Node<'a, 'input>) -> Vec<(String, String)> {
        let mut read: Vec<(String, String)> = Vec::new();
        for header in headers.children().filter(|n| n.is_element()) {
            if header.tag_name().namespace() != Some(ZEEBE_NS)
                || header.tag_name().name() != "header"
            {
                continue;
            }
            let Some(key) = header.attribute("key").filter(|k| !k.is_empty()) else {
                self.problem(Some(id), header, "a task header has no key".to_owned());
                continue;
            };
            if read.iter().any(|(existing, _)| existing == key) {
                self.problem(
                    Some(id),
                    header,
                    format!("the task header '{key}' is defined twice"),
                );
                continue;
            }
            let value = header.attribute("value").unwrap_or("");
            read.push((key.to_owned(), value.to_owned()));
        }
        read
    }

    /// A business rule task: `zeebe:calledDecision` (a DMN decision the engine evaluates
    /// into a result variable) or `zeebe:taskDefinition` (a job), exactly one of them.
    fn business_rule_task(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let placeholder = || {
            ElementKind::BusinessRuleTask(BusinessRuleDefinition::Job(JobDefinition {
                job_type: ValueOrExpr::Static(String::new()),
                retries: ValueOrExpr::Static(DEFAULT_RETRIES),
                headers: Vec::new(),
            }))
        };
        let called = match (extensions.called_decision, extensions.task_definition) {
            (None, None) => {
                self.problem(
                    Some(id),
                    node,
                    "a business rule task needs zeebe:calledDecision (a DMN decision and a \
                     result variable) or zeebe:taskDefinition (a job type for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (Some(_), Some(definition)) => {
                self.problem(
                    Some(id),
                    definition,
                    "a business rule task has both zeebe:calledDecision and \
                     zeebe:taskDefinition; keep one (a decision the engine evaluates, or a job \
                     for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (None, Some(_)) => {
                let job = self.job(id, node, extensions, None);
                return ElementKind::BusinessRuleTask(BusinessRuleDefinition::Job(job));
            }
            (Some(called), None) => called,
        };
        if let Some(headers) = extensions.task_headers {
            self.problem(
                Some(id),
                headers,
                "zeebe:taskHeaders only apply to a job; a business rule task with \
                 zeebe:calledDecision has no job, remove the headers"
                    .to_owned(),
            );
        }
        let mut problems = Vec::new();
        let decision_id = match called.attribute("decisionId").map(str::trim) {
            None | Some("") => {
                problems.push(
                    "zeebe:calledDecision has no decisionId; set the id of the DMN decision to \
                     evaluate"
                        .to_owned(),
                );
                None
            }
            Some(raw) => match values::string_or_expr("called decision id", raw) {
                Ok(decision_id) => Some(decision_id),
                Err(message) => {
                    problems.push(message);
                    None
                }
            },
        };
        let result_variable = match called.attribute("resultVariable").map(str::trim) {
            Some(name) if !name.is_empty() => Some(name.to_owned()),
            _ => {
                problems.push(
                    "zeebe:calledDecision has no resultVariable; name the variable that \
                     receives the decision's output"
                        .to_owned(),
                );
                None
            }
        };
        let version_tag = called
            .attribute("versionTag")
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let binding = match called.attribute("bindingType").map(str::trim) {
            None | Some("latest") => Some(CalledBinding::Latest),
            Some("deployment") => Some(CalledBinding::Deployment),
            Some("versionTag") => match version_tag {
                Some(tag) => Some(CalledBinding::VersionTag(tag.to_owned())),
                None => {
                    problems.push(
                        "zeebe:calledDecision has bindingType versionTag but no versionTag; \
                         set the version tag of the decision to evaluate"
                            .to_owned(),
                    );
                    None
                }
            },
            Some(other) => {
                problems.push(format!(
                    "zeebe:calledDecision has bindingType '{other}'; it must be latest, \
                     deployment or versionTag"
                ));
                None
            }
        };
        match (decision_id, result_variable, binding) {
            (Some(decision_id), Some(result_variable), Some(binding)) if problems.is_empty() => {
                ElementKind::BusinessRuleTask(BusinessRuleDefinition::Decision {
                    decision_id,
                    result_variable,
                    binding,
                })
            }
            _ => {
                for message in problems {
                    self.problem(Some(id), called, message);
                }
                placeholder()
            }
        }
    }

    /// A script task: `zeebe:script` (a FEEL expression the engine evaluates into a
    /// result variable) or `zeebe:taskDefinition` (a job), exactly one of them.
    fn script_task(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let placeholder = || {
            ElementKind::ScriptTask(ScriptDefinition::Job(JobDefinition {
                job_type: ValueOrExpr::Static(String::new()),
                retries: ValueOrExpr::Static(DEFAULT_RETRIES),
                headers: Vec::new(),
            }))
        };
        let script = match (extensions.script, extensions.task_definition) {
            (None, None) => {
                self.problem(
                    Some(id),
                    node,
                    "a script task needs zeebe:script (a FEEL expression and a result variable) \
                     or zeebe:taskDefinition (a job type for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (Some(_), Some(definition)) => {
                self.problem(
                    Some(id),
                    definition,
                    "a script task has both zeebe:script and zeebe:taskDefinition; keep one (an \
                     expression the engine evaluates, or a job for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (None, Some(_)) => {
                let job = self.job(id, node, extensions, None);
                return ElementKind::ScriptTask(ScriptDefinition::Job(job));
            }
            (Some(script), None) => script,
        };
        if let Some(headers) = extensions.task_headers {
            self.problem(
                Some(id),
                headers,
                "zeebe:taskHeaders only apply to a job; a script task with zeebe:script has no \
                 job, remove the headers"
                    .to_owned(),
            );
        }
        let expression = match script.attribute("expression").map(str::trim) {
            None | Some("") => Err(
                "zeebe:script has no expression; write the FEEL expression to evaluate (e.g. \
                 '=a + b')"
                    .to_owned(),
            ),
            Some(raw) => match raw.strip_prefix('=') {
                Some(source) => values::expression("script expression", source),
                None => Err(format!(
                    "the script expression '{raw}' must be a FEEL expression starting with '=' \
                     (e.g. '={raw}')"
                )),
            },
        };
        let result_variable = match script.attribute("resultVariable").map(str::trim) {
            Some(name) if !name.is_empty() => Ok(name.to_owned()),
            _ => Err(
                "zeebe:script has no result variable; name the variable that receives the \
                      expression's result"
                    .to_owned(),
            ),
        };
        match (expression, result_variable) {
            (Ok(expression), Ok(result_variable)) => {
                ElementKind::ScriptTask(ScriptDefinition::Expression {
                    expression,
                    result_variable,
                })
            }
            (expression, result_variable) => {
                for message in [expression.err(), result_variable.err()]
                    .into_iter()
                    .flatten()
                {
                    self.problem(Some(id), script, message);
                }
                placeholder()
            }
        }
    }

    /// The message an event or receive task waits for: `messageRef` to a root-level
    /// `bpmn:message` with a name and a `zeebe:subscription correlationKey`.
    fn message(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        message_ref: Option<&str>,
    ) -> MessageDefinition {
        let mut definition = MessageDefinition {
            message_name: ValueOrExpr::Static(String::new()),
            correlation_key: ValueOrExpr::Static(String::new()),
        };
        let Some(message_ref) = message_ref.filter(|r| !r.trim().is_empty()) else {
            self.problem(
                Some(id),
                node,
                "no message is referenced; select a message (messageRef) with a name and a \
                 correlation key"
                    .to_owned(),
            );
            return definition;
        };
        let Some(&message) = self.ctx.messages.get(message_ref) else {
            self.problem(
                Some(id),
                node,
                format!("the referenced message '{message_ref}' does not exist in this file"),
            );
            return definition;
        };
        match message.attribute("name").filter(|n| !n.trim().is_empty()) {
            None => self.problem(
                Some(id),
                node,
                format!(
                    "the message '{message_ref}' has no name; name the message that publishers send"
                ),
            ),
            Some(raw) => match values::string_or_expr("message name", raw) {
                Ok(name) => definition.message_name = name,
                Err(text) => self.problem(Some(id), message, text),
            },
        }
        let correlation_key = bpmn_children(message)
            .filter(|n| n.tag_name().name() == "extensionElements")
            .flat_map(|container| container.children())
            .find(|n| {
                n.tag_name().namespace() == Some(ZEEBE_NS) && n.tag_name().name() == "subscription"
            })
            .and_then(|subscription| subscription.attribute("correlationKey"))
            .filter(|key| !key.trim().is_empty());
        match correlation_key {
            None => self.problem(
                Some(id),
                node,
                format!(
                    "the message '{message_ref}' has no correlation key; add zeebe:subscription \
                     with a correlationKey (e.g. '=orderId')"
                ),
            ),
            Some(raw) => match values::string_or_expr("correlation key", raw) {
                Ok(key) => definition.correlation_key = key,
                Err(text) => self.problem(Some(id), message, text),
            },
        }
        definition
    }

    /// The signal a signal event catches or throws: `signalRef` to a root-level
    /// `bpmn:signal` with a name (static, or an expression).
    fn signal(&mut self, id: &str, definition: Node<'a, 'input>) -> SignalDefinition {
        let placeholder = SignalDefinition {
            signal_name: ValueOrExpr::Static(String::new()),
        };
        let Some(reference) = definition
            .attribute("signalRef")
            .filter(|r| !r.trim().is_empty())
        else {
            self.problem(
                Some(id),
                definition,
                "no signal is referenced; select a signal (signalRef) with a name".to_owned(),
            );
            return placeholder;
        };
        let Some(&signal) = self.ctx.signals.get(reference) else {
            self.problem(
                Some(id),
                definition,
                format!("the referenced signal '{reference}' does not exist in this file"),
            );
            return placeholder;
        };
        match signal.attribute("name").filter(|n| !n.trim().is_empty()) {
            None => {
                self.problem(
                    Some(id),
                    signal,
                    format!("the signal '{reference}' has no name; name the signal to broadcast"),
                );
                placeholder
            }
            Some(raw) => match values::string_or_expr("signal name", raw) {
                Ok(signal_name) => SignalDefinition { signal_name },
                Err(text) => {
                    self.problem(Some(id), signal, text);
                    placeholder
                }
            },
        }
    }

    /// `isForCompensation="true"`: the element is a compensation handler. Zeebe runs
    /// tasks, subprocesses and call activities as handlers.
    fn for_compensation(&mut self, id: &str, node: Node<'a, 'input>, name: &str) -> bool {
        if node.attribute("isForCompensation").map(str::trim) != Some("true") {
            return false;
        }
        let event_subprocess = node.attribute("triggeredByEvent").map(str::trim) == Some("true");
        let host = matches!(name, "callActivity" | "subProcess" | "adHocSubProcess")
            || MULTI_INSTANCE_HOSTS.contains(&name);
        if !host || event_subprocess {
            let a = article(name);
            self.problem(
                Some(id),
                node,
                format!(
                    "{a} {name} cannot be a compensation handler (isForCompensation); use a \
                     task, a subprocess or a call activity"
                ),
            );
            return false;
        }
        true
    }

    /// The `compensateEventDefinition` of a compensation throw or end event.
    fn compensation_definition(
        &self,
        kind: &ElementKind,
        node: Node<'a, 'input>,
    ) -> Option<Node<'a, 'input>> {
        let throws = matches!(
            kind,
            ElementKind::EndEvent(ThrowEventDefinition::Compensation { .. })
                | ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Compensation { .. })
        );
        if !throws {
            return None;
        }
        bpmn_children(node).find(|n| n.tag_name().name() == "compensateEventDefinition")
    }

    /// Zeebe always waits for the handlers a compensation throw event starts (Camunda
    /// Modeler's checks refuse `waitForCompletion="false"` for Camunda 8).
    fn check_wait_for_completion(&mut self, id: &str, definition: Node<'a, 'input>) {
        if definition.attribute("waitForCompletion").map(str::trim) == Some("false") {
            self.problem(
                Some(id),
                definition,
                "a compensation throw event that does not wait for its handlers \
                 (waitForCompletion=\"false\") is not supported, as in Zeebe; remove the \
                 attribute"
                    .to_owned(),
            );
        }
    }

    /// The single event definition of an event, or `None` for a none event. More than
    /// one is reported.
    fn event_definition(&mut self, id: &str, node: Node<'a, 'input>) -> Option<Node<'a, 'input>> {
        let mut definitions = bpmn_children(node).filter(|n| {
            let name = n.tag_name().name();
            name.ends_with("EventDefinition") || name == "eventDefinitionRef"
        });
        let first = definitions.next()?;
        if let Some(second) = definitions.next() {
            self.problem(
                Some(id),
                second,
                "an event with several event definitions is not supported; keep one".to_owned(),
            );
        }
        Some(first)
    }

    fn end_event(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let Some(definition) = self.event_definition(id, node) else {
            return ElementKind::EndEvent(ThrowEventDefinition::None);
        };
        match definition.tag_name().name() {
            "terminateEventDefinition" => ElementKind::EndEvent(ThrowEventDefinition::Terminate),
            "messageEventDefinition" => {
                let missing = "a message end event needs a job type; add zeebe:taskDefinition \
                               with a type (as in Zeebe, a message end event is a job for a \
                               worker that sends the message)";
                ElementKind::EndEvent(ThrowEventDefinition::Message(self.job(
                    id,
                    node,
                    extensions,
                    Some(missing),
                )))
            }
            "errorEventDefinition" => {
                let error_code = self.thrown_code(id, definition, CodeKind::Error, "end event");
                ElementKind::EndEvent(ThrowEventDefinition::Error { error_code })
            }
            "escalationEventDefinition" => {
                let escalation_code =
                    self.thrown_code(id, definition, CodeKind::Escalation, "end event");
                ElementKind::EndEvent(ThrowEventDefinition::Escalation { escalation_code })
            }
            "signalEventDefinition" => {
                ElementKind::EndEvent(ThrowEventDefinition::Signal(self.signal(id, definition)))
            }
            "compensateEventDefinition" => {
                self.check_wait_for_completion(id, definition);
                ElementKind::EndEvent(ThrowEventDefinition::Compensation { activity: None })
            }
            other => {
                self.problem(
                    Some(id),
                    definition,
                    format!(
                        "an end event with a {other} is not supported; Rill runs none, \
                         terminate, error, escalation, signal, compensation and message end \
                         events"
                    ),
                );
                ElementKind::EndEvent(ThrowEventDefinition::None)
            }
        }
    }

    /// The code an error or escalation throw event throws: from its `errorRef` or
    /// `escalationRef`, required.
    fn thrown_code(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
        kind: CodeKind,
        thrower: &str,
    ) -> ValueOrExpr<String> {
        let placeholder = ValueOrExpr::Static(String::new());
        let what = kind.what();
        let Some(reference) = definition
            .attribute(kind.reference())
            .filter(|r| !r.trim().is_empty())
        else {
            self.problem(
                Some(id),
                definition,
                format!(
                    "{a} {what} {thrower} needs {a} {what} to throw; select {a} {what} ({}) \
                     with {a} {what} code",
                    kind.reference(),
                    a = article(what),
                ),
            );
            return placeholder;
        };
        let Some(&target) = kind.definitions(self.ctx).get(reference) else {
            self.problem(
                Some(id),
                definition,
                format!("the referenced {what} '{reference}' does not exist in this file"),
            );
            return placeholder;
        };
        match target
            .attribute(kind.code())
            .filter(|c| !c.trim().is_empty())
        {
            None => {
                self.problem(
                    Some(id),
                    definition,
                    format!("the {what} '{reference}' has no {what} code; set the code to throw"),
                );
                placeholder
            }
            Some(raw) => {
                values::string_or_expr(&format!("{what} code"), raw).unwrap_or_else(|message| {
                    self.problem(Some(id), target, message);
                    placeholder
                })
            }
        }
    }

    /// The `name` of a `linkEventDefinition`, required and non-empty.
    fn link_name(&mut self, id: &str, definition: Node<'a, 'input>) -> String {
        match definition.attribute("name").map(str::trim) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => {
                self.problem(
                    Some(id),
                    definition,
                    "the link event has no link name; name it (the throw and catch events of a \
                     link share the name)"
                        .to_owned(),
                );
                String::new()
            }
        }
    }

    fn intermediate_throw_event(
        &mut self,
        idx: ElementIdx,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let Some(definition) = self.event_definition(id, node) else {
            return ElementKind::IntermediateThrowEvent(ThrowEventDefinition::None);
        };
        let thrown = match definition.tag_name().name() {
            "linkEventDefinition" => {
                let name = self.link_name(id, definition);
                self.link_throws.push((idx, name.clone()));
                ThrowEventDefinition::Link {
                    name,
                    catch_event: idx,
                }
            }
            "messageEventDefinition" => {
                let missing = "a message intermediate throw event needs a job type; add \
                               zeebe:taskDefinition with a type (as in Zeebe, a message throw \
                               event is a job for a worker that sends the message)";
                ThrowEventDefinition::Message(self.job(id, node, extensions, Some(missing)))
            }
            "escalationEventDefinition" => ThrowEventDefinition::Escalation {
                escalation_code: self.thrown_code(
                    id,
                    definition,
                    CodeKind::Escalation,
                    "intermediate throw event",
                ),
            },
            "signalEventDefinition" => ThrowEventDefinition::Signal(self.signal(id, definition)),
            "compensateEventDefinition" => {
                self.check_wait_for_completion(id, definition);
                ThrowEventDefinition::Compensation { activity: None }
            }
            other => {
                self.problem(
                    Some(id),
                    definition,
                    format!(
                        "an intermediate throw event with a {other} is not supported; Rill runs \
                         none, link, message, signal, escalation and compensation intermediate \
                         throw events"
                    ),
                );
                ThrowEventDefinition::None
            }
        };
        ElementKind::IntermediateThrowEvent(thrown)
    }

    fn intermediate_catch_event(
        &mut self,
        idx: ElementIdx,
        id: &str,
        node: Node<'a, 'input>,
    ) -> ElementKind {
        let placeholder = CatchEventDefinition::Timer(TimerDefinition::Duration(
            ValueOrExpr::Static(IsoDuration {
                months: 0,
                millis: 0,
            }),
        ));
        let Some(definition) = self.event_definition(id, node) else {
            self.problem(
                Some(id),
                node,
                "an intermediate catch event needs a timer, message, signal or link definition"
                    .to_owned(),
            );
            return ElementKind::IntermediateCatchEvent(placeholder);
        };
        let caught = match definition.tag_name().name() {
            "timerEventDefinition" => {
                CatchEventDefinition::Timer(self.timer(id, definition, false))
            }
            "messageEventDefinition" => {
                let message = self.message(id, definition, definition.attribute("messageRef"));
                CatchEventDefinition::Message(message)
            }
            "linkEventDefinition" => {
                let name = self.link_name(id, definition);
                self.link_catches.push((idx, name.clone()));
                CatchEventDefinition::Link { name }
            }
            "signalEventDefinition" => CatchEventDefinition::Signal(self.signal(id, definition)),
            other => {
                self.problem(
                    Some(id),
                    definition,
                    format!(
                        "an intermediate catch event with a {other} is not supported; use a \
                         timer, a message, a signal or a link"
                    ),
                );
                placeholder
            }
        };
        ElementKind::IntermediateCatchEvent(caught)
    }

    fn boundary_event(&mut self, idx: ElementIdx, id: &str, node: Node<'a, 'input>) -> ElementKind {
        let interrupting = node.attribute("cancelActivity").map(str::trim) != Some("false");
        self.raw_attachments
            .push((idx, node.attribute("attachedToRef")));
        let placeholder = TriggerDefinition::Error { error_code: None };
        let definition = match self.event_definition(id, node) {
            None => {
                self.problem(
                    Some(id),
                    node,
                    "a boundary event needs a timer, message, signal, error, escalation or \
                     compensation definition"
                        .to_owned(),
                );
                placeholder
            }
            Some(definition) if definition.tag_name().name() == "compensateEventDefinition" => {
                // The handler is found through the association, once every element is known.
                self.compensation_boundaries.push(idx);
                TriggerDefinition::Compensation { handler: idx }
            }
            Some(definition) => {
                let fix = "an error boundary event must be interrupting; remove \
                           cancelActivity=\"false\"";
                match self.trigger(id, node, definition, interrupting, fix) {
                    Some(trigger) => trigger,
                    None => {
                        let other = definition.tag_name().name();
                        self.problem(
                            Some(id),
                            definition,
                            format!(
                                "a boundary event with a {other} is not supported; use a timer, \
                                 message, signal, error, escalation or compensation boundary event"
                            ),
                        );
                        placeholder
                    }
                }
            }
        };
        ElementKind::BoundaryEvent {
            attached_to: idx,
            interrupting,
            definition,
        }
    }

    /// The start event of an event subprocess: a timer, a message, an error or an
    /// escalation, which interrupts the enclosing scope unless `isInterrupting="false"`
    /// (never for an error). Other definitions were refused before.
    fn event_subprocess_start(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        definition: Node<'a, 'input>,
    ) -> ElementKind {
        let interrupting = node.attribute("isInterrupting").map(str::trim) != Some("false");
        let fix = "an error start event of an event subprocess must be interrupting; remove \
                   isInterrupting=\"false\"";
        let definition = self
            .trigger(id, node, definition, interrupting, fix)
            .unwrap_or(TriggerDefinition::Error { error_code: None });
        ElementKind::EventStartEvent {
            interrupting,
            definition,
        }
    }

    /// What a boundary event or an event subprocess's start event waits for, or `None`
    /// for a definition Rill does not run there. A timer cycle needs a non-interrupting
    /// event; an error an interrupting one (else the problem `fix`).
    fn trigger(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        definition: Node<'a, 'input>,
        interrupting: bool,
        fix: &str,
    ) -> Option<TriggerDefinition> {
        Some(match definition.tag_name().name() {
            "timerEventDefinition" => {
                TriggerDefinition::Timer(self.timer(id, definition, !interrupting))
            }
            "messageEventDefinition" => TriggerDefinition::Message(self.message(
                id,
                definition,
                definition.attribute("messageRef"),
            )),
            "errorEventDefinition" => {
                if !interrupting {
                    self.problem(Some(id), node, fix.to_owned());
                }
                TriggerDefinition::Error {
                    error_code: self.caught_code(id, definition, CodeKind::Error),
                }
            }
            "escalationEventDefinition" => TriggerDefinition::Escalation {
                escalation_code: self.caught_code(id, definition, CodeKind::Escalation),
            },
            "signalEventDefinition" => TriggerDefinition::Signal(self.signal(id, definition)),
            _ => return None,
        })
    }

    /// An event-based gateway: exclusive (the BPMN default), never instantiating.
    fn event_based_gateway(&mut self, id: &str, node: Node<'a, 'input>) -> ElementKind {
        if node.attribute("instantiate").map(str::trim) == Some("true") {
            self.problem(
                Some(id),
                node,
                "an event-based gateway that starts a process (instantiate=\"true\") is not \
                 supported; use message or timer start events"
                    .to_owned(),
            );
        }
        if node.attribute("eventGatewayType").map(str::trim) == Some("Parallel") {
            self.problem(
                Some(id),
                node,
                "a parallel event-based gateway is not supported; remove \
                 eventGatewayType=\"Parallel\""
                    .to_owned(),
            );
        }
        ElementKind::EventBasedGateway
    }

    /// The code an error or escalation catch event catches: `None` (any) without a
    /// reference or when the referenced error or escalation has no code.
    fn caught_code(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
        kind: CodeKind,
    ) -> Option<String> {
        let what = kind.what();
        let reference = definition
            .attribute(kind.reference())
            .filter(|r| !r.trim().is_empty())?;
        let Some(&target) = kind.definitions(self.ctx).get(reference) else {
            self.problem(
                Some(id),
                definition,
                format!("the referenced {what} '{reference}' does not exist in this file"),
            );
            return None;
        };
        let code = target
            .attribute(kind.code())
            .filter(|c| !c.trim().is_empty())?;
        if code.starts_with('=') {
            self.problem(
                Some(id),
                target,
                format!(
                    "the {what} code '{code}' of a catching event must be static text, not an \
                     expression"
                ),
            );
            return None;
        }
        Some(code.to_owned())
    }

    /// A `timerEventDefinition`: exactly one of `timeDuration`, `timeDate` and, where
    /// `allow_cycle`, `timeCycle`.
    fn timer(
        &mut self,
        id: &str,
        definition: Node<'a, 'input>,
        allow_cycle: bool,
    ) -> TimerDefinition {
        let placeholder = TimerDefinition::Duration(ValueOrExpr::Static(IsoDuration {
            months: 0,
            millis: 0,
        }));
        let accepted = if allow_cycle {
            "timeDuration, timeDate or timeCycle"
        } else {
            "timeDuration or timeDate"
        };
        let mut values = bpmn_children(definition)
            .filter_map(|n| TimerKind::from_element_name(n.tag_name().name()).map(|k| (k, n)));
        let Some((kind, value_node)) = values.next() else {
            self.problem(
                Some(id),
                definition,
                format!("the timer has no value; set one of {accepted}"),
            );
            return placeholder;
        };
        if values.next().is_some() {
            self.problem(
                Some(id),
                definition,
                format!("the timer has several values; keep one of {accepted}"),
            );
            return placeholder;
        }
        if kind == TimerKind::Cycle && !allow_cycle {
            self.problem(
                Some(id),
                value_node,
                "timeCycle is only supported on non-interrupting boundary events and \
                 event subprocesses; use timeDuration or timeDate"
                    .to_owned(),
            );
            return placeholder;
        }
        values::timer(kind, &text_of(value_node)).unwrap_or_else(|message| {
            self.problem(Some(id), value_node, message);
            placeholder
        })
    }
}

/// The flow ids listed in an element's `<incoming>` or `<outgoing>` children.
fn flow_refs(node: Node<'_, '_>, direction: &str) -> Vec<String> {
    bpmn_children(node)
        .filter(|n| n.tag_name().name() == direction)
        .map(text_of)
        .filter(|id| !id.is_empty())
        .collect()
}

/// Why an element of this kind cannot have input mappings (they would never be read),
/// or `None` when it can.
fn inputs_refused(kind: &ElementKind) -> Option<&'static str> {
    match kind {
        ElementKind::BoundaryEvent { .. } => {
            Some("a boundaryEvent cannot have input mappings; use output mappings")
        }
        ElementKind::StartEvent
        | ElementKind::EventStartEvent { .. }
        | ElementKind::TimerStartEvent(_)
        | ElementKind::MessageStartEvent { .. }
        | ElementKind::SignalStartEvent { .. } => Some(
            "a start event cannot have input mappings, nothing in it would read them; use \
             output mappings",
        ),
        ElementKind::IntermediateThrowEvent(
            ThrowEventDefinition::None
            | ThrowEventDefinition::Link { .. }
            | ThrowEventDefinition::Escalation { .. },
        ) => Some(
            "a none, link or escalation intermediate throw event cannot have input mappings, \
             nothing in it would read them; use output mappings",
        ),
        ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Compensation { .. }) => Some(
            "a compensation intermediate throw event cannot have input mappings, nothing in it \
             would read them; use output mappings",
        ),
        ElementKind::EndEvent(
            ThrowEventDefinition::None
            | ThrowEventDefinition::Terminate
            | ThrowEventDefinition::Error { .. }
            | ThrowEventDefinition::Escalation { .. }
            | ThrowEventDefinition::Compensation { .. },
        ) => Some(
            "only message end events (a job) and signal end events (the signal's variables) \
             can have input mappings; on this end event nothing would read them",
        ),
        _ => None,
    }
}

/// Why an element of this kind cannot have start and end execution listeners (as Zeebe
/// refuses them), or `None` when it can.
fn listeners_refused(kind: &ElementKind) -> (Option<&'static str>, Option<&'static str>) {
    match kind {
        ElementKind::StartEvent
        | ElementKind::TimerStartEvent(_)
        | ElementKind::MessageStartEvent { .. }
        | ElementKind::SignalStartEvent { .. }
        | ElementKind::EventStartEvent { .. } => (
            Some(
                "a start event cannot have start listeners in zeebe:executionListeners; put \
                 them on the process or subprocess",
            ),
            None,
        ),
        ElementKind::BoundaryEvent {
            definition: TriggerDefinition::Compensation { .. },
            ..
        } => (
            Some(
                "a compensation boundary event cannot have execution listeners; put them on \
                 its compensation handler",
            ),
            Some(
                "a compensation boundary event cannot have execution listeners; put them on \
                 its compensation handler",
            ),
        ),
        ElementKind::BoundaryEvent { .. } => (
            Some(
                "a boundary event cannot have start listeners in zeebe:executionListeners; \
                 put them on the activity it is attached to",
            ),
            None,
        ),
        ElementKind::ExclusiveGateway { .. }
        | ElementKind::ParallelGateway
        | ElementKind::EventBasedGateway
        | ElementKind::InclusiveGateway { .. } => (
            None,
            Some(
                "a gateway cannot have end listeners in zeebe:executionListeners; use start \
                 listeners on the element after it",
            ),
        ),
        ElementKind::EndEvent(ThrowEventDefinition::Error { .. }) => (
            None,
            Some(
                "an error end event cannot have end listeners in zeebe:executionListeners: it \
                 never completes; put them on the element that catches the error",
            ),
        ),
        // Zeebe skips them when an interrupting catch event takes the escalation; Rill
        // refuses them rather than run them only sometimes.
        ElementKind::EndEvent(ThrowEventDefinition::Escalation { .. })
        | ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Escalation { .. }) => (
            None,
            Some(
                "an escalation throw or end event cannot have end listeners in \
                 zeebe:executionListeners (an interrupting catch event would skip them); put \
                 them on the element that catches the escalation",
            ),
        ),
        _ => (None, None),
    }
}

/// Why an element of this kind cannot have output mappings, or `None` when it can.
fn outputs_refused(kind: &ElementKind) -> Option<&'static str> {
    match kind {
        ElementKind::EndEvent(ThrowEventDefinition::Error { .. }) => Some(
            "an error end event cannot have output mappings: it never completes, the error it \
             throws ends its scope",
        ),
        ElementKind::BoundaryEvent {
            definition: TriggerDefinition::Compensation { .. },
            ..
        } => Some(
            "a compensation boundary event cannot have output mappings: it carries no \
             variables; put mappings on its compensation handler",
        ),
        _ => None,
    }
}
