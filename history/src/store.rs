//! Reading the store, and the writer that turns applied records into entries.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use rill_protocol::history::HistoricProcessInstance;
use rill_protocol::value::BpmnElementType;
use rill_protocol::{
    Intent, Key, ProcessInstanceState, Record, RecordType, RecordValue, Timestamp, codec,
};

use crate::keys;
use crate::{HistoryError, Result};

/// Visits one key and value of a scan; `Break` ends it.
pub type ScanVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// Ordered bytes-to-bytes reads of the store (a RocksDB column family in the broker).
pub trait HistoryRead {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Visits the keys in `[start, end)` in order (backwards with `reverse`) until the
    /// visitor breaks.
    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut ScanVisitor<'_>,
    ) -> Result<()>;
}

/// The smallest key greater than every key starting with `prefix`.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![u8::MAX; prefix.len() + 1]
}

pub(crate) fn decode_instance(key: &[u8], bytes: &[u8]) -> Result<HistoricProcessInstance> {
    codec::decode(bytes).map_err(|e| HistoryError::Corrupt {
        key: format!("{key:02x?}"),
        reason: e.to_string(),
    })
}

pub(crate) fn read_instance<R: HistoryRead + ?Sized>(
    read: &R,
    key: Key,
) -> Result<Option<HistoricProcessInstance>> {
    let k = keys::instance(key);
    match read.get(&k)? {
        Some(bytes) => decode_instance(&k, &bytes).map(Some),
        None => Ok(None),
    }
}

/// The end date of the finished instance that ended first, if any is kept.
pub fn oldest_finished<R: HistoryRead + ?Sized>(read: &R) -> Result<Option<Timestamp>> {
    let start = [keys::BY_END];
    let mut oldest = None;
    read.scan(&start, &prefix_end(&start), false, &mut |key, _| {
        oldest = key.get(1..9).and_then(keys::read_int).map(Timestamp);
        ControlFlow::Break(())
    })?;
    Ok(oldest)
}

