//! Resource deletion: process definitions, forms and decision requirements (with their
//! decisions) deleted by key, on this partition and on the others through the outbox.
//! A process definition with active instances is kept until the last one ends.

use rill_engine_api::Action;
use rill_protocol::value::DeploymentRecord;
use rill_protocol::{
    Command, DecisionSelector, EvaluateDecision, Intent, JsonValue, Key, PartitionId, RecordValue,
    RejectionType, ValueType,
};
use serde_json::json;

use super::*;

fn form(id: &str, label: &str) -> Vec<u8> {
    json!({"id": id, "type": "default", "components": [{"type": "textfield", "label": label, "key": "x"}]})
        .to_string()
        .into_bytes()
}

fn deployment(outcome: &Outcome) -> DeploymentRecord {
    match outcome.value() {
        RecordValue::Deployment(d) => d.clone(),
        other => panic!("expected a deployment, got {other:?}"),
    }
}

fn delete(rule: &mut EngineRule, key: i64) -> Outcome {
    rule.process(Command::DeleteResource {
        resource_key: Key(key),
    })
}

/// The dish DRG with a different checksum (a new version when deployed).
fn changed_dish() -> Vec<u8> {
    let mut dmn = fixture("dmn/dish.dmn");
    dmn.extend_from_slice(b"\n<!-- changed -->\n");
    dmn
}

#[test]
fn deleting_the_latest_form_makes_the_previous_version_latest() {
    let mut rule = EngineRule::new();
    let v1 = deployment(&rule.deploy(&[("a.form", form("invoice", "one"))]));
    let v2 = deployment(&rule.deploy(&[("a.form", form("invoice", "two"))]));
    assert_eq!(v2.form_metadata[0].version, 2);
    let form_key = v2.form_metadata[0].form_key;
    let before = rule.log.len();

    let deleted = delete(&mut rule, form_key);
    assert!(!deleted.is_rejected(), "{:?}", deleted.response);
    assert!(matches!(
        deleted.response,
        Some(rill_protocol::CommandResponse::Accepted {
            intent: Intent::Deleting,
            ..
        })
    ));
    let RecordValue::ResourceDeletion(value) = deleted.value() else {
        panic!("{:?}", deleted.value());
    };
    assert_eq!(value.resource_key, form_key);
    let shape: Vec<_> = rule.log[before..]
        .iter()
        .map(|(_, r)| (r.record_type, r.value.value_type(), r.intent))
        .collect();
    use rill_protocol::RecordType::{Command as C, Event as E};
    assert_eq!(
        shape,
        [
            (C, ValueType::ResourceDeletion, Intent::Delete),
            (E, ValueType::ResourceDeletion, Intent::Deleting),
            (E, ValueType::Form, Intent::Deleted),
            (E, ValueType::ResourceDeletion, Intent::Deleted),
        ]
    );
    let form_deleted = &rule.log[before + 2].1;
    assert_eq!(form_deleted.key, Key(form_key));

    // Version 1 is the latest again: deploying it again is a duplicate of it...
    let again = deployment(&rule.deploy(&[("a.form", form("invoice", "one"))]));
    assert!(again.form_metadata[0].is_duplicate);
    assert_eq!(
        again.form_metadata[0].form_key,
        v1.form_metadata[0].form_key
    );
    // ...and the deleted version number is not given out again.
    let v3 = deployment(&rule.deploy(&[("a.form", form("invoice", "two"))]));
    assert_eq!(
        (
            v3.form_metadata[0].version,
            v3.form_metadata[0].is_duplicate
        ),
        (3, false)
    );
    assert_ne!(v3.form_metadata[0].form_key, form_key);

    // Deleted twice: the second time it is unknown.
    let twice = delete(&mut rule, form_key);
    assert_eq!(rejection_of(&twice).0, RejectionType::NotFound);
    rule.assert_replay_matches();
}

