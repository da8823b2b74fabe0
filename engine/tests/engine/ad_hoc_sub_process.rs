//! Ad-hoc subprocesses (Zeebe 8.8's BPMN implementation): elements activated on entry
//! by `activeElementsCollection` and later by the activation command, each in an inner
//! instance; the completion condition with and without `cancelRemainingInstances`; the
//! output collection; incidents; cancel and boundary events.
//! Fixture: `tests/fixtures/elements/ad-hoc-subprocess.bpmn`.

use rill_protocol::value::{AdHocSubProcessActivateElement, BpmnElementType, IncidentErrorType};
use rill_protocol::{
    ActivateAdHocSubProcessActivities, Command, Intent, JsonValue, Key, RecordType, RejectionType,
    ValueType,
};
use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = "elements/ad-hoc-subprocess.bpmn";

fn rule() -> EngineRule {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy_fixture(FIXTURE);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    rule
}

fn ad_hoc_key(rule: &EngineRule, id: &str) -> Key {
    let activated = rule.element_events(id, Intent::ElementActivating);
    assert_eq!(activated.len(), 1, "{id} entered once");
    assert_eq!(
        activated[0].1.bpmn_element_type,
        BpmnElementType::AdHocSubProcess
    );
    activated[0].0
}

fn complete_job(rule: &mut EngineRule, key: Key, variables: Value) {
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn activation(key: Key, elements: &[(&str, Value)], cancel: bool) -> Command {
    Command::ActivateAdHocSubProcessActivities(ActivateAdHocSubProcessActivities {
        ad_hoc_sub_process_instance_key: key,
        elements: elements
            .iter()
            .map(|(id, variables)| AdHocSubProcessActivateElement {
                element_id: (*id).to_owned(),
                variables: JsonValue::from(variables.clone()),
            })
            .collect(),
        cancel_remaining_instances: cancel,
    })
}

fn state(rule: &mut EngineRule, instance: Key) -> rill_engine::ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

fn is_completed(rule: &EngineRule, id: &str) -> bool {
    !rule.element_events(id, Intent::ElementCompleted).is_empty()
}

#[test]
fn entry_activates_the_collection_each_in_an_inner_instance() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": ["Research", "Write"]}));
    let ad_hoc = ad_hoc_key(&rule, "Prepare");
    assert_eq!(
        rule.element_events("Prepare", Intent::ElementActivated)
            .len(),
        1
    );

    // One inner instance per element, activated at once, in the collection's order.
    let inner = rule.element_events("Prepare#innerInstance", Intent::ElementActivated);
    assert_eq!(inner.len(), 2);
    for (_, record) in &inner {
        assert_eq!(
            record.bpmn_element_type,
            BpmnElementType::AdHocSubProcessInnerInstance
        );
        assert_eq!(record.flow_scope_key, ad_hoc.get());
    }
    let research = rule.element_events("Research", Intent::ElementActivated);
    let write = rule.element_events("Write", Intent::ElementActivated);
    assert_eq!(research[0].1.flow_scope_key, inner[0].0.get());
    assert_eq!(write[0].1.flow_scope_key, inner[1].0.get());
    let lifecycle = rule.records().lifecycle();
    let inner_at = lifecycle
        .iter()
        .rposition(|(id, intent)| {
            id == "Prepare#innerInstance" && *intent == Intent::ElementActivated
        })
        .expect("inner");
    let research_at = lifecycle
        .iter()
        .position(|(id, _)| id == "Research")
        .expect("research");
    assert!(
        inner_at < research_at,
        "inner instances first: {lifecycle:?}"
    );

    // The elements' metadata: only those without incoming flows can be activated.
    let locals = rule.scope_variables(instance, ad_hoc);
    let elements = locals["adHocSubProcessElements"].as_array().expect("list");
    let ids: Vec<&str> = elements
        .iter()
        .map(|e| e["elementId"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, vec!["Research", "Write", "Note"]);
    assert_eq!(elements[0]["elementName"], json!("Research the topic"));
    assert_eq!(
        elements[0]["documentation"],
        json!("Finds sources for the topic")
    );
    assert_eq!(elements[0]["properties"], json!({"tool": "search"}));
    assert_eq!(locals["results"], json!([]));

    // The research flow completes: the other inner instance keeps the ad-hoc open.
    let (research_job, _) = rule.job("research");
    complete_job(&mut rule, research_job, json!({"result": "sources"}));
    assert_eq!(
        rule.element_events("Prepare#innerInstance", Intent::ElementCompleted)
            .len(),
        1
    );
    assert!(!is_completed(&rule, "Prepare"));

    // Write continues inside its inner instance to Review (a flow inside).
    let (write_job, _) = rule.job("write");
    complete_job(&mut rule, write_job, json!({"result": "draft"}));
    let review = rule.element_events("Review", Intent::ElementActivated);
    assert_eq!(review[0].1.flow_scope_key, inner[1].0.get());
    assert!(!is_completed(&rule, "Prepare"));
    let (review_job, _) = rule.job("review");
    complete_job(&mut rule, review_job, json!({"result": "approved"}));

    // No completion condition: done when nothing is left; the outputs are collected.
    assert!(is_completed(&rule, "Prepare"));
    assert!(is_completed(&rule, "Prepared"));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    let variables = rule.variables(instance);
    assert_eq!(variables["results"], json!(["sources", "approved"]));
    assert!(
        variables.get("result").is_none(),
        "the output element stays in each activation: {variables}"
    );
    rule.assert_replay_matches();
}

#[test]
fn an_empty_collection_waits_for_the_activation_command_and_its_variables() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": []}));
    let ad_hoc = ad_hoc_key(&rule, "Prepare");
    assert_eq!(
        rule.element_events("Prepare", Intent::ElementActivated)
            .len(),
        1
    );
    assert!(
        rule.element_events("Prepare#innerInstance", Intent::ElementActivating)
            .is_empty()
    );
    assert!(!is_completed(&rule, "Prepare"));

    let outcome = rule.process(activation(
        ad_hoc,
        &[
            ("Research", json!({"topic": "rivers"})),
            ("Note", json!(null)),
        ],
        false,
    ));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(outcome.key(), ad_hoc);
    let shape: Vec<(RecordType, Intent)> = outcome
        .records
        .iter()
        .filter(|r| r.value_type() == ValueType::AdHocSubProcessInstruction)
        .map(|r| (r.record_type, r.intent))
        .collect();
    assert_eq!(
        shape,
        vec![
            (RecordType::Command, Intent::Activate),
            (RecordType::Event, Intent::Activated)
        ]
    );
    let inner = rule.element_events("Prepare#innerInstance", Intent::ElementActivated);
    assert_eq!(inner.len(), 2);
    // The variables are locals of the inner instance, and the job sees them.
    let locals = rule.scope_variables(instance, inner[0].0);
    assert_eq!(locals["topic"], json!("rivers"));
    assert!(rule.variables(instance).get("topic").is_none());
    let (job, record) = rule.job("research");
    assert_eq!(record.variables.to_value()["topic"], json!("rivers"));
    // Note passed through at once; its inner instance completed, Research's is left.
    assert!(is_completed(&rule, "Note"));
    assert!(!is_completed(&rule, "Prepare"));
    complete_job(&mut rule, job, json!({"result": 7}));
    assert!(is_completed(&rule, "Prepare"));
    assert_eq!(rule.variables(instance)["results"], json!([null, 7]));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn the_activation_command_is_refused_for_what_cannot_be_activated() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": []}));
    let ad_hoc = ad_hoc_key(&rule, "Prepare");
    let records_before = rule.log.len();
    let cases: Vec<(Command, RejectionType, &str)> = vec![
        (
            activation(ad_hoc, &[("Nope", json!({}))], false),
            RejectionType::NotFound,
            "but the given elements [Nope] do not exist",
        ),
        (
            activation(ad_hoc, &[("Review", json!({}))], false),
            RejectionType::NotFound,
            "but the given elements [Review] do not exist",
        ),
        (
            activation(instance, &[("Research", json!({}))], false),
            RejectionType::NotFound,
            "the element instance is the process 'adhoc-basic', not an ad-hoc sub-process",
        ),
        (
            activation(
                Key(ad_hoc.get() + 100_000),
                &[("Research", json!({}))],
                false,
            ),
            RejectionType::NotFound,
            "no ad-hoc sub-process instance found with key",
        ),
        (
            activation(
                ad_hoc,
                &[("Research", json!({})), ("Research", json!({}))],
                false,
            ),
            RejectionType::InvalidArgument,
            "duplicate activities were given",
        ),
        (
            activation(ad_hoc, &[("Research", json!([1]))], false),
            RejectionType::InvalidArgument,
            "the variables of element 'Research'",
        ),
        (
            activation(ad_hoc, &[], false),
            RejectionType::InvalidArgument,
            "no elements were given",
        ),
    ];
    for (command, kind, fragment) in cases {
        let before = rill_engine_api::state_digest(&rule.state).unwrap();
        let outcome = rule.process(command);
        assert_eq!(
            rill_engine_api::state_digest(&rule.state).unwrap(),
            before,
            "a rejection changes nothing"
        );
        let (rejection_type, reason) = rejection_of(&outcome);
        assert_eq!(rejection_type, kind, "{reason}");
        assert!(reason.contains(fragment), "{reason}");
        assert_eq!(outcome.records.len(), 1, "a rejection writes nothing else");
        assert_eq!(outcome.records[0].record_type, RecordType::CommandRejection);
    }
    assert_eq!(rule.log.len(), records_before + 7);
    assert!(
        rule.element_events("Prepare#innerInstance", Intent::ElementActivating)
            .is_empty()
    );
    rule.assert_replay_matches();
}

