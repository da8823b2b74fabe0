//! Second pass over one process: resolve flow ends, attachments and default flows
//! to indices, then check the graph rules that span several elements.

use std::collections::{HashMap, HashSet};

use super::document::{article, bpmn_children};
use super::elements;
use super::process::Builder;
use super::values;
use crate::model::{
    CatchEventDefinition, ElementIdx, ElementKind, FlowIdx, MessageDefinition, ProcessModel,
    SequenceFlow, ThrowEventDefinition, TriggerDefinition, ValueOrExpr,
};

/// Resolves references and checks the graph; the model is only used by the caller when
/// no problem was found.
pub(super) fn link(mut builder: Builder<'_, '_, '_>) -> ProcessModel {
    let mut linker = Linker::default();
    linker.link_flows(&mut builder);
    linker.check_declared_flows(&mut builder);
    link_attachments(&mut builder);
    let has_compensation = super::compensation::link_compensation(&mut builder);
    elements::check_event_gateways(&mut builder, &linker.flows);
    linker.link_defaults(&mut builder);
    linker.check_exclusive_gateways(&mut builder);
    check_required_outgoing(&mut builder);
    check_start_events(&mut builder);
    elements::check_ad_hoc(&mut builder);
    check_hosted_triggers(&mut builder, &linker.flows);
    elements::link_link_events(&mut builder);
    elements::link_inclusive_joins(&mut builder, &linker.flows);
    ProcessModel {
        bpmn_process_id: builder.process_id.to_owned(),
        name: builder.elements[0].name.clone(),
        version_tag: builder.version_tag,
        has_compensation,
        start_form: builder.start_form,
        elements: builder.elements,
        flows: linker.flows,
        element_index: builder.element_index,
        flow_index: linker.flow_index,
    }
}

#[derive(Default)]
struct Linker {
    flows: Vec<SequenceFlow>,
    flow_index: HashMap<String, FlowIdx>,
    /// Ids of every flow written, including those whose ends did not resolve.
    written: HashSet<String>,
    /// Flows that were written with a condition (even one that did not compile).
    with_condition: HashSet<FlowIdx>,
}

