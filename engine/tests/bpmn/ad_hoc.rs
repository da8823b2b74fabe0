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
