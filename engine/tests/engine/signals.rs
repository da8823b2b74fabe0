//! Signals: start events (process and event subprocess, interrupting or not),
//! intermediate catch events, boundary events (interrupting or not), the event-based
//! gateway, throw and end events, and a broadcast reaching other partitions. Records are
//! checked against Zeebe's `SIGNAL` and `SIGNAL_SUBSCRIPTION` shapes; every test ends with
//! a replay of its log.

use rill_engine::ProcessInstanceState;
use rill_engine_api::Action;
use rill_protocol::value::{BpmnEventType, SignalRecord, SignalSubscriptionRecord};
use rill_protocol::{
    BroadcastSignal, Command, Intent, JsonValue, Key, PartitionId, RecordValue, RejectionType,
    ValueType,
};
use serde_json::{Value, json};

use super::breadth::{cancel, state};
use super::*;

fn broadcast(rule: &mut EngineRule, name: &str, variables: Value) -> Outcome {
    let outcome = rule.process(Command::BroadcastSignal(BroadcastSignal {
        signal_name: name.to_owned(),
        variables: JsonValue::from(variables),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    outcome
}

/// `(key, record)` of the signal subscriptions written with `intent`, in log order.
fn subscriptions(rule: &EngineRule, intent: Intent) -> Vec<(Key, SignalSubscriptionRecord)> {
    rule.records()
        .of_type(ValueType::SignalSubscription)
        .with_intent(intent)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::SignalSubscription(v) => Some((r.key, v.clone())),
            _ => None,
        })
        .collect()
}

/// The catch events with an open subscription (created and not deleted), sorted.
fn open_subscriptions(rule: &EngineRule) -> Vec<String> {
    let deleted: Vec<Key> = subscriptions(rule, Intent::Deleted)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let mut open: Vec<String> = subscriptions(rule, Intent::Created)
        .into_iter()
        .filter(|(k, _)| !deleted.contains(k))
        .map(|(_, s)| s.catch_event_id)
        .collect();
    open.sort();
    open
}

fn count(rule: &EngineRule, element: &str, intent: Intent) -> usize {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element)
        .with_intent(intent)
        .count()
}

/// The key of the first activation of an element.
fn element_key(rule: &EngineRule, element: &str) -> Key {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element)
        .with_intent(Intent::ElementActivating)
        .records
        .first()
        .map(|r| r.key)
        .unwrap_or_else(|| panic!("{element} was never entered"))
}

fn process_records(outcome: &Outcome) -> usize {
    outcome
        .records
        .iter()
        .filter(|r| r.value_type() == ValueType::ProcessInstance)
        .count()
}

#[test]
fn a_broadcast_writes_zeebes_records_and_answers_with_its_key() {
    let mut rule = EngineRule::new();
    let outcome = broadcast(&mut rule, "nobody-listens", json!({"a": 1}));
    let shape: Vec<(ValueType, Intent)> = outcome
        .records
        .iter()
        .map(|r| (r.value_type(), r.intent))
        .collect();
    assert_eq!(
        shape,
        vec![
            (ValueType::Signal, Intent::Broadcast),
            (ValueType::Signal, Intent::Broadcasted)
        ]
    );
    let broadcasted = &outcome.records[1];
    assert_eq!(outcome.key(), broadcasted.key);
    assert_eq!(
        broadcasted.value,
        RecordValue::Signal(SignalRecord {
            signal_name: "nobody-listens".into(),
            variables: JsonValue::from(json!({"a": 1})),
            tenant_id: "<default>".into(),
        })
    );
    rule.assert_replay_matches();
}