impl Linker {
    fn link_flows(&mut self, b: &mut Builder<'_, '_, '_>) {
        let raw_flows = std::mem::take(&mut b.raw_flows);
        for raw in raw_flows {
            self.written.insert(raw.id.to_owned());
            let source = resolve_end(b, raw.id, raw.node, "sourceRef", raw.source_ref);
            let target = resolve_end(b, raw.id, raw.node, "targetRef", raw.target_ref);
            let (Some(source), Some(target)) = (source, target) else {
                continue;
            };
            let (source_el, target_el) = (
                &b.elements[source.0 as usize],
                &b.elements[target.0 as usize],
            );
            let source_kind = source_el.kind.bpmn_name();
            let crosses_scope =
                source_el.flow_scope != Some(raw.scope) || target_el.flow_scope != Some(raw.scope);
            let leaves_end_event = matches!(source_el.kind, ElementKind::EndEvent(_));
            let leaves_link_throw = matches!(
                source_el.kind,
                ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Link { .. })
            );
            let is_event_subprocess = |kind: &ElementKind| {
                matches!(
                    kind,
                    ElementKind::SubProcess {
                        triggered_by_event: true,
                        ..
                    }
                )
            };
            let leaves_event_subprocess = is_event_subprocess(&source_el.kind);
            let target_rule = match target_el.kind {
                ElementKind::SubProcess {
                    triggered_by_event: true,
                    ..
                } => Some(
                    "an event subprocess cannot have an incoming flow; its start event's trigger \
                     starts it",
                ),
                ElementKind::StartEvent
                | ElementKind::EventStartEvent { .. }
                | ElementKind::TimerStartEvent(_)
                | ElementKind::MessageStartEvent { .. }
                | ElementKind::SignalStartEvent { .. } => {
                    Some("a start event cannot have an incoming flow")
                }
                ElementKind::IntermediateCatchEvent(CatchEventDefinition::Link { .. }) => Some(
                    "a link catch event cannot have an incoming flow; it is entered from the link \
                     throw events with its link name",
                ),
                ElementKind::BoundaryEvent { .. } => Some(
                    "a boundary event cannot have an incoming flow; it is triggered by the \
                     element it is attached to",
                ),
                _ => None,
            };
            let source_id = source_el.id.clone();
            let target_id = target_el.id.clone();
            let scope_id = b.elements[raw.scope.0 as usize].id.clone();
            let mut sound = true;
            if crosses_scope {
                b.problem(
                    Some(raw.id),
                    raw.node,
                    format!(
                        "the sequence flow from '{source_id}' to '{target_id}' crosses a \
                         subprocess boundary; a flow must connect elements inside '{scope_id}', \
                         where it is defined"
                    ),
                );
                sound = false;
            }
            if leaves_end_event {
                b.problem(
                    Some(&source_id),
                    raw.node,
                    format!(
                        "an end event cannot have an outgoing flow ('{}'); remove it",
                        raw.id
                    ),
                );
                sound = false;
            }
            if leaves_event_subprocess {
                b.problem(
                    Some(&source_id),
                    raw.node,
                    format!(
                        "an event subprocess cannot have an outgoing flow ('{}'); when it \
                         completes, its token ends",
                        raw.id
                    ),
                );
                sound = false;
            }
            if leaves_link_throw {
                b.problem(
                    Some(&source_id),
                    raw.node,
                    format!(
                        "a link throw event cannot have an outgoing flow ('{}'); the token \
                         continues at the link catch event with the same link name",
                        raw.id
                    ),
                );
                sound = false;
            }
            if let Some(rule) = target_rule {
                b.problem(Some(&target_id), raw.node, format!("{rule} ('{}')", raw.id));
                sound = false;
            }

            let mut condition = None;
            let mut has_condition = false;
            if let Some((text, condition_node)) = &raw.condition {
                has_condition = true;
                if source_kind != "exclusiveGateway" && source_kind != "inclusiveGateway" {
                    b.problem(
                        Some(raw.id),
                        *condition_node,
                        format!(
                            "the flow has a condition but leaves {} {source_kind} ('{source_id}'); \
                             only flows leaving an exclusive or inclusive gateway can have \
                             conditions",
                            article(source_kind)
                        ),
                    );
                } else if let Some(source) = text.strip_prefix('=') {
                    match values::expression("condition", source) {
                        Ok(expression) => condition = Some(expression),
                        Err(message) => b.problem(Some(raw.id), *condition_node, message),
                    }
                } else {
                    b.problem(
                        Some(raw.id),
                        *condition_node,
                        format!(
                            "the condition '{text}' must be a FEEL expression starting with '=' \
                             (e.g. '=amount > 100')"
                        ),
                    );
                }
            }
            if !sound {
                continue;
            }
            let idx = FlowIdx(u32::try_from(self.flows.len()).unwrap_or(u32::MAX));
            if has_condition {
                self.with_condition.insert(idx);
            }
            self.flow_index.insert(raw.id.to_owned(), idx);
            self.flows.push(SequenceFlow {
                id: raw.id.to_owned(),
                source,
                target,
                condition,
            });
            b.elements[source.0 as usize].outgoing.push(idx);
            b.elements[target.0 as usize].incoming.push(idx);
        }
    }

    /// The `<incoming>`/`<outgoing>` an element lists must be flows that really enter
    /// or leave it.
    fn check_declared_flows(&self, b: &mut Builder<'_, '_, '_>) {
        let declared = std::mem::take(&mut b.declared);
        for entry in &declared {
            let element_id = b.elements[entry.element.0 as usize].id.clone();
            let node = b.nodes[entry.element.0 as usize];
            for (direction, refs) in [("incoming", &entry.incoming), ("outgoing", &entry.outgoing)]
            {
                for flow_id in refs {
                    let Some(&flow) = self.flow_index.get(flow_id) else {
                        if !self.written.contains(flow_id) {
                            b.problem(
                                Some(&element_id),
                                node,
                                format!(
                                    "lists the {direction} flow '{flow_id}', which does not exist"
                                ),
                            );
                        }
                        continue;
                    };
                    let flow = &self.flows[flow.0 as usize];
                    let (end, end_name) = if direction == "incoming" {
                        (flow.target, "targetRef")
                    } else {
                        (flow.source, "sourceRef")
                    };
                    if end != entry.element {
                        let other = b.elements[end.0 as usize].id.clone();
                        b.problem(
                            Some(&element_id),
                            node,
                            format!(
                                "lists the {direction} flow '{flow_id}', but that flow's \
                                 {end_name} is '{other}'"
                            ),
                        );
                    }
                }
            }
        }
    }

    fn link_defaults(&mut self, b: &mut Builder<'_, '_, '_>) {
        let defaults = std::mem::take(&mut b.raw_defaults);
        for (gateway, flow_id) in defaults {
            let gateway_id = b.elements[gateway.0 as usize].id.clone();
            let node = b.nodes[gateway.0 as usize];
            let Some(&flow) = self.flow_index.get(flow_id) else {
                if !self.written.contains(flow_id) {
                    b.problem(
                        Some(&gateway_id),
                        node,
                        format!("the default flow '{flow_id}' does not exist"),
                    );
                }
                continue;
            };
            if self.flows[flow.0 as usize].source != gateway {
                b.problem(
                    Some(&gateway_id),
                    node,
                    format!(
                        "the default flow '{flow_id}' is not one of the gateway's outgoing flows"
                    ),
                );
                continue;
            }
            // Zeebe never evaluates the default flow's condition (it is checked as any
            // condition, and then ignored): the default is taken when no other holds.
            self.flows[flow.0 as usize].condition = None;
            if let ElementKind::ExclusiveGateway { default_flow }
            | ElementKind::InclusiveGateway { default_flow, .. } =
                &mut b.elements[gateway.0 as usize].kind
            {
                *default_flow = Some(flow);
            }
        }
    }

    /// With several ways out, every flow but the default needs a condition.
    fn check_exclusive_gateways(&self, b: &mut Builder<'_, '_, '_>) {
        for idx in 0..b.elements.len() {
            let element = &b.elements[idx];
            let (ElementKind::ExclusiveGateway { default_flow }
            | ElementKind::InclusiveGateway { default_flow, .. }) = element.kind
            else {
                continue;
            };
            let kind = element.kind.bpmn_name();
            if element.outgoing.len() < 2 {
                continue;
            }
            let gateway_id = element.id.clone();
            let unconditional: Vec<FlowIdx> = element
                .outgoing
                .iter()
                .copied()
                .filter(|&f| Some(f) != default_flow && !self.with_condition.contains(&f))
                .collect();
            for flow in unconditional {
                let flow_id = self.flows[flow.0 as usize].id.clone();
                b.problem(
                    Some(&flow_id),
                    b.nodes[idx],
                    format!(
                        "the flow leaves {kind} '{gateway_id}', which has several outgoing \
                         flows, and has no condition; add a condition or make it the gateway's \
                         default flow"
                    ),
                );
            }
        }
    }
}

