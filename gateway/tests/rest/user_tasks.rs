//! The user-task API in Camunda 8.8's shapes, over the engine on two partitions with the
//! history store: deploy a process and its form together, search tasks across the
//! partitions (filter, sort, cursors), get one and its form and variables, assign,
//! unassign, update and complete, with 404 and 409 problems where Camunda answers them.

use serde_json::{Value, json};

use crate::shapes::{boolean, date, integer, key, one_of, search_result, text};
use crate::support::engine_backend::EngineBackend;
use crate::support::schema::assert_matches;
use crate::support::{TestGateway, create};

const REVIEW: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="review" name="Order review" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:userTask id="approve" name="Approve the order">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:formDefinition formId="approval-form" />
        <zeebe:assignmentDefinition candidateGroups="=groups" />
        <zeebe:taskSchedule dueDate="2026-12-31T17:00:00Z" />
        <zeebe:priorityDefinition priority="=priority" />
        <zeebe:ioMapping><zeebe:input source="=orderId" target="order" /></zeebe:ioMapping>
      </bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
    </bpmn:userTask>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

const FORM: &str = r#"{"id": "approval-form", "type": "default", "schemaVersion": 16,
  "components": [{"key": "approved", "type": "checkbox", "label": "Approve"}]}"#;

/// Camunda's `UserTaskResult` (8.8), with the fields Rill always fills required.
fn user_task() -> Value {
    json!({
        "type": "object",
        "required": ["name", "state", "elementId", "elementInstanceKey", "candidateGroups",
                     "candidateUsers", "processDefinitionId", "creationDate", "tenantId",
                     "processDefinitionVersion", "customHeaders", "priority", "userTaskKey",
                     "processDefinitionKey", "processInstanceKey"],
        "properties": {
            "name": text(),
            "state": one_of(&["CREATING", "CREATED", "ASSIGNING", "UPDATING", "COMPLETING",
                              "COMPLETED", "CANCELING", "CANCELED", "FAILED"]),
            "assignee": text(),
            "elementId": text(),
            "elementInstanceKey": key(),
            "candidateGroups": {"type": "array", "items": text()},
            "candidateUsers": {"type": "array", "items": text()},
            "processDefinitionId": text(),
            "creationDate": date(),
            "completionDate": date(),
            "followUpDate": date(),
            "dueDate": date(),
            "tenantId": text(),
            "externalFormReference": text(),
            "processDefinitionVersion": integer(),
            "customHeaders": {"type": "object"},
            "priority": integer(),
            "userTaskKey": key(),
            "processName": text(),
            "processDefinitionKey": key(),
            "processInstanceKey": key(),
            "formKey": key(),
            "tags": {"type": "array", "items": text()}
        }
    })
}

/// Camunda's `FormResult`.
fn form() -> Value {
    json!({
        "type": "object",
        "required": ["tenantId", "formId", "schema", "version", "formKey"],
        "properties": {
            "tenantId": text(),
            "formId": text(),
            "schema": {"type": "object"},
            "version": integer(),
            "formKey": key()
        }
    })
}

fn variable_item() -> Value {
    json!({
        "type": "object",
        "required": ["name", "value", "variableKey", "scopeKey", "processInstanceKey"],
        "properties": {
            "name": text(), "value": text(), "isTruncated": boolean(), "tenantId": text(),
            "variableKey": key(), "scopeKey": key(), "processInstanceKey": key()
        }
    })
}

#[track_caller]
fn assert_problem(reply: &crate::support::Reply, status: u16, title: &str) {
    assert_eq!(reply.status, status, "{:?}", reply.body);
    assert_eq!(reply.body["title"], title, "{:?}", reply.body);
    assert_eq!(reply.body["status"], status, "{:?}", reply.body);
}

async fn search(gateway: &TestGateway, body: Value) -> Value {
    let reply = gateway.post("/v2/user-tasks/search", body).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_matches(
        "user task search",
        &search_result(user_task(), false),
        &reply.body,
    );
    reply.body
}