#[test]
fn deleting_a_decision_requirements_graph_deletes_its_decisions() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("dmn/dish.dmn");
    let v2 = deployment(&rule.deploy(&[("dish.dmn", changed_dish())]));
    let drg = &v2.decision_requirements_metadata[0];
    assert_eq!(drg.decision_requirements_version, 2);
    let before = rule.log.len();

    let deleted = delete(&mut rule, drg.decision_requirements_key);
    assert!(!deleted.is_rejected(), "{:?}", deleted.response);
    let events: Vec<_> = rule.log[before..]
        .iter()
        .filter(|(_, r)| r.record_type == rill_protocol::RecordType::Event)
        .map(|(_, r)| (r.value.value_type(), r.intent, r.key.get()))
        .collect();
    let decision_keys: Vec<i64> = v2
        .decisions_metadata
        .iter()
        .map(|d| d.decision_key)
        .collect();
    let mut deleted_decisions: Vec<i64> = events
        .iter()
        .filter(|(t, _, _)| *t == ValueType::Decision)
        .map(|(_, _, k)| *k)
        .collect();
    deleted_decisions.sort();
    let mut expected = decision_keys.clone();
    expected.sort();
    assert_eq!(deleted_decisions, expected, "{events:?}");
    assert_eq!(events.len(), 6, "{events:?}");
    assert_eq!(
        events[4],
        (
            ValueType::DecisionRequirements,
            Intent::Deleted,
            drg.decision_requirements_key
        )
    );
    assert_eq!(events[5].1, Intent::Deleted);

    // The decisions evaluate in version 1 again; the deleted keys are gone.
    let evaluated = rule.process(Command::EvaluateDecision(EvaluateDecision {
        decision: DecisionSelector::ById("menu".into()),
        variables: JsonValue::from(json!({"month": 1, "guestCount": 12})),
    }));
    let RecordValue::DecisionEvaluation(record) = evaluated.value() else {
        panic!("{:?}", evaluated.response);
    };
    assert_eq!(record.decision_version, 1);
    let by_deleted_key = rule.process(Command::EvaluateDecision(EvaluateDecision {
        decision: DecisionSelector::ByKey(Key(decision_keys[0])),
        variables: JsonValue::from(json!({"month": 1})),
    }));
    assert_eq!(rejection_of(&by_deleted_key).0, RejectionType::NotFound);

    // Deploying the deleted content again makes version 3, of the DRG and its decisions.
    let v3 = deployment(&rule.deploy(&[("dish.dmn", changed_dish())]));
    assert_eq!(
        v3.decision_requirements_metadata[0].decision_requirements_version,
        3
    );
    assert!(v3.decisions_metadata.iter().all(|d| d.version == 3));
    rule.assert_replay_matches();
}

#[test]
fn an_unknown_key_or_a_decision_key_is_rejected_and_changes_nothing() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("two-rest-calls.bpmn");
    let dmn = deployment(&rule.deploy_fixture("dmn/dish.dmn"));
    let before = rill_engine_api::state_digest(&rule.state).unwrap();

    let unknown = delete(&mut rule, 2251799813685999);
    assert_eq!(rejection_of(&unknown).0, RejectionType::NotFound);
    let decision = delete(&mut rule, dmn.decisions_metadata[0].decision_key);
    let (kind, reason) = rejection_of(&decision);
    assert_eq!(kind, RejectionType::NotFound);
    assert!(
        reason.contains("delete its decision requirements"),
        "{reason}"
    );
    assert_eq!(rill_engine_api::state_digest(&rule.state).unwrap(), before);
    assert!(
        !rule
            .records()
            .events()
            .of_type(ValueType::ResourceDeletion)
            .exists()
    );
}

// --- process definitions ---

