//! Process definitions, their element statistics, and message subscriptions in the
//! store: fed from records, found through their indexes, named from the model.

use rill_protocol::history::{
    Condition, FieldValue, Historic, HistoricMessageSubscription, HistoricProcessDefinition,
    HistoricProcessInstance, MessageSubscriptionField as MF, MessageSubscriptionState,
    ProcessDefinitionField as DF, ProcessInstanceField as PF, SortBy,
};
use rill_protocol::value::{BpmnElementType, ProcessMessageSubscriptionRecord, ProcessRecord};
use rill_protocol::{Intent, JsonValue, Key, Record, RecordValue, Timestamp};

use crate::entities::{apply, element, instance, key, query, record};
use rill_history::*;

/// The definition key the instances of `tests_entities` name.
const DEFINITION: Key = Key(7);

fn model(process_id: &str, name: Option<&str>) -> String {
    let name = name.map(|n| format!(r#" name="{n}""#)).unwrap_or_default();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:process id="{process_id}"{name} isExecutable="true"/>
</bpmn:definitions>"#
    )
}

fn deployed(
    definition: Key,
    process_id: &str,
    version: i32,
    name: Option<&str>,
    tag: &str,
) -> Record {
    record(
        Intent::Created,
        500,
        definition,
        RecordValue::Process(ProcessRecord {
            bpmn_process_id: process_id.into(),
            version,
            process_definition_key: definition.get(),
            resource_name: format!("{process_id}.bpmn"),
            checksum: Default::default(),
            resource: rill_protocol::Blob(model(process_id, name).into_bytes()),
            is_duplicate: false,
            tenant_id: "<default>".into(),
            version_tag: tag.into(),
        }),
    )
}

#[test]
fn definitions_keep_the_model_name_tag_and_xml_and_name_their_instances() {
    let mut store = MemoryHistory::new();
    apply(
        &mut store,
        &[
            deployed(DEFINITION, "p", 1, Some("Order process"), "v1.0"),
            deployed(Key(8), "other", 1, None, ""),
            instance(Intent::ElementActivating, 1_000, 100),
        ],
    );
    let definition: HistoricProcessDefinition = get(&store, DEFINITION).unwrap().unwrap();
    assert_eq!(definition.name.as_deref(), Some("Order process"));
    assert_eq!(definition.version_tag.as_deref(), Some("v1.0"));
    assert_eq!(definition.resource_name, "p.bpmn");
    let unnamed: HistoricProcessDefinition = get(&store, Key(8)).unwrap().unwrap();
    assert_eq!((unnamed.name, unnamed.version_tag), (None, None));
    let xml = definition_xml(&store, DEFINITION).unwrap().unwrap();
    assert!(xml.contains(r#"name="Order process""#), "{xml}");
    assert_eq!(definition_xml(&store, Key(9)).unwrap(), None);

    let started: HistoricProcessInstance = get(&store, key(100)).unwrap().unwrap();
    assert_eq!(
        started.process_definition_name.as_deref(),
        Some("Order process")
    );
    assert_eq!(
        started.process_definition_version_tag.as_deref(),
        Some("v1.0")
    );

    // Found by process id through its index; the name and tag filter too.
    let by_id = search::<HistoricProcessDefinition, _>(
        &store,
        &query(
            vec![(
                DF::ProcessDefinitionId,
                Condition::Eq(FieldValue::Text("other".into())),
            )],
            vec![SortBy {
                field: DF::ProcessDefinitionKey,
                descending: false,
            }],
        ),
    )
    .unwrap();
    assert_eq!(by_id.total, 1);
    assert_eq!(by_id.items[0].key, Key(8));
    let named = search::<HistoricProcessDefinition, _>(
        &store,
        &query(
            vec![(DF::Name, Condition::Like("Order*".into()))],
            vec![SortBy {
                field: DF::ProcessDefinitionKey,
                descending: false,
            }],
        ),
    )
    .unwrap();
    assert_eq!(
        named.items.iter().map(|d| d.key).collect::<Vec<_>>(),
        vec![DEFINITION]
    );
}

#[test]
fn only_the_highest_version_is_the_latest_also_within_one_batch() {
    let mut store = MemoryHistory::new();
    // Versions 1 and 2 in one applied batch, version 3 in the next, and a version 1 of
    // another process that stays the latest of its own.
    apply(
        &mut store,
        &[
            deployed(Key(20), "p", 1, None, ""),
            deployed(Key(21), "p", 2, None, ""),
            deployed(Key(30), "q", 1, None, ""),
        ],
    );
    let latest = |store: &MemoryHistory| {
        let page = search::<HistoricProcessDefinition, _>(
            store,
            &query(
                vec![(DF::IsLatestVersion, Condition::Eq(FieldValue::Bool(true)))],
                vec![SortBy {
                    field: DF::ProcessDefinitionKey,
                    descending: false,
                }],
            ),
        )
        .unwrap();
        page.items.iter().map(|d| d.key).collect::<Vec<_>>()
    };
    assert_eq!(latest(&store), vec![Key(21), Key(30)]);
    apply(&mut store, &[deployed(Key(22), "p", 3, None, "")]);
    assert_eq!(latest(&store), vec![Key(22), Key(30)]);
    // A partition that receives an older version late keeps the newer one the latest.
    let mut late = MemoryHistory::new();
    apply(
        &mut late,
        &[
            deployed(Key(22), "p", 3, None, ""),
            deployed(Key(21), "p", 2, None, ""),
        ],
    );
    assert_eq!(latest(&late), vec![Key(22)]);
}

#[test]
fn an_instance_of_an_unnamed_definition_shows_its_process_id_as_name() {
    let mut store = MemoryHistory::new();
    apply(
        &mut store,
        &[
            deployed(DEFINITION, "p", 1, None, ""),
            instance(Intent::ElementActivating, 1_000, 100),
        ],
    );
    let started: HistoricProcessInstance = get(&store, key(100)).unwrap().unwrap();
    assert_eq!(started.process_definition_name, None);
    assert_eq!(started.display_name(), "p");
    assert_eq!(
        started.field(PF::ProcessDefinitionName),
        Some(FieldValue::Text("p".into()))
    );
    assert_eq!(started.field(PF::ProcessDefinitionVersionTag), None);
}

/// Element instance `n` of `instance`, of the element with id `element_id`.
fn element_of(intent: Intent, n: u64, instance: u64, element_id: &str) -> Record {
    let mut record = element(
        intent,
        1_000 + n as i64,
        n,
        instance,
        BpmnElementType::ServiceTask,
    );
    if let RecordValue::ProcessInstance(value) = &mut record.value {
        value.element_id = element_id.into();
    }
    record
}

#[test]
fn element_statistics_count_states_and_incidents_over_matching_instances() {
    let mut store = MemoryHistory::new();
    apply(
        &mut store,
        &[
            instance(Intent::ElementActivating, 1_000, 100),
            element_of(Intent::ElementActivating, 101, 100, "task"),
            element_of(Intent::ElementCompleted, 101, 100, "task"),
            element_of(Intent::ElementActivating, 102, 100, "end"),
            element_of(Intent::ElementCompleted, 102, 100, "end"),
            instance(Intent::ElementCompleted, 1_200, 100),
            instance(Intent::ElementActivating, 1_300, 200),
            element_of(Intent::ElementActivating, 201, 200, "task"),
            element_of(Intent::ElementActivating, 202, 200, "other"),
            element_of(Intent::ElementTerminated, 202, 200, "other"),
        ],
    );
    // An incident on the active task of instance 200.
    apply(
        &mut store,
        &[record(
            Intent::Created,
            1_400,
            key(260),
            RecordValue::Incident(rill_protocol::value::IncidentRecord {
                error_type: rill_protocol::value::IncidentErrorType::JobNoRetries,
                error_message: "no retries left".into(),
                bpmn_process_id: "p".into(),
                process_definition_key: DEFINITION.get(),
                process_instance_key: key(200).get(),
                element_id: "task".into(),
                element_instance_key: key(201).get(),
                job_key: -1,
                variable_scope_key: key(201).get(),
                tenant_id: "<default>".into(),
                element_instance_path: Vec::new(),
                process_definition_path: Vec::new(),
                calling_element_path: Vec::new(),
                root_process_instance_key: key(200).get(),
            }),
        )],
    );
    let all = element_statistics(&store, DEFINITION, &[]).unwrap();
    let counts: Vec<(&str, u64, u64, u64, u64)> = all
        .iter()
        .map(|s| {
            (
                s.element_id.as_str(),
                s.active,
                s.completed,
                s.canceled,
                s.incidents,
            )
        })
        .collect();
    assert_eq!(
        counts,
        vec![
            ("end", 0, 1, 0, 0),
            ("other", 0, 0, 1, 0),
            ("task", 1, 1, 0, 1)
        ]
    );

    // Over the active instances only: instance 200's elements.
    let active = element_statistics(
        &store,
        DEFINITION,
        &[(PF::State, Condition::Eq(FieldValue::Text("ACTIVE".into())))],
    )
    .unwrap();
    let ids: Vec<&str> = active.iter().map(|s| s.element_id.as_str()).collect();
    assert_eq!(ids, vec!["other", "task"]);
    assert_eq!((active[1].active, active[1].completed), (1, 0));
    // Another definition has none.
    assert!(element_statistics(&store, Key(8), &[]).unwrap().is_empty());
}

fn subscription(intent: Intent, time: i64, n: u64, instance: u64, message: &str) -> Record {
    record(
        intent,
        time,
        key(n),
        RecordValue::ProcessMessageSubscription(ProcessMessageSubscriptionRecord {
            subscription_partition_id: 1,
            process_instance_key: key(instance).get(),
            element_instance_key: key(instance + 1).get(),
            bpmn_process_id: "p".into(),
            element_id: "wait".into(),
            message_name: message.into(),
            correlation_key: "order-1".into(),
            message_key: -1,
            variables: JsonValue::empty_object(),
            is_interrupting: true,
            tenant_id: "<default>".into(),
        }),
    )
}

#[test]
fn message_subscriptions_follow_their_records_and_go_with_their_instance() {
    let mut store = MemoryHistory::new();
    let catch = BpmnElementType::IntermediateCatchEvent;
    apply(
        &mut store,
        &[
            instance(Intent::ElementActivating, 1_000, 100),
            element(Intent::ElementActivating, 1_001, 101, 100, catch),
            subscription(Intent::Creating, 1_002, 150, 100, "paid"),
            subscription(Intent::Created, 1_003, 150, 100, "paid"),
            instance(Intent::ElementActivating, 1_010, 200),
            subscription(Intent::Creating, 1_011, 250, 200, "shipped"),
        ],
    );
    let open: HistoricMessageSubscription = get(&store, key(150)).unwrap().unwrap();
    assert_eq!(open.state, MessageSubscriptionState::Created);
    assert_eq!(
        open.last_updated.millis(),
        1_002,
        "the confirmation changes nothing"
    );
    assert_eq!(
        open.process_definition_key,
        Some(DEFINITION),
        "from its element"
    );
    let no_element: HistoricMessageSubscription = get(&store, key(250)).unwrap().unwrap();
    assert_eq!(no_element.process_definition_key, None);

    apply(
        &mut store,
        &[
            subscription(Intent::Correlated, 1_020, 150, 100, "paid"),
            subscription(Intent::Deleting, 1_021, 250, 200, "shipped"),
            subscription(Intent::Deleted, 1_022, 250, 200, "shipped"),
        ],
    );
    let correlated: HistoricMessageSubscription = get(&store, key(150)).unwrap().unwrap();
    assert_eq!(correlated.state, MessageSubscriptionState::Correlated);
    assert_eq!(correlated.last_updated.millis(), 1_020);
    let by_state = search::<HistoricMessageSubscription, _>(
        &store,
        &query(
            vec![(
                MF::MessageSubscriptionState,
                Condition::Eq(FieldValue::Text("DELETED".into())),
            )],
            vec![SortBy {
                field: MF::MessageSubscriptionKey,
                descending: false,
            }],
        ),
    )
    .unwrap();
    assert_eq!(
        by_state.items.iter().map(|s| s.key).collect::<Vec<_>>(),
        vec![key(250)]
    );

    // Retention removes an instance's subscriptions with it.
    apply(
        &mut store,
        &[instance(Intent::ElementCompleted, 2_000, 100)],
    );
    let writes = {
        let mut writer = HistoryWriter::new(&store);
        writer.expire(Timestamp(3_000), EXPIRE_LIMIT).unwrap();
        writer.into_writes()
    };
    store.apply(writes);
    assert!(
        get::<HistoricMessageSubscription, _>(&store, key(150))
            .unwrap()
            .is_none()
    );
    assert!(
        get::<HistoricMessageSubscription, _>(&store, key(250))
            .unwrap()
            .is_some()
    );
}

fn rpa_script(key: Key, version: i32, version_tag: &str, content: &str) -> Record {
    record(
        Intent::Created,
        600,
        key,
        RecordValue::Resource(rill_protocol::value::ResourceRecord {
            resource_id: "book-invoice".into(),
            version,
            version_tag: version_tag.into(),
            resource_key: key.get(),
            checksum: Default::default(),
            resource_name: "book-invoice.rpa".into(),
            is_duplicate: false,
            tenant_id: "<default>".into(),
            deployment_key: 1,
            resource_prop: content.into(),
        }),
    )
}

#[test]
fn deployed_rpa_scripts_are_found_by_key_with_their_content() {
    use rill_protocol::history::{HistoricResource, HistoryQuery, HistoryResult};
    use rill_protocol::{Query, QueryResult};

    let mut store = MemoryHistory::new();
    let v1 = r#"{"id": "book-invoice", "script": "Log    one"}"#;
    let v2 = r#"{"id": "book-invoice", "versionTag": "v2", "script": "Log    two"}"#;
    apply(
        &mut store,
        &[
            rpa_script(Key(20), 1, "", v1),
            rpa_script(Key(21), 2, "v2", v2),
        ],
    );
    // A deployment distributed again (the same record once more) changes nothing.
    apply(&mut store, &[rpa_script(Key(20), 1, "", v1)]);
    let get_resource = |key: Key| {
        let query = Query::History(HistoryQuery::Resource { key });
        match answer(&store, &query).unwrap() {
            QueryResult::History(HistoryResult::Resource(found)) => found,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        get_resource(Key(21)),
        Some(HistoricResource {
            key: Key(21),
            resource_id: "book-invoice".into(),
            resource_name: "book-invoice.rpa".into(),
            version: 2,
            version_tag: "v2".into(),
            tenant_id: "<default>".into(),
            content: v2.into(),
        })
    );
    let first = get_resource(Key(20)).expect("version 1");
    assert_eq!((first.version, first.version_tag.as_str()), (1, ""));
    assert_eq!(first.content, v1);
    assert_eq!(get_resource(Key(22)), None, "no resource with that key");
    assert_eq!(
        first.field(rill_protocol::history::ResourceField::ResourceId),
        Some(FieldValue::Text("book-invoice".into()))
    );
}