#[test]
fn a_broadcast_without_a_name_or_with_bad_variables_is_rejected_and_changes_nothing() {
    let mut rule = EngineRule::new();
    let before = rill_engine_api::state_digest(&rule.state).unwrap();
    for (name, variables) in [(" ", json!({})), ("go", json!([1, 2]))] {
        let outcome = rule.process(Command::BroadcastSignal(BroadcastSignal {
            signal_name: name.into(),
            variables: JsonValue::from(variables),
        }));
        let (rejection_type, reason) = rejection_of(&outcome);
        assert_eq!(rejection_type, RejectionType::InvalidArgument, "{reason}");
        assert_eq!(outcome.records.len(), 1);
    }
    let (_, reason) = rejection_of(&rule.process(Command::BroadcastSignal(BroadcastSignal {
        signal_name: "go".into(),
        variables: JsonValue::from(json!("text")),
    })));
    assert!(reason.contains("the signal's variables"), "{reason}");
    assert_eq!(rill_engine_api::state_digest(&rule.state).unwrap(), before);
}

#[test]
fn boundary_events_interrupting_and_not() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-boundary.bpmn");
    let instance = rule.create("signal-boundary", json!({"region": "eu"}));
    let work = element_key(&rule, "Work");

    // Both boundary events subscribe, held by the task; the second name is an
    // expression evaluated on entry.
    let created = subscriptions(&rule, Intent::Created);
    let names: Vec<(&str, &str, i64)> = created
        .iter()
        .map(|(_, s)| {
            (
                s.catch_event_id.as_str(),
                s.signal_name.as_str(),
                s.catch_event_instance_key,
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("Aborted", "abort-all", work.get()),
            ("Pinged", "ping-eu", work.get())
        ]
    );
    assert_eq!(created[0].1.bpmn_process_id, "signal-boundary");

    // Another name, or the expression's text, catches nothing.
    for name in ["ping-us", "=\"ping-\" + region"] {
        let outcome = broadcast(&mut rule, name, json!({}));
        assert_eq!(process_records(&outcome), 0);
    }

    // Non-interrupting: entered beside the task, once per signal, with its variables.
    broadcast(&mut rule, "ping-eu", json!({"note": "first"}));
    broadcast(&mut rule, "ping-eu", json!({"note": "second"}));
    assert_eq!(count(&rule, "Pinged", Intent::ElementCompleted), 2);
    assert_eq!(count(&rule, "PingedEnd", Intent::ElementCompleted), 2);
    assert_eq!(rule.variables(instance)["lastNote"], json!("second"));
    assert_eq!(count(&rule, "Work", Intent::ElementTerminated), 0);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);

    // Interrupting: the task is terminated (its job cancelled, both subscriptions
    // closed), the boundary event is entered.
    let outcome = broadcast(&mut rule, "abort-all", json!({"why": "recall"}));
    assert!(
        outcome
            .records
            .iter()
            .any(|r| r.value_type() == ValueType::Job && r.intent == Intent::Canceled)
    );
    assert_eq!(count(&rule, "Work", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "AbortedEnd", Intent::ElementCompleted), 1);
    let aborted = rule
        .records()
        .of_type(ValueType::ProcessInstance)
        .element("Aborted")
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some(v.bpmn_event_type),
            _ => None,
        });
    assert_eq!(aborted, Some(BpmnEventType::Signal));
    assert!(open_subscriptions(&rule).is_empty());
    assert_eq!(rule.variables(instance)["why"], json!("recall"));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);

    // Nothing waits any more.
    let outcome = broadcast(&mut rule, "abort-all", json!({}));
    assert_eq!(process_records(&outcome), 0);
    rule.assert_replay_matches();
}

