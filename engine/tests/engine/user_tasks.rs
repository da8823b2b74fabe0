//! User tasks: the Camunda user task's lifecycle (create, assign, claim, update,
//! complete, cancel) and its records, forms linked by id, and the job-worker user task.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{IncidentErrorType, UserTaskRecord};
use rill_protocol::{
    Command, Intent, JsonValue, Key, RecordValue, RejectionType, UserTaskChanges, UserTaskCommand,
    ValueType,
};
use serde_json::{Value, json};

use super::elements::{flow, model};
use super::*;

/// start → a user task with `extensions` (and a timer boundary event when asked) → end.
fn user_task_process(extensions: &str) -> String {
    model(&format!(
        r#"<bpmn:startEvent id="s" />
        <bpmn:userTask id="Review" name="Review the order"><bpmn:extensionElements>{extensions}</bpmn:extensionElements></bpmn:userTask>
        <bpmn:endEvent id="e" />
        {}{}"#,
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e")
    ))
}

fn user_task_events(rule: &EngineRule) -> Vec<(Intent, UserTaskRecord)> {
    rule.records()
        .events()
        .of_type(ValueType::UserTask)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::UserTask(v) => Some((r.intent, v.clone())),
            _ => None,
        })
        .collect()
}

fn intents(rule: &EngineRule) -> Vec<Intent> {
    user_task_events(rule).into_iter().map(|(i, _)| i).collect()
}

fn the_task(rule: &EngineRule) -> (Key, UserTaskRecord) {
    let (_, record) = user_task_events(rule)
        .into_iter()
        .find(|(intent, _)| *intent == Intent::Created)
        .expect("a USER_TASK CREATED record");
    (Key(record.user_task_key), record)
}

fn assign(key: Key, assignee: &str, allow_override: bool) -> Command {
    Command::UserTask(UserTaskCommand::Assign {
        user_task_key: key,
        assignee: assignee.to_owned(),
        action: String::new(),
        allow_override,
    })
}

