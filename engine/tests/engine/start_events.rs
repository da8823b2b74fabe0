//! Timer start events (and, below, message start events): instances created by a due
//! timer or a published message, and what a redeploy does to them.

use rill_protocol::value::{
    BpmnElementType, BpmnEventType, MessageStartEventSubscriptionRecord, TimerRecord,
};
use rill_protocol::{Command, Intent, Key, RecordValue, ValueType};
use serde_json::json;

use super::elements::{flow, model, task};
use super::*;

/// The harness clock at the start: 2023-11-14T22:13:20Z, a Tuesday.
const T0: i64 = 1_700_000_000_000;

fn timers(rule: &EngineRule, intent: Intent) -> Vec<(Key, TimerRecord)> {
    rule.records()
        .events()
        .of_type(ValueType::Timer)
        .with_intent(intent)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Timer(t) => Some((r.key, t.clone())),
            _ => None,
        })
        .collect()
}

/// Keys of the process instances started so far (their process ELEMENT_ACTIVATING).
fn instances(rule: &EngineRule) -> Vec<Key> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .with_intent(Intent::ElementActivating)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) if v.bpmn_element_type == BpmnElementType::Process => {
                Some(r.key)
            }
            _ => None,
        })
        .collect()
}

/// A process `id` that starts only at a timer start event `Tick` with `timer` (the
/// inner XML of the timer event definition), then runs a `work` job.
fn timer_process(id: &str, timer: &str) -> String {
    let body = format!(
        r#"<bpmn:startEvent id="Tick"><bpmn:timerEventDefinition>{timer}</bpmn:timerEventDefinition></bpmn:startEvent>{}<bpmn:endEvent id="e" />{}{}"#,
        task("Work", "work"),
        flow("f1", "Tick", "Work"),
        flow("f2", "Work", "e")
    );
    model(&body).replace(
        r#"<bpmn:process id="p""#,
        &format!(r#"<bpmn:process id="{id}""#),
    )
}

fn cycle(text: &str) -> String {
    format!(r#"<bpmn:timeCycle xsi:type="bpmn:tFormalExpression">{text}</bpmn:timeCycle>"#)
}

#[test]
fn a_cycle_creates_an_instance_per_firing_and_rearms_until_its_repetitions_are_used() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&timer_process("ticker", &cycle("R3/PT1M")));
    let created = timers(&rule, Intent::Created);
    assert_eq!(created.len(), 1);
    let (_, timer) = &created[0];
    assert_eq!(timer.element_instance_key, -1);
    assert_eq!(timer.process_instance_key, -1);
    assert_eq!(timer.target_element_id, "Tick");
    assert_eq!(timer.due_date, T0 + 60_000);
    assert_eq!(timer.repetitions, 3);

    // No none start event: a create command is refused.
    let outcome = rule.process(EngineRule::create_command("ticker", json!({})));
    let (_, reason) = rejection_of(&outcome);
    assert!(
        reason.contains("it starts only by timer, message or signal"),
        "{reason}"
    );

    for firing in 1..=3 {
        assert_eq!(
            rule.next_due().map(|t| t.millis()),
            Some(T0 + firing * 60_000)
        );
        rule.advance(60_000);
        let outcomes = rule.fire_due();
        assert_eq!(outcomes.len(), 1);
        assert!(!outcomes[0].is_rejected(), "{:?}", outcomes[0].response);
        assert_eq!(instances(&rule).len(), firing as usize);
    }
    assert_eq!(rule.next_due(), None, "three repetitions, then no timer");
    let repetitions: Vec<i32> = timers(&rule, Intent::Created)
        .iter()
        .map(|(_, t)| t.repetitions)
        .collect();
    assert_eq!(repetitions, vec![3, 2, 1]);
    assert_eq!(rule.activate("work", 10).len(), 3);

    // The instance's start event is a TIMER start event.
    let start: Vec<(Intent, BpmnEventType)> = rule
        .records()
        .events()
        .element("Tick")
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some((r.intent, v.bpmn_event_type)),
            _ => None,
        })
        .take(4)
        .collect();
    assert_eq!(
        start,
        [
            Intent::ElementActivating,
            Intent::ElementActivated,
            Intent::ElementCompleting,
            Intent::ElementCompleted
        ]
        .into_iter()
        .map(|i| (i, BpmnEventType::Timer))
        .collect::<Vec<_>>()
    );
    rule.assert_replay_matches();
}

