//! Ad-hoc subprocesses of Zeebe 8.8's job-worker implementation (`zeebe:taskDefinition`
//! on the ad-hoc subprocess, as the AI agent connector uses): a job on activation and
//! after each completed inner instance, one at a time; the job result activates
//! elements or fulfils the completion condition; failures, errors and cancellation.
//! Fixture: `tests/fixtures/elements/ad-hoc-job-worker.bpmn`.

use rill_protocol::value::{
    AdHocSubProcessActivateElement, AdHocSubProcessInstructionRecord, IncidentErrorType, JobKind,
    JobRecord, JobResult, JobResultType,
};
use rill_protocol::{
    Command, FailJob, Intent, JsonValue, Key, RecordValue, RejectionType, ThrowError, UpdateJob,
    ValueType,
};
use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = "elements/ad-hoc-job-worker.bpmn";

fn rule() -> EngineRule {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy_fixture(FIXTURE);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    rule
}

/// The key of the ad-hoc subprocess's one ELEMENT_ACTIVATED event.
fn ad_hoc_key(rule: &EngineRule) -> Key {
    let activated = rule
        .records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .with_intent(Intent::ElementActivated)
        .element("Agent");
    assert_eq!(activated.count(), 1);
    activated.records[0].key
}

fn count(rule: &EngineRule, id: &str, intent: Intent) -> usize {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .with_intent(intent)
        .element(id)
        .count()
}

fn activate(elements: &[(&str, Value)]) -> JobResult {
    JobResult {
        result_type: JobResultType::AdHocSubProcess,
        activate_elements: elements
            .iter()
            .map(|(id, variables)| AdHocSubProcessActivateElement {
                element_id: (*id).to_owned(),
                variables: JsonValue::from(variables.clone()),
            })
            .collect(),
        ..JobResult::default()
    }
}

fn fulfilled(cancel_remaining_instances: bool) -> JobResult {
    JobResult {
        result_type: JobResultType::AdHocSubProcess,
        completion_condition_fulfilled: true,
        cancel_remaining_instances,
        ..JobResult::default()
    }
}

