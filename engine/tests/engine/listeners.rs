//! Execution listeners, driven through the Modeler-shaped fixture
//! `elements/execution-listeners.bpmn`: the process has a start and an end listener;
//! the service task `Work` has input and output mappings, two start listeners (the
//! second's type is `="check-" + region`, retries 1) and an end listener; the gateway
//! `Route` has a start listener whose variables decide its path.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{IncidentErrorType, JobKind, JobListenerEventType, JobRecord};
use rill_protocol::{
    Command, FailJob, Intent, JsonValue, Key, RecordValue, RejectionType, ThrowError, UpdateJob,
    ValueType,
};
use serde_json::{Value, json};

use super::*;

const PROCESS: &str = "execution-listeners";

fn started(variables: Value) -> (EngineRule, Key) {
    let mut rule = EngineRule::new();
    let deployed = rule.deploy_fixture("elements/execution-listeners.bpmn");
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create(PROCESS, variables);
    (rule, instance)
}

/// Activates the one job of `job_type`, checks that it is a listener's job of `event`,
/// and completes it with `variables`; returns the variables the worker saw.
fn run_listener(
    rule: &mut EngineRule,
    job_type: &str,
    event: JobListenerEventType,
    variables: Value,
) -> Value {
    let (key, job) = rule.job(job_type);
    assert_eq!(job.job_kind, JobKind::ExecutionListener, "{job_type}");
    assert_eq!(job.job_listener_event_type, event, "{job_type}");
    assert!(job.custom_headers.is_empty());
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    job.variables.to_value()
}