/// Resolves a flow's `sourceRef` or `targetRef` to an element of this process.
fn resolve_end(
    b: &mut Builder<'_, '_, '_>,
    flow_id: &str,
    node: roxmltree::Node<'_, '_>,
    attribute: &str,
    reference: Option<&str>,
) -> Option<ElementIdx> {
    let Some(reference) = reference.filter(|r| !r.trim().is_empty()) else {
        b.problem(
            Some(flow_id),
            node,
            format!("the sequence flow has no {attribute}; connect both of its ends"),
        );
        return None;
    };
    if b.unsupported.contains(reference) {
        return None;
    }
    match b.element_index.get(reference) {
        Some(&idx) if idx != ProcessModel::ROOT => Some(idx),
        _ => {
            let process_id = b.process_id;
            b.problem(
                Some(flow_id),
                node,
                format!(
                    "the sequence flow's {attribute} '{reference}' is not an element of process \
                     '{process_id}' (a flow to nowhere)"
                ),
            );
            None
        }
    }
}

/// Attaches boundary events to their activities.
fn link_attachments(b: &mut Builder<'_, '_, '_>) {
    let attachments = std::mem::take(&mut b.raw_attachments);
    for (boundary, attached_ref) in attachments {
        let boundary_id = b.elements[boundary.0 as usize].id.clone();
        let node = b.nodes[boundary.0 as usize];
        let Some(attached_ref) = attached_ref.filter(|r| !r.trim().is_empty()) else {
            b.problem(
                Some(&boundary_id),
                node,
                "the boundary event is not attached to anything (attachedToRef); attach it to a \
                 task or subprocess"
                    .to_owned(),
            );
            continue;
        };
        if b.unsupported.contains(attached_ref) {
            continue;
        }
        let host = match b.element_index.get(attached_ref) {
            Some(&host) if host != ProcessModel::ROOT => host,
            _ => {
                b.problem(
                    Some(&boundary_id),
                    node,
                    format!(
                        "the boundary event is attached to '{attached_ref}', which is not an \
                         element of this process"
                    ),
                );
                continue;
            }
        };
        let host_element = &b.elements[host.0 as usize];
        let host_kind = host_element.kind.bpmn_name();
        let event_subprocess = matches!(
            host_element.kind,
            ElementKind::SubProcess {
                triggered_by_event: true,
                ..
            }
        );
        if event_subprocess || !host_element.kind.is_activity() {
            b.problem(
                Some(&boundary_id),
                node,
                format!(
                    "the boundary event is attached to '{attached_ref}', {} {host_kind}; boundary \
                     events can only be attached to tasks, call activities and subprocesses \
                     (not event subprocesses)",
                    article(host_kind)
                ),
            );
            continue;
        }
        if host_element.flow_scope != b.elements[boundary.0 as usize].flow_scope {
            b.problem(
                Some(&boundary_id),
                node,
                format!(
                    "the boundary event is attached to '{attached_ref}' in another scope; place \
                     it in the same process or subprocess as '{attached_ref}'"
                ),
            );
            continue;
        }
        if let ElementKind::BoundaryEvent { attached_to, .. } =
            &mut b.elements[boundary.0 as usize].kind
        {
            *attached_to = host;
        }
        check_error_catch_unique(b, host, boundary);
        b.elements[host.0 as usize].boundary_events.push(boundary);
    }
}

