//! Models that Zeebe 8.8 deploys and Rill used to refuse (issue 40), each written the
//! way Camunda Modeler writes it: what the parser keeps of them.

use rill_engine::model::{ElementKind, ScriptDefinition};
use serde_json::{Map, Value as Json, json};

use super::*;

/// What a compiled mapping source gives with no variables at all.
fn evaluated(mapping: &rill_engine::model::Mapping) -> Json {
    mapping
        .source
        .evaluate(&Map::new(), 0)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_static_input_source_is_a_string_constant_as_written() {
    let model = parse_one("elements/connector-static-inputs.bpmn");
    let inputs = &el(&model, "FetchOrder").inputs;
    let by_target: Vec<(String, Json)> = inputs
        .iter()
        .map(|m| (m.target.join("."), evaluated(m)))
        .collect();
    assert_eq!(
        by_target,
        [
            ("authentication.type".to_owned(), json!("noAuth")),
            ("method".to_owned(), json!("GET")),
            (
                "url".to_owned(),
                json!("https://shop.example.com/api/orders")
            ),
            ("queryParameters".to_owned(), json!({"id": null})),
            // Looks like a number or a boolean, stays the text (Zeebe's string literal).
            ("connectionTimeoutInSeconds".to_owned(), json!("20")),
            ("storeResponse".to_owned(), json!("false")),
            ("note".to_owned(), json!(r#"Say "hi" \o/"#)),
        ]
    );
    assert!(
        inputs[0].source.variable_names().is_empty(),
        "a constant reads no variable"
    );
}

#[test]
fn from_ai_is_accepted_in_mappings_and_scripts_of_ai_agent_tools() {
    let model = parse_one("elements/ai-agent-from-ai.bpmn");
    let weather = &el(&model, "GetWeather").inputs;
    let tool_call: Map<String, Json> = serde_json::from_value(json!({
        "toolCall": {"city": "Porto", "days": 2}
    }))
    .expect("an object");
    let values: Vec<Json> = weather
        .iter()
        .map(|m| m.source.evaluate(&tool_call, 0).expect("evaluates"))
        .collect();
    assert_eq!(values, [json!("Porto"), json!(2), json!("metric")]);
    assert_eq!(weather[0].source.variable_names(), ["toolCall"]);
    match &el(&model, "AddNumbers").kind {
        ElementKind::ScriptTask(ScriptDefinition::Expression { expression, .. }) => {
            let numbers =
                serde_json::from_value(json!({"toolCall": {"a": 2, "b": 40}})).expect("an object");
            assert_eq!(expression.evaluate(&numbers, 0).ok(), Some(json!(42)));
        }
        other => panic!("expected a FEEL script task, got {other:?}"),
    }
}

#[test]
fn a_default_flow_keeps_no_condition() {
    let model = parse_one("elements/default-flow-condition.bpmn");
    for (gateway, default) in [("Route", "ToReview"), ("Notify", "ToLetter")] {
        let default_flow = match el(&model, gateway).kind {
            ElementKind::ExclusiveGateway { default_flow }
            | ElementKind::InclusiveGateway { default_flow, .. } => default_flow,
            ref other => panic!("{gateway} is {other:?}"),
        };
        assert_eq!(
            default_flow.map(|f| model.flow(f).id.as_str()),
            Some(default)
        );
        assert!(flow(&model, default).condition.is_none(), "{default}");
    }
    assert!(flow(&model, "ToEmail").condition.is_some());
}

#[test]
fn a_job_worker_user_task_keeps_expressions_and_a_linked_form_and_no_task_definition() {
    use rill_engine::model::{FormBinding, UserTaskDefinition};

    let model = parse_one("elements/job-worker-user-task.bpmn");
    let ElementKind::UserTask(definition) = &el(&model, "ApproveInvoice").kind else {
        panic!("not a user task")
    };
    let UserTaskDefinition::Job(task) = definition.as_ref() else {
        panic!("not a job-worker user task")
    };
    // zeebe:taskDefinition type="invoice-approval" retries="5" has no effect.
    assert_eq!(
        static_value(&task.job.job_type),
        "io.camunda.zeebe:userTask"
    );
    assert_eq!(static_value(&task.job.retries), 1);
    assert_eq!(
        task.job.headers,
        [("department".to_owned(), "finance".to_owned())]
    );
    let assignee = task.assignee.as_ref().expect("an assignee");
    assert_eq!(expr_source(assignee), "approver");
    let groups = task.candidate_groups.as_ref().expect("candidate groups");
    assert_eq!(expr_source(groups), "departments");
    let users = task.candidate_users.as_ref().expect("candidate users");
    assert_eq!(static_value(users), ["anna", "ben"]);
    assert_eq!(
        expr_source(task.due_date.as_ref().expect("a due date")),
        "dueDate"
    );
    assert_eq!(
        task.linked_form,
        Some(("invoice-approval-form".to_owned(), FormBinding::Latest))
    );
}

#[test]
fn retries_that_are_not_a_number_deploy_as_a_constant() {
    let model = parse_one("elements/retries-not-a-number.bpmn");
    let job = |id: &str| {
        el(&model, id)
            .kind
            .job_definition()
            .unwrap_or_else(|| panic!("{id} has a job"))
    };
    assert_eq!(expr_source(&job("SendReminder").retries), "retries");
    assert_eq!(expr_source(&job("Escalate").retries), "\"three\"");
}

#[test]
fn a_timer_start_date_or_cycle_may_be_an_expression() {
    use rill_engine::model::TimerDefinition;

    let model = parse_one("elements/timer-start-date-expression.bpmn");
    match &el(&model, "InAnHour").kind {
        ElementKind::TimerStartEvent(TimerDefinition::Date(date)) => {
            assert_eq!(expr_source(date), "now() + duration(\"PT1H\")");
        }
        other => panic!("expected a timer start date, got {other:?}"),
    }
    let model = parse_one("elements/timer-start-cycle-expression.bpmn");
    for (start, source) in [
        ("EveryHour", r#""R3/" + string(duration("PT1H"))"#),
        ("WeekdayMornings", r#""0 0 9 * * MON-FRI""#),
    ] {
        match &el(&model, start).kind {
            ElementKind::TimerStartEvent(TimerDefinition::Cycle(cycle)) => {
                assert_eq!(expr_source(cycle), source);
            }
            other => panic!("expected a timer start cycle, got {other:?}"),
        }
    }
}

#[test]
fn an_execution_listener_with_task_headers_gets_the_elements_and_its_own() {
    let model = parse_one("elements/listener-task-headers.bpmn");
    let listeners = &el(&model, "NotifyCustomer").listeners;
    let pairs = |headers: &[(String, String)]| {
        headers
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        pairs(&listeners.start[0].headers),
        ["region=eu", "channel=sms", "auditLevel=full"]
    );
    assert!(listeners.end[0].headers.is_empty());
}

#[test]
fn a_form_on_the_none_start_event_is_the_processs_start_form() {
    use rill_engine::model::{FormBinding, StartForm};

    let model = parse_one("elements/start-form.bpmn");
    assert_eq!(
        model.start_form,
        Some(StartForm::Linked {
            form_id: "sign-up-form".to_owned(),
            binding: FormBinding::Latest,
        })
    );
    let text = String::from_utf8(fixture("elements/start-form.bpmn")).expect("UTF-8");
    let with = |form: &str| text.replace(r#"<zeebe:formDefinition formId="sign-up-form" />"#, form);
    // An embedded form (its key, with the process's zeebe:userTaskForm).
    let embedded = with(r#"<zeebe:formDefinition formKey="camunda-forms:bpmn:UserTaskForm_1" />"#);
    let models = parse_bpmn("embedded.bpmn", embedded.as_bytes()).expect("an embedded start form");
    assert_eq!(
        models[0].start_form,
        Some(StartForm::Key(
            "camunda-forms:bpmn:UserTaskForm_1".to_owned()
        ))
    );
    for (form, problem) in [
        (
            r#"<zeebe:formDefinition externalReference="https://forms.example.com/sign-up" />"#,
            "externalReference needs a Camunda user task",
        ),
        (
            r#"<zeebe:formDefinition formId="sign-up-form" formKey="camunda-forms:bpmn:f" />"#,
            "exactly one of the attributes 'formId, formKey'",
        ),
        (
            r#"<zeebe:formDefinition formId="=formName" />"#,
            "formId must be a static form id",
        ),
    ] {
        let error = parse_bpmn("bad.bpmn", with(form).as_bytes()).expect_err(form);
        assert!(error.mentions(problem), "{form}: {error}");
        assert_eq!(
            error.problems[0].element_id.as_deref(),
            Some("SignUpRequested")
        );
    }
    // Only the process's none start event has a start form.
    let on_timer = with(
        r#"<zeebe:formDefinition formId="sign-up-form" /></bpmn:extensionElements><bpmn:timerEventDefinition><bpmn:timeCycle>R/PT1H</bpmn:timeCycle></bpmn:timerEventDefinition><bpmn:extensionElements>"#,
    );
    let error = parse_bpmn("timer.bpmn", on_timer.as_bytes()).expect_err("a timer start form");
    assert!(
        error.mentions("only the process's none start event can have"),
        "{error}"
    );
}