#[test]
fn a_modeler_timer_start_event_runs_beside_the_none_start_event() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/timer-start-event.bpmn");
    // The none start event still creates instances on command.
    rule.create("timer-start-event", json!({}));
    rule.advance(86_400_000);
    let outcomes = rule.fire_due();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(instances(&rule).len(), 2);
    // R/P1D: forever, the next one a day after the previous due date.
    assert_eq!(
        rule.next_due().map(|t| t.millis()),
        Some(T0 + 2 * 86_400_000)
    );
    assert_eq!(rule.activate("work", 10).len(), 2);
    rule.assert_replay_matches();
}

#[test]
fn a_cron_cycle_fires_at_its_matches() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&timer_process("office", &cycle("0 0 9-17 * * MON-FRI")));
    // Tuesday 22:13 → Wednesday 09:00 UTC.
    let wednesday_nine = 1_700_038_800_000;
    assert_eq!(rule.next_due().map(|t| t.millis()), Some(wednesday_nine));
    rule.advance(wednesday_nine - T0);
    assert_eq!(rule.fire_due().len(), 1);
    assert_eq!(instances(&rule).len(), 1);
    assert_eq!(
        rule.next_due().map(|t| t.millis()),
        Some(wednesday_nine + 3_600_000)
    );
    rule.assert_replay_matches();
}

#[test]
fn a_date_fires_once() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&timer_process(
        "once",
        r#"<bpmn:timeDate xsi:type="bpmn:tFormalExpression">2023-11-15T00:00:00Z</bpmn:timeDate>"#,
    ));
    rule.advance(24 * 3_600_000);
    assert_eq!(rule.fire_due().len(), 1);
    assert_eq!(instances(&rule).len(), 1);
    assert_eq!(rule.next_due(), None);
    rule.assert_replay_matches();
}

#[test]
fn a_new_version_replaces_the_start_timers_of_the_previous_one() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&timer_process("job", &cycle("R/PT1H")));
    let (v1_timer, _) = timers(&rule, Intent::Created)[0].clone();
    rule.deploy_xml(&timer_process("job", &cycle("R/PT2H")));
    let canceled: Vec<Key> = timers(&rule, Intent::Canceled)
        .iter()
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(canceled, vec![v1_timer]);
    assert_eq!(rule.next_due().map(|t| t.millis()), Some(T0 + 7_200_000));

    // The same XML again is a duplicate: nothing changes.
    let before = rule.records().of_type(ValueType::Timer).count();
    rule.deploy_xml(&timer_process("job", &cycle("R/PT2H")));
    assert_eq!(rule.records().of_type(ValueType::Timer).count(), before);

    // A version with only a none start event: no timer is left.
    let body = format!(
        r#"<bpmn:startEvent id="s" />{}<bpmn:endEvent id="e" />{}{}"#,
        task("Work", "work"),
        flow("f1", "s", "Work"),
        flow("f2", "Work", "e")
    );
    rule.deploy_xml(&model(&body).replace(r#"id="p""#, r#"id="job""#));
    assert_eq!(timers(&rule, Intent::Canceled).len(), 2);
    assert_eq!(rule.next_due(), None);

    // A trigger proposed for a replaced timer (a stale leader) is rejected.
    let outcome = rule.process(Command::TriggerTimer {
        timer_key: v1_timer,
    });
    assert!(outcome.is_rejected());
    assert!(instances(&rule).is_empty());
    rule.assert_replay_matches();
}

// --- message start events ---

/// `(intent, record)` of the MESSAGE_START_EVENT_SUBSCRIPTION records, in log order.
fn message_starts(rule: &EngineRule) -> Vec<(Intent, MessageStartEventSubscriptionRecord)> {
    rule.records()
        .of_type(ValueType::MessageStartEventSubscription)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::MessageStartEventSubscription(v) => Some((r.intent, v.clone())),
            _ => None,
        })
        .collect()
}

