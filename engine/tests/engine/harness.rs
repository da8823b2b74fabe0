//! An EngineRule-style harness: drives a [`BpmnEngine`] with commands over
//! [`MemoryState`] (one overlay per command, as the broker does), with a clock the test
//! controls, and keeps every record for assertions and replay. Reads (instances,
//! variables, incidents, jobs, definitions) go through a history store fed with every
//! record, as a broker's reads do: the engine keeps only what processing needs.

use std::path::PathBuf;

use rill_engine::{BpmnEngine, ProcessInstanceView};
use rill_engine_api::{
    Action, CommandLimits, Engine, EngineError, MemoryState, Overlay, ProcessingContext,
    ProcessingOutput, RequestId, StateRead, StateTxn, keys, state_digest,
};
use rill_history::{HistoryWriter, MemoryHistory, search};
use rill_protocol::history::{
    Condition, ElementInstanceField, FieldValue, HistoricElementInstance, HistoricIncident,
    HistoricJob, HistoricProcessDefinition, HistoricVariable, IncidentField,
    ProcessDefinitionField, Search, SortBy, VariableField,
};
use rill_protocol::value::JobRecord;
use rill_protocol::{
    ActivateJobs, Blob, Command, CommandResponse, CreateProcessInstance, Intent, JsonValue, Key,
    PartitionId, Position, ProcessInstanceState, ProcessSelector, PublishMessage, RecordDraft,
    RecordType, RecordValue, Rejection, RejectionType, Resource, Timestamp, ValueType,
};
use serde_json::{Value, json};

pub type Output = ProcessingOutput<Command, CommandResponse>;

/// What one command produced.
#[derive(Debug)]
pub struct Outcome {
    pub response: Option<CommandResponse>,
    pub records: Vec<RecordDraft>,
    pub actions: Vec<Action<Command, CommandResponse>>,
}

impl Outcome {
    /// The accepted response's key; panics with the rejection otherwise.
    pub fn key(&self) -> Key {
        match &self.response {
            Some(CommandResponse::Accepted { key, .. }) => *key,
            other => panic!("expected an accepted command, got {other:?}"),
        }
    }

    pub fn value(&self) -> &RecordValue {
        match &self.response {
            Some(CommandResponse::Accepted { value, .. }) => value,
            other => panic!("expected an accepted command, got {other:?}"),
        }
    }

