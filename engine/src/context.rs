//! The per-command processing context: what command processors and element behaviours
//! use to read state, emit records (each event is applied to state at once by the
//! appliers), and queue the in-line follow-up steps of a command.

use std::collections::VecDeque;
use std::sync::Arc;

use rill_engine_api::{Action, ProcessingContext, ProcessingOutput, StateTxn, keys};
use rill_protocol::value::{IncidentErrorType, IncidentRecord, ProcessInstanceRecord};
use rill_protocol::{Command, CommandResponse, Intent, Key, RecordDraft, RecordValue};
use serde_json::{Map, Value};

use crate::appliers::Appliers;
use crate::error::{Result, inconsistent};
use crate::model::{Element, ElementIdx};
use crate::model_cache::{DeployedProcess, ModelCache};
use crate::outcome::Rejection;
use crate::state::{AsKey, ElementCache, ElementInstance, Reader, ScanFloors, Writer};

pub(crate) type Output = ProcessingOutput<Command, CommandResponse>;

/// Work a command causes inside the engine, done in order after the processor (Zeebe
/// writes these as internal commands; here they never reach the log).
pub(crate) enum Step {
    /// Enter `element` in the scope `scope_key`, with variables of the event that
    /// triggered it (a caught error).
    Activate {
        scope_key: Key,
        process: Arc<DeployedProcess>,
        element: ElementIdx,
        trigger: Option<Map<String, Value>>,
    },
    /// Complete an element instance whose work is done (a scope with no token left).
    Complete { key: Key },
    /// Something left the scope `scope_key` (an element completed or was terminated):
    /// enter its joining inclusive gateways whose waiting tokens no other token can
    /// join any more.
    RecheckJoins { scope_key: Key },
    /// The message partition's side of a new subscription: record it and correlate a
    /// buffered message if there is one.
    OpenMessageSubscription {
        process_message_subscription_key: Key,
        element_instance_key: Key,
        message_name: String,
    },
    /// Broadcast a signal a throw or end event threw (after the thrower went on). Boxed:
    /// rare, and the queue's steps stay as small as the common ones.
    BroadcastSignal {
        signal: Box<rill_protocol::value::SignalRecord>,
    },
}

/// A live element instance together with its model element.
pub(crate) struct Active {
    pub instance: ElementInstance,
    pub process: Arc<DeployedProcess>,
    pub idx: ElementIdx,
}

impl Active {
    pub fn element(&self) -> &Element {
        self.process.model.element(self.idx)
    }

    pub fn key(&self) -> Key {
        self.instance.key
    }

    pub fn record(&self) -> &ProcessInstanceRecord {
        &self.instance.record
    }

    /// A multi-instance body (same element id as its inner instances).
    pub fn is_multi_instance_body(&self) -> bool {
        self.record().bpmn_element_type == rill_protocol::value::BpmnElementType::MultiInstanceBody
    }

    /// One inner instance of a multi-instance body: it runs the element's own kind, its
    /// flow scope is the body, and the body (not it) has the boundary events and the
    /// outgoing flows.
    pub fn is_multi_instance_inner(&self) -> bool {
        self.element().multi_instance.is_some() && !self.is_multi_instance_body()
    }

    /// An inner instance of an ad-hoc subprocess (one activation): its flow scope is the
    /// ad-hoc subprocess, which decides what happens when it completes.
    pub fn is_ad_hoc_inner(&self) -> bool {
        self.record().bpmn_element_type
            == rill_protocol::value::BpmnElementType::AdHocSubProcessInnerInstance
    }
}

