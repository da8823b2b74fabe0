use rill_protocol::history::{
    Condition, FieldValue, Historic, ProcessInstanceField as F, ProcessInstanceSearch, SortBy,
};
use rill_protocol::value::{
    BpmnElementType, BpmnEventType, IncidentErrorType, IncidentRecord, ProcessInstanceRecord,
};
use rill_protocol::{
    Intent, Key, PartitionId, Position, ProcessInstanceState, Record, RecordType, RecordValue,
    RejectionType, Timestamp,
};

use rill_history::*;

fn key(n: u64) -> Key {
    Key::new(PartitionId(1), n)
}

fn record(intent: Intent, time: i64, value: RecordValue) -> Record {
    Record {
        position: Position(1),
        source_record_position: None,
        key: key(0),
        timestamp: Timestamp(time),
        record_type: RecordType::Event,
        value_type: value.value_type(),
        intent,
        partition_id: PartitionId(1),
        rejection_type: RejectionType::NullVal,
        rejection_reason: String::new(),
        operation_reference: -1,
        broker_version: "test".into(),
        value,
    }
}

fn process(intent: Intent, time: i64, n: u64, process_id: &str, definition: i64) -> Record {
    record(
        intent,
        time,
        RecordValue::ProcessInstance(ProcessInstanceRecord {
            bpmn_element_type: BpmnElementType::Process,
            element_id: process_id.into(),
            bpmn_process_id: process_id.into(),
            version: 1,
            process_definition_key: definition,
            process_instance_key: key(n).get(),
            flow_scope_key: -1,
            bpmn_event_type: BpmnEventType::Unspecified,
            parent_process_instance_key: -1,
            parent_element_instance_key: -1,
            tenant_id: "<default>".into(),
            root_process_instance_key: key(n).get(),
            tags: Vec::new(),
            tree_path: None,
        }),
    )
}

fn incident(intent: Intent, n: u64) -> Record {
    record(
        intent,
        0,
        RecordValue::Incident(IncidentRecord {
            error_type: IncidentErrorType::JobNoRetries,
            error_message: "boom".into(),
            bpmn_process_id: "p".into(),
            process_definition_key: 1,
            process_instance_key: key(n).get(),
            element_id: "task".into(),
            element_instance_key: 5,
            job_key: 6,
            variable_scope_key: 5,
            tenant_id: "<default>".into(),
            element_instance_path: Vec::new(),
            process_definition_path: Vec::new(),
            calling_element_path: Vec::new(),
            root_process_instance_key: key(n).get(),
        }),
    )
}

fn apply(store: &mut MemoryHistory, records: &[Record]) {
    let writes = {
        let mut writer = HistoryWriter::new(store);
        for r in records {
            writer.index(r).unwrap();
        }
        writer.into_writes()
    };
    store.apply(writes);
}

fn by_key(descending: bool) -> Vec<SortBy<F>> {
    vec![SortBy {
        field: F::ProcessInstanceKey,
        descending,
    }]
}

fn search(filter: Vec<(F, Condition)>, sort: Vec<SortBy<F>>, limit: u32) -> ProcessInstanceSearch {
    ProcessInstanceSearch {
        filter,
        sort,
        after: None,
        limit,
        count_limit: COUNT_LIMIT,
    }
}

fn text(s: &str) -> FieldValue {
    FieldValue::Text(s.into())
}

fn keys_of(page: &rill_protocol::history::ProcessInstancePage) -> Vec<u64> {
    page.items.iter().map(|i| i.key.local()).collect()
}

