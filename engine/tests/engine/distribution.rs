//! Deployments reach every partition through the outbox: sent at once, listed by
//! `pending_sends` until acknowledged, applied once and in order by the receiver.

use rill_engine::ProcessInstanceState;
use rill_engine_api::{Action, Engine};
use rill_protocol::{Command, PartitionId, RecordValue, RejectionType};
use serde_json::json;

use super::*;

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

fn pending(rule: &mut EngineRule) -> Vec<(PartitionId, Command)> {
    let mut out = Vec::new();
    rule.engine
        .pending_sends(&rule.state, 100, &mut out)
        .unwrap();
    out
}

#[test]
fn a_deployment_is_distributed_to_the_other_partitions() {
    let mut first = EngineRule::on_partition(1, 3);
    let mut second = EngineRule::on_partition(2, 3);
    let deployed = first.deploy_fixture("two-rest-calls.bpmn");
    let sent = sends(&deployed);
    assert_eq!(
        sent.iter().map(|(p, _)| p.get()).collect::<Vec<_>>(),
        vec![2, 3],
        "one send per other partition"
    );
    assert_eq!(pending(&mut first), sent, "listed again until acknowledged");

    // The receiver applies it: same definition key and version.
    let to_second = sent[0].1.clone();
    let applied = second.process(to_second.clone());
    assert!(!applied.is_rejected(), "{:?}", applied.response);
    let key_on_first = match deployed.value() {
        RecordValue::Deployment(d) => d.processes_metadata[0].process_definition_key,
        other => panic!("{other:?}"),
    };
    let instance = second.create("two-rest-calls", json!({}));
    assert_eq!(instance.partition(), PartitionId(2));
    let (job, record) = second.job("restCall");
    assert_eq!(record.process_definition_key, key_on_first);
    second.complete(job, json!({}));
    let (job, _) = second.job("restCall");
    second.complete(job, json!({}));
    assert_eq!(
        second.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );

    // A second delivery (the sender retried) is recognised and changes nothing.
    let before = rill_engine_api::state_digest(&second.state).unwrap();
    let again = second.process(to_second);
    assert_eq!(
        again.rejection().rejection_type,
        RejectionType::AlreadyExists
    );
    assert_eq!(
        rill_engine_api::state_digest(&second.state).unwrap(),
        before
    );

    // The acknowledgement empties that part of the outbox; partition 3 still waits.
    let sequence = match &sent[0].1 {
        Command::FromPartition(c) => c.sequence,
        other => panic!("{other:?}"),
    };
    let ack = first.process(Command::AcknowledgeSend {
        target: PartitionId(2),
        sequence,
    });
    assert!(!ack.is_rejected(), "{:?}", ack.response);
    assert_eq!(
        pending(&mut first)
            .iter()
            .map(|(p, _)| p.get())
            .collect::<Vec<_>>(),
        vec![3]
    );
    let twice = first.process(Command::AcknowledgeSend {
        target: PartitionId(2),
        sequence,
    });
    assert_eq!(twice.rejection().rejection_type, RejectionType::NotFound);

    first.assert_replay_matches();
    second.assert_replay_matches();
}

#[test]
fn distributed_commands_are_applied_in_order() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let one = sends(&first.deploy_fixture("two-rest-calls.bpmn"));
    let two = sends(&first.deploy_fixture("wait-timer.bpmn"));
    // The second arrives first: refused, the sender will send both again in order.
    let early = second.process(two[0].1.clone());
    assert_eq!(
        early.rejection().rejection_type,
        RejectionType::InvalidState
    );
    assert!(!second.process(one[0].1.clone()).is_rejected());
    assert!(!second.process(two[0].1.clone()).is_rejected());
    second.create("wait-timer", json!({}));
    // A redeployment of the same XML is a duplicate everywhere.
    let again = sends(&first.deploy_fixture("two-rest-calls.bpmn"));
    assert!(!second.process(again[0].1.clone()).is_rejected());
    assert_eq!(second.process_definitions(None).len(), 2);
    second.assert_replay_matches();
}

#[test]
fn a_single_partition_sends_nothing() {
    let mut rule = EngineRule::new();
    let deployed = rule.deploy_fixture("two-rest-calls.bpmn");
    assert!(sends(&deployed).is_empty());
    assert!(pending(&mut rule).is_empty());
}

/// Applies on `to` every send of `outcome` addressed to it; returns the outcomes.
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

