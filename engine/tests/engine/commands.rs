//! Commands on their own: bad input is rejected with a reason and changes nothing;
//! jobs, variables, deployments, create-and-await and reads behave as the gateway
//! needs them to.

use rill_engine::ProcessInstanceState;
use rill_engine_api::{Action, state_digest};
use rill_protocol::{
    ActivateJobs, Command, CommandResponse, CreateProcessInstance, FailJob, Intent, JsonValue, Key,
    ProcessSelector, PublishMessage, RecordValue, RejectionType, SetVariables, ThrowError,
    UpdateJob,
};
use serde_json::json;

use super::elements::{flow, model, task};
use super::*;

/// An activation request of worker `w`, every variable fetched.
fn activate(job_type: &str, max_jobs: i32, timeout: i64) -> Command {
    Command::ActivateJobs(ActivateJobs {
        job_type: job_type.into(),
        worker: "w".into(),
        timeout,
        max_jobs,
        fetch_variables: vec![],
    })
}

fn one_task() -> String {
    model(
        &[
            r#"<bpmn:startEvent id="s" />"#,
            &task("t", "t"),
            r#"<bpmn:endEvent id="e" />"#,
            &flow("f0", "s", "t"),
            &flow("f1", "t", "e"),
        ]
        .concat(),
    )
}

