//! The exporters a configuration asks for, behind one type the director can hold in a
//! `Vec`.

use rill_config::ExportersConfig;
use rill_protocol::{Position, Record};
use tokio::time::Instant;

use crate::api::{ExportContext, Exporter};
use crate::elasticsearch::ElasticsearchExporter;
use crate::error::Result;
use crate::jsonl::JsonlExporter;
use crate::metrics::ExporterMetrics;

pub enum AnyExporter {
    Elasticsearch(Box<ElasticsearchExporter>),
    Jsonl(Box<JsonlExporter>),
}

impl AnyExporter {
    /// One exporter per configured section, Elasticsearch first. Checks each
    /// configuration; does no I/O.
    pub fn from_config(
        config: &ExportersConfig,
        metrics: &ExporterMetrics,
    ) -> Result<Vec<AnyExporter>> {
        let mut exporters = Vec::new();
        if let Some(es) = &config.elasticsearch {
            exporters.push(AnyExporter::Elasticsearch(Box::new(
                ElasticsearchExporter::new(es.clone(), metrics.clone())?,
            )));
        }
        if let Some(jsonl) = &config.jsonl {
            exporters.push(AnyExporter::Jsonl(Box::new(JsonlExporter::new(
                jsonl.clone(),
                metrics.clone(),
            )?)));
        }
        Ok(exporters)
    }
}

impl Exporter for AnyExporter {
    fn id(&self) -> &'static str {
        match self {
            AnyExporter::Elasticsearch(e) => e.id(),
            AnyExporter::Jsonl(e) => e.id(),
        }
    }

    async fn open(&mut self, context: ExportContext) -> Result<()> {
        match self {
            AnyExporter::Elasticsearch(e) => e.open(context).await,
            AnyExporter::Jsonl(e) => e.open(context).await,
        }
    }

    async fn export(&mut self, records: &[Record]) -> Result<()> {
        match self {
            AnyExporter::Elasticsearch(e) => e.export(records).await,
            AnyExporter::Jsonl(e) => e.export(records).await,
        }
    }

    async fn flush(&mut self) -> Result<()> {
        match self {
            AnyExporter::Elasticsearch(e) => e.flush().await,
            AnyExporter::Jsonl(e) => e.flush().await,
        }
    }

    fn flush_deadline(&self) -> Option<Instant> {
        match self {
            AnyExporter::Elasticsearch(e) => e.flush_deadline(),
            AnyExporter::Jsonl(e) => e.flush_deadline(),
        }
    }

    fn exported_position(&self) -> Position {
        match self {
            AnyExporter::Elasticsearch(e) => e.exported_position(),
            AnyExporter::Jsonl(e) => e.exported_position(),
        }
    }

    async fn close(&mut self) -> Result<()> {
        match self {
            AnyExporter::Elasticsearch(e) => e.close().await,
            AnyExporter::Jsonl(e) => e.close().await,
        }
    }
}