    pub fn rejection(&self) -> &Rejection {
        match &self.response {
            Some(CommandResponse::Rejected(rejection)) => rejection,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    pub fn is_rejected(&self) -> bool {
        matches!(self.response, Some(CommandResponse::Rejected(_)))
    }
}

/// The replicated engine version the rule processes and replays under, unless a test
/// sets [`EngineRule::engine_version`]: everything this build writes.
pub const ENGINE_VERSION: u32 = rill_protocol::version::ENGINE_VERSION_2;

pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

pub struct EngineRule {
    pub engine: BpmnEngine,
    pub state: MemoryState,
    /// The clock: ms since the epoch.
    pub now: i64,
    position: u64,
    next_request: u64,
    pub partition: PartitionId,
    pub partition_count: u16,
    /// Every record written, with the timestamp of its command.
    pub log: Vec<(Timestamp, RecordDraft)>,
    /// The bounds on one command's records that every entry carries.
    pub limits: CommandLimits,
    /// The partition's history store, fed with every record: what the reads answer from.
    pub history: MemoryHistory,
    /// The replicated engine version commands are processed under.
    pub engine_version: u32,
}

impl Default for EngineRule {
    fn default() -> Self {
        Self::new()
    }
}

impl EngineRule {
    pub fn new() -> EngineRule {
        EngineRule {
            engine: BpmnEngine::new(),
            state: MemoryState::new(),
            now: 1_700_000_000_000,
            position: 0,
            next_request: 1,
            partition: PartitionId(1),
            partition_count: 1,
            log: Vec::new(),
            limits: CommandLimits::default(),
            history: MemoryHistory::new(),
            engine_version: ENGINE_VERSION,
        }
    }

    /// Applies a command without a waiting request.
    pub fn process(&mut self, command: Command) -> Outcome {
        self.process_as(command, None)
    }

    /// Applies a command, as a client request (for create-and-await).
    pub fn process_as(&mut self, command: Command, request: Option<RequestId>) -> Outcome {
        self.try_process_as(&command, request)
            .unwrap_or_else(|e| panic!("processing {command:?} failed: {e}"))
    }

    /// Applies a command, or returns the engine's error with nothing changed (the
    /// broker then rolls the command back and writes a processing-error rejection).
    pub fn try_process(&mut self, command: &Command) -> Result<Outcome, EngineError> {
        self.try_process_as(command, None)
    }

    fn try_process_as(
        &mut self,
        command: &Command,
        request: Option<RequestId>,
    ) -> Result<Outcome, EngineError> {
        let ctx = ProcessingContext {
            partition_id: self.partition,
            partition_count: self.partition_count,
            position: Position(self.position + 1),
            timestamp: Timestamp(self.now),
            engine_version: self.engine_version,
            request,
            message_partition_count: self.partition_count,
            limits: self.limits,
        };
        let mut out = Output::default();
        let mut overlay = Overlay::new(&self.state);
        self.engine.process(&ctx, &mut overlay, command, &mut out)?;
        self.position += 1;
        let writes = overlay.into_writes();
        self.state.apply(writes);
        self.position += out.records.len().saturating_sub(1) as u64;
        assert!(!out.records.is_empty(), "no record for {command:?}");
        let first = &out.records[0];
        assert!(
            matches!(
                first.record_type,
                RecordType::Command | RecordType::CommandRejection
            ),
            "first record must be the command's: {first:?}"
        );
        self.index(&out.records, ctx.position);
        for record in &out.records {
            self.log.push((Timestamp(self.now), record.clone()));
        }
        Ok(Outcome {
            response: out.response,
            records: out.records,
            actions: out.actions,
        })
    }

    /// A rule for partition `partition` of `count`.
    pub fn on_partition(partition: u16, count: u16) -> EngineRule {
        let mut rule = EngineRule::new();
        rule.partition = PartitionId(partition);
        rule.partition_count = count;
        rule
    }

    pub fn new_request(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    pub fn advance(&mut self, millis: i64) {
        self.now += millis;
    }

    /// Proposes and applies every command due now, like the leader's scheduler.
    pub fn fire_due(&mut self) -> Vec<Outcome> {
        let mut due = Vec::new();
        self.engine
            .due_commands(&self.state, Timestamp(self.now), 100, &mut due)
            .expect("due commands");
        due.into_iter().map(|c| self.process(c)).collect()
    }

    pub fn next_due(&mut self) -> Option<Timestamp> {
        let mut due = Vec::new();
        self.engine
            .due_commands(&self.state, Timestamp(i64::MIN / 2), 100, &mut due)
            .expect("due commands")
    }

    /// What the leader would answer without a log entry (`None`: it proposes).
    pub fn answer_from_state(&mut self, command: &Command) -> Option<CommandResponse> {
        self.engine
            .answer_from_state(&self.state, command)
            .expect("answer from state")
    }

    /// Feeds one command's records to the history store, as the broker does in the
    /// command's write batch.
    fn index(&mut self, records: &[RecordDraft], first: Position) {
        let mut writer = HistoryWriter::new(&self.history);
        for (i, draft) in records.iter().enumerate() {
            let record = draft.clone().into_record(
                Position(first.0 + i as u64),
                (i > 0).then_some(first),
                Timestamp(self.now),
                self.partition,
                "test",
            );
            writer.index(&record).expect("history index");
        }
        let writes = writer.into_writes();
        self.history.apply(writes);
    }

    /// The first page of a history search over `filter`, in key order.
    fn search<T: rill_history::Table>(&self, filter: Vec<(T::Field, Condition)>) -> Vec<T>
    where
        T::Field: Copy,
    {
        let search_for = Search {
            filter,
            sort: Vec::<SortBy<T::Field>>::new(),
            after: None,
            limit: 10_000,
            count_limit: rill_history::COUNT_LIMIT,
        };
        search::<T, _>(&self.history, &search_for)
            .expect("history search")
            .items
    }

    // --- commands ---

    pub fn deploy(&mut self, resources: &[(&str, Vec<u8>)]) -> Outcome {
        self.process(Command::Deploy {
            resources: resources
                .iter()
                .map(|(name, content)| Resource {
                    name: (*name).to_owned(),
                    content: Blob(content.clone()),
                })
                .collect(),
        })
    }

    pub fn deploy_fixture(&mut self, name: &str) -> Outcome {
        let outcome = self.deploy(&[(name, fixture(name))]);
        assert!(
            !outcome.is_rejected(),
            "deploy {name}: {:?}",
            outcome.response
        );
        outcome
    }

    pub fn deploy_xml(&mut self, xml: &str) -> Outcome {
        let outcome = self.deploy(&[("test.bpmn", xml.as_bytes().to_vec())]);
        assert!(!outcome.is_rejected(), "deploy: {:?}", outcome.response);
        outcome
    }

    pub fn create_command(process_id: &str, variables: Value) -> Command {
        Command::CreateProcessInstance(CreateProcessInstance {
            process: ProcessSelector::ById {
                bpmn_process_id: process_id.to_owned(),
                version: None,
            },
            variables: JsonValue::from(variables),
            await_result: false,
            fetch_variables: Vec::new(),
            tags: Vec::new(),
        })
    }

    pub fn create(&mut self, process_id: &str, variables: Value) -> Key {
        self.process(Self::create_command(process_id, variables))
            .key()
    }

    pub fn activate(&mut self, job_type: &str, max_jobs: i32) -> Vec<(Key, JobRecord)> {
        let outcome = self.process(Command::ActivateJobs(ActivateJobs {
            job_type: job_type.to_owned(),
            worker: "test-worker".to_owned(),
            timeout: 30_000,
            max_jobs,
            fetch_variables: Vec::new(),
        }));
        match outcome.value() {
            RecordValue::JobBatch(batch) => batch
                .job_keys
                .iter()
                .map(|k| Key(*k))
                .zip(batch.jobs.iter().cloned())
                .collect(),
            other => panic!("expected a job batch, got {other:?}"),
        }
    }

    /// Activates the one job of a type and returns it.
    pub fn job(&mut self, job_type: &str) -> (Key, JobRecord) {
        let jobs = self.activate(job_type, 10);
        assert_eq!(jobs.len(), 1, "expected one '{job_type}' job, got {jobs:?}");
        jobs.into_iter().next().expect("one job")
    }

    pub fn complete(&mut self, job_key: Key, variables: Value) -> Outcome {
        self.process(Command::CompleteJob {
            job_key,
            variables: JsonValue::from(variables),
            result: Default::default(),
        })
    }

    pub fn publish(
        &mut self,
        name: &str,
        correlation_key: &str,
        ttl: i64,
        variables: Value,
    ) -> Outcome {
        self.process(Command::PublishMessage(PublishMessage {
            name: name.to_owned(),
            correlation_key: correlation_key.to_owned(),
            time_to_live: ttl,
            message_id: String::new(),
            variables: JsonValue::from(variables),
        }))
    }

    // --- reads (from the history store) ---

    pub fn instance_state(&mut self, key: Key) -> Option<ProcessInstanceView> {
        let instance = rill_history::process_instance(&self.history, key).expect("history");
        instance.map(|i| ProcessInstanceView {
            key: i.key,
            bpmn_process_id: i.bpmn_process_id,
            version: i.version,
            process_definition_key: i.process_definition_key,
            state: i.state,
            has_incident: i.incidents > 0,
            start_date: i.start_date,
            end_date: i.end_date,
            parent_process_instance_key: i.parent_process_instance_key,
            parent_element_instance_key: i.parent_element_instance_key,
            root_process_instance_key: i.root_process_instance_key,
        })
    }

    /// The process scope's variables, as JSON: their last values, while the instance
    /// runs and after.
    pub fn variables(&mut self, instance: Key) -> Value {
        variables_json(self.variables_of_scope(instance))
    }

    /// The variables of one live scope (an element instance, or the instance itself) of
    /// `instance`, as JSON; a scope that ended has none (its variables went with it).
    pub fn scope_variables(&mut self, instance: Key, scope: Key) -> Value {
        let live = if scope == instance {
            self.instance_state(instance)
                .is_some_and(|i| i.state == ProcessInstanceState::Active)
        } else {
            rill_history::get::<HistoricElementInstance, _>(&self.history, scope)
                .expect("history")
                .is_some_and(|e| e.end_date.is_none())
        };
        let variables = if live {
            self.variables_of_scope(scope)
                .into_iter()
                .filter(|v| v.process_instance_key == instance)
                .collect()
        } else {
            Vec::new()
        };
        variables_json(variables)
    }

    fn variables_of_scope(&self, scope: Key) -> Vec<HistoricVariable> {
        self.search(vec![(VariableField::ScopeKey, int(scope.get()))])
    }

    /// The open incidents of `instance`, by key.
    pub fn incidents(&mut self, instance: Key) -> Vec<IncidentRead> {
        self.search::<HistoricIncident>(vec![
            (IncidentField::ProcessInstanceKey, int(instance.get())),
            (
                IncidentField::State,
                Condition::Eq(FieldValue::Text("ACTIVE".into())),
            ),
        ])
        .into_iter()
        .map(|i| IncidentRead {
            key: i.key,
            record: IncidentFacts {
                error_type: i.error_type,
                error_message: i.error_message,
                element_id: i.element_id,
                element_instance_key: i.element_instance_key.get(),
                job_key: i.job_key.map_or(-1, Key::get),
            },
        })
        .collect()
    }

    /// A job as the reads see it: its engine state (activated while it has a
    /// deadline), retries and deadline.
    pub fn job_state(&mut self, key: Key) -> Option<JobRead> {
        use rill_protocol::history::JobState as Historic;
        let job = rill_history::get::<HistoricJob, _>(&self.history, key).expect("history")?;
        let state = match job.state {
            Historic::Failed => JobState::Failed,
            Historic::ErrorThrown => JobState::ErrorThrown,
            _ if job.deadline.is_some() => JobState::Activated,
            _ => JobState::Activatable,
        };
        Some(JobRead {
            state,
            record: JobFacts {
                retries: job.retries,
                deadline: job.deadline.map_or(-1, Timestamp::millis),
            },
        })
    }

    /// `(element id, has an incident)` of the live element instances of `instance`,
    /// the process first, then its elements in key order.
    pub fn element_instances(&mut self, instance: Key) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        if let Some(process) = self.instance_state(instance)
            && process.state == ProcessInstanceState::Active
        {
            out.push((process.bpmn_process_id, false));
        }
        let elements = self.search::<HistoricElementInstance>(vec![
            (
                ElementInstanceField::ProcessInstanceKey,
                int(instance.get()),
            ),
            (
                ElementInstanceField::State,
                Condition::Eq(FieldValue::Text("ACTIVE".into())),
            ),
        ]);
        out.extend(elements.into_iter().map(|e| {
            let has_incident = e.incident_key.is_some() || self.called_has_incident(&e);
            (e.element_id, has_incident)
        }));
        out
    }

    /// Whether the instance a call activity called (or one called further down) has an
    /// open incident: the call activity shows it, as Operate does.
    fn called_has_incident(&self, element: &HistoricElementInstance) -> bool {
        let mut pending = vec![element.key];
        while let Some(parent) = pending.pop() {
            let called = self.search::<rill_protocol::history::HistoricProcessInstance>(vec![(
                rill_protocol::history::ProcessInstanceField::ParentElementInstanceKey,
                int(parent.get()),
            )]);
            for child in called {
                if child.incidents > 0 {
                    return true;
                }
                let calls = self.search::<HistoricElementInstance>(vec![
                    (
                        ElementInstanceField::ProcessInstanceKey,
                        int(child.key.get()),
                    ),
                    (
                        ElementInstanceField::Type,
                        Condition::Eq(FieldValue::Text("CALL_ACTIVITY".into())),
                    ),
                ]);
                pending.extend(calls.into_iter().map(|c| c.key));
            }
        }
        false
    }

    /// The deployed definitions (of one process id, or all), by key.
    pub fn process_definitions(
        &mut self,
        process_id: Option<&str>,
    ) -> Vec<HistoricProcessDefinition> {
        let filter = process_id
            .map(|id| {
                vec![(
                    ProcessDefinitionField::ProcessDefinitionId,
                    Condition::Eq(FieldValue::Text(id.into())),
                )]
            })
            .unwrap_or_default();
        self.search(filter)
    }

    /// Records of the whole log, for matching.
    /// `(key, record)` of one element id's process-instance events with `intent`, in
    /// log order.
    pub fn element_events(
        &self,
        id: &str,
        intent: Intent,
    ) -> Vec<(Key, rill_protocol::value::ProcessInstanceRecord)> {
        self.records()
            .events()
            .of_type(ValueType::ProcessInstance)
            .with_intent(intent)
            .element(id)
            .records
            .iter()
            .map(|r| match &r.value {
                RecordValue::ProcessInstance(v) => (r.key, v.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    pub fn records(&self) -> Records<'_> {
        Records {
            records: self.log.iter().map(|(_, r)| r).collect(),
        }
    }

    /// Replays every event into fresh state and checks it equals the live state
    /// (ignoring the key counter, which only processing advances).
    pub fn assert_replay_matches(&mut self) {
        let mut replayed = MemoryState::new();
        let mut engine = BpmnEngine::default();
        for (_, record) in &self.log {
            engine
                .apply_record(&mut replayed, record, self.engine_version)
                .expect("replay");
        }
        let live = without_key_counter(&self.state);
        let rebuilt = without_key_counter(&replayed);
        if live != rebuilt {
            let l: Vec<_> = live.iter().map(|(k, _)| k.clone()).collect();
            let r: Vec<_> = rebuilt.iter().map(|(k, _)| k.clone()).collect();
            panic!("replayed state differs:\nlive keys {l:x?}\nreplayed {r:x?}");
        }
        assert_eq!(
            state_digest(&live).unwrap(),
            state_digest(&rebuilt).unwrap()
        );
    }
}

fn int(value: i64) -> Condition {
    Condition::Eq(FieldValue::Int(value))
}

fn variables_json(variables: Vec<HistoricVariable>) -> Value {
    let mut map = serde_json::Map::new();
    for v in variables {
        map.insert(v.name, serde_json::from_str(&v.value).expect("json"));
    }
    Value::Object(map)
}

/// An open incident as the tests read it.
#[derive(Debug)]
pub struct IncidentRead {
    pub key: Key,
    pub record: IncidentFacts,
}

/// What an incident's record said.
#[derive(Debug)]
pub struct IncidentFacts {
    pub error_type: rill_protocol::value::IncidentErrorType,
    pub error_message: String,
    pub element_id: String,
    pub element_instance_key: i64,
    /// -1 for an incident without a job.
    pub job_key: i64,
}

/// Where a job is, as the tests read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    Activatable,
    Activated,
    /// Failed: waiting for its backoff (retries left) or for an incident (no retries).
    Failed,
    /// An error was thrown and nobody caught it: waiting for the incident.
    ErrorThrown,
}

/// A job as the tests read it.
#[derive(Debug)]
pub struct JobRead {
    pub state: JobState,
    pub record: JobFacts,
}

#[derive(Debug)]
pub struct JobFacts {
    pub retries: i32,
    /// -1 for a job without a deadline.
    pub deadline: i64,
}

fn without_key_counter(state: &MemoryState) -> MemoryState {
    let mut copy = state.clone();
    copy.delete(keys::KEY_COUNTER);
    let _ = copy.get(b"");
    copy
}

/// A list of records with matchers.
pub struct Records<'a> {
    pub records: Vec<&'a RecordDraft>,
}

impl<'a> Records<'a> {
    pub fn of_type(self, value_type: ValueType) -> Records<'a> {
        Records {
            records: self
                .records
                .into_iter()
                .filter(|r| r.value_type() == value_type)
                .collect(),
        }
    }

    pub fn events(self) -> Records<'a> {
        Records {
            records: self
                .records
                .into_iter()
                .filter(|r| r.record_type == RecordType::Event)
                .collect(),
        }
    }

    pub fn with_intent(self, intent: Intent) -> Records<'a> {
        Records {
            records: self
                .records
                .into_iter()
                .filter(|r| r.intent == intent)
                .collect(),
        }
    }

