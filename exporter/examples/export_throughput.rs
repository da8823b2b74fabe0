//! Measures how fast the Elasticsearch and JSON-lines exporters ship records, against the
//! test server and a temporary file. Not a test: a measuring program.
//!
//! `cargo run --release -p rill-exporter --example export_throughput -- [records]`

use std::time::Instant;

use rill_config::{ElasticsearchExporterConfig, JsonlExporterConfig, RecordFilterConfig};
use rill_es_test_server::TestServer;
use rill_exporter::{
    ElasticsearchExporter, ExportContext, Exporter, ExporterMetrics, JsonlExporter,
};
use rill_protocol::value::{BpmnElementType, BpmnEventType, ProcessInstanceRecord};
use rill_protocol::{
    Intent, Key, PartitionId, Position, Record, RecordType, RejectionType, Timestamp,
};

fn records(count: u64) -> Vec<Record> {
    (1..=count)
        .map(|p| Record {
            position: Position(p),
            source_record_position: Some(Position(p.saturating_sub(1))),
            key: Key::new(PartitionId(1), p),
            timestamp: Timestamp(1_796_040_000_000 + p as i64),
            record_type: RecordType::Event,
            value_type: rill_protocol::ValueType::ProcessInstance,
            intent: Intent::ElementActivated,
            partition_id: PartitionId(1),
            rejection_type: RejectionType::NullVal,
            rejection_reason: String::new(),
            operation_reference: -1,
            broker_version: rill_protocol::BROKER_VERSION.into(),
            value: ProcessInstanceRecord {
                bpmn_element_type: BpmnElementType::ServiceTask,
                element_id: "charge".into(),
                bpmn_process_id: "order".into(),
                version: 1,
                process_definition_key: Key::new(PartitionId(1), 1).get(),
                process_instance_key: Key::new(PartitionId(1), p / 10).get(),
                flow_scope_key: Key::new(PartitionId(1), p / 10).get(),
                bpmn_event_type: BpmnEventType::Unspecified,
                parent_process_instance_key: -1,
                parent_element_instance_key: -1,
                tenant_id: "<default>".into(),
                root_process_instance_key: Key::new(PartitionId(1), p / 10).get(),
                tags: Vec::new(),
                tree_path: None,
            }
            .into(),
        })
        .collect()
}

async fn run(name: &str, exporter: &mut impl Exporter, records: &[Record]) {
    let context = ExportContext {
        partition_id: PartitionId(1),
        last_exported_position: Position::ZERO,
    };
    exporter.open(context).await.expect("open");
    let started = Instant::now();
    for batch in records.chunks(256) {
        exporter.export(batch).await.expect("export");
    }
    exporter.flush().await.expect("flush");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(exporter.exported_position(), Position(records.len() as u64));
    println!(
        "{name:>14}: {} records in {seconds:.2} s = {:.0} records/s",
        records.len(),
        records.len() as f64 / seconds
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let count: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let records = records(count);

    let started = Instant::now();
    let mut bytes = 0;
    for record in &records {
        let mut line = Vec::with_capacity(512);
        rill_exporter::write_record_document(record, &mut line);
        bytes += line.len();
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{:>14}: {count} records in {seconds:.2} s = {:.0} records/s ({} bytes each)",
        "serialize only",
        count as f64 / seconds,
        bytes as u64 / count.max(1)
    );

    let server = TestServer::start().await.expect("test server");
    let config = ElasticsearchExporterConfig {
        url: server.url(),
        ..Default::default()
    };
    let metrics = ExporterMetrics::new().unwrap();
    let registry = prometheus::Registry::new();
    metrics.register(&registry).unwrap();
    let mut es = ElasticsearchExporter::new(config, metrics).unwrap();
    run("elasticsearch", &mut es, &records).await;
    for family in registry.gather() {
        for metric in family.get_metric() {
            let h = metric.get_histogram();
            if h.get_sample_count() > 0 {
                println!(
                    "{} count {} sum {:.3}",
                    family.name(),
                    h.get_sample_count(),
                    h.get_sample_sum()
                );
            }
            if metric.get_counter().get_value() > 0.0 {
                println!("{} {}", family.name(), metric.get_counter().get_value());
            }
        }
    }

    let dir = std::env::temp_dir().join(format!("rill-export-throughput-{}", std::process::id()));
    let config = JsonlExporterConfig {
        path: dir.join("records.jsonl"),
        filter: RecordFilterConfig::default(),
        ..Default::default()
    };
    let mut jsonl = JsonlExporter::new(config, ExporterMetrics::new().unwrap()).unwrap();
    run("jsonl", &mut jsonl, &records).await;
    let _ = std::fs::remove_dir_all(dir);
}
