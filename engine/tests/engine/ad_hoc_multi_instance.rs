//! Multi-instance ad-hoc subprocesses, as Zeebe 8.8 runs them: the body
//! (`MULTI_INSTANCE_BODY`) holds the boundary events and the loop, each iteration is an
//! ad-hoc subprocess instance with its item, its own activations, event subprocess
//! triggers, job (job-worker implementation) and output collection. Parallel and
//! sequential, the activation command, the multi-instance completion condition, an
//! interrupting boundary event and cancellation.
//! Fixture: `tests/fixtures/elements/ad-hoc-multi-instance.bpmn`.

use rill_protocol::value::{
    AdHocSubProcessActivateElement, BpmnElementType, JobRecord, JobResult, JobResultType,
};
use rill_protocol::{
    ActivateAdHocSubProcessActivities, Command, Intent, JsonValue, Key, RecordValue, RejectionType,
    ValueType,
};
use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = "elements/ad-hoc-multi-instance.bpmn";

fn rule() -> EngineRule {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy_fixture(FIXTURE);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    rule
}

/// The body's key and the iterations' keys (in entry order) of a multi-instance ad-hoc
/// subprocess, from their ELEMENT_ACTIVATED events.
fn body_and_iterations(rule: &EngineRule, id: &str) -> (Key, Vec<Key>) {
    let activated = rule.element_events(id, Intent::ElementActivated);
    let bodies: Vec<Key> = activated
        .iter()
        .filter(|(_, r)| r.bpmn_element_type == BpmnElementType::MultiInstanceBody)
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(bodies.len(), 1, "one body: {activated:?}");
    let iterations = activated
        .iter()
        .filter(|(_, r)| r.bpmn_element_type == BpmnElementType::AdHocSubProcess)
        .map(|(k, r)| {
            assert_eq!(
                r.flow_scope_key,
                bodies[0].get(),
                "an iteration is in the body"
            );
            *k
        })
        .collect();
    (bodies[0], iterations)
}

/// How many of one element id's events of `intent` have the element type `kind`.
fn count(rule: &EngineRule, id: &str, intent: Intent, kind: BpmnElementType) -> usize {
    rule.element_events(id, intent)
        .iter()
        .filter(|(_, r)| r.bpmn_element_type == kind)
        .count()
}

/// The open jobs of a type with the `id` of the item their iteration runs for.
fn jobs_by_item(rule: &mut EngineRule, job_type: &str) -> Vec<(Key, JobRecord, String)> {
    rule.activate(job_type, 10)
        .into_iter()
        .map(|(key, job)| {
            let item = job.variables.to_value()["item"].clone();
            let id = item
                .get("id")
                .cloned()
                .unwrap_or(item)
                .as_str()
                .expect("item id")
                .to_owned();
            (key, job, id)
        })
        .collect()
}

fn job_for(jobs: &[(Key, JobRecord, String)], item: &str) -> Key {
    let found: Vec<Key> = jobs
        .iter()
        .filter(|(_, _, id)| id == item)
        .map(|(k, _, _)| *k)
        .collect();
    assert_eq!(found.len(), 1, "one job for {item}: {jobs:?}");
    found[0]
}

