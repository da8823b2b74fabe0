//! The JSON-lines exporter: Zeebe JSON per line, written and fsynced on flush.

mod common;

use std::time::Duration;

use rill_config::{JsonlExporterConfig, RecordFilterConfig};
use rill_exporter::{ExportContext, Exporter, ExporterMetrics, JsonlExporter, record_document};
use rill_protocol::{PartitionId, Position, RecordType, ValueType};
use serde_json::Value;

use common::{events, record, value_of};

fn config(path: std::path::PathBuf) -> JsonlExporterConfig {
    JsonlExporterConfig {
        path,
        flush_size: 1000,
        flush_delay: Duration::from_secs(1),
        filter: RecordFilterConfig::all(),
    }
}

fn context(last: u64) -> ExportContext {
    ExportContext {
        partition_id: PartitionId(1),
        last_exported_position: Position(last),
    }
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect()
}

#[tokio::test]
async fn writes_zeebe_json_lines_and_fsyncs_on_flush() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history/records.jsonl");
    let mut exporter =
        JsonlExporter::new(config(path.clone()), ExporterMetrics::new().unwrap()).unwrap();
    exporter.open(context(0)).await.unwrap();

    let records = vec![
        record(
            1,
            RecordType::Command,
            value_of(ValueType::ProcessInstanceCreation),
        ),
        record(2, RecordType::Event, value_of(ValueType::ProcessInstance)),
        record(3, RecordType::CommandRejection, value_of(ValueType::Job)),
    ];
    exporter.export(&records).await.unwrap();
    assert!(lines(&path).is_empty(), "nothing is written before a flush");
    assert_eq!(exporter.exported_position(), Position::ZERO);
    assert_eq!(exporter.syncs(), 0);

    exporter.flush().await.unwrap();
    assert_eq!(exporter.syncs(), 1);
    assert_eq!(exporter.exported_position(), Position(3));
    let written = lines(&path);
    let expected: Vec<Value> = records.iter().map(record_document).collect();
    assert_eq!(written, expected);
    assert_eq!(written[2]["recordType"], "COMMAND_REJECTION");

    // A flush with nothing buffered does not touch the file.
    exporter.flush().await.unwrap();
    assert_eq!(exporter.syncs(), 1);
}

#[tokio::test]
async fn flushes_at_the_flush_size_and_appends_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.jsonl");
    let mut cfg = config(path.clone());
    cfg.flush_size = 10;
    cfg.filter = RecordFilterConfig::default();
    let mut exporter = JsonlExporter::new(cfg.clone(), ExporterMetrics::new().unwrap()).unwrap();
    exporter.open(context(0)).await.unwrap();
    exporter.export(&events(1, 25)).await.unwrap();
    assert_eq!(exporter.syncs(), 2);
    assert_eq!(lines(&path).len(), 20);
    assert_eq!(exporter.exported_position(), Position(20));
    exporter.close().await.unwrap();
    assert_eq!(lines(&path).len(), 25, "close writes what is buffered");
    assert_eq!(
        exporter.exported_position(),
        Position(25),
        "readable after close"
    );
    assert!(matches!(
        exporter.export(&events(26, 26)).await,
        Err(rill_exporter::Error::NotOpen { .. })
    ));

    // A new leader resumes after the replicated position and appends.
    let mut exporter = JsonlExporter::new(cfg, ExporterMetrics::new().unwrap()).unwrap();
    exporter.open(context(25)).await.unwrap();
    exporter.export(&events(1, 30)).await.unwrap();
    exporter.flush().await.unwrap();
    let positions: Vec<u64> = lines(&path)
        .iter()
        .map(|l| l["position"].as_u64().unwrap())
        .collect();
    assert_eq!(positions, (1..=30).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn flush_deadline_is_the_flush_delay_after_the_oldest_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut exporter = JsonlExporter::new(
        config(dir.path().join("r.jsonl")),
        ExporterMetrics::new().unwrap(),
    )
    .unwrap();
    exporter.open(context(0)).await.unwrap();
    assert_eq!(exporter.flush_deadline(), None);
    let start = tokio::time::Instant::now();
    exporter.export(&events(1, 1)).await.unwrap();
    tokio::time::advance(Duration::from_millis(700)).await;
    exporter.export(&events(2, 2)).await.unwrap();
    assert_eq!(
        exporter.flush_deadline(),
        Some(start + Duration::from_secs(1))
    );
}

#[tokio::test]
async fn an_unwritable_path_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let mut exporter = JsonlExporter::new(
        config(blocker.join("records.jsonl")),
        ExporterMetrics::new().unwrap(),
    )
    .unwrap();
    let error = exporter.open(context(0)).await.unwrap_err();
    assert!(error.to_string().contains("records.jsonl"), "{error}");

    let bad = JsonlExporter::new(
        JsonlExporterConfig {
            flush_size: 0,
            ..config(dir.path().join("x"))
        },
        ExporterMetrics::new().unwrap(),
    );
    assert!(bad.err().unwrap().to_string().contains("flush-size"));
}

#[test]
fn the_engines_bookkeeping_variables_are_not_exported() {
    let filter = rill_exporter::RecordFilter::new(RecordFilterConfig::all());
    let variable = |name: &str| {
        let mut value = value_of(ValueType::Variable);
        if let rill_protocol::RecordValue::Variable(v) = &mut value {
            v.name = name.to_owned();
        }
        record(1, RecordType::Event, value)
    };
    assert!(filter.accepts(&variable("orderId")));
    for hidden in [
        rill_protocol::value::MESSAGE_START_VARIABLE,
        rill_protocol::value::INPUT_COLLECTION_VARIABLE,
    ] {
        assert!(!filter.accepts(&variable(hidden)), "{hidden}");
    }
}
