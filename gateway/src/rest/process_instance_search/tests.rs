//! Merging and paging across partitions, with each partition's page computed by the real
//! history store (`rill-history` in memory) from records, as a broker would.

use rill_history::{HistoryWriter, MemoryHistory, search_process_instances};
use rill_protocol::PartitionId;
use rill_protocol::history::HistoricProcessInstance;
use rill_protocol::value::{BpmnElementType, BpmnEventType, ProcessInstanceRecord};
use rill_protocol::{
    Intent, Key, Position, Record, RecordType, RecordValue, RejectionType, Timestamp,
};
use serde_json::{Value, json};

use crate::ops::ClientError;
use crate::rest::history_search::{SearchBody, plan};

/// Three partitions; instance n of partition p starts at 1000 + n * 7 + p (so start
/// dates interleave across partitions), "order" when n is odd; every third completes.
/// Even instances are tagged `even`, and every fourth `batch:1` too.
fn partitions() -> Vec<MemoryHistory> {
    (1..=3u16)
        .map(|p| {
            let mut store = MemoryHistory::new();
            let mut records = Vec::new();
            for n in 1..=40u64 {
                let key = Key::new(PartitionId(p), n);
                let value = |_: ()| ProcessInstanceRecord {
                    bpmn_element_type: BpmnElementType::Process,
                    element_id: "p".into(),
                    bpmn_process_id: if n % 2 == 1 { "order" } else { "invoice" }.into(),
                    version: 1,
                    process_definition_key: 7,
                    process_instance_key: key.get(),
                    flow_scope_key: -1,
                    bpmn_event_type: BpmnEventType::Unspecified,
                    parent_process_instance_key: -1,
                    parent_element_instance_key: -1,
                    tenant_id: "<default>".into(),
                    root_process_instance_key: key.get(),
                    tags: match n % 4 {
                        0 => vec!["even".into(), "batch:1".into()],
                        2 => vec!["even".into()],
                        _ => Vec::new(),
                    },
                    tree_path: None,
                };
                let at = 1_000 + n as i64 * 7 + i64::from(p);
                records.push(record(Intent::ElementActivating, at, value(())));
                if n % 3 == 0 {
                    records.push(record(Intent::ElementCompleted, at + 500, value(())));
                }
            }
            let writes = {
                let mut writer = HistoryWriter::new(&store);
                for r in &records {
                    writer.index(r).unwrap();
                }
                writer.into_writes()
            };
            store.apply(writes);
            store
        })
        .collect()
}

fn record(intent: Intent, at: i64, value: ProcessInstanceRecord) -> Record {
    Record {
        position: Position(1),
        source_record_position: None,
        key: Key(value.process_instance_key),
        timestamp: Timestamp(at),
        record_type: RecordType::Event,
        value_type: rill_protocol::ValueType::ProcessInstance,
        intent,
        partition_id: PartitionId(1),
        rejection_type: RejectionType::NullVal,
        rejection_reason: String::new(),
        operation_reference: -1,
        broker_version: "test".into(),
        value: RecordValue::ProcessInstance(value),
    }
}

/// What the gateway answers for `body`, asking every partition as `search` does.
fn run(stores: &[MemoryHistory], body: Value) -> Result<Value, ClientError> {
    let body: SearchBody = serde_json::from_value(body).unwrap();
    let plan = plan::<HistoricProcessInstance>(body)?;
    let query = plan.partition_search();
    let pages = stores
        .iter()
        .map(|s| search_process_instances(s, &query).unwrap())
        .collect();
    Ok(serde_json::to_value(plan.merge(pages)).unwrap())
}