    pub fn rejections(self) -> Records<'a> {
        Records {
            records: self
                .records
                .into_iter()
                .filter(|r| r.record_type == RecordType::CommandRejection)
                .collect(),
        }
    }

    /// Process instance records of one element id.
    pub fn element(self, element_id: &str) -> Records<'a> {
        Records {
            records: self
                .records
                .into_iter()
                .filter(|r| match &r.value {
                    RecordValue::ProcessInstance(v) => v.element_id == element_id,
                    RecordValue::Job(v) => v.element_id == element_id,
                    RecordValue::Incident(v) => v.element_id == element_id,
                    _ => false,
                })
                .collect(),
        }
    }

    pub fn count(&self) -> usize {
        self.records.len()
    }

    pub fn exists(&self) -> bool {
        !self.records.is_empty()
    }

    /// `(element id, intent)` of the process instance records, in order.
    pub fn lifecycle(&self) -> Vec<(String, Intent)> {
        self.records
            .iter()
            .filter_map(|r| match &r.value {
                RecordValue::ProcessInstance(v) if r.record_type == RecordType::Event => {
                    Some((v.element_id.clone(), r.intent))
                }
                _ => None,
            })
            .collect()
    }

    /// `(value type, intent)` of every record, in order.
    pub fn shape(&self) -> Vec<(ValueType, Intent)> {
        self.records
            .iter()
            .map(|r| (r.value_type(), r.intent))
            .collect()
    }
}

/// `(element id, intent)` pairs, for comparing lifecycles.
pub fn lc(pairs: &[(&str, Intent)]) -> Vec<(String, Intent)> {
    pairs.iter().map(|(e, i)| ((*e).to_owned(), *i)).collect()
}

pub fn rejection_of(outcome: &Outcome) -> (RejectionType, String) {
    let r = outcome.rejection();
    (r.rejection_type, r.reason.clone())
}

#[allow(dead_code)]
pub fn empty() -> Value {
    json!({})
}