#[test]
fn bad_input_is_rejected_with_a_reason_and_changes_nothing() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let instance = rule.create("p", json!({}));
    let (job, _) = rule.job("t");
    let unknown = Key::new(rill_protocol::PartitionId(1), 999_999);
    let create = |process, variables| {
        Command::CreateProcessInstance(CreateProcessInstance {
            process,
            variables: JsonValue::from(variables),
            await_result: false,
            fetch_variables: vec![],
            tags: Vec::new(),
        })
    };
    let by_id = |id: &str, version| ProcessSelector::ById {
        bpmn_process_id: id.into(),
        version,
    };
    let cases: Vec<(&str, Command, RejectionType, &str)> = vec![
        (
            "variables not an object",
            create(by_id("p", None), json!([1])),
            RejectionType::InvalidArgument,
            "JSON object",
        ),
        (
            "unknown process id",
            create(by_id("nope", None), json!({})),
            RejectionType::NotFound,
            "'nope'",
        ),
        (
            "unknown version",
            create(by_id("p", Some(7)), json!({})),
            RejectionType::NotFound,
            "version '7'",
        ),
        (
            "unknown definition key",
            create(ProcessSelector::ByKey(unknown), json!({})),
            RejectionType::NotFound,
            "key",
        ),
        (
            "cancel unknown instance",
            Command::CancelProcessInstance {
                process_instance_key: unknown,
            },
            RejectionType::NotFound,
            "no such process instance",
        ),
        (
            "cancel a job key",
            Command::CancelProcessInstance {
                process_instance_key: job,
            },
            RejectionType::NotFound,
            "no such process instance",
        ),
        (
            "complete unknown job",
            Command::CompleteJob {
                job_key: unknown,
                variables: JsonValue::null(),
                result: Default::default(),
            },
            RejectionType::NotFound,
            "no such job was found",
        ),
        (
            "complete with a string",
            Command::CompleteJob {
                job_key: job,
                variables: JsonValue::from(json!("x")),
                result: Default::default(),
            },
            RejectionType::InvalidArgument,
            "JSON object",
        ),
        (
            "fail with negative retries",
            Command::FailJob(FailJob {
                job_key: job,
                retries: -1,
                error_message: String::new(),
                retry_backoff: 0,
                variables: JsonValue::null(),
            }),
            RejectionType::InvalidArgument,
            "retries",
        ),
        (
            "fail with negative backoff",
            Command::FailJob(FailJob {
                job_key: job,
                retries: 1,
                error_message: String::new(),
                retry_backoff: -5,
                variables: JsonValue::null(),
            }),
            RejectionType::InvalidArgument,
            "back-off",
        ),
        (
            "throw without a code",
            Command::ThrowError(ThrowError {
                job_key: job,
                error_code: String::new(),
                error_message: String::new(),
                variables: JsonValue::null(),
            }),
            RejectionType::InvalidArgument,
            "error code",
        ),
        (
            "update retries to 0",
            Command::UpdateJob(UpdateJob {
                job_key: job,
                retries: Some(0),
                timeout: None,
            }),
            RejectionType::InvalidArgument,
            "positive",
        ),
        (
            "update nothing",
            Command::UpdateJob(UpdateJob {
                job_key: job,
                retries: None,
                timeout: None,
            }),
            RejectionType::InvalidArgument,
            "neither",
        ),
        (
            "update unknown job",
            Command::UpdateJob(UpdateJob {
                job_key: unknown,
                retries: Some(1),
                timeout: None,
            }),
            RejectionType::NotFound,
            "no such job",
        ),
        (
            "activate zero jobs",
            activate("t", 0, 1000),
            RejectionType::InvalidArgument,
            "at least one job",
        ),
        (
            "activate with no timeout",
            activate("t", 1, 0),
            RejectionType::InvalidArgument,
            "timeout",
        ),
        (
            "activate without a type",
            activate("", 1, 1000),
            RejectionType::InvalidArgument,
            "type",
        ),
        (
            "publish without a name",
            Command::PublishMessage(PublishMessage {
                name: String::new(),
                correlation_key: "k".into(),
                time_to_live: 0,
                message_id: String::new(),
                variables: JsonValue::null(),
            }),
            RejectionType::InvalidArgument,
            "name",
        ),
        (
            "publish with negative ttl",
            Command::PublishMessage(PublishMessage {
                name: "m".into(),
                correlation_key: "k".into(),
                time_to_live: -1,
                message_id: String::new(),
                variables: JsonValue::null(),
            }),
            RejectionType::InvalidArgument,
            "time to live",
        ),
        (
            "publish array variables",
            Command::PublishMessage(PublishMessage {
                name: "m".into(),
                correlation_key: "k".into(),
                time_to_live: 0,
                message_id: String::new(),
                variables: JsonValue::from(json!([])),
            }),
            RejectionType::InvalidArgument,
            "JSON object",
        ),
        (
            "resolve unknown incident",
            Command::ResolveIncident {
                incident_key: unknown,
            },
            RejectionType::NotFound,
            "no such incident",
        ),
        (
            "set variables on unknown scope",
            Command::SetVariables(SetVariables {
                element_instance_key: unknown,
                variables: JsonValue::from(json!({"a": 1})),
                local: true,
            }),
            RejectionType::NotFound,
            "no such element",
        ),
        (
            "set variables to a number",
            Command::SetVariables(SetVariables {
                element_instance_key: instance,
                variables: JsonValue::from(json!(3)),
                local: true,
            }),
            RejectionType::InvalidArgument,
            "JSON object",
        ),
        (
            "trigger unknown timer",
            Command::TriggerTimer { timer_key: unknown },
            RejectionType::NotFound,
            "no such timer",
        ),
        (
            "time out a job that is not due",
            Command::TimeOutJob { job_key: job },
            RejectionType::InvalidState,
            "deadline",
        ),
        (
            "recur a job that did not fail",
            Command::RecurJob { job_key: job },
            RejectionType::InvalidState,
            "in state",
        ),
        (
            "yield unknown job",
            Command::YieldJob { job_key: unknown },
            RejectionType::NotFound,
            "no such job",
        ),
        (
            "expire unknown message",
            Command::ExpireMessage {
                message_key: unknown,
            },
            RejectionType::NotFound,
            "no such message",
        ),
        (
            "deploy nothing",
            Command::Deploy { resources: vec![] },
            RejectionType::InvalidArgument,
            "at least one",
        ),
        (
            "deploy a text file",
            Command::Deploy {
                resources: vec![rill_protocol::Resource {
                    name: "notes.txt".into(),
                    content: rill_protocol::Blob(b"hi".to_vec()),
                }],
            },
            RejectionType::InvalidArgument,
            "notes.txt",
        ),
        (
            "deploy invalid BPMN",
            Command::Deploy {
                resources: vec![rill_protocol::Resource {
                    name: "bad.bpmn".into(),
                    content: rill_protocol::Blob(b"<nope".to_vec()),
                }],
            },
            RejectionType::InvalidArgument,
            "bad.bpmn",
        ),
        (
            "activate elements of an element instance that is not an ad-hoc subprocess",
            Command::ActivateAdHocSubProcessActivities(
                rill_protocol::ActivateAdHocSubProcessActivities {
                    ad_hoc_sub_process_instance_key: instance,
                    elements: vec![rill_protocol::value::AdHocSubProcessActivateElement {
                        element_id: "t".into(),
                        variables: JsonValue::from(json!({})),
                    }],
                    cancel_remaining_instances: false,
                },
            ),
            RejectionType::NotFound,
            "not an ad-hoc sub-process",
        ),
        (
            "activate elements of an unknown ad-hoc subprocess",
            Command::ActivateAdHocSubProcessActivities(
                rill_protocol::ActivateAdHocSubProcessActivities {
                    ad_hoc_sub_process_instance_key: unknown,
                    elements: Vec::new(),
                    cancel_remaining_instances: false,
                },
            ),
            RejectionType::NotFound,
            "no ad-hoc sub-process instance found",
        ),
        (
            "acknowledge a send that is not waiting",
            Command::AcknowledgeSend {
                target: rill_protocol::PartitionId(2),
                sequence: 1,
            },
            RejectionType::NotFound,
            "not waiting",
        ),
    ];
    for (name, command, rejection_type, fragment) in cases {
        let before = state_digest(&rule.state).unwrap();
        let outcome = rule.process(command);
        let (actual_type, reason) = rejection_of(&outcome);
        assert_eq!(actual_type, rejection_type, "{name}: {reason}");
        assert!(
            reason.contains(fragment),
            "{name}: '{reason}' lacks '{fragment}'"
        );
        assert_eq!(
            outcome.records.len(),
            1,
            "{name}: only the rejection record"
        );
        assert_eq!(
            state_digest(&rule.state).unwrap(),
            before,
            "{name} changed state"
        );
    }
    // Completing twice: the second is refused.
    assert!(!rule.complete(job, json!({})).is_rejected());
    let twice = rule.complete(job, json!({}));
    assert_eq!(twice.rejection().rejection_type, RejectionType::NotFound);
}