/// Process `id`: start → a service task of type `job` → end.
fn job_process(id: &str, job: &str) -> Vec<u8> {
    use super::elements::{flow, model, task};
    let body = format!(
        r#"<bpmn:startEvent id="s" />{}<bpmn:endEvent id="e" />{}{}"#,
        task("Work", job),
        flow("f1", "s", "Work"),
        flow("f2", "Work", "e")
    );
    model(&body)
        .replace(
            r#"<bpmn:process id="p""#,
            &format!(r#"<bpmn:process id="{id}""#),
        )
        .into_bytes()
}

fn definition_key(outcome: &Outcome) -> i64 {
    deployment(outcome).processes_metadata[0].process_definition_key
}

fn create_by_key(rule: &mut EngineRule, key: i64) -> Outcome {
    rule.process(Command::CreateProcessInstance(
        rill_protocol::CreateProcessInstance {
            process: rill_protocol::ProcessSelector::ByKey(Key(key)),
            variables: JsonValue::from(json!({})),
            await_result: false,
            fetch_variables: Vec::new(),
            tags: Vec::new(),
        },
    ))
}

/// The version of the process instance a command created.
fn created_version(outcome: &Outcome) -> i32 {
    match outcome.value() {
        RecordValue::ProcessInstanceCreation(created) => created.version,
        other => panic!("expected a created instance, got {other:?}"),
    }
}

/// `(intent, definition key)` of the PROCESS DELETING and DELETED events.
fn process_deletions(rule: &EngineRule) -> Vec<(Intent, i64)> {
    rule.records()
        .events()
        .of_type(ValueType::Process)
        .records
        .iter()
        .filter(|r| r.intent != Intent::Created)
        .filter_map(|r| match &r.value {
            RecordValue::Process(p) => Some((r.intent, p.process_definition_key)),
            _ => None,
        })
        .collect()
}

#[test]
fn deleting_the_latest_process_version_makes_the_previous_one_latest() {
    let mut rule = EngineRule::new();
    let v1 = definition_key(&rule.deploy(&[("a.bpmn", job_process("order", "one"))]));
    let v2 = definition_key(&rule.deploy(&[("a.bpmn", job_process("order", "two"))]));
    let before = rule.log.len();

    let deleted = delete(&mut rule, v2);
    assert!(!deleted.is_rejected(), "{:?}", deleted.response);
    use rill_protocol::RecordType::{Command as C, Event as E};
    let shape: Vec<_> = rule.log[before..]
        .iter()
        .map(|(_, r)| (r.record_type, r.value.value_type(), r.intent))
        .collect();
    assert_eq!(
        shape,
        [
            (C, ValueType::ResourceDeletion, Intent::Delete),
            (E, ValueType::ResourceDeletion, Intent::Deleting),
            (E, ValueType::Process, Intent::Deleting),
            (E, ValueType::Process, Intent::Deleted),
            (E, ValueType::ResourceDeletion, Intent::Deleted),
        ]
    );
    let RecordValue::Process(record) = &rule.log[before + 3].1.value else {
        panic!("a process record");
    };
    assert_eq!(
        (
            record.bpmn_process_id.as_str(),
            record.version,
            record.process_definition_key
        ),
        ("order", 2, v2)
    );
    assert!(record.resource.0.is_empty(), "the resource is left out");

    // The latest is version 1 again; version 2 is gone by key and by version.
    let latest = rule.process(EngineRule::create_command("order", json!({})));
    assert_eq!(created_version(&latest), 1);
    assert_eq!(rule.job("one").1.process_definition_key, v1);
    assert_eq!(
        rejection_of(&create_by_key(&mut rule, v2)).0,
        RejectionType::NotFound
    );
    let by_version = rule.process(Command::CreateProcessInstance(
        rill_protocol::CreateProcessInstance {
            process: rill_protocol::ProcessSelector::ById {
                bpmn_process_id: "order".into(),
                version: Some(2),
            },
            variables: JsonValue::from(json!({})),
            await_result: false,
            fetch_variables: Vec::new(),
            tags: Vec::new(),
        },
    ));
    assert_eq!(rejection_of(&by_version).0, RejectionType::NotFound);
    assert_eq!(
        rejection_of(&delete(&mut rule, v2)).0,
        RejectionType::NotFound
    );

    // Deploying version 2's XML again makes version 3: the number 2 is not reused.
    let v3 = deployment(&rule.deploy(&[("a.bpmn", job_process("order", "two"))]));
    let meta = &v3.processes_metadata[0];
    assert_eq!((meta.version, meta.is_duplicate), (3, false));
    assert_ne!(meta.process_definition_key, v2);

    // Deleting every version leaves the id without a latest version.
    assert!(!delete(&mut rule, meta.process_definition_key).is_rejected());
    assert!(!delete(&mut rule, v1).is_rejected());
    let none = rule.process(EngineRule::create_command("order", json!({})));
    assert_eq!(rejection_of(&none).0, RejectionType::NotFound);
    let v4 = deployment(&rule.deploy(&[("a.bpmn", job_process("order", "one"))]));
    assert_eq!(v4.processes_metadata[0].version, 4);
    rule.assert_replay_matches();
}

#[test]
fn a_definition_with_active_instances_is_deleted_when_its_last_instance_ends() {
    let mut rule = EngineRule::new();
    rule.deploy(&[("a.bpmn", job_process("order", "one"))]);
    let v2 = definition_key(&rule.deploy(&[("a.bpmn", job_process("order", "two"))]));
    let first = rule.create("order", json!({}));
    let second = rule.create("order", json!({}));

    let deleted = delete(&mut rule, v2);
    assert!(!deleted.is_rejected(), "{:?}", deleted.response);
    assert_eq!(process_deletions(&rule), [(Intent::Deleting, v2)]);

    // No new instance of version 2; the latest is version 1.
    let (kind, reason) = rejection_of(&create_by_key(&mut rule, v2));
    assert_eq!(kind, RejectionType::NotFound);
    assert!(reason.contains("it is deleted"), "{reason}");
    let latest = rule.process(EngineRule::create_command("order", json!({})));
    assert_eq!(created_version(&latest), 1);
    // A second deletion says what it waits for.
    let (kind, reason) = rejection_of(&delete(&mut rule, v2));
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(reason.contains("2 active instance(s)"), "{reason}");

    // The running instances go on: one completes, the other is cancelled.
    let jobs = rule.activate("two", 10);
    assert_eq!(jobs.len(), 2);
    assert!(!rule.complete(jobs[0].0, json!({})).is_rejected());
    assert_eq!(
        process_deletions(&rule).len(),
        1,
        "one instance is still active"
    );
    let ended = rule.process(Command::CancelProcessInstance {
        process_instance_key: second,
    });
    assert!(!ended.is_rejected(), "{:?}", ended.response);
    assert_eq!(
        process_deletions(&rule),
        [(Intent::Deleting, v2), (Intent::Deleted, v2)]
    );
    // DELETED follows the last instance's end, in the same command.
    let last = ended.records.last().unwrap();
    assert_eq!(
        (last.value.value_type(), last.intent),
        (ValueType::Process, Intent::Deleted)
    );
    use rill_engine::ProcessInstanceState;
    assert_eq!(
        rule.instance_state(first).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert_eq!(
        rule.instance_state(second).unwrap().state,
        ProcessInstanceState::Terminated
    );
    assert_eq!(
        rejection_of(&delete(&mut rule, v2)).0,
        RejectionType::NotFound
    );
    rule.assert_replay_matches();
}

/// Process `starter` with a message start event (message `go`) and a signal start
/// event (signal `sig`), each followed by a `one` job.
fn event_started() -> Vec<u8> {
    r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="starter" isExecutable="true">
    <bpmn:startEvent id="Go"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
    <bpmn:startEvent id="Sig"><bpmn:signalEventDefinition signalRef="S" /></bpmn:startEvent>
    <bpmn:serviceTask id="One"><bpmn:extensionElements><zeebe:taskDefinition type="one" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="Go" targetRef="One" />
    <bpmn:sequenceFlow id="f2" sourceRef="Sig" targetRef="One" />
    <bpmn:sequenceFlow id="f3" sourceRef="One" targetRef="e" />
  </bpmn:process>
  <bpmn:message id="M" name="go" />
  <bpmn:signal id="S" name="sig" />
</bpmn:definitions>"#
        .as_bytes()
        .to_vec()
}

/// Process `starter` with a timer start event firing every minute, then a `two` job.
fn timer_started() -> Vec<u8> {
    r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="starter" isExecutable="true">
    <bpmn:startEvent id="Tick"><bpmn:timerEventDefinition><bpmn:timeCycle xsi:type="bpmn:tFormalExpression">R/PT1M</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>
    <bpmn:serviceTask id="Two"><bpmn:extensionElements><zeebe:taskDefinition type="two" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="Tick" targetRef="Two" />
    <bpmn:sequenceFlow id="f2" sourceRef="Two" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>"#
        .as_bytes()
        .to_vec()
}

fn count(rule: &EngineRule, value_type: ValueType, intent: Intent) -> usize {
    rule.records()
        .events()
        .of_type(value_type)
        .with_intent(intent)
        .count()
}

#[test]
fn the_start_events_of_the_version_that_is_latest_again_are_subscribed() {
    let mut rule = EngineRule::new();
    let v1 = definition_key(&rule.deploy(&[("s.bpmn", event_started())]));
    let v2 = definition_key(&rule.deploy(&[("s.bpmn", timer_started())]));
    // Version 2 replaced version 1's message and signal start events with its timer.
    assert_eq!(
        count(&rule, ValueType::SignalSubscription, Intent::Deleted),
        1
    );
    assert_eq!(
        count(
            &rule,
            ValueType::MessageStartEventSubscription,
            Intent::Deleted
        ),
        1
    );
    assert_eq!(count(&rule, ValueType::Timer, Intent::Created), 1);
    assert!(rule.next_due().is_some());

    assert!(!delete(&mut rule, v2).is_rejected());
    // Version 2's timer is cancelled; version 1's message and signal starts are back.
    assert_eq!(count(&rule, ValueType::Timer, Intent::Canceled), 1);
    assert_eq!(rule.next_due(), None);
    let message_starts: Vec<_> = rule
        .records()
        .events()
        .of_type(ValueType::MessageStartEventSubscription)
        .with_intent(Intent::Created)
        .records
        .iter()
        .map(|r| r.key.get())
        .collect();
    assert_eq!(message_starts, [v1, v1]);
    assert_eq!(
        count(&rule, ValueType::SignalSubscription, Intent::Created),
        2
    );

    // A message and a signal start instances of version 1; the clock starts none.
    rule.advance(120_000);
    assert!(rule.fire_due().is_empty());
    assert!(!rule.publish("go", "", 0, json!({})).is_rejected());
    let broadcast = rule.process(Command::BroadcastSignal(rill_protocol::BroadcastSignal {
        signal_name: "sig".into(),
        variables: JsonValue::from(json!({})),
    }));
    assert!(!broadcast.is_rejected(), "{:?}", broadcast.response);
    let jobs = rule.activate("one", 10);
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|(_, job)| job.process_definition_key == v1));

    // Deleting version 1 as well leaves nothing subscribed.
    assert!(!delete(&mut rule, v1).is_rejected());
    assert!(!rule.publish("go", "", 0, json!({})).is_rejected());
    assert_eq!(rule.activate("one", 10).len(), 0);

    // Deployed again, the timer version is version 3 and arms its timer.
    let v3 = deployment(&rule.deploy(&[("s.bpmn", timer_started())]));
    assert_eq!(v3.processes_metadata[0].version, 3);
    assert!(rule.next_due().is_some());
    rule.assert_replay_matches();
}