fn complete(key: Key, variables: Value) -> Command {
    Command::UserTask(UserTaskCommand::Complete {
        user_task_key: key,
        variables: JsonValue::from(variables),
        action: String::new(),
    })
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

#[test]
fn a_camunda_user_task_is_created_assigned_updated_and_completed() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&user_task_process(
        r#"<zeebe:userTask />
        <zeebe:assignmentDefinition assignee="=owner" candidateGroups="sales, managers" candidateUsers="=[&quot;ann&quot;, &quot;bob&quot;]" />
        <zeebe:taskSchedule dueDate="2026-12-31T17:00:00Z" followUpDate="=&quot;2026-12-24T09:00:00+01:00&quot;" />
        <zeebe:priorityDefinition priority="=level * 10" />
        <zeebe:formDefinition externalReference="=&quot;https://forms.example/&quot; + orderId" />
        <zeebe:taskHeaders><zeebe:header key="team" value="blue" /></zeebe:taskHeaders>
        <zeebe:ioMapping><zeebe:input source="=orderId" target="order" /><zeebe:output source="=approved" target="orderApproved" /></zeebe:ioMapping>"#,
    ));
    let instance = rule.create("p", json!({"owner": "carl", "level": 7, "orderId": "o-1"}));

    // CREATING and CREATED without the assignee, the element activated, then the model's
    // assignee assigned (as Zeebe 8.8 does).
    assert_eq!(
        intents(&rule),
        vec![
            Intent::Creating,
            Intent::Created,
            Intent::Assigning,
            Intent::Assigned
        ]
    );
    let (key, created) = the_task(&rule);
    assert_eq!(created.assignee, "");
    assert_eq!(created.candidate_groups_list, vec!["sales", "managers"]);
    assert_eq!(created.candidate_users_list, vec!["ann", "bob"]);
    assert_eq!(created.due_date, "2026-12-31T17:00:00Z");
    assert_eq!(created.follow_up_date, "2026-12-24T09:00:00+01:00");
    assert_eq!(created.priority, 70);
    assert_eq!(created.external_form_reference, "https://forms.example/o-1");
    assert_eq!(created.form_key, -1);
    assert_eq!(
        created.custom_headers.get("team").map(String::as_str),
        Some("blue")
    );
    assert_eq!(created.element_id, "Review");
    assert_eq!(created.process_instance_key, instance.get());
    assert!(created.creation_timestamp > 0);
    let order: Vec<_> = rule
        .records()
        .events()
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::UserTask(_) => Some(format!("USER_TASK {:?}", r.intent)),
            RecordValue::ProcessInstance(v) if v.element_id == "Review" => {
                Some(format!("Review {:?}", r.intent))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        vec![
            "Review ElementActivating",
            "USER_TASK Creating",
            "USER_TASK Created",
            "Review ElementActivated",
            "USER_TASK Assigning",
            "USER_TASK Assigned"
        ]
    );
    let (_, assigned) = user_task_events(&rule).pop().unwrap();
    assert_eq!(assigned.assignee, "carl");
    assert_eq!(assigned.changed_attributes, vec!["assignee"]);

    // A claim by someone else is refused; a reassignment is not.
    let claim = rule.process(assign(key, "dora", false));
    assert_eq!(
        rejection_of(&claim),
        (
            RejectionType::InvalidState,
            format!(
                "Expected to claim user task with key '{key}', but it has already been assigned"
            )
        )
    );
    let reassigned = rule.process(assign(key, "dora", true));
    assert!(!reassigned.is_rejected());
    let RecordValue::UserTask(value) = reassigned.value() else {
        panic!("{:?}", reassigned.value())
    };
    assert_eq!(
        (value.assignee.as_str(), value.action.as_str()),
        ("dora", "assign")
    );

    // Unassign, then claim.
    let unassigned = rule.process(assign(key, "", true));
    let RecordValue::UserTask(value) = unassigned.value() else {
        panic!()
    };
    assert_eq!(
        (value.assignee.as_str(), value.action.as_str()),
        ("", "unassign")
    );
    let claimed = rule.process(assign(key, "eve", false));
    let RecordValue::UserTask(value) = claimed.value() else {
        panic!()
    };
    assert_eq!(
        (value.assignee.as_str(), value.action.as_str()),
        ("eve", "claim")
    );
    assert_eq!(
        rule.records()
            .of_type(ValueType::UserTask)
            .with_intent(Intent::Claim)
            .count(),
        2,
        "the refused claim and the accepted one"
    );
    // A claim begins with CLAIMING (as in Zeebe 8.8), an assignment with ASSIGNING.
    let tail: Vec<Intent> = intents(&rule).into_iter().rev().take(2).collect();
    assert_eq!(tail, vec![Intent::Assigned, Intent::Claiming]);

    // Update: only the given attributes change and are listed.
    let updated = rule.process(Command::UserTask(UserTaskCommand::Update {
        user_task_key: key,
        changes: UserTaskChanges {
            candidate_groups: Some(vec!["support".to_owned()]),
            priority: Some(90),
            ..UserTaskChanges::default()
        },
        action: "escalate".to_owned(),
    }));
    let RecordValue::UserTask(value) = updated.value() else {
        panic!()
    };
    assert_eq!(
        value.changed_attributes,
        vec!["candidateGroupsList", "priority"]
    );
    assert_eq!(value.candidate_groups_list, vec!["support"]);
    assert_eq!(value.candidate_users_list, vec!["ann", "bob"]);
    assert_eq!((value.priority, value.action.as_str()), (90, "escalate"));
    let bad = rule.process(Command::UserTask(UserTaskCommand::Update {
        user_task_key: key,
        changes: UserTaskChanges {
            priority: Some(101),
            ..UserTaskChanges::default()
        },
        action: String::new(),
    }));
    assert_eq!(rejection_of(&bad).0, RejectionType::InvalidArgument);

    // Complete: the variables leave through the output mappings, the instance ends.
    let completed = rule.process(complete(key, json!({"approved": true})));
    assert!(!completed.is_rejected(), "{:?}", completed.response);
    assert_eq!(
        intents(&rule)[intents(&rule).len() - 2..],
        [Intent::Completing, Intent::Completed]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["orderApproved"], json!(true));
    assert!(variables.get("approved").is_none(), "{variables}");

    // The task is gone: commands on it are NOT_FOUND.
    let again = rule.process(complete(key, json!({})));
    assert_eq!(
        rejection_of(&again),
        (
            RejectionType::NotFound,
            format!(
                "Expected to complete user task with key '{key}', but no such user task was found"
            )
        )
    );
    rule.assert_replay_matches();
}

