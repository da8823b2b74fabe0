//! Bad input through the API: each gets a clear 4xx problem naming what is wrong, and
//! the server keeps serving.

use reqwest::Method;
use rill_config::{ByteSize, GatewayConfig};
use serde_json::json;

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, deploy_one_task, one_task_process, test_config};

#[tokio::test]
async fn malformed_and_mistyped_json_is_a_400_naming_the_field() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let path = "/v2/jobs/activation";

    let reply = gateway.send_raw(Method::POST, path, "{\"type\": ").await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["not valid JSON"]);

    let reply = gateway.send_raw(Method::POST, path, "").await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["empty"]);

    let reply = gateway
        .post(
            path,
            json!({"type": "t", "timeout": "soon", "maxJobsToActivate": 1}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        path,
        &["'timeout'", "64-bit integer", "soon"],
    );

    let reply = gateway
        .post(
            path,
            json!({"type": "t", "timeout": 1000, "maxJobsToActivate": 1, "colour": "red"}),
        )
        .await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["unknown field `colour`"]);

    let reply = gateway
        .post(path, json!({"timeout": 1000, "maxJobsToActivate": 1}))
        .await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["missing field `type`"]);

    let reply = gateway
        .post(
            path,
            json!({"type": "t", "timeout": 0, "maxJobsToActivate": 1}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        path,
        &["timeout", "'0'", "greater than 0"],
    );

    let reply = gateway
        .post(
            path,
            json!({"type": "t", "timeout": 10, "maxJobsToActivate": -2}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        path,
        &["maxJobsToActivate", "'-2'"],
    );

    let reply = gateway.post(path, json!(["not", "an", "object"])).await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        path,
        &["expected a JSON object", "an array"],
    );
    let reply = gateway.send_raw(Method::POST, path, "null").await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        path,
        &["expected a JSON object", "null"],
    );

    let reply = gateway
        .patch(
            "/v2/jobs/2251799813685249",
            json!({"changeset": {"retries": "many"}}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/jobs/2251799813685249",
        &["'changeset.retries'"],
    );

    assert_eq!(
        gateway.get("/v2/topology").await.status,
        200,
        "still serving"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn variables_must_be_a_json_object() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let xml = one_task_process("p", "t");
    assert_eq!(
        gateway.deploy(&[("p.bpmn", xml.as_bytes())]).await.status,
        200
    );

    for (path, body) in [
        (
            "/v2/process-instances",
            json!({"processDefinitionId": "p", "variables": [1, 2]}),
        ),
        (
            "/v2/process-instances",
            json!({"processDefinitionId": "p", "variables": "a=1"}),
        ),
        (
            "/v2/jobs/2251799813685249/completion",
            json!({"variables": 5}),
        ),
        (
            "/v2/messages/publication",
            json!({"name": "m", "variables": true}),
        ),
    ] {
        let reply = gateway.post(path, body).await;
        reply.assert_problem(
            400,
            "INVALID_ARGUMENT",
            path,
            &["'variables'", "JSON object"],
        );
    }
    let path = "/v2/element-instances/2251799813685249/variables";
    let reply = gateway.put(path, json!({"variables": [1]})).await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["'variables'", "an array"]);
    let reply = gateway.put(path, json!({"local": true})).await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["No variables provided"]);
    gateway.stop().await;
}

