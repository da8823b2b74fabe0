//! User task listeners: jobs a Camunda user task's transitions wait for, their
//! corrections and denials, incidents, and cancellation.

use rill_engine::ProcessInstanceState;
use rill_engine_api::Action;
use rill_protocol::value::{
    IncidentErrorType, JobKind, JobListenerEventType, JobRecord, JobResult, JobResultCorrections,
    UserTaskRecord,
};
use rill_protocol::{
    Command, CommandResponse, FailJob, Intent, JsonValue, Key, RecordValue, RejectionType,
    UpdateJob, UserTaskChanges, UserTaskCommand, ValueType,
};
use serde_json::{Value, json};

use super::elements::{flow, model};
use super::*;

/// start → `Review` (a Camunda user task with these listeners and a header) → end.
fn process(listeners: &str, assignment: &str) -> String {
    model(&format!(
        r#"<bpmn:startEvent id="s" />
        <bpmn:userTask id="Review"><bpmn:extensionElements>
          <zeebe:userTask />{assignment}
          <zeebe:taskHeaders><zeebe:header key="team" value="blue" /></zeebe:taskHeaders>
          <zeebe:taskListeners>{listeners}</zeebe:taskListeners>
        </bpmn:extensionElements></bpmn:userTask>
        <bpmn:endEvent id="e" />
        {}{}"#,
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e")
    ))
}

