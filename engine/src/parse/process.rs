//! One executable process, first pass: collect its elements and flows scope by scope.
//! What every flow node goes through is here (its id and scope, multi-instance, its
//! `zeebe:` extensions, mappings and execution listeners, its place in its scope); what
//! differs per element kind is read by that kind's parser (`elements/`), which
//! `elements::parser` finds by the XML element name. References between elements are
//! resolved afterwards (`link.rs`), once every element of the process is known.
//!
//! An element whose definition has a problem is still added, with a placeholder where
//! the bad value would be, so that flows to it do not raise follow-on problems; the
//! placeholders never escape because any problem rejects the whole resource.

use std::collections::{HashMap, HashSet};

use roxmltree::Node;

use super::document::{Context, article, bpmn_children, text_of};
use super::elements::{self, ElementParser, FlowNode};
use super::error::Problems;
use super::extensions::Owner;
use super::{MAX_SCOPE_DEPTH, link};
use crate::model::{Element, ElementIdx, ElementKind, ExecutionListeners, ProcessModel, StartForm};

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

    pub(in crate::parse) fn push_element(
        &mut self,
        node: Node<'a, 'input>,
        element: Element,
    ) -> ElementIdx {
        let idx = ElementIdx(u32::try_from(self.elements.len()).unwrap_or(u32::MAX));
        self.element_index.insert(element.id.clone(), idx);
        self.elements.push(element);
        self.nodes.push(node);
        idx
    }

    fn walk_scope(&mut self, scope: ElementIdx, scope_node: Node<'a, 'input>, depth: usize) {
        for child in bpmn_children(scope_node) {
            let name = child.tag_name().name();
            if let Some(parser) = elements::parser(name) {
                self.add_flow_node(scope, child, parser, depth);
                continue;
            }
            match name {
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
                    let message = format!(
                        "{name} is not supported (Rill runs: {})",
                        elements::supported()
                    );
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
    pub(in crate::parse) fn unsupported(
        &mut self,
        id: Option<&'a str>,
        node: Node<'a, 'input>,
        message: String,
    ) {
        if let Some(id) = id {
            self.unsupported.insert(id);
        }
        self.problem(id, node, message);
    }

    /// Reads one flow node: what every flow node has, and its definition through its
    /// kind's `parser`; then adds it to its scope.
    fn add_flow_node(
        &mut self,
        scope: ElementIdx,
        node: Node<'a, 'input>,
        parser: &'static dyn ElementParser,
        depth: usize,
    ) {
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
        let mut at = FlowNode {
            idx: ElementIdx(u32::try_from(self.elements.len()).unwrap_or(u32::MAX)),
            id,
            node,
            scope,
            in_event_subprocess,
            start_definition: None,
            extensions: Default::default(),
        };
        if !parser.admit(self, &mut at) {
            return;
        }
        let multi_instance = self.loop_characteristics(id, node, name, parser.is_activity());
        at.extensions = self.extensions(id, node, name);
        let kind = parser.parse(self, &at);
        let idx = at.idx;
        let for_compensation = self.for_compensation(id, node, name, parser.is_activity());
        let (inputs, outputs) = self.io_mapping(
            id,
            at.extensions.io_mapping,
            parser.inputs_refused(&kind),
            parser.outputs_refused(&kind),
        );
        let (refused_start, refused_end) = parser.listeners_refused(&kind);
        let listeners = self.execution_listeners(
            id,
            at.extensions.execution_listeners,
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
        parser.read_content(self, &at, depth);
    }

    /// Reads the flow nodes of a subprocess (`scope`, written as `node`), unless that
    /// nests subprocesses too deep.
    pub(in crate::parse) fn walk_content(
        &mut self,
        id: &str,
        scope: ElementIdx,
        node: Node<'a, 'input>,
        depth: usize,
    ) {
        if depth + 1 > MAX_SCOPE_DEPTH {
            self.problem(
                Some(id),
                node,
                format!("subprocesses are nested more than {MAX_SCOPE_DEPTH} deep"),
            );
        } else {
            self.walk_scope(scope, node, depth + 1);
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

    /// `isForCompensation="true"`: the element is a compensation handler. Zeebe runs
    /// tasks, subprocesses and call activities as handlers.
    fn for_compensation(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        name: &str,
        activity: bool,
    ) -> bool {
        if node.attribute("isForCompensation").map(str::trim) != Some("true") {
            return false;
        }
        let event_subprocess = node.attribute("triggeredByEvent").map(str::trim) == Some("true");
        if !activity || event_subprocess {
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
}

/// The flow ids listed in an element's `<incoming>` or `<outgoing>` children.
fn flow_refs(node: Node<'_, '_>, direction: &str) -> Vec<String> {
    bpmn_children(node)
        .filter(|n| n.tag_name().name() == direction)
        .map(text_of)
        .filter(|id| !id.is_empty())
        .collect()
}