fn complete_job(rule: &mut EngineRule, key: Key, variables: Value) {
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn activation(key: Key, elements: &[&str]) -> Command {
    Command::ActivateAdHocSubProcessActivities(ActivateAdHocSubProcessActivities {
        ad_hoc_sub_process_instance_key: key,
        elements: elements
            .iter()
            .map(|id| AdHocSubProcessActivateElement {
                element_id: (*id).to_owned(),
                variables: JsonValue::from(json!({})),
            })
            .collect(),
        cancel_remaining_instances: false,
    })
}

fn state(rule: &mut EngineRule, instance: Key) -> rill_engine::ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

fn three_items() -> Value {
    json!({"items": [
        {"id": "a", "tools": ["Search"]},
        {"id": "b", "tools": ["Search", "Write"]},
        {"id": "c", "tools": ["Write"]},
    ]})
}

#[test]
fn parallel_iterations_activate_from_their_item_and_complete_independently() {
    let mut rule = rule();
    let instance = rule.create("mi-adhoc-parallel", three_items());
    let (body, iterations) = body_and_iterations(&rule, "Tools");
    assert_eq!(iterations.len(), 3);

    // Each iteration is an ad-hoc subprocess with its item, loop counter, elements and
    // its own (empty) output collection.
    for (n, iteration) in iterations.iter().enumerate() {
        let locals = rule.scope_variables(instance, *iteration);
        assert_eq!(locals["loopCounter"], json!(n + 1));
        assert_eq!(locals["item"]["id"], json!(["a", "b", "c"][n]));
        assert_eq!(locals["results"], json!([]));
        let elements = locals["adHocSubProcessElements"]
            .as_array()
            .expect("elements");
        assert_eq!(elements.len(), 2, "{elements:?}");
    }
    let body_locals = rule.scope_variables(instance, body);
    assert!(body_locals.get("adHocSubProcessElements").is_none());
    // Every inner instance lies in an iteration; each iteration activated its item's tools.
    let inner = rule.element_events("Tools#innerInstance", Intent::ElementActivated);
    let per_iteration: Vec<usize> = iterations
        .iter()
        .map(|i| {
            inner
                .iter()
                .filter(|(_, r)| r.flow_scope_key == i.get())
                .count()
        })
        .collect();
    assert_eq!(per_iteration, vec![1, 2, 1]);

    let searches = jobs_by_item(&mut rule, "search");
    let writes = jobs_by_item(&mut rule, "write");
    assert_eq!((searches.len(), writes.len()), (2, 2));

    // Iteration a is done after its one search; the others and the body go on.
    complete_job(&mut rule, job_for(&searches, "a"), json!({"answer": "A"}));
    let completed = rule.element_events("Tools", Intent::ElementCompleted);
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].0, iterations[0]);
    assert_eq!(
        count(
            &rule,
            "Tools",
            Intent::ElementCompleted,
            BpmnElementType::MultiInstanceBody
        ),
        0
    );

    complete_job(&mut rule, job_for(&writes, "c"), json!({"answer": "C"}));
    complete_job(&mut rule, job_for(&searches, "b"), json!({"answer": "B1"}));
    assert_eq!(
        count(
            &rule,
            "Tools",
            Intent::ElementCompleted,
            BpmnElementType::AdHocSubProcess
        ),
        2
    );
    complete_job(&mut rule, job_for(&writes, "b"), json!({"answer": "B2"}));
    assert_eq!(
        count(
            &rule,
            "Tools",
            Intent::ElementCompleted,
            BpmnElementType::MultiInstanceBody
        ),
        1
    );

    // The multi-instance output collection holds each iteration's ad-hoc output
    // collection, in item order.
    let variables = rule.variables(instance);
    assert_eq!(variables["reports"], json!([["A"], ["B1", "B2"], ["C"]]));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn sequential_iterations_run_one_after_the_other() {
    let mut rule = rule();
    let instance = rule.create("mi-adhoc-sequential", json!({"items": ["x", "y"]}));
    let (_, iterations) = body_and_iterations(&rule, "SeqTools");
    assert_eq!(iterations.len(), 1, "the second waits for the first");

    let jobs = jobs_by_item(&mut rule, "seq-search");
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].2, "x");
    complete_job(&mut rule, jobs[0].0, json!({"answer": "X"}));
    // The multi-instance and the ad-hoc output collections share the name `results`:
    // the iteration's completion propagates its own ad-hoc list, its multi-instance
    // output element is kept for the body.
    assert_eq!(rule.variables(instance)["results"], json!(["X"]));

    let (_, iterations) = body_and_iterations(&rule, "SeqTools");
    assert_eq!(iterations.len(), 2);
    let locals = rule.scope_variables(instance, iterations[1]);
    assert_eq!(locals["item"], json!("y"));
    assert_eq!(locals["loopCounter"], json!(2));
    let jobs = jobs_by_item(&mut rule, "seq-search");
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].2, "y");
    complete_job(&mut rule, jobs[0].0, json!({"answer": "Y"}));

    // The body's list is what the process ends with.
    assert_eq!(
        rule.variables(instance)["results"],
        json!([{"item": "x", "found": ["X"]}, {"item": "y", "found": ["Y"]}])
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn the_activation_command_addresses_an_iteration_not_the_body() {
    let mut rule = rule();
    let instance = rule.create(
        "mi-adhoc-parallel",
        json!({"items": [{"id": "a", "tools": []}, {"id": "b", "tools": []}]}),
    );
    let (body, iterations) = body_and_iterations(&rule, "Tools");

    let outcome = rule.process(activation(body, &["Search"]));
    let rejection = outcome.rejection();
    assert_eq!(rejection.rejection_type, RejectionType::NotFound);
    assert!(
        rejection.reason.contains("multi-instance body") && rejection.reason.contains("'Tools'"),
        "{}",
        rejection.reason
    );
    assert!(
        rule.element_events("Tools#innerInstance", Intent::ElementActivated)
            .is_empty()
    );

    let outcome = rule.process(activation(iterations[1], &["Search"]));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let inner = rule.element_events("Tools#innerInstance", Intent::ElementActivated);
    assert_eq!(inner.len(), 1);
    assert_eq!(inner[0].1.flow_scope_key, iterations[1].get());

    let searches = jobs_by_item(&mut rule, "search");
    complete_job(&mut rule, job_for(&searches, "b"), json!({"answer": "B"}));
    let completed = rule.element_events("Tools", Intent::ElementCompleted);
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].0, iterations[1]);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Active
    );
    rule.assert_replay_matches();
}

