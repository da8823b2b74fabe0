//! Models that Zeebe 8.8 deploys and Rill used to refuse (issue 40), written as Camunda
//! Modeler writes them (`tests/fixtures/elements/`), deployed and run.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{AdHocSubProcessActivateElement, JobResult, JobResultType};
use rill_protocol::{Command, JsonValue, Key};
use serde_json::{Value, json};

use super::*;

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

#[test]
fn static_input_mappings_reach_the_connector_job_as_written() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/connector-static-inputs.bpmn");
    let instance = rule.create("connector-static-inputs", json!({"orderId": "o-42"}));
    let (job, record) = rule.job("io.camunda:http-json:1");
    let variables = record.variables.to_value();
    assert_eq!(variables["authentication"], json!({"type": "noAuth"}));
    assert_eq!(variables["method"], json!("GET"));
    assert_eq!(
        variables["url"],
        json!("https://shop.example.com/api/orders")
    );
    assert_eq!(variables["queryParameters"], json!({"id": "o-42"}));
    // Strings, as in Zeebe, even when they look like a number or a boolean.
    assert_eq!(variables["connectionTimeoutInSeconds"], json!("20"));
    assert_eq!(variables["storeResponse"], json!("false"));
    assert_eq!(variables["note"], json!(r#"Say "hi" \o/"#));
    // What a connector runtime reads besides the variables.
    let header = |key: &str| record.custom_headers.get(key).map(String::as_str);
    assert_eq!(
        header("elementTemplateId"),
        Some("io.camunda.connectors.HttpJson.v2")
    );
    assert_eq!(header("resultVariable"), Some("orderResponse"));
    assert_eq!(record.retries, 3);

    let outcome = rule.complete(job, json!({"orderResponse": {"status": 200}}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["orderResponse"], json!({"status": 200}));
    assert!(
        variables.get("method").is_none(),
        "input mappings stay local to the task"
    );
    rule.assert_replay_matches();
}

/// Completes a job with an ad-hoc subprocess result.
fn complete_with_result(rule: &mut EngineRule, job: Key, variables: Value, result: JobResult) {
    let outcome = rule.process(Command::CompleteJob {
        job_key: job,
        variables: JsonValue::from(variables),
        result,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

#[test]
fn ai_agent_tools_read_their_inputs_through_from_ai() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/ai-agent-from-ai.bpmn");
    let instance = rule.create(
        "ai-agent-from-ai",
        json!({"userQuestion": "Weather in Lisbon, and 2 + 3?"}),
    );
    let (agent, agent_job) = rule.job("io.camunda.agenticai:aiagent-job-worker:1");
    let variables = agent_job.variables.to_value();
    assert_eq!(variables["provider"], json!({"type": "anthropic"}));
    assert_eq!(variables["data"]["limits"]["maxModelCalls"], json!("10"));
    let tools: Vec<&str> = variables["adHocSubProcessElements"]
        .as_array()
        .expect("the tools")
        .iter()
        .map(|tool| tool["elementId"].as_str().expect("an id"))
        .collect();
    assert_eq!(tools, ["GetWeather", "AddNumbers"]);

    // The model asks for both tools; the agent activates them with its tool calls.
    let call = |id: &str, name: &str, arguments: Value| {
        let mut tool_call = arguments;
        tool_call["_meta"] = json!({"id": id, "name": name});
        AdHocSubProcessActivateElement {
            element_id: name.to_owned(),
            variables: JsonValue::from(json!({"toolCall": tool_call})),
        }
    };
    complete_with_result(
        &mut rule,
        agent,
        json!({}),
        JobResult {
            result_type: JobResultType::AdHocSubProcess,
            activate_elements: vec![
                call("call-1", "GetWeather", json!({"city": "Lisbon"})),
                call("call-2", "AddNumbers", json!({"a": 2, "b": 3})),
            ],
            ..JobResult::default()
        },
    );
    // fromAi gives the value: the weather job's inputs, the script's sum.
    let (weather, weather_job) = rule.job("weather");
    let inputs = weather_job.variables.to_value();
    assert_eq!(inputs["city"], json!("Lisbon"));
    assert_eq!(inputs["days"], Value::Null, "not given by the model");
    assert_eq!(inputs["units"], json!("metric"));
    let outcome = rule.complete(weather, json!({"toolCallResult": "sunny, 24 °C"}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);

    // Each completed tool asks the agent again; the last job sees both results.
    let mut jobs = rule.activate("io.camunda.agenticai:aiagent-job-worker:1", 10);
    let (agent, agent_job) = jobs.pop().expect("the agent is asked again");
    let mut results = agent_job.variables.to_value()["toolCallResults"]
        .as_array()
        .expect("the results")
        .clone();
    results.sort_by_key(|r| r["id"].as_str().map(str::to_owned));
    assert_eq!(
        results,
        [
            json!({"id": "call-1", "name": "GetWeather", "content": "sunny, 24 °C"}),
            json!({"id": "call-2", "name": "AddNumbers", "content": 5}),
        ]
    );
    complete_with_result(
        &mut rule,
        agent,
        json!({"agent": {"answer": "Sunny; 5."}}),
        JobResult {
            result_type: JobResultType::AdHocSubProcess,
            completion_condition_fulfilled: true,
            ..JobResult::default()
        },
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

/// The end events an instance reached.
fn ends_reached(rule: &EngineRule, instance: Key) -> Vec<String> {
    rule.records()
        .events()
        .of_type(rill_protocol::ValueType::ProcessInstance)
        .with_intent(rill_protocol::Intent::ElementCompleted)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            rill_protocol::RecordValue::ProcessInstance(v)
                if v.process_instance_key == instance.get()
                    && v.bpmn_element_type == rill_protocol::value::BpmnElementType::EndEvent =>
            {
                Some(v.element_id.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_condition_on_a_default_flow_is_never_evaluated() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/default-flow-condition.bpmn");
    let run = |rule: &mut EngineRule, variables: Value| {
        let instance = rule.create("default-flow-condition", variables);
        assert_eq!(state(rule, instance), ProcessInstanceState::Completed);
        ends_reached(rule, instance)
    };
    assert_eq!(run(&mut rule, json!({"amount": 50})), ["Approved"]);
    // The default's own condition (amount >= 1000) is false: it is taken all the same.
    assert_eq!(
        run(&mut rule, json!({"amount": 500, "email": false})),
        ["Lettered"]
    );
    // An inclusive gateway does not take its default beside a true condition, though
    // the default's condition (true) holds.
    assert_eq!(
        run(&mut rule, json!({"amount": 500, "email": true})),
        ["Emailed"]
    );
    rule.assert_replay_matches();
}

const INVOICE_FORM: &str = "elements/invoice-approval.form";
const JOB_WORKER_USER_TASK: &str = "elements/job-worker-user-task.bpmn";

/// The form key of the one form a deployment outcome lists.
fn deployed_form_key(outcome: &Outcome) -> i64 {
    let rill_protocol::RecordValue::Deployment(deployment) = outcome.value() else {
        panic!("not a deployment: {:?}", outcome.response)
    };
    deployment.form_metadata[0].form_key
}

#[test]
fn a_job_worker_user_task_evaluates_its_assignment_schedule_and_form_into_headers() {
    let mut rule = EngineRule::new();
    let deployed = rule.deploy(&[
        (JOB_WORKER_USER_TASK, fixture(JOB_WORKER_USER_TASK)),
        (INVOICE_FORM, fixture(INVOICE_FORM)),
    ]);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let form_key = deployed_form_key(&deployed);
    let instance = rule.create(
        "job-worker-user-task",
        json!({
            "approver": "carla",
            "departments": ["finance", "audit"],
            "dueDate": "2026-12-31T17:00:00Z"
        }),
    );
    let (job, record) = rule.job("io.camunda.zeebe:userTask");
    let header = |key: &str| record.custom_headers.get(key).cloned();
    assert_eq!(
        header("io.camunda.zeebe:assignee").as_deref(),
        Some("carla")
    );
    assert_eq!(
        header("io.camunda.zeebe:candidateGroups").as_deref(),
        Some(r#"["finance","audit"]"#)
    );
    assert_eq!(
        header("io.camunda.zeebe:candidateUsers").as_deref(),
        Some(r#"["anna","ben"]"#)
    );
    assert_eq!(
        header("io.camunda.zeebe:dueDate").as_deref(),
        Some("2026-12-31T17:00:00Z")
    );
    assert_eq!(
        header("io.camunda.zeebe:followUpDate").as_deref(),
        Some("2026-12-30T17:00:00Z")
    );
    // A linked form: the key of the deployed form, as Zeebe writes it.
    assert_eq!(
        header("io.camunda.zeebe:formKey"),
        Some(form_key.to_string())
    );
    assert_eq!(header("department").as_deref(), Some("finance"));
    // zeebe:taskDefinition on a user task is ignored, as in Zeebe: Zeebe's job type, and
    // the one retry Zeebe gives a job-worker user task.
    assert_eq!(record.job_type, "io.camunda.zeebe:userTask");
    assert_eq!(record.retries, 1);

    let outcome = rule.complete(job, json!({"approved": true}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_job_worker_user_task_that_cannot_evaluate_its_headers_raises_an_incident() {
    use rill_protocol::value::IncidentErrorType;

    let mut rule = EngineRule::new();
    rule.deploy_fixture(JOB_WORKER_USER_TASK);
    // The assignee is not a string: no job, an incident naming the assignee.
    let instance = rule.create(
        "job-worker-user-task",
        json!({"approver": 42, "departments": [], "dueDate": "2026-12-31T17:00:00Z"}),
    );
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    let incident = &incidents[0].record;
    assert_eq!(incident.error_type, IncidentErrorType::ExtractValueError);
    assert!(
        incident
            .error_message
            .contains("assignee of user task 'ApproveInvoice'"),
        "{}",
        incident.error_message
    );
    assert!(rule.activate("io.camunda.zeebe:userTask", 10).is_empty());

    // Fixed, it stops at the form, which is not deployed: FORM_NOT_FOUND.
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"approver": "carla"})),
        local: false,
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let resolved = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!resolved.is_rejected(), "{:?}", resolved.response);
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::FormNotFound
    );

    // With the form deployed, resolving creates the job.
    let deployed = rule.deploy(&[(INVOICE_FORM, fixture(INVOICE_FORM))]);
    let form_key = deployed_form_key(&deployed);
    let resolved = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!resolved.is_rejected(), "{:?}", resolved.response);
    let (_, record) = rule.job("io.camunda.zeebe:userTask");
    assert_eq!(
        record.custom_headers.get("io.camunda.zeebe:formKey"),
        Some(&form_key.to_string())
    );
    assert_eq!(
        record
            .custom_headers
            .get("io.camunda.zeebe:candidateGroups")
            .map(String::as_str),
        Some("[]")
    );
    rule.assert_replay_matches();
}

#[test]
fn retries_that_are_not_a_number_deploy_and_fail_when_the_job_is_created() {
    use rill_protocol::value::IncidentErrorType;

    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/retries-not-a-number.bpmn");
    let instance = rule.create("retries-not-a-number", json!({"retries": 2}));
    // retries="=retries": the expression gives the job's retries.
    let (reminder, record) = rule.job("send-reminder");
    assert_eq!(record.retries, 2);
    let outcome = rule.complete(reminder, json!({}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);

    // retries="three": no job, an incident, as in Zeebe.
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    let incident = &incidents[0].record;
    assert_eq!(incident.error_type, IncidentErrorType::ExtractValueError);
    assert_eq!(incident.element_id, "Escalate");
    assert!(
        incident
            .error_message
            .contains("Expected the retries of serviceTask 'Escalate' to be a whole number"),
        "{}",
        incident.error_message
    );
    assert!(rule.activate("escalate", 10).is_empty());
    // Resolving evaluates again, and fails again: the model has to change.
    let resolved = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!resolved.is_rejected(), "{:?}", resolved.response);
    let again = rule.incidents(instance);
    assert_eq!(again.len(), 1);
    assert_ne!(again[0].key, incidents[0].key);
    assert!(rule.activate("escalate", 10).is_empty());

    rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.incidents(instance).is_empty());
    rule.assert_replay_matches();
}

const TIMER_START: &str = "elements/timer-start-date-expression.bpmn";

#[test]
fn a_timer_start_date_expression_is_evaluated_when_the_process_is_deployed() {
    let mut rule = EngineRule::new();
    let deployed_at = rule.now;
    rule.deploy_fixture(TIMER_START);
    let timers: Vec<rill_protocol::value::TimerRecord> = rule
        .records()
        .events()
        .of_type(rill_protocol::ValueType::Timer)
        .with_intent(rill_protocol::Intent::Created)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            rill_protocol::RecordValue::Timer(timer) => Some(timer.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(timers.len(), 1);
    // now() is the deployment's time.
    assert_eq!(timers[0].due_date, deployed_at + 3_600_000);
    assert_eq!(timers[0].target_element_id, "InAnHour");
    assert_eq!(timers[0].repetitions, 1);

    rule.advance(3_599_999);
    assert!(rule.fire_due().is_empty(), "not due yet");
    rule.advance(1);
    assert_eq!(rule.fire_due().len(), 1);
    let (job, record) = rule.job("send-report");
    let instance = Key(record.process_instance_key);
    let outcome = rule.complete(job, json!({}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.advance(86_400_000);
    rule.fire_due();
    let triggered = rule
        .records()
        .events()
        .of_type(rill_protocol::ValueType::Timer)
        .with_intent(rill_protocol::Intent::Triggered)
        .count();
    assert_eq!(triggered, 1, "a date fires once");
    assert!(rule.activate("send-report", 10).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn a_timer_start_date_expression_that_gives_no_date_refuses_the_deployment() {
    let text = String::from_utf8(fixture(TIMER_START)).expect("UTF-8");
    let mut rule = EngineRule::new();
    for (expression, reason) in [
        // No variables at deploy: `reportDate` is null.
        ("=date and time(reportDate)", "reportDate"),
        ("=\"next monday\"", "next monday"),
        ("=42", "expected a date and time"),
    ] {
        let xml = text.replace("=now() + duration(\"PT1H\")", expression);
        assert_ne!(xml, text);
        let outcome = rule.deploy(&[(TIMER_START, xml.into_bytes())]);
        let (kind, message) = rejection_of(&outcome);
        assert_eq!(kind, rill_protocol::RejectionType::InvalidArgument);
        assert!(
            message.contains("element 'InAnHour'")
                && message.contains("evaluated when the process is deployed")
                && message.contains(reason),
            "{expression}: {message}"
        );
    }
    assert!(
        !rule
            .records()
            .events()
            .of_type(rill_protocol::ValueType::Timer)
            .exists(),
        "nothing deployed, no timer"
    );
}

const LISTENER_HEADERS: &str = "elements/listener-task-headers.bpmn";

#[test]
fn an_execution_listener_job_carries_its_own_headers_over_the_elements() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(LISTENER_HEADERS);
    let instance = rule.create("listener-task-headers", json!({}));
    fn headers(record: &rill_protocol::value::JobRecord) -> Vec<(&str, &str)> {
        record
            .custom_headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
    // Camunda 8.10: the listener's headers, over the element's (sorted by key).
    let (start, record) = rule.job("audit-start");
    assert_eq!(
        headers(&record),
        [("auditLevel", "full"), ("channel", "sms"), ("region", "eu")]
    );
    assert!(!rule.complete(start, json!({})).is_rejected());
    let (task, record) = rule.job("notify-customer");
    assert_eq!(headers(&record), [("channel", "email"), ("region", "eu")]);
    assert!(!rule.complete(task, json!({})).is_rejected());
    // A listener without headers of its own has none, as in Zeebe 8.8.
    let (end, record) = rule.job("audit-end");
    assert!(
        record.custom_headers.is_empty(),
        "{:?}",
        record.custom_headers
    );
    assert!(!rule.complete(end, json!({})).is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn anything_else_inside_an_execution_listener_is_refused_naming_it() {
    let text = String::from_utf8(fixture(LISTENER_HEADERS)).expect("UTF-8");
    let xml = text.replace(
        r#"<zeebe:executionListener eventType="end" retries="3" type="audit-end" />"#,
        r#"<zeebe:executionListener eventType="end" retries="3" type="audit-end"><zeebe:properties><zeebe:property name="a" value="b" /></zeebe:properties></zeebe:executionListener>"#,
    );
    assert_ne!(xml, text);
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&[(LISTENER_HEADERS, xml.into_bytes())]);
    let (_, message) = rejection_of(&outcome);
    assert!(
        message.contains("element 'NotifyCustomer'")
            && message.contains("'properties' inside a zeebe:executionListener is not supported"),
        "{message}"
    );
}

#[test]
fn a_process_with_a_start_form_deploys_with_its_form_and_starts() {
    let mut rule = EngineRule::new();
    let deployed = rule.deploy(&[
        (
            "elements/start-form.bpmn",
            fixture("elements/start-form.bpmn"),
        ),
        ("elements/sign-up.form", fixture("elements/sign-up.form")),
    ]);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let rill_protocol::RecordValue::Deployment(deployment) = deployed.value() else {
        panic!("not a deployment")
    };
    assert_eq!(deployment.processes_metadata.len(), 1);
    assert_eq!(deployment.form_metadata[0].form_id, "sign-up-form");
    // What the start form collects starts the instance.
    let instance = rule.create(
        "start-form",
        json!({"email": "ada@example.com", "termsAccepted": true}),
    );
    let (job, record) = rule.job("create-account");
    assert_eq!(
        record.variables.to_value()["email"],
        json!("ada@example.com")
    );
    assert!(!rule.complete(job, json!({})).is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

const BOUND: &str = "elements/deployment-binding.bpmn";
const BOUND_SHIPPING: &str = "elements/deployment-binding-shipping.bpmn";
const BOUND_DECISIONS: &str = "dmn/dish.dmn";
const BOUND_FORM: &str = "elements/invoice-approval.form";

fn deployment_record(outcome: &Outcome) -> rill_protocol::value::DeploymentRecord {
    match outcome.value() {
        rill_protocol::RecordValue::Deployment(deployment) => deployment.clone(),
        other => panic!("not a deployment: {other:?}"),
    }
}

#[test]
fn deployment_bound_links_resolve_to_the_resources_deployed_with_the_process() {
    let mut rule = EngineRule::new();
    let first = rule.deploy(&[
        (BOUND, fixture(BOUND)),
        (BOUND_SHIPPING, fixture(BOUND_SHIPPING)),
        (BOUND_DECISIONS, fixture(BOUND_DECISIONS)),
        (BOUND_FORM, fixture(BOUND_FORM)),
    ]);
    assert!(!first.is_rejected(), "{:?}", first.response);
    let first = deployment_record(&first);
    let shipping_v1 = first
        .processes_metadata
        .iter()
        .find(|p| p.bpmn_process_id == "deployment-binding-shipping")
        .expect("the shipping process")
        .process_definition_key;
    let form_v1 = first.form_metadata[0].form_key;
    // Newer versions deployed alone do not change what the bound process uses.
    let shipping = String::from_utf8(fixture(BOUND_SHIPPING)).expect("UTF-8");
    let form = String::from_utf8(fixture(BOUND_FORM)).expect("UTF-8");
    let second = rule.deploy(&[
        (
            BOUND_SHIPPING,
            shipping.replace("Pack parcel", "Pack it").into_bytes(),
        ),
        (BOUND_FORM, form.replace("Approve", "Accept").into_bytes()),
    ]);
    let second = deployment_record(&second);
    assert!(second.processes_metadata.iter().all(|p| p.version == 2));
    assert_eq!(second.form_metadata[0].version, 2);

    let instance = rule.create("deployment-binding", json!({"month": 7}));
    assert_eq!(rule.variables(instance)["season"], json!("Summer"));
    let (job, record) = rule.job("pack-parcel");
    assert_eq!(record.process_definition_key, shipping_v1);
    assert!(!rule.complete(job, json!({})).is_rejected());
    let task = rule
        .records()
        .events()
        .of_type(rill_protocol::ValueType::UserTask)
        .with_intent(rill_protocol::Intent::Created)
        .records
        .iter()
        .find_map(|r| match &r.value {
            rill_protocol::RecordValue::UserTask(task) => Some(task.clone()),
            _ => None,
        })
        .expect("the user task");
    assert_eq!(task.form_key, form_v1);
    let done = rule.process(Command::UserTask(
        rill_protocol::UserTaskCommand::Complete {
            user_task_key: Key(task.user_task_key),
            variables: JsonValue::from(json!({"approved": true})),
            action: String::new(),
        },
    ));
    assert!(!done.is_rejected(), "{:?}", done.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_deployment_without_its_deployment_bound_resources_is_refused_naming_each() {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&[(BOUND, fixture(BOUND))]);
    let (kind, message) = rejection_of(&outcome);
    assert_eq!(kind, rill_protocol::RejectionType::InvalidArgument);
    for (element, what, id) in [
        ("DecideSeason", "decision", "season"),
        ("Ship", "process", "deployment-binding-shipping"),
        ("Approve", "form", "invoice-approval-form"),
    ] {
        let expected = format!(
            "'{BOUND}' element '{element}': Expected to find {what} with id '{id}' in current \
             deployment, but not found."
        );
        assert!(message.contains(&expected), "{expected}\nin: {message}");
    }
    assert!(message.contains("3 problems"), "{message}");
    // With the process and the decisions, only the form is missing.
    let outcome = rule.deploy(&[
        (BOUND, fixture(BOUND)),
        (BOUND_SHIPPING, fixture(BOUND_SHIPPING)),
        (BOUND_DECISIONS, fixture(BOUND_DECISIONS)),
    ]);
    let (_, message) = rejection_of(&outcome);
    assert!(
        message.contains("1 problem:") && message.contains("form with id 'invoice-approval-form'"),
        "{message}"
    );
    // The resources deployed before, in another deployment, do not count.
    rule.deploy(&[
        (BOUND_SHIPPING, fixture(BOUND_SHIPPING)),
        (BOUND_DECISIONS, fixture(BOUND_DECISIONS)),
        (BOUND_FORM, fixture(BOUND_FORM)),
    ]);
    assert!(rule.deploy(&[(BOUND, fixture(BOUND))]).is_rejected());
    let created = rule.process(EngineRule::create_command("deployment-binding", json!({})));
    assert_eq!(
        rejection_of(&created).0,
        rill_protocol::RejectionType::NotFound,
        "nothing of a refused deployment is deployed"
    );
}

#[test]
fn a_deployment_bound_call_inside_a_subprocess_is_found_missing_when_entered() {
    // Zeebe checks the elements directly in the process only; this one deploys, and the
    // call is an incident when the subprocess reaches it.
    use super::elements::{flow, model};
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />
           <bpmn:subProcess id="Sub">
             <bpmn:startEvent id="ss" />
             <bpmn:callActivity id="Call"><bpmn:extensionElements>
               <zeebe:calledElement processId="nowhere" bindingType="deployment" />
             </bpmn:extensionElements></bpmn:callActivity>
             {}
           </bpmn:subProcess>
           {}"#,
        flow("f2", "ss", "Call"),
        flow("f1", "s", "Sub")
    ));
    let mut rule = EngineRule::new();
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        rill_protocol::value::IncidentErrorType::CalledElementError
    );
}

const TIMER_CYCLE: &str = "elements/timer-start-cycle-expression.bpmn";

/// The timers created for a start event, in order.
fn start_timers(rule: &EngineRule, start: &str) -> Vec<rill_protocol::value::TimerRecord> {
    rule.records()
        .events()
        .of_type(rill_protocol::ValueType::Timer)
        .with_intent(rill_protocol::Intent::Created)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            rill_protocol::RecordValue::Timer(timer) if timer.target_element_id == start => {
                Some(timer.clone())
            }
            _ => None,
        })
        .collect()
}

/// Fires what is due; how many timers fired (completed instances are also due for
/// deletion from the engine's state).
fn timers_fired(rule: &mut EngineRule) -> usize {
    rule.fire_due()
        .iter()
        .filter(|o| o.records[0].value_type() == rill_protocol::ValueType::Timer)
        .count()
}

#[test]
fn a_timer_start_cycle_expression_is_evaluated_at_deploy_and_each_time_it_fires() {
    const HOUR: i64 = 3_600_000;
    let mut rule = EngineRule::new();
    // 2023-11-14T22:13:20Z, a Tuesday.
    let deployed_at = rule.now;
    rule.deploy_fixture(TIMER_CYCLE);
    let hourly = start_timers(&rule, "EveryHour");
    assert_eq!(
        hourly
            .iter()
            .map(|t| (t.due_date, t.repetitions))
            .collect::<Vec<_>>(),
        [(deployed_at + HOUR, 3)]
    );
    // The cron expression it gives: the next weekday at 09:00 UTC, Wednesday's.
    let mornings = start_timers(&rule, "WeekdayMornings");
    assert_eq!(mornings.len(), 1);
    assert_eq!(mornings[0].due_date, 1_700_038_800_000);
    assert_eq!(mornings[0].repetitions, -1);

    // Three firings an hour apart, each starting an instance; then no more.
    for firing in 1..=3 {
        rule.advance(HOUR);
        assert_eq!(timers_fired(&mut rule), 1, "firing {firing}");
        let (job, record) = rule.job("check-inbox");
        assert!(!rule.complete(job, json!({})).is_rejected());
        let instance = Key(record.process_instance_key);
        assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    }
    let hourly = start_timers(&rule, "EveryHour");
    assert_eq!(
        hourly
            .iter()
            .map(|t| (t.due_date - deployed_at, t.repetitions))
            .collect::<Vec<_>>(),
        [(HOUR, 3), (2 * HOUR, 2), (3 * HOUR, 1)]
    );
    // Wednesday 09:00: the cron cycle fires and arms Thursday's.
    rule.now = 1_700_038_800_000;
    assert_eq!(timers_fired(&mut rule), 1);
    let mornings = start_timers(&rule, "WeekdayMornings");
    assert_eq!(mornings.len(), 2);
    assert_eq!(mornings[1].due_date, 1_700_038_800_000 + 24 * HOUR);
    assert_eq!(
        start_timers(&rule, "EveryHour").len(),
        3,
        "the hourly one is done"
    );
    rule.assert_replay_matches();
}

#[test]
fn a_timer_start_cycle_expression_that_gives_no_cycle_refuses_the_deployment() {
    let text = String::from_utf8(fixture(TIMER_CYCLE)).expect("UTF-8");
    let mut rule = EngineRule::new();
    for (expression, reason) in [
        ("=\"every hour\"", "neither an ISO 8601 cycle"),
        ("=42", "but it is 42"),
        ("=\"R3/PT1X\"", "PT1X"),
    ] {
        let xml = text.replace(r#"="R3/" + string(duration("PT1H"))"#, expression);
        assert_ne!(xml, text);
        let outcome = rule.deploy(&[(TIMER_CYCLE, xml.into_bytes())]);
        let (_, message) = rejection_of(&outcome);
        assert!(
            message.contains("element 'EveryHour'")
                && message.contains("the timeCycle of a timer start event is evaluated")
                && message.contains(reason),
            "{expression}: {message}"
        );
    }
    assert!(
        !rule
            .records()
            .events()
            .of_type(rill_protocol::ValueType::Timer)
            .exists(),
        "nothing deployed, no timer"
    );
}