#[test]
fn completing_the_task_closes_its_boundary_subscriptions() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-boundary.bpmn");
    let instance = rule.create("signal-boundary", json!({"region": "eu"}));
    let (job, _) = rule.job("work");
    rule.complete(job, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(subscriptions(&rule, Intent::Deleted).len(), 2);
    assert!(open_subscriptions(&rule).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn an_intermediate_catch_event_waits_for_its_signal() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-catch.bpmn");
    let first = rule.create("signal-catch", json!({}));
    let second = rule.create("signal-catch", json!({}));
    assert_eq!(open_subscriptions(&rule), vec!["WaitForGo", "WaitForGo"]);
    let wait = element_key(&rule, "WaitForGo");
    assert_eq!(
        subscriptions(&rule, Intent::Created)[0]
            .1
            .catch_event_instance_key,
        wait.get()
    );

    broadcast(&mut rule, "stop", json!({}));
    assert_eq!(count(&rule, "WaitForGo", Intent::ElementCompleted), 0);

    // One broadcast reaches every waiting instance, with its variables.
    broadcast(&mut rule, "go", json!({"speed": 3}));
    assert_eq!(count(&rule, "WaitForGo", Intent::ElementCompleted), 2);
    for instance in [first, second] {
        assert_eq!(rule.variables(instance)["speed"], json!(3));
    }
    assert!(open_subscriptions(&rule).is_empty());
    assert_eq!(complete_all(&mut rule, "after-go"), 2);
    assert_eq!(state(&mut rule, first), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

fn complete_all(rule: &mut EngineRule, job_type: &str) -> usize {
    let jobs = rule.activate(job_type, 10);
    for (key, _) in &jobs {
        let outcome = rule.complete(*key, json!({}));
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    }
    jobs.len()
}

#[test]
fn cancelling_while_waiting_closes_the_subscription() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-catch.bpmn");
    let instance = rule.create("signal-catch", json!({}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(subscriptions(&rule, Intent::Deleted).len(), 1);
    let outcome = broadcast(&mut rule, "go", json!({}));
    assert_eq!(process_records(&outcome), 0);
    rule.assert_replay_matches();
}

#[test]
fn the_event_based_gateway_takes_the_signal_or_the_timer() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-catch.bpmn");

    // The signal first: the gateway takes its flow, the timer is cancelled.
    let signalled = rule.create("signal-gateway", json!({}));
    let race = element_key(&rule, "Race");
    assert_eq!(
        subscriptions(&rule, Intent::Created)[0]
            .1
            .catch_event_instance_key,
        race.get()
    );
    broadcast(&mut rule, "proceed", json!({"reason": "approved"}));
    assert_eq!(count(&rule, "Proceeded", Intent::ElementCompleted), 1);
    assert_eq!(
        rule.variables(signalled)["proceedReason"],
        json!("approved")
    );
    assert_eq!(state(&mut rule, signalled), ProcessInstanceState::Completed);
    assert!(
        rule.records()
            .of_type(ValueType::Timer)
            .with_intent(Intent::Canceled)
            .exists()
    );

    // The timer first: the signal subscription is closed.
    let timed = rule.create("signal-gateway", json!({}));
    rule.advance(3_600_000);
    rule.fire_due();
    assert_eq!(count(&rule, "GaveUp", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, timed), ProcessInstanceState::Completed);
    assert!(open_subscriptions(&rule).is_empty());
    let outcome = broadcast(&mut rule, "proceed", json!({}));
    assert_eq!(process_records(&outcome), 0);
    rule.assert_replay_matches();
}

#[test]
fn signal_start_events_of_the_process_and_of_event_subprocesses() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-start.bpmn");

    // The deployment subscribes the start event, held by no instance.
    let created = subscriptions(&rule, Intent::Created);
    assert_eq!(created.len(), 1);
    let start = &created[0].1;
    assert_eq!(start.catch_event_id, "OrderArrived");
    assert_eq!(start.catch_event_instance_key, -1);
    assert_eq!(start.signal_name, "order-arrived");
    // No none start event: it cannot be created by a command.
    assert!(
        rule.process(EngineRule::create_command("signal-start", json!({})))
            .is_rejected()
    );

    // A broadcast creates one instance with the signal's variables.
    let outcome = broadcast(&mut rule, "order-arrived", json!({"orderId": 7}));
    let instance = outcome
        .records
        .iter()
        .find(|r| {
            r.intent == Intent::ElementActivating
                && matches!(&r.value, RecordValue::ProcessInstance(v) if v.element_id == "signal-start")
        })
        .map(|r| r.key)
        .expect("an instance");
    assert_eq!(rule.variables(instance)["orderId"], json!(7));
    let start_type = rule
        .records()
        .of_type(ValueType::ProcessInstance)
        .element("OrderArrived")
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some(v.bpmn_event_type),
            _ => None,
        });
    assert_eq!(start_type, Some(BpmnEventType::Signal));
    // The instance subscribes its event subprocesses' start events.
    assert_eq!(
        open_subscriptions(&rule),
        vec!["OrderArrived", "ShutdownStart", "StatusStart"]
    );

    // Non-interrupting event subprocess: runs beside the task, once per signal.
    broadcast(&mut rule, "status-requested", json!({}));
    broadcast(&mut rule, "status-requested", json!({}));
    assert_eq!(count(&rule, "StatusRequested", Intent::ElementActivated), 2);
    assert_eq!(complete_all(&mut rule, "report"), 2);
    assert_eq!(count(&rule, "Handle", Intent::ElementTerminated), 0);

    // Interrupting event subprocess: the task is terminated, the instance completes.
    broadcast(&mut rule, "shutdown", json!({}));
    assert_eq!(count(&rule, "Handle", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "ShutDown", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(open_subscriptions(&rule), vec!["OrderArrived"]);
    rule.assert_replay_matches();
}

#[test]
fn a_new_version_replaces_the_signal_start_subscription() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-start.bpmn");
    let xml = String::from_utf8(fixture("elements/signal-start.bpmn")).unwrap();
    let v2 = xml
        .replace("id=\"Handled\"", "id=\"HandledV2\"")
        .replace("targetRef=\"Handled\"", "targetRef=\"HandledV2\"");
    rule.deploy_xml(&v2);
    let deleted = subscriptions(&rule, Intent::Deleted);
    assert_eq!(deleted.len(), 1);
    let created = subscriptions(&rule, Intent::Created);
    assert_eq!(created.len(), 2);
    assert_eq!(deleted[0].0, created[0].0);
    assert_ne!(
        created[0].1.process_definition_key,
        created[1].1.process_definition_key
    );

    // A duplicate deployment changes nothing.
    rule.deploy_xml(&v2);
    assert_eq!(subscriptions(&rule, Intent::Created).len(), 2);

    let outcome = broadcast(&mut rule, "order-arrived", json!({}));
    let versions: Vec<i32> = outcome
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v)
                if v.element_id == "signal-start" && r.intent == Intent::ElementActivating =>
            {
                Some(v.version)
            }
            _ => None,
        })
        .collect();
    assert_eq!(versions, vec![2]);
    rule.assert_replay_matches();
}

