//! Process instance tags: given at creation, checked, and carried on the instance's
//! records, its jobs, its user tasks and the instances it calls.

use rill_protocol::{Command, Intent, RecordValue, RejectionType, ValueType};
use serde_json::json;

use super::elements::{flow, model, task};
use super::*;

fn create_tagged(process_id: &str, tags: &[&str]) -> Command {
    let Command::CreateProcessInstance(mut create) =
        EngineRule::create_command(process_id, empty())
    else {
        unreachable!("create_command makes a creation")
    };
    create.tags = tags.iter().map(|t| (*t).to_owned()).collect();
    Command::CreateProcessInstance(create)
}

fn tags(list: &[&str]) -> Vec<String> {
    list.iter().map(|t| (*t).to_owned()).collect()
}

/// start → Work (a job) → Review (a Camunda user task) → end.
fn job_then_user_task() -> String {
    model(&format!(
        r#"<bpmn:startEvent id="s" />{}<bpmn:userTask id="Review"><bpmn:extensionElements><zeebe:userTask /></bpmn:extensionElements></bpmn:userTask><bpmn:endEvent id="e" />{}{}{}"#,
        task("Work", "work"),
        flow("f1", "s", "Work"),
        flow("f2", "Work", "Review"),
        flow("f3", "Review", "e")
    ))
}

#[test]
fn tags_are_on_every_record_of_the_instance_its_jobs_and_its_user_tasks() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&job_then_user_task());
    let outcome = rule.process(create_tagged(
        "p",
        &["order:42", "priority.high", "order:42"],
    ));
    assert!(!outcome.is_rejected());
    let expected = tags(&["order:42", "priority.high"]);
    match outcome.value() {
        RecordValue::ProcessInstanceCreation(created) => assert_eq!(created.tags, expected),
        other => panic!("a creation answer, got {other:?}"),
    }

    let (job_key, job) = rule.job("work");
    assert_eq!(job.tags, expected, "the activated job");
    rule.complete(job_key, json!({}));

    let records = rule.records().of_type(ValueType::ProcessInstance);
    assert!(records.count() > 6);
    for record in &records.records {
        let RecordValue::ProcessInstance(value) = &record.value else {
            unreachable!()
        };
        assert_eq!(
            value.tags, expected,
            "{} {:?}",
            value.element_id, record.intent
        );
    }
    for record in &rule.records().of_type(ValueType::Job).records {
        let RecordValue::Job(value) = &record.value else {
            unreachable!()
        };
        assert_eq!(value.tags, expected, "JOB {:?}", record.intent);
    }
    let user_tasks = rule.records().of_type(ValueType::UserTask);
    assert!(user_tasks.exists());
    for record in &user_tasks.records {
        let RecordValue::UserTask(value) = &record.value else {
            unreachable!()
        };
        assert_eq!(value.tags, expected, "USER_TASK {:?}", record.intent);
    }
    rule.assert_replay_matches();
}

#[test]
fn an_instance_without_tags_has_none_and_a_called_instance_carries_its_callers() {
    let mut rule = EngineRule::new();
    let child = model(&format!(
        r#"<bpmn:startEvent id="cs" />{}<bpmn:endEvent id="ce" />{}{}"#,
        task("ChildWork", "child-work"),
        flow("c1", "cs", "ChildWork"),
        flow("c2", "ChildWork", "ce")
    ))
    .replace(r#"<bpmn:process id="p""#, r#"<bpmn:process id="c""#);
    rule.deploy_xml(&child);
    rule.deploy_xml(&model(&format!(
        r#"<bpmn:startEvent id="s" /><bpmn:callActivity id="Call"><bpmn:extensionElements><zeebe:calledElement processId="c" /></bpmn:extensionElements></bpmn:callActivity><bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Call"),
        flow("f2", "Call", "e")
    )));

    rule.create("c", empty());
    let (_, untagged) = rule.job("child-work");
    assert!(untagged.tags.is_empty());

    rule.process(create_tagged("p", &["batch-7"]));
    let jobs = rule.activate("child-work", 10);
    assert_eq!(jobs.len(), 1, "the called instance's job");
    assert_eq!(jobs[0].1.tags, tags(&["batch-7"]));
}

#[test]
fn invalid_tags_are_rejected_naming_the_tag_and_create_nothing() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&job_then_user_task());
    let eleven: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
    let eleven: Vec<&str> = eleven.iter().map(String::as_str).collect();
    for (bad, named) in [
        (vec!["ok", "9lives"], "'9lives'"),
        (vec!["with space"], "'with space'"),
        (eleven, "'11'"),
    ] {
        let outcome = rule.process(create_tagged("p", &bad));
        let (kind, reason) = rejection_of(&outcome);
        assert_eq!(kind, RejectionType::InvalidArgument);
        assert!(reason.contains(named), "{reason}");
    }
    assert!(
        !rule
            .records()
            .of_type(ValueType::ProcessInstance)
            .with_intent(Intent::ElementActivating)
            .exists()
    );
}