/// An element catches each error code (and "any error") at most once.
fn check_error_catch_unique(b: &mut Builder<'_, '_, '_>, host: ElementIdx, boundary: ElementIdx) {
    let Some(TriggerDefinition::Error { error_code }) = boundary_definition(b, boundary) else {
        return;
    };
    let error_code = error_code.clone();
    let earlier = b.elements[host.0 as usize]
        .boundary_events
        .iter()
        .copied()
        .find(|&other| {
            matches!(boundary_definition(b, other),
                Some(TriggerDefinition::Error { error_code: code }) if *code == error_code)
        });
    if let Some(earlier) = earlier {
        let earlier_id = b.elements[earlier.0 as usize].id.clone();
        let boundary_id = b.elements[boundary.0 as usize].id.clone();
        let host_id = b.elements[host.0 as usize].id.clone();
        let what = match &error_code {
            Some(code) => format!("the error code '{code}'"),
            None => "any error".to_owned(),
        };
        b.problem(
            Some(&boundary_id),
            b.nodes[boundary.0 as usize],
            format!(
                "'{earlier_id}' on '{host_id}' already catches {what}; each error can be caught \
                 once per element"
            ),
        );
    }
}

fn boundary_definition<'m>(
    b: &'m Builder<'_, '_, '_>,
    idx: ElementIdx,
) -> Option<&'m TriggerDefinition> {
    match &b.elements[idx.0 as usize].kind {
        ElementKind::BoundaryEvent { definition, .. } => Some(definition),
        _ => None,
    }
}

