//! Reading the store, and the writer that turns applied records into entries.

use std::collections::{BTreeMap, HashSet};
use std::ops::ControlFlow;

use rill_protocol::history::{
    ElementState, HistoricDecisionDefinition, HistoricDecisionInstance,
    HistoricDecisionRequirements, HistoricElementInstance, HistoricForm, HistoricIncident,
    HistoricJob, HistoricMessageSubscription, HistoricProcessDefinition, HistoricProcessInstance,
    HistoricResource, HistoricUser, HistoricUserTask, HistoricVariable, IncidentState, JobState,
    MessageSubscriptionState, UserTaskState,
};
use rill_protocol::value::{
    BpmnElementType, JobRecord, ProcessMessageSubscriptionRecord, ProcessRecord, UserRecord,
    UserTaskRecord, is_engine_variable,
};
use rill_protocol::{
    Intent, Key, ProcessInstanceState, Record, RecordType, RecordValue, Timestamp, codec,
};

use crate::model::ProcessFacts;
use crate::table::Table;
use crate::{HistoryError, Result, keys};

mod definitions;

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

pub(crate) fn decode<T: Table>(key: &[u8], bytes: &[u8]) -> Result<T> {
    codec::decode(bytes).map_err(|e| HistoryError::Corrupt {
        key: format!("{key:02x?}"),
        reason: e.to_string(),
    })
}

