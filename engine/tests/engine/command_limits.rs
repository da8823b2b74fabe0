//! The bound on one command's work (docs/decisions/command-limits.md): a loop that
//! validation cannot see (a retry through an error boundary event, around a script
//! task) stops with an incident, the partition goes on, and far past
//! the limits a command is refused whole.

use rill_engine::ProcessInstanceState;
use rill_engine_api::{CommandLimits, state_digest};
use rill_protocol::value::IncidentErrorType;
use rill_protocol::{Command, Key};
use serde_json::json;

use super::*;

fn rule_with(max_records: u32, max_bytes: u64) -> EngineRule {
    let mut rule = EngineRule::new();
    rule.limits = CommandLimits {
        max_records,
        max_bytes,
    };
    rule
}

/// The one open incident of `instance`: its key, element and message.
fn only_incident(rule: &mut EngineRule, instance: Key) -> (Key, String, IncidentErrorType, String) {
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    let incident = &incidents[0];
    (
        incident.key,
        incident.record.element_id.clone(),
        incident.record.error_type,
        incident.record.error_message.clone(),
    )
}

#[test]
fn a_loop_through_a_script_task_stops_with_an_incident_and_the_partition_goes_on() {
    let mut rule = rule_with(300, 1 << 20);
    rule.deploy_fixture("elements/script-loop.bpmn");
    rule.deploy_fixture("elements/service-task.bpmn");
    let create = rule.process(EngineRule::create_command(
        "script-loop",
        json!({"counter": 0, "target": 1_000_000_000}),
    ));
    let instance = create.key();
    // The command stopped close to its limit, not at the end of the loop.
    assert!(
        (300..400).contains(&create.records.len()),
        "{} records",
        create.records.len()
    );
    let (_, element, error_type, message) = only_incident(&mut rule, instance);
    assert_eq!(error_type, IncidentErrorType::MessageSizeExceeded);
    assert!(
        [
            "Attempt",
            "CountUp",
            "Enough",
            "TryAgain",
            "Retry",
            "AttemptStart",
            "AttemptDone"
        ]
        .contains(&element.as_str()),
        "{element}"
    );
    assert!(
        message.contains(&format!("element '{element}'"))
            && message.contains("engine.max-records-per-command (300)"),
        "{message}"
    );
    assert_eq!(
        rule.instance_state(instance).expect("instance").state,
        ProcessInstanceState::Active
    );
    // The next command is processed as usual.
    let other = rule.create("service-task", json!({}));
    assert!(rule.instance_state(other).is_some());
    rule.assert_replay_matches();
}

#[test]
fn resolving_the_incident_goes_on_until_a_long_loop_ends() {
    let mut rule = rule_with(300, 1 << 20);
    rule.deploy_fixture("elements/script-loop.bpmn");
    let instance = rule.create("script-loop", json!({"counter": 0, "target": 200}));
    let mut resolves = 0;
    while rule.instance_state(instance).expect("instance").state == ProcessInstanceState::Active {
        let (incident, _, error_type, _) = only_incident(&mut rule, instance);
        assert_eq!(error_type, IncidentErrorType::MessageSizeExceeded);
        let outcome = rule.process(Command::ResolveIncident {
            incident_key: incident,
        });
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
        assert!(outcome.records.len() < 400, "{}", outcome.records.len());
        resolves += 1;
        assert!(resolves < 50, "the loop does not advance");
    }
    assert!(resolves >= 2, "the limit never stopped the loop");
    assert_eq!(
        rule.instance_state(instance).expect("instance").state,
        ProcessInstanceState::Completed
    );
    assert_eq!(rule.variables(instance)["counter"], json!(200));
    rule.assert_replay_matches();
}

#[test]
fn growing_variables_stop_at_the_byte_limit() {
    let mut rule = rule_with(100_000, 64 * 1024);
    rule.deploy_xml(
        &String::from_utf8(fixture("elements/script-loop.bpmn"))
            .expect("utf-8")
            .replace("=counter + 1", "=counter + counter"),
    );
    let instance = rule.create("script-loop", json!({"counter": "ab", "target": "z"}));
    let (_, _, error_type, message) = only_incident(&mut rule, instance);
    assert_eq!(error_type, IncidentErrorType::MessageSizeExceeded);
    assert!(
        message.contains("engine.max-bytes-per-command (65536)"),
        "{message}"
    );
}

#[test]
fn far_past_the_limits_a_command_is_refused_whole() {
    let mut rule = rule_with(100, 1 << 20);
    rule.deploy_fixture("elements/multi-instance.bpmn");
    let numbers: Vec<i64> = (1..=1000).collect();
    let before = state_digest(&rule.state).expect("digest");
    let records = rule.log.len();
    let error = rule
        .try_process(&EngineRule::create_command(
            "mi-script",
            json!({"numbers": numbers}),
        ))
        .expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("engine.max-records-per-command (100)"),
        "{error}"
    );
    // Nothing changed: the broker rolls the command back.
    assert_eq!(state_digest(&rule.state).expect("digest"), before);
    assert_eq!(rule.log.len(), records);
    // Within the limits, the same model runs.
    let mut rule = rule_with(100_000, 32 << 20);
    rule.deploy_fixture("elements/multi-instance.bpmn");
    let instance = rule.create("mi-script", json!({"numbers": numbers}));
    assert_eq!(
        rule.instance_state(instance).expect("instance").state,
        ProcessInstanceState::Completed
    );
}
