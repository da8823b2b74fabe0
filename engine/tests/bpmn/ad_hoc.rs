//! Ad-hoc subprocesses in the model: the ad-hoc subprocess with its `zeebe:adHoc`,
//! completion condition and `cancelRemainingInstances`, the inner instance element
//! holding its content, and which elements can be activated.

use rill_engine::model::{AD_HOC_INNER_INSTANCE_SUFFIX, ElementKind, ValueOrExpr};
use rill_protocol::value::BpmnElementType;
use serde_json::json;

use super::*;

const FIXTURE: &str = "elements/ad-hoc-subprocess.bpmn";

fn model(process_id: &str) -> ProcessModel {
    parse_ok(FIXTURE)
        .into_iter()
        .find(|m| m.bpmn_process_id == process_id)
        .unwrap_or_else(|| panic!("no process {process_id}"))
}

#[test]
fn an_ad_hoc_subprocess_holds_its_content_in_an_inner_instance_element() {
    let model = model("adhoc-basic");
    let ad_hoc = el(&model, "Prepare");
    assert_eq!(ad_hoc.element_type(), BpmnElementType::AdHocSubProcess);
    let ElementKind::AdHocSubProcess(definition) = &ad_hoc.kind else {
        panic!("{:?}", ad_hoc.kind);
    };
    assert_eq!(
        definition.active_elements.as_ref().map(|e| e.source()),
        Some("toActivate")
    );
    assert!(definition.completion_condition.is_none());
    assert!(definition.cancel_remaining_instances);
    assert_eq!(definition.output_collection.as_deref(), Some("results"));
    assert_eq!(definition.output_element_variable(), Some("result"));
    let inner_id = format!("Prepare{AD_HOC_INNER_INSTANCE_SUFFIX}");
    assert_eq!(inner_id, "Prepare#innerInstance");
    let inner = idx(&model, &inner_id);
    assert_eq!(definition.inner_instance, inner);
    assert_eq!(
        model.element(inner).element_type(),
        BpmnElementType::AdHocSubProcessInnerInstance
    );
    assert_eq!(
        model.element(inner).flow_scope,
        Some(idx(&model, "Prepare"))
    );
    assert_eq!(
        ids(&model, model.children(inner)),
        vec!["Research", "Write", "Review", "Note"]
    );
    assert_eq!(el(&model, "Review").flow_scope, Some(inner));
    assert_eq!(incoming(&model, "Review"), vec!["F3"]);
    // Elements with no incoming flow can be activated; Review is reached from Write.
    assert_eq!(
        ids(&model, &definition.activatable),
        vec!["Research", "Write", "Note"]
    );
    assert_eq!(
        definition.elements_metadata[0],
        json!({
            "elementId": "Research",
            "elementName": "Research the topic",
            "documentation": "Finds sources for the topic",
            "properties": {"tool": "search"}
        })
    );
    // As in Zeebe, what an element does not have is left out: no documentation, no
    // properties, no fromAi parameters.
    assert_eq!(
        definition.elements_metadata[1],
        json!({"elementId": "Write", "elementName": "Write a draft"})
    );
    assert_eq!(
        model.enclosing_ad_hoc(idx(&model, "Note")),
        Some(idx(&model, "Prepare"))
    );
    assert!(model.inside_ad_hoc(idx(&model, "Review")));
    assert!(!model.inside_ad_hoc(idx(&model, "Prepare")));
    // The boundary event on the ad-hoc subprocess belongs to it.
    assert_eq!(ids(&model, &ad_hoc.boundary_events), vec!["TooSlow"]);
}

#[test]
fn the_completion_condition_and_cancel_remaining_instances_are_read() {
    let cancel = model("adhoc-cancel");
    let ElementKind::AdHocSubProcess(definition) = &el(&cancel, "Ask").kind else {
        panic!("not an ad-hoc subprocess");
    };
    assert_eq!(
        definition.completion_condition.as_ref().map(|e| e.source()),
        Some("answered")
    );
    assert!(definition.cancel_remaining_instances);
    let keep = model("adhoc-keep");
    let ElementKind::AdHocSubProcess(definition) = &el(&keep, "Collect").kind else {
        panic!("not an ad-hoc subprocess");
    };
    assert!(!definition.cancel_remaining_instances);
}