#[test]
fn call_activities_follow_the_latest_version_and_a_deleted_bound_one_is_an_incident() {
    use super::elements::{flow, model};
    let caller = |id: &str, binding: &str| {
        model(&format!(
            r#"<bpmn:startEvent id="s" /><bpmn:callActivity id="Call"><bpmn:extensionElements><zeebe:calledElement processId="child" {binding} /></bpmn:extensionElements></bpmn:callActivity><bpmn:endEvent id="e" />{}{}"#,
            flow("f1", "s", "Call"),
            flow("f2", "Call", "e")
        ))
        .replace(r#"<bpmn:process id="p""#, &format!(r#"<bpmn:process id="{id}""#))
        .into_bytes()
    };
    let mut rule = EngineRule::new();
    let bound = rule.deploy(&[
        ("bound.bpmn", caller("bound", r#"bindingType="deployment""#)),
        ("child.bpmn", job_process("child", "one")),
    ]);
    let child_v1 = deployment(&bound)
        .processes_metadata
        .iter()
        .find(|m| m.bpmn_process_id == "child")
        .unwrap()
        .process_definition_key;
    let child_v2 = definition_key(&rule.deploy(&[("child.bpmn", job_process("child", "two"))]));
    rule.deploy(&[("latest.bpmn", caller("latest", ""))]);

    assert!(!delete(&mut rule, child_v2).is_rejected());
    rule.create("latest", json!({}));
    let (job, record) = rule.job("one");
    assert_eq!(record.process_definition_key, child_v1);

    // The version the caller's deployment holds is deleted: an incident.
    assert!(!rule.complete(job, json!({})).is_rejected());
    assert!(!delete(&mut rule, child_v1).is_rejected());
    let instance = rule.create("bound", json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("no such process is deployed"),
        "{}",
        incidents[0].record.error_message
    );
    rule.assert_replay_matches();
}

fn sends(outcome: &Outcome) -> Vec<(PartitionId, Command)> {
    outcome
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { partition, command } => Some((*partition, command.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_deletion_is_distributed_to_the_other_partitions() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    for resources in [
        vec![("a.form", form("invoice", "one"))],
        vec![
            ("a.form", form("invoice", "two")),
            ("dish.dmn", fixture("dmn/dish.dmn")),
        ],
    ] {
        let deployed = first.deploy(&resources);
        for (_, command) in sends(&deployed) {
            assert!(!second.process(command).is_rejected());
        }
    }
    let deployed = first
        .log
        .iter()
        .rev()
        .find_map(|(_, r)| match &r.value {
            RecordValue::Deployment(d) if r.intent == Intent::Created => Some(d.clone()),
            _ => None,
        })
        .unwrap();
    let form_key = deployed.form_metadata[0].form_key;
    let drg_key = deployed.decision_requirements_metadata[0].decision_requirements_key;

    for key in [form_key, drg_key] {
        let deleted = delete(&mut first, key);
        let sent = sends(&deleted);
        assert_eq!(sent.len(), 1, "one send, to partition 2");
        assert_eq!(sent[0].0, PartitionId(2));
        let before = second.log.len();
        let applied = second.process(sent[0].1.clone());
        assert!(!applied.is_rejected(), "{:?}", applied.response);
        let shape: Vec<_> = second.log[before..]
            .iter()
            .filter(|(_, r)| r.record_type == rill_protocol::RecordType::Event)
            .map(|(_, r)| (r.value.value_type(), r.intent))
            .collect();
        assert_eq!(shape[0], (ValueType::ResourceDeletion, Intent::Deleting));
        assert!(
            shape.contains(&(ValueType::ResourceDeletion, Intent::Deleted)),
            "{shape:?}"
        );
        let deleted_there = if key == form_key {
            ValueType::Form
        } else {
            ValueType::DecisionRequirements
        };
        assert!(
            shape.contains(&(deleted_there, Intent::Deleted)),
            "{shape:?}"
        );
        // Gone on partition 2 as well: deleting it there finds nothing.
        assert_eq!(
            rejection_of(&delete(&mut second, key)).0,
            RejectionType::NotFound
        );
    }
    // The previous form version is the latest on partition 2 too.
    let again = deployment(&second.deploy(&[("a.form", form("invoice", "one"))]));
    assert!(again.form_metadata[0].is_duplicate);
    first.assert_replay_matches();
    second.assert_replay_matches();
}

#[test]
fn another_partition_keeps_a_deleted_definition_until_its_instances_there_end() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let mut keys = Vec::new();
    for job in ["one", "two"] {
        let deployed = first.deploy(&[("a.bpmn", job_process("order", job))]);
        keys.push(definition_key(&deployed));
        for (_, command) in sends(&deployed) {
            assert!(!second.process(command).is_rejected());
        }
    }
    let v2 = keys[1];
    let there = second.create("order", json!({}));
    assert!(there.get() > 0);

    let deleted = delete(&mut first, v2);
    assert_eq!(
        process_deletions(&first),
        [(Intent::Deleting, v2), (Intent::Deleted, v2)]
    );
    let sent = sends(&deleted);
    assert_eq!(sent.len(), 1);
    assert!(!second.process(sent[0].1.clone()).is_rejected());
    assert_eq!(process_deletions(&second), [(Intent::Deleting, v2)]);
    let latest = second.process(EngineRule::create_command("order", json!({})));
    assert_eq!(created_version(&latest), 1);

    let (job, _) = second.job("two");
    assert!(!second.complete(job, json!({})).is_rejected());
    assert_eq!(
        process_deletions(&second),
        [(Intent::Deleting, v2), (Intent::Deleted, v2)]
    );
    first.assert_replay_matches();
    second.assert_replay_matches();
}

fn migrate_work(rule: &mut EngineRule, instance: i64, target: i64) -> Outcome {
    use rill_protocol::MigrateProcessInstance;
    use rill_protocol::value::MigrationMappingInstruction;
    rule.process(Command::MigrateProcessInstance(MigrateProcessInstance {
        process_instance_key: Key(instance),
        target_process_definition_key: Key(target),
        mapping_instructions: vec![MigrationMappingInstruction {
            source_element_id: "Work".to_owned(),
            target_element_id: "Work".to_owned(),
        }],
    }))
}

#[test]
fn migrating_the_last_instance_away_deletes_its_definition_and_a_deleted_target_is_refused() {
    let mut rule = EngineRule::new();
    let v1 = definition_key(&rule.deploy(&[("a.bpmn", job_process("order", "one"))]));
    let v2 = definition_key(&rule.deploy(&[("a.bpmn", job_process("order", "two"))]));
    let on_v1 = create_by_key(&mut rule, v1).key().get();
    let on_v2 = create_by_key(&mut rule, v2).key().get();
    assert!(!delete(&mut rule, v1).is_rejected());
    assert_eq!(process_deletions(&rule), [(Intent::Deleting, v1)]);

    // Version 1 waits for its instance: no instance may move onto it.
    let refused = migrate_work(&mut rule, on_v2, v1);
    let (kind, reason) = rejection_of(&refused);
    assert_eq!(kind, RejectionType::NotFound);
    assert!(reason.contains("it is deleted"), "{reason}");

    // Its last instance moves to version 2: version 1 is deleted at once, and version 2
    // counts the instance (deleting it now waits for two).
    let migrated = migrate_work(&mut rule, on_v1, v2);
    assert!(!migrated.is_rejected(), "{:?}", migrated.response);
    assert_eq!(
        process_deletions(&rule),
        [(Intent::Deleting, v1), (Intent::Deleted, v1)]
    );
    assert!(!delete(&mut rule, v2).is_rejected());
    let (kind, reason) = rejection_of(&delete(&mut rule, v2));
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(reason.contains("2 active instance(s)"), "{reason}");

    // Both end on version 2, which is then deleted too.
    for (key, _) in rule
        .activate("one", 10)
        .into_iter()
        .chain(rule.activate("two", 10))
    {
        assert!(!rule.complete(key, json!({})).is_rejected());
    }
    assert_eq!(
        process_deletions(&rule),
        [
            (Intent::Deleting, v1),
            (Intent::Deleted, v1),
            (Intent::Deleting, v2),
            (Intent::Deleted, v2)
        ]
    );
    rule.assert_replay_matches();
}
