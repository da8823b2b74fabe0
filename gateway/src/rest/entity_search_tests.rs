//! Job and incident searches across partitions: each partition's page computed by the
//! real history store (`rill-history` in memory) from records, merged and paged by the
//! same machinery as process instances.

use std::collections::BTreeMap;

use rill_history::{HistoryWriter, MemoryHistory, Table, search};
use rill_protocol::history::{HistoricIncident, HistoricJob};
use rill_protocol::value::{IncidentErrorType, IncidentRecord, JobRecord};
use rill_protocol::{
    Intent, JsonValue, Key, PartitionId, Position, Record, RecordType, RecordValue, RejectionType,
    Timestamp,
};
use serde_json::{Value, json};

use super::history_search::{SearchBody, SearchEntity, plan};
use crate::ops::ClientError;

fn record(intent: Intent, at: i64, key: Key, value: RecordValue) -> Record {
    Record {
        position: Position(1),
        source_record_position: None,
        key,
        timestamp: Timestamp(at),
        record_type: RecordType::Event,
        value_type: value.value_type(),
        intent,
        partition_id: key.partition(),
        rejection_type: RejectionType::NullVal,
        rejection_reason: String::new(),
        operation_reference: -1,
        broker_version: "test".into(),
        value,
    }
}

/// Three partitions, 30 jobs each: job n of partition p has type "pay" when n is even,
/// else "ship"; every third is completed; every fifth failed without retries, with an
/// incident (key n + 1000) created at 2000 + n * 3 + p, resolved when n is a multiple of
/// ten.
fn partitions() -> Vec<MemoryHistory> {
    (1..=3u16)
        .map(|p| {
            let mut records = Vec::new();
            for n in 1..=30u64 {
                let key = Key::new(PartitionId(p), n);
                let job = |retries: i32| JobRecord {
                    job_type: if n % 2 == 0 { "pay" } else { "ship" }.into(),
                    element_id: "task".into(),
                    element_instance_key: Key::new(PartitionId(p), 500 + n).get(),
                    bpmn_process_id: "order".into(),
                    process_definition_version: 1,
                    process_definition_key: 7,
                    process_instance_key: Key::new(PartitionId(p), 600 + n).get(),
                    worker: String::new(),
                    retries,
                    retry_backoff: 0,
                    recurring_time: -1,
                    deadline: -1,
                    timeout: -1,
                    error_message: String::new(),
                    error_code: String::new(),
                    custom_headers: BTreeMap::new(),
                    variables: JsonValue::from(json!({})),
                    tenant_id: "<default>".into(),
                    job_kind: Default::default(),
                    job_listener_event_type: Default::default(),
                    result: Default::default(),
                    root_process_instance_key: Key::new(PartitionId(p), 600 + n).get(),
                    tags: Vec::new(),
                };
                let at = 1_000 + n as i64 * 3 + i64::from(p);
                records.push(record(Intent::Created, at, key, RecordValue::Job(job(3))));
                if n % 3 == 0 {
                    records.push(record(
                        Intent::Completed,
                        at + 1,
                        key,
                        RecordValue::Job(job(3)),
                    ));
                } else if n % 5 == 0 {
                    records.push(record(
                        Intent::Failed,
                        at + 1,
                        key,
                        RecordValue::Job(job(0)),
                    ));
                    let incident_key = Key::new(PartitionId(p), 1_000 + n);
                    let incident = RecordValue::Incident(IncidentRecord {
                        error_type: IncidentErrorType::JobNoRetries,
                        error_message: format!("job {n} failed"),
                        bpmn_process_id: "order".into(),
                        process_definition_key: 7,
                        process_instance_key: Key::new(PartitionId(p), 600 + n).get(),
                        element_id: "task".into(),
                        element_instance_key: Key::new(PartitionId(p), 500 + n).get(),
                        job_key: key.get(),
                        variable_scope_key: -1,
                        tenant_id: "<default>".into(),
                        element_instance_path: Vec::new(),
                        process_definition_path: Vec::new(),
                        calling_element_path: Vec::new(),
                        root_process_instance_key: Key::new(PartitionId(p), 600 + n).get(),
                    });
                    let created = 2_000 + n as i64 * 3 + i64::from(p);
                    records.push(record(
                        Intent::Created,
                        created,
                        incident_key,
                        incident.clone(),
                    ));
                    if n % 10 == 0 {
                        records.push(record(
                            Intent::Resolved,
                            created + 1,
                            incident_key,
                            incident,
                        ));
                    }
                }
            }
            let mut store = MemoryHistory::new();
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

fn run<E: SearchEntity + Table>(
    stores: &[MemoryHistory],
    body: Value,
) -> Result<Value, ClientError> {
    let body: SearchBody = serde_json::from_value(body).unwrap();
    let plan = plan::<E>(body)?;
    let query = plan.partition_search();
    let pages = stores
        .iter()
        .map(|s| search::<E, _>(s, &query).unwrap())
        .collect();
    Ok(serde_json::to_value(plan.merge(pages)).unwrap())
}

fn field(result: &Value, name: &str) -> Vec<String> {
    result["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i[name].as_str().unwrap().to_owned())
        .collect()
}

/// Walks every page after the first, forwards.
fn walk<E: SearchEntity + Table>(stores: &[MemoryHistory], body: Value, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut body = body;
    loop {
        let page = run::<E>(stores, body.clone()).unwrap();
        let keys = field(&page, key);
        if keys.is_empty() {
            return out;
        }
        out.extend(keys);
        body["page"]["after"] = page["page"]["endCursor"].clone();
    }
}

#[test]
fn job_searches_filter_sort_and_page_across_partitions() {
    let stores = partitions();
    let pay = run::<HistoricJob>(&stores, json!({"filter": {"type": "pay"}})).unwrap();
    assert_eq!(pay["page"]["totalItems"], 45);
    let completed_pay = run::<HistoricJob>(
        &stores,
        json!({"filter": {"type": "pay", "state": "COMPLETED"}}),
    )
    .unwrap();
    // n even and a multiple of three: 6, 12, 18, 24, 30 on each partition.
    assert_eq!(completed_pay["page"]["totalItems"], 15);
    let item = &completed_pay["items"][0];
    assert_eq!(item["state"], "COMPLETED");
    assert_eq!(item["kind"], "BPMN_ELEMENT");
    assert_eq!(item["listenerEventType"], "UNSPECIFIED");
    assert!(item["endTime"].is_string(), "{item}");
    // Nullable in 8.8: null without a value; endTime (not nullable) is left out then.
    assert!(item["deadline"].is_null(), "{item}");
    assert!(item["errorCode"].is_null(), "{item}");
    assert_eq!(item["customHeaders"], json!({}));
    let failed = run::<HistoricJob>(
        &stores,
        json!({"filter": {"state": {"$in": ["FAILED"]}, "retries": {"$lte": 0}}}),
    )
    .unwrap();
    // Multiples of five that are not multiples of three: 5, 10, 20, 25.
    assert_eq!(failed["page"]["totalItems"], 12);
    // Sorted by type then key descending, walked with cursors: all 90, each once, in order.
    let sort = json!([{"field": "type"}, {"field": "jobKey", "order": "DESC"}]);
    let walked = walk::<HistoricJob>(
        &stores,
        json!({"sort": sort, "page": {"limit": 7}}),
        "jobKey",
    );
    let all = run::<HistoricJob>(&stores, json!({"sort": sort, "page": {"limit": 1000}})).unwrap();
    assert_eq!(walked, field(&all, "jobKey"));
    assert_eq!(walked.len(), 90);
    let types = field(&all, "type");
    assert!(types[..45].iter().all(|t| t == "pay") && types[45..].iter().all(|t| t == "ship"));
    // Backwards from the end of the walk gives the page before it.
    let last = run::<HistoricJob>(
        &stores,
        json!({"sort": sort, "page": {"from": 83, "limit": 7}}),
    )
    .unwrap();
    let before = run::<HistoricJob>(
        &stores,
        json!({"sort": sort, "page": {"limit": 7, "before": last["page"]["startCursor"]}}),
    )
    .unwrap();
    assert_eq!(field(&before, "jobKey"), walked[76..83].to_vec());

    // An empty page has no cursors (8.8's are optional, not nullable). Before, its
    // cursors named the last item, and `before` them left that item out.
    let no_cursors = |page: &Value| {
        page["page"].get("startCursor").is_none() && page["page"].get("endCursor").is_none()
    };
    let past = run::<HistoricJob>(
        &stores,
        json!({"sort": sort, "page": {"from": 95, "limit": 7}}),
    )
    .unwrap();
    assert_eq!(field(&past, "jobKey"), Vec::<String>::new());
    assert!(no_cursors(&past), "{past}");
    let after_last = run::<HistoricJob>(
        &stores,
        json!({"sort": sort, "page": {"limit": 7, "after": last["page"]["endCursor"]}}),
    )
    .unwrap();
    assert_eq!(field(&after_last, "jobKey"), Vec::<String>::new());
    assert_eq!(after_last["page"]["totalItems"], 90);
    assert!(no_cursors(&after_last), "{after_last}");
    // Walking back from the last page with items reaches every item once.
    let mut backward = field(&last, "jobKey");
    let mut page = last;
    while let Some(start) = page["page"].get("startCursor").cloned() {
        page = run::<HistoricJob>(
            &stores,
            json!({"sort": sort, "page": {"limit": 7, "before": start}}),
        )
        .unwrap();
        backward.splice(0..0, field(&page, "jobKey"));
    }
    assert_eq!(backward, walked);
    let none = run::<HistoricJob>(&stores, json!({"filter": {"type": "fly"}})).unwrap();
    assert_eq!(none["page"]["totalItems"], 0);
    assert!(no_cursors(&none), "{none}");
}

#[test]
fn incident_searches_see_every_state_and_sort_by_creation_time() {
    let stores = partitions();
    let all = run::<HistoricIncident>(&stores, json!({})).unwrap();
    // 5, 10, 20, 25 on each partition.
    assert_eq!(all["page"]["totalItems"], 12);
    assert!(
        all["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["creationTime"].is_string() && i["jobKey"].is_string())
    );
    let resolved =
        run::<HistoricIncident>(&stores, json!({"filter": {"state": "RESOLVED"}})).unwrap();
    assert_eq!(resolved["page"]["totalItems"], 6);
    let by_time = json!([{"field": "creationTime", "order": "DESC"}]);
    let walked = walk::<HistoricIncident>(
        &stores,
        json!({"sort": by_time, "page": {"limit": 5}}),
        "creationTime",
    );
    let mut sorted = walked.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(walked, sorted);
    assert_eq!(walked.len(), 12);
    let key = Key::new(PartitionId(2), 1_005).get().to_string();
    let one = run::<HistoricIncident>(&stores, json!({"filter": {"incidentKey": key}})).unwrap();
    assert_eq!(field(&one, "incidentKey"), vec![key]);
    assert_eq!(one["items"][0]["errorType"], "JOB_NO_RETRIES");
}

#[test]
fn bad_job_and_incident_filters_name_the_field() {
    let stores = partitions();
    let job_cases = [
        (json!({"filter": {"state": "ACTIVATED"}}), "filter.state"),
        (json!({"filter": {"colour": "red"}}), "filter.colour"),
        (json!({"filter": {"retries": "3"}}), "filter.retries"),
        (json!({"filter": {"kind": {"$gt": "A"}}}), "filter.kind.$gt"),
        (json!({"sort": [{"field": "colour"}]}), "sort[0].field"),
    ];
    for (body, name) in job_cases {
        let problem =
            crate::rest::Problem::from(run::<HistoricJob>(&stores, body.clone()).unwrap_err());
        assert_eq!(problem.status, axum::http::StatusCode::BAD_REQUEST);
        assert!(problem.detail.contains(name), "{body}: {}", problem.detail);
    }
    let incident_cases = [
        (json!({"filter": {"errorType": "OOPS"}}), "filter.errorType"),
        (
            json!({"filter": {"creationTime": "today"}}),
            "filter.creationTime",
        ),
        (
            json!({"filter": {"processInstanceKey": 5}}),
            "filter.processInstanceKey",
        ),
    ];
    for (body, name) in incident_cases {
        let problem =
            crate::rest::Problem::from(run::<HistoricIncident>(&stores, body.clone()).unwrap_err());
        assert_eq!(problem.status, axum::http::StatusCode::BAD_REQUEST);
        assert!(problem.detail.contains(name), "{body}: {}", problem.detail);
    }
}