/// 1..=30: "order" (definition 100) odd, "invoice" (definition 200) even; multiples of
/// three completed, multiples of five terminated (15 and 30 completed).
fn populated() -> MemoryHistory {
    let mut store = MemoryHistory::new();
    let mut records = Vec::new();
    for n in 1..=30u64 {
        let (id, def) = if n % 2 == 1 {
            ("order", 100)
        } else {
            ("invoice", 200)
        };
        records.push(process(
            Intent::ElementActivating,
            1_000 + n as i64,
            n,
            id,
            def,
        ));
    }
    for n in 1..=30u64 {
        let (id, def) = if n % 2 == 1 {
            ("order", 100)
        } else {
            ("invoice", 200)
        };
        if n % 3 == 0 {
            records.push(process(
                Intent::ElementCompleted,
                2_000 + n as i64,
                n,
                id,
                def,
            ));
        } else if n % 5 == 0 {
            records.push(process(
                Intent::ElementTerminated,
                2_000 + n as i64,
                n,
                id,
                def,
            ));
        }
    }
    apply(&mut store, &records);
    store
}

#[test]
fn instances_are_found_through_each_index_in_key_order() {
    let store = populated();
    let active = search(
        vec![(F::State, Condition::Eq(text("ACTIVE")))],
        by_key(false),
        100,
    );
    let page = search_process_instances(&store, &active).unwrap();
    let expected: Vec<u64> = (1..=30).filter(|n| n % 3 != 0 && n % 5 != 0).collect();
    assert_eq!(keys_of(&page), expected);
    assert_eq!(page.total, expected.len() as u64);

    let orders_completed = search(
        vec![
            (F::ProcessDefinitionId, Condition::Eq(text("order"))),
            (F::State, Condition::Eq(text("COMPLETED"))),
        ],
        by_key(true),
        100,
    );
    let page = search_process_instances(&store, &orders_completed).unwrap();
    assert_eq!(keys_of(&page), vec![27, 21, 15, 9, 3]);

    let invoices = search(
        vec![(F::ProcessDefinitionKey, Condition::Eq(FieldValue::Int(200)))],
        by_key(false),
        3,
    );
    let page = search_process_instances(&store, &invoices).unwrap();
    assert_eq!(keys_of(&page), vec![2, 4, 6]);
    assert_eq!(page.total, 15);
    assert_eq!(page.items[0].bpmn_process_id, "invoice");
}

#[test]
fn cursors_continue_where_the_last_page_ended_in_any_order() {
    let store = populated();
    for sort in [
        by_key(false),
        by_key(true),
        vec![
            SortBy {
                field: F::EndDate,
                descending: true,
            },
            SortBy {
                field: F::ProcessInstanceKey,
                descending: false,
            },
        ],
        vec![
            SortBy {
                field: F::StartDate,
                descending: false,
            },
            SortBy {
                field: F::ProcessInstanceKey,
                descending: false,
            },
        ],
    ] {
        let mut all = Vec::new();
        let mut query = search(
            vec![(F::ProcessDefinitionId, Condition::In(vec![text("order")]))],
            sort.clone(),
            4,
        );
        loop {
            let page = search_process_instances(&store, &query).unwrap();
            assert_eq!(page.total, 15);
            let Some(last) = page.items.last() else { break };
            query.after = Some(last.sort_values(&sort));
            all.extend(page.items.iter().map(|i| i.key.local()));
        }
        let mut seen = all.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 15, "{sort:?}: {all:?}");
        assert_eq!(all.len(), 15, "{sort:?}: nothing repeated: {all:?}");
    }
}

#[test]
fn other_conditions_filter_after_the_index() {
    let store = populated();
    let finished_late = search(
        vec![
            (F::State, Condition::Neq(text("ACTIVE"))),
            (F::EndDate, Condition::Gte(FieldValue::Int(2_020))),
            (F::ProcessDefinitionId, Condition::Like("inv*".into())),
        ],
        by_key(false),
        100,
    );
    let page = search_process_instances(&store, &finished_late).unwrap();
    assert_eq!(keys_of(&page), vec![20, 24, 30]);
    assert_eq!(page.total, 3);

    let named = search(
        vec![(
            F::ProcessInstanceKey,
            Condition::In(vec![
                FieldValue::Int(key(3).get()),
                FieldValue::Int(key(4).get()),
            ]),
        )],
        by_key(true),
        100,
    );
    assert_eq!(
        keys_of(&search_process_instances(&store, &named).unwrap()),
        vec![4, 3]
    );
    let none_yet = search(
        vec![(F::EndDate, Condition::Exists(false))],
        by_key(false),
        2,
    );
    let page = search_process_instances(&store, &none_yet).unwrap();
    assert_eq!(keys_of(&page), vec![1, 2]);
    assert_eq!(page.total, 16);
}