fn publish(rule: &mut EngineRule, correlation_key: &str, ttl: i64, variables: serde_json::Value) {
    let outcome = rule.publish("order-placed", correlation_key, ttl, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

#[test]
fn a_published_message_starts_an_instance_with_its_variables() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-start-event.bpmn");
    publish(&mut rule, "order-1", 0, json!({"orderId": 1}));
    let started = instances(&rule);
    assert_eq!(started.len(), 1);
    let instance = started[0];
    assert_eq!(
        rule.variables(instance),
        json!({"orderId": 1, "channel": "web"}),
        "the message's variables, then the start event's output"
    );
    let start: Vec<(Intent, BpmnElementType, BpmnEventType)> = rule
        .records()
        .events()
        .element("OrderPlaced")
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => {
                Some((r.intent, v.bpmn_element_type, v.bpmn_event_type))
            }
            _ => None,
        })
        .collect();
    assert_eq!(start.len(), 4);
    assert!(
        start
            .iter()
            .all(|(_, t, e)| *t == BpmnElementType::StartEvent && *e == BpmnEventType::Message)
    );
    // No none start event: it cannot be created by a command.
    let outcome = rule.process(EngineRule::create_command("order-intake", json!({})));
    assert!(outcome.is_rejected());
    // A job worker sees the message's variables, not the engine's bookkeeping.
    let (_, job) = rule.job("check");
    assert_eq!(
        job.variables.to_value(),
        json!({"orderId": 1, "channel": "web"})
    );

    // Zeebe's records: the deployment opened the subscription, the message correlated.
    let written = message_starts(&rule);
    assert_eq!(
        written.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![Intent::Created, Intent::Correlated]
    );
    let (_, created) = &written[0];
    assert_eq!(created.bpmn_process_id, "order-intake");
    assert_eq!(created.message_name, "order-placed");
    assert_eq!(created.start_event_id, "OrderPlaced");
    assert_eq!(created.process_instance_key, -1);
    let (_, correlated) = &written[1];
    assert_eq!(correlated.process_instance_key, instance.get());
    assert_eq!(correlated.correlation_key, "order-1");
    assert_eq!(correlated.variables.to_value(), json!({"orderId": 1}));
    assert_eq!(
        correlated.process_definition_key,
        created.process_definition_key
    );
    rule.assert_replay_matches();
}

#[test]
fn one_active_instance_per_correlation_key_and_buffered_messages_start_the_next() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-start-event.bpmn");
    publish(&mut rule, "order-1", 0, json!({"n": 1}));
    // Same key while the first runs: buffered (TTL), no instance.
    publish(&mut rule, "order-1", 3_600_000, json!({"n": 2}));
    // Same key, TTL 0: dropped.
    publish(&mut rule, "order-1", 0, json!({"n": 3}));
    assert_eq!(instances(&rule).len(), 1);
    // Another key: its own instance. An empty key never locks.
    publish(&mut rule, "order-2", 0, json!({"n": 4}));
    publish(&mut rule, "", 0, json!({"n": 5}));
    publish(&mut rule, "", 0, json!({"n": 6}));
    assert_eq!(instances(&rule).len(), 4);

    // The first instance ends: the buffered message starts the next one for order-1.
    let jobs = rule.activate("check", 10);
    let first = jobs
        .iter()
        .find(|(_, j)| j.variables.to_value()["n"] == json!(1))
        .expect("job of the first instance")
        .0;
    rule.complete(first, json!({}));
    let started = instances(&rule);
    assert_eq!(started.len(), 5);
    assert_eq!(rule.variables(started[4])["n"], json!(2));
    // It holds the key now: another publish for order-1 is buffered again.
    publish(&mut rule, "order-1", 0, json!({"n": 7}));
    assert_eq!(instances(&rule).len(), 5);

    // Cancelling frees the key too; nothing is buffered for order-1 any more.
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: started[4],
    });
    assert!(!outcome.is_rejected());
    publish(&mut rule, "order-1", 0, json!({"n": 8}));
    assert_eq!(instances(&rule).len(), 6);
    rule.assert_replay_matches();
}