fn keys(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["userTaskKey"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn user_tasks_are_searched_worked_and_completed_in_camundas_shapes() {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    let deployed = gateway
        .deploy(&[
            ("review.bpmn", REVIEW.as_bytes()),
            ("approval.form", FORM.as_bytes()),
        ])
        .await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let deployments = deployed.body["deployments"].as_array().unwrap();
    assert_eq!(deployments.len(), 2, "{:?}", deployed.body);
    assert_eq!(deployments[1]["form"]["formId"], "approval-form");
    assert_eq!(deployments[1]["form"]["version"], 1);
    assert_eq!(deployments[1]["form"]["resourceName"], "approval.form");
    let form_key = deployments[1]["form"]["formKey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(deployments[0]["processDefinition"].is_object());
    assert!(deployments[0].get("form").is_none());

    // Three tasks, on both partitions (creates go round-robin).
    let mut instances = Vec::new();
    for (i, groups) in [
        json!(["sales"]),
        json!(["sales", "managers"]),
        json!(["support"]),
    ]
    .into_iter()
    .enumerate()
    {
        let variables =
            json!({"groups": groups, "priority": 10 * (i + 1), "orderId": format!("o-{i}")});
        instances.push(create(&gateway, "review", variables).await);
    }
    let all = search(&gateway, json!({})).await;
    assert_eq!(all["page"]["totalItems"], 3);
    let partitions: std::collections::BTreeSet<u64> = keys(&all)
        .iter()
        .map(|k| k.parse::<u64>().unwrap() >> 51)
        .collect();
    assert_eq!(partitions.len(), 2, "tasks on both partitions: {all}");
    let item = &all["items"][0];
    assert_eq!(item["name"], "Approve the order");
    assert_eq!(item["processName"], "Order review");
    assert_eq!(item["state"], "CREATED");
    assert_eq!(item["formKey"], form_key.as_str());
    assert_eq!(item["dueDate"], "2026-12-31T17:00:00.000Z");
    assert!(item.get("assignee").is_none(), "{item}");

    // Filters: a candidate group matches any of a task's groups.
    let sales = search(&gateway, json!({"filter": {"candidateGroup": "sales"}})).await;
    assert_eq!(sales["page"]["totalItems"], 2, "{sales}");
    let urgent = search(&gateway, json!({"filter": {"priority": {"$gte": 20}}})).await;
    assert_eq!(urgent["page"]["totalItems"], 2, "{urgent}");
    let of_instance = search(
        &gateway,
        json!({"filter": {"processInstanceKey": instances[2], "state": "CREATED"}}),
    )
    .await;
    assert_eq!(of_instance["page"]["totalItems"], 1);
    let bad = gateway
        .post(
            "/v2/user-tasks/search",
            json!({"filter": {"state": "SLEEPING"}}),
        )
        .await;
    assert_problem(&bad, 400, "INVALID_ARGUMENT");

    // Sort by priority, descending, in pages of one with cursors.
    let sort = json!([{"field": "priority", "order": "desc"}]);
    let page1 = search(&gateway, json!({"sort": sort, "page": {"limit": 1}})).await;
    assert_eq!(page1["items"][0]["priority"], 30);
    let cursor = page1["page"]["endCursor"].as_str().unwrap();
    let page2 = search(
        &gateway,
        json!({"sort": sort, "page": {"limit": 2, "after": cursor}}),
    )
    .await;
    let priorities: Vec<&Value> = page2["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["priority"])
        .collect();
    assert_eq!(priorities, [&json!(20), &json!(10)]);

    // Get one; a missing one is 404.
    let task_key = keys(
        &search(
            &gateway,
            json!({"filter": {"processInstanceKey": instances[0]}}),
        )
        .await,
    )[0]
    .clone();
    let one = gateway.get(&format!("/v2/user-tasks/{task_key}")).await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_matches("user task", &user_task(), &one.body);
    let missing = gateway.get("/v2/user-tasks/2251799813999999").await;
    assert_problem(&missing, 404, "NOT_FOUND");

    // Its form, and its variables (its own input mapping and the instance's).
    let linked = gateway
        .get(&format!("/v2/user-tasks/{task_key}/form"))
        .await;
    assert_eq!(linked.status, 200, "{:?}", linked.body);
    assert_matches("form", &form(), &linked.body);
    assert_eq!(linked.body["formId"], "approval-form");
    assert_eq!(linked.body["formKey"], form_key.as_str());
    assert_eq!(linked.body["schema"]["components"][0]["key"], "approved");
    let variables = gateway
        .post(
            &format!("/v2/user-tasks/{task_key}/variables/search"),
            json!({}),
        )
        .await;
    assert_eq!(variables.status, 200, "{:?}", variables.body);
    assert_matches(
        "user task variables",
        &search_result(variable_item(), false),
        &variables.body,
    );
    let names: std::collections::BTreeSet<&str> = variables.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["groups", "order", "orderId", "priority"]
            .into_iter()
            .collect()
    );
    let only_order = gateway
        .post(
            &format!("/v2/user-tasks/{task_key}/variables/search"),
            json!({"filter": {"name": "order"}}),
        )
        .await;
    assert_eq!(
        only_order.body["items"][0]["value"], "\"o-0\"",
        "{:?}",
        only_order.body
    );

    // Assign; a claim by another is a 409; reassigning with override is not.
    let assigned = gateway
        .post(
            &format!("/v2/user-tasks/{task_key}/assignment"),
            json!({"assignee": "ann"}),
        )
        .await;
    assert_eq!(assigned.status, 204, "{:?}", assigned.body);
    let conflict = gateway
        .post(
            &format!("/v2/user-tasks/{task_key}/assignment"),
            json!({"assignee": "bob", "allowOverride": false}),
        )
        .await;
    assert_problem(&conflict, 409, "INVALID_STATE");
    assert!(
        conflict.body["detail"]
            .as_str()
            .unwrap()
            .contains("already been assigned"),
        "{:?}",
        conflict.body
    );
    let by_ann = search(&gateway, json!({"filter": {"assignee": "ann"}})).await;
    assert_eq!(keys(&by_ann), vec![task_key.as_str()]);
    let no_assignee = gateway
        .post(&format!("/v2/user-tasks/{task_key}/assignment"), json!({}))
        .await;
    assert_problem(&no_assignee, 400, "INVALID_ARGUMENT");

    // Unassign, then update the schedule and priority.
    let unassigned = gateway
        .send_raw(
            reqwest::Method::DELETE,
            &format!("/v2/user-tasks/{task_key}/assignee"),
            "",
        )
        .await;
    assert_eq!(unassigned.status, 204, "{:?}", unassigned.body);
    let updated = gateway
        .patch(
            &format!("/v2/user-tasks/{task_key}"),
            json!({"changeset": {"priority": 99, "followUpDate": "2026-12-24T09:00:00+01:00",
                                 "candidateUsers": ["carl"]}}),
        )
        .await;
    assert_eq!(updated.status, 204, "{:?}", updated.body);
    let one = gateway.get(&format!("/v2/user-tasks/{task_key}")).await;
    assert_eq!(one.body["priority"], 99);
    assert_eq!(one.body["candidateUsers"], json!(["carl"]));
    assert_eq!(one.body["followUpDate"], "2026-12-24T08:00:00.000Z");
    assert!(one.body.get("assignee").is_none(), "{:?}", one.body);
    let out_of_range = gateway
        .patch(
            &format!("/v2/user-tasks/{task_key}"),
            json!({"changeset": {"priority": 101}}),
        )
        .await;
    assert_problem(&out_of_range, 400, "INVALID_ARGUMENT");

    // Complete with variables: the task is COMPLETED, the instance goes on and ends.
    let completed = gateway
        .post(
            &format!("/v2/user-tasks/{task_key}/completion"),
            json!({"variables": {"approved": true}, "action": "approve"}),
        )
        .await;
    assert_eq!(completed.status, 204, "{:?}", completed.body);
    let one = gateway.get(&format!("/v2/user-tasks/{task_key}")).await;
    assert_eq!(one.body["state"], "COMPLETED");
    assert_matches("completed user task", &user_task(), &one.body);
    assert!(one.body["completionDate"].is_string());
    let instance = gateway
        .get(&format!("/v2/process-instances/{}", instances[0]))
        .await;
    assert_eq!(instance.body["state"], "COMPLETED", "{:?}", instance.body);
    let again = gateway
        .post(&format!("/v2/user-tasks/{task_key}/completion"), json!({}))
        .await;
    assert_problem(&again, 404, "NOT_FOUND");
    let done = search(&gateway, json!({"filter": {"state": "COMPLETED"}})).await;
    assert_eq!(keys(&done), vec![task_key.as_str()]);

    // Cancelling an instance cancels its task.
    let canceled = gateway
        .post(
            &format!("/v2/process-instances/{}/cancellation", instances[1]),
            json!({}),
        )
        .await;
    assert_eq!(canceled.status, 204, "{:?}", canceled.body);
    let gone = search(&gateway, json!({"filter": {"state": "CANCELED"}})).await;
    assert_eq!(gone["page"]["totalItems"], 1, "{gone}");
    assert_eq!(
        gone["items"][0]["processInstanceKey"],
        instances[1].as_str()
    );
}

#[tokio::test]
async fn a_task_without_a_form_answers_204_and_a_form_alone_deploys() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let deployed = gateway.deploy(&[("approval.form", FORM.as_bytes())]).await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    assert_eq!(
        deployed.body["deployments"][0]["form"]["formId"],
        "approval-form"
    );
    let bad = gateway
        .deploy(&[("broken.form", b"{not json".as_slice())])
        .await;
    assert_problem(&bad, 400, "INVALID_ARGUMENT");
    assert!(
        bad.body["detail"].as_str().unwrap().contains("broken.form"),
        "{:?}",
        bad.body
    );

    let plain = REVIEW.replace(r#"<zeebe:formDefinition formId="approval-form" />"#, "");
    let deployed = gateway.deploy(&[("plain.bpmn", plain.as_bytes())]).await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    create(&gateway, "review", json!({"groups": [], "priority": 1})).await;
    let all = search(&gateway, json!({})).await;
    let task_key = keys(&all)[0].clone();
    assert!(all["items"][0].get("formKey").is_none());
    let form = gateway
        .get(&format!("/v2/user-tasks/{task_key}/form"))
        .await;
    assert_eq!(form.status, 204, "{:?}", form.body);
}

#[tokio::test]
async fn tasks_are_found_by_their_instances_variables_and_their_own() {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    let deployed = gateway
        .deploy(&[
            ("review.bpmn", REVIEW.as_bytes()),
            ("approval.form", FORM.as_bytes()),
        ])
        .await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let mut instances = Vec::new();
    for (i, region) in ["eu", "us", "eu"].into_iter().enumerate() {
        let variables = json!({"groups": ["sales"], "priority": 10, "orderId": format!("o-{i}"),
                               "region": region});
        instances.push(create(&gateway, "review", variables).await);
    }
    let all = search(&gateway, json!({})).await;
    assert_eq!(all["page"]["totalItems"], 3);
    let instance_of = |page: &Value| -> Vec<String> {
        let mut found: Vec<String> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["processInstanceKey"].as_str().unwrap().to_owned())
            .collect();
        found.sort();
        found
    };
    let sorted = |keys: &[&String]| -> Vec<String> {
        let mut keys: Vec<String> = keys.iter().map(|k| (*k).clone()).collect();
        keys.sort();
        keys
    };

    // Process instance variables: every condition must hold; values are JSON texts or
    // string filters.
    let eu = search(
        &gateway,
        json!({"filter": {"processInstanceVariables": [{"name": "region", "value": "\"eu\""}]}}),
    )
    .await;
    assert_eq!(instance_of(&eu), sorted(&[&instances[0], &instances[2]]));
    let eu_first = search(
        &gateway,
        json!({"filter": {"processInstanceVariables": [
            {"name": "region", "value": "\"eu\""},
            {"name": "orderId", "value": {"$like": "*o-0*"}}
        ]}}),
    )
    .await;
    assert_eq!(instance_of(&eu_first), vec![instances[0].clone()]);
    // The task's own input `order` is local to it, not a process instance variable.
    let not_global = search(
        &gateway,
        json!({"filter": {"processInstanceVariables": [{"name": "order", "value": "\"o-1\""}]}}),
    )
    .await;
    assert_eq!(not_global["page"]["totalItems"], 0);
    let local = search(
        &gateway,
        json!({"filter": {"localVariables": [{"name": "order", "value": "\"o-1\""}],
                          "processInstanceKey": instances[1]}}),
    )
    .await;
    assert_eq!(instance_of(&local), vec![instances[1].clone()]);
    let none = search(
        &gateway,
        json!({"filter": {"localVariables": [{"name": "order", "value": "\"o-1\""}],
                          "processInstanceKey": instances[0]}}),
    )
    .await;
    assert_eq!(none["page"]["totalItems"], 0);

    for (filter, expected) in [
        (
            json!({"localVariables": {"name": "order"}}),
            "it is not a list",
        ),
        (
            json!({"localVariables": [{"value": "1"}]}),
            "item 0 has no name",
        ),
        (
            json!({"processInstanceVariables": [{"name": "region"}]}),
            "item 0 has no value",
        ),
        (json!({"tags": ["a b"]}), "'a b'"),
    ] {
        let reply = gateway
            .post("/v2/user-tasks/search", json!({"filter": filter}))
            .await;
        assert_problem(&reply, 400, "INVALID_ARGUMENT");
        assert!(
            reply.body["detail"].as_str().unwrap().contains(expected),
            "{expected}: {:?}",
            reply.body
        );
    }
}

const GUARDED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="guarded" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="approve" name="Approve">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:taskListeners><zeebe:taskListener eventType="canceling" type="on-cancel" /></zeebe:taskListeners>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#;

#[tokio::test]
async fn a_task_reads_canceling_while_its_canceling_listener_runs() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let deployed = gateway
        .deploy(&[("guarded.bpmn", GUARDED.as_bytes())])
        .await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let instance = create(&gateway, "guarded", json!({})).await;
    let all = search(&gateway, json!({})).await;
    let task_key = keys(&all)[0].clone();
    let path = format!("/v2/user-tasks/{task_key}");

    let canceled = gateway
        .post(
            &format!("/v2/process-instances/{instance}/cancellation"),
            json!({}),
        )
        .await;
    assert_eq!(canceled.status, 204, "{:?}", canceled.body);
    let got = gateway.get(&path).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_matches("user task", &user_task(), &got.body);
    assert_eq!(got.body["state"], "CANCELING", "{:?}", got.body);
    let instance_view = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(
        instance_view.body["state"], "ACTIVE",
        "{:?}",
        instance_view.body
    );
    // Work on a canceling task is refused.
    let completion = gateway.post(&format!("{path}/completion"), json!({})).await;
    assert_problem(&completion, 409, "INVALID_STATE");

    let jobs = gateway
        .post(
            "/v2/jobs/activation",
            json!({"type": "on-cancel", "timeout": 30000, "maxJobsToActivate": 1,
                   "worker": "test", "requestTimeout": -1}),
        )
        .await;
    assert_eq!(jobs.status, 200, "{:?}", jobs.body);
    let job = &jobs.body["jobs"][0];
    assert_eq!(job["kind"], "TASK_LISTENER", "{job:?}");
    assert_eq!(job["listenerEventType"], "CANCELING", "{job:?}");
    let job_key = job["jobKey"].as_str().expect("job key");
    let completed = gateway
        .post(&format!("/v2/jobs/{job_key}/completion"), json!({}))
        .await;
    assert_eq!(completed.status, 204, "{:?}", completed.body);
    let got = gateway.get(&path).await;
    assert_eq!(got.body["state"], "CANCELED", "{:?}", got.body);
    let instance_view = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(
        instance_view.body["state"], "TERMINATED",
        "{:?}",
        instance_view.body
    );
}

/// A Modeler-shaped fixture of the engine's tests.
fn engine_fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/tests/fixtures/elements")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The key of the one process definition a deployment reply lists.
fn definition_key(reply: &crate::support::Reply) -> String {
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body["deployments"][0]["processDefinition"]["processDefinitionKey"]
        .as_str()
        .expect("a process definition key")
        .to_owned()
}

/// A process's start form (`zeebe:formDefinition` on its none start event) is served by
/// `GET /v2/process-definitions/{key}/form` in the form's latest version; 204 while the
/// form is not deployed or when the start form is embedded; 404 for an unknown key.
#[tokio::test]
async fn a_start_form_is_served_by_its_process_definition() {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    let process = engine_fixture("start-form.bpmn");
    let sign_up = engine_fixture("sign-up.form");
    let key = definition_key(&gateway.deploy(&[("start-form.bpmn", &process)]).await);
    let path = format!("/v2/process-definitions/{key}/form");
    let none_yet = gateway.get(&path).await;
    assert_eq!(none_yet.status, 204, "the form is not deployed yet");
    let definition = gateway.get(&format!("/v2/process-definitions/{key}")).await;
    assert_eq!(
        definition.body["hasStartForm"], true,
        "{:?}",
        definition.body
    );

    let deployed = gateway.deploy(&[("sign-up.form", &sign_up)]).await;
    assert_eq!(deployed.status, 200, "{:?}", deployed.body);
    let form = gateway.get(&path).await;
    assert_eq!(form.status, 200, "{:?}", form.body);
    assert_matches("start form", &self::form(), &form.body);
    assert_eq!(form.body["formId"], "sign-up-form");
    assert_eq!(form.body["version"], 1);
    assert_eq!(form.body["schema"]["components"][0]["key"], "email");
    // A new version of the form is the one served.
    let changed = String::from_utf8(sign_up.clone())
        .expect("UTF-8")
        .replace("Accept the terms", "I accept the terms");
    let again = gateway
        .deploy(&[("sign-up.form", changed.as_bytes())])
        .await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    let form = gateway.get(&path).await;
    assert_eq!(form.body["version"], 2, "{:?}", form.body);
    assert_eq!(
        form.body["schema"]["components"][1]["label"],
        "I accept the terms"
    );
    let found = gateway
        .post(
            "/v2/process-definitions/search",
            json!({"filter": {"hasStartForm": true}}),
        )
        .await;
    assert_eq!(found.status, 200, "{:?}", found.body);
    assert_eq!(found.body["items"][0]["processDefinitionKey"], key.as_str());

    // An embedded start form is not served, as in Camunda; nor is a process without one.
    let embedded = String::from_utf8(process).expect("UTF-8").replace(
        r#"<zeebe:formDefinition formId="sign-up-form" />"#,
        r#"<zeebe:formDefinition formKey="camunda-forms:bpmn:UserTaskForm_1" />"#,
    );
    let embedded_key = definition_key(
        &gateway
            .deploy(&[("start-form.bpmn", embedded.as_bytes())])
            .await,
    );
    let reply = gateway
        .get(&format!("/v2/process-definitions/{embedded_key}/form"))
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);
    let plain_key = definition_key(&gateway.deploy(&[("review.bpmn", REVIEW.as_bytes())]).await);
    let reply = gateway
        .get(&format!("/v2/process-definitions/{plain_key}/form"))
        .await;
    assert_eq!(reply.status, 204, "{:?}", reply.body);

    let unknown = gateway
        .get("/v2/process-definitions/2251799813685999/form")
        .await;
    assert_problem(&unknown, 404, "NOT_FOUND");
    gateway.stop().await;
}