/// The `(type, kind, listener event)` of every JOB CREATED, in order.
fn created_jobs(rule: &EngineRule) -> Vec<(String, JobKind, JobListenerEventType)> {
    rule.records()
        .of_type(ValueType::Job)
        .events()
        .with_intent(Intent::Created)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::Job(job) => (
                job.job_type.clone(),
                job.job_kind,
                job.job_listener_event_type,
            ),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// The key and type of every JOB CANCELED, in order.
fn canceled_jobs(rule: &EngineRule) -> Vec<(Key, String)> {
    rule.records()
        .of_type(ValueType::Job)
        .with_intent(Intent::Canceled)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::Job(job) => (r.key, job.job_type.clone()),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

/// Runs the instance up to the job of `Work`'s second start listener (`check-eu`).
fn up_to_check(rule: &mut EngineRule) {
    run_listener(
        rule,
        "process-start",
        JobListenerEventType::Start,
        json!({}),
    );
    run_listener(rule, "prepare", JobListenerEventType::Start, json!({}));
}

#[test]
fn listeners_run_in_order_around_the_process_and_its_elements() {
    let (mut rule, instance) = started(json!({"orderId": "o-1", "region": "eu"}));

    // The process waits in ELEMENT_ACTIVATING for its start listener.
    assert_eq!(
        rule.records().element(PROCESS).lifecycle(),
        lc(&[(PROCESS, Intent::ElementActivating)])
    );
    let seen = run_listener(
        &mut rule,
        "process-start",
        JobListenerEventType::Start,
        json!({"fromProcessStart": 1}),
    );
    assert_eq!(seen, json!({"orderId": "o-1", "region": "eu"}));

    // Work's input mapping runs before its start listeners, which run one at a time.
    assert!(rule.activate("=\"check-\" + region", 1).is_empty());
    assert!(rule.activate("check-eu", 1).is_empty());
    let seen = run_listener(
        &mut rule,
        "prepare",
        JobListenerEventType::Start,
        json!({"token": "t-1"}),
    );
    assert_eq!(seen["id"], "o-1");
    assert_eq!(seen["fromProcessStart"], 1);
    assert!(
        rule.activate("work", 1).is_empty(),
        "no work before the listeners"
    );
    let seen = run_listener(
        &mut rule,
        "check-eu",
        JobListenerEventType::Start,
        json!({}),
    );
    assert_eq!(
        seen["token"], "t-1",
        "a later listener sees the earlier one's variables"
    );

    // The element's own job sees what its start listeners set (locals of Work).
    let (work, job) = rule.job("work");
    assert_eq!(job.job_kind, JobKind::BpmnElement);
    assert_eq!(
        job.job_listener_event_type,
        JobListenerEventType::Unspecified
    );
    assert_eq!(job.variables.to_value()["token"], "t-1");
    rule.complete(work, json!({"result": "done"}));

    // The end listener runs after the output mapping, before Work is left.
    assert!(
        !rule
            .records()
            .element("Work")
            .lifecycle()
            .contains(&("Work".to_owned(), Intent::ElementCompleted))
    );
    let seen = run_listener(
        &mut rule,
        "audit",
        JobListenerEventType::End,
        json!({"audited": true}),
    );
    assert_eq!(seen["outcome"], "done");

    // The gateway's start listener decides its path with a local of the gateway.
    run_listener(
        &mut rule,
        "decide",
        JobListenerEventType::Start,
        json!({"approved": true}),
    );
    assert!(rule.records().element("Approved").exists());
    assert!(!rule.records().element("Rejected").exists());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);

    let seen = run_listener(
        &mut rule,
        "process-end",
        JobListenerEventType::End,
        json!({"closed": true}),
    );
    assert_eq!(seen["audited"], true);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);

    assert_eq!(
        created_jobs(&rule)
            .into_iter()
            .map(|(t, _, e)| (t, e))
            .collect::<Vec<_>>(),
        [
            ("process-start", JobListenerEventType::Start),
            ("prepare", JobListenerEventType::Start),
            ("check-eu", JobListenerEventType::Start),
            ("work", JobListenerEventType::Unspecified),
            ("audit", JobListenerEventType::End),
            ("decide", JobListenerEventType::Start),
            ("process-end", JobListenerEventType::End),
        ]
        .map(|(t, e)| (t.to_owned(), e))
    );
    assert_eq!(
        rule.records().element("Work").lifecycle(),
        lc(&[
            ("Work", Intent::ElementActivating),
            ("Work", Intent::ElementActivated),
            ("Work", Intent::ElementCompleting),
            ("Work", Intent::ElementCompleted),
        ])
    );
    assert_eq!(
        rule.records().element(PROCESS).lifecycle(),
        lc(&[
            (PROCESS, Intent::ElementActivating),
            (PROCESS, Intent::ElementActivated),
            (PROCESS, Intent::ElementCompleting),
            (PROCESS, Intent::ElementCompleted),
        ])
    );
    rule.assert_replay_matches();
}

