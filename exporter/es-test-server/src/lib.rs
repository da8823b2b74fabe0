//! A small server that speaks the part of the Elasticsearch HTTP API Rill's exporter uses,
//! on a real socket, with switches to make it fail, slow down, answer 429, fail single
//! bulk items, or go away entirely. The exporter's tests run the real exporter code
//! against it.
//!
//! Supported: `_bulk` (index/create actions, per-item results, strict-mapping checks from
//! the templates), `_index_template`, `_component_template`, `_ilm/policy`, `_search` and
//! `_count` (`match_all`, `term`, `terms`, `range`, `exists`, `bool`; `sort`, `size`,
//! `from`) over indices, aliases and wildcard patterns, `_cat/indices`, `_alias`.

mod mapping;
mod query;
mod server;
mod store;

pub use server::{CA_CERTIFICATE_PEM, ItemError, ItemFault, ItemRequest, Stats, TestServer};
