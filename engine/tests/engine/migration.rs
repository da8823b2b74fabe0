//! Process instance migration (`commands/migration.rs`): element instances, jobs,
//! timers, message subscriptions, user tasks, incidents and waiting tokens move to the
//! target process; Zeebe's rejections leave the instance as it was. Every test replays
//! the log and compares the state.

use rill_protocol::value::{MigrationMappingInstruction, ProcessInstanceRecord};
use rill_protocol::{
    Command, CreateProcessInstance, FailJob, Intent, JsonValue, Key, MigrateProcessInstance,
    ProcessSelector, RecordValue, RejectionType, ValueType,
};
use serde_json::json;

use super::elements::{flow, task};
use super::*;

/// A definitions document with one process `id` and the message `M` (`msg`, correlated
/// by `=key`).
fn process(id: &str, body: &[String]) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="Definitions" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="{id}" isExecutable="true">
{}
  </bpmn:process>
  <bpmn:message id="M" name="msg"><bpmn:extensionElements><zeebe:subscription correlationKey="=key" /></bpmn:extensionElements></bpmn:message>
</bpmn:definitions>"#,
        body.concat()
    )
}

/// Deploys a process and returns its definition key.
fn deploy(rule: &mut EngineRule, id: &str, body: &[String]) -> Key {
    match rule.deploy_xml(&process(id, body)).value() {
        RecordValue::Deployment(d) => Key(d.processes_metadata[0].process_definition_key),
        other => panic!("{other:?}"),
    }
}

fn el(xml: &str) -> String {
    xml.to_owned()
}

fn timer_boundary(id: &str, attached_to: &str, duration: &str) -> String {
    format!(
        r#"<bpmn:boundaryEvent id="{id}" attachedToRef="{attached_to}"><bpmn:timerEventDefinition><bpmn:timeDuration>{duration}</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>"#
    )
}

fn message_boundary(id: &str, attached_to: &str) -> String {
    format!(
        r#"<bpmn:boundaryEvent id="{id}" attachedToRef="{attached_to}"><bpmn:messageEventDefinition messageRef="M" /></bpmn:boundaryEvent>"#
    )
}

