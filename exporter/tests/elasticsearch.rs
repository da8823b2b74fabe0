//! The Elasticsearch exporter against the test server, on a real socket.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rill_config::{ByteSize, RecordFilterConfig};
use rill_es_test_server::{ItemError, ItemRequest, TestServer};
use rill_exporter::{
    ElasticsearchExporter, Error, ExportContext, Exporter, ExporterMetrics, IndexRouter,
};
use rill_protocol::{BROKER_VERSION, PartitionId, Position, RecordType, ValueType};
use serde_json::json;

use common::{count, es_config, events, ids, record, value_of};

fn context() -> ExportContext {
    ExportContext {
        partition_id: PartitionId(1),
        last_exported_position: Position::ZERO,
    }
}

async fn open(
    config: rill_config::ElasticsearchExporterConfig,
) -> (ElasticsearchExporter, ExporterMetrics) {
    let metrics = ExporterMetrics::new().unwrap();
    let mut exporter = ElasticsearchExporter::new(config, metrics.clone()).unwrap();
    exporter.open(context()).await.unwrap();
    (exporter, metrics)
}

fn expected_ids(from: u64, to: u64) -> Vec<String> {
    (from..=to).map(|p| format!("1-{p}")).collect()
}

#[tokio::test]
async fn open_puts_component_and_index_templates_and_ilm_policy() {
    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.retention = Some(Duration::from_secs(30 * 24 * 3600));
    let (_exporter, _) = open(config).await;

    let component = server
        .component_template("zeebe-record")
        .expect("component template");
    let mappings = &component["template"]["mappings"];
    assert_eq!(mappings["dynamic"], "strict");
    assert_eq!(mappings["properties"]["position"]["type"], "long");
    assert_eq!(mappings["properties"]["timestamp"]["type"], "date");
    assert_eq!(mappings["properties"]["intent"]["type"], "keyword");
    let settings = &component["template"]["settings"];
    assert_eq!(
        settings["index.lifecycle.name"],
        "zeebe-record-retention-policy"
    );
    assert_eq!(settings["index.queries.cache.enabled"], false);

    // One index template per value type the default filter exports.
    let names = server.index_template_names();
    assert_eq!(names.len(), ValueType::ALL.len() - 2, "{names:?}");
    let name = format!("zeebe-record_process-instance_{BROKER_VERSION}");
    let template = server
        .index_template(&name)
        .expect("process instance template");
    assert_eq!(template["index_patterns"], json!([format!("{name}_*")]));
    assert_eq!(template["composed_of"], json!(["zeebe-record"]));
    assert!(template["template"]["aliases"]["zeebe-record-process-instance"].is_object());
    let value = &template["template"]["mappings"]["properties"]["value"];
    assert_eq!(value["dynamic"], "strict");
    assert_eq!(value["properties"]["processInstanceKey"]["type"], "long");
    assert!(
        server
            .index_template(&format!("zeebe-record_job-batch_{BROKER_VERSION}"))
            .is_none()
    );

    let policy = server
        .ilm_policy("zeebe-record-retention-policy")
        .expect("ILM policy");
    let mut exporter = _exporter;
    exporter.export(&common::events(1, 1)).await.unwrap();
    exporter.flush().await.unwrap();
    let (index, _) = server.indices().into_iter().next().expect("an index");
    let settings = server.index_settings(&index).unwrap();
    assert_eq!(
        settings["index.lifecycle.name"], "zeebe-record-retention-policy",
        "{index}"
    );
    assert_eq!(policy["policy"]["phases"]["delete"]["min_age"], "2592000s");
}

#[tokio::test]
async fn every_value_type_is_indexed_under_the_strict_templates() {
    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.filter = RecordFilterConfig::all();
    let (mut exporter, metrics) = open(config).await;

    let records: Vec<_> = ValueType::ALL
        .into_iter()
        .enumerate()
        .map(|(i, vt)| record(i as u64 + 1, RecordType::Event, value_of(vt)))
        .collect();
    exporter.export(&records).await.unwrap();
    assert_eq!(
        exporter.exported_position(),
        Position::ZERO,
        "buffered, not shipped"
    );
    exporter.flush().await.unwrap();

    assert_eq!(
        server.stats().failed_items,
        0,
        "a document did not fit its template"
    );
    assert_eq!(
        exporter.exported_position(),
        Position(ValueType::ALL.len() as u64)
    );
    assert_eq!(metrics.lag("elasticsearch", 1), 0);
    let indices = server.indices();
    let index = format!("zeebe-record_process-instance_{BROKER_VERSION}_2026-11-30");
    assert_eq!(
        indices[&index],
        vec!["zeebe-record-process-instance".to_owned()]
    );
    assert_eq!(indices.len(), ValueType::ALL.len());
    for value_type in ValueType::ALL {
        let alias = IndexRouter::new("zeebe-record").alias_for(value_type);
        assert_eq!(
            count(&server.url(), &alias, json!({"match_all": {}})).await,
            1,
            "{alias}"
        );
    }
    // The routing and id follow Zeebe: {partitionId}-{position}.
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        expected_ids(1, ValueType::ALL.len() as u64)
    );
}

