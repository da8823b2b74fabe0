//! What the engine keeps in state, one struct per table value. Encoded with the
//! protocol codec (a format byte, then bincode), so they can evolve like records.

use rill_protocol::Key;
use rill_protocol::value::{
    IncidentRecord, JobRecord, MessageRecord, MessageSubscriptionRecord, ProcessInstanceRecord,
    ProcessMessageSubscriptionRecord, SignalSubscriptionRecord,
};
use serde::{Deserialize, Serialize};

/// Where an element instance is in Zeebe's lifecycle. Completed and terminated
/// instances are removed from state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ElementState {
    Activating,
    Activated,
    Completing,
    Terminating,
}

impl ElementState {
    pub fn name(self) -> &'static str {
        match self {
            ElementState::Activating => "ELEMENT_ACTIVATING",
            ElementState::Activated => "ELEMENT_ACTIVATED",
            ElementState::Completing => "ELEMENT_COMPLETING",
            ElementState::Terminating => "ELEMENT_TERMINATING",
        }
    }
}

/// A live element instance (the process instance itself is one, keyed by its key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementInstance {
    pub key: Key,
    pub state: ElementState,
    /// The value of this instance's lifecycle records.
    pub record: ProcessInstanceRecord,
    /// Child element instances that are alive.
    pub active_children: u32,
    /// Sequence flows taken inside this scope whose target has not been entered yet
    /// (tokens travelling, or waiting at a parallel join).
    pub active_flows: u32,
    /// The job of a job-based element, the child process instance of a call activity,
    /// or `Key::NONE`.
    pub job_key: Key,
    /// Whether variables were ever set in this scope (so leaving it must drop them).
    pub has_variables: bool,
    /// Process instances only: a client awaits the result.
    pub awaited: bool,
    /// Execution listeners of this instance whose jobs completed, start listeners
    /// first: the next one to run is found from it.
    pub listeners_done: u32,
    /// Ad-hoc subprocesses of the job-worker implementation only: the worker fulfilled
    /// the completion condition, so it completes once its inner instances are done
    /// and creates no job any more.
    pub ad_hoc_completion_fulfilled: bool,
}

/// A multi-instance body's progress: inner instances created and completed so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MultiInstanceCounts {
    pub created: u32,
    pub completed: u32,
}

/// A variable in a scope: its key and its value as JSON text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredVariable {
    pub key: Key,
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    Activatable,
    Activated,
    /// Failed: waiting for its backoff (retries left) or for an incident (no retries).
    Failed,
    /// An error was thrown and nobody caught it: waiting for the incident.
    ErrorThrown,
}

impl JobState {
    pub fn name(self) -> &'static str {
        match self {
            JobState::Activatable => "ACTIVATABLE",
            JobState::Activated => "ACTIVATED",
            JobState::Failed => "FAILED",
            JobState::ErrorThrown => "ERROR_THROWN",
        }
    }
}

/// A job. `record.variables` is not kept (variables are read at activation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredJob {
    pub state: JobState,
    pub record: JobRecord,
}

/// Encodes exactly like a [`StoredJob`] whose record has `variables: null`, from a
/// borrowed record: storing a job does not copy it first.
#[derive(Serialize)]
pub struct StoredJobRef<'a> {
    pub state: JobState,
    pub record: JobRecordRef<'a>,
}

/// [`JobRecord`]'s fields in declaration order, borrowed; `variables` is `null`.
#[derive(Serialize)]
pub struct JobRecordRef<'a> {
    job_type: &'a str,
    element_id: &'a str,
    element_instance_key: i64,
    bpmn_process_id: &'a str,
    process_definition_version: i32,
    process_definition_key: i64,
    process_instance_key: i64,
    worker: &'a str,
    retries: i32,
    retry_backoff: i64,
    recurring_time: i64,
    deadline: i64,
    timeout: i64,
    error_message: &'a str,
    error_code: &'a str,
    custom_headers: &'a std::collections::BTreeMap<String, String>,
    /// A `JsonValue` is JSON text in binary formats.
    variables: &'static str,
    tenant_id: &'a str,
    job_kind: rill_protocol::value::JobKind,
    job_listener_event_type: rill_protocol::value::JobListenerEventType,
    result: &'a rill_protocol::value::JobResult,
    root_process_instance_key: i64,
    tags: &'a [String],
}

impl<'a> StoredJobRef<'a> {
    pub fn new(state: JobState, r: &'a JobRecord) -> StoredJobRef<'a> {
        StoredJobRef {
            state,
            record: JobRecordRef {
                job_type: &r.job_type,
                element_id: &r.element_id,
                element_instance_key: r.element_instance_key,
                bpmn_process_id: &r.bpmn_process_id,
                process_definition_version: r.process_definition_version,
                process_definition_key: r.process_definition_key,
                process_instance_key: r.process_instance_key,
                worker: &r.worker,
                retries: r.retries,
                retry_backoff: r.retry_backoff,
                recurring_time: r.recurring_time,
                deadline: r.deadline,
                timeout: r.timeout,
                error_message: &r.error_message,
                error_code: &r.error_code,
                custom_headers: &r.custom_headers,
                variables: "null",
                tenant_id: &r.tenant_id,
                job_kind: r.job_kind,
                job_listener_event_type: r.job_listener_event_type,
                result: &r.result,
                root_process_instance_key: r.root_process_instance_key,
                tags: &r.tags,
            },
        }
    }
}

/// A buffered message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub key: Key,
    pub record: MessageRecord,
}

