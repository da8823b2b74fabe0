//! The engine's tables over ordered key-value state.
//!
//! [`Reader`] is the read-only view that processors and queries use. [`Writer`] adds
//! the mutations, and only event appliers get one: state changes only by applying
//! event records, so replaying the events rebuilds the state.

mod cache;
mod compensations;
mod floors;
mod keys;
mod resources;
mod signals;
mod types;

use std::ops::ControlFlow;

use rill_engine_api::{StateRead, StateTxn};
use rill_protocol::value::{
    DecisionRecord, DecisionRequirementsRecord, IncidentRecord, ProcessRecord, TimerRecord,
};
use rill_protocol::{Key, codec};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) use cache::ElementCache;
pub(crate) use floors::ScanFloors;
pub(crate) use keys::{AsKey, KeyBuf, table};
pub use types::{
    AwaitRegistration, ElementInstance, ElementState, InstanceState, InstanceSummary, JobState,
    ListenerTransition, MessageStartSubscription, MultiInstanceCounts, OutboxEntry, PendingTrigger,
    StoredIncident, StoredJob, StoredMessage, StoredMessageSubscription,
    StoredProcessMessageSubscription, StoredSignalSubscription, StoredUserTask, StoredVariable,
    UserTaskState,
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

    // --- process definitions ---

    pub fn process(&self, key: impl AsKey) -> Result<Option<ProcessRecord>> {
        self.get(KeyBuf::new(table::PROCESS).key(key))
    }

    pub fn process_key_by_version(
        &self,
        bpmn_process_id: &str,
        version: i32,
    ) -> Result<Option<Key>> {
        let key = self.get_i64(
            KeyBuf::new(table::PROCESS_VERSION)
                .str(bpmn_process_id)
                .i32(version),
        )?;
        Ok(key.map(Key))
    }

    /// The latest version of a process id and its definition key.
    pub fn latest_process(&self, bpmn_process_id: &str) -> Result<Option<(i32, Key)>> {
        self.get(KeyBuf::new(table::PROCESS_LATEST).str(bpmn_process_id))
    }

    /// All process definitions, ordered by key.
    pub fn processes(&self, mut visit: impl FnMut(ProcessRecord) -> bool) -> Result<()> {
        self.scan(&KeyBuf::new(table::PROCESS), |_, v| {
            Ok(if visit(decode(v)?) {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            })
        })
    }

    /// The deployment that created a process definition.
    pub fn deployment_of_process(&self, definition_key: impl AsKey) -> Result<Option<Key>> {
        Ok(self
            .get_i64(KeyBuf::new(table::PROCESS_DEPLOYMENT).key(definition_key))?
            .map(Key))
    }

    /// The definition of `bpmn_process_id` that a deployment deployed, if any.
    pub fn process_in_deployment(
        &self,
        deployment_key: impl AsKey,
        bpmn_process_id: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::DEPLOYMENT_PROCESS)
                    .key(deployment_key)
                    .str(bpmn_process_id),
            )?
            .map(Key))
    }

    pub fn deployment(
        &self,
        key: impl AsKey,
    ) -> Result<Option<rill_protocol::value::DeploymentRecord>> {
        self.get(KeyBuf::new(table::DEPLOYMENT).key(key))
    }

    // --- decisions (DMN) ---

    pub fn decision(&self, key: impl AsKey) -> Result<Option<DecisionRecord>> {
        self.get(KeyBuf::new(table::DECISION).key(key))
    }

    pub fn decision_key_by_version(&self, decision_id: &str, version: i32) -> Result<Option<Key>> {
        let key = self.get_i64(
            KeyBuf::new(table::DECISION_VERSION)
                .str(decision_id)
                .i32(version),
        )?;
        Ok(key.map(Key))
    }

    /// The latest version of a decision id and its key.
    pub fn latest_decision(&self, decision_id: &str) -> Result<Option<(i32, Key)>> {
        self.get(KeyBuf::new(table::DECISION_LATEST).str(decision_id))
    }

    pub fn decision_requirements(
        &self,
        key: impl AsKey,
    ) -> Result<Option<DecisionRequirementsRecord>> {
        self.get(KeyBuf::new(table::DECISION_REQUIREMENTS).key(key))
    }

    /// The latest version of a decision requirements id and its key.
    pub fn latest_decision_requirements(&self, id: &str) -> Result<Option<(i32, Key)>> {
        self.get(KeyBuf::new(table::DECISION_REQUIREMENTS_LATEST).str(id))
    }

    /// The decision with this id that a deployment deployed, if any.
    pub fn decision_in_deployment(
        &self,
        deployment_key: impl AsKey,
        decision_id: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::DEPLOYMENT_DECISION)
                    .key(deployment_key)
                    .str(decision_id),
            )?
            .map(Key))
    }

    // --- outbox and inbox (commands between partitions) ---

    /// Pending sends in order: `(target partition, sequence, entry)`.
    pub fn outbox(&self, limit: usize) -> Result<Vec<(u16, u64, OutboxEntry)>> {
        let mut out = Vec::new();
        self.scan(&KeyBuf::new(table::OUTBOX), |k, v| {
            if out.len() >= limit {
                return Ok(ControlFlow::Break(()));
            }
            let target = keys::decode_i64(k, 1).ok_or_else(|| inconsistent("bad outbox key"))?;
            let sequence = keys::decode_i64(k, 9).ok_or_else(|| inconsistent("bad outbox key"))?;
            out.push((target as u16, sequence as u64, decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn outbox_entry(&self, target: u16, sequence: u64) -> Result<Option<OutboxEntry>> {
        self.get(
            KeyBuf::new(table::OUTBOX)
                .i64(i64::from(target))
                .i64(sequence as i64),
        )
    }

    /// The last sequence number used for sends to `target`.
    pub fn outbox_sequence(&self, target: u16) -> Result<u64> {
        Ok(self
            .get::<u64>(KeyBuf::new(table::OUTBOX_SEQUENCE).i64(i64::from(target)))?
            .unwrap_or(0))
    }

    /// The last sequence number applied from `source`.
    pub fn inbox_sequence(&self, source: u16) -> Result<u64> {
        Ok(self
            .get::<u64>(KeyBuf::new(table::INBOX).i64(i64::from(source)))?
            .unwrap_or(0))
    }

    // --- element instances ---

    pub fn element_instance(&self, key: impl AsKey) -> Result<Option<ElementInstance>> {
        let load = || self.get(KeyBuf::new(table::ELEMENT_INSTANCE).key(key));
        match self.cache {
            Some(cache) => cache.get(key.as_key().get(), load),
            None => load(),
        }
    }

    /// Looks at a live element instance without copying it.
    pub fn peek_element_instance<R>(
        &self,
        key: impl AsKey,
        look: impl FnOnce(&ElementInstance) -> R,
    ) -> Result<Option<R>> {
        let load = || self.get(KeyBuf::new(table::ELEMENT_INSTANCE).key(key));
        match self.cache {
            Some(cache) => cache.peek(key.as_key().get(), load, look),
            None => Ok(load()?.as_ref().map(look)),
        }
    }

    /// Keys of the live child element instances of a scope, in creation order.
    pub fn children(&self, scope_key: impl AsKey) -> Result<Vec<i64>> {
        let prefix = KeyBuf::new(table::ELEMENT_CHILD).key(scope_key);
        let mut children = self.trailing_keys(&prefix, usize::MAX)?;
        if let Some(cache) = self.cache {
            cache.merge_children(scope_key.as_key().get(), &mut children);
        }
        Ok(children)
    }

    /// Tokens waiting at a parallel join: `(incoming flow id, count)`.
    pub fn join_tokens(
        &self,
        scope_key: impl AsKey,
        gateway_id: &str,
    ) -> Result<Vec<(String, u32)>> {
        let prefix = KeyBuf::new(table::JOIN_TOKEN)
            .key(scope_key)
            .str(gateway_id);
        let at = prefix.bytes().len();
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let (flow, _) =
                keys::decode_str(k, at).ok_or_else(|| inconsistent("bad join token key"))?;
            out.push((flow.to_owned(), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// The gateways of a scope where tokens wait (parallel and inclusive joins), each
    /// once, in key order.
    pub fn gateways_with_tokens(&self, scope_key: impl AsKey) -> Result<Vec<String>> {
        let prefix = KeyBuf::new(table::JOIN_TOKEN).key(scope_key);
        let at = prefix.bytes().len();
        let mut out: Vec<String> = Vec::new();
        self.scan(&prefix, |k, _| {
            let (gateway, _) =
                keys::decode_str(k, at).ok_or_else(|| inconsistent("bad join token key"))?;
            if out.last().map(String::as_str) != Some(gateway) {
                out.push(gateway.to_owned());
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// How many inner instances of a multi-instance body were created and completed.
    pub fn multi_instance_counts(&self, body_key: impl AsKey) -> Result<MultiInstanceCounts> {
        Ok(self
            .get(KeyBuf::new(table::MULTI_INSTANCE_BODY).key(body_key))?
            .unwrap_or_default())
    }

    /// The loop counter of a multi-instance inner instance (from 1).
    pub fn loop_counter(&self, inner_key: impl AsKey) -> Result<Option<u32>> {
        self.get(KeyBuf::new(table::LOOP_COUNTER).key(inner_key))
    }

    /// The output elements collected by a multi-instance body: `(loop counter, JSON
    /// text)`, in loop-counter order.
    pub fn multi_instance_outputs(&self, body_key: impl AsKey) -> Result<Vec<(u32, String)>> {
        let prefix = KeyBuf::new(table::MULTI_INSTANCE_OUTPUT).key(body_key);
        let at = prefix.bytes().len();
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let counter = keys::decode_i64(k, at).ok_or_else(|| inconsistent("bad output key"))?;
            out.push((u32::try_from(counter).unwrap_or(u32::MAX), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    // --- variables ---

    pub fn variable(
        &self,
        instance: impl AsKey,
        scope: impl AsKey,
        name: &str,
    ) -> Result<Option<StoredVariable>> {
        self.get(variable_key(instance, scope, name))
    }

    /// The variables of one scope, by name.
    pub fn scope_variables(
        &self,
        instance: impl AsKey,
        scope: impl AsKey,
    ) -> Result<Vec<(String, StoredVariable)>> {
        let prefix = KeyBuf::new(table::VARIABLE).key(instance).key(scope);
        let at = prefix.bytes().len();
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let (name, _) =
                keys::decode_str(k, at).ok_or_else(|| inconsistent("bad variable key"))?;
            out.push((name.to_owned(), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// Every variable of a process instance: `(scope key, name, variable)`.
    pub fn instance_variables(
        &self,
        instance: impl AsKey,
    ) -> Result<Vec<(i64, String, StoredVariable)>> {
        let prefix = KeyBuf::new(table::VARIABLE).key(instance);
        let at = prefix.bytes().len();
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let scope = keys::decode_i64(k, at).ok_or_else(|| inconsistent("bad variable key"))?;
            let (name, _) =
                keys::decode_str(k, at + 8).ok_or_else(|| inconsistent("bad variable key"))?;
            out.push((scope, name.to_owned(), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    // --- jobs ---

    pub fn job(&self, key: impl AsKey) -> Result<Option<StoredJob>> {
        let mut job: Option<StoredJob> = self.get(KeyBuf::new(table::JOB).key(key))?;
        if let Some(job) = &mut job {
            job.record.variables = rill_protocol::JsonValue::empty_object();
        }
        Ok(job)
    }

    /// Activatable jobs of a type, oldest first.
    pub fn activatable_jobs(&self, job_type: &str, limit: usize) -> Result<Vec<Key>> {
        let keys = self.trailing_keys_from(
            &KeyBuf::new(table::JOB_ACTIVATABLE).str(job_type),
            limit,
            true,
        )?;
        Ok(keys.into_iter().map(Key).collect())
    }

    // --- user tasks and forms ---

    pub fn user_task(&self, key: impl AsKey) -> Result<Option<StoredUserTask>> {
        self.get(KeyBuf::new(table::USER_TASK).key(key))
    }

    pub fn form(&self, key: impl AsKey) -> Result<Option<rill_protocol::value::FormRecord>> {
        self.get(KeyBuf::new(table::FORM).key(key))
    }

    /// The latest version of a form id and its key.
    pub fn latest_form(&self, form_id: &str) -> Result<Option<(i32, Key)>> {
        let latest: Option<(i32, i64)> = self.get(KeyBuf::new(table::FORM_LATEST).str(form_id))?;
        Ok(latest.map(|(version, key)| (version, Key(key))))
    }

    /// The key of the form of this id that a deployment deployed (or found unchanged).
    pub fn form_in_deployment(
        &self,
        deployment_key: impl AsKey,
        form_id: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::DEPLOYMENT_FORM)
                    .key(deployment_key)
                    .str(form_id),
            )?
            .map(Key))
    }

    /// Every version of a form id, oldest first.
    pub fn form_versions(&self, form_id: &str) -> Result<Vec<Key>> {
        let prefix = KeyBuf::new(table::FORM_VERSION).str(form_id);
        let mut out = Vec::new();
        self.scan(&prefix, |_, v| {
            out.push(Key(
                keys::decode_i64(v, 0).ok_or_else(|| inconsistent("bad form index"))?
            ));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    // --- timers ---

    pub fn timer(&self, key: impl AsKey) -> Result<Option<TimerRecord>> {
        self.get(KeyBuf::new(table::TIMER).key(key))
    }

    /// The event triggers kept for the holder `holder`, by process event key.
    pub fn pending_triggers(&self, holder: impl AsKey) -> Result<Vec<(Key, PendingTrigger)>> {
        let prefix = KeyBuf::new(table::PENDING_TRIGGER).key(holder);
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let key = keys::trailing_i64(k).ok_or_else(|| inconsistent("short trigger key"))?;
            out.push((Key(key), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn timers_of_element(&self, element_instance_key: impl AsKey) -> Result<Vec<Key>> {
        let keys = self.trailing_keys(
            &KeyBuf::new(table::TIMER_BY_ELEMENT).key(element_instance_key),
            usize::MAX,
        )?;
        Ok(keys.into_iter().map(Key).collect())
    }

    // --- messages ---

    pub fn message(&self, key: impl AsKey) -> Result<Option<StoredMessage>> {
        self.get(KeyBuf::new(table::MESSAGE).key(key))
    }

    /// Buffered messages for a name and correlation key, oldest first.
    pub fn messages_for(&self, name: &str, correlation_key: &str) -> Result<Vec<Key>> {
        let keys = self.trailing_keys(
            &KeyBuf::new(table::MESSAGE_BY_NAME)
                .str(name)
                .str(correlation_key),
            usize::MAX,
        )?;
        Ok(keys.into_iter().map(Key).collect())
    }

    pub fn message_with_id(
        &self,
        name: &str,
        correlation_key: &str,
        id: &str,
    ) -> Result<Option<i64>> {
        self.get_i64(
            KeyBuf::new(table::MESSAGE_ID)
                .str(name)
                .str(correlation_key)
                .str(id),
        )
    }

    /// Whether the message was already correlated to an instance of this process.
    /// The message start events a message of this name starts, by process id.
    pub fn message_start_subscriptions(&self, name: &str) -> Result<Vec<MessageStartSubscription>> {
        let mut out = Vec::new();
        self.scan(&KeyBuf::new(table::MESSAGE_START).str(name), |_, v| {
            out.push(decode(v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// The message names whose start events a process's latest version has.
    pub fn message_start_names(&self, bpmn_process_id: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        self.scan(
            &KeyBuf::new(table::MESSAGE_START_BY_PROCESS).str(bpmn_process_id),
            |_, v| {
                out.push(decode(v)?);
                Ok(ControlFlow::Continue(()))
            },
        )?;
        Ok(out)
    }

    /// The active instance of a process that a message with this correlation key started.
    pub fn message_start_lock(
        &self,
        bpmn_process_id: &str,
        correlation_key: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::MESSAGE_START_LOCK)
                    .str(bpmn_process_id)
                    .str(correlation_key),
            )?
            .map(Key))
    }

    pub fn message_correlated(
        &self,
        message_key: impl AsKey,
        bpmn_process_id: &str,
    ) -> Result<bool> {
        self.exists(
            KeyBuf::new(table::MESSAGE_CORRELATED)
                .key(message_key)
                .str(bpmn_process_id),
        )
    }

    /// Subscriptions waiting for `(name, correlation key)`, by element instance key.
    pub fn message_subscriptions(
        &self,
        name: &str,
        correlation_key: &str,
    ) -> Result<Vec<StoredMessageSubscription>> {
        let prefix = KeyBuf::new(table::MESSAGE_SUBSCRIPTION)
            .str(name)
            .str(correlation_key);
        let mut out = Vec::new();
        self.scan(&prefix, |_, v| {
            out.push(decode(v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn message_subscription(
        &self,
        name: &str,
        correlation_key: &str,
        element_instance_key: impl AsKey,
    ) -> Result<Option<StoredMessageSubscription>> {
        self.get(message_subscription_key(
            name,
            correlation_key,
            element_instance_key,
        ))
    }

    pub fn process_message_subscriptions(
        &self,
        element_instance_key: impl AsKey,
    ) -> Result<Vec<StoredProcessMessageSubscription>> {
        let prefix = KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION).key(element_instance_key);
        let mut out = Vec::new();
        self.scan(&prefix, |_, v| {
            out.push(decode(v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn process_message_subscription(
        &self,
        element_instance_key: impl AsKey,
        message_name: &str,
    ) -> Result<Option<StoredProcessMessageSubscription>> {
        self.get(
            KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION)
                .key(element_instance_key)
                .str(message_name),
        )
    }

    // --- incidents ---

    pub fn incident(&self, key: impl AsKey) -> Result<Option<StoredIncident>> {
        self.get(KeyBuf::new(table::INCIDENT).key(key))
    }

    pub fn incidents_of_instance(
        &self,
        process_instance_key: impl AsKey,
    ) -> Result<Vec<StoredIncident>> {
        let keys = self.trailing_keys(
            &KeyBuf::new(table::INCIDENT_BY_INSTANCE).key(process_instance_key),
            usize::MAX,
        )?;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            out.push(
                self.incident(key)?
                    .ok_or_else(|| inconsistent(format!("indexed incident {key} is missing")))?,
            );
        }
        Ok(out)
    }

    pub fn has_incident(&self, process_instance_key: impl AsKey) -> Result<bool> {
        Ok(!self
            .trailing_keys(
                &KeyBuf::new(table::INCIDENT_BY_INSTANCE).key(process_instance_key),
                1,
            )?
            .is_empty())
    }

    pub fn incident_of_element(&self, element_instance_key: impl AsKey) -> Result<Option<Key>> {
        let key =
            self.get_i64(KeyBuf::new(table::INCIDENT_BY_ELEMENT).key(element_instance_key))?;
        Ok(key.map(Key))
    }

    pub fn incident_of_job(&self, job_key: impl AsKey) -> Result<Option<Key>> {
        Ok(self
            .get_i64(KeyBuf::new(table::INCIDENT_BY_JOB).key(job_key))?
            .map(Key))
    }

    // --- instance summaries and awaiting clients ---

    pub fn summary(&self, process_instance_key: impl AsKey) -> Result<Option<InstanceSummary>> {
        self.get(KeyBuf::new(table::INSTANCE_SUMMARY).key(process_instance_key))
    }

    pub fn await_registration(
        &self,
        process_instance_key: impl AsKey,
    ) -> Result<Option<AwaitRegistration>> {
        self.get(KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key))
    }

    // --- due-date indexes ---

    /// Visits `(due, key)` of a time index in due order until `visit` returns false.
    pub fn scan_due(&self, index: DueIndex, mut visit: impl FnMut(i64, i64) -> bool) -> Result<()> {
        self.scan_floored(&KeyBuf::new(index.table()), |k, _| {
            let due = keys::decode_i64(k, 1).ok_or_else(|| inconsistent("bad due index key"))?;
            let key = keys::decode_i64(k, 9).ok_or_else(|| inconsistent("bad due index key"))?;
            Ok(if visit(due, key) {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            })
        })
    }
}

/// The time-ordered indexes the leader polls for due work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DueIndex {
    Timers,
    JobDeadlines,
    JobBackoffs,
    MessageDeadlines,
    /// Finished instance summaries by end date.
    FinishedInstances,
}

impl DueIndex {
    fn table(self) -> u8 {
        match self {
            DueIndex::Timers => table::TIMER_DUE,
            DueIndex::JobDeadlines => table::JOB_DEADLINE,
            DueIndex::JobBackoffs => table::JOB_BACKOFF,
            DueIndex::MessageDeadlines => table::MESSAGE_DEADLINE,
            DueIndex::FinishedInstances => table::INSTANCE_FINISHED,
        }
    }
}

fn variable_key(instance: impl AsKey, scope: impl AsKey, name: &str) -> KeyBuf {
    KeyBuf::new(table::VARIABLE)
        .key(instance)
        .key(scope)
        .str(name)
}

fn message_subscription_key(
    name: &str,
    correlation_key: &str,
    element_instance_key: impl AsKey,
) -> KeyBuf {
    KeyBuf::new(table::MESSAGE_SUBSCRIPTION)
        .str(name)
        .str(correlation_key)
        .key(element_instance_key)
}

fn due_key(index: DueIndex, due: i64, key: impl AsKey) -> KeyBuf {
    KeyBuf::new(index.table()).i64(due).key(key)
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

    // --- process definitions ---

    pub fn put_process(&mut self, record: &ProcessRecord) -> Result<()> {
        let key = record.process_definition_key;
        self.put(KeyBuf::new(table::PROCESS).key(key), record)?;
        self.put_i64(
            KeyBuf::new(table::PROCESS_VERSION)
                .str(&record.bpmn_process_id)
                .i32(record.version),
            key,
        );
        let newer = match self.read().latest_process(&record.bpmn_process_id)? {
            Some((version, _)) => record.version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::PROCESS_LATEST).str(&record.bpmn_process_id),
                &(record.version, key),
            )?;
        }
        Ok(())
    }

    pub fn put_decision(&mut self, record: &DecisionRecord) -> Result<()> {
        let key = record.decision_key;
        self.put(KeyBuf::new(table::DECISION).key(key), record)?;
        self.put_i64(
            KeyBuf::new(table::DECISION_VERSION)
                .str(&record.decision_id)
                .i32(record.version),
            key,
        );
        self.note_highest(table::DECISION_HIGHEST, &record.decision_id, record.version)?;
        self.mark(
            KeyBuf::new(table::DECISION_BY_REQUIREMENTS)
                .i64(record.decision_requirements_key)
                .i64(key),
        );
        let newer = match self.read().latest_decision(&record.decision_id)? {
            Some((version, _)) => record.version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::DECISION_LATEST).str(&record.decision_id),
                &(record.version, key),
            )?;
        }
        Ok(())
    }

    pub fn put_decision_requirements(&mut self, record: &DecisionRequirementsRecord) -> Result<()> {
        let key = record.decision_requirements_key;
        self.put(KeyBuf::new(table::DECISION_REQUIREMENTS).key(key), record)?;
        let id = &record.decision_requirements_id;
        let version = record.decision_requirements_version;
        self.put_i64(
            KeyBuf::new(table::DECISION_REQUIREMENTS_VERSION)
                .str(id)
                .i32(version),
            key,
        );
        self.note_highest(table::DECISION_REQUIREMENTS_HIGHEST, id, version)?;
        let newer = match self.read().latest_decision_requirements(id)? {
            Some((version, _)) => record.decision_requirements_version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::DECISION_REQUIREMENTS_LATEST).str(id),
                &(record.decision_requirements_version, key),
            )?;
        }
        Ok(())
    }

    pub fn put_deployment(
        &mut self,
        key: impl AsKey,
        record: &rill_protocol::value::DeploymentRecord,
    ) -> Result<()> {
        self.put(KeyBuf::new(table::DEPLOYMENT).key(key), record)?;
        for form in &record.form_metadata {
            self.put_deployment_form(key, &form.form_id, form.form_key);
        }
        for process in &record.processes_metadata {
            self.put_i64(
                KeyBuf::new(table::DEPLOYMENT_PROCESS)
                    .key(key)
                    .str(&process.bpmn_process_id),
                process.process_definition_key,
            );
            if !process.is_duplicate {
                self.put_i64(
                    KeyBuf::new(table::PROCESS_DEPLOYMENT).i64(process.process_definition_key),
                    key.as_key().get(),
                );
            }
        }
        for decision in &record.decisions_metadata {
            self.put_i64(
                KeyBuf::new(table::DEPLOYMENT_DECISION)
                    .key(key)
                    .str(&decision.decision_id),
                decision.decision_key,
            );
        }
        Ok(())
    }

    /// Queues a command for `target` under the next sequence number.
    pub fn push_outbox(&mut self, target: u16, entry: &OutboxEntry) -> Result<u64> {
        let sequence = self.read().outbox_sequence(target)? + 1;
        self.put(
            KeyBuf::new(table::OUTBOX_SEQUENCE).i64(i64::from(target)),
            &sequence,
        )?;
        self.put(
            KeyBuf::new(table::OUTBOX)
                .i64(i64::from(target))
                .i64(sequence as i64),
            entry,
        )?;
        Ok(sequence)
    }

    pub fn remove_outbox(&mut self, target: u16, sequence: u64) {
        self.delete(
            KeyBuf::new(table::OUTBOX)
                .i64(i64::from(target))
                .i64(sequence as i64),
        );
    }

    pub fn set_inbox_sequence(&mut self, source: u16, sequence: u64) -> Result<()> {
        self.put(KeyBuf::new(table::INBOX).i64(i64::from(source)), &sequence)
    }

    // --- element instances ---

    pub fn insert_element_instance(&mut self, instance: ElementInstance) {
        self.cache.insert(instance);
    }

    /// Changes a live element instance in place; false if there is none.
    pub fn update_element_instance(
        &mut self,
        key: impl AsKey,
        change: impl FnOnce(&mut ElementInstance),
    ) -> Result<bool> {
        let raw: &dyn StateRead = &*self.raw;
        let load = || Reader::new(raw).get(KeyBuf::new(table::ELEMENT_INSTANCE).key(key));
        self.cache.update(key.as_key().get(), load, change)
    }

    pub fn delete_element_instance(&mut self, key: impl AsKey) {
        self.cache.delete(key.as_key().get());
    }

    pub fn add_child(&mut self, scope_key: impl AsKey, child_key: impl AsKey) {
        self.cache
            .set_child(scope_key.as_key().get(), child_key.as_key().get(), true);
    }

    pub fn remove_child(&mut self, scope_key: impl AsKey, child_key: impl AsKey) {
        self.cache
            .set_child(scope_key.as_key().get(), child_key.as_key().get(), false);
    }

    pub fn set_join_tokens(
        &mut self,
        scope_key: impl AsKey,
        gateway_id: &str,
        flow_id: &str,
        count: u32,
    ) -> Result<()> {
        let key = KeyBuf::new(table::JOIN_TOKEN)
            .key(scope_key)
            .str(gateway_id)
            .str(flow_id);
        if count == 0 {
            self.delete(key);
            Ok(())
        } else {
            self.put(key, &count)
        }
    }

    pub fn join_token_count(
        &self,
        scope_key: impl AsKey,
        gateway_id: &str,
        flow_id: &str,
    ) -> Result<u32> {
        let key = KeyBuf::new(table::JOIN_TOKEN)
            .key(scope_key)
            .str(gateway_id)
            .str(flow_id);
        Ok(self.read().get(key)?.unwrap_or(0))
    }

    pub fn delete_join_tokens(&mut self, scope_key: impl AsKey) -> Result<()> {
        self.delete_prefix(KeyBuf::new(table::JOIN_TOKEN).key(scope_key))
    }

    pub fn put_multi_instance_counts(
        &mut self,
        body_key: impl AsKey,
        counts: &MultiInstanceCounts,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::MULTI_INSTANCE_BODY).key(body_key),
            counts,
        )
    }

    pub fn put_loop_counter(&mut self, inner_key: impl AsKey, counter: u32) -> Result<()> {
        self.put(KeyBuf::new(table::LOOP_COUNTER).key(inner_key), &counter)
    }

    pub fn delete_loop_counter(&mut self, inner_key: impl AsKey) {
        self.delete(KeyBuf::new(table::LOOP_COUNTER).key(inner_key));
    }

    pub fn put_multi_instance_output(
        &mut self,
        body_key: impl AsKey,
        counter: u32,
        json: &String,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::MULTI_INSTANCE_OUTPUT)
                .key(body_key)
                .i64(i64::from(counter)),
            json,
        )
    }

    /// Removes what a multi-instance body kept (its counts and collected outputs).
    pub fn delete_multi_instance(&mut self, body_key: impl AsKey) -> Result<()> {
        self.delete(KeyBuf::new(table::MULTI_INSTANCE_BODY).key(body_key));
        self.delete_prefix(KeyBuf::new(table::MULTI_INSTANCE_OUTPUT).key(body_key))
    }

    // --- variables ---

    pub fn put_variable(
        &mut self,
        instance: impl AsKey,
        scope: impl AsKey,
        name: &str,
        variable: &StoredVariable,
    ) -> Result<()> {
        self.put(variable_key(instance, scope, name), variable)
    }

    pub fn delete_scope_variables(
        &mut self,
        instance: impl AsKey,
        scope: impl AsKey,
    ) -> Result<()> {
        self.delete_prefix(KeyBuf::new(table::VARIABLE).key(instance).key(scope))
    }

    pub fn delete_instance_variables(&mut self, instance: impl AsKey) -> Result<()> {
        self.delete_prefix(KeyBuf::new(table::VARIABLE).key(instance))
    }

    // --- jobs ---

    /// Stores a job and keeps its indexes in line with its state.
    /// Stores a job (without its variables) and keeps its indexes in line with its
    /// state; `previous` is what was stored before, if anything.
    pub fn put_job(
        &mut self,
        key: impl AsKey,
        state: JobState,
        record: &rill_protocol::value::JobRecord,
        previous: Option<&StoredJob>,
    ) -> Result<()> {
        if let Some(previous) = previous {
            self.unindex_job(key, previous);
        }
        self.index_job(key, state, record);
        self.put(
            KeyBuf::new(table::JOB).key(key),
            &types::StoredJobRef::new(state, record),
        )
    }

    /// Removes every index entry a job with this record can have, without reading
    /// its stored state (the record carries the type, deadline and back-off time).
    pub fn unindex_job_record(
        &mut self,
        key: impl AsKey,
        record: &rill_protocol::value::JobRecord,
    ) {
        // An activated job (it has a deadline) is never in the activatable index.
        if record.deadline >= 0 {
            self.delete(due_key(DueIndex::JobDeadlines, record.deadline, key));
        } else {
            self.delete(
                KeyBuf::new(table::JOB_ACTIVATABLE)
                    .str(&record.job_type)
                    .key(key),
            );
        }
        if record.recurring_time >= 0 {
            self.delete(due_key(DueIndex::JobBackoffs, record.recurring_time, key));
        }
    }

    pub fn remove_activatable(&mut self, key: impl AsKey, job_type: &str) {
        self.delete(KeyBuf::new(table::JOB_ACTIVATABLE).str(job_type).key(key));
    }

    pub fn delete_job_record(&mut self, key: impl AsKey, record: &rill_protocol::value::JobRecord) {
        self.unindex_job_record(key, record);
        self.delete(KeyBuf::new(table::JOB).key(key));
    }

    fn index_job(
        &mut self,
        key: impl AsKey,
        state: JobState,
        record: &rill_protocol::value::JobRecord,
    ) {
        match state {
            JobState::Activatable => self.mark(
                KeyBuf::new(table::JOB_ACTIVATABLE)
                    .str(&record.job_type)
                    .key(key),
            ),
            JobState::Activated => self.mark(due_key(DueIndex::JobDeadlines, record.deadline, key)),
            JobState::Failed if record.retries > 0 && record.recurring_time >= 0 => {
                self.mark(due_key(DueIndex::JobBackoffs, record.recurring_time, key))
            }
            JobState::Failed | JobState::ErrorThrown => {}
        }
    }

    fn unindex_job(&mut self, key: impl AsKey, job: &StoredJob) {
        match job.state {
            JobState::Activatable => self.delete(
                KeyBuf::new(table::JOB_ACTIVATABLE)
                    .str(&job.record.job_type)
                    .key(key),
            ),
            JobState::Activated => {
                self.delete(due_key(DueIndex::JobDeadlines, job.record.deadline, key))
            }
            JobState::Failed if job.record.retries > 0 && job.record.recurring_time >= 0 => self
                .delete(due_key(
                    DueIndex::JobBackoffs,
                    job.record.recurring_time,
                    key,
                )),
            JobState::Failed | JobState::ErrorThrown => {}
        }
    }

    // --- user tasks and forms ---

    pub fn put_user_task(&mut self, key: impl AsKey, task: &StoredUserTask) -> Result<()> {
        self.put(KeyBuf::new(table::USER_TASK).key(key), task)
    }

    pub fn delete_user_task(&mut self, key: impl AsKey) {
        self.delete(KeyBuf::new(table::USER_TASK).key(key));
    }

    pub fn put_form(&mut self, record: &rill_protocol::value::FormRecord) -> Result<()> {
        let key = record.form_key;
        self.put(KeyBuf::new(table::FORM).key(key), record)?;
        self.put_i64(
            KeyBuf::new(table::FORM_VERSION)
                .str(&record.form_id)
                .i32(record.version),
            key,
        );
        self.note_highest(table::FORM_HIGHEST, &record.form_id, record.version)?;
        let newer = match self.read().latest_form(&record.form_id)? {
            Some((version, _)) => record.version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::FORM_LATEST).str(&record.form_id),
                &(record.version, key),
            )?;
        }
        Ok(())
    }

    /// Notes which form of an id a deployment deployed (or found unchanged).
    pub fn put_deployment_form(
        &mut self,
        deployment_key: impl AsKey,
        form_id: &str,
        form_key: i64,
    ) {
        self.put_i64(
            KeyBuf::new(table::DEPLOYMENT_FORM)
                .key(deployment_key)
                .str(form_id),
            form_key,
        );
    }

    // --- timers ---

    pub fn put_pending_trigger(
        &mut self,
        holder: impl AsKey,
        key: impl AsKey,
        trigger: &PendingTrigger,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::PENDING_TRIGGER).key(holder).key(key),
            trigger,
        )
    }

    pub fn delete_pending_trigger(&mut self, holder: impl AsKey, key: impl AsKey) {
        self.delete(KeyBuf::new(table::PENDING_TRIGGER).key(holder).key(key));
    }

    pub fn delete_pending_triggers(&mut self, holder: impl AsKey) -> Result<()> {
        self.delete_prefix(KeyBuf::new(table::PENDING_TRIGGER).key(holder))
    }

    pub fn put_timer(&mut self, key: impl AsKey, timer: &TimerRecord) -> Result<()> {
        self.mark(due_key(DueIndex::Timers, timer.due_date, key));
        self.mark(
            KeyBuf::new(table::TIMER_BY_ELEMENT)
                .i64(timer.element_instance_key)
                .key(key),
        );
        self.put(KeyBuf::new(table::TIMER).key(key), timer)
    }

    pub fn delete_timer(&mut self, key: impl AsKey, timer: &TimerRecord) {
        self.delete(due_key(DueIndex::Timers, timer.due_date, key));
        self.delete(
            KeyBuf::new(table::TIMER_BY_ELEMENT)
                .i64(timer.element_instance_key)
                .key(key),
        );
        self.delete(KeyBuf::new(table::TIMER).key(key));
    }

    // --- messages ---

    pub fn put_message(&mut self, message: &StoredMessage) -> Result<()> {
        let r = &message.record;
        self.mark(
            KeyBuf::new(table::MESSAGE_BY_NAME)
                .str(&r.name)
                .str(&r.correlation_key)
                .key(message.key),
        );
        self.mark(due_key(DueIndex::MessageDeadlines, r.deadline, message.key));
        if !r.message_id.is_empty() {
            self.put_i64(
                KeyBuf::new(table::MESSAGE_ID)
                    .str(&r.name)
                    .str(&r.correlation_key)
                    .str(&r.message_id),
                message.key.get(),
            );
        }
        self.put(KeyBuf::new(table::MESSAGE).key(message.key), message)
    }

    pub fn delete_message(&mut self, message: &StoredMessage) -> Result<()> {
        let r = &message.record;
        self.delete(
            KeyBuf::new(table::MESSAGE_BY_NAME)
                .str(&r.name)
                .str(&r.correlation_key)
                .key(message.key),
        );
        self.delete(due_key(DueIndex::MessageDeadlines, r.deadline, message.key));
        if !r.message_id.is_empty() {
            self.delete(
                KeyBuf::new(table::MESSAGE_ID)
                    .str(&r.name)
                    .str(&r.correlation_key)
                    .str(&r.message_id),
            );
        }
        self.delete_prefix(KeyBuf::new(table::MESSAGE_CORRELATED).key(message.key))?;
        self.delete(KeyBuf::new(table::MESSAGE).key(message.key));
        Ok(())
    }

    /// The message start events of a process's new latest version replace the previous
    /// version's.
    pub fn replace_message_starts(
        &mut self,
        bpmn_process_id: &str,
        starts: &[MessageStartSubscription],
        names: &[String],
    ) -> Result<()> {
        for old in self.read().message_start_names(bpmn_process_id)? {
            self.delete(
                KeyBuf::new(table::MESSAGE_START)
                    .str(&old)
                    .str(bpmn_process_id),
            );
            self.delete(
                KeyBuf::new(table::MESSAGE_START_BY_PROCESS)
                    .str(bpmn_process_id)
                    .str(&old),
            );
        }
        for (start, name) in starts.iter().zip(names) {
            self.put(
                KeyBuf::new(table::MESSAGE_START)
                    .str(name)
                    .str(bpmn_process_id),
                start,
            )?;
            self.put(
                KeyBuf::new(table::MESSAGE_START_BY_PROCESS)
                    .str(bpmn_process_id)
                    .str(name),
                name,
            )?;
        }
        Ok(())
    }

    pub fn put_message_start_lock(
        &mut self,
        bpmn_process_id: &str,
        correlation_key: &str,
        instance: impl AsKey,
    ) {
        self.put_i64(
            KeyBuf::new(table::MESSAGE_START_LOCK)
                .str(bpmn_process_id)
                .str(correlation_key),
            instance.as_key().get(),
        );
    }

    pub fn delete_message_start_lock(&mut self, bpmn_process_id: &str, correlation_key: &str) {
        self.delete(
            KeyBuf::new(table::MESSAGE_START_LOCK)
                .str(bpmn_process_id)
                .str(correlation_key),
        );
    }

    pub fn mark_message_correlated(&mut self, message_key: impl AsKey, bpmn_process_id: &str) {
        self.mark(
            KeyBuf::new(table::MESSAGE_CORRELATED)
                .key(message_key)
                .str(bpmn_process_id),
        );
    }

    pub fn unmark_message_correlated(&mut self, message_key: impl AsKey, bpmn_process_id: &str) {
        self.delete(
            KeyBuf::new(table::MESSAGE_CORRELATED)
                .key(message_key)
                .str(bpmn_process_id),
        );
    }

    pub fn put_message_subscription(
        &mut self,
        subscription: &StoredMessageSubscription,
    ) -> Result<()> {
        let r = &subscription.record;
        self.put(
            message_subscription_key(&r.message_name, &r.correlation_key, r.element_instance_key),
            subscription,
        )
    }

    pub fn delete_message_subscription(
        &mut self,
        name: &str,
        correlation_key: &str,
        element_instance_key: impl AsKey,
    ) {
        self.delete(message_subscription_key(
            name,
            correlation_key,
            element_instance_key,
        ));
    }

    pub fn put_process_message_subscription(
        &mut self,
        subscription: &StoredProcessMessageSubscription,
    ) -> Result<()> {
        let r = &subscription.record;
        self.put(
            KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION)
                .i64(r.element_instance_key)
                .str(&r.message_name),
            subscription,
        )
    }

    pub fn delete_process_message_subscription(
        &mut self,
        element_instance_key: impl AsKey,
        message_name: &str,
    ) {
        self.delete(
            KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION)
                .key(element_instance_key)
                .str(message_name),
        );
    }

    // --- incidents ---

    pub fn put_incident(&mut self, key: impl AsKey, record: &IncidentRecord) -> Result<()> {
        let key = key.as_key().get();
        self.mark(
            KeyBuf::new(table::INCIDENT_BY_INSTANCE)
                .i64(record.process_instance_key)
                .key(key),
        );
        if record.job_key > 0 {
            self.put_i64(KeyBuf::new(table::INCIDENT_BY_JOB).i64(record.job_key), key);
        } else {
            self.put_i64(
                KeyBuf::new(table::INCIDENT_BY_ELEMENT).i64(record.element_instance_key),
                key,
            );
        }
        self.put(
            KeyBuf::new(table::INCIDENT).key(key),
            &StoredIncident {
                key: Key(key),
                record: record.clone(),
            },
        )
    }

    pub fn delete_incident(&mut self, incident: &StoredIncident) {
        let record = &incident.record;
        self.delete(
            KeyBuf::new(table::INCIDENT_BY_INSTANCE)
                .i64(record.process_instance_key)
                .key(incident.key),
        );
        if record.job_key > 0 {
            self.delete(KeyBuf::new(table::INCIDENT_BY_JOB).i64(record.job_key));
        } else {
            self.delete(KeyBuf::new(table::INCIDENT_BY_ELEMENT).i64(record.element_instance_key));
        }
        self.delete(KeyBuf::new(table::INCIDENT).key(incident.key));
    }

    // --- summaries and awaiting clients ---

    pub fn put_summary(&mut self, summary: &InstanceSummary) -> Result<()> {
        if summary.end_date >= 0 {
            self.mark(due_key(
                DueIndex::FinishedInstances,
                summary.end_date,
                summary.process_instance_key,
            ));
        }
        self.put(
            KeyBuf::new(table::INSTANCE_SUMMARY).i64(summary.process_instance_key.get()),
            summary,
        )
    }

    pub fn delete_summary(&mut self, summary: &InstanceSummary) {
        if summary.end_date >= 0 {
            self.delete(due_key(
                DueIndex::FinishedInstances,
                summary.end_date,
                summary.process_instance_key,
            ));
        }
        self.delete(KeyBuf::new(table::INSTANCE_SUMMARY).i64(summary.process_instance_key.get()));
    }

    pub fn put_await_registration(
        &mut self,
        process_instance_key: impl AsKey,
        registration: &AwaitRegistration,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key),
            registration,
        )
    }

    pub fn delete_await_registration(&mut self, process_instance_key: impl AsKey) {
        self.delete(KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key));
    }
}