fn keys(result: &Value) -> Vec<String> {
    result["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["processInstanceKey"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn cursors_walk_every_match_once_forwards_and_backwards() {
    let stores = partitions();
    for sort in [
        json!([]),
        json!([{"field": "startDate", "order": "DESC"}]),
        json!([{"field": "state"}, {"field": "processInstanceKey", "order": "DESC"}]),
        json!([{"field": "endDate", "order": "DESC"}]),
    ] {
        let filter = json!({"processDefinitionId": "order"});
        let first = run(
            &stores,
            json!({"filter": filter, "sort": sort, "page": {"limit": 7}}),
        )
        .unwrap();
        assert_eq!(first["page"]["totalItems"], 60, "{sort}");
        let mut forward = keys(&first);
        let mut pages = vec![first.clone()];
        let mut page = first;
        while let Some(end) = page["page"]["endCursor"].as_str().map(str::to_owned) {
            page = run(
                &stores,
                json!({"filter": filter, "sort": sort, "page": {"limit": 7, "after": end}}),
            )
            .unwrap();
            if keys(&page).is_empty() {
                // An empty page has no cursors (8.8's are optional, not nullable).
                assert!(page["page"].get("endCursor").is_none(), "{page}");
                assert!(page["page"].get("startCursor").is_none(), "{page}");
                break;
            }
            forward.extend(keys(&page));
            pages.push(page.clone());
        }
        let mut unique = forward.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(forward.len(), 60, "{sort}: nothing repeated");
        assert_eq!(unique.len(), 60, "{sort}: nothing skipped");
        // The same order as one big page.
        let all = run(
            &stores,
            json!({"filter": filter, "sort": sort, "page": {"limit": 100}}),
        )
        .unwrap();
        assert_eq!(keys(&all), forward, "{sort}");
        // Offsets agree with it too.
        let offset = run(
            &stores,
            json!({"filter": filter, "sort": sort, "page": {"from": 14, "limit": 7}}),
        )
        .unwrap();
        assert_eq!(keys(&offset), forward[14..21].to_vec(), "{sort}");

        // Backwards from the last page, page by page, gives the same pages.
        let mut backward: Vec<Vec<String>> = Vec::new();
        let mut page = pages.last().unwrap().clone();
        backward.push(keys(&page));
        while let Some(start) = page["page"]["startCursor"].as_str().map(str::to_owned) {
            page = run(
                &stores,
                json!({"filter": filter, "sort": sort, "page": {"limit": 7, "before": start}}),
            )
            .unwrap();
            if keys(&page).is_empty() {
                break;
            }
            backward.push(keys(&page));
        }
        backward.reverse();
        let expected: Vec<Vec<String>> = pages.iter().map(keys).collect();
        // Backwards pages are aligned to the end, so compare the walk, not the cut.
        assert_eq!(backward.concat(), expected.concat(), "{sort}");
    }
}

#[test]
fn filters_by_state_and_sorts_by_start_date_across_partitions() {
    let stores = partitions();
    let result = run(
        &stores,
        json!({
            "filter": {"state": "COMPLETED", "processDefinitionId": {"$in": ["order", "invoice"]}},
            "sort": [{"field": "startDate", "order": "ASC"}],
            "page": {"limit": 5}
        }),
    )
    .unwrap();
    assert_eq!(result["page"]["totalItems"], 39);
    let items = result["items"].as_array().unwrap();
    let dates: Vec<&str> = items
        .iter()
        .map(|i| i["startDate"].as_str().unwrap())
        .collect();
    let mut sorted = dates.clone();
    sorted.sort();
    assert_eq!(dates, sorted);
    // The earliest completed: n = 3 on partitions 1, 2, 3, then n = 6 on 1 and 2.
    let partitions: Vec<u16> = keys(&result)
        .iter()
        .map(|k| Key(k.parse().unwrap()).partition().get())
        .collect();
    assert_eq!(partitions, vec![1, 2, 3, 1, 2]);
    assert!(
        items
            .iter()
            .all(|i| i["state"] == "COMPLETED" && i["endDate"].is_string())
    );
}

#[test]
fn bad_requests_name_the_field() {
    let stores = partitions();
    let cases = [
        (json!({"filter": {"variables": []}}), "filter.variables"),
        (json!({"filter": {"nope": 1}}), "filter.nope"),
        (json!({"filter": {"state": "RUNNING"}}), "filter.state"),
        (
            json!({"filter": {"state": {"$gt": "ACTIVE"}}}),
            "filter.state.$gt",
        ),
        (
            json!({"filter": {"processInstanceKey": 12}}),
            "filter.processInstanceKey",
        ),
        (
            json!({"filter": {"startDate": {"$gte": "yesterday"}}}),
            "filter.startDate.$gte",
        ),
        (
            json!({"filter": {"processDefinitionVersion": {"$in": [1, "2"]}}}),
            "filter.processDefinitionVersion.$in[1]",
        ),
        (
            json!({"filter": {"startDate": "2025-01-01T00:00:00+24:00"}}),
            "filter.startDate",
        ),
        (
            json!({"filter": {"endDate": "2025-01-01T00:00:00Z+01:00"}}),
            "filter.endDate",
        ),
        (json!({"sort": [{"field": "colour"}]}), "sort[0].field"),
        (
            json!({"sort": [{"field": "state", "order": "UP"}]}),
            "sort[0].order",
        ),
        (json!({"page": {"limit": 0}}), "page.limit"),
        (json!({"page": {"after": "not-a-cursor"}}), "page.after"),
        (json!({"page": {"after": "a", "before": "b"}}), "page.after"),
        (json!({"page": {"from": 3, "after": "a"}}), "page.from"),
    ];
    for (body, field) in cases {
        let problem = crate::rest::Problem::from(run(&stores, body.clone()).unwrap_err());
        assert_eq!(
            problem.status,
            axum::http::StatusCode::BAD_REQUEST,
            "{body}"
        );
        assert!(problem.detail.contains(field), "{body}: {}", problem.detail);
    }
}

#[test]
fn operators_select_what_they_say() {
    let stores = partitions();
    let count = |filter: Value| {
        run(&stores, json!({"filter": filter})).unwrap()["page"]["totalItems"].clone()
    };
    assert_eq!(count(json!({"processDefinitionId": {"$like": "ord*"}})), 60);
    assert_eq!(count(json!({"processDefinitionId": {"$neq": "order"}})), 60);
    assert_eq!(count(json!({"state": {"$notIn": ["ACTIVE"]}})), 39);
    assert_eq!(count(json!({"endDate": {"$exists": true}})), 39);
    assert_eq!(
        count(json!({"parentProcessInstanceKey": {"$exists": false}})),
        120
    );
    assert_eq!(count(json!({"processDefinitionVersion": {"$gte": 2}})), 0);
    assert_eq!(count(json!({"hasIncident": false})), 120);
    // Started before 1000 + 10 * 7 + 1 ms: n < 10 everywhere, and n = 10 on partition 1.
    let cutoff = crate::rest::date_text(Timestamp(1_071));
    assert_eq!(count(json!({"startDate": {"$lte": cutoff}})), 28);
    assert_eq!(count(json!({"startDate": {"$lt": cutoff}})), 27);
    // The same instant with an offset, as RFC 3339 allows.
    let shifted = "1970-01-01T02:00:01.071+02:00";
    assert_eq!(count(json!({"startDate": {"$lte": shifted}})), 28);
    assert_eq!(count(json!({"startDate": {"$lt": shifted}})), 27);
    let key = Key::new(PartitionId(2), 5).get().to_string();
    let one = run(&stores, json!({"filter": {"processInstanceKey": key}})).unwrap();
    assert_eq!(keys(&one), vec![key]);
}

#[test]
fn a_tags_filter_keeps_the_instances_with_every_tag() {
    let stores = partitions();
    let count = |filter: Value| {
        run(&stores, json!({"filter": filter})).unwrap()["page"]["totalItems"].clone()
    };
    assert_eq!(count(json!({"tags": ["even"]})), 60);
    assert_eq!(count(json!({"tags": ["batch:1"]})), 30);
    assert_eq!(count(json!({"tags": ["even", "batch:1"]})), 30);
    assert_eq!(count(json!({"tags": ["even", "odd"]})), 0);
    assert_eq!(count(json!({"tags": []})), 120);
    let tagged = run(
        &stores,
        json!({"filter": {"tags": ["batch:1"], "processInstanceKey": Key::new(PartitionId(1), 4).get().to_string()}}),
    )
    .unwrap();
    assert_eq!(tagged["items"][0]["tags"], json!(["even", "batch:1"]));

    for (body, named) in [
        (json!({"filter": {"tags": ["1st"]}}), "'1st'"),
        (json!({"filter": {"tags": "even"}}), "filter.tags"),
        (json!({"filter": {"tags": [1]}}), "filter.tags"),
        (json!({"sort": [{"field": "tags"}]}), "sort[0].field"),
    ] {
        let problem = crate::rest::Problem::from(run(&stores, body.clone()).unwrap_err());
        assert_eq!(
            problem.status,
            axum::http::StatusCode::BAD_REQUEST,
            "{body}"
        );
        assert!(problem.detail.contains(named), "{body}: {}", problem.detail);
    }
}