#[tokio::test]
async fn filters_skip_records_but_the_position_moves_past_them() {
    let server = TestServer::start().await.unwrap();
    let (mut exporter, _) = open(es_config(&server.url())).await;
    let records = vec![
        record(1, RecordType::Command, value_of(ValueType::Job)),
        record(2, RecordType::Event, value_of(ValueType::Job)),
        record(3, RecordType::CommandRejection, value_of(ValueType::Job)),
        record(4, RecordType::Event, value_of(ValueType::JobBatch)),
    ];
    exporter.export(&records).await.unwrap();
    assert_eq!(exporter.exported_position(), Position(1), "2 is buffered");
    exporter.flush().await.unwrap();
    assert_eq!(exporter.exported_position(), Position(4));
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        vec!["1-2".to_owned()]
    );

    // Re-feeding what was handed over already changes nothing.
    exporter.export(&records).await.unwrap();
    exporter.flush().await.unwrap();
    assert_eq!(server.stats().indexed_items, 1);
}

#[tokio::test]
async fn flushes_at_the_record_count() {
    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.bulk_size = 10;
    let (mut exporter, metrics) = open(config).await;
    exporter.export(&events(1, 25)).await.unwrap();
    assert_eq!(server.stats().bulk_requests, 2);
    assert_eq!(exporter.exported_position(), Position(20));
    assert_eq!(metrics.lag("elasticsearch", 1), 5);
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        expected_ids(1, 20)
    );
    exporter.flush().await.unwrap();
    assert_eq!(exporter.exported_position(), Position(25));
}

#[tokio::test]
async fn flushes_at_the_memory_limit() {
    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.bulk_memory_limit = ByteSize(8 * 1024);
    let (mut exporter, _) = open(config).await;
    exporter.export(&events(1, 200)).await.unwrap();
    let bulks = server.stats().bulk_requests;
    assert!(
        bulks >= 3,
        "expected flushes by size, got {bulks} bulk requests"
    );
    assert!(exporter.exported_position() > Position(100));
    exporter.flush().await.unwrap();
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        expected_ids(1, 200)
    );
}

#[tokio::test]
async fn flush_deadline_follows_the_bulk_delay() {
    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.bulk_delay = Duration::from_millis(300);
    let (mut exporter, _) = open(config).await;
    assert_eq!(exporter.flush_deadline(), None);

    let before = tokio::time::Instant::now();
    exporter.export(&events(1, 3)).await.unwrap();
    let deadline = exporter
        .flush_deadline()
        .expect("a deadline once something is buffered");
    assert!(deadline >= before + Duration::from_millis(300));
    assert!(deadline <= tokio::time::Instant::now() + Duration::from_millis(300));

    // What the director does: sleep until the deadline, then flush.
    tokio::time::sleep_until(deadline).await;
    assert_eq!(
        server.stats().bulk_requests,
        0,
        "nothing is sent before the deadline"
    );
    exporter.flush().await.unwrap();
    assert_eq!(server.stats().bulk_requests, 1);
    assert_eq!(exporter.flush_deadline(), None);
    assert_eq!(exporter.exported_position(), Position(3));
}

#[tokio::test]
async fn permanent_item_errors_are_counted_and_skipped() {
    let server = TestServer::start().await.unwrap();
    server.set_item_fault(Some(Arc::new(|item: &ItemRequest<'_>| {
        item.id
            .ends_with('0')
            .then(|| ItemError::mapping_conflict("failed to parse field [value.retries]"))
    })));
    let (mut exporter, metrics) = open(es_config(&server.url())).await;
    exporter.export(&events(1, 100)).await.unwrap();
    exporter.flush().await.unwrap();

    assert_eq!(
        exporter.exported_position(),
        Position(100),
        "not stuck behind refused records"
    );
    assert_eq!(
        metrics.dropped_records("elasticsearch", 1, "document_parsing_exception"),
        10
    );
    assert_eq!(
        server.stats().bulk_requests,
        1,
        "refused items are not retried"
    );
    let indexed = ids(&server.url(), "zeebe-record*").await;
    assert_eq!(indexed.len(), 90);
    assert!(indexed.iter().all(|id| !id.ends_with('0')));
}