#[test]
fn a_task_definition_makes_the_job_worker_implementation() {
    let model = parse_ok("elements/ad-hoc-job-worker.bpmn")
        .into_iter()
        .find(|m| m.bpmn_process_id == "adhoc-agent")
        .expect("adhoc-agent");
    let ElementKind::AdHocSubProcess(definition) = &el(&model, "Agent").kind else {
        panic!("not an ad-hoc subprocess");
    };
    let job = definition.job.as_ref().expect("a job definition");
    assert!(matches!(&job.job_type, ValueOrExpr::Static(t) if t == "agent"));
    assert!(matches!(job.retries, ValueOrExpr::Static(2)));
    assert_eq!(job.headers, vec![("model".to_owned(), "small".to_owned())]);
    assert_eq!(definition.output_collection.as_deref(), Some("toolResults"));
    // Without one, Rill runs the ad-hoc subprocess itself.
    let basic = self::model("adhoc-basic");
    let ElementKind::AdHocSubProcess(bpmn) = &el(&basic, "Prepare").kind else {
        panic!("not an ad-hoc subprocess");
    };
    assert!(bpmn.job.is_none());
}

#[test]
fn an_event_subprocess_belongs_to_the_ad_hoc_subprocess_not_to_its_content() {
    let model = parse_ok("elements/ad-hoc-event-subprocess.bpmn")
        .into_iter()
        .find(|m| m.bpmn_process_id == "esp-message")
        .expect("esp-message");
    let tools = idx(&model, "Tools");
    let ElementKind::AdHocSubProcess(definition) = &el(&model, "Tools").kind else {
        panic!("not an ad-hoc subprocess");
    };
    let inner = definition.inner_instance;
    // The ad-hoc subprocess holds the event subprocesses' triggers and runs them.
    assert_eq!(ids(&model, model.children(tools)), vec!["OnNote", "OnStop"]);
    assert_eq!(el(&model, "OnNote").flow_scope, Some(tools));
    assert_eq!(el(&model, "Note").flow_scope, Some(idx(&model, "OnNote")));
    assert_eq!(
        ids(
            &model,
            &model.event_subprocess_starts(tools).collect::<Vec<_>>()
        ),
        vec!["Note", "Stop"]
    );
    // They are not content: neither activatable nor described to a worker.
    assert_eq!(ids(&model, model.children(inner)), vec!["Search", "Fetch"]);
    assert_eq!(
        ids(&model, &definition.activatable),
        vec!["Search", "Fetch"]
    );
    let described: Vec<&str> = definition
        .elements_metadata
        .as_array()
        .expect("list")
        .iter()
        .map(|e| e["elementId"].as_str().expect("id"))
        .collect();
    assert_eq!(described, vec!["Search", "Fetch"]);
    // What runs in them is inside the ad-hoc subprocess (for modification).
    assert!(model.inside_ad_hoc(idx(&model, "OnNote")));
    assert!(model.inside_ad_hoc(idx(&model, "Record")));
    assert!(!model.inside_ad_hoc(tools));
    assert_eq!(model.enclosing_ad_hoc(idx(&model, "OnNote")), None);
}

#[test]
fn an_event_subprocess_message_is_unique_with_the_ad_hoc_subprocess_boundary_events() {
    let xml = String::from_utf8(fixture("elements/ad-hoc-event-subprocess.bpmn")).expect("utf-8");
    // A boundary event on Tools waiting for the message its event subprocess waits for.
    let xml = xml.replace(
        r#"<bpmn:serviceTask id="After" name="After">"#,
        r#"<bpmn:boundaryEvent id="NoteBoundary" attachedToRef="Tools" cancelActivity="false">
      <bpmn:outgoing>F4</bpmn:outgoing>
      <bpmn:messageEventDefinition messageRef="Message_note" />
    </bpmn:boundaryEvent>
    <bpmn:endEvent id="NoteEnd"><bpmn:incoming>F4</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="F4" sourceRef="NoteBoundary" targetRef="NoteEnd" />
    <bpmn:serviceTask id="After" name="After">"#,
    );
    let Err(error) = parse_bpmn("esp.bpmn", xml.as_bytes()) else {
        panic!("a message awaited twice by Tools should be refused");
    };
    let text = error.to_string();
    assert!(
        text.contains("already waits for the message 'note' in the same scope"),
        "{text}"
    );
}

