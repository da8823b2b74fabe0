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
        let metadata = activatable
            .iter()
            .map(|&child| element_metadata(b, child))
            .collect();
        if let ElementKind::AdHocSubProcess(definition) = &mut b.elements[idx].kind {
            definition.activatable = activatable;
            definition.elements_metadata = serde_json::Value::Array(metadata);
        }
    }
}

/// One entry of `adHocSubProcessElements`, in Zeebe's shape: the element's id, name,
/// documentation, `zeebe:properties` and the tool parameters its input mappings declare
/// with `fromAi`. As in Zeebe, a field that is empty is left out. A `fromAi` call an
/// agent could not read (see `tool_parameter`) is reported as a problem.
fn element_metadata(b: &mut Builder<'_, '_, '_>, idx: ElementIdx) -> serde_json::Value {
    use serde_json::{Map, Value};
    let element = &b.elements[idx.0 as usize];
    let node = b.nodes[idx.0 as usize];
    let mut entry = Map::new();
    entry.insert("elementId".into(), Value::String(element.id.clone()));
    if let Some(name) = element.name.clone().filter(|name| !name.is_empty()) {
        entry.insert("elementName".into(), Value::String(name));
    }
    let documentation = bpmn_children(node)
        .find(|n| n.tag_name().name() == "documentation")
        .map(crate::parse::document::text_of)
        .filter(|text| !text.is_empty());
    if let Some(documentation) = documentation {
        entry.insert("documentation".into(), Value::String(documentation));
    }
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
    if !properties.is_empty() {
        entry.insert("properties".into(), Value::Object(properties));
    }
    let mut parameters = Vec::new();
    let mut problems = Vec::new();
    for mapping in &element.inputs {
        for call in mapping.source.from_ai_calls() {
            match tool_parameter(&call) {
                Ok(parameter) => parameters.push(Value::Object(parameter)),
                Err(reason) => problems.push(format!(
                    "the fromAi() call in the input mapping of '{}' (={}) cannot describe a \
                     tool parameter to an AI agent, so Zeebe refuses it: {reason}",
                    mapping.target.join("."),
                    mapping.source.source()
                )),
            }
        }
    }
    if !parameters.is_empty() {
        entry.insert("parameters".into(), Value::Array(parameters));
    }
    let id = element.id.clone();
    for problem in problems {
        b.problem(Some(&id), node, problem);
    }
    Value::Object(entry)
}

/// A tool parameter from one `fromAi(value, description, type, schema, options)` call,
/// read as Zeebe reads it: `name` is the value's reference (`toolCall.city`), the
/// description and type must be string literals and the schema and options contexts
/// of literals (none of them `null`); a field not given, or empty, is left out.
fn tool_parameter(
    call: &rill_feel::FromAiCall,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    use rill_feel::FromAiArgument;
    use serde_json::Value;
    let mut parameter = serde_json::Map::new();
    let FromAiArgument::Reference(names) = &call.value else {
        return Err(format!(
            "its value must be a variable reference such as toolCall.city, not {}",
            describe(&call.value)
        ));
    };
    parameter.insert("name".into(), Value::String(names.join(".")));
    for (field, argument) in [
        ("description", &call.description),
        ("type", &call.type_name),
    ] {
        match argument {
            // Left out, as Zeebe leaves out an empty field.
            None => {}
            Some(FromAiArgument::Literal(Value::String(text))) if text.is_empty() => {}
            Some(FromAiArgument::Literal(Value::String(text))) => {
                parameter.insert(field.into(), Value::String(text.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "its {field} must be a string literal (e.g. \"The city to look up\"), not {}",
                    describe(other)
                ));
            }
        }
    }
    for (field, argument) in [("schema", &call.schema), ("options", &call.options)] {
        match argument {
            None => {}
            Some(FromAiArgument::Literal(Value::Object(context))) if context.is_empty() => {}
            Some(FromAiArgument::Literal(Value::Object(context))) if !holds_null(context) => {
                parameter.insert(field.into(), Value::Object(context.clone()));
            }
            Some(FromAiArgument::Literal(Value::Object(_))) => {
                return Err(format!(
                    "its {field} must be a context of literals without null (e.g. {{enum: \
                     [\"a\", \"b\"]}}), not a context that holds null"
                ));
            }
            Some(other) => {
                return Err(format!(
                    "its {field} must be a context of literals (e.g. {{enum: [\"a\", \"b\"]}}), \
                     not {}",
                    describe(other)
                ));
            }
        }
    }
    Ok(parameter)
}

/// Whether a literal context holds `null` at any depth (Zeebe reads no `null` there).
fn holds_null(context: &serde_json::Map<String, serde_json::Value>) -> bool {
    use serde_json::Value;
    fn is_or_holds_null(value: &Value) -> bool {
        match value {
            Value::Null => true,
            Value::Array(items) => items.iter().any(is_or_holds_null),
            Value::Object(entries) => entries.values().any(is_or_holds_null),
            _ => false,
        }
    }
    context.values().any(is_or_holds_null)
}

/// A `fromAi` argument, for a message.
fn describe(argument: &rill_feel::FromAiArgument) -> String {
    use rill_feel::FromAiArgument;
    use serde_json::Value;
    match argument {
        FromAiArgument::Reference(names) => format!("the reference {}", names.join(".")),
        FromAiArgument::Literal(Value::Null) => "null".to_owned(),
        FromAiArgument::Literal(Value::String(text)) => format!("the string \"{text}\""),
        FromAiArgument::Literal(Value::Array(_)) => "a list".to_owned(),
        FromAiArgument::Literal(Value::Object(_)) => "a context".to_owned(),
        FromAiArgument::Literal(other) => other.to_string(),
        FromAiArgument::Computed(what) => what.clone(),
    }
}
