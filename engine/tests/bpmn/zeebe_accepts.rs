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
            ("url".to_owned(), json!("https://shop.example.com/api/orders")),
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
            let numbers = serde_json::from_value(json!({"toolCall": {"a": 2, "b": 40}}))
                .expect("an object");
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