#[tokio::test]
async fn a_failing_item_holds_the_position_below_it() {
    let server = TestServer::start().await.unwrap();
    server.set_item_fault(Some(Arc::new(|item: &ItemRequest<'_>| {
        (item.id == "1-5").then(ItemError::unavailable)
    })));
    let (mut exporter, metrics) = open(es_config(&server.url())).await;
    exporter.export(&events(1, 10)).await.unwrap();

    // The flush keeps retrying 1-5; give up waiting on it (dropping the future).
    let flushed = tokio::time::timeout(Duration::from_millis(300), exporter.flush()).await;
    assert!(
        flushed.is_err(),
        "flush must not finish while an item fails"
    );
    assert_eq!(exporter.exported_position(), Position(4));
    assert_eq!(metrics.lag("elasticsearch", 1), 6);
    let mut indexed = ids(&server.url(), "zeebe-record*").await;
    indexed.sort();
    let mut expected: Vec<String> = expected_ids(1, 10)
        .into_iter()
        .filter(|id| id != "1-5")
        .collect();
    expected.sort();
    assert_eq!(indexed, expected);
    assert!(server.stats().bulk_requests >= 2, "1-5 was retried");

    server.set_item_fault(None);
    exporter.flush().await.unwrap();
    assert_eq!(exporter.exported_position(), Position(10));
    assert_eq!(metrics.lag("elasticsearch", 1), 0);
    assert_eq!(
        count(
            &server.url(),
            "zeebe-record*",
            json!({"term": {"position": 5}})
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_too_large_bulk_is_split() {
    let server = TestServer::start().await.unwrap();
    let (mut exporter, _) = open(es_config(&server.url())).await;
    server.fail_next_requests(2, 413);
    exporter.export(&events(1, 40)).await.unwrap();
    exporter.flush().await.unwrap();
    assert_eq!(server.stats().failed_requests, 2);
    assert_eq!(
        server.stats().bulk_requests,
        4,
        "40 records in requests of 10 after two 413s"
    );
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        expected_ids(1, 40)
    );
}

/// Many records while the server fails, recovers, answers 429, is slow, goes down, and
/// fails single items: every position ends up indexed exactly once as a document id, and
/// the exported position never runs ahead of what the server holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_least_once_and_no_skip_under_faults() {
    const LAST: u64 = 20_000;
    let server = Arc::new(TestServer::start().await.unwrap());
    let mut config = es_config(&server.url());
    config.bulk_size = 500;
    config.request_timeout = Duration::from_millis(500);
    let (mut exporter, metrics) = open(config).await;

    // Items with ids divisible by 7 fail with 429 while this is above zero.
    let item_failures = Arc::new(AtomicU32::new(0));
    let failures = item_failures.clone();
    server.set_item_fault(Some(Arc::new(move |item: &ItemRequest<'_>| {
        let position: u64 = item.id.trim_start_matches("1-").parse().unwrap_or(0);
        if position.is_multiple_of(7) && failures.load(Ordering::Relaxed) > 0 {
            failures.fetch_sub(1, Ordering::Relaxed);
            return Some(ItemError::too_many_requests());
        }
        None
    })));

    let chaos_server = server.clone();
    let chaos = tokio::spawn(async move {
        let pause = || tokio::time::sleep(Duration::from_millis(150));
        for round in 0..2 {
            pause().await;
            chaos_server.fail_requests(Some(503));
            pause().await;
            chaos_server.fail_requests(None);
            pause().await;
            chaos_server.fail_requests(Some(429));
            pause().await;
            chaos_server.fail_requests(None);
            item_failures.store(40, Ordering::Relaxed);
            pause().await;
            chaos_server.stop().await;
            pause().await;
            chaos_server.restart().await.unwrap();
            pause().await;
            // Slower than the request timeout: the exporter gives up and sends again,
            // although the server indexes the first copy.
            chaos_server.set_delay(Duration::from_millis(700));
            tokio::time::sleep(Duration::from_millis(800)).await;
            chaos_server.set_delay(Duration::ZERO);
            let _ = round;
        }
    });

    let all = events(1, LAST);
    for (i, batch) in all.chunks(250).enumerate() {
        exporter.export(batch).await.unwrap();
        if i % 8 == 0 {
            // Never report a position the server does not hold.
            let exported = exporter.exported_position().get();
            let held: std::collections::BTreeSet<u64> = server
                .document_versions("zeebe-record*")
                .into_iter()
                .filter_map(|(_, id, _)| id.trim_start_matches("1-").parse().ok())
                .collect();
            let missing = (1..=exported).find(|p| !held.contains(p));
            assert_eq!(
                missing, None,
                "exported position {exported} but a record below is missing"
            );
        }
        // Spread the 80 batches over the ~3.4 s of chaos.
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    chaos.await.unwrap();
    exporter.flush().await.unwrap();

    assert_eq!(exporter.exported_position(), Position(LAST));
    assert_eq!(metrics.lag("elasticsearch", 1), 0);
    let documents = server.document_versions("zeebe-record*");
    assert_eq!(documents.len() as u64, LAST, "one document per position");
    let mut positions: Vec<u64> = documents
        .iter()
        .map(|(_, id, _)| id.trim_start_matches("1-").parse().unwrap())
        .collect();
    positions.sort_unstable();
    assert_eq!(positions, (1..=LAST).collect::<Vec<_>>());
    assert_eq!(
        count(&server.url(), "zeebe-record*", json!({"match_all": {}})).await,
        LAST
    );

    let stats = server.stats();
    assert!(
        stats.failed_requests > 0,
        "whole requests failed: {stats:?}"
    );
    assert!(stats.failed_items > 0, "single items failed: {stats:?}");
    assert!(
        stats.indexed_items > LAST,
        "some records were sent more than once: {stats:?}"
    );
    let failed = metrics.failed_requests(
        "elasticsearch",
        1,
        &["connect", "timeout", "http-429", "http-5xx", "items"],
    );
    assert!(failed > 0);
    assert_eq!(
        metrics.dropped_records("elasticsearch", 1, "es_rejected_execution_exception"),
        0
    );
}