#[test]
fn deploying_the_same_xml_again_keeps_the_version_and_a_change_makes_a_new_one() {
    let mut rule = EngineRule::new();
    let xml = one_task();
    let first = rule.deploy_xml(&xml);
    let second = rule.deploy_xml(&xml);
    let meta = |o: &Outcome| match o.value() {
        RecordValue::Deployment(d) => d.processes_metadata[0].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(meta(&first).version, 1);
    assert_eq!(meta(&second).version, 1);
    assert!(meta(&second).is_duplicate);
    assert_eq!(
        meta(&first).process_definition_key,
        meta(&second).process_definition_key
    );
    let changed = rule.deploy_xml(&xml.replace(r#"type="t""#, r#"type="t2""#));
    assert_eq!(meta(&changed).version, 2);
    assert!(!meta(&changed).is_duplicate);
    // Latest by default, or a given version.
    rule.create("p", json!({}));
    assert_eq!(rule.activate("t2", 10).len(), 1);
    let v1 = rule.process(Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ById {
            bpmn_process_id: "p".into(),
            version: Some(1),
        },
        variables: JsonValue::null(),
        await_result: false,
        fetch_variables: vec![],
        tags: Vec::new(),
    }));
    assert!(!v1.is_rejected());
    assert_eq!(rule.activate("t", 10).len(), 1);
    let defs = rule.process_definitions(Some("p"));
    assert_eq!(
        defs.iter().map(|d| d.version).collect::<Vec<_>>(),
        vec![1, 2]
    );
    // A fresh engine (empty model cache) runs instances from the stored XML.
    rule.engine = rill_engine::BpmnEngine::default();
    rule.create("p", json!({}));
    assert_eq!(rule.activate("t2", 10).len(), 1);
}

#[test]
fn create_and_await_answers_with_the_fetched_variables_when_the_instance_completes() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let request = rule.new_request();
    let outcome = rule.process_as(
        Command::CreateProcessInstance(CreateProcessInstance {
            process: ProcessSelector::ById {
                bpmn_process_id: "p".into(),
                version: None,
            },
            variables: JsonValue::from(json!({"a": 1, "b": 2})),
            await_result: true,
            fetch_variables: vec!["a".into(), "c".into()],
            tags: Vec::new(),
        }),
        Some(request),
    );
    assert!(
        outcome.response.is_none(),
        "answered only when the instance completes"
    );
    let (job, _) = rule.job("t");
    let done = rule.complete(job, json!({"c": 3}));
    let response = done
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Respond {
                request: r,
                response,
            } if *r == request => Some(response.clone()),
            _ => None,
        })
        .expect("a response for the waiting request");
    match response {
        rill_protocol::CommandResponse::Accepted {
            value: RecordValue::ProcessInstanceResult(result),
            ..
        } => {
            assert_eq!(result.variables.to_value(), json!({"a": 1, "c": 3}));
        }
        other => panic!("{other:?}"),
    }
    rule.assert_replay_matches();
}