/// A subscription on the message's partition: who waits for `(name, correlation key)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredMessageSubscription {
    pub key: Key,
    pub record: MessageSubscriptionRecord,
    /// A message is on its way to the instance; do not correlate another one.
    pub correlating: bool,
}

/// A signal subscription: a catch event (or signal start event) waiting for a signal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredSignalSubscription {
    pub key: Key,
    pub record: SignalSubscriptionRecord,
}

impl StoredSignalSubscription {
    /// Who holds it: the element instance holding the catch event, or the process
    /// definition of a signal start event.
    pub fn holder(&self) -> Key {
        if self.record.catch_event_instance_key >= 0 {
            Key(self.record.catch_event_instance_key)
        } else {
            Key(self.record.process_definition_key)
        }
    }
}

/// The instance side of a message subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredProcessMessageSubscription {
    pub key: Key,
    pub record: ProcessMessageSubscriptionRecord,
    /// `true` once the message partition confirmed the subscription.
    pub opened: bool,
    /// `true` while it is being closed.
    pub closing: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredIncident {
    pub key: Key,
    pub record: IncidentRecord,
}

/// A client waiting for an instance to complete (create-and-await).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AwaitRegistration {
    pub request_id: u64,
    pub fetch_variables: Vec<String>,
}

#[cfg(test)]
mod tests {
    use rill_protocol::{JsonValue, codec};

    use super::*;

    #[test]
    fn a_borrowed_job_encodes_like_a_stored_job_without_variables() {
        let record = JobRecord {
            job_type: "t".into(),
            element_id: "e".into(),
            element_instance_key: 5,
            bpmn_process_id: "p".into(),
            process_definition_version: 2,
            process_definition_key: 7,
            process_instance_key: 9,
            worker: "w".into(),
            retries: 3,
            retry_backoff: 10,
            recurring_time: -1,
            deadline: 99,
            timeout: 40,
            error_message: "m".into(),
            error_code: "c".into(),
            custom_headers: [("a".to_owned(), "b".to_owned())].into(),
            variables: JsonValue::from(serde_json::json!({"dropped": true})),
            tenant_id: "<default>".into(),
            job_kind: rill_protocol::value::JobKind::ExecutionListener,
            job_listener_event_type: rill_protocol::value::JobListenerEventType::End,
            result: Default::default(),
            root_process_instance_key: 9,
            tags: vec!["a-tag".into()],
        };
        let bytes = codec::encode(&StoredJobRef::new(JobState::Activated, &record)).unwrap();
        let decoded: StoredJob = codec::decode(&bytes).unwrap();
        assert_eq!(decoded.state, JobState::Activated);
        assert_eq!(
            decoded.record,
            JobRecord {
                variables: JsonValue::null(),
                ..record
            }
        );
    }
}

/// A command waiting in the outbox for another partition to apply it. The payload is
/// read from state when the command is (re)sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub value_type: rill_protocol::ValueType,
    pub intent: rill_protocol::Intent,
    /// The entity: a deployment key, a subscription key. Its partition bits name the
    /// sending partition.
    pub key: Key,
    /// The payload, when it is not read from state at send time.
    pub value: Option<rill_protocol::RecordValue>,
}

/// A message start event that a message name starts (the latest version's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageStartSubscription {
    pub bpmn_process_id: String,
    pub process_definition_key: Key,
    pub start_event_id: String,
}

/// Where a Camunda user task is. Completed and canceled tasks are removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserTaskState {
    Created,
    Assigning,
    Updating,
    Completing,
    Canceling,
    /// Written as CREATING, waiting for its creating task listeners.
    Creating,
}

impl UserTaskState {
    /// Zeebe's lifecycle state names (as rejections name them).
    pub fn name(self) -> &'static str {
        match self {
            UserTaskState::Created => "CREATED",
            UserTaskState::Assigning => "ASSIGNING",
            UserTaskState::Updating => "UPDATING",
            UserTaskState::Completing => "COMPLETING",
            UserTaskState::Canceling => "CANCELING",
            UserTaskState::Creating => "CREATING",
        }
    }
}

/// An event trigger kept from PROCESS_EVENT TRIGGERING to TRIGGERED: the catch event
/// it is for and its variables (JSON text), so an interrupting event can be activated
/// once the termination it waits for ends, possibly in a later command.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingTrigger {
    pub catch_event: String,
    pub variables: String,
}

/// A Camunda user task (`variables` is not kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredUserTask {
    pub state: UserTaskState,
    /// The task as it is (what a denied transition leaves).
    pub record: rill_protocol::value::UserTaskRecord,
    /// The transition under way while its task listeners run (`None` when the task is
    /// CREATED, or when the transition has no listeners).
    pub transition: Option<ListenerTransition>,
}

/// A user-task transition (creating, assigning, updating, completing) waiting for its
/// task listeners' jobs, which run one after the other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListenerTransition {
    pub event: rill_protocol::value::JobListenerEventType,
    /// The task as the transition leaves it: its own changes (and, completing, the
    /// client's variables), then the corrections of the listeners that ran.
    pub record: rill_protocol::value::UserTaskRecord,
    /// The attributes the transition itself changed (before corrections).
    pub changed: Vec<String>,
    /// Listener jobs of this transition that completed.
    pub listeners_done: u32,
    /// The job of the listener running now, or `Key::NONE`.
    pub listener_job: Key,
    /// Creating only: the assignee the model gives the task, assigned once it is
    /// created (a creating listener may set one only when this is empty).
    pub initial_assignee: String,
}
