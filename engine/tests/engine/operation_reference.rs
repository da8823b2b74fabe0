//! A client's operation reference (`Command::Referenced`): the command's record, its
//! rejection and every record that follows from it carry the reference; other records,
//! and the commands sent on to other partitions, carry -1.

use rill_engine_api::{Action, Engine};
use rill_protocol::{
    Command, Intent, Key, ModifyProcessInstance, NO_OPERATION_REFERENCE, PartitionId, RecordType,
    RejectionType, ValueType,
};
use serde_json::json;

use super::elements::{flow, model, task};
use super::*;

/// start -> A (job "a") -> B (job "b") -> end.
fn two_tasks(rule: &mut EngineRule) -> Key {
    rule.deploy_xml(&model(
        &[
            r#"<bpmn:startEvent id="s" />"#.to_owned(),
            task("A", "a"),
            task("B", "b"),
            r#"<bpmn:endEvent id="e" />"#.to_owned(),
            flow("f1", "s", "A"),
            flow("f2", "A", "B"),
            flow("f3", "B", "e"),
        ]
        .concat(),
    ));
    rule.create("p", json!({}))
}

fn references(outcome: &Outcome) -> Vec<i64> {
    outcome
        .records
        .iter()
        .map(|r| r.operation_reference)
        .collect()
}

#[test]
fn a_referenced_cancel_writes_the_reference_on_every_record_it_leads_to() {
    let mut rule = EngineRule::new();
    let instance = two_tasks(&mut rule);
    let outcome = rule.process(
        Command::CancelProcessInstance {
            process_instance_key: instance,
        }
        .referenced(Some(123)),
    );
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(outcome.records[0].record_type, RecordType::Command);
    assert_eq!(outcome.records[0].intent, Intent::Cancel);
    // The command, A's and the instance's termination, the job's cancellation.
    assert!(outcome.records.len() > 4, "{:?}", outcome.records);
    assert!(
        outcome
            .records
            .iter()
            .any(|r| r.value_type() == ValueType::Job && r.intent == Intent::Canceled),
        "the job is canceled by the same command"
    );
    assert_eq!(references(&outcome), vec![123; outcome.records.len()]);
    rule.assert_replay_matches();
}

#[test]
fn a_referenced_modification_writes_the_reference_on_every_record_it_leads_to() {
    let mut rule = EngineRule::new();
    let instance = two_tasks(&mut rule);
    let a = rule
        .records()
        .of_type(ValueType::ProcessInstance)
        .element("A")
        .with_intent(Intent::ElementActivating)
        .records[0]
        .key;
    let outcome = rule.process(
        Command::ModifyProcessInstance(ModifyProcessInstance {
            process_instance_key: instance,
            activate_instructions: vec![rill_protocol::ActivateInstruction {
                element_id: "B".into(),
                ancestor_element_instance_key: Key::NONE,
                variable_instructions: Vec::new(),
            }],
            terminate_instructions: vec![a],
        })
        .referenced(Some(7)),
    );
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let shape: Vec<_> = outcome
        .records
        .iter()
        .map(|r| (r.value_type(), r.intent))
        .collect();
    assert!(shape.contains(&(ValueType::ProcessInstanceModification, Intent::Modified)));
    assert!(
        shape.contains(&(ValueType::Job, Intent::Created)),
        "{shape:?}"
    );
    assert_eq!(references(&outcome), vec![7; outcome.records.len()]);

    // What happens later, by other commands, carries no reference.
    let (job, _) = rule.job("b");
    let completed = rule.complete(job, json!({}));
    assert_eq!(
        references(&completed),
        vec![NO_OPERATION_REFERENCE; completed.records.len()]
    );
    rule.assert_replay_matches();
}

#[test]
fn a_referenced_command_that_is_rejected_writes_the_reference_on_the_rejection() {
    let mut rule = EngineRule::new();
    let outcome = rule.process(
        Command::CancelProcessInstance {
            process_instance_key: Key(2251799813685249),
        }
        .referenced(Some(55)),
    );
    assert_eq!(rejection_of(&outcome).0, RejectionType::NotFound);
    assert_eq!(outcome.records.len(), 1);
    assert_eq!(outcome.records[0].record_type, RecordType::CommandRejection);
    assert_eq!(outcome.records[0].intent, Intent::Cancel);
    assert_eq!(outcome.records[0].operation_reference, 55);
    rule.assert_replay_matches();
}