#[test]
fn throw_and_end_events_broadcast_with_their_input_mappings() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-catch.bpmn");
    rule.deploy_fixture("elements/signal-throw.bpmn");
    let waiting = rule.create("signal-catch", json!({}));
    let thrower = rule.create("signal-throw", json!({"orderId": 12, "secret": true}));

    // The thrower runs to its end; the waiting instance caught the signal in the
    // same command, after the thrower went on.
    assert_eq!(state(&mut rule, thrower), ProcessInstanceState::Completed);
    assert_eq!(count(&rule, "WaitForGo", Intent::ElementCompleted), 1);
    assert_eq!(rule.variables(waiting)["orderId"], json!(12));
    assert!(rule.variables(waiting).get("secret").is_none());

    let signals: Vec<SignalRecord> = rule
        .records()
        .of_type(ValueType::Signal)
        .with_intent(Intent::Broadcasted)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Signal(v) => Some(v.clone()),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = signals.iter().map(|s| s.signal_name.as_str()).collect();
    assert_eq!(names, vec!["go", "done-12"]);
    assert_eq!(
        signals[0].variables,
        JsonValue::from(json!({"orderId": 12}))
    );
    assert_eq!(signals[1].variables, JsonValue::from(json!({})));

    // The throw event's lifecycle, then the broadcast.
    let shape = rule
        .records()
        .events()
        .records
        .iter()
        .filter(|r| {
            r.value_type() == ValueType::Signal
                || matches!(&r.value, RecordValue::ProcessInstance(v) if v.element_id == "SayGo")
        })
        .map(|r| (r.value_type(), r.intent))
        .collect::<Vec<_>>();
    assert_eq!(
        shape[..5],
        [
            (ValueType::ProcessInstance, Intent::ElementActivating),
            (ValueType::ProcessInstance, Intent::ElementActivated),
            (ValueType::ProcessInstance, Intent::ElementCompleting),
            (ValueType::ProcessInstance, Intent::ElementCompleted),
            (ValueType::Signal, Intent::Broadcasted),
        ]
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
fn a_broadcast_reaches_every_partition_and_starts_instances_only_where_it_was_made() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let deployed = first.deploy_fixture("elements/signal-start.bpmn");
    let deployment = sends(&deployed)[0].1.clone();
    assert!(!second.process(deployment).is_rejected());
    // Both partitions subscribe the start event.
    assert_eq!(open_subscriptions(&second), vec!["OrderArrived"]);
    second.deploy_fixture("elements/signal-catch.bpmn");
    let waiting = second.create("signal-catch", json!({}));

    let outcome = broadcast(&mut first, "order-arrived", json!({"orderId": 1}));
    let sent = sends(&outcome);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, PartitionId(2));
    let Command::FromPartition(carried) = &sent[0].1 else {
        panic!("{:?}", sent[0].1);
    };
    assert_eq!(carried.value_type, ValueType::Signal);
    assert_eq!(carried.key, outcome.key());
    let distributing = outcome
        .records
        .iter()
        .filter(|r| r.value_type() == ValueType::CommandDistribution)
        .count();
    assert_eq!(distributing, 1);
    assert_eq!(count(&first, "signal-start", Intent::ElementActivated), 1);

    // The receiver writes the same broadcast and starts no instance of its own.
    let received = second.process(sent[0].1.clone());
    assert!(!received.is_rejected(), "{:?}", received.response);
    let broadcasted = received
        .records
        .iter()
        .find(|r| r.value_type() == ValueType::Signal)
        .expect("a broadcast record");
    assert_eq!(broadcasted.key, outcome.key());
    assert_eq!(count(&second, "signal-start", Intent::ElementActivated), 0);

    // A catch event there is reached by a signal broadcast elsewhere.
    let outcome = broadcast(&mut first, "go", json!({"from": 1}));
    let sent = sends(&outcome);
    second.process(sent[0].1.clone());
    assert_eq!(count(&second, "WaitForGo", Intent::ElementCompleted), 1);
    assert_eq!(second.variables(waiting)["from"], json!(1));

    // Until acknowledged, the outbox lists the signal again.
    let mut pending = Vec::new();
    rill_engine_api::Engine::pending_sends(&mut first.engine, &first.state, 10, &mut pending)
        .unwrap();
    let signals = pending
        .iter()
        .filter(
            |(_, c)| matches!(c, Command::FromPartition(c) if c.value_type == ValueType::Signal),
        )
        .count();
    assert_eq!(signals, 2);
    first.assert_replay_matches();
    second.assert_replay_matches();
}

#[test]
fn cancelling_an_instance_closes_its_event_subprocess_subscriptions() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/signal-start.bpmn");
    let outcome = broadcast(&mut rule, "order-arrived", json!({}));
    let instance = outcome
        .records
        .iter()
        .find(|r| {
            r.intent == Intent::ElementActivating
                && matches!(&r.value, RecordValue::ProcessInstance(v) if v.element_id == "signal-start")
        })
        .map(|r| r.key)
        .expect("an instance");
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    let deleted: Vec<String> = subscriptions(&rule, Intent::Deleted)
        .into_iter()
        .map(|(_, s)| s.catch_event_id)
        .collect();
    assert_eq!(deleted, vec!["StatusStart", "ShutdownStart"]);
    // Only the start event still listens: a status request starts nothing.
    assert_eq!(open_subscriptions(&rule), vec!["OrderArrived"]);
    let outcome = broadcast(&mut rule, "status-requested", json!({}));
    assert_eq!(process_records(&outcome), 0);
    rule.assert_replay_matches();
}