fn complete_with(rule: &mut EngineRule, job_key: Key, variables: Value, result: JobResult) {
    let outcome = rule.process(Command::CompleteJob {
        job_key,
        variables: JsonValue::from(variables),
        result,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn rejected(rule: &mut EngineRule, job_key: Key, result: JobResult) -> (RejectionType, String) {
    let outcome = rule.process(Command::CompleteJob {
        job_key,
        variables: JsonValue::from(json!({})),
        result,
    });
    rejection_of(&outcome)
}

/// Activates the one agent job and checks it is the ad-hoc subprocess's.
fn agent_job(rule: &mut EngineRule) -> (Key, JobRecord) {
    let (key, job) = rule.job("agent");
    assert_eq!(job.job_kind, JobKind::AdHocSubProcess);
    assert_eq!(job.element_id, "Agent");
    (key, job)
}

fn instructions(rule: &EngineRule, intent: Intent) -> Vec<AdHocSubProcessInstructionRecord> {
    rule.records()
        .events()
        .of_type(ValueType::AdHocSubProcessInstruction)
        .with_intent(intent)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::AdHocSubProcessInstruction(v) => v.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn is_completed(rule: &mut EngineRule, instance: Key) -> bool {
    rule.instance_state(instance).expect("instance").state
        == rill_engine::ProcessInstanceState::Completed
}

#[test]
fn activation_creates_a_job_with_the_type_retries_headers_and_elements() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({"question": "why?"}));
    let ad_hoc = ad_hoc_key(&rule);
    let (_, job) = agent_job(&mut rule);
    assert_eq!(job.element_instance_key, ad_hoc.get());
    assert_eq!(job.retries, 2);
    assert_eq!(
        job.custom_headers.get("model").map(String::as_str),
        Some("small")
    );
    // The worker sees the ad-hoc subprocess's scope: the activatable elements, the
    // empty output collection and the process variables.
    let variables = job.variables.to_value();
    let ids: Vec<&str> = variables["adHocSubProcessElements"]
        .as_array()
        .expect("list")
        .iter()
        .map(|e| e["elementId"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, vec!["Search", "Fetch", "Think"]);
    assert_eq!(
        variables["adHocSubProcessElements"][0]["documentation"],
        json!("Finds pages about a query")
    );
    assert_eq!(variables["toolResults"], json!([]));
    assert_eq!(variables["question"], json!("why?"));
    // Nothing is activated before the worker decides.
    assert_eq!(
        count(&rule, "Agent#innerInstance", Intent::ElementActivating),
        0
    );
    assert!(!is_completed(&mut rule, instance));
    rule.assert_replay_matches();
}

#[test]
fn the_result_activates_elements_with_their_local_variables() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let ad_hoc = ad_hoc_key(&rule);
    let (job, _) = agent_job(&mut rule);
    complete_with(
        &mut rule,
        job,
        json!({"agentContext": {"turn": 1}}),
        activate(&[
            ("Search", json!({"query": "rust"})),
            ("Search", json!({"query": "zeebe"})),
            ("Fetch", json!({"url": "https://example.org"})),
        ]),
    );
    // One inner instance per activation (the same element twice is two), in order.
    assert_eq!(
        count(&rule, "Agent#innerInstance", Intent::ElementActivated),
        3
    );
    let searches = rule.activate("search", 10);
    let queries: Vec<Value> = searches
        .iter()
        .map(|(_, job)| job.variables.to_value()["query"].clone())
        .collect();
    assert_eq!(queries, vec![json!("rust"), json!("zeebe")]);
    let (_, fetch) = rule.job("fetch");
    assert_eq!(
        fetch.variables.to_value()["url"],
        json!("https://example.org")
    );
    assert!(fetch.variables.to_value().get("query").is_none());
    // The job's variables are set as a job's are: not defined on the way up, so in
    // the process.
    assert_eq!(rule.variables(instance)["agentContext"], json!({"turn": 1}));
    // Zeebe's instruction records: the command and the event.
    let activated = instructions(&rule, Intent::Activated);
    assert_eq!(activated.len(), 1);
    assert_eq!(activated[0].ad_hoc_sub_process_instance_key, ad_hoc.get());
    assert_eq!(activated[0].activate_elements.len(), 3);
    // No new job until a flow completes.
    assert!(rule.activate("agent", 10).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn each_completed_inner_instance_replaces_the_job() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let ad_hoc = ad_hoc_key(&rule);
    let (job, _) = agent_job(&mut rule);
    complete_with(
        &mut rule,
        job,
        json!({}),
        activate(&[("Search", json!({})), ("Fetch", json!({}))]),
    );
    let (search, _) = rule.job("search");
    let outcome = rule.complete(search, json!({"toolResult": "found"}));
    assert!(!outcome.is_rejected());
    // The output element is collected, and the worker decides again.
    let locals = rule.scope_variables(instance, ad_hoc);
    assert_eq!(locals["toolResults"], json!(["found"]));
    let (second, job) = agent_job(&mut rule);
    assert_eq!(job.variables.to_value()["toolResults"], json!(["found"]));

    // The other flow completes while the worker holds the second job: it is cancelled
    // and a third one created, so only one is ever open.
    let (fetch, _) = rule.job("fetch");
    let outcome = rule.complete(fetch, json!({"toolResult": "page"}));
    assert!(!outcome.is_rejected());
    let cancelled = rule
        .records()
        .events()
        .of_type(ValueType::Job)
        .with_intent(Intent::Canceled);
    assert_eq!(cancelled.count(), 1);
    assert_eq!(cancelled.records[0].key, second);
    let (third, _) = agent_job(&mut rule);
    assert_ne!(third, second);
    let (kind, reason) = rejected(&mut rule, second, fulfilled(false));
    assert_eq!(kind, RejectionType::NotFound, "{reason}");

    // An element that completes at once (a plain task) asks again in the same step.
    complete_with(
        &mut rule,
        third,
        json!({}),
        activate(&[("Think", json!({}))]),
    );
    assert_eq!(count(&rule, "Think", Intent::ElementCompleted), 1);
    let (fourth, _) = agent_job(&mut rule);
    // The completion condition is the worker's: without it nothing completes.
    assert!(!is_completed(&mut rule, instance));
    complete_with(&mut rule, fourth, json!({}), fulfilled(false));
    assert!(is_completed(&mut rule, instance));
    assert_eq!(count(&rule, "Done", Intent::ElementCompleted), 1);
    // The output collection reaches the process.
    assert_eq!(
        rule.variables(instance)["toolResults"],
        json!(["found", "page", null])
    );
    rule.assert_replay_matches();
}

#[test]
fn a_fulfilled_condition_with_cancel_remaining_terminates_what_is_active() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let (job, _) = agent_job(&mut rule);
    // Think completes at once: a new job while Search and Fetch are still active.
    complete_with(
        &mut rule,
        job,
        json!({}),
        activate(&[
            ("Search", json!({})),
            ("Fetch", json!({})),
            ("Think", json!({})),
        ]),
    );
    let (second, _) = agent_job(&mut rule);
    complete_with(&mut rule, second, json!({"answer": 42}), fulfilled(true));
    assert_eq!(count(&rule, "Search", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Fetch", Intent::ElementTerminated), 1);
    assert!(
        rule.activate("search", 10).is_empty(),
        "its job is cancelled"
    );
    assert!(is_completed(&mut rule, instance));
    assert_eq!(rule.variables(instance)["answer"], json!(42));
    let completed = instructions(&rule, Intent::Completed);
    assert_eq!(completed.len(), 1);
    assert!(completed[0].completion_condition_fulfilled);
    assert!(completed[0].cancel_remaining_instances);
    // The worker's job was the last one.
    assert!(rule.activate("agent", 10).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn a_fulfilled_condition_without_cancel_remaining_waits_for_the_active_flows() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let (job, _) = agent_job(&mut rule);
    complete_with(
        &mut rule,
        job,
        json!({}),
        activate(&[
            ("Search", json!({})),
            ("Fetch", json!({})),
            ("Think", json!({})),
        ]),
    );
    let (second, _) = agent_job(&mut rule);
    complete_with(&mut rule, second, json!({}), fulfilled(false));
    assert!(!is_completed(&mut rule, instance));
    assert_eq!(count(&rule, "Search", Intent::ElementTerminated), 0);

    // The flows finish; no job is created for them any more.
    let (search, _) = rule.job("search");
    assert!(
        !rule
            .complete(search, json!({"toolResult": 1}))
            .is_rejected()
    );
    assert!(rule.activate("agent", 10).is_empty());
    assert!(!is_completed(&mut rule, instance));
    let (fetch, _) = rule.job("fetch");
    assert!(!rule.complete(fetch, json!({"toolResult": 2})).is_rejected());
    assert!(rule.activate("agent", 10).is_empty());
    assert!(is_completed(&mut rule, instance));
    assert_eq!(rule.variables(instance)["toolResults"], json!([null, 1, 2]));
    rule.assert_replay_matches();
}

#[test]
fn a_result_the_ad_hoc_subprocess_cannot_follow_is_rejected_and_changes_nothing() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let (job, _) = agent_job(&mut rule);
    let before = rule.records().count();

    let (kind, reason) = rejected(
        &mut rule,
        job,
        activate(&[("Search", json!({})), ("Lunch", json!({}))]),
    );
    assert_eq!(kind, RejectionType::NotFound);
    assert!(reason.contains("[Lunch] do not exist"), "{reason}");

    let both = JobResult {
        completion_condition_fulfilled: true,
        ..activate(&[("Search", json!({}))])
    };
    let (kind, reason) = rejected(&mut rule, job, both);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(
        reason.contains("'Agent'") && reason.contains("[Search]"),
        "{reason}"
    );

    let (kind, reason) = rejected(&mut rule, job, activate(&[("Search", json!([1]))]));
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(reason.contains("element 'Search'"), "{reason}");

    let denial = JobResult {
        denied: true,
        ..JobResult::default()
    };
    let (kind, reason) = rejected(&mut rule, job, denial);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(reason.contains("ad-hoc subprocess 'Agent'"), "{reason}");

    // One rejection record each, nothing else.
    assert_eq!(rule.records().count(), before + 4);
    assert_eq!(
        count(&rule, "Agent#innerInstance", Intent::ElementActivating),
        0
    );

    // The job is still the worker's to complete.
    complete_with(&mut rule, job, json!({}), fulfilled(false));
    assert!(is_completed(&mut rule, instance));
    rule.assert_replay_matches();
}

#[test]
fn an_ad_hoc_result_for_another_job_is_rejected() {
    let mut rule = rule();
    rule.create("adhoc-agent", json!({}));
    let (job, _) = agent_job(&mut rule);
    complete_with(
        &mut rule,
        job,
        json!({}),
        activate(&[("Search", json!({}))]),
    );
    let (search, _) = rule.job("search");
    let (kind, reason) = rejected(&mut rule, search, fulfilled(false));
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(
        reason.contains("'adHocSubProcess' only for the job of an ad-hoc subprocess")
            && reason.contains("BPMN_ELEMENT"),
        "{reason}"
    );
    rule.assert_replay_matches();
}

#[test]
fn a_job_without_retries_is_an_incident_and_resolving_it_offers_the_job_again() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let (job, _) = agent_job(&mut rule);
    let outcome = rule.process(Command::FailJob(FailJob {
        job_key: job,
        retries: 0,
        error_message: "model unavailable".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    let incident = &incidents[0];
    assert_eq!(
        incident.record.error_type,
        IncidentErrorType::AdHocSubProcessNoRetries
    );
    assert_eq!(incident.record.element_id, "Agent");
    assert_eq!(incident.record.job_key, job.get());
    assert_eq!(incident.record.error_message, "model unavailable");

    let outcome = rule.process(Command::UpdateJob(UpdateJob {
        job_key: job,
        retries: Some(1),
        timeout: None,
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incident.key,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let (again, _) = agent_job(&mut rule);
    assert_eq!(again, job);
    complete_with(&mut rule, job, json!({}), fulfilled(false));
    assert!(is_completed(&mut rule, instance));
    rule.assert_replay_matches();
}

#[test]
fn cancelling_the_instance_cancels_the_job() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let (job, _) = agent_job(&mut rule);
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let cancelled = rule
        .records()
        .events()
        .of_type(ValueType::Job)
        .with_intent(Intent::Canceled);
    assert_eq!(cancelled.count(), 1);
    assert_eq!(cancelled.records[0].key, job);
    assert_eq!(count(&rule, "Agent", Intent::ElementTerminated), 1);
    assert!(rule.activate("agent", 10).is_empty());
    let (kind, _) = rejected(&mut rule, job, fulfilled(false));
    assert_eq!(kind, RejectionType::NotFound);
    rule.assert_replay_matches();
}

#[test]
fn an_error_thrown_by_the_worker_is_caught_on_the_ad_hoc_subprocess() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent", json!({}));
    let (job, _) = agent_job(&mut rule);
    complete_with(
        &mut rule,
        job,
        json!({}),
        activate(&[("Search", json!({})), ("Think", json!({}))]),
    );
    let (second, _) = agent_job(&mut rule);
    let outcome = rule.process(Command::ThrowError(ThrowError {
        job_key: second,
        error_code: "AGENT_FAILED".to_owned(),
        error_message: "gave up".to_owned(),
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "Search", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Agent", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Failed", Intent::ElementCompleted), 1);
    assert!(is_completed(&mut rule, instance));
    rule.assert_replay_matches();
}

fn set_variables(rule: &mut EngineRule, instance: Key, variables: Value) {
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(variables),
        local: false,
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn resolve(rule: &mut EngineRule, incident_key: Key) {
    let outcome = rule.process(Command::ResolveIncident { incident_key });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

#[test]
fn a_job_type_expression_that_fails_is_an_incident_on_entry_and_on_re_creation() {
    let mut rule = rule();
    let instance = rule.create("adhoc-agent-feel", json!({"tries": 4}));
    // On entry: an incident on the ad-hoc subprocess, which waits in ELEMENT_ACTIVATING.
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(incidents[0].record.element_id, "Picker");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert_eq!(count(&rule, "Picker", Intent::ElementActivated), 0);
    set_variables(&mut rule, instance, json!({"flavour": "a"}));
    resolve(&mut rule, incidents[0].key);
    let (job, record) = rule.job("agent-a");
    assert_eq!(record.job_kind, JobKind::AdHocSubProcess);
    assert_eq!(record.retries, 4);

    // On re-creation, after an inner instance completed: an incident on that inner
    // instance, which stays completing until the type evaluates again.
    set_variables(&mut rule, instance, json!({"flavour": null}));
    complete_with(&mut rule, job, json!({}), activate(&[("Note", json!({}))]));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(incidents[0].record.element_id, "Picker#innerInstance");
    assert_eq!(
        count(&rule, "Picker#innerInstance", Intent::ElementCompleted),
        0
    );
    set_variables(&mut rule, instance, json!({"flavour": "b"}));
    resolve(&mut rule, incidents[0].key);
    assert_eq!(
        count(&rule, "Picker#innerInstance", Intent::ElementCompleted),
        1
    );
    let (job, _) = rule.job("agent-b");
    complete_with(&mut rule, job, json!({}), fulfilled(false));
    assert!(is_completed(&mut rule, instance));
    rule.assert_replay_matches();
}