#[tokio::test]
async fn unknown_processes_keys_and_key_formats() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;

    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "no-such-process"}),
        )
        .await;
    reply.assert_problem(
        404,
        "NOT_FOUND",
        "/v2/process-instances",
        &["no-such-process"],
    );

    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionKey": 2251799813685249_i64}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/process-instances",
        &["'processDefinitionKey'", "string of digits"],
    );

    let reply = gateway.post("/v2/process-instances", json!({})).await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/process-instances",
        &["At least one of"],
    );

    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "p", "processDefinitionKey": "2251799813685249"}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/process-instances",
        &["Only one of"],
    );

    // Path keys that are not keys.
    for (path, name) in [
        ("/v2/jobs/abc/completion", "jobKey 'abc'"),
        ("/v2/jobs/-5/failure", "jobKey '-5'"),
        ("/v2/process-instances/12x", "processInstanceKey '12x'"),
        ("/v2/incidents/0/resolution", "incidentKey '0'"),
    ] {
        let reply = if path.starts_with("/v2/process-instances") {
            gateway.get(path).await
        } else {
            gateway.post(path, json!({})).await
        };
        reply.assert_problem(400, "INVALID_ARGUMENT", path, &[name, "not a valid key"]);
    }

    // Well-formed keys that name nothing.
    let path = "/v2/process-instances/2251799813685999";
    gateway
        .get(path)
        .await
        .assert_problem(404, "NOT_FOUND", path, &["2251799813685999"]);
    // A key from partition 7 in a one-partition cluster.
    let key = (7_i64 << 51) | 5;
    let path = format!("/v2/jobs/{key}/completion");
    gateway.post(&path, json!({})).await.assert_problem(
        404,
        "NOT_FOUND",
        &path,
        &["job", "partition 7"],
    );
    let path = "/v2/jobs/2251799813685999/completion";
    gateway.post(path, json!({})).await.assert_problem(
        404,
        "NOT_FOUND",
        path,
        &["2251799813685999"],
    );

    // Incident searches need no filter (the history store answers them), but an unknown
    // filter field is refused, named.
    let reply = gateway.post("/v2/incidents/search", json!({})).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["page"]["totalItems"], 0);
    let reply = gateway
        .post("/v2/incidents/search", json!({"filter": {"colour": "red"}}))
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/incidents/search",
        &["'filter.colour'"],
    );
    let reply = gateway
        .post("/v2/jobs/search", json!({"filter": {"state": "ACTIVATED"}}))
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/jobs/search",
        &["'filter.state'", "RETRIES_UPDATED"],
    );
    gateway.stop().await;
}

#[tokio::test]
async fn invalid_bpmn_lists_the_validator_findings() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    // A service task without a job type, and a flow to an element that does not exist.
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
  <bpmn:process id="broken" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="task_without_type"><bpmn:incoming>f1</bpmn:incoming></bpmn:serviceTask>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="task_without_type" />
    <bpmn:sequenceFlow id="f2" sourceRef="task_without_type" targetRef="nowhere" />
  </bpmn:process>
</bpmn:definitions>"#;
    let reply = gateway.deploy(&[("broken.bpmn", xml.as_bytes())]).await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/deployments",
        &["broken.bpmn", "task_without_type", "nowhere"],
    );

    let reply = gateway.deploy(&[("junk.bpmn", b"this is not xml")]).await;
    reply.assert_problem(400, "INVALID_ARGUMENT", "/v2/deployments", &["junk.bpmn"]);

    // The process was not deployed.
    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "broken"}),
        )
        .await;
    assert_eq!(reply.status, 404);
    gateway.stop().await;
}

#[tokio::test]
async fn deployments_need_multipart_resources() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let path = "/v2/deployments";

    let reply = gateway.post(path, json!({"resources": "p.bpmn"})).await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["multipart/form-data"]);

    let form = reqwest::multipart::Form::new().text("tenantId", "<default>");
    let response = gateway
        .client
        .post(gateway.url(path))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("No resources provided")
    );

    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(b"<x/>".to_vec()).file_name("p.bpmn"),
    );
    let response = gateway
        .client
        .post(gateway.url(path))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["detail"].as_str().unwrap().contains("'file'"),
        "{body}"
    );

    let form = reqwest::multipart::Form::new()
        .text("tenantId", "acme")
        .part(
            "resources",
            reqwest::multipart::Part::bytes(b"<x/>".to_vec()).file_name("p.bpmn"),
        );
    let response = gateway
        .client
        .post(gateway.url(path))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["detail"].as_str().unwrap().contains("multi-tenancy"),
        "{body}"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn payloads_over_the_limit_are_413() {
    // The test gateway's limit is 64 KiB.
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let big = "x".repeat(100 * 1024);

    let path = "/v2/process-instances";
    let reply = gateway
        .post(
            path,
            json!({"processDefinitionId": "p", "variables": {"blob": big}}),
        )
        .await;
    reply.assert_problem(
        413,
        "PAYLOAD_TOO_LARGE",
        path,
        &["65536 bytes", "gateway.max-message-size"],
    );

    let reply = gateway.deploy(&[("big.bpmn", big.as_bytes())]).await;
    reply.assert_problem(413, "PAYLOAD_TOO_LARGE", "/v2/deployments", &["65536"]);

    // Just under the limit is fine (and then the process is unknown).
    let small = "x".repeat(60 * 1024);
    let reply = gateway
        .post(
            path,
            json!({"processDefinitionId": "p", "variables": {"blob": small}}),
        )
        .await;
    assert_eq!(reply.status, 404, "{:?}", reply.body);
    gateway.stop().await;
}