fn listener(event: &str, job_type: &str) -> String {
    format!(r#"<zeebe:taskListener eventType="{event}" type="{job_type}" retries="2" />"#)
}

fn intents(rule: &EngineRule) -> Vec<Intent> {
    rule.records()
        .events()
        .of_type(ValueType::UserTask)
        .records
        .iter()
        .map(|r| r.intent)
        .collect()
}

fn last_task(rule: &EngineRule) -> UserTaskRecord {
    rule.records()
        .events()
        .of_type(ValueType::UserTask)
        .records
        .iter()
        .rev()
        .find_map(|r| match &r.value {
            RecordValue::UserTask(v) => Some(v.clone()),
            _ => None,
        })
        .expect("a USER_TASK event")
}

/// Activates the one listener job of `job_type` and checks it is a task listener's of
/// `event`.
fn listener_job(
    rule: &mut EngineRule,
    job_type: &str,
    event: JobListenerEventType,
) -> (Key, JobRecord) {
    let (key, job) = rule.job(job_type);
    assert_eq!(job.job_kind, JobKind::TaskListener, "{job_type}");
    assert_eq!(job.job_listener_event_type, event, "{job_type}");
    (key, job)
}

fn complete_with(rule: &mut EngineRule, job_key: Key, result: JobResult) -> Outcome {
    rule.process(Command::CompleteJob {
        job_key,
        variables: JsonValue::from(json!({})),
        result,
    })
}

fn corrections(attributes: &[&str], corrections: JobResultCorrections) -> JobResult {
    JobResult {
        corrected_attributes: attributes.iter().map(|a| (*a).to_owned()).collect(),
        corrections,
        ..JobResult::default()
    }
}

fn denial(reason: &str) -> JobResult {
    JobResult {
        denied: true,
        denied_reason: reason.to_owned(),
        ..JobResult::default()
    }
}

fn complete_task(key: Key, variables: Value) -> Command {
    Command::UserTask(UserTaskCommand::Complete {
        user_task_key: key,
        variables: JsonValue::from(variables),
        action: String::new(),
    })
}

fn assign(key: Key, assignee: &str) -> Command {
    Command::UserTask(UserTaskCommand::Assign {
        user_task_key: key,
        assignee: assignee.to_owned(),
        action: String::new(),
        allow_override: true,
    })
}

/// The answer a later command gave to the client request `request`.
fn answer_to(outcome: &Outcome, request: rill_engine_api::RequestId) -> &CommandResponse {
    outcome
        .actions
        .iter()
        .find_map(|action| match action {
            Action::Respond {
                request: r,
                response,
            } if *r == request => Some(response),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no answer to {request:?} in {:?}", outcome.actions))
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

#[test]
fn listeners_run_in_order_and_each_transition_waits_for_them() {
    let mut rule = EngineRule::new();
    let listeners = [
        listener("creating", "on-create"),
        listener("completing", "validate"),
        r#"<zeebe:taskListener eventType="completing" type="=&quot;audit-&quot; + region" retries="=1 + 4" />"#.to_owned(),
    ]
    .concat();
    let deployed = rule.deploy_xml(&process(&listeners, ""));
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({"region": "eu"}));

    // CREATING waits for the creating listener; the element is not activated yet.
    assert_eq!(intents(&rule), vec![Intent::Creating]);
    assert!(
        !rule
            .records()
            .element("Review")
            .with_intent(Intent::ElementActivated)
            .exists()
    );
    let (on_create, job) = listener_job(&mut rule, "on-create", JobListenerEventType::Creating);
    assert_eq!(job.custom_headers["team"], "blue");
    assert_eq!(job.custom_headers["io.camunda.zeebe:priority"], "50");
    assert!(!job.custom_headers.contains_key("io.camunda.zeebe:assignee"));
    assert_eq!(job.variables.to_value()["region"], "eu");
    let task_key: i64 = job.custom_headers["io.camunda.zeebe:userTaskKey"]
        .parse()
        .unwrap();

    // The creating listener sets an assignee and a priority: CORRECTED, then CREATED
    // with them, and the element is activated.
    let done = complete_with(
        &mut rule,
        on_create,
        corrections(
            &["assignee", "priority"],
            JobResultCorrections {
                assignee: "ann".to_owned(),
                priority: 80,
                ..JobResultCorrections::default()
            },
        ),
    );
    assert!(!done.is_rejected(), "{:?}", done.response);
    assert_eq!(
        intents(&rule),
        vec![Intent::Creating, Intent::Corrected, Intent::Created]
    );
    let created = last_task(&rule);
    assert_eq!((created.assignee.as_str(), created.priority), ("ann", 80));
    assert!(
        rule.records()
            .element("Review")
            .with_intent(Intent::ElementActivated)
            .exists()
    );

    // A completion waits for both completing listeners, in order; the client hears
    // the outcome when the last one completed.
    let request = rule.new_request();
    let started = rule.process_as(
        complete_task(Key(task_key), json!({"ok": true})),
        Some(request),
    );
    assert!(started.response.is_none(), "{:?}", started.response);
    assert_eq!(intents(&rule).last(), Some(&Intent::Completing));
    let (validate, job) = listener_job(&mut rule, "validate", JobListenerEventType::Completing);
    assert_eq!(job.custom_headers["io.camunda.zeebe:assignee"], "ann");
    assert_eq!(job.custom_headers["io.camunda.zeebe:action"], "complete");
    assert_eq!(job.retries, 2);
    assert!(
        rule.activate("audit-eu", 1).is_empty(),
        "one listener at a time"
    );
    assert!(!rule.complete(validate, json!({})).is_rejected());
    let (audit, job) = listener_job(&mut rule, "audit-eu", JobListenerEventType::Completing);
    assert_eq!(job.retries, 5);
    let last = rule.complete(audit, json!({}));
    assert!(!last.is_rejected());
    match answer_to(&last, request) {
        CommandResponse::Accepted { intent, .. } => assert_eq!(*intent, Intent::Completed),
        other => panic!("{other:?}"),
    }
    assert_eq!(intents(&rule).last(), Some(&Intent::Completed));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["ok"], true);
    rule.assert_replay_matches();
}

#[test]
fn listeners_deny_or_correct_assignments_updates_and_completions() {
    let mut rule = EngineRule::new();
    let listeners = [
        listener("assigning", "check-assignee"),
        listener("updating", "check-update"),
        listener("completing", "check-completion"),
    ]
    .concat();
    rule.deploy_xml(&process(
        &listeners,
        r#"<zeebe:assignmentDefinition assignee="ann" />"#,
    ));
    let instance = rule.create("p", json!({}));

    // The model's assignee goes through the assigning listeners too; a correction
    // replaces it.
    assert_eq!(
        intents(&rule),
        vec![Intent::Creating, Intent::Created, Intent::Assigning]
    );
    let (job_key, job) = listener_job(&mut rule, "check-assignee", JobListenerEventType::Assigning);
    assert_eq!(job.custom_headers["io.camunda.zeebe:assignee"], "ann");
    assert_eq!(
        job.custom_headers["io.camunda.zeebe:changedAttributes"],
        r#"["assignee"]"#
    );
    let task_key = Key(job.custom_headers["io.camunda.zeebe:userTaskKey"]
        .parse()
        .unwrap());
    complete_with(
        &mut rule,
        job_key,
        corrections(
            &["assignee", "candidateGroupsList"],
            JobResultCorrections {
                assignee: "bob".to_owned(),
                candidate_groups_list: vec!["reviewers".to_owned()],
                ..JobResultCorrections::default()
            },
        ),
    );
    let assigned = last_task(&rule);
    assert_eq!(intents(&rule).last(), Some(&Intent::Assigned));
    assert_eq!(assigned.assignee, "bob");
    assert_eq!(assigned.candidate_groups_list, vec!["reviewers"]);
    assert_eq!(
        assigned.changed_attributes,
        vec!["assignee", "candidateGroupsList"]
    );

    // A denied assignment: the client hears why, the assignee stays.
    let request = rule.new_request();
    rule.process_as(assign(task_key, "carl"), Some(request));
    let (job_key, _) = listener_job(&mut rule, "check-assignee", JobListenerEventType::Assigning);
    let denied = complete_with(&mut rule, job_key, denial("carl is on holiday"));
    match answer_to(&denied, request) {
        CommandResponse::Rejected(rejection) => {
            assert_eq!(rejection.rejection_type, RejectionType::InvalidState);
            assert!(
                rejection.reason.contains("Assignment of the user task")
                    && rejection.reason.contains("carl is on holiday"),
                "{}",
                rejection.reason
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(intents(&rule).last(), Some(&Intent::AssignmentDenied));

    // A denied update changes nothing either.
    rule.process(Command::UserTask(UserTaskCommand::Update {
        user_task_key: task_key,
        changes: UserTaskChanges {
            priority: Some(10),
            ..UserTaskChanges::default()
        },
        action: String::new(),
    }));
    let (job_key, job) = listener_job(&mut rule, "check-update", JobListenerEventType::Updating);
    assert_eq!(job.custom_headers["io.camunda.zeebe:priority"], "10");
    complete_with(&mut rule, job_key, denial("too low"));
    assert_eq!(intents(&rule).last(), Some(&Intent::UpdateDenied));

    // A denied completion: the task is workable again and completes the second time.
    rule.process(complete_task(task_key, json!({"first": 1})));
    let (job_key, _) = listener_job(
        &mut rule,
        "check-completion",
        JobListenerEventType::Completing,
    );
    complete_with(&mut rule, job_key, denial("fill in the form"));
    assert_eq!(intents(&rule).last(), Some(&Intent::CompletionDenied));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    let request = rule.new_request();
    let again = rule.process_as(complete_task(task_key, json!({"second": 2})), Some(request));
    assert!(again.response.is_none());
    let (job_key, _) = listener_job(
        &mut rule,
        "check-completion",
        JobListenerEventType::Completing,
    );
    let done = rule.complete(job_key, json!({}));
    assert!(matches!(
        answer_to(&done, request),
        CommandResponse::Accepted { .. }
    ));
    let completed = last_task(&rule);
    assert_eq!(
        (completed.assignee.as_str(), completed.priority),
        ("bob", 50),
        "the denied update left the priority"
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(
        (variables.get("first"), variables["second"].clone()),
        (None, json!(2))
    );
    rule.assert_replay_matches();
}

#[test]
fn bad_listener_results_are_rejected_and_change_nothing() {
    let mut rule = EngineRule::new();
    let listeners = [
        listener("creating", "on-create"),
        listener("completing", "check"),
    ]
    .concat();
    rule.deploy_xml(&process(
        &listeners,
        r#"<zeebe:assignmentDefinition assignee="ann" />"#,
    ));
    rule.create("p", json!({}));
    let (on_create, _) = listener_job(&mut rule, "on-create", JobListenerEventType::Creating);
    let cases = [
        (denial("no"), json!({}), "a creating listener cannot deny"),
        (
            corrections(
                &["assignee"],
                JobResultCorrections {
                    assignee: "bob".to_owned(),
                    ..JobResultCorrections::default()
                },
            ),
            json!({}),
            "but the process assigns it to 'ann'",
        ),
        (
            corrections(
                &["priority"],
                JobResultCorrections {
                    priority: 101,
                    ..JobResultCorrections::default()
                },
            ),
            json!({}),
            "to be from 0 to 100, but it was 101",
        ),
        (
            corrections(
                &["dueDate"],
                JobResultCorrections {
                    due_date: "tomorrow".to_owned(),
                    ..JobResultCorrections::default()
                },
            ),
            json!({}),
            "corrected dueDate",
        ),
        (
            corrections(&["name"], JobResultCorrections::default()),
            json!({}),
            "'name' is not one of them",
        ),
        (JobResult::default(), json!({"x": 1}), "without variables"),
    ];
    for (result, variables, expected) in cases {
        let outcome = rule.process(Command::CompleteJob {
            job_key: on_create,
            variables: JsonValue::from(variables),
            result,
        });
        let (kind, reason) = rejection_of(&outcome);
        assert_eq!(kind, RejectionType::InvalidArgument);
        assert!(reason.contains(expected), "{expected}: {reason}");
    }
    assert_eq!(intents(&rule), vec![Intent::Creating]);
    rule.assert_replay_matches();
}

#[test]
fn a_listener_out_of_retries_raises_an_incident_and_cancelling_cancels_its_job() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&process(&listener("completing", "check"), ""));
    let instance = rule.create("p", json!({}));
    let task_key = Key(last_task(&rule).user_task_key);
    rule.process(complete_task(task_key, json!({})));
    let (job_key, _) = listener_job(&mut rule, "check", JobListenerEventType::Completing);
    rule.process(Command::FailJob(FailJob {
        job_key,
        retries: 0,
        error_message: "checker down".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::from(json!({})),
    }));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::TaskListenerNoRetries
    );
    assert_eq!(incidents[0].record.job_key, job_key.get());

    // Resolved with new retries: the same listener's job runs again.
    rule.process(Command::UpdateJob(UpdateJob {
        job_key,
        retries: Some(1),
        timeout: None,
    }));
    let resolved = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!resolved.is_rejected());
    let (again, _) = listener_job(&mut rule, "check", JobListenerEventType::Completing);
    assert_eq!(again, job_key);

    // Cancelling the instance cancels the listener's job and the task; a client
    // waiting for the completion hears it.
    let request = rule.new_request();
    let waiting = rule.process_as(complete_task(task_key, json!({})), Some(request));
    assert_eq!(
        rejection_of(&waiting).0,
        RejectionType::InvalidState,
        "already completing"
    );
    rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .exists()
    );
    assert_eq!(intents(&rule).last(), Some(&Intent::Canceled));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.activate("check", 1).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn a_listener_type_that_fails_to_evaluate_raises_an_incident_and_resolving_reruns_the_transition() {
    let mut rule = EngineRule::new();
    let listeners = [
        listener("completing", "first"),
        r#"<zeebe:taskListener eventType="completing" type="=kind" />"#.to_owned(),
    ]
    .concat();
    rule.deploy_xml(&process(&listeners, ""));
    let instance = rule.create("p", json!({}));
    let task_key = Key(last_task(&rule).user_task_key);
    rule.process(complete_task(task_key, json!({})));
    let (first, _) = listener_job(&mut rule, "first", JobListenerEventType::Completing);
    rule.complete(first, json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"kind": "second"})),
        local: false,
    }));
    assert!(
        !rule
            .process(Command::ResolveIncident {
                incident_key: incidents[0].key,
            })
            .is_rejected()
    );
    // As in Zeebe, the transition's listeners all run again.
    let (first, _) = listener_job(&mut rule, "first", JobListenerEventType::Completing);
    rule.complete(first, json!({}));
    let (second, _) = listener_job(&mut rule, "second", JobListenerEventType::Completing);
    rule.complete(second, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}