#[test]
fn a_new_version_replaces_the_message_start_events_of_the_previous_one() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-start-event.bpmn");
    let renamed = String::from_utf8(fixture("elements/message-start-event.bpmn"))
        .unwrap()
        .replace(r#"name="order-placed""#, r#"name="order-received""#);
    rule.deploy_xml(&renamed);
    publish(&mut rule, "a", 0, json!({}));
    assert!(instances(&rule).is_empty(), "the old name starts nothing");
    rule.publish("order-received", "a", 0, json!({}));
    let started = instances(&rule);
    assert_eq!(started.len(), 1);
    let version = rule
        .records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) if r.key == started[0] => Some(v.version),
            _ => None,
        });
    assert_eq!(version, Some(2));
    let written: Vec<(Intent, String)> = message_starts(&rule)
        .into_iter()
        .map(|(i, r)| (i, r.message_name))
        .collect();
    assert_eq!(
        written,
        vec![
            (Intent::Created, "order-placed".to_owned()),
            (Intent::Deleted, "order-placed".to_owned()),
            (Intent::Created, "order-received".to_owned()),
            (Intent::Correlated, "order-received".to_owned()),
        ]
    );
    rule.assert_replay_matches();
}

#[test]
fn message_starts_reach_every_partition_and_timers_stay_on_the_deploying_one() {
    use rill_engine_api::Action;
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let both = String::from_utf8(fixture("elements/message-start-event.bpmn"))
        .unwrap()
        .replace(
            r#"<bpmn:serviceTask id="Check""#,
            r#"<bpmn:startEvent id="Nightly"><bpmn:outgoing>Flow_9</bpmn:outgoing><bpmn:timerEventDefinition><bpmn:timeCycle>R/P1D</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent><bpmn:sequenceFlow id="Flow_9" sourceRef="Nightly" targetRef="Check" /><bpmn:serviceTask id="Check""#,
        )
        .replace(
            "<bpmn:incoming>Flow_1</bpmn:incoming>",
            "<bpmn:incoming>Flow_1</bpmn:incoming><bpmn:incoming>Flow_9</bpmn:incoming>",
        );
    let deployed = first.deploy(&[("both.bpmn", both.into_bytes())]);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    for action in &deployed.actions {
        if let Action::Send { command, .. } = action {
            assert!(!second.process(command.clone()).is_rejected());
        }
    }
    assert_eq!(timers(&first, Intent::Created).len(), 1);
    assert!(timers(&second, Intent::Created).is_empty());
    assert_eq!(second.next_due(), None);

    // A key that belongs to partition 2, published there, starts the instance there.
    let key = (0..100)
        .map(|i| format!("order-{i}"))
        .find(|k| rill_protocol::message_partition(k, 2) == rill_protocol::PartitionId(2))
        .expect("a key of partition 2");
    let outcome = second.publish("order-placed", &key, 0, json!({}));
    assert!(!outcome.is_rejected());
    let started = instances(&second);
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].partition(), rill_protocol::PartitionId(2));
    second.assert_replay_matches();
}

#[test]
fn a_cron_cycle_on_a_non_interrupting_boundary_event_repeats_at_its_matches() {
    let body = format!(
        r#"<bpmn:startEvent id="s" />{}<bpmn:boundaryEvent id="Remind" attachedToRef="Work" cancelActivity="false"><bpmn:timerEventDefinition>{}</bpmn:timerEventDefinition></bpmn:boundaryEvent>{}<bpmn:endEvent id="e" /><bpmn:endEvent id="r" />{}{}{}"#,
        task("Work", "work"),
        cycle("0 */30 * * * *"),
        task("Nudge", "nudge"),
        flow("f1", "s", "Work"),
        flow("f2", "Work", "e"),
        flow("f3", "Remind", "Nudge") + &flow("f4", "Nudge", "r")
    );
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&body));
    rule.create("p", json!({}));
    // 22:13:20 → 22:30:00, then 23:00:00.
    let first = T0 + (16 * 60 + 40) * 1000;
    assert_eq!(rule.next_due().map(|t| t.millis()), Some(first));
    rule.advance(first - T0);
    assert_eq!(rule.fire_due().len(), 1);
    assert_eq!(rule.next_due().map(|t| t.millis()), Some(first + 1_800_000));
    assert_eq!(rule.activate("nudge", 10).len(), 1);
    rule.assert_replay_matches();
}

