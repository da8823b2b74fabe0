//! The partition's history store (`rill-history`) on RocksDB: the state database's
//! `history` column family, written in the same batch as the records it is fed from,
//! and read for the history queries off the partition actor.

use std::time::Duration;

use rill_config::RillConfig;
use rill_history::{HistoryError, HistoryRead};
use rill_protocol::{Query, QueryResult};
use rill_raft::StateDb;
use rocksdb::{ColumnFamily, DB, ReadOptions, WriteBatch};

use crate::command_api::ProtocolEngine;
use crate::error::{ActorError, Error, Result};
use crate::partition::Partition;

/// Whether a partition keeps the history, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistorySettings {
    pub enabled: bool,
    /// Finished instances older than this (by the log's time) are removed. Only the
    /// leader uses it, to decide when to propose their removal.
    pub retention: Duration,
}

impl HistorySettings {
    pub fn from_config(config: &RillConfig) -> HistorySettings {
        HistorySettings {
            enabled: config.history.enabled,
            retention: config.history.retention,
        }
    }

    pub fn disabled() -> HistorySettings {
        HistorySettings {
            enabled: false,
            retention: Duration::from_secs(7 * 24 * 60 * 60),
        }
    }
}

impl Default for HistorySettings {
    fn default() -> Self {
        HistorySettings {
            enabled: true,
            retention: Duration::from_secs(7 * 24 * 60 * 60),
        }
    }
}

/// The history column family of a state database.
pub struct CfHistory<'a> {
    db: &'a DB,
    cf: &'a ColumnFamily,
}

impl<'a> CfHistory<'a> {
    pub fn new(db: &'a StateDb) -> Result<CfHistory<'a>> {
        Ok(CfHistory {
            db: db.db(),
            cf: db.history_cf()?,
        })
    }

    /// Adds a writer's changes to the batch being written.
    pub fn write(
        &self,
        batch: &mut WriteBatch,
        writes: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    ) {
        for (key, value) in writes {
            match value {
                Some(value) => batch.put_cf(self.cf, key, value),
                None => batch.delete_cf(self.cf, key),
            }
        }
    }
}

fn storage(action: &str, e: rocksdb::Error) -> HistoryError {
    HistoryError::Storage(format!("{action}: {e}"))
}

impl HistoryRead for CfHistory<'_> {
    fn get(&self, key: &[u8]) -> rill_history::Result<Option<Vec<u8>>> {
        self.db
            .get_pinned_cf(self.cf, key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| storage("read", e))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut rill_history::ScanVisitor<'_>,
    ) -> rill_history::Result<()> {
        let mut opts = ReadOptions::default();
        opts.set_iterate_lower_bound(start.to_vec());
        opts.set_iterate_upper_bound(end.to_vec());
        // The raw iterator lends its key and value: nothing is copied per key read.
        let mut iter = self.db.raw_iterator_cf_opt(self.cf, opts);
        if reverse {
            iter.seek_to_last();
        } else {
            iter.seek(start);
        }
        while let (Some(key), Some(value)) = (iter.key(), iter.value()) {
            if visit(key, value).is_break() {
                return Ok(());
            }
            if reverse {
                iter.prev();
            } else {
                iter.next();
            }
        }
        iter.status().map_err(|e| storage("scan", e))
    }
}

/// Answers a history query from a state database.
pub fn answer(db: &StateDb, query: &Query) -> Result<QueryResult> {
    let history = CfHistory::new(db)?;
    Ok(rill_history::answer(&history, query)?)
}

impl<E: ProtocolEngine> Partition<E> {
    /// Answers a query: a history query from the history store (read on the io runtime,
    /// not in the partition's actor), any other from the engine (which answers none:
    /// the history store is the one read model).
    pub async fn answer(&self, query: Query) -> Result<QueryResult> {
        if !query.is_history() {
            return self.query(query).await;
        }
        let db = self.history_db().await?;
        self.io()
            .spawn_blocking(move || answer(&db, &query))
            .await
            .map_err(|e| Error::Actor(ActorError::Task(e)))?
    }
}