pub(crate) fn read<T: Table, R: HistoryRead + ?Sized>(read: &R, key: Key) -> Result<Option<T>> {
    let k = keys::entry(T::PRIMARY, key);
    match read.get(&k)? {
        Some(bytes) => decode(&k, &bytes).map(Some),
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
    /// Primary keys of the entries this writer created from a record with a new key: the
    /// base holds neither them nor their index keys, so dropping one of those keys drops
    /// the pending put instead of writing a tombstone (an element that starts and ends in
    /// one batch leaves nothing behind).
    fresh: HashSet<Vec<u8>>,
}

impl<'a> HistoryWriter<'a> {
    pub fn new(base: &'a dyn HistoryRead) -> Self {
        HistoryWriter {
            base,
            writes: BTreeMap::new(),
            fresh: HashSet::new(),
        }
    }

    pub fn into_writes(self) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
        self.writes
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    fn get<T: Table>(&self, key: Key) -> Result<Option<T>> {
        let k = keys::entry(T::PRIMARY, key);
        let bytes = match self.writes.get(&k) {
            Some(value) => value.clone(),
            None => self.base.get(&k)?,
        };
        bytes.map(|b| decode(&k, &b)).transpose()
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.writes.insert(key, Some(value));
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.writes.insert(key, None);
    }

    /// Deletes a key of an entry; `fresh` when the base cannot hold it.
    fn unset(&mut self, key: Vec<u8>, fresh: bool) {
        if fresh {
            self.writes.remove(&key);
        } else {
            self.delete(key);
        }
    }

    fn put_entry<T: Table>(&mut self, entry: &T) -> Result<()> {
        let bytes = codec::encode(entry).map_err(|e| HistoryError::Corrupt {
            key: entry.key().to_string(),
            reason: e.to_string(),
        })?;
        self.put(keys::entry(T::PRIMARY, entry.key()), bytes);
        Ok(())
    }

    /// Writes the entry of a record whose key is new (nothing in the store has it).
    fn create<T: Table>(&mut self, new: &T) -> Result<()> {
        self.fresh.insert(keys::entry(T::PRIMARY, new.key()));
        self.replace(None, new)
    }

    /// Writes `new` in place of `old`: index keys it no longer has go, and only the
    /// index keys that are new or carry a new value are written.
    fn replace<T: Table>(&mut self, old: Option<&T>, new: &T) -> Result<()> {
        let new_entries = new.index_entries();
        let old_entries = old.map(Table::index_entries).unwrap_or_default();
        if let Some(old) = old {
            let fresh = self.fresh.contains(&keys::entry(T::PRIMARY, old.key()));
            for (key, _) in &old_entries {
                if !new_entries.iter().any(|(k, _)| k == key) {
                    self.unset(key.clone(), fresh);
                }
            }
        }
        for entry in new_entries {
            if !old_entries.contains(&entry) {
                self.put(entry.0, entry.1);
            }
        }
        self.put_entry(new)
    }

    /// Changes the entry `key` with `change`, if it is kept.
    fn update<T: Table>(&mut self, key: Key, change: impl FnOnce(&mut T)) -> Result<()> {
        if let Some(old) = self.get::<T>(key)? {
            let mut new = old.clone();
            change(&mut new);
            self.replace(Some(&old), &new)?;
        }
        Ok(())
    }

    /// A user's record (keyed by its user key): created, changed, deleted. Only what
    /// Camunda answers is kept; records carry no password hash, and none is read here.
    fn index_user(&mut self, record: &Record, value: &UserRecord) -> Result<()> {
        let user = HistoricUser {
            key: record.key,
            username: value.username.clone(),
            name: value.name.clone(),
            email: value.email.clone(),
        };
        let kept = self.get::<HistoricUser>(record.key)?;
        match (record.intent, kept) {
            (Intent::Created, None) => self.create(&user)?,
            (Intent::Updated, Some(kept)) => self.replace(Some(&kept), &user)?,
            (Intent::Deleted, Some(kept)) => self.remove(&kept),
            _ => {}
        }
        Ok(())
    }

    fn remove<T: Table>(&mut self, entry: &T) {
        let primary = keys::entry(T::PRIMARY, entry.key());
        let fresh = self.fresh.remove(&primary);
        for (index, _) in entry.index_entries() {
            self.unset(index, fresh);
        }
        self.unset(primary, fresh);
    }

    /// Takes in one applied record: process instance lifecycle events (of the process
    /// itself: the instance; of its elements: element instances), variable, job and job
    /// batch, incident, deployed process and process message subscription events change
    /// the store.
    pub fn index(&mut self, record: &Record) -> Result<()> {
        if record.record_type != RecordType::Event {
            return Ok(());
        }
        if matches!(record.intent, Intent::ElementMigrated | Intent::Migrated) {
            return self.index_migrated(record);
        }
        match &record.value {
            RecordValue::ProcessInstance(value)
                if value.bpmn_element_type == BpmnElementType::Process =>
            {
                let key = Key(value.process_instance_key);
                match record.intent {
                    Intent::ElementActivating => {
                        // The definition is on every partition an instance can start on
                        // (deployments reach them all before their instances can).
                        let definition = self
                            .get::<HistoricProcessDefinition>(Key(value.process_definition_key))?;
                        let (process_definition_name, process_definition_version_tag) =
                            match definition {
                                Some(d) => (d.name, d.version_tag),
                                None => (None, None),
                            };
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
                            process_definition_name,
                            process_definition_version_tag,
                            root_process_instance_key: root_of(
                                key.get(),
                                value.root_process_instance_key,
                            ),
                            tags: value.tags.clone(),
                        };
                        self.create(&instance)?;
                    }
                    Intent::ElementCompleted | Intent::ElementTerminated => {
                        let state = if record.intent == Intent::ElementCompleted {
                            ProcessInstanceState::Completed
                        } else {
                            ProcessInstanceState::Terminated
                        };
                        self.update(key, |i: &mut HistoricProcessInstance| {
                            i.state = state;
                            i.end_date = Some(record.timestamp);
                        })?;
                    }
                    _ => {}
                }
            }
            RecordValue::ProcessInstance(value) => {
                let key = record.key;
                match record.intent {
                    Intent::ElementActivating => {
                        let element = HistoricElementInstance {
                            key,
                            element_id: value.element_id.clone(),
                            element_type: value.bpmn_element_type,
                            bpmn_process_id: value.bpmn_process_id.clone(),
                            process_definition_key: Key(value.process_definition_key),
                            process_instance_key: Key(value.process_instance_key),
                            root_process_instance_key: root_of(
                                value.process_instance_key,
                                value.root_process_instance_key,
                            ),
                            flow_scope_key: Key(value.flow_scope_key),
                            state: ElementState::Active,
                            start_date: record.timestamp,
                            end_date: None,
                            incident_key: None,
                            tenant_id: value.tenant_id.clone(),
                            element_name: self.element_name(
                                Key(value.process_definition_key),
                                &value.element_id,
                            )?,
                        };
                        self.create(&element)?;
                    }
                    Intent::ElementCompleted | Intent::ElementTerminated => {
                        let state = if record.intent == Intent::ElementCompleted {
                            ElementState::Completed
                        } else {
                            ElementState::Terminated
                        };
                        self.update(key, |e: &mut HistoricElementInstance| {
                            e.state = state;
                            e.end_date = Some(record.timestamp);
                        })?;
                    }
                    _ => {}
                }
            }
            // The engine's bookkeeping variables are no one's to read.
            RecordValue::Variable(value) if is_engine_variable(&value.name) => {}
            RecordValue::Variable(value) => match record.intent {
                Intent::Created | Intent::Updated => {
                    let variable = HistoricVariable {
                        key: record.key,
                        name: value.name.clone(),
                        value: value.value.clone(),
                        scope_key: Key(value.scope_key),
                        process_instance_key: Key(value.process_instance_key),
                        root_process_instance_key: root_of(
                            value.process_instance_key,
                            value.root_process_instance_key,
                        ),
                        process_definition_key: Key(value.process_definition_key),
                        bpmn_process_id: value.bpmn_process_id.clone(),
                        tenant_id: value.tenant_id.clone(),
                    };
                    if record.intent == Intent::Created {
                        self.create(&variable)?;
                    } else {
                        let old = self.get::<HistoricVariable>(record.key)?;
                        self.replace(old.as_ref(), &variable)?;
                    }
                }
                _ => {}
            },
            RecordValue::Process(value) if record.intent == Intent::Created => {
                self.index_definition(record.key, value)?;
            }
            RecordValue::Decision(value) if record.intent == Intent::Created => {
                let decision = HistoricDecisionDefinition {
                    key: record.key,
                    decision_id: value.decision_id.clone(),
                    name: value.decision_name.clone(),
                    version: value.version,
                    decision_requirements_id: value.decision_requirements_id.clone(),
                    decision_requirements_key: Key(value.decision_requirements_key),
                    tenant_id: value.tenant_id.clone(),
                };
                if self
                    .get::<HistoricDecisionDefinition>(record.key)?
                    .is_none()
                {
                    self.create(&decision)?;
                }
            }
            RecordValue::DecisionEvaluation(value)
                if matches!(record.intent, Intent::Evaluated | Intent::Failed) =>
            {
                self.index_decision_instances(record, value)?;
            }
            RecordValue::DecisionRequirements(value) if record.intent == Intent::Created => {
                let requirements = HistoricDecisionRequirements {
                    key: record.key,
                    decision_requirements_id: value.decision_requirements_id.clone(),
                    name: value.decision_requirements_name.clone(),
                    version: value.decision_requirements_version,
                    resource_name: value.resource_name.clone(),
                    tenant_id: value.tenant_id.clone(),
                };
                if self
                    .get::<HistoricDecisionRequirements>(record.key)?
                    .is_none()
                {
                    self.create(&requirements)?;
                }
                self.put(
                    keys::entry(keys::DECISION_XML, record.key),
                    value.resource.0.clone(),
                );
            }
            RecordValue::ProcessMessageSubscription(value) => {
                self.index_subscription(record, value)?;
            }
            RecordValue::Job(value) => self.index_job(record, record.key, value)?,
            RecordValue::UserTask(value) => self.index_user_task(record, value)?,
            RecordValue::Form(value) if record.intent == Intent::Created => {
                let form = HistoricForm {
                    key: record.key,
                    form_id: value.form_id.clone(),
                    version: value.version,
                    schema: String::from_utf8_lossy(&value.resource.0).into_owned(),
                    version_tag: value.version_tag.clone(),
                    tenant_id: value.tenant_id.clone(),
                };
                if self.get::<HistoricForm>(record.key)?.is_none() {
                    self.create(&form)?;
                }
            }
            RecordValue::Resource(value) if record.intent == Intent::Created => {
                let resource = HistoricResource {
                    key: record.key,
                    resource_id: value.resource_id.clone(),
                    resource_name: value.resource_name.clone(),
                    version: value.version,
                    version_tag: value.version_tag.clone(),
                    tenant_id: value.tenant_id.clone(),
                    content: value.resource_prop.clone(),
                };
                if self.get::<HistoricResource>(record.key)?.is_none() {
                    self.create(&resource)?;
                }
            }
            RecordValue::User(value) => self.index_user(record, value)?,
            RecordValue::JobBatch(batch) if record.intent == Intent::Activated => {
                for (key, job) in batch.job_keys.iter().zip(&batch.jobs) {
                    self.index_job(record, Key(*key), job)?;
                }
            }
            RecordValue::Incident(value) => {
                let key = record.key;
                let instance = Key(value.process_instance_key);
                match record.intent {
                    Intent::Created => {
                        let incident = HistoricIncident {
                            key,
                            error_type: value.error_type,
                            error_message: value.error_message.clone(),
                            bpmn_process_id: value.bpmn_process_id.clone(),
                            process_definition_key: Key(value.process_definition_key),
                            process_instance_key: instance,
                            root_process_instance_key: root_of(
                                value.process_instance_key,
                                value.root_process_instance_key,
                            ),
                            element_id: value.element_id.clone(),
                            element_instance_key: Key(value.element_instance_key),
                            job_key: (value.job_key > 0).then_some(Key(value.job_key)),
                            tenant_id: value.tenant_id.clone(),
                            state: IncidentState::Active,
                            creation_time: record.timestamp,
                            resolution_time: None,
                        };
                        self.create(&incident)?;
                        self.update(instance, |i: &mut HistoricProcessInstance| {
                            i.incidents = i.incidents.saturating_add(1);
                        })?;
                        let element = Key(value.element_instance_key);
                        self.update(element, |e: &mut HistoricElementInstance| {
                            e.incident_key = Some(key);
                        })?;
                    }
                    Intent::Resolved => {
                        self.update(key, |i: &mut HistoricIncident| {
                            i.state = IncidentState::Resolved;
                            i.resolution_time = Some(record.timestamp);
                        })?;
                        self.update(instance, |i: &mut HistoricProcessInstance| {
                            i.incidents = i.incidents.saturating_sub(1);
                        })?;
                        let element = Key(value.element_instance_key);
                        self.update(element, |e: &mut HistoricElementInstance| {
                            if e.incident_key == Some(key) {
                                e.incident_key = None;
                            }
                        })?;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The entry keys an index holds under `prefix`, with this batch's changes.
    fn keys_under(&self, prefix: &[u8]) -> Result<Vec<Key>> {
        let end = prefix_end(prefix);
        let mut found = std::collections::BTreeSet::new();
        self.base.scan(prefix, &end, false, &mut |key, _| {
            found.insert(key.to_vec());
            ControlFlow::Continue(())
        })?;
        for (key, value) in self.writes.range(prefix.to_vec()..end) {
            match value {
                Some(_) => found.insert(key.clone()),
                None => found.remove(key),
            };
        }
        Ok(found.iter().filter_map(|k| keys::trailing_key(k)).collect())
    }

    /// A Camunda user task: created, then changed by assignments and updates, and ended
    /// by completion or cancellation.
    fn index_user_task(&mut self, record: &Record, value: &UserTaskRecord) -> Result<()> {
        let key = record.key;
        match record.intent {
            Intent::Created => {
                let definition_key = Key(value.process_definition_key);
                let name = self
                    .element_name(definition_key, &value.element_id)?
                    .unwrap_or_else(|| value.element_id.clone());
                let process_name = self
                    .get::<HistoricProcessDefinition>(definition_key)?
                    .and_then(|d| d.name);
                let task = HistoricUserTask {
                    key,
                    state: UserTaskState::Created,
                    assignee: value.assignee.clone(),
                    candidate_groups: value.candidate_groups_list.clone(),
                    candidate_users: value.candidate_users_list.clone(),
                    due_date: value.due_date.clone(),
                    follow_up_date: value.follow_up_date.clone(),
                    form_key: (value.form_key > 0).then_some(Key(value.form_key)),
                    external_form_reference: value.external_form_reference.clone(),
                    custom_headers: value.custom_headers.clone(),
                    priority: value.priority,
                    bpmn_process_id: value.bpmn_process_id.clone(),
                    process_definition_version: value.process_definition_version,
                    process_definition_key: definition_key,
                    process_instance_key: Key(value.process_instance_key),
                    element_id: value.element_id.clone(),
                    name,
                    process_name,
                    element_instance_key: Key(value.element_instance_key),
                    tenant_id: value.tenant_id.clone(),
                    creation_date: record.timestamp,
                    completion_date: None,
                    tags: value.tags.clone(),
                };
                self.create(&task)?;
            }
            Intent::Assigned | Intent::Updated => {
                self.update(key, |t: &mut HistoricUserTask| {
                    t.assignee = value.assignee.clone();
                    t.candidate_groups = value.candidate_groups_list.clone();
                    t.candidate_users = value.candidate_users_list.clone();
                    t.due_date = value.due_date.clone();
                    t.follow_up_date = value.follow_up_date.clone();
                    t.priority = value.priority;
                })?;
            }
            Intent::Canceling => {
                // CANCELED follows at once, or once the canceling listeners ran.
                self.update(key, |t: &mut HistoricUserTask| {
                    t.state = UserTaskState::Canceling;
                })?;
            }
            Intent::Completed | Intent::Canceled => {
                let completed = record.intent == Intent::Completed;
                let state = if completed {
                    UserTaskState::Completed
                } else {
                    UserTaskState::Canceled
                };
                self.update(key, |t: &mut HistoricUserTask| {
                    t.state = state;
                    t.completion_date = Some(record.timestamp);
                    if completed {
                        // Completing task listeners may have corrected the task.
                        t.assignee = value.assignee.clone();
                        t.candidate_groups = value.candidate_groups_list.clone();
                        t.candidate_users = value.candidate_users_list.clone();
                        t.due_date = value.due_date.clone();
                        t.follow_up_date = value.follow_up_date.clone();
                        t.priority = value.priority;
                    }
                })?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The instance's side of a message subscription: created when it opens (or starts
    /// opening, on another partition), then correlated or deleted.
    fn index_subscription(
        &mut self,
        record: &Record,
        value: &ProcessMessageSubscriptionRecord,
    ) -> Result<()> {
        let state = match record.intent {
            Intent::Creating | Intent::Created => MessageSubscriptionState::Created,
            Intent::Correlated => MessageSubscriptionState::Correlated,
            Intent::Deleted => MessageSubscriptionState::Deleted,
            _ => return Ok(()),
        };
        let old = self.get::<HistoricMessageSubscription>(record.key)?;
        // Opening confirmed: the subscription stays as it was created.
        if record.intent == Intent::Created && old.is_some() {
            return Ok(());
        }
        let process_definition_key = match &old {
            Some(old) => old.process_definition_key,
            None => self
                .get::<HistoricElementInstance>(Key(value.element_instance_key))?
                .map(|element| element.process_definition_key),
        };
        let subscription = HistoricMessageSubscription {
            key: record.key,
            bpmn_process_id: value.bpmn_process_id.clone(),
            process_definition_key,
            process_instance_key: Key(value.process_instance_key),
            element_id: value.element_id.clone(),
            element_instance_key: Key(value.element_instance_key),
            state,
            last_updated: record.timestamp,
            message_name: value.message_name.clone(),
            correlation_key: value.correlation_key.clone(),
            tenant_id: value.tenant_id.clone(),
        };
        match &old {
            Some(old) => self.replace(Some(old), &subscription),
            None => self.create(&subscription),
        }
    }

    /// A job event (or a job of an activated batch): creates the entry if it is not kept
    /// yet, and moves it to the state the event names.
    /// A process instance migration: what it moved takes the target process's ids (its
    /// history before stays as it was).
    fn index_migrated(&mut self, record: &Record) -> Result<()> {
        let key = record.key;
        match &record.value {
            RecordValue::ProcessInstance(value)
                if value.bpmn_element_type == BpmnElementType::Process =>
            {
                let definition =
                    self.get::<HistoricProcessDefinition>(Key(value.process_definition_key))?;
                self.update(key, |i: &mut HistoricProcessInstance| {
                    i.bpmn_process_id = value.bpmn_process_id.clone();
                    i.version = value.version;
                    i.process_definition_key = Key(value.process_definition_key);
                    i.process_definition_name = definition.as_ref().and_then(|d| d.name.clone());
                    i.process_definition_version_tag =
                        definition.as_ref().and_then(|d| d.version_tag.clone());
                })
            }
            RecordValue::ProcessInstance(value) => {
                let element_name =
                    self.element_name(Key(value.process_definition_key), &value.element_id)?;
                self.update(key, |e: &mut HistoricElementInstance| {
                    e.element_name = element_name;
                    e.element_id = value.element_id.clone();
                    e.bpmn_process_id = value.bpmn_process_id.clone();
                    e.process_definition_key = Key(value.process_definition_key);
                })
            }
            RecordValue::Job(value) => self.update(key, |j: &mut HistoricJob| {
                j.state = JobState::Migrated;
                j.element_id = value.element_id.clone();
                j.bpmn_process_id = value.bpmn_process_id.clone();
                j.process_definition_key = Key(value.process_definition_key);
                j.process_definition_version = value.process_definition_version;
            }),
            RecordValue::UserTask(value) => self.update(key, |t: &mut HistoricUserTask| {
                t.element_id = value.element_id.clone();
                t.bpmn_process_id = value.bpmn_process_id.clone();
                t.process_definition_key = Key(value.process_definition_key);
                t.process_definition_version = value.process_definition_version;
            }),
            RecordValue::Variable(value) => self.update(key, |v: &mut HistoricVariable| {
                v.bpmn_process_id = value.bpmn_process_id.clone();
                v.process_definition_key = Key(value.process_definition_key);
            }),
            RecordValue::Incident(value) => self.update(key, |i: &mut HistoricIncident| {
                i.element_id = value.element_id.clone();
                i.bpmn_process_id = value.bpmn_process_id.clone();
                i.process_definition_key = Key(value.process_definition_key);
            }),
            _ => Ok(()),
        }
    }

    fn index_job(&mut self, record: &Record, key: Key, value: &JobRecord) -> Result<()> {
        let state = match record.intent {
            Intent::Created => Some(JobState::Created),
            Intent::Completed => Some(JobState::Completed),
            Intent::Failed => Some(JobState::Failed),
            Intent::ErrorThrown => Some(JobState::ErrorThrown),
            Intent::RetriesUpdated => Some(JobState::RetriesUpdated),
            Intent::TimedOut => Some(JobState::TimedOut),
            Intent::Canceled => Some(JobState::Canceled),
            // Activated (in a batch), timeout updated, recurred after a backoff, yielded:
            // the state stays (Camunda's job states have none for these).
            Intent::Activated
            | Intent::TimeoutUpdated
            | Intent::RecurredAfterBackoff
            | Intent::Yielded => None,
            _ => return Ok(()),
        };
        let created = record.intent == Intent::Created;
        let old = if created {
            None
        } else {
            self.get::<HistoricJob>(key)?
        };
        let mut job = match &old {
            Some(old) => old.clone(),
            None => HistoricJob {
                key,
                job_type: value.job_type.clone(),
                worker: String::new(),
                state: JobState::Created,
                retries: value.retries,
                bpmn_process_id: value.bpmn_process_id.clone(),
                process_definition_version: value.process_definition_version,
                process_definition_key: Key(value.process_definition_key),
                process_instance_key: Key(value.process_instance_key),
                root_process_instance_key: root_of(
                    value.process_instance_key,
                    value.root_process_instance_key,
                ),
                element_id: value.element_id.clone(),
                element_instance_key: Key(value.element_instance_key),
                tenant_id: value.tenant_id.clone(),
                deadline: None,
                error_code: String::new(),
                error_message: String::new(),
                failed_with_retries_left: false,
                custom_headers: value.custom_headers.clone(),
                creation_time: record.timestamp,
                end_time: None,
                kind: value.job_kind,
                listener_event_type: value.job_listener_event_type,
            },
        };
        job.retries = value.retries;
        if !value.worker.is_empty() {
            job.worker = value.worker.clone();
        }
        job.deadline = (value.deadline > 0).then_some(Timestamp(value.deadline));
        if !value.error_message.is_empty() {
            job.error_message = value.error_message.clone();
        }
        if !value.error_code.is_empty() {
            job.error_code = value.error_code.clone();
        }
        if let Some(state) = state {
            job.state = state;
            job.end_time = matches!(
                state,
                JobState::Completed | JobState::Canceled | JobState::ErrorThrown
            )
            .then_some(record.timestamp);
            if state == JobState::Failed && value.retries > 0 {
                job.failed_with_retries_left = true;
            }
        }
        if created {
            self.create(&job)?;
        } else if old.as_ref() != Some(&job) {
            self.replace(old.as_ref(), &job)?;
        }
        Ok(())
    }

    /// Removes up to `budget` entries of table `T` of the instance (found through the
    /// index `by_instance`). True when none is left.
    fn remove_of_instance<T: Table>(
        &mut self,
        by_instance: u8,
        instance: Key,
        budget: &mut usize,
    ) -> Result<bool> {
        let prefix = keys::entry(by_instance, instance);
        let mut found = Vec::new();
        let want = *budget + 1;
        self.base
            .scan(&prefix, &prefix_end(&prefix), false, &mut |key, _| {
                if let Some(k) = keys::trailing_key(key) {
                    found.push(k);
                }
                if found.len() >= want {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })?;
        let all = found.len() <= *budget;
        for key in found.into_iter().take(*budget) {
            if let Some(entry) = self.get::<T>(key)? {
                self.remove(&entry);
            } else {
                self.delete(keys::with_key(prefix.clone(), key));
            }
            *budget -= 1;
        }
        Ok(all)
    }

    /// Removes finished instances that ended before `before`, oldest first, with their
    /// jobs, incidents, variables, element instances and message subscriptions: at most `limit` entries in all (an instance goes once all of
    /// its jobs and incidents have). Returns how many entries were removed.
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
        let mut budget = limit;
        for key in expired {
            if budget == 0 {
                break;
            }
            let Some(instance) = self.get::<HistoricProcessInstance>(key)? else {
                continue;
            };
            if instance.end_date.is_none_or(|end| end >= before) {
                continue;
            }
            if !self.remove_of_instance::<HistoricJob>(keys::JOB_BY_INSTANCE, key, &mut budget)?
                || !self.remove_of_instance::<HistoricIncident>(
                    keys::INCIDENT_BY_INSTANCE,
                    key,
                    &mut budget,
                )?
                || !self.remove_of_instance::<HistoricVariable>(
                    keys::VARIABLE_BY_INSTANCE,
                    key,
                    &mut budget,
                )?
                || !self.remove_of_instance::<HistoricElementInstance>(
                    keys::ELEMENT_BY_INSTANCE,
                    key,
                    &mut budget,
                )?
                || !self.remove_of_instance::<HistoricMessageSubscription>(
                    keys::SUBSCRIPTION_BY_INSTANCE,
                    key,
                    &mut budget,
                )?
                || !self.remove_of_instance::<HistoricUserTask>(
                    keys::USER_TASK_BY_INSTANCE,
                    key,
                    &mut budget,
                )?
                || budget == 0
            {
                break;
            }
            self.remove(&instance);
            budget -= 1;
        }
        Ok(limit - budget)
    }
}

/// The root a record names; a record written before records named it (-1) is taken to
/// belong to a root instance.
fn root_of(process_instance_key: i64, root_process_instance_key: i64) -> Key {
    Key(if root_process_instance_key > 0 {
        root_process_instance_key
    } else {
        process_instance_key
    })
}
