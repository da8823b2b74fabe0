//! Models that Zeebe 8.8 deploys and Rill used to refuse (issue 40), written as Camunda
//! Modeler writes them (`tests/fixtures/elements/`), deployed and run.

use rill_engine::ProcessInstanceState;
use serde_json::json;

use super::*;

fn state(rule: &mut EngineRule, instance: rill_protocol::Key) -> ProcessInstanceState {
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
    assert_eq!(variables["url"], json!("https://shop.example.com/api/orders"));
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