/// Gateways route tokens and boundary events start a path: both need a way out.
fn check_required_outgoing(b: &mut Builder<'_, '_, '_>) {
    for idx in 0..b.elements.len() {
        let element = &b.elements[idx];
        // A compensation boundary event leads to its handler by an association instead.
        let needs_outgoing = matches!(
            element.kind,
            ElementKind::ExclusiveGateway { .. }
                | ElementKind::ParallelGateway
                | ElementKind::InclusiveGateway { .. }
                | ElementKind::EventBasedGateway
                | ElementKind::BoundaryEvent { .. }
        ) && !matches!(
            element.kind,
            ElementKind::BoundaryEvent {
                definition: TriggerDefinition::Compensation { .. },
                ..
            }
        );
        if needs_outgoing && element.outgoing.is_empty() {
            let (id, kind) = (element.id.clone(), element.kind.bpmn_name());
            b.problem(
                Some(&id),
                b.nodes[idx],
                format!("the {kind} has no outgoing sequence flow; connect it to the next element"),
            );
        }
    }
}

/// Each process and subprocess has exactly one none start event.
fn check_start_events(b: &mut Builder<'_, '_, '_>) {
    for idx in 0..b.elements.len() {
        let (ElementKind::Process { children, .. } | ElementKind::SubProcess { children, .. }) =
            &b.elements[idx].kind
        else {
            continue;
        };
        if let ElementKind::SubProcess {
            triggered_by_event: true,
            ..
        } = &b.elements[idx].kind
        {
            check_event_subprocess_start(b, idx);
            continue;
        }
        let starts: Vec<ElementIdx> = children
            .iter()
            .copied()
            .filter(|c| matches!(b.elements[c.0 as usize].kind, ElementKind::StartEvent))
            .collect();
        let has_event_starts = children.iter().any(|c| {
            matches!(
                b.elements[c.0 as usize].kind,
                ElementKind::TimerStartEvent(_)
                    | ElementKind::MessageStartEvent { .. }
                    | ElementKind::SignalStartEvent { .. }
            )
        });
        let scope_id = b.elements[idx].id.clone();
        let scope_kind = b.elements[idx].kind.bpmn_name();
        let mut message_starts: Vec<(String, String)> = Vec::new();
        let mut signal_starts: Vec<(String, String)> = Vec::new();
        for child in children.clone() {
            let element = &b.elements[child.0 as usize];
            if let ElementKind::SignalStartEvent { signal_name } = &element.kind
                && !signal_name.is_empty()
            {
                if let Some((first, _)) = signal_starts.iter().find(|(_, n)| n == signal_name) {
                    let message = format!(
                        "the signal '{signal_name}' already starts the process at '{first}'; \
                         each signal start event needs its own signal"
                    );
                    let id = element.id.clone();
                    b.problem(Some(&id), b.nodes[child.0 as usize], message);
                } else {
                    signal_starts.push((element.id.clone(), signal_name.clone()));
                }
                continue;
            }
            if let ElementKind::MessageStartEvent { message_name } = &element.kind
                && !message_name.is_empty()
            {
                if let Some((first, _)) = message_starts.iter().find(|(_, n)| n == message_name) {
                    let message = format!(
                        "the message '{message_name}' already starts the process at '{first}'; \
                         each message start event needs its own message"
                    );
                    let id = element.id.clone();
                    b.problem(Some(&id), b.nodes[child.0 as usize], message);
                } else {
                    message_starts.push((element.id.clone(), message_name.clone()));
                }
            }
        }
        match starts.as_slice() {
            // A process may start by timer, message or signal only.
            [] if has_event_starts => {}
            [] => b.problem(
                Some(&scope_id),
                b.nodes[idx],
                format!("the {scope_kind} has no none start event; add one"),
            ),
            [only] => {
                let only = *only;
                match &mut b.elements[idx].kind {
                    ElementKind::Process { start_event, .. } => *start_event = Some(only),
                    ElementKind::SubProcess { start_event, .. } => *start_event = only,
                    _ => {}
                }
            }
            [_, extra @ ..] => {
                let ids: Vec<String> = starts
                    .iter()
                    .map(|s| format!("'{}'", b.elements[s.0 as usize].id))
                    .collect();
                let listed = ids.join(", ");
                for &start in extra {
                    let id = b.elements[start.0 as usize].id.clone();
                    b.problem(
                        Some(&id),
                        b.nodes[start.0 as usize],
                        format!(
                            "the {scope_kind} '{scope_id}' has several none start events \
                             ({listed}); keep exactly one"
                        ),
                    );
                }
            }
        }
    }
}

