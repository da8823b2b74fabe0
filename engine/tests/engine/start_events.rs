//! Timer start events (and, below, message start events): instances created by a due
//! timer or a published message, and what a redeploy does to them.

use rill_protocol::value::{BpmnElementType, BpmnEventType, TimerRecord};
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
        reason.contains("it starts only by timer or message"),
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