#[test]
fn listener_variables_go_where_zeebe_puts_them() {
    let (mut rule, instance) = started(json!({"orderId": "o-2", "region": "eu"}));
    run_listener(
        &mut rule,
        "process-start",
        JobListenerEventType::Start,
        json!({"fromProcessStart": 1}),
    );
    run_listener(
        &mut rule,
        "prepare",
        JobListenerEventType::Start,
        json!({"token": "t-2"}),
    );
    run_listener(
        &mut rule,
        "check-eu",
        JobListenerEventType::Start,
        json!({}),
    );
    let (work, _) = rule.job("work");
    rule.complete(work, json!({"result": "r"}));
    run_listener(
        &mut rule,
        "audit",
        JobListenerEventType::End,
        json!({"audited": true}),
    );
    run_listener(
        &mut rule,
        "decide",
        JobListenerEventType::Start,
        json!({"approved": false}),
    );
    assert!(rule.records().element("Rejected").exists());
    // Before the process's end listener completes, its scope still holds everything.
    let variables = rule.variables(instance);
    // A start listener's variables are locals of its element; an end listener's
    // propagate from the element's flow scope.
    assert_eq!(variables["fromProcessStart"], 1);
    assert_eq!(variables["audited"], true);
    assert_eq!(variables["outcome"], "r");
    assert!(variables.get("token").is_none(), "{variables}");
    assert!(variables.get("approved").is_none(), "{variables}");
    assert!(variables.get("id").is_none(), "{variables}");
    run_listener(
        &mut rule,
        "process-end",
        JobListenerEventType::End,
        json!({}),
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_listener_out_of_retries_raises_an_incident_and_resolving_it_retries_that_listener() {
    let (mut rule, instance) = started(json!({"orderId": "o-3", "region": "eu"}));
    up_to_check(&mut rule);
    let (check, _) = rule.job("check-eu");
    let failed = rule.process(Command::FailJob(FailJob {
        job_key: check,
        retries: 0,
        error_message: "checker down".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::from(json!({})),
    }));
    assert!(!failed.is_rejected());
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    let incident = &incidents[0];
    assert_eq!(
        incident.record.error_type,
        IncidentErrorType::ExecutionListenerNoRetries
    );
    assert_eq!(incident.record.element_id, "Work");
    assert_eq!(incident.record.job_key, check.get());
    assert_eq!(incident.record.error_message, "checker down");

    // Refused while the job has no retries; accepted once it has.
    let refused = rule.process(Command::ResolveIncident {
        incident_key: incident.key,
    });
    assert_eq!(rejection_of(&refused).0, RejectionType::InvalidState);
    rule.process(Command::UpdateJob(UpdateJob {
        job_key: check,
        retries: Some(1),
        timeout: None,
    }));
    let resolved = rule.process(Command::ResolveIncident {
        incident_key: incident.key,
    });
    assert!(!resolved.is_rejected());
    assert!(rule.incidents(instance).is_empty());

    // Only the failed listener runs again, then the element goes on.
    let seen = run_listener(
        &mut rule,
        "check-eu",
        JobListenerEventType::Start,
        json!({}),
    );
    assert_eq!(seen["id"], "o-3");
    assert!(rule.activate("prepare", 1).is_empty());
    let (work, _) = rule.job("work");
    assert!(!rule.complete(work, json!({"result": 1})).is_rejected());
    let prepares = created_jobs(&rule)
        .iter()
        .filter(|(t, _, _)| t == "prepare")
        .count();
    assert_eq!(prepares, 1);
    rule.assert_replay_matches();
}

#[test]
fn a_listener_type_that_cannot_be_evaluated_is_an_incident_on_the_element() {
    // No `region`: the second start listener's type expression fails.
    let (mut rule, instance) = started(json!({"orderId": "o-4"}));
    up_to_check(&mut rule);
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert_eq!(incidents[0].record.element_id, "Work");
    assert_eq!(incidents[0].record.job_key, -1);

    let work_key = rule
        .records()
        .element("Work")
        .with_intent(Intent::ElementActivating)
        .records[0]
        .key;
    rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: work_key,
        variables: JsonValue::from(json!({"region": "us"})),
        local: true,
    }));
    rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    run_listener(
        &mut rule,
        "check-us",
        JobListenerEventType::Start,
        json!({}),
    );
    assert_eq!(rule.activate("work", 1).len(), 1);
    rule.assert_replay_matches();
}