/// An AI agent's ad-hoc subprocess whose one tool, `Tool`, maps `source` to `input`
/// (the source as it is written in the XML attribute, with `&#34;` for quotes), and
/// whose second element, `After`, follows the tool and is no tool itself.
fn agent_with_tool_input(source: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="Definitions_1" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="agent" isExecutable="true">
    <bpmn:startEvent id="Start"><bpmn:outgoing>F1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="Agent">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="io.camunda.agenticai:aiagent-job-worker:1" />
      </bpmn:extensionElements>
      <bpmn:incoming>F1</bpmn:incoming>
      <bpmn:outgoing>F2</bpmn:outgoing>
      <bpmn:serviceTask id="Tool" name="A tool">
        <bpmn:extensionElements>
          <zeebe:taskDefinition type="tool" />
          <zeebe:ioMapping>
            <zeebe:input source="{source}" target="input" />
          </zeebe:ioMapping>
        </bpmn:extensionElements>
        <bpmn:outgoing>F3</bpmn:outgoing>
      </bpmn:serviceTask>
      <bpmn:serviceTask id="After">
        <bpmn:extensionElements>
          <zeebe:taskDefinition type="after" />
          <zeebe:ioMapping>
            <zeebe:input source="=fromAi(&#34;not read: After is no tool&#34;)" target="x" />
          </zeebe:ioMapping>
        </bpmn:extensionElements>
        <bpmn:incoming>F3</bpmn:incoming>
      </bpmn:serviceTask>
      <bpmn:sequenceFlow id="F3" sourceRef="Tool" targetRef="After" />
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="End"><bpmn:incoming>F2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="F1" sourceRef="Start" targetRef="Agent" />
    <bpmn:sequenceFlow id="F2" sourceRef="Agent" targetRef="End" />
  </bpmn:process>
</bpmn:definitions>"#
    )
}

fn tool_metadata(source: &str) -> serde_json::Value {
    let xml = agent_with_tool_input(source);
    let models = parse_bpmn("agent.bpmn", xml.as_bytes())
        .unwrap_or_else(|error| panic!("{source} should deploy: {error}"));
    let ElementKind::AdHocSubProcess(definition) = &el(&models[0], "Agent").kind else {
        panic!("not an ad-hoc subprocess");
    };
    definition.elements_metadata.clone()
}

#[test]
fn from_ai_calls_in_a_tools_input_mappings_are_its_parameters() {
    assert_eq!(
        tool_metadata(
            "=fromAi(toolCall.query, &#34;What to search for&#34;, &#34;string&#34;, {minLength: 3, examples: [&#34;rust&#34;, true, 1.5, -2]}, {required: true})"
        ),
        json!([{
            "elementId": "Tool",
            "elementName": "A tool",
            "parameters": [{
                "name": "toolCall.query",
                "description": "What to search for",
                "type": "string",
                "schema": {"minLength": 3, "examples": ["rust", true, 1.5, -2]},
                "options": {"required": true}
            }]
        }])
    );
    // A reference outside toolCall is named as written; empty strings and contexts are
    // left out; the same call twice is two parameters, as in Zeebe.
    assert_eq!(
        tool_metadata(
            "=fromAi(query, &#34;&#34;, &#34;&#34;, {}, {}) + fromAi(toolCall.a.b) + fromAi(toolCall.a.b)"
        )[0]["parameters"],
        json!([{"name": "query"}, {"name": "toolCall.a.b"}, {"name": "toolCall.a.b"}])
    );
    // Named arguments may come in any order, and skip any but the value.
    assert_eq!(
        tool_metadata("=fromAi(options: {required: false}, value: toolCall.n)")[0]["parameters"],
        json!([{"name": "toolCall.n", "options": {"required": false}}])
    );
}

