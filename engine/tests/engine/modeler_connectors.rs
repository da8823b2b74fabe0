//! Connector and AI-agent models of the Modeler corpus, worked the way the connector
//! runtime (a job worker of its own) works them: it activates the job, reads the job's
//! type, custom headers and variables, calls out, and completes, fails or throws.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{
    AdHocSubProcessActivateElement, JobRecord, JobResult, JobResultType, UserTaskRecord,
};
use rill_protocol::{
    Command, FailJob, Intent, JsonValue, Key, RecordValue, ThrowError, UserTaskCommand, ValueType,
};
use serde_json::{Value, json};

use super::modeler_corpus::CORPUS;
use super::*;

const HTTP_JSON: &str = "io.camunda:http-json:1";
const AGENT_SUB_PROCESS: &str = "io.camunda.agenticai:aiagent-job-worker:1";
const AGENT_TASK: &str = "io.camunda.agenticai:aiagent:1";

fn deploy(rule: &mut EngineRule, name: &str) {
    let outcome = rule.deploy(&[(name, fixture(&format!("{CORPUS}/{name}")))]);
    assert!(!outcome.is_rejected(), "{name}: {:?}", outcome.response);
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("the instance").state
}

fn headers(job: &JobRecord) -> Vec<(&str, &str)> {
    job.custom_headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

fn customer() -> Value {
    json!({
        "requestId": "req-81",
        "customer": {
            "firstName": "Ada",
            "lastName": "Lovelace",
            "email": "ada@example.com",
            "segment": "b2b"
        }
    })
}

#[test]
fn the_http_json_connector_job_carries_what_the_connector_runtime_reads() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, "http-json-connector.bpmn");
    let instance = rule.create("http-json-connector", customer());
    let (job_key, job) = rule.job(HTTP_JSON);

    assert_eq!(job.job_type, HTTP_JSON);
    assert_eq!(job.retries, 3);
    assert_eq!(job.element_id, "CreateCrmContact");
    // The template's task headers, as written: FEEL text is handed out unevaluated,
    // for the runtime to evaluate against the response.
    assert_eq!(
        headers(&job),
        [
            ("elementTemplateId", "io.camunda.connectors.HttpJson.v2"),
            ("elementTemplateVersion", "12"),
            (
                "errorExpression",
                "=if error.code = \"409\" then bpmnError(\"CONTACT_EXISTS\", \"The contact exists \
                 already\", {existing: error.response.body}) else null"
            ),
            (
                "resultExpression",
                "={contactId: response.body.id, created: response.status = 201}"
            ),
            ("resultVariable", "crmResponse"),
            ("retryBackoff", "PT10S"),
        ]
    );

    let variables = job.variables.to_value();
    // Static input mappings: the text as written, a string even when it looks like a
    // number or a boolean, and secrets left for the runtime to replace.
    assert_eq!(
        variables["authentication"],
        json!({"type": "bearer", "token": "{{secrets.CRM_TOKEN}}"})
    );
    assert_eq!(variables["method"], json!("POST"));
    assert_eq!(
        variables["url"],
        json!("https://crm.example.com/api/v2/contacts")
    );
    assert_eq!(variables["storeResponse"], json!("false"));
    assert_eq!(variables["connectionTimeoutInSeconds"], json!("20"));
    assert_eq!(variables["readTimeoutInSeconds"], json!("20"));
    assert_eq!(variables["ignoreNullValues"], json!("false"));
    // FEEL input mappings: evaluated against the instance's variables.
    assert_eq!(
        variables["headers"],
        json!({"X-Request-Id": "req-81", "Accept": "application/json"})
    );
    assert_eq!(variables["queryParameters"], json!({"source": "webshop"}));
    assert_eq!(
        variables["body"],
        json!({"name": "Ada Lovelace", "email": "ada@example.com", "tags": ["webshop", "b2b"]})
    );
    // No fetch list: the job carries every variable the task sees.
    assert_eq!(variables["requestId"], json!("req-81"));

    // The runtime applies resultVariable and resultExpression and completes with both.
    let outcome = rule.complete(
        job_key,
        json!({
            "crmResponse": {"status": 201, "body": {"id": "ct-5"}, "headers": {}},
            "contactId": "ct-5",
            "created": true
        }),
    );
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["contactId"], json!("ct-5"));
    assert_eq!(variables["crmResponse"]["status"], json!(201));
    assert!(
        variables.get("method").is_none() && variables.get("authentication").is_none(),
        "input mappings stay local to the task: {variables}"
    );
    rule.assert_replay_matches();
}