#[test]
fn create_and_await_on_an_instance_that_ends_at_once_answers_in_the_same_command() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(
        &[
            r#"<bpmn:startEvent id="s" />"#,
            r#"<bpmn:endEvent id="e" />"#,
            &flow("f", "s", "e"),
        ]
        .concat(),
    ));
    let request = rule.new_request();
    let outcome = rule.process_as(
        Command::CreateProcessInstance(CreateProcessInstance {
            process: ProcessSelector::ById {
                bpmn_process_id: "p".into(),
                version: None,
            },
            variables: JsonValue::from(json!({"x": true})),
            await_result: true,
            fetch_variables: vec![],
            tags: Vec::new(),
        }),
        Some(request),
    );
    match outcome.response {
        Some(rill_protocol::CommandResponse::Accepted {
            intent: Intent::Completed,
            value: RecordValue::ProcessInstanceResult(r),
            ..
        }) => {
            assert_eq!(r.variables.to_value(), json!({"x": true}));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn jobs_fail_with_backoff_time_out_and_update_their_timeout() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let instance = rule.create("p", json!({"keep": 1, "skip": 2}));
    // Fetch filter.
    let outcome = rule.process(Command::ActivateJobs(ActivateJobs {
        job_type: "t".into(),
        worker: "w1".into(),
        timeout: 5_000,
        max_jobs: 1,
        fetch_variables: vec!["keep".into()],
    }));
    let (job, record) = match outcome.value() {
        RecordValue::JobBatch(b) => (Key(b.job_keys[0]), b.jobs[0].clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(record.variables.to_value(), json!({"keep": 1}));
    assert_eq!(record.worker, "w1");
    assert_eq!(record.deadline, rule.now + 5_000);
    assert!(outcome.actions.contains(&Action::WakeAt {
        due: rill_protocol::Timestamp(rule.now + 5_000)
    }));

    // Fail with a back-off: not activatable until it passes.
    rule.process(Command::FailJob(FailJob {
        job_key: job,
        retries: 2,
        error_message: "flaky".into(),
        retry_backoff: 1_000,
        variables: JsonValue::from(json!({"attempt": 1})),
    }));
    assert!(rule.activate("t", 1).is_empty());
    rule.advance(1_000);
    assert_eq!(rule.fire_due().len(), 1);
    let again = rule.activate("t", 1);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].1.retries, 2);
    assert_eq!(
        again[0].1.variables.to_value()["attempt"],
        json!(1),
        "fail variables are local to the task"
    );

    // Time out: activatable again.
    rule.advance(30_000);
    let timed_out = rule.fire_due();
    assert_eq!(timed_out.len(), 1);
    assert!(timed_out[0].actions.contains(&Action::JobsAvailable {
        job_type: "t".into()
    }));
    let third = rule.activate("t", 1);
    assert_eq!(third.len(), 1);

    // Update the timeout of the active job.
    let update = rule.process(Command::UpdateJob(UpdateJob {
        job_key: job,
        retries: None,
        timeout: Some(90_000),
    }));
    assert!(!update.is_rejected(), "{:?}", update.response);
    let view = rule.job_state(job).expect("the job");
    assert_eq!(view.state, JobState::Activated);
    assert_eq!(view.record.deadline, rule.now + 90_000);
    rule.complete(job, json!({}));
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    assert!(rule.variables(instance).get("attempt").is_none());
    rule.assert_replay_matches();
}

/// A job handed back unworked (a job stream that went away) is activatable again at
/// once, keeps its retries and deadline-free state, and leaves no failure behind.
#[test]
fn a_yielded_job_is_activatable_again_with_its_retries_and_no_failure() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let instance = rule.create("p", json!({}));
    let (job, record) = rule.job("t");
    let retries = record.retries;
    assert!(
        rule.activate("t", 1).is_empty(),
        "activated: not offered twice"
    );

    let yielded = rule.process(Command::YieldJob { job_key: job });
    assert!(!yielded.is_rejected(), "{:?}", yielded.response);
    assert!(yielded.actions.contains(&Action::JobsAvailable {
        job_type: "t".into()
    }));
    let events = rule
        .records()
        .of_type(rill_protocol::ValueType::Job)
        .events();
    assert_eq!(
        events.records.iter().map(|r| r.intent).collect::<Vec<_>>(),
        vec![Intent::Created, Intent::Yielded]
    );
    assert!(!rule.records().with_intent(Intent::Failed).exists());
    let view = rule.job_state(job).expect("the job");
    assert_eq!(view.state, JobState::Activatable);
    assert_eq!(view.record.retries, retries);
    assert_eq!(view.record.deadline, -1);

    // Only an activated job can be yielded.
    let again = rule.process(Command::YieldJob { job_key: job });
    assert_eq!(rejection_of(&again).0, RejectionType::InvalidState);

    let (same, _) = rule.job("t");
    assert_eq!(same, job);
    rule.complete(job, json!({}));
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn set_variables_local_or_propagated() {
    let mut rule = EngineRule::new();
    let xml = model(
        &[
            r#"<bpmn:startEvent id="s" />"#,
            r#"<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="t" /><zeebe:ioMapping><zeebe:input source="=1" target="mine" /></zeebe:ioMapping></bpmn:extensionElements></bpmn:serviceTask>"#,
            &flow("f0", "s", "t"),
        ]
        .concat(),
    );
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({"top": 0}));
    let (_, job) = rule.job("t");
    let task = Key(job.element_instance_key);
    let set = |rule: &mut EngineRule, variables, local| {
        let outcome = rule.process(Command::SetVariables(SetVariables {
            element_instance_key: task,
            variables: JsonValue::from(variables),
            local,
        }));
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    };
    set(&mut rule, json!({"top": 1, "mine": 2, "new": 3}), false);
    assert_eq!(rule.variables(instance), json!({"top": 1, "new": 3}));
    set(&mut rule, json!({"top": 9}), true);
    assert_eq!(rule.variables(instance)["top"], json!(1));
    let vars = rule.scope_variables(instance, task);
    let mut names: Vec<_> = vars
        .as_object()
        .expect("an object")
        .iter()
        .map(|(name, value)| (name.clone(), value.to_string()))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![("mine".into(), "2".into()), ("top".into(), "9".into())]
    );
    rule.assert_replay_matches();
}