fn receive_task_model() -> String {
    super::elements::model(
        &[
            r#"<bpmn:startEvent id="s" />"#,
            r#"<bpmn:receiveTask id="r" messageRef="M" />"#,
            r#"<bpmn:endEvent id="e" />"#,
            &super::elements::flow("f0", "s", "r"),
            &super::elements::flow("f1", "r", "e"),
        ]
        .concat(),
    )
}

#[test]
fn a_message_published_on_its_partition_reaches_an_instance_on_another() {
    // Correlation key "a" belongs to partition 2 of 2; the instance runs on partition 1.
    assert_eq!(rill_protocol::message_partition("a", 2), PartitionId(2));
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let deployed = first.deploy_xml(&receive_task_model());
    deliver(&deployed, &mut second);

    let created = first.process(EngineRule::create_command("p", json!({"key": "a"})));
    let instance = created.key();
    // The subscription is opened on the message's partition.
    deliver(&created, &mut second);
    assert!(
        second
            .records()
            .of_type(rill_protocol::ValueType::MessageSubscription)
            .with_intent(rill_protocol::Intent::Created)
            .exists()
    );

    let published = second.publish("msg", "a", 0, json!({"paid": true}));
    let correlated = deliver(&published, &mut first);
    assert_eq!(correlated.len(), 1);
    assert_eq!(
        first.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert_eq!(first.variables(instance)["paid"], json!(true));

    // The instance's partition acknowledges: the message side is done.
    let sequence = match &sends(&published)[0].1 {
        Command::FromPartition(c) => c.sequence,
        other => panic!("{other:?}"),
    };
    let ack = second.process(Command::AcknowledgeSend {
        target: PartitionId(1),
        sequence,
    });
    assert!(!ack.is_rejected());
    assert!(ack.records.iter().any(|r| r.value_type()
        == rill_protocol::ValueType::MessageSubscription
        && r.intent == rill_protocol::Intent::Correlated));
    first.assert_replay_matches();
    second.assert_replay_matches();
}

#[test]
fn a_buffered_message_correlates_when_a_remote_subscription_opens_and_closing_reaches_it() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let deployed = first.deploy_xml(&receive_task_model());
    deliver(&deployed, &mut second);
    second.publish("msg", "a", 60_000, json!({"early": 1}));

    let created = first.process(EngineRule::create_command("p", json!({"key": "a"})));
    let opened = deliver(&created, &mut second);
    // The buffered message goes back to the instance at once.
    for outcome in &opened {
        deliver(outcome, &mut first);
    }
    assert_eq!(
        first.instance_state(created.key()).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert_eq!(first.variables(created.key())["early"], json!(1));

    // Another instance waits, then is cancelled: its subscription is closed remotely.
    let waiting = first.process(EngineRule::create_command("p", json!({"key": "a"})));
    deliver(&waiting, &mut second);
    let cancelled = first.process(Command::CancelProcessInstance {
        process_instance_key: waiting.key(),
    });
    deliver(&cancelled, &mut second);
    assert!(
        second
            .records()
            .of_type(rill_protocol::ValueType::MessageSubscription)
            .with_intent(rill_protocol::Intent::Deleted)
            .exists()
    );
    // A later message finds nobody waiting.
    let late = second.publish("msg", "a", 0, json!({}));
    assert!(sends(&late).is_empty());
    first.assert_replay_matches();
    second.assert_replay_matches();
}

#[test]
fn forms_reach_the_other_partitions_with_their_deployment() {
    let mut first = EngineRule::on_partition(1, 3);
    let mut third = EngineRule::on_partition(3, 3);
    let process = super::elements::model(
        r#"<bpmn:startEvent id="s" /><bpmn:userTask id="t"><bpmn:extensionElements><zeebe:userTask /><zeebe:formDefinition formId="f" /></bpmn:extensionElements></bpmn:userTask>
        <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t" />"#,
    );
    let deployed = first.deploy(&[
        ("p.bpmn", process.into_bytes()),
        ("f.form", br#"{"id": "f", "components": []}"#.to_vec()),
    ]);
    let form_key = match deployed.value() {
        RecordValue::Deployment(d) => d.form_metadata[0].form_key,
        other => panic!("{other:?}"),
    };
    let sent = sends(&deployed);
    let applied = third.process(sent[1].1.clone());
    assert!(!applied.is_rejected(), "{:?}", applied.response);
    assert!(
        third
            .records()
            .of_type(rill_protocol::ValueType::Form)
            .exists(),
        "FORM CREATED on the receiver"
    );
    third.create("p", json!({}));
    let task = third
        .records()
        .of_type(rill_protocol::ValueType::UserTask)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::UserTask(t) => Some(t.clone()),
            _ => None,
        })
        .expect("a user task on the third partition");
    assert_eq!(
        task.form_key, form_key,
        "the form found with the key partition 1 gave it"
    );
    third.assert_replay_matches();
}

