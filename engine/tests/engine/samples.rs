//! The sample models behave as /work/shared/bpmn/README.md says.

use rill_engine::ProcessInstanceState;
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
    assert_eq!(job.variables.to_value(), json!({"n": 1}));
    assert!(
        rule.activate("restCall", 10).is_empty(),
        "Rest2 not reached yet"
    );
    rule.complete(first, json!({"a": "x"}));

    let (second, job) = rule.job("restCall");
    assert_eq!(job.element_id, "Rest2");
    rule.complete(second, json!({}));

    let view = rule.instance_state(instance).expect("instance");
    assert_eq!(view.state, ProcessInstanceState::Completed);
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

fn order(total: f64) -> serde_json::Value {
    json!({"order": {"id": "o-1", "total": total, "customer": {"id": "c-9"}}})
}

#[test]
fn order_fulfilment_large_order_goes_through_review() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("order-fulfilment.bpmn");
    let instance = rule.create("order-fulfilment", order(1250.5));

    let (charge, job) = rule.job("charge-card");
    assert_eq!(job.retries, 5);
    assert_eq!(
        job.custom_headers.get("provider").map(String::as_str),
        Some("acme-pay")
    );
    // Input mappings are local to the task and visible to the worker.
    assert_eq!(job.variables.to_value()["amount"], json!(1250.5));
    assert_eq!(job.variables.to_value()["customerId"], json!("c-9"));
    rule.complete(charge, json!({"transactionId": "tx-7"}));

    let vars = rule.variables(instance);
    assert_eq!(vars["payment"], json!({"transactionId": "tx-7"}));
    assert!(
        vars.get("amount").is_none(),
        "input mappings stay local: {vars}"
    );
    assert!(
        vars.get("transactionId").is_none(),
        "outputs replace the merge: {vars}"
    );

    assert!(rule.activate("pack", 10).is_empty(), "review comes first");
    let (review, _) = rule.job("review");
    rule.complete(review, json!({}));
    let (pack, _) = rule.job("pack");
    let (invoice, _) = rule.job("invoice");
    rule.complete(invoice, json!({}));
    assert!(
        !rule.records().element("AwaitShipment").exists(),
        "the join waits for both branches"
    );
    rule.complete(pack, json!({}));
    assert_eq!(
        rule.records()
            .element("Join")
            .with_intent(Intent::ElementCompleted)
            .count(),
        1
    );
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Active
    );
    rule.publish("shipment-confirmed", "o-1", 0, json!({"carrier": "dhl"}));
    let view = rule.instance_state(instance).unwrap();
    assert_eq!(view.state, ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["carrier"], json!("dhl"));
    rule.assert_replay_matches();
}

#[test]
fn order_fulfilment_small_order_skips_review_and_takes_a_buffered_message() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("order-fulfilment.bpmn");
    // Published before the instance reaches the catch event: buffered for its TTL.
    rule.publish("shipment-confirmed", "o-1", 60_000, json!({"early": true}));
    let instance = rule.create("order-fulfilment", order(80.0));
    let (charge, _) = rule.job("charge-card");
    rule.complete(charge, json!({"transactionId": "tx-1"}));
    assert!(
        rule.activate("review", 10).is_empty(),
        "no review for small orders"
    );
    assert!(
        rule.records().element("F4").exists(),
        "the default flow was taken"
    );
    for job_type in ["pack", "invoice"] {
        let (key, _) = rule.job(job_type);
        rule.complete(key, json!({}));
    }
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert_eq!(rule.variables(instance)["early"], json!(true));
    rule.assert_replay_matches();
}

#[test]
fn payment_retry_completes_normally() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("payment-retry.bpmn");
    let instance = rule.create("payment-retry", json!({}));
    let (pay, _) = rule.job("take-payment");
    rule.complete(pay, json!({}));
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert!(rule.records().element("Done").exists());
    // The boundary timer was cancelled with the task.
    assert_eq!(
        rule.records()
            .of_type(ValueType::Timer)
            .with_intent(Intent::Canceled)
            .count(),
        1
    );
    assert!(rule.fire_due().is_empty());
}