#[test]
fn a_finished_instance_is_read_from_the_history_and_the_engine_keeps_nothing_of_it() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let instance = rule.create("p", json!({"a": 1}));
    let (job, _) = rule.job("t");
    let started = rule.now;
    rule.advance(500);
    let done = rule.complete(job, json!({}));
    assert!(
        !done
            .actions
            .iter()
            .any(|action| matches!(action, Action::WakeAt { .. })),
        "nothing is left to expire: {:?}",
        done.actions
    );
    let view = rule.instance_state(instance).unwrap();
    assert_eq!(view.state, ProcessInstanceState::Completed);
    assert_eq!(view.start_date.millis(), started);
    assert_eq!(view.end_date.map(|d| d.millis()), Some(started + 500));
    assert_eq!(
        rule.scope_variables(instance, instance),
        json!({}),
        "the process scope's variables went with the instance (the history keeps them)"
    );
    // However long after, the leader has nothing to propose for it.
    rule.advance(24 * 3_600_000);
    assert!(rule.fire_due().is_empty());
    // The engine's state has no entry under the instance's key left.
    let key = instance.get().to_be_bytes();
    let mut holding = Vec::new();
    rill_engine_api::StateRead::scan(&rule.state, b"", b"", &mut |k, _| {
        if k.windows(key.len()).any(|w| w == key) {
            holding.push(k.to_vec());
        }
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    assert!(
        holding.is_empty(),
        "left in the engine's state: {holding:x?}"
    );
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed,
        "the history store keeps it"
    );
    rule.assert_replay_matches();
}