/// The history store in memory (tests, and backends without RocksDB).
#[derive(Default, Clone, Debug)]
pub struct MemoryHistory {
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl MemoryHistory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a writer's changes.
    pub fn apply(&mut self, writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>) {
        for (key, value) in writes {
            match value {
                Some(value) => self.entries.insert(key, value),
                None => self.entries.remove(&key),
            };
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl HistoryRead for MemoryHistory {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.entries.get(key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut ScanVisitor<'_>,
    ) -> Result<()> {
        let range = self.entries.range(start.to_vec()..end.to_vec());
        let mut go = |(k, v): (&Vec<u8>, &Vec<u8>)| visit(k, v).is_continue();
        if reverse {
            for entry in range.rev() {
                if !go(entry) {
                    break;
                }
            }
        } else {
            for entry in range {
                if !go(entry) {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Buffers the store's changes for one applied batch: reads see them, and the caller
/// writes [`HistoryWriter::into_writes`] in the batch's write.
pub struct HistoryWriter<'a> {
    base: &'a dyn HistoryRead,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl<'a> HistoryWriter<'a> {
    pub fn new(base: &'a dyn HistoryRead) -> Self {
        HistoryWriter {
            base,
            writes: BTreeMap::new(),
        }
    }

    pub fn into_writes(self) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
        self.writes
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    fn get_instance(&self, key: Key) -> Result<Option<HistoricProcessInstance>> {
        let k = keys::instance(key);
        let bytes = match self.writes.get(&k) {
            Some(value) => value.clone(),
            None => self.base.get(&k)?,
        };
        bytes.map(|b| decode_instance(&k, &b)).transpose()
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.writes.insert(key, Some(value));
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.writes.insert(key, None);
    }

    fn put_instance(&mut self, instance: &HistoricProcessInstance) -> Result<()> {
        let bytes = codec::encode(instance).map_err(|e| HistoryError::Corrupt {
            key: instance.key.to_string(),
            reason: e.to_string(),
        })?;
        self.put(keys::instance(instance.key), bytes);
        Ok(())
    }

    /// The index keys of an instance in its current state.
    fn index_keys(instance: &HistoricProcessInstance) -> Vec<Vec<u8>> {
        let key = instance.key;
        let state = Some(instance.state);
        let id = &instance.bpmn_process_id;
        let definition = instance.process_definition_key;
        let mut out = vec![
            keys::with_key(keys::by_state(state), key),
            keys::with_key(keys::by_process(id, None), key),
            keys::with_key(keys::by_process(id, state), key),
            keys::with_key(keys::by_definition(definition, None), key),
            keys::with_key(keys::by_definition(definition, state), key),
        ];
        if let Some(end) = instance.end_date {
            out.push(keys::by_end(end, key));
        }
        out
    }

    /// Takes in one applied record. Only process instance lifecycle events (of the process
    /// itself) and incident events change the store.
    pub fn index(&mut self, record: &Record) -> Result<()> {
        if record.record_type != RecordType::Event {
            return Ok(());
        }
        match &record.value {
            RecordValue::ProcessInstance(value)
                if value.bpmn_element_type == BpmnElementType::Process =>
            {
                let key = Key(value.process_instance_key);
                match record.intent {
                    Intent::ElementActivating => {
                        let instance = HistoricProcessInstance {
                            key,
                            bpmn_process_id: value.bpmn_process_id.clone(),
                            version: value.version,
                            process_definition_key: Key(value.process_definition_key),
                            state: ProcessInstanceState::Active,
                            incidents: 0,
                            start_date: record.timestamp,
                            end_date: None,
                            parent_process_instance_key: (value.parent_process_instance_key > 0)
                                .then_some(Key(value.parent_process_instance_key)),
                            parent_element_instance_key: (value.parent_element_instance_key > 0)
                                .then_some(Key(value.parent_element_instance_key)),
                            tenant_id: value.tenant_id.clone(),
                        };
                        self.replace(None, &instance)?;
                    }
                    Intent::ElementCompleted | Intent::ElementTerminated => {
                        if let Some(old) = self.get_instance(key)? {
                            let mut new = old.clone();
                            new.state = if record.intent == Intent::ElementCompleted {
                                ProcessInstanceState::Completed
                            } else {
                                ProcessInstanceState::Terminated
                            };
                            new.end_date = Some(record.timestamp);
                            self.replace(Some(&old), &new)?;
                        }
                    }
                    _ => {}
                }
            }
            RecordValue::Incident(value) => {
                let up = match record.intent {
                    Intent::Created => true,
                    Intent::Resolved => false,
                    _ => return Ok(()),
                };
                if let Some(mut instance) = self.get_instance(Key(value.process_instance_key))? {
                    instance.incidents = if up {
                        instance.incidents.saturating_add(1)
                    } else {
                        instance.incidents.saturating_sub(1)
                    };
                    self.put_instance(&instance)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Writes `new` in place of `old`, moving its index entries.
    fn replace(
        &mut self,
        old: Option<&HistoricProcessInstance>,
        new: &HistoricProcessInstance,
    ) -> Result<()> {
        let new_keys = Self::index_keys(new);
        if let Some(old) = old {
            for key in Self::index_keys(old) {
                if !new_keys.contains(&key) {
                    self.delete(key);
                }
            }
        }
        for key in new_keys {
            self.put(key, Vec::new());
        }
        self.put_instance(new)
    }

    /// Removes finished instances that ended before `before`, oldest first, at most
    /// `limit`. Returns how many were removed.
    pub fn expire(&mut self, before: Timestamp, limit: usize) -> Result<usize> {
        let start = [keys::BY_END];
        let end = keys::by_end(before, Key(i64::MIN));
        let mut expired = Vec::new();
        self.base.scan(&start, &end, false, &mut |key, _| {
            if let Some(k) = keys::trailing_key(key) {
                expired.push(k);
            }
            if expired.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        let mut removed = 0;
        for key in expired {
            let Some(instance) = self.get_instance(key)? else {
                continue;
            };
            if instance.end_date.is_none_or(|end| end >= before) {
                continue;
            }
            for index in Self::index_keys(&instance) {
                self.delete(index);
            }
            self.delete(keys::instance(key));
            removed += 1;
        }
        Ok(removed)
    }
}