pub(crate) struct Processing<'a> {
    pub ctx: &'a ProcessingContext,
    txn: &'a mut dyn StateTxn,
    appliers: Appliers,
    models: &'a mut ModelCache,
    cache: &'a ElementCache,
    floors: &'a ScanFloors,
    pub collections: &'a mut CollectionCache,
    /// Client requests waiting for a user-task transition its task listeners hold up.
    pub task_requests: &'a mut TaskRequests,
    /// The user task whose transition this command started (answered in its response).
    pub started_transition: Option<Key>,
    pub out: &'a mut Output,
    /// The next local key value, read once and written back at the end.
    next_key: Option<u64>,
    steps: VecDeque<Step>,
    jobs_available: Vec<String>,
    wake_at: Option<i64>,
    /// The number of inner instances of the parallel multi-instance bodies entered in
    /// this command (their inner instances are entered by queued steps).
    pub multi_instance_totals: std::collections::BTreeMap<Key, u32>,
    /// FEEL evaluations so far in this command (seeds `feel_env`).
    feel_evaluations: std::cell::Cell<u64>,
    /// What the command may still write.
    budget: crate::budget::Budget,
}

/// What the engine lends the processing of one command: its appliers and its caches.
pub(crate) struct EngineParts<'a> {
    pub appliers: Appliers,
    pub models: &'a mut ModelCache,
    pub cache: &'a ElementCache,
    pub floors: &'a ScanFloors,
    pub collections: &'a mut CollectionCache,
    pub task_requests: &'a mut TaskRequests,
}

/// The client requests that wait for a user-task transition held up by task listeners,
/// by user task key. Leader-side only, as a request id is: lost with the leadership
/// (the client's request times out), never read to decide what a command does.
pub(crate) type TaskRequests = std::collections::BTreeMap<Key, rill_engine_api::RequestId>;

/// Parsed input collections of sequential multi-instance bodies, by body key, with the
/// JSON text they were parsed from. Only a shortcut: an entry is used when the stored
/// text is the same, so a miss (after a restart, on another replica) gives the same
/// items, just slower. Keeps at most [`CollectionCache::CAPACITY`] bodies.
#[derive(Default)]
pub(crate) struct CollectionCache {
    entries: std::collections::HashMap<Key, Arc<(String, Vec<Value>)>>,
}

impl CollectionCache {
    const CAPACITY: usize = 64;

    /// The items of `text`, parsed once per body; `None` if it is not a JSON list.
    pub fn items(&mut self, body: Key, text: &str) -> Option<Arc<(String, Vec<Value>)>> {
        if let Some(entry) = self.entries.get(&body)
            && entry.0 == text
        {
            return Some(entry.clone());
        }
        let items: Vec<Value> = serde_json::from_str(text).ok()?;
        if self.entries.len() >= Self::CAPACITY {
            self.entries.clear();
        }
        let entry = Arc::new((text.to_owned(), items));
        self.entries.insert(body, entry.clone());
        Some(entry)
    }

    /// Forgets a body that ended.
    pub fn forget(&mut self, body: Key) {
        self.entries.remove(&body);
    }
}