/// Every endpoint that takes a variable document refuses one over
/// `gateway.max-variable-document-size` with 413 naming the field, the limit and the
/// setting, before anything is submitted.
#[tokio::test]
async fn variable_documents_over_their_limit_are_413_and_change_nothing() {
    let config = GatewayConfig {
        max_variable_document_size: ByteSize(1024),
        ..test_config()
    };
    let gateway = TestGateway::start_with(EngineBackend::new(1), config).await;
    deploy_one_task(&gateway, "p", "t").await;
    let big = json!({"blob": "x".repeat(1024)});
    let size = big.to_string().len().to_string();
    let key = "2251799813685249";

    let posts = [
        (
            "/v2/process-instances".to_owned(),
            json!({"processDefinitionId": "p", "variables": big}),
            "variables",
        ),
        (
            format!("/v2/jobs/{key}/completion"),
            json!({"variables": big}),
            "variables",
        ),
        (
            format!("/v2/jobs/{key}/failure"),
            json!({"retries": 1, "variables": big}),
            "variables",
        ),
        (
            format!("/v2/jobs/{key}/error"),
            json!({"errorCode": "e", "variables": big}),
            "variables",
        ),
        (
            "/v2/messages/publication".to_owned(),
            json!({"name": "m", "correlationKey": "k", "variables": big}),
            "variables",
        ),
        (
            "/v2/signals/broadcast".to_owned(),
            json!({"signalName": "s", "variables": big}),
            "variables",
        ),
        (
            format!("/v2/user-tasks/{key}/completion"),
            json!({"variables": big}),
            "variables",
        ),
        (
            "/v2/decision-definitions/evaluation".to_owned(),
            json!({"decisionDefinitionId": "d", "variables": big}),
            "variables",
        ),
        (
            format!("/v2/process-instances/{key}/modification"),
            json!({"activateInstructions": [{"elementId": "task",
                "variableInstructions": [{"variables": {"a": 1}}, {"variables": big}]}]}),
            "activateInstructions[0].variableInstructions[1].variables",
        ),
        (
            format!("/v2/element-instances/ad-hoc-activities/{key}/activation"),
            json!({"elements": [{"elementId": "a", "variables": big}]}),
            "elements[0].variables",
        ),
    ];
    let named = |field: &str| format!("'{field}' is {size} bytes");
    for (path, body, field) in &posts {
        let reply = gateway.post(path, body.clone()).await;
        reply.assert_problem(
            413,
            "PAYLOAD_TOO_LARGE",
            path,
            &[
                &named(field),
                "1024 bytes",
                "gateway.max-variable-document-size",
            ],
        );
    }
    let path = format!("/v2/element-instances/{key}/variables");
    let reply = gateway.put(&path, json!({"variables": big})).await;
    reply.assert_problem(
        413,
        "PAYLOAD_TOO_LARGE",
        &path,
        &[&named("variables"), "gateway.max-variable-document-size"],
    );

    // Nothing was created: no job waits. A document at the limit goes through.
    let activation = json!({"type": "t", "timeout": 1000, "maxJobsToActivate": 5,
        "requestTimeout": 100});
    let reply = gateway
        .post("/v2/jobs/activation", activation.clone())
        .await;
    assert_eq!(reply.body["jobs"], json!([]), "{:?}", reply.body);
    let fits = json!({"blob": "x".repeat(1024 - 11)});
    assert_eq!(fits.to_string().len(), 1024);
    let reply = gateway
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "p", "variables": fits}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let reply = gateway.post("/v2/jobs/activation", activation).await;
    assert_eq!(reply.body["jobs"][0]["variables"], fits, "{:?}", reply.body);
    gateway.stop().await;
}

#[tokio::test]
async fn variable_documents_nested_too_deeply_are_400_naming_the_field() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    deploy_one_task(&gateway, "p", "t").await;
    let path = "/v2/process-instances";
    let nested = |levels: usize| {
        format!(
            r#"{{"processDefinitionId": "p", "variables": {}1{}}}"#,
            r#"{"a":"#.repeat(levels),
            "}".repeat(levels)
        )
    };
    for levels in [101, 5000] {
        let reply = gateway.send_raw(Method::POST, path, nested(levels)).await;
        reply.assert_problem(
            400,
            "INVALID_ARGUMENT",
            path,
            &["'variables'", "more than 100 levels deep"],
        );
    }
    let reply = gateway.send_raw(Method::POST, path, nested(100)).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    gateway.stop().await;
}