fn end(id: &str) -> String {
    format!(r#"<bpmn:endEvent id="{id}" />"#)
}

fn start() -> String {
    el(r#"<bpmn:startEvent id="s" />"#)
}

fn migrate(rule: &mut EngineRule, instance: Key, target: Key, pairs: &[(&str, &str)]) -> Outcome {
    rule.process(Command::MigrateProcessInstance(MigrateProcessInstance {
        process_instance_key: instance,
        target_process_definition_key: target,
        mapping_instructions: pairs
            .iter()
            .map(|(s, t)| MigrationMappingInstruction {
                source_element_id: (*s).to_owned(),
                target_element_id: (*t).to_owned(),
            })
            .collect(),
    }))
}

/// Creates an instance of the definition `key` (not the latest version).
fn create_on(rule: &mut EngineRule, key: Key, variables: serde_json::Value) -> Key {
    let outcome = rule.process(Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ByKey(key),
        variables: JsonValue::from(variables),
        await_result: false,
        fetch_variables: Vec::new(),
        tags: Vec::new(),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    outcome.key()
}

/// The records written since the log had `before` of them.
fn since(rule: &EngineRule, before: usize) -> Records<'_> {
    Records {
        records: rule.log[before..].iter().map(|(_, r)| r).collect(),
    }
}

fn migrated_elements(rule: &EngineRule, before: usize) -> Vec<ProcessInstanceRecord> {
    since(rule, before)
        .of_type(ValueType::ProcessInstance)
        .with_intent(Intent::ElementMigrated)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => v.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// v1: A (job `a`) with a one-hour timer boundary `T`; v2: A2 (job `a`) with a
/// two-hour timer `T2` and a message boundary `M2`, then B (job `b`).
fn versions(rule: &mut EngineRule) -> (Key, Key) {
    let v1 = deploy(
        rule,
        "p",
        &[
            start(),
            task("A", "a"),
            timer_boundary("T", "A", "PT1H"),
            end("e"),
            end("te"),
            flow("f1", "s", "A"),
            flow("f2", "A", "e"),
            flow("f3", "T", "te"),
        ],
    );
    let v2 = deploy(
        rule,
        "p",
        &[
            start(),
            task("A2", "a"),
            timer_boundary("T2", "A2", "PT2H"),
            message_boundary("M2", "A2"),
            task("B", "b"),
            end("e"),
            end("te"),
            end("me"),
            flow("f1", "s", "A2"),
            flow("f2", "A2", "B"),
            flow("f4", "B", "e"),
            flow("f3", "T2", "te"),
            flow("f5", "M2", "me"),
        ],
    );
    (v1, v2)
}

#[test]
fn a_waiting_task_moves_with_its_job_its_timer_and_its_variables_and_goes_on_in_the_target() {
    let mut rule = EngineRule::new();
    let (v1, v2) = versions(&mut rule);
    let instance = create_on(&mut rule, v1, json!({"key": "k-1"}));
    let timer_before = rule
        .records()
        .of_type(ValueType::Timer)
        .with_intent(Intent::Created)
        .records[0]
        .clone();
    let before = rule.log.len();

    let outcome = migrate(&mut rule, instance, v2, &[("A", "A2"), ("T", "T2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let RecordValue::ProcessInstanceMigration(answer) = outcome.value() else {
        panic!("answered with {:?}", outcome.value());
    };
    assert_eq!(answer.process_instance_key, instance.get());
    assert_eq!(answer.target_process_definition_key, v2.get());

    let shape = since(&rule, before).shape();
    assert_eq!(
        shape.first(),
        Some(&(ValueType::ProcessInstanceMigration, Intent::Migrate))
    );
    // MIGRATED follows every element's migration (the message partition's side of the
    // new subscription comes after, as its own step).
    let migrated_at = shape
        .iter()
        .position(|s| *s == (ValueType::ProcessInstanceMigration, Intent::Migrated))
        .expect("MIGRATED");
    let last_element = shape
        .iter()
        .rposition(|s| *s == (ValueType::ProcessInstance, Intent::ElementMigrated))
        .expect("ELEMENT_MIGRATED");
    assert!(last_element < migrated_at, "{shape:?}");
    for expected in [
        (ValueType::Job, Intent::Migrated),
        (ValueType::Variable, Intent::Migrated),
        (ValueType::Timer, Intent::Migrated),
        // M2 is new in the target: A2 subscribes to it.
        (ValueType::ProcessMessageSubscription, Intent::Creating),
    ] {
        assert!(
            shape.contains(&expected),
            "{expected:?} missing in {shape:?}"
        );
    }
    let elements = migrated_elements(&rule, before);
    let ids: Vec<&str> = elements.iter().map(|r| r.element_id.as_str()).collect();
    assert_eq!(ids, vec!["p", "A2"]);
    assert!(
        elements
            .iter()
            .all(|r| r.process_definition_key == v2.get() && r.version == 2)
    );

    // The timer keeps its key and due date (not T2's two hours).
    let timer = since(&rule, before)
        .of_type(ValueType::Timer)
        .with_intent(Intent::Migrated)
        .records[0]
        .clone();
    assert_eq!(timer.key, timer_before.key);
    let (RecordValue::Timer(old), RecordValue::Timer(new)) = (&timer_before.value, &timer.value)
    else {
        panic!("timer values");
    };
    assert_eq!(new.due_date, old.due_date);
    assert_eq!(new.target_element_id, "T2");
    assert_eq!(new.process_definition_key, v2.get());

    let summary = rule.instance_state(instance).expect("instance");
    assert_eq!(summary.process_definition_key, v2);
    assert_eq!(summary.version, 2);

    // The job is the same job, now of A2; completing it follows the target's flow to B.
    let (job, record) = rule.job("a");
    assert_eq!(record.element_id, "A2");
    assert_eq!(record.process_definition_key, v2.get());
    assert!(!rule.complete(job, json!({})).is_rejected());
    let (_, b) = rule.job("b");
    assert_eq!(b.process_definition_key, v2.get());
    rule.assert_replay_matches();
}

#[test]
fn an_unmapped_boundary_event_is_closed_and_the_migrated_timer_fires_into_the_target() {
    let mut rule = EngineRule::new();
    let (v1, v2) = versions(&mut rule);
    let instance = create_on(&mut rule, v1, json!({"key": "k-1"}));
    let before = rule.log.len();

    // T is not mapped: its timer goes; T2 is new: its timer is armed (two hours).
    let outcome = migrate(&mut rule, instance, v2, &[("A", "A2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let timers = since(&rule, before).of_type(ValueType::Timer);
    assert_eq!(
        timers.shape(),
        vec![
            (ValueType::Timer, Intent::Canceled),
            (ValueType::Timer, Intent::Created)
        ]
    );
    let RecordValue::Timer(created) = &timers.records[1].value else {
        panic!("timer");
    };
    assert_eq!(created.target_element_id, "T2");

    // After an hour nothing fires (T is gone); after two, T2 does, in the target.
    rule.advance(3_600_000 + 1_000);
    assert!(rule.fire_due().is_empty());
    rule.advance(3_600_000);
    assert_eq!(rule.fire_due().len(), 1);
    assert!(
        rule.records()
            .of_type(ValueType::ProcessInstance)
            .element("te")
            .with_intent(Intent::ElementCompleted)
            .exists()
    );
    rule.assert_replay_matches();
}

#[test]
fn a_waiting_message_catch_event_keeps_its_subscription_and_correlates_in_the_target() {
    let mut rule = EngineRule::new();
    let v1 = deploy(
        &mut rule,
        "p",
        &[
            start(),
            el(
                r#"<bpmn:intermediateCatchEvent id="C"><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>"#,
            ),
            end("e"),
            flow("f1", "s", "C"),
            flow("f2", "C", "e"),
        ],
    );
    let v2 = deploy(
        &mut rule,
        "q",
        &[
            start(),
            el(
                r#"<bpmn:intermediateCatchEvent id="C2"><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>"#,
            ),
            task("D", "d"),
            end("e"),
            flow("f1", "s", "C2"),
            flow("f2", "C2", "D"),
            flow("f3", "D", "e"),
        ],
    );
    let instance = create_on(&mut rule, v1, json!({"key": "k-7"}));
    let before = rule.log.len();

    let outcome = migrate(&mut rule, instance, v2, &[("C", "C2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let subscription = since(&rule, before)
        .of_type(ValueType::ProcessMessageSubscription)
        .with_intent(Intent::Migrated)
        .records[0]
        .clone();
    let RecordValue::ProcessMessageSubscription(value) = &subscription.value else {
        panic!("subscription");
    };
    assert_eq!(value.element_id, "C2");
    assert_eq!(value.bpmn_process_id, "q");
    assert_eq!(value.correlation_key, "k-7");
    // Another process id: the instance is now one of `q`, and so is the message side
    // of its subscription (on this partition: written in place).
    assert_eq!(migrated_elements(&rule, before)[0].element_id, "q");
    let message_side = since(&rule, before)
        .of_type(ValueType::MessageSubscription)
        .with_intent(Intent::Migrated)
        .records[0]
        .clone();
    let RecordValue::MessageSubscription(value) = &message_side.value else {
        panic!("message subscription");
    };
    assert_eq!(value.bpmn_process_id, "q");

    assert!(!rule.publish("msg", "k-7", 0, json!({})).is_rejected());
    let (_, d) = rule.job("d");
    assert_eq!(d.bpmn_process_id, "q");
    rule.assert_replay_matches();
}

#[test]
fn a_subprocess_and_a_multi_instance_task_inside_it_move_together() {
    let mut rule = EngineRule::new();
    let mi = |id: &str| {
        format!(
            r#"<bpmn:serviceTask id="{id}"><bpmn:extensionElements><zeebe:taskDefinition type="work" /></bpmn:extensionElements><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="item" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>"#
        )
    };
    let sub = |id: &str, task_id: &str| {
        format!(
            r#"<bpmn:subProcess id="{id}"><bpmn:startEvent id="{id}_s" />{}<bpmn:endEvent id="{id}_e" />{}{}</bpmn:subProcess>"#,
            mi(task_id),
            flow(&format!("{id}_f1"), &format!("{id}_s"), task_id),
            flow(&format!("{id}_f2"), task_id, &format!("{id}_e")),
        )
    };
    let v1 = deploy(
        &mut rule,
        "p",
        &[
            start(),
            sub("S", "W"),
            end("e"),
            flow("f1", "s", "S"),
            flow("f2", "S", "e"),
        ],
    );
    let v2 = deploy(
        &mut rule,
        "p",
        &[
            start(),
            sub("S2", "W2"),
            end("e"),
            flow("f1", "s", "S2"),
            flow("f2", "S2", "e"),
        ],
    );
    let instance = create_on(&mut rule, v1, json!({"items": [1, 2, 3]}));
    let before = rule.log.len();

    let outcome = migrate(&mut rule, instance, v2, &[("S", "S2"), ("W", "W2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let elements = migrated_elements(&rule, before);
    let ids: Vec<&str> = elements.iter().map(|r| r.element_id.as_str()).collect();
    // The process, the subprocess, the body, its three inner instances.
    assert_eq!(ids, vec!["p", "S2", "W2", "W2", "W2", "W2"]);
    assert_eq!(
        since(&rule, before)
            .of_type(ValueType::Job)
            .with_intent(Intent::Migrated)
            .count(),
        3
    );

    let jobs = rule.activate("work", 10);
    assert_eq!(jobs.len(), 3);
    for (job, record) in jobs {
        assert_eq!(record.element_id, "W2");
        assert!(!rule.complete(job, json!({})).is_rejected());
    }
    assert!(
        rule.records()
            .of_type(ValueType::ProcessInstance)
            .element("S2")
            .with_intent(Intent::ElementCompleted)
            .exists()
    );
    assert_eq!(
        rule.instance_state(instance).expect("instance").state,
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn tokens_waiting_at_a_parallel_join_join_in_the_target() {
    let mut rule = EngineRule::new();
    let fork_join = |after: &[String]| {
        let mut body = vec![
            start(),
            el(r#"<bpmn:parallelGateway id="fork" />"#),
            task("A", "a"),
            task("B", "b"),
            el(r#"<bpmn:parallelGateway id="join" />"#),
            flow("f1", "s", "fork"),
            flow("f2", "fork", "A"),
            flow("f3", "fork", "B"),
            flow("f4", "A", "join"),
            flow("f5", "B", "join"),
        ];
        body.extend_from_slice(after);
        body
    };
    let v1 = deploy(
        &mut rule,
        "p",
        &fork_join(&[end("e"), flow("f6", "join", "e")]),
    );
    let v2 = deploy(
        &mut rule,
        "p",
        &fork_join(&[
            task("C", "c"),
            end("e"),
            flow("f6", "join", "C"),
            flow("f7", "C", "e"),
        ]),
    );
    let instance = create_on(&mut rule, v1, json!({}));
    let (a, _) = rule.job("a");
    assert!(!rule.complete(a, json!({})).is_rejected());

    // A token waits at the join: it is an active element, so it needs a mapping.
    let rejected = migrate(&mut rule, instance, v2, &[("B", "B")]);
    assert_eq!(
        rejection_of(&rejected),
        (
            RejectionType::InvalidState,
            format!(
                "Expected to migrate process instance '{instance}' but no mapping instruction \
                 defined for active element with id 'join'. Elements cannot be migrated \
                 without a mapping."
            )
        )
    );

    let outcome = migrate(&mut rule, instance, v2, &[("B", "B"), ("join", "join")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let (b, _) = rule.job("b");
    assert!(!rule.complete(b, json!({})).is_rejected());
    let (_, c) = rule.job("c");
    assert_eq!(c.process_definition_key, v2.get());
    rule.assert_replay_matches();
}

#[test]
fn a_user_task_moves_to_a_user_task_of_the_same_implementation_only() {
    let mut rule = EngineRule::new();
    let camunda = |id: &str| {
        format!(
            r#"<bpmn:userTask id="{id}"><bpmn:extensionElements><zeebe:userTask /><zeebe:assignmentDefinition assignee="ann" /></bpmn:extensionElements></bpmn:userTask>"#
        )
    };
    let body = |task: String, id: &str| {
        vec![
            start(),
            task,
            end("e"),
            flow("f1", "s", id),
            flow("f2", id, "e"),
        ]
    };
    let v1 = deploy(&mut rule, "p", &body(camunda("U"), "U"));
    let v2 = deploy(&mut rule, "p", &body(camunda("U2"), "U2"));
    let job_worker = deploy(
        &mut rule,
        "p",
        &body(el(r#"<bpmn:userTask id="U3" />"#), "U3"),
    );
    let instance = create_on(&mut rule, v1, json!({}));

    let rejected = migrate(&mut rule, instance, job_worker, &[("U", "U3")]);
    assert_eq!(
        rejection_of(&rejected),
        (
            RejectionType::InvalidState,
            format!(
                "Expected to migrate process instance '{instance}' but active user task with \
                 id 'U' and implementation 'zeebe user task' is mapped to an user task with \
                 id 'U3' and different implementation 'job worker'. Elements must be mapped \
                 to elements of the same implementation."
            )
        )
    );

    let before = rule.log.len();
    let outcome = migrate(&mut rule, instance, v2, &[("U", "U2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let task = since(&rule, before)
        .of_type(ValueType::UserTask)
        .with_intent(Intent::Migrated)
        .records[0]
        .clone();
    let RecordValue::UserTask(value) = &task.value else {
        panic!("user task");
    };
    assert_eq!(value.element_id, "U2");
    assert_eq!(value.process_definition_key, v2.get());
    // Migration interferes with nothing else: the assignee stays.
    assert_eq!(value.assignee, "ann");
    rule.assert_replay_matches();
}

#[test]
fn an_incident_moves_with_its_element() {
    let mut rule = EngineRule::new();
    let (v1, v2) = versions(&mut rule);
    let instance = create_on(&mut rule, v1, json!({"key": "k-1"}));
    let (job, _) = rule.job("a");
    let failed = rule.process(Command::FailJob(FailJob {
        job_key: job,
        retries: 0,
        error_message: "down".into(),
        retry_backoff: 0,
        variables: JsonValue::from(json!({})),
    }));
    assert!(!failed.is_rejected());
    let before = rule.log.len();

    let outcome = migrate(&mut rule, instance, v2, &[("A", "A2"), ("T", "T2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let incident = since(&rule, before)
        .of_type(ValueType::Incident)
        .with_intent(Intent::Migrated)
        .records[0]
        .clone();
    let RecordValue::Incident(value) = &incident.value else {
        panic!("incident");
    };
    assert_eq!(value.element_id, "A2");
    assert_eq!(value.process_definition_key, v2.get());
    assert_eq!(value.job_key, job.get());
    // The tree path names the target definition; the instance keys stay.
    assert_eq!(value.process_definition_path, vec![v2.get()]);
    assert_eq!(
        value.element_instance_path,
        vec![vec![instance.get(), value.element_instance_key]]
    );
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].record.element_id, "A2");
    rule.assert_replay_matches();
}

/// A bad command: instance, target, instructions, and the rejection it gets.
type Case<'a> = (Key, Key, Vec<(&'a str, &'a str)>, RejectionType, String);

#[test]
fn each_bad_command_is_rejected_with_zeebes_reason_and_changes_nothing() {
    let mut rule = EngineRule::new();
    let (v1, v2) = versions(&mut rule);
    let in_subprocess = deploy(
        &mut rule,
        "p",
        &[
            start(),
            el(r#"<bpmn:subProcess id="sub"><bpmn:startEvent id="ss" />"#),
            task("A", "a"),
            el(r#"<bpmn:endEvent id="se" />"#),
            flow("sf1", "ss", "A"),
            flow("sf2", "A", "se"),
            el("</bpmn:subProcess>"),
            end("e"),
            flow("f1", "s", "sub"),
            flow("f2", "sub", "e"),
        ],
    );
    let instance = rule.create("p", json!({"key": "k-1"}));
    assert_eq!(
        rule.instance_state(instance)
            .unwrap()
            .process_definition_key,
        in_subprocess
    );
    let other = Key(instance.get() + 1_000);
    let before = rule.log.len();
    let unknown_definition = Key(v2.get() + 1_000);
    let cases: Vec<Case<'_>> = vec![
        (
            other,
            v2,
            vec![],
            RejectionType::NotFound,
            format!(
                "Expected to migrate process instance but no process instance found with key \
                 '{other}'"
            ),
        ),
        (
            instance,
            unknown_definition,
            vec![],
            RejectionType::NotFound,
            format!(
                "Expected to migrate process instance to process definition but no process \
                 definition found with key '{unknown_definition}'"
            ),
        ),
        (
            instance,
            v2,
            vec![("A", "A2"), ("A", "B"), ("sub", "A2")],
            RejectionType::InvalidArgument,
            format!(
                "Expected to migrate process instance '{instance}' but the mapping \
                 instructions contain duplicate source element ids '[A]'."
            ),
        ),
        (
            instance,
            v2,
            vec![("X", "A2")],
            RejectionType::InvalidArgument,
            format!(
                "Expected to migrate process instance '{instance}' but mapping instructions \
                 contain a non-existing source element id 'X'. Elements provided in mapping \
                 instructions must exist in the source process definition."
            ),
        ),
        (
            instance,
            v2,
            vec![("A", "Y")],
            RejectionType::InvalidArgument,
            format!(
                "Expected to migrate process instance '{instance}' but mapping instructions \
                 contain a non-existing target element id 'Y'. Elements provided in mapping \
                 instructions must exist in the target process definition."
            ),
        ),
        (
            instance,
            v2,
            vec![("A", "A2")],
            RejectionType::InvalidState,
            format!(
                "Expected to migrate process instance '{instance}' but no mapping instruction \
                 defined for active element with id 'sub'. Elements cannot be migrated \
                 without a mapping."
            ),
        ),
        (
            instance,
            v2,
            vec![("sub", "e"), ("A", "A2")],
            RejectionType::InvalidState,
            format!(
                "Expected to migrate process instance '{instance}' but active element with id \
                 'sub' and type 'SUB_PROCESS' is mapped to an element with id 'e' and \
                 different type 'END_EVENT'. Elements must be mapped to elements of the same \
                 type."
            ),
        ),
    ];
    for (key, target, pairs, kind, reason) in cases {
        let outcome = migrate(&mut rule, key, target, &pairs);
        assert_eq!(rejection_of(&outcome), (kind, reason), "{pairs:?}");
    }
    // Nothing was written but the rejections.
    let written = since(&rule, before);
    assert!(
        written
            .records
            .iter()
            .all(|r| r.record_type == rill_protocol::RecordType::CommandRejection)
    );
    assert_eq!(
        rule.instance_state(instance)
            .unwrap()
            .process_definition_key,
        in_subprocess
    );

    // A moved out of its subprocess: its flow scope would change.
    let flat = deploy(
        &mut rule,
        "p",
        &[
            start(),
            el(
                r#"<bpmn:subProcess id="sub"><bpmn:startEvent id="ss" /><bpmn:endEvent id="se" /><bpmn:sequenceFlow id="sf" sourceRef="ss" targetRef="se" /></bpmn:subProcess>"#,
            ),
            task("A", "a"),
            end("e"),
            flow("f1", "s", "sub"),
            flow("f2", "sub", "A"),
            flow("f3", "A", "e"),
        ],
    );
    let outcome = migrate(&mut rule, instance, flat, &[("sub", "sub"), ("A", "A")]);
    assert_eq!(
        rejection_of(&outcome),
        (
            RejectionType::InvalidState,
            format!(
                "Expected to migrate process instance '{instance}' but the flow scope of \
                 active element with id 'A' is changed. The flow scope of the active element \
                 is expected to be 'sub' but was 'p'. The flow scope of an element cannot be \
                 changed during migration yet."
            )
        )
    );

    // A timer boundary event mapped to a message boundary event.
    let flat_instance = {
        deploy(
            &mut rule,
            "p",
            &[
                start(),
                task("A", "a"),
                timer_boundary("T", "A", "PT1H"),
                end("e"),
                end("te"),
                flow("f1", "s", "A"),
                flow("f2", "A", "e"),
                flow("f3", "T", "te"),
            ],
        );
        rule.create("p", json!({"key": "k-3"}))
    };
    let outcome = migrate(&mut rule, flat_instance, v2, &[("A", "A2"), ("T", "M2")]);
    assert_eq!(
        rejection_of(&outcome),
        (
            RejectionType::InvalidState,
            format!(
                "Expected to migrate process instance '{flat_instance}' but catch event with \
                 id 'T' and event type 'TIMER' is mapped to a catch event with id 'M2' and \
                 different event type 'MESSAGE'. Catch events must be mapped to catch events \
                 of the same event type."
            )
        )
    );
    // T mapped to a boundary event of another element would detach it.
    let outcome = migrate(&mut rule, flat_instance, v1, &[("A", "A"), ("T", "te")]);
    assert_eq!(rejection_of(&outcome).0, RejectionType::InvalidState);
    assert!(
        rejection_of(&outcome)
            .1
            .contains("These mappings detach the catch event from the element"),
        "{:?}",
        rejection_of(&outcome)
    );
    assert!(
        !rule
            .records()
            .of_type(ValueType::ProcessInstance)
            .with_intent(Intent::ElementMigrated)
            .exists()
    );
    rule.assert_replay_matches();
}

/// A non-interrupting message event subprocess `{id}` (start `{id}_start`, job `{job}`).
fn event_subprocess(id: &str, job: &str) -> String {
    format!(
        r#"<bpmn:subProcess id="{id}" triggeredByEvent="true"><bpmn:startEvent id="{id}_start" isInterrupting="false"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>{}<bpmn:endEvent id="{id}_end" />{}{}</bpmn:subProcess>"#,
        task(&format!("{id}_task"), job),
        flow(
            &format!("{id}_f1"),
            &format!("{id}_start"),
            &format!("{id}_task")
        ),
        flow(
            &format!("{id}_f2"),
            &format!("{id}_task"),
            &format!("{id}_end")
        ),
    )
}

#[test]
fn an_event_subprocess_subscription_moves_and_a_started_event_subprocess_is_refused() {
    let mut rule = EngineRule::new();
    let body = |task_id: &str, esp: &str| {
        vec![
            start(),
            task(task_id, "a"),
            end("e"),
            flow("f1", "s", task_id),
            flow("f2", task_id, "e"),
            event_subprocess(esp, "ev"),
        ]
    };
    let v1 = deploy(&mut rule, "p", &body("A", "ESP"));
    let v2 = deploy(&mut rule, "p", &body("A2", "ESP2"));
    let instance = create_on(&mut rule, v1, json!({"key": "k-5"}));
    let before = rule.log.len();

    let outcome = migrate(
        &mut rule,
        instance,
        v2,
        &[("A", "A2"), ("ESP_start", "ESP2_start")],
    );
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let moved = since(&rule, before)
        .of_type(ValueType::ProcessMessageSubscription)
        .with_intent(Intent::Migrated)
        .records[0]
        .clone();
    let RecordValue::ProcessMessageSubscription(value) = &moved.value else {
        panic!("subscription");
    };
    assert_eq!(
        (value.element_id.as_str(), value.element_instance_key),
        ("ESP2_start", instance.get())
    );

    // The message starts the target's event subprocess.
    assert!(!rule.publish("msg", "k-5", 0, json!({})).is_rejected());
    assert!(
        rule.records()
            .of_type(ValueType::ProcessInstance)
            .element("ESP2")
            .with_intent(Intent::ElementActivated)
            .exists()
    );
    let v3 = deploy(&mut rule, "p", &body("A3", "ESP3"));
    let outcome = migrate(
        &mut rule,
        instance,
        v3,
        &[
            ("A2", "A3"),
            ("ESP2", "ESP3"),
            ("ESP2_task", "ESP3_task"),
            ("ESP2_start", "ESP3_start"),
        ],
    );
    assert_eq!(
        rejection_of(&outcome),
        (
            RejectionType::InvalidState,
            format!(
                "Expected to migrate process instance '{instance}' but active element with id \
                 'ESP2' has an unsupported type. The migration of a EVENT_SUB_PROCESS is not \
                 supported."
            )
        )
    );
    rule.assert_replay_matches();
}

#[test]
fn a_call_activity_moves_and_its_called_instance_runs_on() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        "child",
        &[
            start(),
            task("C", "child-work"),
            end("e"),
            flow("f1", "s", "C"),
            flow("f2", "C", "e"),
        ],
    );
    let call = |id: &str| {
        format!(
            r#"<bpmn:callActivity id="{id}"><bpmn:extensionElements><zeebe:calledElement processId="child" /></bpmn:extensionElements></bpmn:callActivity>"#
        )
    };
    let v1 = deploy(
        &mut rule,
        "p",
        &[
            start(),
            call("Call"),
            end("e"),
            flow("f1", "s", "Call"),
            flow("f2", "Call", "e"),
        ],
    );
    let v2 = deploy(
        &mut rule,
        "p",
        &[
            start(),
            call("Call2"),
            task("After", "after"),
            end("e"),
            flow("f1", "s", "Call2"),
            flow("f2", "Call2", "After"),
            flow("f3", "After", "e"),
        ],
    );
    let instance = create_on(&mut rule, v1, json!({}));
    let before = rule.log.len();
    let outcome = migrate(&mut rule, instance, v2, &[("Call", "Call2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    // Only the parent's element instances move; the called instance stays on `child`.
    let ids: Vec<String> = migrated_elements(&rule, before)
        .into_iter()
        .map(|r| r.element_id)
        .collect();
    assert_eq!(ids, vec!["p".to_owned(), "Call2".to_owned()]);

    let (job, record) = rule.job("child-work");
    assert_eq!(record.bpmn_process_id, "child");
    assert!(!rule.complete(job, json!({})).is_rejected());
    let (_, after) = rule.job("after");
    assert_eq!(after.process_instance_key, instance.get());
    rule.assert_replay_matches();
}

fn sends(outcome: &Outcome) -> Vec<(rill_protocol::PartitionId, Command)> {
    outcome
        .actions
        .iter()
        .filter_map(|a| match a {
            rill_engine_api::Action::Send { partition, command } => {
                Some((*partition, command.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Applies on `to` every send of `outcome` addressed to it.
fn deliver(outcome: &Outcome, to: &mut EngineRule) -> Vec<Outcome> {
    let me = to.partition;
    sends(outcome)
        .into_iter()
        .filter(|(p, _)| *p == me)
        .map(|(_, command)| {
            let applied = to.process(command);
            assert!(!applied.is_rejected(), "{:?}", applied.response);
            applied
        })
        .collect()
}

#[test]
fn the_message_partition_learns_the_new_process_id_through_migrate() {
    // Correlation key "a" belongs to partition 2 of 2; the instance runs on partition 1.
    assert_eq!(
        rill_protocol::message_partition("a", 2),
        rill_protocol::PartitionId(2)
    );
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let catch = |id: &str| {
        format!(
            r#"<bpmn:intermediateCatchEvent id="{id}"><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>"#
        )
    };
    let body = |id: &str| {
        vec![
            start(),
            catch(id),
            end("e"),
            flow("f1", "s", id),
            flow("f2", id, "e"),
        ]
    };
    let mut deploy_both = |id: &str, element: &str| {
        let deployed = first.deploy_xml(&process(id, &body(element)));
        deliver(&deployed, &mut second);
        match deployed.value() {
            RecordValue::Deployment(d) => Key(d.processes_metadata[0].process_definition_key),
            other => panic!("{other:?}"),
        }
    };
    let v1 = deploy_both("p", "C");
    let v2 = deploy_both("q", "C2");
    let created = first.process(Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ByKey(v1),
        variables: JsonValue::from(json!({"key": "a"})),
        await_result: false,
        fetch_variables: Vec::new(),
        tags: Vec::new(),
    }));
    let instance = created.key();
    deliver(&created, &mut second);

    let outcome = migrate(&mut first, instance, v2, &[("C", "C2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let applied = deliver(&outcome, &mut second);
    assert_eq!(applied.len(), 1, "one MIGRATE for the message partition");
    let migrated = applied[0]
        .records
        .iter()
        .find(|r| r.value_type() == ValueType::MessageSubscription && r.intent == Intent::Migrated)
        .expect("MESSAGE_SUBSCRIPTION MIGRATED");
    let RecordValue::MessageSubscription(value) = &migrated.value else {
        panic!("message subscription");
    };
    assert_eq!(value.bpmn_process_id, "q");
    assert_eq!(value.element_instance_key, {
        first
            .records()
            .of_type(ValueType::ProcessInstance)
            .element("C")
            .with_intent(Intent::ElementActivating)
            .records[0]
            .key
            .get()
    });

    // A message on its partition correlates to the migrated instance, which goes on in `q`.
    let published = second.publish("msg", "a", 0, json!({}));
    assert_eq!(deliver(&published, &mut first).len(), 1);
    assert_eq!(
        first.instance_state(instance).unwrap().state,
        rill_engine::ProcessInstanceState::Completed
    );
    first.assert_replay_matches();
    second.assert_replay_matches();
}

/// A (job `a`) with a compensation boundary `{boundary}` whose handler `{handler}` has
/// the job `{undo}`, then X (job `x`), then a compensation throw event.
fn compensable(a: &str, boundary: &str, handler: &str, undo: &str, x: &str) -> Vec<String> {
    vec![
        start(),
        task(a, "a"),
        format!(
            r#"<bpmn:boundaryEvent id="{boundary}" attachedToRef="{a}"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>"#
        ),
        format!(
            r#"<bpmn:serviceTask id="{handler}" isForCompensation="true"><bpmn:extensionElements><zeebe:taskDefinition type="{undo}" /></bpmn:extensionElements></bpmn:serviceTask>"#
        ),
        format!(r#"<bpmn:association id="as" sourceRef="{boundary}" targetRef="{handler}" />"#),
        task(x, "x"),
        el(
            r#"<bpmn:intermediateThrowEvent id="undo"><bpmn:compensateEventDefinition /></bpmn:intermediateThrowEvent>"#,
        ),
        end("e"),
        flow("f1", "s", a),
        flow("f2", a, x),
        flow("f3", x, "undo"),
        flow("f4", "undo", "e"),
    ]
}

#[test]
fn a_compensation_subscription_follows_its_boundary_event_or_goes_with_it() {
    let mut rule = EngineRule::new();
    let v1 = deploy(
        &mut rule,
        "p",
        &compensable("A", "B1", "UndoA", "undo-a", "X"),
    );
    let v2 = deploy(
        &mut rule,
        "p",
        &compensable("A2", "B2", "UndoA2", "undo-a2", "X2"),
    );
    let timer_target = deploy(
        &mut rule,
        "p",
        &[
            start(),
            task("A3", "a"),
            timer_boundary("B3", "A3", "PT1H"),
            task("X3", "x"),
            end("e"),
            end("te"),
            flow("f1", "s", "A3"),
            flow("f2", "A3", "X3"),
            flow("f3", "X3", "e"),
            flow("f4", "B3", "te"),
        ],
    );
    let at_x = |rule: &mut EngineRule| {
        let instance = create_on(rule, v1, json!({}));
        let (a, _) = rule.job("a");
        assert!(!rule.complete(a, json!({})).is_rejected());
        instance
    };

    // Mapped to a boundary event that is not a compensation boundary event.
    let first = at_x(&mut rule);
    let outcome = migrate(&mut rule, first, timer_target, &[("X", "X3"), ("B1", "B3")]);
    assert_eq!(
        rejection_of(&outcome),
        (
            RejectionType::InvalidArgument,
            "Expected to migrate process instance with id 'p' but compensation boundary event \
             'B1' is mapped to a target boundary event 'B3' that has event type 'TIMER' \
             different than compensation boundary event type."
                .to_owned()
        )
    );

    // Mapped: the subscription now compensates A2 with A2's handler.
    let before = rule.log.len();
    let outcome = migrate(&mut rule, first, v2, &[("X", "X2"), ("B1", "B2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let moved = since(&rule, before)
        .of_type(ValueType::CompensationSubscription)
        .with_intent(Intent::Migrated)
        .records[0]
        .clone();
    let RecordValue::CompensationSubscription(value) = &moved.value else {
        panic!("compensation subscription");
    };
    assert_eq!(
        (
            value.compensable_activity_id.as_str(),
            value.compensation_handler_id.as_str(),
            value.process_definition_key
        ),
        ("A2", "UndoA2", v2.get())
    );
    let (x, _) = rule.job("x");
    assert!(!rule.complete(x, json!({})).is_rejected());
    let (_, undo) = rule.job("undo-a2");
    assert_eq!(undo.element_id, "UndoA2");

    // Unmapped: the subscription goes, and the throw event compensates nothing.
    let second = at_x(&mut rule);
    let before = rule.log.len();
    let outcome = migrate(&mut rule, second, v2, &[("X", "X2")]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert!(
        since(&rule, before)
            .of_type(ValueType::CompensationSubscription)
            .with_intent(Intent::Deleted)
            .exists()
    );
    let (x, _) = rule.job("x");
    assert!(!rule.complete(x, json!({})).is_rejected());
    assert_eq!(
        rule.instance_state(second).unwrap().state,
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}