#[test]
fn an_instance_summary_expiry_from_an_older_log_is_accepted_and_changes_nothing() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let active = rule.create("p", json!({}));
    let finished = rule.create("p", json!({}));
    let job = rule
        .activate("t", 10)
        .into_iter()
        .find(|(_, record)| record.process_instance_key == finished.get())
        .map(|(key, _)| key)
        .expect("the job of the instance to finish");
    rule.complete(job, json!({}));
    for key in [active, finished, Key(4242)] {
        let before = state_digest(&rule.state).unwrap();
        let outcome = rule.process(Command::ExpireInstanceSummary {
            process_instance_key: key,
        });
        assert!(outcome.response.is_none(), "{:?}", outcome.response);
        // Its command record and nothing else: no rejection, no event.
        let kinds: Vec<_> = outcome
            .records
            .iter()
            .map(|r| (r.record_type, r.intent))
            .collect();
        assert_eq!(
            kinds,
            vec![(rill_protocol::RecordType::Command, Intent::Delete)]
        );
        assert_eq!(state_digest(&rule.state).unwrap(), before);
    }
    assert_eq!(
        rule.instance_state(active).unwrap().state,
        ProcessInstanceState::Active
    );
    rule.assert_replay_matches();
}

#[test]
fn element_instances_and_incidents_are_readable_by_instance() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let instance = rule.create("p", json!({}));
    let (job, _) = rule.job("t");
    rule.process(Command::FailJob(FailJob {
        job_key: job,
        retries: 0,
        error_message: String::new(),
        retry_backoff: 0,
        variables: JsonValue::null(),
    }));
    let ids = rule.element_instances(instance);
    assert_eq!(ids, vec![("p".into(), false), ("t".into(), true)]);
    let incidents = rule.incidents(instance);
    assert_eq!(incidents[0].record.error_message, "No more retries left.");
    assert!(rule.instance_state(instance).unwrap().has_incident);
    // Cancelling resolves the incident with the instance.
    rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(rule.incidents(instance).is_empty());
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Terminated
    );
    rule.assert_replay_matches();
}

#[test]
fn a_job_batch_stays_within_the_message_size() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    let big = "x".repeat(1_500_000);
    for _ in 0..3 {
        rule.create("p", json!({ "blob": big }));
    }
    let outcome = rule.process(Command::ActivateJobs(ActivateJobs {
        job_type: "t".into(),
        worker: "w".into(),
        timeout: 1_000,
        max_jobs: 10,
        fetch_variables: vec![],
    }));
    match outcome.value() {
        RecordValue::JobBatch(batch) => {
            assert_eq!(batch.jobs.len(), 2);
            assert!(batch.truncated);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        rule.activate("t", 10).len(),
        1,
        "the third job is still there"
    );
}

