//! The Kibana saved objects are well-formed, their references resolve, and every field
//! they aggregate on is mapped as keyword or date by the exporter's templates.

use std::collections::BTreeMap;

use rill_config::ElasticsearchExporterConfig;
use rill_exporter::{IndexRouter, component_template, index_template};
use rill_protocol::{BROKER_VERSION, ValueType};
use serde_json::Value;

const NDJSON: &str = include_str!("../kibana/rill-history.ndjson");

fn objects() -> Vec<Value> {
    NDJSON
        .lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1))
        })
        .collect()
}

/// The mapping type of a dotted field for a value type's index.
fn field_type(value_type: ValueType, field: &str) -> Option<String> {
    let router = IndexRouter::new("zeebe-record");
    let component = component_template(&ElasticsearchExporterConfig::default());
    let template = index_template(&router, value_type, BROKER_VERSION);
    let (root, rest) = match field.split_once('.') {
        Some(("value", rest)) => (
            &template["template"]["mappings"]["properties"]["value"],
            rest,
        ),
        _ => (&component["template"]["mappings"], field),
    };
    let mut mapping = root;
    for segment in rest.split('.') {
        mapping = &mapping["properties"][segment];
    }
    mapping["type"].as_str().map(str::to_owned)
}

#[test]
fn saved_objects_are_consistent() {
    let objects = objects();
    let by_id: BTreeMap<&str, &str> = objects
        .iter()
        .map(|o| (o["id"].as_str().unwrap(), o["type"].as_str().unwrap()))
        .collect();
    assert_eq!(by_id.len(), objects.len(), "ids are unique");
    let count = |kind: &str| by_id.values().filter(|t| **t == kind).count();
    assert_eq!(count("index-pattern"), 6);
    assert_eq!(count("search"), 1);
    assert_eq!(count("dashboard"), 1);
    assert_eq!(count("visualization"), 5);

    for object in &objects {
        for reference in object["references"].as_array().unwrap() {
            let id = reference["id"].as_str().unwrap();
            assert_eq!(
                by_id.get(id).copied(),
                reference["type"].as_str(),
                "reference {reference} of {}",
                object["id"]
            );
        }
        // Nested JSON is stored as strings and must parse.
        let attributes = &object["attributes"];
        for field in ["visState", "panelsJSON", "optionsJSON"] {
            if let Some(text) = attributes[field].as_str() {
                serde_json::from_str::<Value>(text).unwrap_or_else(|e| panic!("{field}: {e}"));
            }
        }
        if let Some(text) = attributes["kibanaSavedObjectMeta"]["searchSourceJSON"].as_str() {
            serde_json::from_str::<Value>(text).unwrap();
        }
    }
}

#[test]
fn data_views_use_the_exporters_aliases_and_time_field() {
    let router = IndexRouter::new("zeebe-record");
    for object in objects().iter().filter(|o| o["type"] == "index-pattern") {
        let title = object["attributes"]["title"].as_str().unwrap();
        assert_eq!(object["attributes"]["timeFieldName"], "timestamp");
        let known = title == "zeebe-record*"
            || ValueType::ALL
                .iter()
                .any(|vt| router.alias_for(*vt) == title);
        assert!(known, "data view {title} matches no alias");
    }
}

#[test]
fn aggregated_fields_are_keywords_or_dates() {
    let views: BTreeMap<&str, ValueType> = BTreeMap::from([
        ("rill-process-instance", ValueType::ProcessInstance),
        ("rill-incident", ValueType::Incident),
        ("rill-job", ValueType::Job),
        ("rill-decision-evaluation", ValueType::DecisionEvaluation),
    ]);
    let mut checked = 0;
    for object in objects().iter().filter(|o| o["type"] == "visualization") {
        let Some(view) = object["references"][0]["id"].as_str() else {
            continue; // the markdown panel has no data
        };
        let value_type = views[view];
        let vis: Value =
            serde_json::from_str(object["attributes"]["visState"].as_str().unwrap()).unwrap();
        for agg in vis["aggs"].as_array().unwrap() {
            if let Some(field) = agg["params"]["field"].as_str() {
                let mapped = field_type(value_type, field);
                assert!(
                    matches!(mapped.as_deref(), Some("keyword" | "date")),
                    "{field} in {} is mapped as {mapped:?}",
                    object["id"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 5);
    assert_eq!(
        field_type(ValueType::ProcessInstance, "value.processInstanceKey").as_deref(),
        Some("long")
    );
}