#[test]
fn a_true_completion_condition_terminates_the_remaining_instances() {
    let mut rule = rule();
    let instance = rule.create("adhoc-cancel", json!({"answered": false}));
    let jobs_a = rule.activate("ask-a", 1);
    let jobs_b = rule.activate("ask-b", 1);
    assert_eq!((jobs_a.len(), jobs_b.len()), (1, 1));
    complete_job(&mut rule, jobs_a[0].0, json!({"answered": true}));
    // AskB and its inner instance are terminated, its job cancelled; Ask completes.
    assert_eq!(
        rule.element_events("AskB", Intent::ElementTerminated).len(),
        1
    );
    assert_eq!(
        rule.element_events("Ask#innerInstance", Intent::ElementTerminated)
            .len(),
        1
    );
    assert!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .element("AskB")
            .exists()
    );
    assert!(is_completed(&rule, "Ask"));
    let lifecycle = rule.records().lifecycle();
    let terminated = lifecycle
        .iter()
        .position(|(id, i)| id == "AskB" && *i == Intent::ElementTerminated)
        .expect("terminated");
    let completing = lifecycle
        .iter()
        .position(|(id, i)| id == "Ask" && *i == Intent::ElementCompleting)
        .expect("completing");
    assert!(terminated < completing, "{lifecycle:?}");
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn a_false_completion_condition_keeps_the_ad_hoc_subprocess_active() {
    let mut rule = rule();
    let instance = rule.create("adhoc-cancel", json!({"answered": false}));
    let ad_hoc = ad_hoc_key(&rule, "Ask");
    let (a, _) = rule.job("ask-a");
    complete_job(&mut rule, a, json!({}));
    let (b, _) = rule.job("ask-b");
    complete_job(&mut rule, b, json!({}));
    // Nothing is left inside, but the condition does not hold: it waits.
    assert_eq!(
        rule.element_events("Ask#innerInstance", Intent::ElementCompleted)
            .len(),
        2
    );
    assert!(!is_completed(&rule, "Ask"));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Active
    );
    // A new activation whose result fulfils the condition completes it.
    let outcome = rule.process(activation(ad_hoc, &[("AskA", json!({}))], false));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let (again, _) = rule.job("ask-a");
    complete_job(&mut rule, again, json!({"answered": true}));
    assert!(is_completed(&rule, "Ask"));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn without_cancel_remaining_instances_it_waits_for_the_others() {
    let mut rule = rule();
    let instance = rule.create("adhoc-keep", json!({"answered": false}));
    let (a, _) = rule.job("collect-a");
    complete_job(&mut rule, a, json!({"answered": true}));
    // The condition holds, but CollectB still runs: nothing is terminated.
    assert!(!is_completed(&rule, "Collect"));
    assert!(
        rule.element_events("CollectB", Intent::ElementTerminating)
            .is_empty()
    );
    let (b, _) = rule.job("collect-b");
    complete_job(&mut rule, b, json!({}));
    assert!(is_completed(&rule, "Collect"));
    assert!(
        rule.element_events("CollectB", Intent::ElementCompleted)
            .len()
            == 1
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn cancel_remaining_instances_in_the_command_terminates_the_active_ones_first() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": ["Research"]}));
    let ad_hoc = ad_hoc_key(&rule, "Prepare");
    let outcome = rule.process(activation(ad_hoc, &[("Write", json!({}))], true));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(
        rule.element_events("Research", Intent::ElementTerminated)
            .len(),
        1
    );
    assert!(!is_completed(&rule, "Prepare"));
    let (write, _) = rule.job("write");
    complete_job(&mut rule, write, json!({}));
    let (review, _) = rule.job("review");
    complete_job(&mut rule, review, json!({"result": "done"}));
    assert!(is_completed(&rule, "Prepare"));
    assert_eq!(rule.variables(instance)["results"], json!(["done"]));
    rule.assert_replay_matches();
}

#[test]
fn a_collection_that_is_not_a_list_is_an_incident_that_resolves() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": "Research"}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    let incident = &incidents[0];
    assert_eq!(
        incident.record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert_eq!(incident.record.element_id, "Prepare");
    assert!(
        incident
            .record
            .error_message
            .starts_with("Failed to activate ad-hoc elements."),
        "{}",
        incident.record.error_message
    );
    assert!(
        rule.element_events("Prepare", Intent::ElementActivated)
            .is_empty()
    );

    // An unknown id in the list: still an incident, naming it.
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"toActivate": ["Research", "Lunch"]})),
        local: false,
    }));
    assert!(!outcome.is_rejected());
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incident.key,
    });
    assert!(!outcome.is_rejected());
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("[Lunch] do not exist"),
        "{}",
        incidents[0].record.error_message
    );

    // Fixed and resolved: the ad-hoc subprocess is entered.
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"toActivate": ["Research"]})),
        local: false,
    }));
    assert!(!outcome.is_rejected());
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected());
    assert!(rule.incidents(instance).is_empty());
    assert_eq!(
        rule.element_events("Prepare", Intent::ElementActivated)
            .len(),
        1
    );
    let (job, _) = rule.job("research");
    complete_job(&mut rule, job, json!({"result": 1}));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn a_completion_condition_that_is_not_a_boolean_is_an_incident_on_the_inner_instance() {
    let mut rule = rule();
    let instance = rule.create("adhoc-cancel", json!({"answered": "maybe"}));
    let (a, _) = rule.job("ask-a");
    complete_job(&mut rule, a, json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(incidents[0].record.element_id, "Ask#innerInstance");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert!(
        incidents[0]
            .record
            .error_message
            .starts_with("Failed to evaluate completion condition."),
        "{}",
        incidents[0].record.error_message
    );
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"answered": true})),
        local: false,
    }));
    assert!(!outcome.is_rejected());
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected());
    assert!(is_completed(&rule, "Ask"));
    assert_eq!(
        rule.element_events("AskB", Intent::ElementTerminated).len(),
        1
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn cancelling_the_instance_terminates_every_inner_instance() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": ["Research", "Write"]}));
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    for id in ["Research", "Write", "Prepare"] {
        assert_eq!(
            rule.element_events(id, Intent::ElementTerminated).len(),
            1,
            "{id}"
        );
    }
    assert_eq!(
        rule.element_events("Prepare#innerInstance", Intent::ElementTerminated)
            .len(),
        2
    );
    assert_eq!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .count(),
        2
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Terminated
    );
    assert!(rule.activate("research", 10).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_boundary_timer_terminates_the_ad_hoc_subprocess() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": ["Research"]}));
    assert!(
        rule.records()
            .of_type(ValueType::Timer)
            .with_intent(Intent::Created)
            .exists()
    );
    rule.advance(60 * 60 * 1000);
    let fired = rule.fire_due();
    assert_eq!(fired.len(), 1);
    assert_eq!(
        rule.element_events("Research", Intent::ElementTerminated)
            .len(),
        1
    );
    assert_eq!(
        rule.element_events("Prepare#innerInstance", Intent::ElementTerminated)
            .len(),
        1
    );
    assert_eq!(
        rule.element_events("Prepare", Intent::ElementTerminated)
            .len(),
        1
    );
    assert!(is_completed(&rule, "GaveUp"));
    assert!(!is_completed(&rule, "Prepared"));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn modification_inside_an_ad_hoc_subprocess_is_refused() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": ["Research"]}));
    let outcome = rule.process(Command::ModifyProcessInstance(
        rill_protocol::ModifyProcessInstance {
            process_instance_key: instance,
            activate_instructions: vec![rill_protocol::ActivateInstruction {
                element_id: "Write".into(),
                ancestor_element_instance_key: Key::NONE,
                variable_instructions: Vec::new(),
            }],
            terminate_instructions: Vec::new(),
        },
    ));
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(
        reason.contains("inside an ad-hoc subprocess ('Prepare')"),
        "{reason}"
    );
    let research = rule.element_events("Research", Intent::ElementActivated)[0].0;
    let outcome = rule.process(Command::ModifyProcessInstance(
        rill_protocol::ModifyProcessInstance {
            process_instance_key: instance,
            activate_instructions: Vec::new(),
            terminate_instructions: vec![research],
        },
    ));
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(reason.contains("inside an ad-hoc subprocess"), "{reason}");
    rule.assert_replay_matches();
}