#[test]
fn due_commands_come_in_due_order_up_to_the_limit_with_the_next_due_time() {
    use rill_engine_api::Engine;
    let mut rule = EngineRule::new();
    let xml = model(
        &[
            r#"<bpmn:startEvent id="s" />"#,
            r#"<bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>=wait</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"#,
            &flow("f0", "s", "w"),
        ]
        .concat(),
    );
    rule.deploy_xml(&xml);
    for seconds in [30, 10, 20] {
        rule.create("p", json!({ "wait": format!("PT{seconds}S") }));
    }
    let start = rule.now;
    let mut out = Vec::new();
    let next = rule
        .engine
        .due_commands(
            &rule.state,
            rill_protocol::Timestamp(start + 25_000),
            1,
            &mut out,
        )
        .unwrap();
    assert_eq!(out.len(), 1, "the limit is respected");
    assert_eq!(
        next,
        Some(rill_protocol::Timestamp(start + 20_000)),
        "more is due already"
    );
    let first = out.remove(0);
    let timer_key = match &first {
        Command::TriggerTimer { timer_key } => *timer_key,
        other => panic!("{other:?}"),
    };
    assert!(timer_key.get() > 0);
    let next = rule
        .engine
        .due_commands(
            &rule.state,
            rill_protocol::Timestamp(start + 25_000),
            10,
            &mut out,
        )
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(next, Some(rill_protocol::Timestamp(start + 30_000)));
    // Triggering before the due time is refused; at it, accepted.
    let early = rule.process(first.clone());
    assert_eq!(
        early.rejection().rejection_type,
        RejectionType::InvalidState
    );
    rule.advance(10_000);
    assert!(!rule.process(first.clone()).is_rejected());
    let duplicate = rule.process(first);
    assert_eq!(
        duplicate.rejection().rejection_type,
        RejectionType::NotFound
    );
}

#[test]
fn a_processing_error_record_has_the_commands_value_type() {
    use rill_engine_api::Engine;
    let engine = rill_engine::BpmnEngine::default();
    let cases = [
        (
            Command::CompleteJob {
                job_key: Key(5),
                variables: JsonValue::null(),
                result: Default::default(),
            },
            rill_protocol::ValueType::Job,
        ),
        (
            Command::CancelProcessInstance {
                process_instance_key: Key(5),
            },
            rill_protocol::ValueType::ProcessInstance,
        ),
        (
            Command::TriggerTimer { timer_key: Key(5) },
            rill_protocol::ValueType::Timer,
        ),
        (
            Command::ResolveIncident {
                incident_key: Key(5),
            },
            rill_protocol::ValueType::Incident,
        ),
        (
            Command::Deploy { resources: vec![] },
            rill_protocol::ValueType::Deployment,
        ),
        (
            Command::ActivateAdHocSubProcessActivities(
                rill_protocol::ActivateAdHocSubProcessActivities {
                    ad_hoc_sub_process_instance_key: Key(5),
                    elements: Vec::new(),
                    cancel_remaining_instances: false,
                },
            ),
            rill_protocol::ValueType::AdHocSubProcessInstruction,
        ),
    ];
    for (command, value_type) in cases {
        let record = engine.processing_error_record(&command, "broken");
        assert_eq!(record.value_type(), value_type);
        assert_eq!(record.rejection_type, RejectionType::ProcessingError);
        assert_eq!(record.rejection_reason, "broken");
    }
}

#[test]
fn an_activation_that_finds_nothing_is_answered_from_state_and_one_with_jobs_is_not() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&one_task());
    // No job yet: an empty batch, no key, nothing to write.
    let records_before = rule.log.len();
    match rule.answer_from_state(&activate("t", 5, 1_000)) {
        Some(CommandResponse::Accepted { key, intent, value }) => {
            assert_eq!(key, Key::NONE);
            assert_eq!(intent, Intent::Activated);
            let RecordValue::JobBatch(batch) = value else {
                panic!("{value:?}");
            };
            assert!(batch.jobs.is_empty() && batch.job_keys.is_empty());
            assert_eq!(
                (batch.job_type.as_str(), batch.max_jobs_to_activate),
                ("t", 5)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(rule.log.len(), records_before, "answering wrote nothing");
    // Invalid requests go through the log, for their rejection record.
    assert!(rule.answer_from_state(&activate("t", 0, 1_000)).is_none());
    assert!(rule.answer_from_state(&activate("t", 1, 0)).is_none());
    assert!(rule.answer_from_state(&activate("", 1, 1_000)).is_none());

    // A job of the type: the activation must be proposed, and finds it.
    rule.create("p", json!({}));
    assert!(rule.answer_from_state(&activate("t", 1, 1_000)).is_none());
    assert!(
        rule.answer_from_state(&activate("other", 1, 1_000))
            .is_some()
    );
    assert_eq!(rule.activate("t", 1).len(), 1);
    // Activated, it is no longer there to find.
    assert!(rule.answer_from_state(&activate("t", 1, 1_000)).is_some());
}