#[test]
fn a_from_ai_call_an_agent_cannot_read_refuses_the_deployment_naming_the_tool_and_the_call() {
    // (source, what the refusal says is wrong). Zeebe reads the call from its syntax:
    // the value must be a reference, the description and type string literals, the
    // schema and options contexts of literals; `null` is none of them.
    let cases: &[(&str, &str, &str)] = &[
        (
            "=fromAi(&#34;toolCall.q&#34;)",
            r#"=fromAi("toolCall.q")"#,
            r#"its value must be a variable reference such as toolCall.city, not the string "toolCall.q""#,
        ),
        (
            "=fromAi(fromAi(toolCall.q))",
            "=fromAi(fromAi(toolCall.q))",
            "its value must be a variable reference such as toolCall.city, not a call of 'fromAi'",
        ),
        (
            "=fromAi(toolCall.q, 10)",
            "=fromAi(toolCall.q, 10)",
            "its description must be a string literal (e.g. \"The city to look up\"), not 10",
        ),
        (
            "=fromAi(toolCall.q, null, &#34;string&#34;)",
            r#"=fromAi(toolCall.q, null, "string")"#,
            "its description must be a string literal (e.g. \"The city to look up\"), not null",
        ),
        (
            "=fromAi(value: toolCall.q, type: &#34;str&#34; + &#34;ing&#34;)",
            r#"=fromAi(value: toolCall.q, type: "str" + "ing")"#,
            "its type must be a string literal (e.g. \"The city to look up\"), not an arithmetic expression",
        ),
        (
            "=fromAi(toolCall.q, &#34;Q&#34;, &#34;string&#34;, null, {required: false})",
            r#"=fromAi(toolCall.q, "Q", "string", null, {required: false})"#,
            "its schema must be a context of literals (e.g. {enum: [\"a\", \"b\"]}), not null",
        ),
        (
            "=fromAi(toolCall.q, &#34;Q&#34;, &#34;string&#34;, context put({}, &#34;enum&#34;, [1]))",
            r#"=fromAi(toolCall.q, "Q", "string", context put({}, "enum", [1]))"#,
            "its schema must be a context of literals (e.g. {enum: [\"a\", \"b\"]}), not a call of 'context put'",
        ),
        (
            "=fromAi(toolCall.q, &#34;Q&#34;, &#34;string&#34;, {enum: choices})",
            r#"=fromAi(toolCall.q, "Q", "string", {enum: choices})"#,
            "its schema must be a context of literals (e.g. {enum: [\"a\", \"b\"]}), not a context whose entry 'enum' is a variable reference",
        ),
        (
            "=fromAi(value: toolCall.q, options: {default: null})",
            "=fromAi(value: toolCall.q, options: {default: null})",
            "its options must be a context of literals without null",
        ),
        (
            "={a: 1, b: fromAi(toolCall.q, &#34;Q&#34;, &#34;string&#34;, &#34;not a context&#34;)}",
            r#"={a: 1, b: fromAi(toolCall.q, "Q", "string", "not a context")}"#,
            "its schema must be a context of literals (e.g. {enum: [\"a\", \"b\"]}), not the string \"not a context\"",
        ),
    ];
    let mut failures = Vec::new();
    for &(attribute, expression, reason) in cases {
        let xml = agent_with_tool_input(attribute);
        let message = match parse_bpmn("agent.bpmn", xml.as_bytes()) {
            Ok(_) => {
                failures.push(format!("{expression}: deployed"));
                continue;
            }
            Err(error) => error.to_string(),
        };
        let expected = format!(
            "element 'Tool': the fromAi() call in the input mapping of 'input' ({expression}) \
             cannot describe a tool parameter to an AI agent, so Zeebe refuses it: {reason}"
        );
        if !message.contains(&expected) || message.matches("\n- ").count() != 1 {
            failures.push(format!(
                "{expression}:\n  got  {message}\n  want {expected}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
