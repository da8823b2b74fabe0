//! An EngineRule-style harness: drives a [`BpmnEngine`] with commands over
//! [`MemoryState`] (one overlay per command, as the broker does), with a clock the test
//! controls, and keeps every record for assertions and replay.

use std::path::PathBuf;

use rill_engine::{BpmnEngine, EngineOptions, Query, QueryResult};
use rill_engine_api::{
    Action, CommandLimits, Engine, EngineError, MemoryState, Overlay, ProcessingContext,
    ProcessingOutput, RequestId, StateRead, StateTxn, keys, state_digest,
};
use rill_protocol::value::JobRecord;
use rill_protocol::{
    ActivateJobs, Blob, Command, CommandResponse, CreateProcessInstance, Intent, JsonValue, Key,
    PartitionId, Position, ProcessSelector, PublishMessage, RecordDraft, RecordType, RecordValue,
    Rejection, RejectionType, Resource, Timestamp, ValueType,
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

/// The replicated engine version the rule processes and replays under.
pub const ENGINE_VERSION: u32 = 1;

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
}

impl Default for EngineRule {
    fn default() -> Self {
        Self::new()
    }
}

impl EngineRule {
    pub fn new() -> EngineRule {
        Self::with_options(EngineOptions::default())
    }

    pub fn with_options(options: EngineOptions) -> EngineRule {
        EngineRule {
            engine: BpmnEngine::new(options),
            state: MemoryState::new(),
            now: 1_700_000_000_000,
            position: 0,
            next_request: 1,
            partition: PartitionId(1),
            partition_count: 1,
            log: Vec::new(),
            limits: CommandLimits::default(),
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
            engine_version: ENGINE_VERSION,
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

    pub fn query(&mut self, query: Query) -> QueryResult {
        self.engine.query(&self.state, &query).expect("query")
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

    // --- reads ---

    pub fn instance_state(&mut self, key: Key) -> Option<rill_engine::ProcessInstanceView> {
        match self.query(Query::ProcessInstance { key }) {
            QueryResult::ProcessInstance(view) => view,
            other => panic!("{other:?}"),
        }
    }

    /// The variables of the process scope, as JSON.
    /// The process scope's variables: from the state while the instance runs, else (its
    /// variables went with it) the last value of each as the records tell it.
    pub fn variables(&mut self, instance: Key) -> Value {
        let live = self.scope_variables(instance, instance);
        if live.as_object().is_some_and(|m| !m.is_empty()) {
            return live;
        }
        let mut map = serde_json::Map::new();
        for (_, record) in &self.log {
            if let rill_protocol::RecordValue::Variable(v) = &record.value
                && record.record_type == RecordType::Event
                && v.process_instance_key == instance.get()
                && v.scope_key == instance.get()
            {
                map.insert(
                    v.name.clone(),
                    serde_json::from_str(&v.value).expect("json"),
                );
            }
        }
        Value::Object(map)
    }

    /// The variables of one scope (an element instance) of `instance`, as JSON.
    pub fn scope_variables(&mut self, instance: Key, scope: Key) -> Value {
        match self.query(Query::Variables {
            process_instance_key: instance,
            scope_key: Some(scope),
        }) {
            QueryResult::Variables(vars) => {
                let mut map = serde_json::Map::new();
                for v in vars {
                    map.insert(v.name, serde_json::from_str(&v.value).expect("json"));
                }
                Value::Object(map)
            }
            other => panic!("{other:?}"),
        }
    }

    pub fn incidents(&mut self, instance: Key) -> Vec<rill_engine::IncidentView> {
        match self.query(Query::IncidentsOfInstance {
            process_instance_key: instance,
        }) {
            QueryResult::Incidents(incidents) => incidents,
            other => panic!("{other:?}"),
        }
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
        for (timestamp, record) in &self.log {
            engine
                .apply_record(&mut replayed, record, *timestamp, ENGINE_VERSION)
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