#[tokio::test]
async fn unknown_endpoints_methods_and_unsupported_features() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;

    let reply = gateway.get("/v2/nothing-here").await;
    reply.assert_problem(
        404,
        "NOT_FOUND",
        "/v2/nothing-here",
        &["GET /v2/nothing-here"],
    );

    let reply = gateway.get("/v2/jobs/activation").await;
    reply.assert_problem(405, "METHOD_NOT_ALLOWED", "/v2/jobs/activation", &["GET"]);

    let path = "/v2/process-instances";
    let reply = gateway
        .post(
            path,
            json!({"processDefinitionId": "p", "tenantId": "acme"}),
        )
        .await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["'acme'", "multi-tenancy"]);
    let reply = gateway
        .post(
            path,
            json!({"processDefinitionId": "p", "startInstructions": [{"elementId": "x"}]}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        path,
        &["startInstructions", "not supported"],
    );

    let reply = gateway
        .post(
            path,
            json!({"processDefinitionId": "p", "processDefinitionVersionTag": "v1"}),
        )
        .await;
    reply.assert_problem(
        400,
        "INVALID_ARGUMENT",
        path,
        &["processDefinitionVersionTag"],
    );

    let path = "/v2/jobs/activation";
    let reply = gateway
        .post(
            path,
            json!({"type": "t", "timeout": 5, "maxJobsToActivate": 1, "withLease": true}),
        )
        .await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["withLease"]);

    let path = "/v2/jobs/2251799813685249";
    let reply = gateway.patch(path, json!({"changeset": {}})).await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["No update data provided"]);

    let path = "/v2/messages/publication";
    let reply = gateway
        .post(path, json!({"name": "", "correlationKey": "k"}))
        .await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["No name provided"]);
    let reply = gateway
        .post(path, json!({"name": "m", "timeToLive": -1}))
        .await;
    reply.assert_problem(400, "INVALID_ARGUMENT", path, &["timeToLive", "'-1'"]);

    assert_eq!(gateway.get("/v2/status").await.status, 204, "still serving");
    gateway.stop().await;
}

/// The definition and subscription endpoints: unknown keys are 404s, bad filters are
/// 400s naming the field, and an incident search of an unknown instance is a 404.
#[tokio::test]
async fn definitions_and_subscriptions_refuse_bad_input() {
    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    let unknown = "2251799813685999";
    for path in [
        format!("/v2/process-definitions/{unknown}"),
        format!("/v2/process-definitions/{unknown}/xml"),
    ] {
        gateway
            .get(&path)
            .await
            .assert_problem(404, "NOT_FOUND", &path, &[unknown]);
    }
    let path = format!("/v2/process-instances/{unknown}/incidents/search");
    gateway
        .post(&path, json!({}))
        .await
        .assert_problem(404, "NOT_FOUND", &path, &[unknown]);

    let path = "/v2/process-definitions/search";
    gateway
        .post(path, json!({"filter": {"isLatestVersion": "yes"}}))
        .await
        .assert_problem(400, "INVALID_ARGUMENT", path, &["'filter.isLatestVersion'"]);
    gateway
        .post(path, json!({"filter": {"version": "one"}}))
        .await
        .assert_problem(400, "INVALID_ARGUMENT", path, &["'filter.version'"]);

    let path = format!("/v2/process-definitions/{unknown}/statistics/element-instances");
    gateway
        .post(&path, json!({"filter": {"processDefinitionId": "x"}}))
        .await
        .assert_problem(
            400,
            "INVALID_ARGUMENT",
            &path,
            &["'filter.processDefinitionId'"],
        );
    gateway
        .post(&path, json!({"sort": []}))
        .await
        .assert_problem(400, "INVALID_ARGUMENT", &path, &["sort"]);
    let empty = gateway.post(&path, json!({})).await;
    assert_eq!(empty.status, 200, "{:?}", empty.body);
    assert_eq!(empty.body, json!({"items": []}));

    let path = "/v2/message-subscriptions/search";
    gateway
        .post(
            path,
            json!({"filter": {"messageSubscriptionState": "OPEN"}}),
        )
        .await
        .assert_problem(
            400,
            "INVALID_ARGUMENT",
            path,
            &["'filter.messageSubscriptionState'", "CORRELATED"],
        );
    gateway
        .post(path, json!({"sort": [{"field": "processDefinitionKey"}]}))
        .await
        .assert_problem(400, "INVALID_ARGUMENT", path, &["'sort[0].field'"]);
    gateway.stop().await;
}