#[test]
fn a_partition_added_later_gets_every_deployment_in_order_with_the_same_keys() {
    let mut first = EngineRule::on_partition(1, 2);
    let process = |name: &str| {
        super::elements::model(&format!(
            r#"<bpmn:startEvent id="s" name="{name}" /><bpmn:userTask id="t"><bpmn:extensionElements><zeebe:userTask /><zeebe:formDefinition formId="f" /></bpmn:extensionElements></bpmn:userTask>
            <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t" />"#
        ))
    };
    let v1 = first.deploy(&[
        ("p.bpmn", process("one").into_bytes()),
        ("f.form", br#"{"id": "f", "components": []}"#.to_vec()),
    ]);
    let v2 = first.deploy(&[("p.bpmn", process("two").into_bytes())]);
    let decisions = first.deploy(&[("dish.dmn", fixture("dmn/dish.dmn"))]);
    assert!(!decisions.is_rejected(), "{:?}", decisions.response);
    let deleted = first.deploy(&[("g.form", br#"{"id": "g", "components": []}"#.to_vec())]);
    let deleted_key = match deleted.value() {
        RecordValue::Deployment(d) => d.form_metadata[0].form_key,
        other => panic!("{other:?}"),
    };
    let deletion = first.process(Command::DeleteResource {
        resource_key: rill_protocol::Key(deleted_key),
    });
    assert!(!deletion.is_rejected(), "{:?}", deletion.response);
    let keys = |outcome: &Outcome| match outcome.value() {
        RecordValue::Deployment(d) => d.processes_metadata[0].process_definition_key,
        other => panic!("{other:?}"),
    };
    let (v1_key, v2_key) = (keys(&v1), keys(&v2));

    // Partition 3 is added: partition 1 sends it what it made, oldest first.
    first.partition_count = 3;
    let engine_command = first
        .engine
        .partitions_added(PartitionId(1), PartitionId(3), PartitionId(3))
        .expect("partition 1 hands its deployments on");
    let redistributed = first.process(engine_command);
    let sent = sends(&redistributed);
    assert_eq!(sent.len(), 5, "four deployments and a deletion: {sent:?}");
    assert!(sent.iter().all(|(p, _)| *p == PartitionId(3)));
    let mut third = EngineRule::on_partition(3, 3);
    deliver(&redistributed, &mut third);

    // The same definitions, with their versions and keys; the deleted one is gone.
    let definitions = third.process_definitions(None);
    let mut found: Vec<(i32, i64)> = definitions
        .iter()
        .map(|d| (d.version, d.key.get()))
        .collect();
    found.sort_unstable();
    assert_eq!(found, vec![(1, v1_key), (2, v2_key)], "{definitions:?}");
    // New instances take the latest version, and its form with partition 1's key.
    let instance = third.create("p", json!({}));
    assert_eq!(instance.partition(), PartitionId(3));
    let task = third
        .records()
        .of_type(rill_protocol::ValueType::UserTask)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::UserTask(t) => Some(t.clone()),
            _ => None,
        })
        .expect("a user task on the added partition");
    assert_eq!(task.process_definition_key, v2_key);
    let form_key = match v1.value() {
        RecordValue::Deployment(d) => d.form_metadata[0].form_key,
        other => panic!("{other:?}"),
    };
    assert_eq!(task.form_key, form_key);
    assert!(
        third
            .records()
            .of_type(rill_protocol::ValueType::Decision)
            .exists(),
        "the decisions reached the added partition"
    );
    assert!(
        third
            .records()
            .of_type(rill_protocol::ValueType::Form)
            .with_intent(rill_protocol::Intent::Deleted)
            .exists(),
        "the deleted form is deleted on the added partition too"
    );

    // A later deployment follows the redistributed ones to partition 3.
    let later = first.deploy_fixture("two-rest-calls.bpmn");
    assert_eq!(
        sends(&later)
            .iter()
            .map(|(p, _)| p.get())
            .collect::<Vec<_>>(),
        vec![2, 3]
    );
    deliver(&later, &mut third);
    third.create("two-rest-calls", json!({}));
    first.assert_replay_matches();
    third.assert_replay_matches();
}
