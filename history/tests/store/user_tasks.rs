//! User tasks in the store: fed from USER_TASK records, named from the deployed model,
//! found by state, assignee and candidates, and removed with their instance.

use rill_protocol::history::{Condition, FieldValue, HistoricUserTask, SortBy, UserTaskField as F};
use rill_protocol::value::{ProcessRecord, UserTaskRecord};
use rill_protocol::{Blob, Intent, Key, Record, RecordValue, Timestamp};

use crate::entities::{apply, instance, key, query, record};
use rill_history::*;

const MODEL: &str = r#"<definitions><process id="p" name="Orders"><userTask id="approve" name="Approve the order"/></process></definitions>"#;

fn definition() -> Record {
    record(
        Intent::Created,
        500,
        Key(7),
        RecordValue::Process(ProcessRecord {
            bpmn_process_id: "p".into(),
            version: 1,
            process_definition_key: 7,
            resource_name: "p.bpmn".into(),
            checksum: Blob(vec![0; 16]),
            resource: Blob(MODEL.as_bytes().to_vec()),
            is_duplicate: false,
            tenant_id: "<default>".into(),
            version_tag: String::new(),
        }),
    )
}

fn task(
    intent: Intent,
    time: i64,
    n: u64,
    instance: u64,
    change: impl Fn(&mut UserTaskRecord),
) -> Record {
    let mut value = UserTaskRecord {
        user_task_key: key(n).get(),
        assignee: String::new(),
        candidate_groups_list: vec!["sales".into(), "managers".into()],
        candidate_users_list: Vec::new(),
        due_date: "2026-12-31T18:00:00+01:00".into(),
        follow_up_date: String::new(),
        form_key: -1,
        external_form_reference: String::new(),
        variables: rill_protocol::JsonValue::empty_object(),
        custom_headers: Default::default(),
        bpmn_process_id: "p".into(),
        process_definition_version: 1,
        process_definition_key: 7,
        process_instance_key: key(instance).get(),
        element_id: "approve".into(),
        element_instance_key: key(n - 1).get(),
        tenant_id: "<default>".into(),
        changed_attributes: Vec::new(),
        action: String::new(),
        creation_timestamp: time,
        priority: 50,
        root_process_instance_key: key(instance).get(),
        tags: Vec::new(),
    };
    change(&mut value);
    record(intent, time, key(n), RecordValue::UserTask(value))
}

fn keys(store: &MemoryHistory, filter: Vec<(F, Condition)>) -> Vec<u64> {
    let sort = vec![SortBy {
        field: F::Priority,
        descending: true,
    }];
    search::<HistoricUserTask, _>(store, &query(filter, sort))
        .unwrap()
        .items
        .iter()
        .map(|t| t.key.local())
        .collect()
}

fn text(s: &str) -> Condition {
    Condition::Eq(FieldValue::Text(s.into()))
}

#[test]
fn user_tasks_follow_their_records_and_go_with_their_instance() {
    let mut store = MemoryHistory::new();
    apply(
        &mut store,
        &[
            definition(),
            instance(Intent::ElementActivating, 1_000, 100),
            task(Intent::Created, 1_010, 102, 100, |_| {}),
            task(Intent::Assigned, 1_020, 102, 100, |t| {
                t.assignee = "ann".into()
            }),
            instance(Intent::ElementActivating, 1_100, 200),
            task(Intent::Created, 1_110, 202, 200, |t| {
                t.candidate_groups_list = vec!["support".into()];
                t.priority = 80;
            }),
        ],
    );
    let first: HistoricUserTask = get(&store, key(102)).unwrap().unwrap();
    assert_eq!(first.name, "Approve the order", "{first:?}");
    assert_eq!(first.process_name.as_deref(), Some("Orders"));
    assert_eq!(first.assignee, "ann");
    assert_eq!(first.creation_date, Timestamp(1_010));
    // The due date is compared as an instant, whatever its offset.
    assert_eq!(
        rill_protocol::history::Historic::field(&first, F::DueDate),
        Some(FieldValue::Int(1_798_736_400_000))
    );

    assert_eq!(
        keys(&store, vec![]),
        vec![202, 102],
        "by priority, highest first"
    );
    assert_eq!(
        keys(&store, vec![(F::CandidateGroup, text("managers"))]),
        vec![102]
    );
    assert_eq!(
        keys(
            &store,
            vec![(
                F::CandidateGroup,
                Condition::Neq(FieldValue::Text("sales".into()))
            )]
        ),
        vec![202]
    );
    assert_eq!(keys(&store, vec![(F::Assignee, text("ann"))]), vec![102]);
    assert_eq!(
        keys(&store, vec![(F::Assignee, Condition::Exists(false))]),
        vec![202]
    );

    // Completed and canceled; the finished instance's task expires with it.
    apply(
        &mut store,
        &[
            task(Intent::Completed, 2_000, 102, 100, |t| {
                t.assignee = "ann".into()
            }),
            instance(Intent::ElementCompleted, 2_001, 100),
            task(Intent::Canceling, 2_050, 202, 200, |_| {}),
        ],
    );
    // Canceling listeners run: the task reads CANCELING until CANCELED.
    assert_eq!(keys(&store, vec![(F::State, text("CANCELING"))]), vec![202]);
    let canceling: HistoricUserTask = get(&store, key(202)).unwrap().unwrap();
    assert_eq!(
        (canceling.state.name(), canceling.completion_date),
        ("CANCELING", None)
    );
    apply(
        &mut store,
        &[task(Intent::Canceled, 2_100, 202, 200, |_| {})],
    );
    let done: HistoricUserTask = get(&store, key(102)).unwrap().unwrap();
    assert_eq!(
        (done.state.name(), done.completion_date),
        ("COMPLETED", Some(Timestamp(2_000)))
    );
    assert_eq!(keys(&store, vec![(F::State, text("CANCELED"))]), vec![202]);
    let writes = {
        let mut writer = HistoryWriter::new(&store);
        writer.expire(Timestamp(3_000), 100).unwrap();
        writer.into_writes()
    };
    store.apply(writes);
    assert!(
        get::<HistoricUserTask, _>(&store, key(102))
            .unwrap()
            .is_none()
    );
    assert_eq!(keys(&store, vec![]), vec![202]);
}
