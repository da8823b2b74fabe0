//! Exporters ship a partition's records out of the broker: to Elasticsearch in Zeebe's
//! record format (so Kibana and existing Zeebe tooling can browse the history), or to a
//! JSON-lines file.
//!
//! The [`Exporter`] trait is what the partition leader's exporter director drives; see
//! its documentation for the position contract (an exporter never reports a position it
//! has not durably shipped).

mod any;
mod api;
mod backoff;
mod document;
mod elasticsearch;
mod error;
mod filter;
mod jsonl;
mod metrics;
mod pending;

pub use any::AnyExporter;
pub use api::{ExportContext, Exporter};
pub use document::{record_document, write_record_document};
pub use elasticsearch::{ElasticsearchExporter, IndexRouter, component_template, index_template};
pub use error::{Error, Result};
pub use filter::RecordFilter;
pub use jsonl::JsonlExporter;
pub use metrics::ExporterMetrics;
