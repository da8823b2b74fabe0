//! The engine's tables over ordered key-value state.
//!
//! [`Reader`] is the read-only view that processors and queries use. [`Writer`] adds
//! the mutations, and only event appliers get one: state changes only by applying
//! event records, so replaying the events rebuilds the state.
//!
//! This module holds the two views and their raw access; the methods of each table
//! are in the table's own module (`jobs.rs`, `messages.rs`, ...), as `impl Reader` and
//! `impl Writer` blocks.

mod awaits;
mod cache;
mod compensations;
mod definitions;
mod distribution;
mod due;
mod element_instances;
mod floors;
mod forms;
mod incidents;
mod jobs;
mod keys;
mod message_subscriptions;
mod messages;
mod resources;
mod rpa_resources;
mod signals;
mod timers;
mod types;
mod user_tasks;
mod users;
mod variables;

use std::ops::ControlFlow;

use rill_engine_api::{StateRead, StateTxn};
use rill_protocol::codec;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) use cache::ElementCache;
pub use due::DueIndex;
use due::due_key;
pub(crate) use floors::ScanFloors;
pub(crate) use keys::{AsKey, KeyBuf, table};
pub use types::{
    AwaitRegistration, ElementInstance, ElementState, JobState, ListenerTransition,
    MessageStartSubscription, MultiInstanceCounts, OutboxEntry, PendingTrigger, StoredIncident,
    StoredJob, StoredMessage, StoredMessageSubscription, StoredProcessMessageSubscription,
    StoredSignalSubscription, StoredUserTask, StoredVariable, UserTaskState,
};

use crate::error::{Result, inconsistent};

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    Ok(codec::decode(bytes)?)
}

/// Read-only typed access to the engine's tables.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    raw: &'a dyn StateRead,
    /// Element instances changed by the command being processed, not yet written.
    cache: Option<&'a ElementCache>,
    floors: Option<&'a ScanFloors>,
}

impl<'a> Reader<'a> {
    pub fn new(raw: &'a dyn StateRead) -> Reader<'a> {
        Reader {
            raw,
            cache: None,
            floors: None,
        }
    }

    pub(crate) fn with_cache(
        raw: &'a dyn StateRead,
        cache: &'a ElementCache,
        floors: &'a ScanFloors,
    ) -> Reader<'a> {
        Reader {
            raw,
            cache: Some(cache),
            floors: Some(floors),
        }
    }

    /// A reader whose scans of queue-like indexes start at their floors.
    pub(crate) fn with_floors(raw: &'a dyn StateRead, floors: &'a ScanFloors) -> Reader<'a> {
        Reader {
            raw,
            cache: None,
            floors: Some(floors),
        }
    }

    fn get<T: DeserializeOwned>(&self, key: KeyBuf) -> Result<Option<T>> {
        match self.raw.get(key.bytes())? {
            Some(bytes) => Ok(Some(decode(&bytes)?)),
            None => Ok(None),
        }
    }

    fn get_i64(&self, key: KeyBuf) -> Result<Option<i64>> {
        match self.raw.get(key.bytes())? {
            Some(bytes) => keys::decode_i64(&bytes, 0)
                .map(Some)
                .ok_or_else(|| inconsistent("index value is not a key")),
            None => Ok(None),
        }
    }

    fn exists(&self, key: KeyBuf) -> Result<bool> {
        Ok(self.raw.get(key.bytes())?.is_some())
    }

    /// Visits every entry under `prefix` until `visit` breaks.
    fn scan(
        &self,
        prefix: &KeyBuf,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let mut failure = None;
        self.raw
            .scan_prefix(prefix.bytes(), &mut |k, v| match visit(k, v) {
                Ok(flow) => flow,
                Err(e) => {
                    failure = Some(e);
                    ControlFlow::Break(())
                }
            })?;
        failure.map_or(Ok(()), Err)
    }

    /// Like [`Reader::scan`] for a queue-like index (see [`ScanFloors`]): starts at the
    /// prefix's floor and moves the floor to the lowest live key it meets.
    fn scan_floored(
        &self,
        prefix: &KeyBuf,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let Some(floors) = self.floors else {
            return self.scan(prefix, visit);
        };
        let prefix = prefix.bytes();
        let end = rill_engine_api::prefix_end(prefix);
        let start = floors.start(prefix).unwrap_or_else(|| prefix.to_vec());
        let mut first: Option<Vec<u8>> = None;
        let mut failure = None;
        self.raw.scan(&start, &end, &mut |k, v| {
            if first.is_none() {
                first = Some(k.to_vec());
            }
            match visit(k, v) {
                Ok(flow) => flow,
                Err(e) => {
                    failure = Some(e);
                    ControlFlow::Break(())
                }
            }
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        floors.settle(prefix, first.unwrap_or(end));
        Ok(())
    }

    /// The trailing keys of every entry under `prefix`, at most `limit`.
    fn trailing_keys(&self, prefix: &KeyBuf, limit: usize) -> Result<Vec<i64>> {
        self.trailing_keys_from(prefix, limit, false)
    }

    fn trailing_keys_from(&self, prefix: &KeyBuf, limit: usize, floored: bool) -> Result<Vec<i64>> {
        let mut out = Vec::new();
        let collect = |k: &[u8], _: &[u8]| {
            if out.len() >= limit {
                return Ok(ControlFlow::Break(()));
            }
            out.push(keys::trailing_i64(k).ok_or_else(|| inconsistent("short index key"))?);
            Ok(ControlFlow::Continue(()))
        };
        if floored {
            self.scan_floored(prefix, collect)?;
        } else {
            self.scan(prefix, collect)?;
        }
        Ok(out)
    }
}

const EMPTY: &[u8] = &[];

/// Mutable typed access. Only event appliers construct one.
pub struct Writer<'a> {
    raw: &'a mut dyn StateTxn,
    cache: &'a ElementCache,
    floors: &'a ScanFloors,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(
        raw: &'a mut dyn StateTxn,
        cache: &'a ElementCache,
        floors: &'a ScanFloors,
    ) -> Writer<'a> {
        Writer { raw, cache, floors }
    }

    pub fn read(&self) -> Reader<'_> {
        Reader::with_cache(&*self.raw, self.cache, self.floors)
    }

    fn put<T: Serialize>(&mut self, key: KeyBuf, value: &T) -> Result<()> {
        let bytes = codec::encode(value)?;
        self.floors.lower(key.bytes());
        self.raw.put(key.bytes(), &bytes);
        Ok(())
    }

    fn put_i64(&mut self, key: KeyBuf, value: i64) {
        self.floors.lower(key.bytes());
        self.raw.put(key.bytes(), &keys::encode_i64(value));
    }

    fn mark(&mut self, key: KeyBuf) {
        self.floors.lower(key.bytes());
        self.raw.put(key.bytes(), EMPTY);
    }

    fn delete(&mut self, key: KeyBuf) {
        self.raw.delete(key.bytes());
    }

    fn delete_prefix(&mut self, prefix: KeyBuf) -> Result<()> {
        let mut doomed = Vec::new();
        self.raw.scan_prefix(prefix.bytes(), &mut |k, _| {
            doomed.push(k.to_vec());
            ControlFlow::Continue(())
        })?;
        for key in doomed {
            self.raw.delete(&key);
        }
        Ok(())
    }
}