/// The elements directly inside a process or subprocess (an ad-hoc subprocess: its
/// event subprocesses).
pub(super) fn children_of(b: &Builder<'_, '_, '_>, idx: usize) -> Vec<ElementIdx> {
    match &b.elements[idx].kind {
        ElementKind::Process { children, .. }
        | ElementKind::SubProcess { children, .. }
        | ElementKind::AdHocInnerInstance { children, .. } => children.clone(),
        ElementKind::AdHocSubProcess(definition) => definition.event_sub_processes.clone(),
        _ => Vec::new(),
    }
}

/// An event subprocess has exactly one start event, with a trigger (timer, message,
/// error): it becomes the subprocess's `start_event`.
fn check_event_subprocess_start(b: &mut Builder<'_, '_, '_>, idx: usize) {
    let children = children_of(b, idx);
    let starts: Vec<ElementIdx> = children
        .iter()
        .copied()
        .filter(|c| {
            matches!(
                b.elements[c.0 as usize].kind,
                ElementKind::StartEvent | ElementKind::EventStartEvent { .. }
            )
        })
        .collect();
    let scope_id = b.elements[idx].id.clone();
    match starts.as_slice() {
        [only]
            if matches!(
                b.elements[only.0 as usize].kind,
                ElementKind::EventStartEvent { .. }
            ) =>
        {
            if let ElementKind::SubProcess { start_event, .. } = &mut b.elements[idx].kind {
                *start_event = *only;
            }
        }
        [] => {
            // A start event already reported as unsupported is not missing as well.
            let reported = bpmn_children(b.nodes[idx]).any(|n| {
                n.tag_name().name() == "startEvent"
                    && n.attribute("id")
                        .is_some_and(|id| b.unsupported.contains(id))
            });
            if !reported {
                b.problem(
                    Some(&scope_id),
                    b.nodes[idx],
                    "the event subprocess has no start event; add a timer, message or error \
                     start event"
                        .to_owned(),
                );
            }
        }
        _ => {
            for start in starts {
                let id = b.elements[start.0 as usize].id.clone();
                let message =
                    if matches!(b.elements[start.0 as usize].kind, ElementKind::StartEvent) {
                        format!(
                            "the event subprocess '{scope_id}' cannot start at a none start event; \
                         give it a timer, message or error definition"
                        )
                    } else {
                        format!(
                            "the event subprocess '{scope_id}' has several start events; keep \
                         exactly one"
                        )
                    };
                b.problem(Some(&id), b.nodes[start.0 as usize], message);
            }
        }
    }
}