#[test]
fn a_listener_job_cannot_throw_a_bpmn_error() {
    let (mut rule, _instance) = started(json!({"orderId": "o-5", "region": "eu"}));
    let (key, _) = rule.job("process-start");
    let outcome = rule.process(Command::ThrowError(ThrowError {
        job_key: key,
        error_code: "BOOM".to_owned(),
        error_message: String::new(),
        variables: JsonValue::from(json!({})),
    }));
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(reason.contains("execution listener"), "{reason}");
    // The job is still there to be completed.
    assert!(!rule.complete(key, json!({})).is_rejected());
    assert_eq!(rule.activate("prepare", 1).len(), 1);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_while_a_listener_job_waits_cancels_the_job() {
    let (mut rule, instance) = started(json!({"orderId": "o-6", "region": "eu"}));
    run_listener(
        &mut rule,
        "process-start",
        JobListenerEventType::Start,
        json!({}),
    );
    let prepare: Vec<(Key, JobRecord)> = rule.activate("prepare", 1);
    assert_eq!(prepare.len(), 1);
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(
        canceled_jobs(&rule),
        vec![(prepare[0].0, "prepare".to_owned())]
    );
    assert_eq!(
        rule.records().element("Work").lifecycle(),
        lc(&[
            ("Work", Intent::ElementActivating),
            ("Work", Intent::ElementTerminating),
            ("Work", Intent::ElementTerminated),
        ])
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.complete(prepare[0].0, json!({})).is_rejected());
    rule.assert_replay_matches();
}

#[test]
fn cancelling_while_the_process_start_listener_waits_ends_the_instance() {
    let (mut rule, instance) = started(json!({}));
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let canceled: Vec<String> = canceled_jobs(&rule).into_iter().map(|(_, t)| t).collect();
    assert_eq!(canceled, vec!["process-start".to_owned()]);
    assert!(rule.activate("process-start", 1).is_empty());
    assert!(!rule.records().element("Start").exists());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn listeners_of_a_multi_instance_task_run_for_each_inner_instance() {
    let mut rule = EngineRule::new();
    let body = r#"<bpmn:startEvent id="s" />
      <bpmn:serviceTask id="each">
        <bpmn:extensionElements>
          <zeebe:taskDefinition type="each" />
          <zeebe:executionListeners>
            <zeebe:executionListener eventType="start" type="before-each" />
            <zeebe:executionListener eventType="end" type="after-each" />
          </zeebe:executionListeners>
        </bpmn:extensionElements>
        <bpmn:multiInstanceLoopCharacteristics>
          <bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1, 2]" inputElement="item" /></bpmn:extensionElements>
        </bpmn:multiInstanceLoopCharacteristics>
      </bpmn:serviceTask>
      <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="each" />"#;
    rule.deploy_xml(&super::elements::model(body));
    let instance = rule.create("p", json!({}));
    let before = rule.activate("before-each", 10);
    assert_eq!(before.len(), 2, "one start listener job per inner instance");
    let items: Vec<Value> = before
        .iter()
        .map(|(_, job)| job.variables.to_value()["item"].clone())
        .collect();
    assert_eq!(items, [json!(1), json!(2)]);
    for (key, _) in &before {
        rule.complete(*key, json!({}));
    }
    for (key, _) in rule.activate("each", 10) {
        rule.complete(key, json!({}));
    }
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    let after = rule.activate("after-each", 10);
    assert_eq!(after.len(), 2);
    for (key, _) in &after {
        rule.complete(*key, json!({}));
    }
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn boundary_timers_are_cancelled_before_the_end_listeners_run() {
    let mut rule = EngineRule::new();
    let body = r#"<bpmn:startEvent id="s" />
      <bpmn:serviceTask id="guarded">
        <bpmn:extensionElements>
          <zeebe:taskDefinition type="guarded" />
          <zeebe:executionListeners>
            <zeebe:executionListener eventType="end" type="after-guarded" />
          </zeebe:executionListeners>
        </bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:boundaryEvent id="late" attachedToRef="guarded">
        <bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>
      </bpmn:boundaryEvent>
      <bpmn:endEvent id="timedOut" />
      <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="guarded" />
      <bpmn:sequenceFlow id="t" sourceRef="late" targetRef="timedOut" />"#;
    rule.deploy_xml(&super::elements::model(body));
    let instance = rule.create("p", json!({}));
    let (work, _) = rule.job("guarded");
    rule.complete(work, json!({}));
    assert_eq!(
        rule.records()
            .of_type(ValueType::Timer)
            .with_intent(Intent::Canceled)
            .count(),
        1
    );
    // The end listener may take longer than the timer: nothing is due meanwhile.
    rule.advance(120_000);
    assert!(rule.fire_due().is_empty());
    run_listener(
        &mut rule,
        "after-guarded",
        JobListenerEventType::End,
        json!({}),
    );
    assert!(!rule.records().element("late").exists());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}