#[test]
fn cancelling_the_instance_cancels_the_user_task() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&user_task_process("<zeebe:userTask />"));
    let instance = rule.create("p", json!({}));
    let (key, created) = the_task(&rule);
    assert_eq!(created.priority, 50, "Zeebe's default priority");
    assert!(created.candidate_groups_list.is_empty());
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected());
    assert_eq!(
        intents(&rule),
        vec![
            Intent::Creating,
            Intent::Created,
            Intent::Canceling,
            Intent::Canceled
        ]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(
        rejection_of(&rule.process(assign(key, "x", true))).0,
        RejectionType::NotFound
    );
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_timer_on_a_user_task_cancels_it() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />
        <bpmn:userTask id="Review"><bpmn:extensionElements><zeebe:userTask /></bpmn:extensionElements></bpmn:userTask>
        <bpmn:boundaryEvent id="Late" attachedToRef="Review"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
        <bpmn:endEvent id="e" /><bpmn:endEvent id="late-end" />
        {}{}{}"#,
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e"),
        flow("f3", "Late", "late-end")
    ));
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({}));
    rule.advance(3_600_001);
    rule.fire_due();
    assert_eq!(
        intents(&rule),
        vec![
            Intent::Creating,
            Intent::Created,
            Intent::Canceling,
            Intent::Canceled
        ]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(rule.records().element("late-end").exists());
    rule.assert_replay_matches();
}

#[test]
fn a_failing_assignee_expression_is_an_incident_that_resolves() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&user_task_process(
        r#"<zeebe:userTask /><zeebe:assignmentDefinition assignee="=owner" />"#,
    ));
    let instance = rule.create("p", json!({"owner": 42}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("assignee of user task 'Review'"),
        "{}",
        incidents[0].record.error_message
    );
    assert!(intents(&rule).is_empty(), "nothing of the task is written");
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"owner": "ann"})),
        local: false,
    }));
    assert!(!outcome.is_rejected());
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected());
    let (_, assigned) = user_task_events(&rule).pop().unwrap();
    assert_eq!(assigned.assignee, "ann");
    rule.assert_replay_matches();
}

const FORM: &str = r#"{"id": "order-form", "type": "default", "components": [{"key": "approved", "type": "checkbox", "label": "Approve"}]}"#;

#[test]
fn a_linked_form_is_deployed_with_the_process_and_found_by_binding() {
    let mut rule = EngineRule::new();
    let process = user_task_process(
        r#"<zeebe:userTask /><zeebe:formDefinition formId="order-form" bindingType="deployment" />"#,
    );
    let deployed = rule.deploy(&[
        ("order.bpmn", process.clone().into_bytes()),
        ("order.form", FORM.as_bytes().to_vec()),
    ]);
    let RecordValue::Deployment(deployment) = deployed.value() else {
        panic!()
    };
    assert_eq!(deployment.form_metadata.len(), 1);
    let form = &deployment.form_metadata[0];
    assert_eq!(
        (form.form_id.as_str(), form.version, form.is_duplicate),
        ("order-form", 1, false)
    );
    let form_records = rule
        .records()
        .of_type(ValueType::Form)
        .with_intent(Intent::Created)
        .count();
    assert_eq!(form_records, 1);

    // The same form again is a duplicate; a changed one is version 2.
    let again = rule.deploy(&[("order.form", FORM.as_bytes().to_vec())]);
    let RecordValue::Deployment(d) = again.value() else {
        panic!()
    };
    assert_eq!(
        (d.form_metadata[0].version, d.form_metadata[0].is_duplicate),
        (1, true)
    );
    let changed = FORM.replace("Approve", "Approve the order");
    let v2 = rule.deploy(&[("order.form", changed.into_bytes())]);
    let RecordValue::Deployment(d) = v2.value() else {
        panic!()
    };
    assert_eq!(
        (d.form_metadata[0].version, d.form_metadata[0].is_duplicate),
        (2, false)
    );

    // bindingType="deployment": the task gets version 1, deployed with its process.
    rule.create("p", json!({}));
    let (_, task) = the_task(&rule);
    assert_eq!(task.form_key, form.form_key);
    rule.assert_replay_matches();
}

#[test]
fn a_missing_form_is_a_form_not_found_incident() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&user_task_process(
        r#"<zeebe:userTask /><zeebe:formDefinition formId="order-form" />"#,
    ));
    let instance = rule.create("p", json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::FormNotFound
    );
    // Deploy the form, resolve: the task is created with the latest version.
    let deployed = rule.deploy(&[("order.form", FORM.as_bytes().to_vec())]);
    let RecordValue::Deployment(d) = deployed.value() else {
        panic!()
    };
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected());
    let (_, task) = the_task(&rule);
    assert_eq!(task.form_key, d.form_metadata[0].form_key);
    rule.assert_replay_matches();
}