#[tokio::test]
async fn lag_grows_while_elasticsearch_is_down_and_drains_after() {
    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.bulk_size = 100;
    let (mut exporter, metrics) = open(config).await;
    server.stop().await;
    let export =
        tokio::time::timeout(Duration::from_millis(400), exporter.export(&events(1, 150))).await;
    assert!(
        export.is_err(),
        "export blocks (back-pressure) while the bulk cannot be shipped"
    );
    assert_eq!(exporter.exported_position(), Position::ZERO);
    assert_eq!(
        metrics.lag("elasticsearch", 1),
        100,
        "lag shows while the exporter is stuck"
    );

    server.restart().await.unwrap();
    // Feed again from the exported position, as the director does after a dropped call.
    // 1..=100 are still buffered from before; 101 fills the bulk and it ships.
    exporter.export(&events(1, 150)).await.unwrap();
    assert_eq!(exporter.exported_position(), Position(101));
    assert_eq!(metrics.lag("elasticsearch", 1), 49);
    exporter.flush().await.unwrap();
    assert_eq!(metrics.lag("elasticsearch", 1), 0);
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        expected_ids(1, 150)
    );
}

#[tokio::test]
async fn resumes_after_the_replicated_position() {
    let server = TestServer::start().await.unwrap();
    let metrics = ExporterMetrics::new().unwrap();
    let mut exporter = ElasticsearchExporter::new(es_config(&server.url()), metrics).unwrap();
    exporter
        .open(ExportContext {
            partition_id: PartitionId(1),
            last_exported_position: Position(50),
        })
        .await
        .unwrap();
    assert_eq!(exporter.exported_position(), Position(50));
    exporter.export(&events(1, 60)).await.unwrap();
    exporter.flush().await.unwrap();
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        expected_ids(51, 60)
    );
}