#[test]
fn commands_without_a_reference_write_minus_one() {
    let mut rule = EngineRule::new();
    let instance = two_tasks(&mut rule);
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected());
    assert!(
        rule.log
            .iter()
            .all(|(_, r)| r.operation_reference == NO_OPERATION_REFERENCE),
        "every record of the deployment, creation and cancellation carries -1"
    );
}

#[test]
fn a_nested_reference_is_rejected_and_changes_nothing() {
    let mut rule = EngineRule::new();
    let instance = two_tasks(&mut rule);
    let nested = Command::CancelProcessInstance {
        process_instance_key: instance,
    }
    .referenced(Some(1))
    .referenced(Some(2));
    let outcome = rule.process(nested);
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(reason.contains("one operation reference"), "{reason}");
    assert_eq!(outcome.records.len(), 1);
    let rejection = &outcome.records[0];
    assert_eq!(rejection.record_type, RecordType::CommandRejection);
    // Described as the innermost command, with the outer reference.
    assert_eq!(rejection.intent, Intent::Cancel);
    assert_eq!(rejection.key, instance);
    assert_eq!(rejection.operation_reference, 2);
    assert!(rule.instance_state(instance).is_some(), "still running");
    assert_eq!(
        rule.records()
            .of_type(ValueType::ProcessInstance)
            .with_intent(Intent::ElementTerminated)
            .count(),
        0
    );

    // A reference a record cannot hold is refused the same way.
    let too_large = rule.process(
        Command::CancelProcessInstance {
            process_instance_key: instance,
        }
        .referenced(Some(u64::MAX)),
    );
    assert_eq!(rejection_of(&too_large).0, RejectionType::InvalidArgument);
    assert_eq!(
        too_large.records[0].operation_reference,
        NO_OPERATION_REFERENCE
    );
    rule.assert_replay_matches();
}

#[test]
fn a_processing_error_record_carries_the_reference() {
    let rule = EngineRule::new();
    let command = Command::CancelProcessInstance {
        process_instance_key: Key(2251799813685249),
    };
    let plain = rule.engine.processing_error_record(&command, "broken");
    assert_eq!(plain.operation_reference, NO_OPERATION_REFERENCE);
    let referenced = rule
        .engine
        .processing_error_record(&command.referenced(Some(9)), "broken");
    assert_eq!(referenced.rejection_type, RejectionType::ProcessingError);
    assert_eq!(referenced.intent, Intent::Cancel);
    assert_eq!(referenced.operation_reference, 9);
}

#[test]
fn the_reference_stays_on_the_partition_that_processed_the_command() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let deployed = first.deploy_xml(&model(
        &[
            r#"<bpmn:startEvent id="s" />"#.to_owned(),
            r#"<bpmn:endEvent id="e" />"#.to_owned(),
            flow("f1", "s", "e"),
        ]
        .concat(),
    ));
    for action in &deployed.actions {
        if let Action::Send { command, .. } = action {
            assert!(!second.process(command.clone()).is_rejected());
        }
    }
    let rill_protocol::RecordValue::Deployment(deployment) = deployed.value() else {
        panic!("{:?}", deployed.value());
    };
    let definition = deployment.processes_metadata[0].process_definition_key;

    let deleted = first.process(
        Command::DeleteResource {
            resource_key: Key(definition),
        }
        .referenced(Some(31)),
    );
    assert!(!deleted.is_rejected(), "{:?}", deleted.response);
    assert_eq!(references(&deleted), vec![31; deleted.records.len()]);
    let sent: Vec<_> = deleted
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { partition, command } => Some((*partition, command.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, PartitionId(2));
    assert_eq!(sent[0].1.operation_reference(), None, "{:?}", sent[0].1);
    let applied = second.process(sent[0].1.clone());
    assert!(!applied.is_rejected(), "{:?}", applied.response);
    assert_eq!(
        references(&applied),
        vec![NO_OPERATION_REFERENCE; applied.records.len()]
    );
    first.assert_replay_matches();
    second.assert_replay_matches();
}
