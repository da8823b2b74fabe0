//! Resource deletion: forms and decision requirements (with their decisions) deleted by
//! key, on this partition and on the others through the outbox; process definitions
//! are refused.

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
        variables: JsonValue(json!({"month": 1, "guestCount": 12})),
    }));
    let RecordValue::DecisionEvaluation(record) = evaluated.value() else {
        panic!("{:?}", evaluated.response);
    };
    assert_eq!(record.decision_version, 1);
    let by_deleted_key = rule.process(Command::EvaluateDecision(EvaluateDecision {
        decision: DecisionSelector::ByKey(Key(decision_keys[0])),
        variables: JsonValue(json!({"month": 1})),
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
fn a_process_definition_or_unknown_key_is_rejected_and_changes_nothing() {
    let mut rule = EngineRule::new();
    let deployed = deployment(&rule.deploy_fixture("two-rest-calls.bpmn"));
    let dmn = deployment(&rule.deploy_fixture("dmn/dish.dmn"));
    let before = rill_engine_api::state_digest(&rule.state).unwrap();

    let process = delete(
        &mut rule,
        deployed.processes_metadata[0].process_definition_key,
    );
    let (kind, reason) = rejection_of(&process);
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(
        reason.contains("deleting process definitions is not supported yet"),
        "{reason}"
    );
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