/// The PROCESS_EVENT records written so far: (key, intent, record).
fn process_events(
    rule: &EngineRule,
) -> Vec<(Key, Intent, rill_protocol::value::ProcessEventRecord)> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessEvent)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessEvent(v) => Some((r.key, r.intent, v.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_timer_start_event_writes_a_process_event_around_the_new_instance() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&timer_process(
        "once",
        r#"<bpmn:timeDate xsi:type="bpmn:tFormalExpression">2023-11-15T00:00:00Z</bpmn:timeDate>"#,
    ));
    assert!(process_events(&rule).is_empty(), "nothing before it fires");
    rule.advance(24 * 3_600_000);
    rule.fire_due();
    let instance = instances(&rule)[0];
    let events = process_events(&rule);
    assert_eq!(
        events.iter().map(|(_, i, _)| *i).collect::<Vec<_>>(),
        vec![Intent::Triggering, Intent::Triggered]
    );
    assert_eq!(events[0].0, events[1].0, "one key for both");
    let (_, _, triggering) = &events[0];
    let (_, timer) = &timers(&rule, Intent::Triggered)[0];
    assert_eq!(triggering.scope_key, timer.process_definition_key);
    assert_eq!(
        triggering.process_definition_key,
        timer.process_definition_key
    );
    assert_eq!(triggering.process_instance_key, instance.get());
    assert_eq!(triggering.target_element_id, "Tick");
    assert_eq!(triggering.variables.to_value(), json!({}));

    // TRIGGERING comes before the instance, TRIGGERED before its start event.
    let order: Vec<(ValueType, Intent, String)> = rule
        .records()
        .events()
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessEvent(_) => {
                Some((ValueType::ProcessEvent, r.intent, String::new()))
            }
            RecordValue::ProcessInstance(v) if r.intent == Intent::ElementActivating => {
                Some((ValueType::ProcessInstance, r.intent, v.element_id.clone()))
            }
            _ => None,
        })
        .take(4)
        .collect();
    assert_eq!(
        order,
        vec![
            (ValueType::ProcessEvent, Intent::Triggering, String::new()),
            (
                ValueType::ProcessInstance,
                Intent::ElementActivating,
                "once".into()
            ),
            (ValueType::ProcessEvent, Intent::Triggered, String::new()),
            (
                ValueType::ProcessInstance,
                Intent::ElementActivating,
                "Tick".into()
            ),
        ]
    );
    rule.assert_replay_matches();
}

#[test]
fn a_message_start_event_process_event_carries_the_message_variables() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-start-event.bpmn");
    publish(&mut rule, "order-1", 0, json!({"orderId": 1}));
    let events = process_events(&rule);
    assert_eq!(events.len(), 2, "{events:?}");
    let (_, intent, triggering) = &events[0];
    assert_eq!(*intent, Intent::Triggering);
    assert_eq!(triggering.target_element_id, "OrderPlaced");
    assert_eq!(triggering.scope_key, triggering.process_definition_key);
    // The message's variables only, not Rill's bookkeeping of the start.
    assert_eq!(triggering.variables.to_value(), json!({"orderId": 1}));
    rule.assert_replay_matches();
}

#[test]
fn an_event_subprocess_timer_writes_a_process_event_scoped_to_its_scope() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    assert!(process_events(&rule).is_empty());
    rule.advance(60_000);
    rule.fire_due();
    let events = process_events(&rule);
    assert_eq!(
        events.iter().map(|(_, i, _)| *i).collect::<Vec<_>>(),
        vec![Intent::Triggering, Intent::Triggered]
    );
    let (_, _, triggering) = &events[0];
    assert_eq!(triggering.target_element_id, "SlowStart");
    assert_eq!(
        triggering.scope_key,
        instance.get(),
        "the process holds the trigger"
    );
    assert_eq!(triggering.process_instance_key, instance.get());
    assert!(
        rule.records()
            .events()
            .element("OnSlow")
            .with_intent(Intent::ElementActivated)
            .exists()
    );
    rule.assert_replay_matches();
}
