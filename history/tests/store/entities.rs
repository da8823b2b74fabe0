//! Jobs and incidents in the store: fed from records, found through their indexes, and
//! removed with their instance.

use std::collections::BTreeMap;

use rill_protocol::history::{
    Condition, FieldValue, HistoricIncident, HistoricJob, IncidentField as IF, IncidentState,
    JobField as JF, JobState, Search, SortBy,
};
use rill_protocol::value::{
    BpmnElementType, BpmnEventType, IncidentErrorType, IncidentRecord, JobBatchRecord, JobRecord,
    ProcessInstanceRecord,
};
use rill_protocol::{
    Intent, JsonValue, Key, PartitionId, Position, Record, RecordType, RecordValue, RejectionType,
    Timestamp,
};

use rill_history::*;

pub(crate) fn key(n: u64) -> Key {
    Key::new(PartitionId(1), n)
}

pub(crate) fn record(intent: Intent, time: i64, k: Key, value: RecordValue) -> Record {
    Record {
        position: Position(1),
        source_record_position: None,
        key: k,
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

pub(crate) fn instance(intent: Intent, time: i64, n: u64) -> Record {
    record(
        intent,
        time,
        key(n),
        RecordValue::ProcessInstance(ProcessInstanceRecord {
            bpmn_element_type: BpmnElementType::Process,
            element_id: "p".into(),
            bpmn_process_id: "p".into(),
            version: 1,
            process_definition_key: 7,
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

fn job_value(job_type: &str, instance: u64, retries: i32) -> JobRecord {
    JobRecord {
        job_type: job_type.into(),
        element_id: "task".into(),
        element_instance_key: key(instance + 1).get(),
        bpmn_process_id: "p".into(),
        process_definition_version: 1,
        process_definition_key: 7,
        process_instance_key: key(instance).get(),
        worker: String::new(),
        retries,
        retry_backoff: 0,
        recurring_time: -1,
        deadline: -1,
        timeout: -1,
        error_message: String::new(),
        error_code: String::new(),
        custom_headers: BTreeMap::from([("h".to_owned(), "v".to_owned())]),
        variables: JsonValue::from(serde_json::json!({})),
        tenant_id: "<default>".into(),
        job_kind: Default::default(),
        job_listener_event_type: Default::default(),
        result: Default::default(),
        root_process_instance_key: key(instance).get(),
        tags: Vec::new(),
    }
}

fn job(intent: Intent, time: i64, n: u64, value: JobRecord) -> Record {
    record(intent, time, key(n), RecordValue::Job(value))
}

fn incident(intent: Intent, time: i64, n: u64, instance: u64) -> Record {
    record(
        intent,
        time,
        key(n),
        RecordValue::Incident(IncidentRecord {
            error_type: IncidentErrorType::JobNoRetries,
            error_message: "no retries left".into(),
            bpmn_process_id: "p".into(),
            process_definition_key: 7,
            process_instance_key: key(instance).get(),
            element_id: "task".into(),
            element_instance_key: key(instance + 1).get(),
            job_key: key(n - 1).get(),
            variable_scope_key: key(instance + 1).get(),
            tenant_id: "<default>".into(),
            element_instance_path: Vec::new(),
            process_definition_path: Vec::new(),
            calling_element_path: Vec::new(),
            root_process_instance_key: key(instance).get(),
        }),
    )
}

pub(crate) fn apply(store: &mut MemoryHistory, records: &[Record]) {
    let writes = {
        let mut writer = HistoryWriter::new(store);
        for r in records {
            writer.index(r).unwrap();
        }
        writer.into_writes()
    };
    store.apply(writes);
}

pub(crate) fn query<F>(filter: Vec<(F, Condition)>, sort: Vec<SortBy<F>>) -> Search<F> {
    Search {
        filter,
        sort,
        after: None,
        limit: 100,
        count_limit: COUNT_LIMIT,
    }
}

fn text(s: &str) -> Condition {
    Condition::Eq(FieldValue::Text(s.into()))
}

/// Instances 100, 200, 300 (each with jobs at +10.. and incidents at +50..).
/// Instance 100: job 110 "pay" created, activated, completed; job 111 "pay" activated,
/// failed with retries left; job 112 "ship" failed without retries, incident 151 created
/// then resolved. Instance 200: job 210 "pay" created; incident 251 open. Instance 100
/// completes at 5_000.
fn populated() -> MemoryHistory {
    let mut store = MemoryHistory::new();
    let activated = |keys: &[u64], worker: &str, instance: u64| {
        let jobs = keys
            .iter()
            .map(|_| JobRecord {
                worker: worker.into(),
                deadline: 60_000,
                ..job_value("pay", instance, 3)
            })
            .collect();
        record(
            Intent::Activated,
            1_500,
            key(999),
            RecordValue::JobBatch(JobBatchRecord {
                job_type: "pay".into(),
                worker: worker.into(),
                timeout: 1_000,
                max_jobs_to_activate: 10,
                job_keys: keys.iter().map(|k| key(*k).get()).collect(),
                jobs,
                truncated: false,
                tenant_ids: Vec::new(),
            }),
        )
    };
    apply(
        &mut store,
        &[
            instance(Intent::ElementActivating, 1_000, 100),
            instance(Intent::ElementActivating, 1_001, 200),
            instance(Intent::ElementActivating, 1_002, 300),
            job(Intent::Created, 1_100, 110, job_value("pay", 100, 3)),
            job(Intent::Created, 1_101, 111, job_value("pay", 100, 3)),
            job(Intent::Created, 1_102, 112, job_value("ship", 100, 1)),
            job(Intent::Created, 1_103, 210, job_value("pay", 200, 3)),
            activated(&[110, 111], "w1", 100),
            job(
                Intent::Completed,
                2_000,
                110,
                JobRecord {
                    worker: "w1".into(),
                    ..job_value("pay", 100, 3)
                },
            ),
            job(
                Intent::Failed,
                2_001,
                111,
                JobRecord {
                    error_message: "try again".into(),
                    ..job_value("pay", 100, 2)
                },
            ),
            job(
                Intent::Failed,
                2_002,
                112,
                JobRecord {
                    error_message: "broken".into(),
                    ..job_value("ship", 100, 0)
                },
            ),
            incident(Intent::Created, 2_003, 151, 100),
            incident(Intent::Created, 2_004, 251, 200),
            incident(Intent::Resolved, 3_000, 151, 100),
            instance(Intent::ElementCompleted, 5_000, 100),
        ],
    );
    store
}

fn job_keys(page: &rill_protocol::history::Page<HistoricJob>) -> Vec<u64> {
    page.items.iter().map(|j| j.key.local()).collect()
}

#[test]
fn jobs_follow_their_records() {
    let store = populated();
    let completed: HistoricJob = get(&store, key(110)).unwrap().unwrap();
    assert_eq!(completed.state, JobState::Completed);
    assert_eq!(completed.worker, "w1");
    assert_eq!(completed.end_time, Some(Timestamp(2_000)));
    assert_eq!(completed.custom_headers["h"], "v");
    let failed: HistoricJob = get(&store, key(111)).unwrap().unwrap();
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(failed.retries, 2);
    assert!(failed.failed_with_retries_left);
    assert_eq!(failed.error_message, "try again");
    assert_eq!(failed.deadline, None, "no deadline once failed");
    assert_eq!(failed.end_time, None);
    let out: HistoricJob = get(&store, key(112)).unwrap().unwrap();
    assert!(!out.failed_with_retries_left);
    // Activation keeps the state (Camunda has no ACTIVATED job state) but sets the worker
    // and deadline.
    let mut store2 = MemoryHistory::new();
    apply(
        &mut store2,
        &[job(Intent::Created, 1, 5, job_value("pay", 100, 3))],
    );
    let created: HistoricJob = get(&store2, key(5)).unwrap().unwrap();
    assert_eq!((created.state, created.deadline), (JobState::Created, None));
}

#[test]
fn execution_listener_jobs_keep_their_kind_and_event_type() {
    let mut store = populated();
    let listener = JobRecord {
        job_kind: rill_protocol::value::JobKind::ExecutionListener,
        job_listener_event_type: rill_protocol::value::JobListenerEventType::End,
        ..job_value("audit", 300, 3)
    };
    apply(&mut store, &[job(Intent::Created, 4_000, 310, listener)]);
    let found: HistoricJob = get(&store, key(310)).unwrap().unwrap();
    assert_eq!(found.kind, rill_protocol::value::JobKind::ExecutionListener);
    assert_eq!(
        found.listener_event_type,
        rill_protocol::value::JobListenerEventType::End
    );
    let by_key = vec![SortBy {
        field: JF::JobKey,
        descending: false,
    }];
    let listeners = search::<HistoricJob, _>(
        &store,
        &query(vec![(JF::Kind, text("EXECUTION_LISTENER"))], by_key.clone()),
    )
    .unwrap();
    assert_eq!(job_keys(&listeners), vec![310]);
    let elements = search::<HistoricJob, _>(
        &store,
        &query(vec![(JF::Kind, text("BPMN_ELEMENT"))], by_key),
    )
    .unwrap();
    assert_eq!(job_keys(&elements), vec![110, 111, 112, 210]);
}

#[test]
fn jobs_are_found_by_type_state_and_instance() {
    let store = populated();
    let by_key = vec![SortBy {
        field: JF::JobKey,
        descending: false,
    }];
    let pay = search::<HistoricJob, _>(
        &store,
        &query(vec![(JF::Type, text("pay"))], by_key.clone()),
    )
    .unwrap();
    assert_eq!(job_keys(&pay), vec![110, 111, 210]);
    let pay_created = search::<HistoricJob, _>(
        &store,
        &query(
            vec![(JF::State, text("CREATED")), (JF::Type, text("pay"))],
            by_key.clone(),
        ),
    )
    .unwrap();
    assert_eq!(job_keys(&pay_created), vec![210]);
    assert_eq!(pay_created.total, 1);
    let of_instance = search::<HistoricJob, _>(
        &store,
        &query(
            vec![(
                JF::ProcessInstanceKey,
                Condition::Eq(FieldValue::Int(key(100).get())),
            )],
            by_key.clone(),
        ),
    )
    .unwrap();
    assert_eq!(job_keys(&of_instance), vec![110, 111, 112]);
    let failed_with_retries = search::<HistoricJob, _>(
        &store,
        &query(
            vec![
                (JF::State, text(JobState::Failed.name())),
                (
                    JF::HasFailedWithRetriesLeft,
                    Condition::Eq(FieldValue::Bool(true)),
                ),
            ],
            by_key.clone(),
        ),
    )
    .unwrap();
    assert_eq!(job_keys(&failed_with_retries), vec![111]);
    let by_worker = search::<HistoricJob, _>(
        &store,
        &query(
            vec![(JF::Worker, Condition::Like("w*".into()))],
            vec![SortBy {
                field: JF::JobKey,
                descending: true,
            }],
        ),
    )
    .unwrap();
    assert_eq!(job_keys(&by_worker), vec![111, 110]);
    let no_worker = search::<HistoricJob, _>(
        &store,
        &query(vec![(JF::Worker, Condition::Exists(false))], by_key),
    )
    .unwrap();
    assert_eq!(job_keys(&no_worker), vec![112, 210]);
}

#[test]
fn incidents_keep_their_resolution_and_creation_time() {
    let store = populated();
    let resolved: HistoricIncident = get(&store, key(151)).unwrap().unwrap();
    assert_eq!(resolved.state, IncidentState::Resolved);
    assert_eq!(resolved.creation_time, Timestamp(2_003));
    assert_eq!(resolved.resolution_time, Some(Timestamp(3_000)));
    assert_eq!(resolved.job_key, Some(key(150)));
    let by_creation = vec![
        SortBy {
            field: IF::CreationTime,
            descending: true,
        },
        SortBy {
            field: IF::IncidentKey,
            descending: true,
        },
    ];
    let all = search::<HistoricIncident, _>(&store, &query(vec![], by_creation.clone())).unwrap();
    let keys: Vec<u64> = all.items.iter().map(|i| i.key.local()).collect();
    assert_eq!(keys, vec![251, 151]);
    let active = search::<HistoricIncident, _>(
        &store,
        &query(vec![(IF::State, text("ACTIVE"))], by_creation.clone()),
    )
    .unwrap();
    assert_eq!(active.items.len(), 1);
    assert_eq!(active.items[0].key, key(251));
    let of_instance = search::<HistoricIncident, _>(
        &store,
        &query(
            vec![
                (
                    IF::ProcessInstanceKey,
                    Condition::Eq(FieldValue::Int(key(100).get())),
                ),
                (IF::State, text("RESOLVED")),
            ],
            by_creation,
        ),
    )
    .unwrap();
    assert_eq!(of_instance.items.len(), 1);
    assert_eq!(of_instance.items[0].key, key(151));
    // The instance's open incident count went up and down again.
    let instance = process_instance(&store, key(100)).unwrap().unwrap();
    assert_eq!(instance.incidents, 0);
    let other = process_instance(&store, key(200)).unwrap().unwrap();
    assert_eq!(other.incidents, 1);
}

#[test]
fn expiry_removes_jobs_and_incidents_with_their_instance_in_small_steps() {
    let mut store = populated();
    let before = store.len();
    // A budget of two: two of instance 100's three jobs, nothing else.
    let writes = {
        let mut writer = HistoryWriter::new(&store);
        assert_eq!(writer.expire(Timestamp(6_000), 2).unwrap(), 2);
        writer.into_writes()
    };
    store.apply(writes);
    assert!(store.len() < before);
    assert!(process_instance(&store, key(100)).unwrap().is_some());
    assert_eq!(oldest_finished(&store).unwrap(), Some(Timestamp(5_000)));
    // Then the rest: the last job, the incident, the instance.
    let writes = {
        let mut writer = HistoryWriter::new(&store);
        assert_eq!(writer.expire(Timestamp(6_000), 100).unwrap(), 3);
        writer.into_writes()
    };
    store.apply(writes);
    assert!(process_instance(&store, key(100)).unwrap().is_none());
    assert!(get::<HistoricJob, _>(&store, key(112)).unwrap().is_none());
    assert!(
        get::<HistoricIncident, _>(&store, key(151))
            .unwrap()
            .is_none()
    );
    assert_eq!(oldest_finished(&store).unwrap(), None);
    // What is left is exactly what instances 200 and 300 own: no stray index keys.
    let jobs =
        search::<HistoricJob, _>(&store, &query(vec![(JF::Type, text("pay"))], vec![])).unwrap();
    assert_eq!(job_keys(&jobs), vec![210]);
    let mut fresh = MemoryHistory::new();
    apply(
        &mut fresh,
        &[
            instance(Intent::ElementActivating, 1_001, 200),
            instance(Intent::ElementActivating, 1_002, 300),
            job(Intent::Created, 1_103, 210, job_value("pay", 200, 3)),
            incident(Intent::Created, 2_004, 251, 200),
        ],
    );
    assert_eq!(store.len(), fresh.len());
}

pub(crate) fn element(
    intent: Intent,
    time: i64,
    n: u64,
    instance: u64,
    element_type: BpmnElementType,
) -> Record {
    record(
        intent,
        time,
        key(n),
        RecordValue::ProcessInstance(ProcessInstanceRecord {
            bpmn_element_type: element_type,
            element_id: format!("e{n}"),
            bpmn_process_id: "p".into(),
            version: 1,
            process_definition_key: 7,
            process_instance_key: key(instance).get(),
            flow_scope_key: key(instance).get(),
            bpmn_event_type: BpmnEventType::Unspecified,
            parent_process_instance_key: -1,
            parent_element_instance_key: -1,
            tenant_id: "<default>".into(),
            root_process_instance_key: key(instance).get(),
            tags: Vec::new(),
            tree_path: None,
        }),
    )
}

fn variable(intent: Intent, n: u64, instance: u64, name: &str, value: &str) -> Record {
    record(
        intent,
        1_000 + n as i64,
        key(n),
        RecordValue::Variable(rill_protocol::value::VariableRecord {
            name: name.into(),
            value: value.into(),
            scope_key: key(instance).get(),
            process_instance_key: key(instance).get(),
            process_definition_key: 7,
            bpmn_process_id: "p".into(),
            tenant_id: "<default>".into(),
            root_process_instance_key: key(instance).get(),
        }),
    )
}

#[test]
fn variables_keep_their_latest_value_and_are_found_by_instance_and_name() {
    use rill_protocol::history::{HistoricVariable, VariableField as VF};
    let mut store = MemoryHistory::new();
    apply(
        &mut store,
        &[
            instance(Intent::ElementActivating, 1_000, 100),
            instance(Intent::ElementActivating, 1_001, 200),
            variable(Intent::Created, 101, 100, "a", "1"),
            variable(Intent::Created, 102, 100, "b", "\"x\""),
            variable(Intent::Created, 201, 200, "a", "2"),
            variable(Intent::Updated, 101, 100, "a", "3"),
        ],
    );
    let a: HistoricVariable = get(&store, key(101)).unwrap().unwrap();
    assert_eq!(a.value, "3");
    let by_key = vec![SortBy {
        field: VF::VariableKey,
        descending: false,
    }];
    let named =
        search::<HistoricVariable, _>(&store, &query(vec![(VF::Name, text("a"))], by_key.clone()))
            .unwrap();
    let keys: Vec<u64> = named.items.iter().map(|v| v.key.local()).collect();
    assert_eq!(keys, vec![101, 201]);
    let of_instance = search::<HistoricVariable, _>(
        &store,
        &query(
            vec![
                (
                    VF::ProcessInstanceKey,
                    Condition::Eq(FieldValue::Int(key(100).get())),
                ),
                (VF::Value, Condition::Like("\"*".into())),
            ],
            by_key,
        ),
    )
    .unwrap();
    let keys: Vec<u64> = of_instance.items.iter().map(|v| v.key.local()).collect();
    assert_eq!(keys, vec![102]);
}

#[test]
fn element_instances_follow_their_lifecycle_and_incidents() {
    use rill_protocol::history::{
        ElementInstanceField as EF, ElementState, HistoricElementInstance,
    };
    let mut store = MemoryHistory::new();
    apply(
        &mut store,
        &[
            instance(Intent::ElementActivating, 1_000, 100),
            element(
                Intent::ElementActivating,
                1_001,
                101,
                100,
                BpmnElementType::StartEvent,
            ),
            element(
                Intent::ElementCompleted,
                1_002,
                101,
                100,
                BpmnElementType::StartEvent,
            ),
            element(
                Intent::ElementActivating,
                1_003,
                110,
                100,
                BpmnElementType::ServiceTask,
            ),
            job(Intent::Created, 1_004, 150, job_value("pay", 100, 0)),
            // The incident names element instance 101 + 0 (key(instance + 1)) by default;
            // here it is about the task.
            record(
                Intent::Created,
                1_005,
                key(151),
                RecordValue::Incident(IncidentRecord {
                    error_type: IncidentErrorType::JobNoRetries,
                    error_message: "no retries left".into(),
                    bpmn_process_id: "p".into(),
                    process_definition_key: 7,
                    process_instance_key: key(100).get(),
                    element_id: "e110".into(),
                    element_instance_key: key(110).get(),
                    job_key: key(150).get(),
                    variable_scope_key: key(110).get(),
                    tenant_id: "<default>".into(),
                    element_instance_path: Vec::new(),
                    process_definition_path: Vec::new(),
                    calling_element_path: Vec::new(),
                    root_process_instance_key: key(100).get(),
                }),
            ),
        ],
    );
    // The process itself is the process instance, not an element instance.
    assert!(
        get::<HistoricElementInstance, _>(&store, key(100))
            .unwrap()
            .is_none()
    );
    let start: HistoricElementInstance = get(&store, key(101)).unwrap().unwrap();
    assert_eq!(start.state, ElementState::Completed);
    assert_eq!(start.end_date, Some(Timestamp(1_002)));
    let task: HistoricElementInstance = get(&store, key(110)).unwrap().unwrap();
    assert_eq!(
        (task.state, task.incident_key),
        (ElementState::Active, Some(key(151)))
    );
    let active = search::<HistoricElementInstance, _>(
        &store,
        &query(
            vec![
                (
                    EF::ProcessInstanceKey,
                    Condition::Eq(FieldValue::Int(key(100).get())),
                ),
                (EF::State, text("ACTIVE")),
            ],
            vec![],
        ),
    )
    .unwrap();
    assert_eq!(active.items.len(), 1);
    assert_eq!(active.items[0].key, key(110));
    let typed = search::<HistoricElementInstance, _>(
        &store,
        &query(vec![(EF::Type, text("START_EVENT"))], vec![]),
    )
    .unwrap();
    assert_eq!(typed.items.len(), 1);
    // Resolving clears it; the instance finishing lets retention take it all.
    apply(
        &mut store,
        &[
            incident(Intent::Resolved, 1_006, 151, 100),
            record(
                Intent::Resolved,
                1_006,
                key(151),
                RecordValue::Incident(IncidentRecord {
                    error_type: IncidentErrorType::JobNoRetries,
                    error_message: "no retries left".into(),
                    bpmn_process_id: "p".into(),
                    process_definition_key: 7,
                    process_instance_key: key(100).get(),
                    element_id: "e110".into(),
                    element_instance_key: key(110).get(),
                    job_key: key(150).get(),
                    variable_scope_key: key(110).get(),
                    tenant_id: "<default>".into(),
                    element_instance_path: Vec::new(),
                    process_definition_path: Vec::new(),
                    calling_element_path: Vec::new(),
                    root_process_instance_key: key(100).get(),
                }),
            ),
            element(
                Intent::ElementTerminated,
                1_007,
                110,
                100,
                BpmnElementType::ServiceTask,
            ),
            variable(Intent::Created, 120, 100, "v", "1"),
            instance(Intent::ElementTerminated, 1_008, 100),
        ],
    );
    let task: HistoricElementInstance = get(&store, key(110)).unwrap().unwrap();
    assert_eq!(
        (task.state, task.incident_key),
        (ElementState::Terminated, None)
    );
    let writes = {
        let mut writer = HistoryWriter::new(&store);
        writer.expire(Timestamp(10_000), 100).unwrap();
        writer.into_writes()
    };
    store.apply(writes);
    assert!(
        store.is_empty(),
        "every entry and index key goes with the instance"
    );
}

#[test]
fn an_element_that_starts_and_ends_in_one_batch_writes_no_tombstones() {
    let base = MemoryHistory::new();
    let mut writer = HistoryWriter::new(&base);
    for r in [
        instance(Intent::ElementActivating, 1_000, 100),
        element(
            Intent::ElementActivating,
            1_001,
            101,
            100,
            BpmnElementType::StartEvent,
        ),
        element(
            Intent::ElementCompleted,
            1_002,
            101,
            100,
            BpmnElementType::StartEvent,
        ),
    ] {
        writer.index(&r).unwrap();
    }
    let writes = writer.into_writes();
    let deletes: Vec<_> = writes.iter().filter(|(_, v)| v.is_none()).collect();
    assert!(deletes.is_empty(), "tombstones for new keys: {deletes:?}");

    // In a later batch the entry is in the base: its index keys stay, carrying the new
    // state as their value.
    let mut store = MemoryHistory::new();
    store.apply(writes);
    let before = store.len();
    let mut writer = HistoryWriter::new(&store);
    writer
        .index(&element(
            Intent::ElementActivating,
            1_003,
            102,
            100,
            BpmnElementType::ServiceTask,
        ))
        .unwrap();
    let writes = writer.into_writes();
    store.apply(writes);
    let mut writer = HistoryWriter::new(&store);
    writer
        .index(&element(
            Intent::ElementCompleted,
            1_004,
            102,
            100,
            BpmnElementType::ServiceTask,
        ))
        .unwrap();
    let writes = writer.into_writes();
    assert!(
        writes.values().all(Option::is_some),
        "no index key moves: {writes:?}"
    );
    assert_eq!(
        writes.len(),
        3,
        "the entry and the values of its two indexes: {writes:?}"
    );
    store.apply(writes);
    let mut rebuilt = MemoryHistory::new();
    apply(
        &mut rebuilt,
        &[
            instance(Intent::ElementActivating, 1_000, 100),
            element(
                Intent::ElementActivating,
                1_001,
                101,
                100,
                BpmnElementType::StartEvent,
            ),
            element(
                Intent::ElementCompleted,
                1_002,
                101,
                100,
                BpmnElementType::StartEvent,
            ),
            element(
                Intent::ElementActivating,
                1_003,
                102,
                100,
                BpmnElementType::ServiceTask,
            ),
            element(
                Intent::ElementCompleted,
                1_004,
                102,
                100,
                BpmnElementType::ServiceTask,
            ),
        ],
    );
    assert!(store.len() > before);
    assert_eq!(
        store.len(),
        rebuilt.len(),
        "same entries batch by batch as in one batch"
    );
}
