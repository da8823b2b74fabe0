//! A process instance migration in the store: the instance and its element instances
//! take the target definition's ids from the ELEMENT_MIGRATED records.

use rill_protocol::history::{HistoricElementInstance, HistoricProcessInstance};
use rill_protocol::value::BpmnElementType;
use rill_protocol::{Intent, Key, ProcessInstanceState, RecordValue, Timestamp};

use crate::entities::{apply, element, instance, key};
use rill_history::*;

/// `record` as migrated to the definition 9 (`q`, version 2), with `element_id`.
fn migrated(mut record: rill_protocol::Record, element_id: &str) -> rill_protocol::Record {
    record.intent = Intent::ElementMigrated;
    if let RecordValue::ProcessInstance(value) = &mut record.value {
        value.element_id = element_id.into();
        value.bpmn_process_id = "q".into();
        value.version = 2;
        value.process_definition_key = 9;
    }
    record
}

#[test]
fn a_migrated_instance_and_its_elements_name_the_target_definition() {
    let mut store = MemoryHistory::new();
    let task = element(
        Intent::ElementActivating,
        1_001,
        101,
        100,
        BpmnElementType::ServiceTask,
    );
    apply(
        &mut store,
        &[
            instance(Intent::ElementActivating, 1_000, 100),
            task.clone(),
        ],
    );
    apply(
        &mut store,
        &[
            migrated(instance(Intent::ElementActivating, 2_000, 100), "q"),
            migrated(task, "A2"),
        ],
    );
    let moved: HistoricProcessInstance = get(&store, key(100)).unwrap().unwrap();
    assert_eq!(
        (
            moved.bpmn_process_id.as_str(),
            moved.version,
            moved.process_definition_key
        ),
        ("q", 2, Key(9))
    );
    // Migration changes where the instance is, not when it started or its state.
    assert_eq!(moved.start_date, Timestamp(1_000));
    assert_eq!(moved.state, ProcessInstanceState::Active);
    let element: HistoricElementInstance = get(&store, key(101)).unwrap().unwrap();
    assert_eq!(element.element_id, "A2");
    assert_eq!(element.process_definition_key, Key(9));
}