#[test]
fn payment_retry_card_declined_is_caught() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("payment-retry.bpmn");
    let instance = rule.create("payment-retry", json!({}));
    let (pay, _) = rule.job("take-payment");
    let outcome = rule.process(rill_protocol::Command::ThrowError(
        rill_protocol::ThrowError {
            job_key: pay,
            error_code: "CARD_DECLINED".into(),
            error_message: "insufficient funds".into(),
            variables: rill_protocol::JsonValue::from(json!({"reason": "funds"})),
        },
    ));
    assert!(!outcome.is_rejected());
    let (notify, _) = rule.job("notify");
    rule.complete(notify, json!({}));
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert!(rule.records().element("Failed").exists());
    assert_eq!(rule.variables(instance)["reason"], json!("funds"));
    rule.assert_replay_matches();
}

#[test]
fn payment_retry_times_out_after_thirty_seconds() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("payment-retry.bpmn");
    let instance = rule.create("payment-retry", json!({}));
    let (pay, _) = rule.job("take-payment");
    rule.advance(29_999);
    assert!(rule.fire_due().is_empty(), "not due yet");
    rule.advance(1);
    // The boundary timer and the job's activation deadline are both due; the job's
    // time-out comes second and finds the job cancelled: a harmless rejection.
    let fired = rule.fire_due();
    let accepted: Vec<_> = fired.iter().filter(|o| !o.is_rejected()).collect();
    assert_eq!(accepted.len(), 1, "{fired:?}");
    assert!(matches!(
        accepted[0].value(),
        rill_protocol::RecordValue::Timer(_)
    ));
    // The job was cancelled with the task.
    let late = rule.complete(pay, json!({}));
    assert_eq!(
        late.rejection().rejection_type,
        rill_protocol::RejectionType::NotFound
    );
    let (escalate, _) = rule.job("escalate");
    rule.complete(escalate, json!({}));
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert!(rule.records().element("TimedOut").exists());
    rule.assert_replay_matches();
}

#[test]
fn payment_retry_exhausted_retries_raise_an_incident_that_resolves() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("payment-retry.bpmn");
    let instance = rule.create("payment-retry", json!({}));
    for retries_left in [1, 0] {
        let (pay, job) = rule.job("take-payment");
        let outcome = rule.process(rill_protocol::Command::FailJob(rill_protocol::FailJob {
            job_key: pay,
            retries: retries_left,
            error_message: "card service down".into(),
            retry_backoff: 0,
            variables: rill_protocol::JsonValue::null(),
        }));
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
        assert_eq!(job.retries, retries_left + 1);
    }
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    let incident = &incidents[0];
    assert_eq!(
        incident.record.error_type,
        rill_protocol::value::IncidentErrorType::JobNoRetries
    );
    assert_eq!(incident.record.element_id, "Pay");
    assert_eq!(incident.record.error_message, "card service down");
    assert!(rule.instance_state(instance).unwrap().has_incident);
    assert!(rule.activate("take-payment", 10).is_empty());

    // Resolving before the retries are raised is refused.
    let early = rule.process(rill_protocol::Command::ResolveIncident {
        incident_key: incident.key,
    });
    assert_eq!(
        early.rejection().rejection_type,
        rill_protocol::RejectionType::InvalidState
    );
    assert!(
        early.rejection().reason.contains("retries"),
        "{}",
        early.rejection().reason
    );

    let job_key = rill_protocol::Key(incident.record.job_key);
    let update = rule.process(rill_protocol::Command::UpdateJob(
        rill_protocol::UpdateJob {
            job_key,
            retries: Some(2),
            timeout: None,
        },
    ));
    assert!(!update.is_rejected());
    let resolved = rule.process(rill_protocol::Command::ResolveIncident {
        incident_key: incident.key,
    });
    assert!(!resolved.is_rejected(), "{:?}", resolved.response);
    assert!(!rule.instance_state(instance).unwrap().has_incident);
    let (pay, job) = rule.job("take-payment");
    assert_eq!(job.retries, 2);
    rule.complete(pay, json!({}));
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn wait_timer_creates_the_job_only_after_two_seconds() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("wait-timer.bpmn");
    let instance = rule.create("wait-timer", json!({}));
    let due = rule.next_due().expect("a timer is due");
    assert_eq!(due.millis(), rule.now + 2_000);
    rule.advance(1_999);
    assert!(rule.fire_due().is_empty());
    assert!(rule.activate("work", 10).is_empty(), "no job before 2 s");
    rule.advance(1);
    assert_eq!(rule.fire_due().len(), 1);
    let (work, _) = rule.job("work");
    rule.complete(work, json!({}));
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}