#[test]
fn migrating_an_instance_with_an_active_ad_hoc_subprocess_is_refused() {
    let mut rule = rule();
    let instance = rule.create("adhoc-basic", json!({"toActivate": ["Research"]}));
    let definition = rule.element_events("Prepare", Intent::ElementActivated)[0]
        .1
        .process_definition_key;
    let mapping = ["Prepare", "Research"]
        .iter()
        .map(|id| rill_protocol::value::MigrationMappingInstruction {
            source_element_id: (*id).to_owned(),
            target_element_id: (*id).to_owned(),
        })
        .collect();
    let outcome = rule.process(Command::MigrateProcessInstance(
        rill_protocol::MigrateProcessInstance {
            process_instance_key: instance,
            target_process_definition_key: Key(definition),
            mapping_instructions: mapping,
        },
    ));
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(
        reason.contains("The migration of a AD_HOC_SUB_PROCESS is not supported"),
        "{reason}"
    );
    assert_eq!(outcome.records.len(), 1);
    rule.assert_replay_matches();
}

const CAUGHT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:error id="Failed" name="Failed" errorCode="failed" />
  <bpmn:process id="adhoc-error" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="work">
      <bpmn:extensionElements><zeebe:adHoc activeElementsCollection="=[&#34;risky&#34;, &#34;safe&#34;]" /></bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:serviceTask id="risky">
        <bpmn:extensionElements><zeebe:taskDefinition type="risky" /></bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:serviceTask id="safe">
        <bpmn:extensionElements><zeebe:taskDefinition type="safe" /></bpmn:extensionElements>
      </bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:boundaryEvent id="onFailure" attachedToRef="work">
      <bpmn:outgoing>f3</bpmn:outgoing>
      <bpmn:errorEventDefinition errorRef="Failed" />
    </bpmn:boundaryEvent>
    <bpmn:endEvent id="done"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:endEvent id="failed"><bpmn:incoming>f3</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="done" />
    <bpmn:sequenceFlow id="f3" sourceRef="onFailure" targetRef="failed" />
  </bpmn:process>
