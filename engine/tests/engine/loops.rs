//! A deployment with a straight-through processing loop is refused and changes
//! nothing; a loop with a wait state in it deploys and runs round as often as asked.

use rill_engine::ProcessInstanceState;
use rill_protocol::{Intent, RecordType, RejectionType, ValueType};
use serde_json::json;

use super::*;

#[test]
fn a_deployment_with_a_straight_through_loop_is_refused_and_changes_nothing() {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&[
        (
            "loops/loop-with-service-task.bpmn",
            fixture("loops/loop-with-service-task.bpmn"),
        ),
        (
            "loops/two-task-loop.bpmn",
            fixture("loops/two-task-loop.bpmn"),
        ),
    ]);
    let (kind, message) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(
        message.contains(
            "'loops/two-task-loop.bpmn' line 7 element 'task1': processes are not allowed to \
             contain a straight-through processing loop: task1 > task2 > task1."
        ),
        "{message}"
    );
    // Only the rejected command is written: no process, no deployment.
    let written: Vec<(ValueType, RecordType)> = outcome
        .records
        .iter()
        .map(|r| (r.value_type(), r.record_type))
        .collect();
    assert_eq!(
        written,
        [(ValueType::Deployment, RecordType::CommandRejection)]
    );
    for process_id in ["two-task-loop", "loop-with-service-task"] {
        let created = rule.process(EngineRule::create_command(process_id, json!({})));
        assert_eq!(
            rejection_of(&created).0,
            RejectionType::NotFound,
            "{process_id} was not deployed"
        );
    }
}

#[test]
fn a_loop_that_waits_on_a_job_runs_round_until_its_exit() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("loops/loop-with-service-task.bpmn");
    let instance = rule.create("loop-with-service-task", json!({}));
    for ready in [false, false, true] {
        let (job, _) = rule.job("ask-warehouse");
        assert!(!rule.complete(job, json!({"ready": ready})).is_rejected());
    }
    assert_eq!(
        rule.instance_state(instance).expect("instance").state,
        ProcessInstanceState::Completed
    );
    let prepared = rule
        .records()
        .events()
        .element("Prepare")
        .with_intent(Intent::ElementCompleted)
        .count();
    assert_eq!(prepared, 3, "once per round");
    rule.assert_replay_matches();
}