/// The message subscriptions one element instance holds are told apart by message name
/// (its own, its boundary events', its event subprocesses', or those of the events after
/// an event-based gateway), and a scope catches each error code once: static names must
/// differ.
fn check_hosted_triggers(b: &mut Builder<'_, '_, '_>, flows: &[SequenceFlow]) {
    for idx in 0..b.elements.len() {
        let host = ElementIdx(u32::try_from(idx).unwrap_or(u32::MAX));
        let mut messages: Vec<(ElementIdx, String)> = Vec::new();
        let mut errors: Vec<(ElementIdx, Option<String>)> = Vec::new();
        let mut escalations: Vec<(ElementIdx, Option<String>)> = Vec::new();
        let mut signals: Vec<(ElementIdx, String)> = Vec::new();
        if let ElementKind::ReceiveTask(definition) = &b.elements[idx].kind
            && let ValueOrExpr::Static(name) = &definition.message_name
        {
            messages.push((host, name.clone()));
        }
        let mut hosted: Vec<ElementIdx> = b.elements[idx].boundary_events.clone();
        for child in children_of(b, idx) {
            if let ElementKind::SubProcess {
                triggered_by_event: true,
                start_event,
                ..
            } = &b.elements[child.0 as usize].kind
            {
                hosted.push(*start_event);
            }
        }
        if matches!(b.elements[idx].kind, ElementKind::EventBasedGateway) {
            hosted.extend(
                b.elements[idx]
                    .outgoing
                    .iter()
                    .map(|f| flows[f.0 as usize].target),
            );
        }
        for catch in hosted {
            if let Some(name) = static_signal_name(&b.elements[catch.0 as usize].kind) {
                check_name_unique(b, &mut signals, catch, name, "signal");
            }
            let (message, error, escalation) = match &b.elements[catch.0 as usize].kind {
                ElementKind::BoundaryEvent { definition, .. } => {
                    (definition.message(), None, definition.escalation_code())
                }
                ElementKind::EventStartEvent { definition, .. } => (
                    definition.message(),
                    definition.error_code(),
                    definition.escalation_code(),
                ),
                ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(m)) => {
                    (Some(m), None, None)
                }
                _ => (None, None, None),
            };
            let message = match message {
                Some(MessageDefinition {
                    message_name: ValueOrExpr::Static(name),
                    ..
                }) if !name.is_empty() => Some(name.clone()),
                _ => None,
            };
            if let Some(name) = message {
                check_name_unique(b, &mut messages, catch, name, "message");
            }
            if let Some(code) = error {
                check_code_unique(b, &mut errors, catch, code, "error");
            }
            if let Some(code) = escalation {
                check_code_unique(b, &mut escalations, catch, code, "escalation");
            }
        }
    }
}

/// The static signal name a held catch event waits for, if it is a signal event.
fn static_signal_name(kind: &ElementKind) -> Option<String> {
    let definition = match kind {
        ElementKind::BoundaryEvent {
            definition: TriggerDefinition::Signal(signal),
            ..
        }
        | ElementKind::EventStartEvent {
            definition: TriggerDefinition::Signal(signal),
            ..
        }
        | ElementKind::IntermediateCatchEvent(CatchEventDefinition::Signal(signal)) => signal,
        _ => return None,
    };
    match &definition.signal_name {
        ValueOrExpr::Static(name) if !name.is_empty() => Some(name.clone()),
        _ => None,
    }
}

/// A scope catches each error or escalation code (and "any") once: `seen` holds the
/// catch events met so far with their codes.
/// Records that `catch` waits for the `what` (message, signal) named `name`, or reports
/// the element that already waits for it in the same scope.
fn check_name_unique(
    b: &mut Builder<'_, '_, '_>,
    seen: &mut Vec<(ElementIdx, String)>,
    catch: ElementIdx,
    name: String,
    what: &str,
) {
    let Some((first, _)) = seen.iter().find(|(_, n)| *n == name) else {
        seen.push((catch, name));
        return;
    };
    let first = b.elements[first.0 as usize].id.clone();
    let catch_id = b.elements[catch.0 as usize].id.clone();
    b.problem(
        Some(&catch_id),
        b.nodes[catch.0 as usize],
        format!(
            "'{first}' already waits for the {what} '{name}' in the same scope; each {what} \
             can be awaited once per element"
        ),
    );
}

fn check_code_unique(
    b: &mut Builder<'_, '_, '_>,
    seen: &mut Vec<(ElementIdx, Option<String>)>,
    catch: ElementIdx,
    code: Option<String>,
    what: &str,
) {
    let Some((first, _)) = seen.iter().find(|(_, c)| *c == code) else {
        seen.push((catch, code));
        return;
    };
    let first = b.elements[first.0 as usize].id.clone();
    let catch_id = b.elements[catch.0 as usize].id.clone();
    let caught = match &code {
        Some(code) => format!("the {what} code '{code}'"),
        None => format!("any {what}"),
    };
    b.problem(
        Some(&catch_id),
        b.nodes[catch.0 as usize],
        format!(
            "'{first}' already catches {caught} here; each {what} can be caught once per scope"
        ),
    );
}