fn activate_result(elements: &[&str]) -> JobResult {
    JobResult {
        result_type: JobResultType::AdHocSubProcess,
        activate_elements: elements
            .iter()
            .map(|id| AdHocSubProcessActivateElement {
                element_id: (*id).to_owned(),
                variables: JsonValue::from(json!({})),
            })
            .collect(),
        ..JobResult::default()
    }
}

fn fulfilled() -> JobResult {
    JobResult {
        result_type: JobResultType::AdHocSubProcess,
        completion_condition_fulfilled: true,
        ..JobResult::default()
    }
}

fn complete_with(rule: &mut EngineRule, job_key: Key, result: JobResult) {
    let outcome = rule.process(Command::CompleteJob {
        job_key,
        variables: JsonValue::from(json!({})),
        result,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

#[test]
fn job_worker_iterations_each_have_their_own_job() {
    let mut rule = rule();
    let instance = rule.create("mi-adhoc-agent", json!({"items": ["x", "y", "z"]}));
    let (body, iterations) = body_and_iterations(&rule, "Agent");
    assert_eq!(iterations.len(), 3);

    let jobs = jobs_by_item(&mut rule, "agent");
    assert_eq!(jobs.len(), 3, "one job per iteration");
    for (n, item) in ["x", "y", "z"].iter().enumerate() {
        let job = jobs.iter().find(|(_, _, id)| id == item).expect("job");
        assert_eq!(job.1.element_instance_key, iterations[n].get());
        assert!(job.1.variables.to_value()["adHocSubProcessElements"].is_array());
    }
    assert!(
        jobs.iter()
            .all(|(_, j, _)| j.element_instance_key != body.get())
    );

    // y's worker activates a search: in y only.
    complete_with(
        &mut rule,
        job_for(&jobs, "y"),
        activate_result(&["AgentSearch"]),
    );
    let inner = rule.element_events("Agent#innerInstance", Intent::ElementActivated);
    assert_eq!(inner.len(), 1);
    assert_eq!(inner[0].1.flow_scope_key, iterations[1].get());
    let search = rule.activate("agent-search", 10);
    assert_eq!(search.len(), 1);
    complete_job(&mut rule, search[0].0, json!({}));

    // y asks its worker again; x and z keep their first jobs.
    let jobs = jobs_by_item(&mut rule, "agent");
    assert_eq!(jobs.len(), 1, "only y's new job is activatable: {jobs:?}");
    assert_eq!(jobs[0].2, "y");
    complete_with(&mut rule, jobs[0].0, fulfilled());
    let completed = rule.element_events("Agent", Intent::ElementCompleted);
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].0, iterations[1]);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Active
    );

    // x and z still hold their first jobs (activated above, not completed).
    let open: Vec<Key> = rule
        .records()
        .events()
        .of_type(ValueType::Job)
        .with_intent(Intent::Created)
        .element("Agent")
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Job(job) if job.element_instance_key != iterations[1].get() => Some(r.key),
            _ => None,
        })
        .collect();
    assert_eq!(open.len(), 2);
    for key in open {
        complete_with(&mut rule, key, fulfilled());
    }
    assert_eq!(
        count(
            &rule,
            "Agent",
            Intent::ElementCompleted,
            BpmnElementType::MultiInstanceBody
        ),
        1
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_boundary_timer_on_the_body_terminates_every_iteration() {
    let mut rule = rule();
    let instance = rule.create("mi-adhoc-parallel", three_items());
    let (body, _) = body_and_iterations(&rule, "Tools");
    // One timer, held by the body.
    let timers: Vec<i64> = rule
        .records()
        .of_type(ValueType::Timer)
        .with_intent(Intent::Created)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::Timer(t) => t.element_instance_key,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(timers, vec![body.get()]);

    rule.advance(60 * 60 * 1000);
    assert_eq!(rule.fire_due().len(), 1);
    assert_all_three_iterations_terminated(&rule);
    assert_eq!(
        rule.element_events("TimedOut", Intent::ElementCompleted)
            .len(),
        1
    );
    assert!(rule.variables(instance).get("reports").is_none());
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn the_multi_instance_completion_condition_ends_the_other_iterations() {
    let mut rule = rule();
    let instance = rule.create("mi-adhoc-condition", json!({"items": ["x", "y", "z"]}));
    let (_, iterations) = body_and_iterations(&rule, "CondTools");
    assert_eq!(iterations.len(), 3);
    let jobs = jobs_by_item(&mut rule, "cond-search");
    assert_eq!(jobs.len(), 3);

    complete_job(&mut rule, job_for(&jobs, "x"), json!({}));
    assert_eq!(
        count(
            &rule,
            "CondTools",
            Intent::ElementCompleted,
            BpmnElementType::MultiInstanceBody
        ),
        0
    );
    complete_job(&mut rule, job_for(&jobs, "z"), json!({}));
    // Two done: the condition holds, y is terminated with its job.
    assert_eq!(
        count(
            &rule,
            "CondTools",
            Intent::ElementTerminated,
            BpmnElementType::AdHocSubProcess
        ),
        1
    );
    let terminated = rule.element_events("CondTools", Intent::ElementTerminated);
    assert_eq!(terminated[0].0, iterations[1]);
    assert!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .element("CondSearch")
            .exists()
    );
    assert_eq!(
        count(
            &rule,
            "CondTools",
            Intent::ElementCompleted,
            BpmnElementType::MultiInstanceBody
        ),
        1
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

/// The body, its three iterations of `three_items`, their four inner instances and
/// four jobs were all terminated.
fn assert_all_three_iterations_terminated(rule: &EngineRule) {
    assert_eq!(
        count(
            rule,
            "Tools",
            Intent::ElementTerminated,
            BpmnElementType::AdHocSubProcess
        ),
        3
    );
    assert_eq!(
        count(
            rule,
            "Tools",
            Intent::ElementTerminated,
            BpmnElementType::MultiInstanceBody
        ),
        1
    );
    assert_eq!(
        rule.element_events("Tools#innerInstance", Intent::ElementTerminated)
            .len(),
        4
    );
    assert_eq!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .count(),
        4
    );
}

#[test]
fn cancelling_the_instance_terminates_the_body_and_every_iteration() {
    let mut rule = rule();
    let instance = rule.create("mi-adhoc-parallel", three_items());
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_all_three_iterations_terminated(&rule);
    // Each iteration's event subprocess subscription is closed with it.
    assert_eq!(
        rule.records()
            .events()
            .of_type(ValueType::ProcessMessageSubscription)
            .with_intent(Intent::Deleted)
            .count(),
        3
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Terminated
    );
    rule.assert_replay_matches();
}

#[test]
fn an_event_subprocess_runs_in_the_iteration_its_message_correlates_to() {
    let mut rule = rule();
    let instance = rule.create("mi-adhoc-parallel", three_items());
    let (_, iterations) = body_and_iterations(&rule, "Tools");
    // Each iteration holds its own subscription, keyed by its item.
    let opened: Vec<i64> = rule
        .records()
        .events()
        .of_type(ValueType::ProcessMessageSubscription)
        .with_intent(Intent::Created)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::ProcessMessageSubscription(v) => v.element_instance_key,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        opened,
        iterations.iter().map(|k| k.get()).collect::<Vec<_>>()
    );

    let outcome = rule.publish("note", "b", 0, json!({"note": "hi"}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let on_note = rule.element_events("OnNote", Intent::ElementActivated);
    assert_eq!(on_note.len(), 1);
    assert_eq!(on_note[0].1.flow_scope_key, iterations[1].get());

    // It runs beside b's inner instances; b completes once all of them are done.
    let records = rule.activate("record", 10);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].1.variables.to_value()["item"]["id"], json!("b"));
    complete_job(&mut rule, records[0].0, json!({}));
    assert_eq!(
        rule.element_events("OnNote", Intent::ElementCompleted)
            .len(),
        1
    );
    assert!(
        rule.element_events("Tools", Intent::ElementCompleted)
            .is_empty()
    );

    let searches = jobs_by_item(&mut rule, "search");
    let writes = jobs_by_item(&mut rule, "write");
    complete_job(&mut rule, job_for(&searches, "b"), json!({"answer": "B1"}));
    complete_job(&mut rule, job_for(&writes, "b"), json!({"answer": "B2"}));
    let completed = rule.element_events("Tools", Intent::ElementCompleted);
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].0, iterations[1]);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Active
    );
    rule.assert_replay_matches();
}