#[test]
fn bad_forms_and_bad_user_task_models_are_rejected_naming_what_is_wrong() {
    let mut rule = EngineRule::new();
    let not_json = rule.deploy(&[("a.form", b"{nope".to_vec())]);
    assert!(
        rejection_of(&not_json).1.contains("'a.form'"),
        "{:?}",
        not_json.response
    );
    let no_id = rule.deploy(&[("b.form", br#"{"components": []}"#.to_vec())]);
    assert!(rejection_of(&no_id).1.contains("'b.form' to have an 'id'"));

    for (extensions, expected) in [
        (
            r#"<zeebe:userTask /><zeebe:taskSchedule dueDate="tomorrow" />"#,
            "dueDate 'tomorrow' is not an ISO 8601 date-time",
        ),
        (
            r#"<zeebe:userTask /><zeebe:priorityDefinition priority="101" />"#,
            "priority '101' is not a whole number from 0 to 100",
        ),
        (
            r#"<zeebe:userTask /><zeebe:formDefinition formKey="camunda-forms:bpmn:f" />"#,
            "exactly one of the attributes 'formId, externalReference' must be present",
        ),
        (
            r#"<zeebe:userTask /><zeebe:formDefinition formId="f" formKey="camunda-forms:bpmn:f" />"#,
            "formKey is not used by a Camunda user task",
        ),
        (
            r#"<zeebe:userTask /><zeebe:taskListeners><zeebe:taskListener eventType="canceling" /></zeebe:taskListeners>"#,
            "a canceling task listener has no type",
        ),
        (
            r#"<zeebe:userTask /><zeebe:taskListeners><zeebe:taskListener eventType="closing" type="x" /></zeebe:taskListeners>"#,
            "a task listener's eventType must be 'creating', 'assigning', 'updating', 'completing' or 'canceling', not 'closing'",
        ),
        (
            r#"<zeebe:userTask /><zeebe:taskListeners><zeebe:taskListener eventType="completing" /></zeebe:taskListeners>"#,
            "a completing task listener has no type",
        ),
        (
            r#"<zeebe:taskListeners><zeebe:taskListener eventType="completing" type="x" /></zeebe:taskListeners>"#,
            "zeebe:taskListeners need a Camunda user task",
        ),
        (
            r#"<zeebe:userTask /><zeebe:taskListeners><zeebe:taskListener eventType="completing" type="x"><zeebe:taskHeaders /></zeebe:taskListener></zeebe:taskListeners>"#,
            "'taskHeaders' inside a zeebe:taskListener is not supported",
        ),
        (
            r#"<zeebe:formDefinition externalReference="https://forms.example.com/review" />"#,
            "externalReference needs a Camunda user task",
        ),
        (
            r#"<zeebe:formDefinition formKey="camunda-forms:bpmn:f" bindingType="latest" />"#,
            "attribute 'formKey' must not be used in combination with attribute 'bindingType'",
        ),
        (
            r#"<zeebe:formDefinition formId="f" formKey="camunda-forms:bpmn:f" />"#,
            "exactly one of the attributes 'formId, formKey' must be present",
        ),
        (
            r#"<zeebe:assignmentDefinition assignee="=owner &gt;" />"#,
            "invalid FEEL expression",
        ),
        (
            r#"<zeebe:taskSchedule followUpDate="next week" />"#,
            "followUpDate 'next week' is not an ISO 8601 date-time",
        ),
    ] {
        let outcome = rule.deploy(&[("p.bpmn", user_task_process(extensions).into_bytes())]);
        let (kind, reason) = rejection_of(&outcome);
        assert_eq!(kind, RejectionType::InvalidArgument);
        assert!(reason.contains(expected), "{extensions}: {reason}");
        assert!(reason.contains("Review"), "names the element: {reason}");
    }
}

#[test]
fn a_job_worker_user_task_is_a_job_with_zeebes_headers() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&user_task_process(
        r#"<zeebe:assignmentDefinition assignee="ann" candidateGroups="sales, managers" />
        <zeebe:formDefinition formKey="camunda-forms:bpmn:userTaskForm_1" />
        <zeebe:taskSchedule dueDate="2026-12-31T17:00:00Z" />"#,
    ));
    let instance = rule.create("p", json!({}));
    let (job, record) = rule.job("io.camunda.zeebe:userTask");
    let header = |name: &str| record.custom_headers.get(name).cloned();
    assert_eq!(header("io.camunda.zeebe:assignee").as_deref(), Some("ann"));
    assert_eq!(
        header("io.camunda.zeebe:candidateGroups").as_deref(),
        Some(r#"["sales","managers"]"#)
    );
    assert_eq!(
        header("io.camunda.zeebe:formKey").as_deref(),
        Some("camunda-forms:bpmn:userTaskForm_1")
    );
    assert_eq!(
        header("io.camunda.zeebe:dueDate").as_deref(),
        Some("2026-12-31T17:00:00Z")
    );
    assert!(user_task_events(&rule).is_empty(), "no USER_TASK records");
    rule.complete(job, json!({"done": true}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}