#[test]
fn counting_stops_at_the_count_limit() {
    let store = populated();
    let mut query = search(Vec::new(), by_key(false), 2);
    query.count_limit = 10;
    let page = search_process_instances(&store, &query).unwrap();
    assert_eq!((page.total, page.more), (10, true));
    assert_eq!(keys_of(&page), vec![1, 2]);
}

#[test]
fn incidents_and_state_changes_move_the_index_entries() {
    let mut store = populated();
    apply(
        &mut store,
        &[incident(Intent::Created, 1), incident(Intent::Created, 1)],
    );
    let instance = process_instance(&store, key(1)).unwrap().unwrap();
    assert_eq!(instance.incidents, 2);
    apply(&mut store, &[incident(Intent::Resolved, 1)]);
    let with_incident = search(
        vec![(F::HasIncident, Condition::Eq(FieldValue::Bool(true)))],
        by_key(false),
        10,
    );
    assert_eq!(
        keys_of(&search_process_instances(&store, &with_incident).unwrap()),
        vec![1]
    );

    apply(
        &mut store,
        &[process(Intent::ElementCompleted, 5_000, 1, "order", 100)],
    );
    let instance = process_instance(&store, key(1)).unwrap().unwrap();
    assert_eq!(instance.state, ProcessInstanceState::Completed);
    assert_eq!(instance.end_date, Some(Timestamp(5_000)));
    let active = search(
        vec![(F::State, Condition::Eq(text("ACTIVE")))],
        by_key(false),
        100,
    );
    assert!(!keys_of(&search_process_instances(&store, &active).unwrap()).contains(&1));
    let completed = search(
        vec![(F::State, Condition::Eq(text("COMPLETED")))],
        by_key(false),
        100,
    );
    assert!(keys_of(&search_process_instances(&store, &completed).unwrap()).contains(&1));
}

#[test]
fn expiry_removes_the_oldest_finished_instances_and_their_index_entries() {
    let mut store = populated();
    let before = store.len();
    assert_eq!(oldest_finished(&store).unwrap(), Some(Timestamp(2_003)));
    // Finished before 2_010: 3, 5, 6, 9.
    let writes = {
        let mut writer = HistoryWriter::new(&store);
        assert_eq!(writer.expire(Timestamp(2_010), 3).unwrap(), 3);
        writer.into_writes()
    };
    store.apply(writes);
    assert_eq!(oldest_finished(&store).unwrap(), Some(Timestamp(2_009)));
    let writes = {
        let mut writer = HistoryWriter::new(&store);
        assert_eq!(writer.expire(Timestamp(2_010), 100).unwrap(), 1);
        writer.into_writes()
    };
    store.apply(writes);
    for n in [3, 5, 6, 9] {
        assert!(process_instance(&store, key(n)).unwrap().is_none(), "{n}");
    }
    assert!(process_instance(&store, key(10)).unwrap().is_some());
    // Each instance had its entry, three index entries and its end date: all gone.
    assert_eq!(store.len(), before - 4 * 5);
    let all = search(Vec::new(), by_key(false), 100);
    assert_eq!(search_process_instances(&store, &all).unwrap().total, 26);
    let finished = search(
        vec![(F::State, Condition::Neq(text("ACTIVE")))],
        by_key(false),
        100,
    );
    assert_eq!(
        search_process_instances(&store, &finished).unwrap().total,
        10
    );
}
