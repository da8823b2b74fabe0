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
            "properties": {"tool": "search"},
            "parameters": []
        })
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