#[test]
fn the_connector_runtime_retries_after_the_backoff_and_its_error_expression_throws_a_bpmn_error() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, "http-json-connector.bpmn");
    let instance = rule.create("http-json-connector", customer());

    // A 503: the runtime fails the job with one retry less and the header's backoff.
    let (key, job) = rule.job(HTTP_JSON);
    assert_eq!(
        job.custom_headers.get("retryBackoff").map(String::as_str),
        Some("PT10S")
    );
    let outcome = rule.process(Command::FailJob(FailJob {
        job_key: key,
        retries: job.retries - 1,
        error_message: "HTTP 503 Service Unavailable".to_owned(),
        retry_backoff: 10_000,
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert!(rule.activate(HTTP_JSON, 10).is_empty(), "backing off");
    rule.advance(9_999);
    rule.fire_due();
    assert!(rule.activate(HTTP_JSON, 10).is_empty(), "still backing off");
    rule.advance(1);
    rule.fire_due();
    let (key, again) = rule.job(HTTP_JSON);
    assert_eq!(again.retries, 2);
    assert_eq!(again.variables.to_value()["method"], json!("POST"));

    // A 409: the error expression gives bpmnError("CONTACT_EXISTS", ...), which the
    // runtime throws; the boundary event catches it.
    let outcome = rule.process(Command::ThrowError(ThrowError {
        job_key: key,
        error_code: "CONTACT_EXISTS".to_owned(),
        error_message: "The contact exists already".to_owned(),
        variables: JsonValue::from(json!({"existing": {"id": "ct-1"}})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let ends: Vec<String> = rule
        .element_events("ContactExistsEnd", Intent::ElementCompleted)
        .into_iter()
        .map(|(_, v)| v.element_id)
        .collect();
    assert_eq!(ends, ["ContactExistsEnd"]);
    assert!(
        rule.element_events("EndEvent_1", Intent::ElementCompleted)
            .is_empty()
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

/// A tool call as the AI agent connector activates it: the model's arguments and the
/// call's id and tool name under `_meta`, in the variable `toolCall`.
fn tool_call(id: &str, tool: &str, arguments: Value) -> AdHocSubProcessActivateElement {
    let mut call = arguments;
    call["_meta"] = json!({"id": id, "name": tool});
    AdHocSubProcessActivateElement {
        element_id: tool.to_owned(),
        variables: JsonValue::from(json!({"toolCall": call})),
    }
}

fn created_user_task(rule: &EngineRule, element_id: &str) -> UserTaskRecord {
    rule.records()
        .events()
        .of_type(ValueType::UserTask)
        .with_intent(Intent::Created)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::UserTask(task) if task.element_id == element_id => Some(task.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no user task '{element_id}'"))
}

#[test]
fn the_ai_agent_sub_process_activates_its_tools_and_from_ai_gives_each_its_argument() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, "ai-agent-subprocess.bpmn");
    let instance = rule.create(
        "ai-agent-subprocess",
        json!({"question": "Where is order A-1001? I returned 2 cups.", "customerEmail": "ada@example.com"}),
    );

    // The agent's job: the template's type, headers and inputs.
    let (agent, job) = rule.job(AGENT_SUB_PROCESS);
    assert_eq!(job.element_id, "SupportAgent");
    assert_eq!(
        headers(&job),
        [
            (
                "elementTemplateId",
                "io.camunda.connectors.agenticai.aiagent.jobworker.v1"
            ),
            ("elementTemplateVersion", "4"),
            ("resultVariable", "agent"),
            ("retryBackoff", "PT0S"),
        ]
    );
    let inputs = job.variables.to_value();
    assert_eq!(
        inputs["provider"],
        json!({
            "type": "anthropic",
            "anthropic": {
                "authentication": {"apiKey": "{{secrets.ANTHROPIC_API_KEY}}"},
                "model": {"model": "claude-sonnet-4-20250514", "parameters": {"maxTokens": 4096}}
            }
        })
    );
    assert_eq!(
        inputs["data"]["userPrompt"]["prompt"],
        json!("Where is order A-1001? I returned 2 cups.")
    );
    assert_eq!(
        inputs["data"]["memory"],
        json!({"storage": {"type": "in-process"}, "contextWindowSize": 20})
    );
    assert_eq!(inputs["data"]["limits"]["maxModelCalls"], json!(10));
    assert_eq!(
        inputs["data"]["events"]["behavior"],
        json!("WAIT_FOR_TOOL_CALL_RESULTS")
    );
    assert_eq!(inputs["agentContext"], Value::Null, "no context yet");
    // The tools the agent may call: the ad-hoc subprocess's activities, with the
    // documentation the model chooses by.
    let tools: Vec<(String, String)> = inputs["adHocSubProcessElements"]
        .as_array()
        .expect("the tools")
        .iter()
        .map(|tool| {
            (
                tool["elementId"].as_str().expect("an id").to_owned(),
                tool["documentation"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            (
                "GetOrderStatus".to_owned(),
                "Looks up the status of an order by its order number.".to_owned()
            ),
            (
                "ComputeRefund".to_owned(),
                "Computes the refund for returned items: the price times the quantity, minus \
                 a restocking fee in percent."
                    .to_owned()
            ),
            (
                "AskHuman".to_owned(),
                "Asks a human support employee a question when the agent cannot answer alone."
                    .to_owned()
            ),
            (
                "SendEmail".to_owned(),
                "Sends an email to the customer.".to_owned()
            ),
        ]
    );

    // The model calls three tools at once.
    complete_with_result(
        &mut rule,
        agent,
        json!({"agent": {"context": {"conversation": 1}}}),
        JobResult {
            result_type: JobResultType::AdHocSubProcess,
            activate_elements: vec![
                tool_call("call-1", "GetOrderStatus", json!({"orderNumber": "A-1001"})),
                tool_call(
                    "call-2",
                    "ComputeRefund",
                    json!({"price": 12.5, "quantity": 2, "feePercent": 10}),
                ),
                tool_call(
                    "call-3",
                    "AskHuman",
                    json!({"question": "May we refund in cash?"}),
                ),
            ],
            ..JobResult::default()
        },
    );
    // fromAi(value, ...) is its value: the connector tool's URL, the script's refund, the
    // human's question.
    let (status_key, status) = rule.job(HTTP_JSON);
    let status_inputs = status.variables.to_value();
    assert_eq!(
        status_inputs["url"],
        json!("https://shop.example.com/api/orders/A-1001")
    );
    assert_eq!(status_inputs["authentication"], json!({"type": "noAuth"}));
    assert_eq!(status_inputs["toolCall"]["_meta"]["id"], json!("call-1"));
    assert_eq!(
        status
            .custom_headers
            .get("resultExpression")
            .map(String::as_str),
        Some("={toolCallResult: response.body}")
    );
    let question = created_user_task(&rule, "AskHuman");
    assert_eq!(question.candidate_groups_list, ["support"]);
    // The HTTP connector's result expression maps the body into toolCallResult.
    let outcome = rule.complete(status_key, json!({"toolCallResult": {"status": "shipped"}}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let outcome = rule.process(Command::UserTask(UserTaskCommand::Complete {
        user_task_key: Key(question.user_task_key),
        variables: JsonValue::from(json!({"answer": "No, only to the card."})),
        action: String::new(),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);

    // Every finished tool asks the agent again; the newest job has all three results.
    let (agent, job) = rule
        .activate(AGENT_SUB_PROCESS, 10)
        .pop()
        .expect("the agent is asked again");
    let inputs = job.variables.to_value();
    // The agent's own result reaches its next job; its input mappings were applied once,
    // when the subprocess was entered.
    assert_eq!(inputs["agent"]["context"], json!({"conversation": 1}));
    assert_eq!(inputs["agentContext"], Value::Null);
    let mut results = inputs["toolCallResults"]
        .as_array()
        .expect("results")
        .clone();
    results.sort_by_key(|r| r["id"].as_str().map(str::to_owned));
    assert_eq!(
        results,
        [
            json!({"id": "call-1", "name": "GetOrderStatus", "content": {"status": "shipped"}}),
            json!({"id": "call-2", "name": "ComputeRefund", "content": 22.5}),
            json!({"id": "call-3", "name": "AskHuman", "content": "No, only to the card."}),
        ]
    );

    // The model writes to the customer, then is done.
    complete_with_result(
        &mut rule,
        agent,
        json!({}),
        JobResult {
            result_type: JobResultType::AdHocSubProcess,
            activate_elements: vec![tool_call(
                "call-4",
                "SendEmail",
                json!({"subject": "Your order A-1001", "body": "It has shipped; 22.50 EUR come back to your card."}),
            )],
            ..JobResult::default()
        },
    );
    let (email_key, email) = rule.job("send-email");
    let email_inputs = email.variables.to_value();
    assert_eq!(email_inputs["to"], json!("ada@example.com"));
    assert_eq!(email_inputs["subject"], json!("Your order A-1001"));
    assert_eq!(
        email_inputs["body"],
        json!("It has shipped; 22.50 EUR come back to your card.")
    );
    assert!(!rule.complete(email_key, json!({})).is_rejected());
    let (agent, job) = rule
        .activate(AGENT_SUB_PROCESS, 10)
        .pop()
        .expect("the agent is asked again");
    let last = job.variables.to_value()["toolCallResults"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["id"] == json!("call-4"))
        .cloned();
    assert_eq!(
        last,
        Some(json!({"id": "call-4", "name": "SendEmail", "content": "Email sent."}))
    );
    complete_with_result(
        &mut rule,
        agent,
        json!({"agent": {"responseText": "Order A-1001 has shipped; refund of 22.50 EUR."}}),
        JobResult {
            result_type: JobResultType::AdHocSubProcess,
            completion_condition_fulfilled: true,
            ..JobResult::default()
        },
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance)["agent"]["responseText"],
        json!("Order A-1001 has shipped; refund of 22.50 EUR.")
    );
    rule.assert_replay_matches();
}

#[test]
fn the_ai_agent_job_describes_each_tool_with_the_from_ai_parameters_of_its_input_mappings() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, "ai-agent-tool-parameters.bpmn");
    let instance = rule.create(
        "ai-agent-tool-parameters",
        json!({"request": "Two of us fly LIS to BER on 2026-05-04, hotel 3 nights.", "travelerName": "Ada"}),
    );
    let (agent, job) = rule.job(AGENT_SUB_PROCESS);
    assert_eq!(job.element_id, "TravelAgent");
    // What the AI Agent job worker turns into the tools' input schemas: every fromAi call
    // of a tool's input mappings, in order, named by its reference. A field an element
    // or a call does not have is left out, as Zeebe leaves it out. SendConfirmation is
    // reached from BookHotel, so it is no tool; CurrentDate has no inputs.
    assert_eq!(
        job.variables.to_value()["adHocSubProcessElements"],
        json!([
            {
                "elementId": "SearchFlights",
                "elementName": "Search flights",
                "documentation": "Searches direct flights between two airports on one day.",
                "parameters": [
                    {"name": "toolCall.from", "description": "IATA code of the departure airport", "type": "string"},
                    {"name": "toolCall.to", "description": "IATA code of the arrival airport", "type": "string"},
                    {"name": "toolCall.day", "description": "The day of travel", "type": "string",
                     "schema": {"format": "date"}},
                    {"name": "toolCall.cabin", "description": "The cabin class", "type": "string",
                     "schema": {"enum": ["economy", "business", "first"]}},
                    {"name": "toolCall.passengers", "description": "How many people travel",
                     "type": "integer", "schema": {"minimum": 1, "maximum": 9},
                     "options": {"required": false}}
                ]
            },
            {
                "elementId": "BookHotel",
                "elementName": "Book a hotel",
                "documentation": "Books a hotel room and returns the booking number.",
                "properties": {"category": "booking"},
                "parameters": [
                    {"name": "toolCall.city", "description": "The city of the hotel", "type": "string"},
                    {"name": "toolCall.nights", "description": "Number of nights", "type": "number"},
                    {"name": "toolCall.amenities", "description": "Amenities the traveler asks for",
                     "type": "array",
                     "schema": {"items": {"type": "string", "enum": ["wifi", "parking", "breakfast"]}},
                     "options": {"required": false}}
                ]
            },
            {
                "elementId": "AskTraveler",
                "documentation": "Asks the traveler a question, such as which of two flights they prefer.",
                "parameters": [{"name": "toolCall.question"}]
            },
            {"elementId": "CurrentDate", "elementName": "Current date"}
        ])
    );

    // The model calls the flight search with the parameters it was shown; fromAi gives
    // each mapping its argument.
    complete_with_result(
        &mut rule,
        agent,
        json!({}),
        JobResult {
            result_type: JobResultType::AdHocSubProcess,
            activate_elements: vec![tool_call(
                "call-1",
                "SearchFlights",
                json!({"from": "LIS", "to": "BER", "day": "2026-05-04", "cabin": "economy", "passengers": 2}),
            )],
            ..JobResult::default()
        },
    );
    let (search, search_job) = rule.job(HTTP_JSON);
    let inputs = search_job.variables.to_value();
    assert_eq!(
        inputs["url"],
        json!("https://flights.example.com/search/LIS/BER")
    );
    assert_eq!(
        inputs["queryParameters"],
        json!({"day": "2026-05-04", "cabin": "economy", "passengers": 2})
    );
    assert!(
        !rule
            .complete(search, json!({"toolCallResult": ["TP 542"]}))
            .is_rejected()
    );
    let (agent, job) = rule
        .activate(AGENT_SUB_PROCESS, 10)
        .pop()
        .expect("the agent is asked again");
    assert_eq!(
        job.variables.to_value()["toolCallResults"],
        json!([{"id": "call-1", "name": "SearchFlights", "content": ["TP 542"]}])
    );
    complete_with_result(
        &mut rule,
        agent,
        json!({"agent": {"responseText": "Take TP 542."}}),
        JobResult {
            result_type: JobResultType::AdHocSubProcess,
            completion_condition_fulfilled: true,
            ..JobResult::default()
        },
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn the_ai_agent_task_loops_through_its_multi_instance_tools_until_it_has_no_tool_calls() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, "ai-agent-task.bpmn");
    let instance = rule.create(
        "ai-agent-task",
        json!({"request": "Find me a flight from Lisbon to Berlin on 1 May."}),
    );

    let (agent, job) = rule.job(AGENT_TASK);
    assert_eq!(
        job.custom_headers
            .get("elementTemplateId")
            .map(String::as_str),
        Some("io.camunda.connectors.agenticai.aiagent.v1")
    );
    assert_eq!(
        job.custom_headers.get("resultVariable").map(String::as_str),
        Some("agent")
    );
    let inputs = job.variables.to_value();
    assert_eq!(
        inputs["data"]["tools"],
        json!({"containerElementId": "TravelTools", "toolCallResults": null})
    );
    assert_eq!(inputs["provider"]["type"], json!("openai"));

    // The model asks for two tools: the connector's result variable `agent` carries them.
    let outcome = rule.complete(
        agent,
        json!({"agent": {
            "context": {"turn": 1},
            "toolCalls": [
                {"_meta": {"id": "c-1", "name": "GetDateAndTime"}},
                {"_meta": {"id": "c-2", "name": "SearchFlights"}, "from": "LIS", "to": "BER", "day": "2026-05-01"}
            ]
        }}),
    );
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    // One ad-hoc instance per tool call; each activates the element its call names.
    let (flights_key, flights) = rule.job("search-flights");
    let args = flights.variables.to_value();
    assert_eq!(
        (&args["from"], &args["to"], &args["day"]),
        (&json!("LIS"), &json!("BER"), &json!("2026-05-01"))
    );
    let outcome = rule.complete(
        flights_key,
        json!({"toolCallResult": [{"flight": "TP 540"}]}),
    );
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);

    // Back at the agent, with both results in the order of the calls.
    let (agent, job) = rule.job(AGENT_TASK);
    let results = job.variables.to_value()["data"]["tools"]["toolCallResults"].clone();
    let now = rill_feel_now(&rule);
    assert_eq!(
        results,
        json!([
            {"id": "c-1", "name": "GetDateAndTime", "content": now},
            {"id": "c-2", "name": "SearchFlights", "content": [{"flight": "TP 540"}]}
        ])
    );
    assert_eq!(job.variables.to_value()["agentContext"], json!({"turn": 1}));

    // No more tool calls: the default flow to the person who reviews the answer.
    let outcome = rule.complete(
        agent,
        json!({"agent": {"context": {"turn": 2}, "toolCalls": [], "responseText": "Take TP 540."}}),
    );
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let review = created_user_task(&rule, "ReviewAnswer");
    let outcome = rule.process(Command::UserTask(UserTaskCommand::Complete {
        user_task_key: Key(review.user_task_key),
        variables: JsonValue::from(json!({})),
        action: String::new(),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let agent_jobs = rule
        .records()
        .events()
        .of_type(ValueType::Job)
        .with_intent(Intent::Created)
        .records
        .iter()
        .filter(|r| matches!(&r.value, RecordValue::Job(j) if j.job_type == AGENT_TASK))
        .count();
    assert_eq!(agent_jobs, 2);
    rule.assert_replay_matches();
}

/// `string(now())` as the script tool evaluated it: the value it wrote.
fn rill_feel_now(rule: &EngineRule) -> Value {
    rule.records()
        .events()
        .of_type(ValueType::Variable)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::Variable(v) if v.name == "toolCallResult" => {
                Some(serde_json::from_str::<Value>(&v.value).expect("JSON"))
            }
            _ => None,
        })
        .expect("the date tool's result")
}
