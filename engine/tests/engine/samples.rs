//! The sample models behave as /work/shared/bpmn/README.md says.

use rill_engine::InstanceState;
use rill_protocol::{Intent, ValueType};
use serde_json::json;

use super::*;

#[test]
fn two_rest_calls_runs_to_the_end() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("two-rest-calls.bpmn");
    let instance = rule.create("two-rest-calls", json!({"n": 1}));

    let (first, job) = rule.job("restCall");
    assert_eq!(job.element_id, "Rest1");
    assert_eq!(job.retries, 3);
    assert_eq!(job.variables.0, json!({"n": 1}));
    assert!(
        rule.activate("restCall", 10).is_empty(),
        "Rest2 not reached yet"
    );
    rule.complete(first, json!({"a": "x"}));

    let (second, job) = rule.job("restCall");
    assert_eq!(job.element_id, "Rest2");
    rule.complete(second, json!({}));

    let view = rule.instance_state(instance).expect("summary");
    assert_eq!(view.state, InstanceState::Completed);
    assert!(view.end_date.is_some());
    assert_eq!(rule.variables(instance), json!({"n": 1, "a": "x"}));

    let lifecycle = rule.records().lifecycle();
    assert_eq!(
        lifecycle,
        lc(&[
            ("two-rest-calls", Intent::ElementActivating),
            ("two-rest-calls", Intent::ElementActivated),
            ("StartEvent_1", Intent::ElementActivating),
            ("StartEvent_1", Intent::ElementActivated),
            ("StartEvent_1", Intent::ElementCompleting),
            ("StartEvent_1", Intent::ElementCompleted),
            ("Flow_1", Intent::SequenceFlowTaken),
            ("Rest1", Intent::ElementActivating),
            ("Rest1", Intent::ElementActivated),
            ("Rest1", Intent::ElementCompleting),
            ("Rest1", Intent::ElementCompleted),
            ("Flow_2", Intent::SequenceFlowTaken),
            ("Rest2", Intent::ElementActivating),
            ("Rest2", Intent::ElementActivated),
            ("Rest2", Intent::ElementCompleting),
            ("Rest2", Intent::ElementCompleted),
            ("Flow_3", Intent::SequenceFlowTaken),
            ("EndEvent_1", Intent::ElementActivating),
            ("EndEvent_1", Intent::ElementActivated),
            ("EndEvent_1", Intent::ElementCompleting),
            ("EndEvent_1", Intent::ElementCompleted),
            ("two-rest-calls", Intent::ElementCompleting),
            ("two-rest-calls", Intent::ElementCompleted),
        ])
    );
    assert_eq!(
        rule.records()
            .of_type(ValueType::Job)
            .events()
            .with_intent(Intent::Created)
            .count(),
        2
    );
    rule.assert_replay_matches();
}