/// A process with one multi-instance ad-hoc subprocess `Tools` (parallel over `items`,
/// activating `Search`), and `extra` elements beside it.
fn inline_process(id: &str, after_tools: &str, extra: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="Definitions_{id}" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="{id}" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:adHocSubProcess id="Tools">
      <bpmn:extensionElements><zeebe:adHoc activeElementsCollection="=[&#34;Search&#34;]" /></bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="item" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>
      <bpmn:serviceTask id="Search"><bpmn:extensionElements><zeebe:taskDefinition type="search" /></bpmn:extensionElements></bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="e">{after_tools}</bpmn:endEvent>
    {extra}
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="Tools" />
    <bpmn:sequenceFlow id="f2" sourceRef="Tools" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>"#
    )
}

fn definition_key(outcome: &Outcome) -> Key {
    match outcome.value() {
        RecordValue::Deployment(d) => Key(d.processes_metadata[0].process_definition_key),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_compensation_boundary_belongs_to_the_body_as_on_a_multi_instance_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&inline_process(
        "mi-adhoc-compensation",
        "<bpmn:compensateEventDefinition />",
        r#"<bpmn:boundaryEvent id="Done" attachedToRef="Tools"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
    <bpmn:serviceTask id="Undo" isForCompensation="true"><bpmn:extensionElements><zeebe:taskDefinition type="undo" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:association id="a1" associationDirection="One" sourceRef="Done" targetRef="Undo" />"#,
    ));
    let instance = rule.create("mi-adhoc-compensation", json!({"items": [1, 2]}));
    let (body, _) = body_and_iterations(&rule, "Tools");
    let searches = rule.activate("search", 10);
    assert_eq!(searches.len(), 2);
    complete_job(&mut rule, searches[0].0, json!({}));
    let subscriptions = |rule: &EngineRule| -> Vec<(Intent, i64)> {
        rule.records()
            .events()
            .of_type(ValueType::CompensationSubscription)
            .records
            .iter()
            .map(|r| match &r.value {
                RecordValue::CompensationSubscription(s) => {
                    (r.intent, s.compensable_activity_instance_key)
                }
                other => panic!("{other:?}"),
            })
            .collect()
    };
    // An iteration makes no subscription; the body does, once every iteration completed.
    assert!(subscriptions(&rule).is_empty());
    complete_job(&mut rule, searches[1].0, json!({}));
    let written = subscriptions(&rule);
    assert_eq!(written[0], (Intent::Created, body.get()));
    // The compensation end event runs the handler once.
    let undo = rule.activate("undo", 10);
    assert_eq!(undo.len(), 1);
    complete_job(&mut rule, undo[0].0, json!({}));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn modification_runs_the_body_and_refuses_elements_inside() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&inline_process("mi-adhoc-modify", "", ""));
    let instance = rule.create("mi-adhoc-modify", json!({"items": [1, 2]}));
    let modify = |rule: &mut EngineRule, activate: Option<&str>, terminate: Vec<Key>| {
        rule.process(Command::ModifyProcessInstance(
            rill_protocol::ModifyProcessInstance {
                process_instance_key: instance,
                activate_instructions: activate
                    .map(|id| rill_protocol::ActivateInstruction {
                        element_id: id.into(),
                        ancestor_element_instance_key: Key::NONE,
                        variable_instructions: Vec::new(),
                    })
                    .into_iter()
                    .collect(),
                terminate_instructions: terminate,
            },
        ))
    };
    // An element inside is refused, naming the ad-hoc subprocess.
    let outcome = modify(&mut rule, Some("Search"), Vec::new());
    assert_eq!(
        outcome.rejection().rejection_type,
        RejectionType::InvalidArgument
    );
    assert!(
        outcome.rejection().reason.contains("'Tools'"),
        "{:?}",
        outcome.rejection()
    );

    // One iteration is terminated, the other goes on.
    let (old_body, iterations) = body_and_iterations(&rule, "Tools");
    let outcome = modify(&mut rule, None, vec![iterations[0]]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let terminated = rule.element_events("Tools", Intent::ElementTerminated);
    assert_eq!(terminated.len(), 1);
    assert_eq!(terminated[0].0, iterations[0]);

    // The multi-instance ad-hoc subprocess itself is entered as its body, and the old
    // body terminated with its other iteration.
    let outcome = modify(&mut rule, Some("Tools"), vec![old_body]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let iteration = BpmnElementType::AdHocSubProcess;
    assert_eq!(
        count(&rule, "Tools", Intent::ElementTerminated, iteration),
        2
    );
    assert_eq!(
        count(&rule, "Tools", Intent::ElementActivated, iteration),
        4
    );
    let searches = rule.activate("search", 10);
    assert_eq!(searches.len(), 2, "the new body's two iterations");
    for (key, _) in searches {
        complete_job(&mut rule, key, json!({}));
    }
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn migration_of_an_active_multi_instance_ad_hoc_subprocess_is_refused_naming_it() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&inline_process("mi-adhoc-source", "", ""));
    let target = definition_key(&rule.deploy_xml(&inline_process("mi-adhoc-target", "", "")));
    let instance = rule.create("mi-adhoc-source", json!({"items": [1, 2]}));
    let before = rule.log.len();
    let outcome = rule.process(Command::MigrateProcessInstance(
        rill_protocol::MigrateProcessInstance {
            process_instance_key: instance,
            target_process_definition_key: target,
            mapping_instructions: [("Tools", "Tools"), ("Search", "Search")]
                .iter()
                .map(|(s, t)| rill_protocol::value::MigrationMappingInstruction {
                    source_element_id: (*s).to_owned(),
                    target_element_id: (*t).to_owned(),
                })
                .collect(),
        },
    ));
    let rejection = outcome.rejection();
    assert_eq!(rejection.rejection_type, RejectionType::InvalidState);
    assert!(rejection.reason.contains("'Tools'"), "{}", rejection.reason);
    assert!(
        rule.log[before..]
            .iter()
            .all(|(_, r)| r.intent != Intent::ElementMigrated)
    );
    rule.assert_replay_matches();
}