#[tokio::test]
async fn sends_basic_api_key_and_bearer_credentials() {
    let server = TestServer::start().await.unwrap();
    // base64("elastic:changeme")
    server.require_authorization(Some("Basic ZWxhc3RpYzpjaGFuZ2VtZQ==".into()));
    let mut config = es_config(&server.url());
    config.username = Some("elastic".into());
    config.password = Some("changeme".into());
    let (mut exporter, _) = open(config).await;
    exporter.export(&events(1, 2)).await.unwrap();
    exporter.flush().await.unwrap();
    assert_eq!(server.stats().indexed_items, 2);

    server.require_authorization(Some("ApiKey aWQ6c2VjcmV0".into()));
    let mut config = es_config(&server.url());
    config.api_key = Some("aWQ6c2VjcmV0".into());
    open(config).await;

    server.require_authorization(Some("Bearer token-123".into()));
    let mut config = es_config(&server.url());
    config.bearer_token = Some("token-123".into());
    open(config).await;
    assert_eq!(
        server.last_authorization().as_deref(),
        Some("Bearer token-123")
    );

    // Wrong credentials: open fails with a clear error instead of retrying forever.
    let mut config = es_config(&server.url());
    config.bearer_token = Some("wrong".into());
    let mut exporter = ElasticsearchExporter::new(config, ExporterMetrics::new().unwrap()).unwrap();
    match exporter.open(context()).await {
        Err(Error::Refused {
            status: 401, what, ..
        }) => assert!(what.contains("template"), "{what}"),
        other => panic!("expected a 401 refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_configuration_is_reported_before_any_io() {
    let mut config = es_config("http://127.0.0.1:1");
    config.url = "localhost:9200".into();
    config.bulk_size = 0;
    config.password = Some("secret".into());
    let Err(Error::Config { problems, .. }) =
        ElasticsearchExporter::new(config, ExporterMetrics::new().unwrap())
    else {
        panic!("expected a configuration error");
    };
    assert_eq!(problems.len(), 3, "{problems:?}");

    let mut config = es_config("https://127.0.0.1:1");
    config.tls.ca_certificate = Some("/nonexistent/ca.pem".into());
    let error = ElasticsearchExporter::new(config, ExporterMetrics::new().unwrap())
        .err()
        .expect("a missing CA file is an error");
    assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
}

#[tokio::test]
async fn whole_request_429s_and_5xx_are_retried_until_they_pass() {
    let server = TestServer::start().await.unwrap();
    let (mut exporter, metrics) = open(es_config(&server.url())).await;
    server.fail_next_requests(3, 429);
    exporter.export(&events(1, 30)).await.unwrap();
    exporter.flush().await.unwrap();
    server.fail_next_requests(2, 502);
    exporter.export(&events(31, 40)).await.unwrap();
    exporter.flush().await.unwrap();

    assert_eq!(
        metrics.failed_requests("elasticsearch", 1, &["http-429"]),
        3
    );
    assert_eq!(
        metrics.failed_requests("elasticsearch", 1, &["http-5xx"]),
        2
    );
    assert_eq!(exporter.exported_position(), Position(40));
    assert_eq!(
        ids(&server.url(), "zeebe-record*").await,
        expected_ids(1, 40)
    );
}

#[tokio::test]
async fn slow_answers_time_out_and_the_resend_overwrites_the_same_documents() {
    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.request_timeout = Duration::from_millis(200);
    let (mut exporter, metrics) = open(config).await;
    server.set_delay(Duration::from_millis(400));
    exporter.export(&events(1, 20)).await.unwrap();
    let slow = tokio::time::timeout(Duration::from_millis(700), exporter.flush()).await;
    assert!(
        slow.is_err(),
        "no answer arrives in time while the server is slow"
    );
    assert_eq!(exporter.exported_position(), Position::ZERO);
    server.set_delay(Duration::ZERO);
    exporter.flush().await.unwrap();

    assert!(metrics.failed_requests("elasticsearch", 1, &["timeout"]) >= 1);
    assert_eq!(exporter.exported_position(), Position(20));
    let documents = server.document_versions("zeebe-record*");
    assert_eq!(documents.len(), 20, "one document per position");
    assert!(
        documents.iter().all(|(_, _, version)| *version >= 2),
        "the timed-out request was indexed and sent again: {documents:?}"
    );
}

#[tokio::test]
async fn configured_exporters_run_in_a_spawned_task() {
    use rill_config::{ExportersConfig, JsonlExporterConfig};
    use rill_exporter::AnyExporter;

    let server = TestServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = ExportersConfig {
        elasticsearch: Some(es_config(&server.url())),
        jsonl: Some(JsonlExporterConfig {
            path: dir.path().join("records.jsonl"),
            ..Default::default()
        }),
    };
    let metrics = ExporterMetrics::new().unwrap();
    let registry = prometheus::Registry::new();
    metrics.register(&registry).unwrap();
    let exporters = AnyExporter::from_config(&config, &metrics).unwrap();
    assert_eq!(
        exporters.iter().map(|e| e.id()).collect::<Vec<_>>(),
        vec!["elasticsearch", "jsonl"]
    );
    // What the director does: one task per exporter.
    let tasks: Vec<_> = exporters
        .into_iter()
        .map(|mut exporter| {
            tokio::spawn(async move {
                exporter.open(context()).await?;
                exporter.export(&events(1, 10)).await?;
                exporter.flush().await?;
                exporter.close().await?;
                Ok::<_, Error>(exporter.exported_position())
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), Position(10));
    }
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&registry.gather())
        .unwrap();
    assert!(
        text.contains(
            "rill_exporter_last_exported_position{exporter=\"jsonl\",partition=\"1\"} 10"
        ),
        "{text}"
    );
    assert!(
        text.contains("rill_exporter_lag_records{exporter=\"elasticsearch\",partition=\"1\"} 0"),
        "{text}"
    );
}

#[tokio::test]
async fn a_record_too_large_for_any_request_is_skipped_but_small_ones_are_not() {
    use rill_protocol::value::RecordValue;

    let server = TestServer::start().await.unwrap();
    let mut config = es_config(&server.url());
    config.bulk_memory_limit = ByteSize(4 * 1024);
    let (mut exporter, metrics) = open(config).await;
    server.set_max_content_length(Some(4 * 1024));

    let mut records = events(1, 10);
    let RecordValue::Variable(mut huge) = value_of(ValueType::Variable) else {
        unreachable!()
    };
    huge.value = format!("\"{}\"", "x".repeat(6 * 1024));
    records[5] = record(6, RecordType::Event, RecordValue::Variable(huge));
    exporter.export(&records).await.unwrap();
    exporter.flush().await.unwrap();
    assert_eq!(exporter.exported_position(), Position(10));
    assert_eq!(
        metrics.dropped_records("elasticsearch", 1, "request_too_large"),
        1
    );
    let indexed = ids(&server.url(), "zeebe-record*").await;
    assert_eq!(indexed.len(), 9);
    assert!(!indexed.contains(&"1-6".to_owned()));

    // A limit no record fits under is a misconfiguration: keep the records and retry.
    server.set_max_content_length(Some(10));
    exporter.export(&events(11, 12)).await.unwrap();
    let stuck = tokio::time::timeout(Duration::from_millis(300), exporter.flush()).await;
    assert!(stuck.is_err());
    assert_eq!(exporter.exported_position(), Position(10));
    assert_eq!(
        metrics.dropped_records("elasticsearch", 1, "request_too_large"),
        1
    );
    server.set_max_content_length(None);
    exporter.flush().await.unwrap();
    assert_eq!(exporter.exported_position(), Position(12));
}

#[tokio::test]
async fn https_with_a_custom_ca_and_without_verification() {
    let server = TestServer::start_tls().await.unwrap();
    assert!(server.url().starts_with("https://"));
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, rill_es_test_server::CA_CERTIFICATE_PEM).unwrap();

    // Trusting the test CA: everything works.
    let mut config = es_config(&server.url());
    config.tls.ca_certificate = Some(ca);
    let (mut exporter, _) = open(config).await;
    exporter.export(&events(1, 5)).await.unwrap();
    exporter.flush().await.unwrap();
    assert_eq!(server.stats().indexed_items, 5);

    // The system's roots do not know the test CA: nothing gets through (it keeps retrying).
    let metrics = ExporterMetrics::new().unwrap();
    let mut untrusting =
        ElasticsearchExporter::new(es_config(&server.url()), metrics.clone()).unwrap();
    let opened = tokio::time::timeout(Duration::from_millis(500), untrusting.open(context())).await;
    assert!(
        opened.is_err(),
        "open must not succeed against an unknown CA"
    );
    assert!(metrics.failed_requests("elasticsearch", 1, &["connect"]) > 0);

    // Verification off (tests only): works again.
    let mut config = es_config(&server.url());
    config.tls.verify_certificates = false;
    let (mut exporter, _) = open(config).await;
    exporter.export(&events(6, 6)).await.unwrap();
    exporter.flush().await.unwrap();
    assert_eq!(server.stats().indexed_items, 6);
}
