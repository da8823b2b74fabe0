//! The test server over HTTP: the API subset and the fault switches.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rill_es_test_server::{ItemError, ItemRequest, TestServer};
use serde_json::{Value, json};

async fn call(method: reqwest::Method, url: String, body: Option<String>) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut request = client.request(method, url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = request.send().await.expect("server answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn setup(server: &TestServer) {
    let url = server.url();
    let component = json!({"template": {"mappings": {"dynamic": "strict", "properties": {
        "position": {"type": "long"}, "intent": {"type": "keyword"},
        "value": {"dynamic": "strict", "properties": {"processInstanceKey": {"type": "long"}}}}}}});
    let (status, _) = call(
        reqwest::Method::PUT,
        format!("{url}/_component_template/rec"),
        Some(component.to_string()),
    )
    .await;
    assert_eq!(status, 200);
    let template = json!({"index_patterns": ["rec_pi_*"], "composed_of": ["rec"], "priority": 20,
        "template": {"aliases": {"rec-pi": {}}}});
    let (status, _) = call(
        reqwest::Method::PUT,
        format!("{url}/_index_template/rec_pi"),
        Some(template.to_string()),
    )
    .await;
    assert_eq!(status, 200);
}

fn bulk_body(docs: &[(u64, &str, i64)]) -> String {
    let mut body = String::new();
    for (position, intent, instance) in docs {
        body.push_str(
            &json!({"index": {"_index": "rec_pi_2026-11-30", "_id": format!("1-{position}")}})
                .to_string(),
        );
        body.push('\n');
        body.push_str(&json!({"position": position, "intent": intent, "value": {"processInstanceKey": instance}}).to_string());
        body.push('\n');
    }
    body
}

#[tokio::test]
async fn bulk_search_and_count_through_aliases() {
    let server = TestServer::start().await.unwrap();
    setup(&server).await;
    let url = server.url();
    let body = bulk_body(&[
        (1, "ELEMENT_ACTIVATED", 10),
        (2, "ELEMENT_ACTIVATED", 11),
        (3, "ELEMENT_COMPLETED", 10),
    ]);
    let (status, answer) = call(reqwest::Method::POST, format!("{url}/_bulk"), Some(body)).await;
    assert_eq!(status, 200);
    assert_eq!(answer["errors"], false);
    assert_eq!(answer["items"][0]["index"]["status"], 201);

    // Strict mapping from the templates: an unknown field fails that item only.
    let bad = format!(
        "{}\n{}\n",
        json!({"index": {"_index": "rec_pi_2026-11-30", "_id": "1-4"}}),
        json!({"position": 4, "unknown": true})
    );
    let (_, answer) = call(reqwest::Method::POST, format!("{url}/_bulk"), Some(bad)).await;
    assert_eq!(answer["errors"], true);
    assert_eq!(answer["items"][0]["index"]["status"], 400);
    assert_eq!(
        answer["items"][0]["index"]["error"]["type"],
        "strict_dynamic_mapping_exception"
    );

    let query = json!({"query": {"bool": {"filter": [
        {"term": {"value.processInstanceKey": 10}}, {"range": {"position": {"gte": 1}}}]}},
        "sort": [{"position": {"order": "desc"}}]});
    let (status, answer) = call(
        reqwest::Method::POST,
        format!("{url}/rec-pi/_search"),
        Some(query.to_string()),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(answer["hits"]["total"]["value"], 2);
    assert_eq!(answer["hits"]["hits"][0]["_id"], "1-3");
    assert_eq!(answer["hits"]["hits"][1]["_id"], "1-1");

    let count = json!({"query": {"term": {"intent": "ELEMENT_ACTIVATED"}}});
    let (_, answer) = call(
        reqwest::Method::POST,
        format!("{url}/rec*/_count"),
        Some(count.to_string()),
    )
    .await;
    assert_eq!(answer["count"], 2);

    let (_, aliases) = call(reqwest::Method::GET, format!("{url}/_alias"), None).await;
    assert!(aliases["rec_pi_2026-11-30"]["aliases"]["rec-pi"].is_object());
    let (_, indices) = call(
        reqwest::Method::GET,
        format!("{url}/_cat/indices?format=json"),
        None,
    )
    .await;
    assert_eq!(indices[0]["docs.count"], "3");

    let (status, answer) = call(
        reqwest::Method::POST,
        format!("{url}/missing/_search"),
        Some("{}".into()),
    )
    .await;
    assert_eq!(
        (status, answer["error"]["type"].as_str()),
        (404, Some("index_not_found_exception"))
    );
    let fuzzy = json!({"query": {"fuzzy": {"intent": "x"}}});
    let (status, _) = call(
        reqwest::Method::POST,
        format!("{url}/rec-pi/_search"),
        Some(fuzzy.to_string()),
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn switches_fail_slow_down_and_stop() {
    let server = TestServer::start().await.unwrap();
    let url = server.url();
    server.fail_next_requests(2, 429);
    for _ in 0..2 {
        let (status, answer) = call(reqwest::Method::GET, format!("{url}/"), None).await;
        assert_eq!(status, 429);
        assert_eq!(answer["error"]["type"], "es_rejected_execution_exception");
    }
    assert_eq!(
        call(reqwest::Method::GET, format!("{url}/"), None).await.0,
        200
    );

    server.fail_requests(Some(503));
    assert_eq!(
        call(reqwest::Method::GET, format!("{url}/"), None).await.0,
        503
    );
    server.fail_requests(None);

    server.set_delay(Duration::from_millis(200));
    let started = Instant::now();
    assert_eq!(
        call(reqwest::Method::GET, format!("{url}/"), None).await.0,
        200
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    server.set_delay(Duration::ZERO);

    server.set_item_fault(Some(Arc::new(|item: &ItemRequest<'_>| {
        (item.id == "x-2").then(ItemError::too_many_requests)
    })));
    let body = format!(
        "{}\n{{}}\n{}\n{{}}\n",
        json!({"index": {"_index": "free", "_id": "x-1"}}),
        json!({"index": {"_index": "free", "_id": "x-2"}})
    );
    let (_, answer) = call(reqwest::Method::POST, format!("{url}/_bulk"), Some(body)).await;
    assert_eq!(answer["items"][0]["index"]["status"], 201);
    assert_eq!(answer["items"][1]["index"]["status"], 429);
    assert_eq!(server.stats().failed_items, 1);

    server.require_authorization(Some("Bearer t".into()));
    assert_eq!(
        call(reqwest::Method::GET, format!("{url}/"), None).await.0,
        401
    );
    server.require_authorization(None);

    server.stop().await;
    assert!(
        reqwest::get(format!("{url}/")).await.is_err(),
        "connection refused while stopped"
    );
    server.restart().await.unwrap();
    assert_eq!(
        call(reqwest::Method::GET, format!("{url}/"), None).await.0,
        200
    );
    assert_eq!(
        server.document_versions("free").len(),
        1,
        "data survives a restart"
    );
}

#[tokio::test]
async fn bulk_answers_only_what_filter_path_asks_for() {
    let server = TestServer::start().await.unwrap();
    setup(&server).await;
    let url = server.url();
    let body = format!(
        "{}{}\n{}\n",
        bulk_body(&[(1, "ELEMENT_ACTIVATED", 10)]),
        json!({"index": {"_index": "rec_pi_2026-11-30", "_id": "1-2"}}),
        json!({"position": 2, "unknown": true})
    );
    let (status, answer) = call(
        reqwest::Method::POST,
        format!("{url}/_bulk?filter_path=items.*._id,items.*.status,items.*.error"),
        Some(body),
    )
    .await;
    assert_eq!(status, 200);
    // As Elasticsearch does: no `took` or `errors`, and items with only those fields.
    assert_eq!(
        answer,
        json!({"items": [
            {"index": {"_id": "1-1", "status": 201}},
            {"index": {"_id": "1-2", "status": 400, "error": answer["items"][1]["index"]["error"]}},
        ]})
    );
    assert_eq!(
        answer["items"][1]["index"]["error"]["type"],
        "strict_dynamic_mapping_exception"
    );

    let (_, answer) = call(
        reqwest::Method::POST,
        format!("{url}/_bulk?filter_path=errors"),
        Some(bulk_body(&[(3, "ELEMENT_ACTIVATED", 10)])),
    )
    .await;
    assert_eq!(answer, json!({"errors": false}));
}

#[tokio::test]
async fn malformed_action_lines_fail_the_bulk_and_escaped_names_are_read() {
    let server = TestServer::start().await.unwrap();
    setup(&server).await;
    let url = server.url();
    let doc = json!({"position": 1, "intent": "X"}).to_string();
    for (line, error_type) in [
        (
            r#"{"index": {"_index": "rec_pi_x", "_id": "1"}, "create": {}}"#,
            "illegal_argument_exception",
        ),
        (r#"{}"#, "illegal_argument_exception"),
        (
            r#"{"index": {"_index": "rec_pi_x"}}"#,
            "action_request_validation_exception",
        ),
        (r#"{"index": ["#, "x_content_parse_exception"),
    ] {
        let (status, answer) = call(
            reqwest::Method::POST,
            format!("{url}/_bulk"),
            Some(format!("{line}\n{doc}\n")),
        )
        .await;
        assert_eq!(status, 400, "{line}: {answer}");
        assert_eq!(answer["error"]["type"], error_type, "{line}: {answer}");
    }
    // Names with escapes are compared unescaped, in action lines and documents alike.
    let body = format!(
        "{}\n{}\n",
        r#"{"ind\u0065x": {"_index": "rec_pi_x", "_id": "1\u002d1"}}"#,
        r#"{"posit\u0069on": 1, "value": {"processInstance\u004bey": 7}}"#
    );
    let (status, answer) = call(reqwest::Method::POST, format!("{url}/_bulk"), Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["errors"], false, "{answer}");
    assert_eq!(answer["items"][0]["index"]["_id"], "1-1");
    let escaped_unknown = format!(
        "{}\n{}\n",
        json!({"index": {"_index": "rec_pi_x", "_id": "1-2"}}),
        r#"{"unkn\u006fwn": 1}"#
    );
    let (_, answer) = call(
        reqwest::Method::POST,
        format!("{url}/_bulk"),
        Some(escaped_unknown),
    )
    .await;
    assert_eq!(answer["errors"], true, "{answer}");
    let reason = answer["items"][0]["index"]["error"]["reason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("[unknown]"), "{reason}");
}