</bpmn:definitions>"#;

#[test]
fn an_error_thrown_inside_is_caught_by_a_boundary_event_on_the_ad_hoc_subprocess() {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy_xml(CAUGHT);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let instance = rule.create("adhoc-error", json!({}));
    let (risky, _) = rule.job("risky");
    let outcome = rule.process(Command::ThrowError(rill_protocol::ThrowError {
        job_key: risky,
        error_code: "failed".into(),
        error_message: "no luck".into(),
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    for id in ["risky", "safe", "work"] {
        assert_eq!(
            rule.element_events(id, Intent::ElementTerminated).len(),
            1,
            "{id}"
        );
    }
    assert_eq!(
        rule.element_events("work#innerInstance", Intent::ElementTerminated)
            .len(),
        2
    );
    assert!(is_completed(&rule, "failed"));
    assert!(!is_completed(&rule, "done"));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

const MAPPED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="adhoc-mapped" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="work">
      <bpmn:extensionElements>
        <zeebe:adHoc activeElementsCollection="=toRun" outputCollection="outputs" outputElement="=answer" />
        <zeebe:ioMapping>
          <zeebe:input source="=[&#34;ask&#34;]" target="toRun" />
          <zeebe:output source="=count(outputs)" target="answers" />
        </zeebe:ioMapping>
      </bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:serviceTask id="ask">
        <bpmn:extensionElements><zeebe:taskDefinition type="ask" /></bpmn:extensionElements>
      </bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="done"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="done" />
  </bpmn:process>
</bpmn:definitions>"#;

#[test]
fn input_mappings_feed_the_collection_and_output_mappings_read_the_outputs() {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy_xml(MAPPED);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let instance = rule.create("adhoc-mapped", json!({}));
    let (ask, _) = rule.job("ask");
    complete_job(&mut rule, ask, json!({"answer": 42}));
    assert!(is_completed(&rule, "work"));
    let variables = rule.variables(instance);
    assert_eq!(variables["outputs"], json!([42]), "{variables}");
    assert_eq!(variables["answers"], json!(1), "{variables}");
    assert!(variables.get("toRun").is_none(), "{variables}");
    assert!(variables.get("answer").is_none(), "{variables}");
    rule.assert_replay_matches();
}

/// Under engine version 1 (a cluster with a broker of the first release, which refuses
/// ad-hoc subprocesses at deploy) every replica refuses the deployment alike, naming
/// the element and the engine version it needs; under 2 it deploys.
#[test]
fn an_ad_hoc_subprocess_needs_engine_version_2() {
    let mut rule = EngineRule::new();
    rule.engine_version = rill_protocol::version::ENGINE_VERSION_1;
    let outcome = rule.deploy(&[("test.bpmn", CAUGHT.as_bytes().to_vec())]);
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, rill_protocol::RejectionType::InvalidState);
    assert!(
        reason.contains("the ad-hoc subprocess 'work' needs engine version 2")
            && reason.contains("runs engine version 1"),
        "{reason}"
    );
    assert!(
        !rule
            .records()
            .of_type(rill_protocol::ValueType::Process)
            .exists()
    );

    rule.engine_version = rill_protocol::version::ENGINE_VERSION_2;
    let outcome = rule.deploy_xml(CAUGHT);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}