#[test]
fn an_error_thrown_from_an_iterations_job_is_caught_by_the_bodys_boundary_event() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="Definitions_err" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:error id="Error_failed" name="Failed" errorCode="FAILED" />
  <bpmn:process id="mi-adhoc-error" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:adHocSubProcess id="Agent">
      <bpmn:extensionElements><zeebe:taskDefinition type="agent" /></bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="item" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>
      <bpmn:serviceTask id="Search"><bpmn:extensionElements><zeebe:taskDefinition type="search" /></bpmn:extensionElements></bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:boundaryEvent id="Failed" attachedToRef="Agent"><bpmn:errorEventDefinition errorRef="Error_failed" /></bpmn:boundaryEvent>
    <bpmn:endEvent id="e" />
    <bpmn:endEvent id="FailedEnd" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="Agent" />
    <bpmn:sequenceFlow id="f2" sourceRef="Agent" targetRef="e" />
    <bpmn:sequenceFlow id="f3" sourceRef="Failed" targetRef="FailedEnd" />
  </bpmn:process>
</bpmn:definitions>"#,
    );
    let instance = rule.create("mi-adhoc-error", json!({"items": ["x", "y"]}));
    let (body, _) = body_and_iterations(&rule, "Agent");
    let jobs = jobs_by_item(&mut rule, "agent");
    assert_eq!(jobs.len(), 2);
    let outcome = rule.process(Command::ThrowError(rill_protocol::ThrowError {
        job_key: job_for(&jobs, "x"),
        error_code: "FAILED".into(),
        error_message: String::new(),
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    // The body's boundary event catches it: both iterations end and y's open job is
    // cancelled (x's, which threw, too, as when a single ad-hoc subprocess is left).
    let iteration = BpmnElementType::AdHocSubProcess;
    assert_eq!(
        count(&rule, "Agent", Intent::ElementTerminated, iteration),
        2
    );
    let terminated = rule.element_events("Agent", Intent::ElementTerminated);
    assert!(terminated.iter().any(|(k, _)| *k == body));
    let canceled: Vec<Key> = rule
        .records()
        .of_type(ValueType::Job)
        .with_intent(Intent::Canceled)
        .records
        .iter()
        .map(|r| r.key)
        .collect();
    assert!(canceled.contains(&job_for(&jobs, "y")), "{canceled:?}");
    assert_eq!(
        rule.element_events("FailedEnd", Intent::ElementCompleted)
            .len(),
        1
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}
