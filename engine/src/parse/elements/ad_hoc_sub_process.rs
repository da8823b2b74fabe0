//! `bpmn:adHocSubProcess`: its attributes, completion condition, `zeebe:adHoc` and, for
//! the job-worker implementation, its job; its content is read into the inner instance
//! element that follows it. In the second pass, which inner elements can be activated.

use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{
    AD_HOC_INNER_INSTANCE_SUFFIX, AdHocDefinition, CatchEventDefinition, Element, ElementIdx,
    ElementKind, ExecutionListeners,
};
use crate::parse::document::{bpmn_children, text_of};
use crate::parse::extensions::Extensions;
use crate::parse::link::children_of;
use crate::parse::process::Builder;
use crate::parse::values;

pub(super) struct AdHocSubProcess;

impl ElementParser for AdHocSubProcess {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.ad_hoc_sub_process(at.idx, at.id, at.node, &at.extensions)
    }

    /// Adds the inner instance element, right after the ad-hoc subprocess, and reads
    /// the content into it (its flow scope).
    fn read_content<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
        depth: usize,
    ) {
        let inner = b.push_element(
            at.node,
            Element {
                id: format!("{}{AD_HOC_INNER_INSTANCE_SUFFIX}", at.id),
                name: None,
                kind: ElementKind::AdHocInnerInstance {
                    children: Vec::new(),
                    inclusive_joins: Vec::new(),
                },
                flow_scope: Some(at.idx),
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
        b.walk_content(at.id, inner, at.node, depth);
    }

    fn is_activity(&self) -> bool {
        true
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
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
}

/// The content of each ad-hoc subprocess (as Zeebe checks it: at least one activity, no
/// start or end event), what Rill does not run inside one yet (event subprocesses,
/// compensation), and the elements it may activate: those with no incoming sequence
/// flow, with the `adHocSubProcessElements` metadata of each.
pub(in crate::parse) fn check_ad_hoc(b: &mut Builder<'_, '_, '_>) {
    for idx in 0..b.elements.len() {
        let ElementKind::AdHocSubProcess(definition) = &b.elements[idx].kind else {
            continue;
        };
        let inner = definition.inner_instance.0 as usize;
        let ad_hoc_id = b.elements[idx].id.clone();
        let mut has_activity = false;
        let mut activatable = Vec::new();
        let mut metadata = Vec::new();
        for child in children_of(b, inner) {
            let element = &b.elements[child.0 as usize];
            let id = element.id.clone();
            let node = b.nodes[child.0 as usize];
            let refused = match &element.kind {
                ElementKind::StartEvent
                | ElementKind::EventStartEvent { .. }
                | ElementKind::TimerStartEvent(_)
                | ElementKind::MessageStartEvent { .. }
                | ElementKind::SignalStartEvent { .. } => Some(format!(
                    "the ad-hoc subprocess '{ad_hoc_id}' cannot contain a start event (as in \
                     Zeebe): its elements are entered when they are activated; remove it"
                )),
                ElementKind::EndEvent(_) => Some(format!(
                    "the ad-hoc subprocess '{ad_hoc_id}' cannot contain an end event (as in \
                     Zeebe): a path inside ends at its last element; remove it"
                )),
                _ => None,
            };
            if let Some(message) = refused {
                b.problem(Some(&id), node, message);
                continue;
            }
            if element.kind.is_activity() {
                has_activity = true;
            }
            // A compensation handler runs only when compensation calls it.
            let entered_otherwise = element.for_compensation
                || matches!(
                    element.kind,
                    ElementKind::BoundaryEvent { .. }
                        | ElementKind::IntermediateCatchEvent(CatchEventDefinition::Link { .. })
                );
            if element.incoming.is_empty() && !entered_otherwise {
                activatable.push(child);
                metadata.push(element_metadata(b, child));
            }
        }
        if !has_activity {
            b.problem(
                Some(&ad_hoc_id),
                b.nodes[idx],
                "an ad-hoc subprocess needs at least one activity (as in Zeebe); add a task"
                    .to_owned(),
            );
        }
        if let ElementKind::AdHocSubProcess(definition) = &mut b.elements[idx].kind {
            definition.activatable = activatable;
            definition.elements_metadata = serde_json::Value::Array(metadata);
        }
    }
}

/// One entry of `adHocSubProcessElements`: the element's id, name, documentation and
/// `zeebe:properties` (Zeebe's `parameters`, from `fromAi` calls, are left empty).
fn element_metadata(b: &Builder<'_, '_, '_>, idx: ElementIdx) -> serde_json::Value {
    use serde_json::{Map, Value};
    let element = &b.elements[idx.0 as usize];
    let node = b.nodes[idx.0 as usize];
    let documentation = bpmn_children(node)
        .find(|n| n.tag_name().name() == "documentation")
        .map(|n| Value::String(crate::parse::document::text_of(n)))
        .unwrap_or(Value::Null);
    let mut properties = Map::new();
    for container in bpmn_children(node).filter(|n| n.tag_name().name() == "extensionElements") {
        for list in container
            .children()
            .filter(|n| n.is_element() && n.tag_name().name() == "properties")
        {
            for property in list.children().filter(|n| n.is_element()) {
                if let Some(name) = property.attribute("name") {
                    let value = property.attribute("value").unwrap_or("");
                    properties.insert(name.to_owned(), Value::String(value.to_owned()));
                }
            }
        }
    }
    let mut entry = Map::new();
    entry.insert("elementId".into(), Value::String(element.id.clone()));
    entry.insert(
        "elementName".into(),
        element.name.clone().map_or(Value::Null, Value::String),
    );
    entry.insert("documentation".into(), documentation);
    entry.insert("properties".into(), Value::Object(properties));
    entry.insert("parameters".into(), Value::Array(Vec::new()));
    Value::Object(entry)
}