impl<'a> Processing<'a> {
    pub fn new(
        ctx: &'a ProcessingContext,
        txn: &'a mut dyn StateTxn,
        parts: EngineParts<'a>,
        out: &'a mut Output,
    ) -> Processing<'a> {
        let EngineParts {
            appliers,
            models,
            cache,
            floors,
            collections,
            task_requests,
        } = parts;
        cache.clear();
        let budget = crate::budget::Budget::new(ctx.limits, out.records.len());
        Processing {
            ctx,
            txn,
            appliers,
            models,
            cache,
            floors,
            collections,
            task_requests,
            started_transition: None,
            out,
            next_key: None,
            steps: VecDeque::new(),
            jobs_available: Vec::new(),
            wake_at: None,
            multi_instance_totals: std::collections::BTreeMap::new(),
            feel_evaluations: std::cell::Cell::new(0),
            budget,
        }
    }

    pub fn read(&self) -> Reader<'_> {
        Reader::with_cache(&*self.txn, self.cache, self.floors)
    }

    /// The entry's timestamp in ms: the only clock the engine has.
    pub fn now(&self) -> i64 {
        self.ctx.timestamp.millis()
    }

    /// What a FEEL evaluation sees of the world: the entry's time, and a seed for
    /// `random number()` and `uuid()` that differs per evaluation of this command and
    /// is the same on every replica (partition, position, and a count of evaluations).
    pub fn feel_env(&self) -> rill_feel::Environment {
        let evaluation = self.feel_evaluations.get();
        self.feel_evaluations.set(evaluation + 1);
        rill_feel::Environment::for_entry(
            self.now(),
            u32::from(self.ctx.partition_id.get()),
            self.ctx.position.get(),
            evaluation,
        )
    }

    /// A fresh key from the partition's counter (`keys::next_key`'s layout; the
    /// counter is written back once, in [`Processing::finish`]).
    pub fn next_key(&mut self) -> Result<Key> {
        let next = match self.next_key {
            Some(next) => next,
            None => keys::peek_counter(&*self.txn)?,
        };
        self.next_key = Some(next + 1);
        Ok(Key::new(self.ctx.partition_id, next))
    }

    pub fn model(&mut self, definition_key: impl AsKey) -> Result<Arc<DeployedProcess>> {
        self.models.get(Reader::new(&*self.txn), definition_key)
    }

    /// The latest version of a process id and its definition key.
    pub fn latest_process(&mut self, bpmn_process_id: &str) -> Result<Option<(i32, Key)>> {
        self.models.latest(Reader::new(&*self.txn), bpmn_process_id)
    }

    /// The parsed DMN resource deployed under `key`.
    pub fn decision_requirements(
        &mut self,
        key: Key,
    ) -> Result<Arc<crate::dmn::DecisionRequirements>> {
        self.models
            .decision_requirements(Reader::new(&*self.txn), key)
    }

    pub fn cache_decision_requirements(
        &mut self,
        key: Key,
        parsed: crate::dmn::DecisionRequirements,
    ) {
        self.models.insert_decision_requirements(key, parsed);
    }

    pub fn cache_model(&mut self, deployed: DeployedProcess) {
        self.models.insert(deployed);
    }

    /// Writes the command's own record (the first record of an accepted command).
    pub fn command(&mut self, key: Key, intent: Intent, value: impl Into<RecordValue>) {
        self.out
            .records
            .push(RecordDraft::command(key, intent, value));
    }

    /// Writes an event and applies it to state.
    pub fn event(&mut self, key: Key, intent: Intent, value: impl Into<RecordValue>) -> Result<()> {
        let draft = RecordDraft::event(key, intent, value);
        let mut writer = Writer::new(&mut *self.txn, self.cache, self.floors);
        self.appliers
            .apply(&mut writer, self.models, &draft, self.ctx.engine_version)?;
        self.out.records.push(draft);
        self.budget.check_records(&self.out.records)
    }

    /// Why the command may enter no further element: it has written more than its
    /// limits allow (`None` while it may go on).
    pub fn work_exhausted(&mut self) -> Result<Option<String>> {
        self.budget.exhausted(&self.out.records)
    }

    /// Rejects the command: a rejection record in place of the command record, and the
    /// rejection as the response.
    pub fn reject(
        &mut self,
        key: Key,
        intent: Intent,
        value: impl Into<RecordValue>,
        rejection: Rejection,
    ) {
        self.out.records.push(RecordDraft::rejection(
            key,
            intent,
            value,
            rejection.kind,
            rejection.reason.clone(),
        ));
        self.out.response = Some(CommandResponse::Rejected(rejection.into()));
    }

    /// Answers the command with an event's key, intent and value.
    pub fn respond(&mut self, key: Key, intent: Intent, value: impl Into<RecordValue>) {
        self.out.response = Some(CommandResponse::Accepted {
            key,
            intent,
            value: value.into(),
        });
    }

    pub fn push_step(&mut self, step: Step) {
        self.steps.push_back(step);
    }

    /// The elements that tokens travelling in `scope_key` are about to enter (queued
    /// activations of this command).
    pub fn pending_activations(&self, scope_key: Key) -> impl Iterator<Item = ElementIdx> + '_ {
        self.steps.iter().filter_map(move |step| match step {
            Step::Activate {
                scope_key: scope,
                element,
                ..
            } if *scope == scope_key => Some(*element),
            _ => None,
        })
    }

    /// Wake job workers waiting for this type once the command is committed.
    pub fn notify_jobs_available(&mut self, job_type: &str) {
        if !self.jobs_available.iter().any(|t| t == job_type) {
            self.jobs_available.push(job_type.to_owned());
        }
    }

    /// Ask the leader to look for due work at `due`.
    pub fn wake_at(&mut self, due: i64) {
        self.wake_at = Some(self.wake_at.map_or(due, |at| at.min(due)));
    }

    /// Runs the queued steps until none is left, then turns the collected side effects
    /// into actions.
    pub fn finish(mut self) -> Result<()> {
        while let Some(step) = self.steps.pop_front() {
            match step {
                Step::Activate {
                    scope_key,
                    process,
                    element,
                    trigger,
                } => self.activate(scope_key, &process, element, trigger)?,
                Step::Complete { key } => self.complete_scope(key)?,
                Step::RecheckJoins { scope_key } => self.recheck_joins(scope_key)?,
                Step::OpenMessageSubscription {
                    process_message_subscription_key,
                    element_instance_key,
                    message_name,
                } => self.open_message_subscription(
                    process_message_subscription_key,
                    element_instance_key,
                    &message_name,
                )?,
                Step::BroadcastSignal { signal } => self.broadcast_thrown_signal(*signal)?,
            }
        }
        self.cache.flush(self.txn)?;
        if let Some(next) = self.next_key {
            self.txn.put(keys::KEY_COUNTER, &next.to_be_bytes());
        }
        for job_type in std::mem::take(&mut self.jobs_available) {
            self.out.actions.push(Action::JobsAvailable { job_type });
        }
        if let Some(due) = self.wake_at {
            self.out.actions.push(Action::WakeAt {
                due: rill_protocol::Timestamp(due),
            });
        }
        Ok(())
    }

    /// Loads a live element instance with its model element.
    pub fn active(&mut self, key: Key) -> Result<Option<Active>> {
        let Some(instance) = self.read().element_instance(key.get())? else {
            return Ok(None);
        };
        let process = self.model(instance.record.process_definition_key)?;
        let idx = if instance.record.bpmn_element_type
            == rill_protocol::value::BpmnElementType::Process
        {
            crate::model::ProcessModel::ROOT
        } else {
            process
                .model
                .element_by_id(&instance.record.element_id)
                .ok_or_else(|| {
                    inconsistent(format!(
                        "element '{}' of instance {key} is not in its process model",
                        instance.record.element_id
                    ))
                })?
        };
        Ok(Some(Active {
            instance,
            process,
            idx,
        }))
    }

    /// Raises an incident on an element instance (and its job, if `job_key` > 0).
    pub fn raise_incident(
        &mut self,
        at: &ProcessInstanceRecord,
        element_instance_key: Key,
        error_type: IncidentErrorType,
        message: String,
        job_key: Key,
    ) -> Result<()> {
        let key = self.next_key()?;
        let path = self.tree_path(element_instance_key, at)?;
        let record = IncidentRecord {
            error_type,
            error_message: message,
            bpmn_process_id: at.bpmn_process_id.clone(),
            process_definition_key: at.process_definition_key,
            process_instance_key: at.process_instance_key,
            element_id: at.element_id.clone(),
            element_instance_key: element_instance_key.get(),
            job_key: job_key.get(),
            variable_scope_key: element_instance_key.get(),
            tenant_id: at.tenant_id.clone(),
            element_instance_path: path.element_instance_path,
            process_definition_path: path.process_definition_path,
            calling_element_path: path.calling_element_path,
            root_process_instance_key: at.root_process_instance_key,
        };
        self.event(key, Intent::Created, record)
    }
}
