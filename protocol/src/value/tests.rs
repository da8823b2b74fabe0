use super::*;
use crate::codec;

fn record(tree_path: Option<Box<TreePath>>) -> ProcessInstanceRecord {
    ProcessInstanceRecord {
        bpmn_element_type: BpmnElementType::ServiceTask,
        element_id: "task".into(),
        bpmn_process_id: "p".into(),
        version: 1,
        process_definition_key: 1,
        process_instance_key: 2,
        flow_scope_key: 2,
        bpmn_event_type: BpmnEventType::Unspecified,
        parent_process_instance_key: -1,
        parent_element_instance_key: -1,
        tenant_id: "<default>".into(),
        root_process_instance_key: 2,
        tags: vec!["t".into()],
        tree_path,
    }
}

#[test]
fn the_tree_path_round_trips_through_the_codec_and_json() {
    let with = record(Some(Box::new(TreePath {
        element_instance_path: vec![vec![5, 6], vec![2, 3]],
        process_definition_path: vec![4, 1],
        calling_element_path: vec![7],
    })));
    for value in [with, record(None)] {
        let bytes = codec::encode(&value).expect("encodes");
        assert_eq!(
            codec::decode::<ProcessInstanceRecord>(&bytes).ok(),
            Some(value.clone())
        );
        let json = serde_json::to_value(&value).expect("serializes");
        assert_eq!(
            serde_json::from_value::<ProcessInstanceRecord>(json).ok(),
            Some(value)
        );
    }
}

#[test]
fn without_a_path_the_fields_are_empty_lists_and_empty_lists_are_no_path() {
    let json = serde_json::to_value(record(None)).expect("serializes");
    assert_eq!(json["elementInstancePath"], serde_json::json!([]));
    assert_eq!(json["processDefinitionPath"], serde_json::json!([]));
    assert_eq!(json["callingElementPath"], serde_json::json!([]));
    // JSON written before the fields existed reads as a record without a path.
    let mut old = json.clone();
    if let serde_json::Value::Object(map) = &mut old {
        map.retain(|k, _| !k.ends_with("Path"));
    }
    let read: ProcessInstanceRecord = serde_json::from_value(old).expect("reads");
    assert_eq!(read, record(None));
    let read: ProcessInstanceRecord = serde_json::from_value(json).expect("reads");
    assert!(read.tree_path.is_none());
}
