//! A process instance migration in the store: the instance and its element instances
//! take the target definition's ids from the ELEMENT_MIGRATED records.

use rill_protocol::history::{HistoricElementInstance, HistoricProcessInstance};
use rill_protocol::value::{BpmnElementType, ProcessRecord};
use rill_protocol::{Intent, Key, ProcessInstanceState, RecordValue, Timestamp};

use crate::entities::{apply, element, instance, key, record};
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

/// The definition `definition` of process `process_id`, as the Modeler draws it: one
/// named task `task_id`, and an unnamed end event.
fn deployed_with_task(
    definition: i64,
    process_id: &str,
    task_id: &str,
    task_name: &str,
) -> rill_protocol::Record {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="{process_id}" name="Orders" isExecutable="true">
    <bpmn:serviceTask id="{task_id}" name="{task_name}">
      <bpmn:extensionElements><zeebe:taskDefinition type="work" /></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>"#
    );
    record(
        Intent::Created,
        500,
        Key(definition),
        RecordValue::Process(ProcessRecord {
            bpmn_process_id: process_id.into(),
            version: 1,
            process_definition_key: definition,
            resource_name: format!("{process_id}.bpmn"),
            checksum: Default::default(),
            resource: rill_protocol::Blob(xml.into_bytes()),
            is_duplicate: false,
            tenant_id: "<default>".into(),
            version_tag: String::new(),
        }),
    )
}

#[test]
fn element_instances_carry_the_drawn_name_and_take_the_target_one_when_migrated() {
    let mut store = MemoryHistory::new();
    let task = element(
        Intent::ElementActivating,
        1_001,
        101,
        100,
        BpmnElementType::ServiceTask,
    );
    let mut unnamed = element(
        Intent::ElementActivating,
        1_002,
        102,
        100,
        BpmnElementType::EndEvent,
    );
    if let RecordValue::ProcessInstance(value) = &mut unnamed.value {
        value.element_id = "end".into();
    }
    // The definition and its first instance in one batch, as on a fresh partition.
    apply(
        &mut store,
        &[
            deployed_with_task(7, "p", "e101", "Check order"),
            deployed_with_task(9, "q", "A2", "Ship order"),
            instance(Intent::ElementActivating, 1_000, 100),
            task.clone(),
            unnamed,
        ],
    );
    let named: HistoricElementInstance = get(&store, key(101)).unwrap().unwrap();
    assert_eq!(named.element_name.as_deref(), Some("Check order"));
    assert_eq!(named.display_name(), "Check order");
    let end: HistoricElementInstance = get(&store, key(102)).unwrap().unwrap();
    assert_eq!(end.element_name, None);
    assert_eq!(end.display_name(), "end", "an unnamed element shows its id");

    apply(&mut store, &[migrated(task, "A2")]);
    let moved: HistoricElementInstance = get(&store, key(101)).unwrap().unwrap();
    assert_eq!(moved.element_name.as_deref(), Some("Ship order"));
}
