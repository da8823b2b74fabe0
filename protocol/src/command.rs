//! Commands: what a partition's log carries and its engine applies.
//!
//! Client commands come through the gateway; internal ones are proposed by the
//! partition leader when wall-clock work is due (timers, job deadlines, TTLs) or arrive
//! from another partition. Applying a command re-checks its condition, so a duplicate
//! proposal is harmless.

use serde::{Deserialize, Serialize};

use crate::ids::{Key, PartitionId};
use crate::json::{Blob, JsonValue};
use crate::record::{Intent, RejectionType, ValueType};
use crate::value::RecordValue;

/// One resource of a deployment (a `.bpmn` file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    pub name: String,
    pub content: Blob,
}

/// Which process definition to start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ProcessSelector {
    /// By BPMN process id; `None` is the latest version.
    ById {
        bpmn_process_id: String,
        version: Option<i32>,
    },
    ByKey(Key),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CreateProcessInstance {
    pub process: ProcessSelector,
    pub variables: JsonValue,
    /// Answer when the instance completes instead of when it starts.
    pub await_result: bool,
    /// With `await_result`: the variables to return (empty = all).
    pub fetch_variables: Vec<String>,
    /// The instance's tags (checked by the gateway and again by the engine).
    pub tags: Vec<String>,
}

impl CreateProcessInstance {
    /// The intent of the command's record: Zeebe's `CREATE_WITH_AWAITING_RESULT` when the
    /// client awaits the result.
    pub fn intent(&self) -> Intent {
        if self.await_result {
            Intent::CreateWithAwaitingResult
        } else {
            Intent::Create
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivateJobs {
    pub job_type: String,
    pub worker: String,
    /// Activation timeout in ms.
    pub timeout: i64,
    pub max_jobs: i32,
    /// Variables to include (empty = all visible at the job's element).
    pub fetch_variables: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailJob {
    pub job_key: Key,
    pub retries: i32,
    pub error_message: String,
    /// Milliseconds before the job can be activated again.
    pub retry_backoff: i64,
    pub variables: JsonValue,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThrowError {
    pub job_key: Key,
    pub error_code: String,
    pub error_message: String,
    pub variables: JsonValue,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UpdateJob {
    pub job_key: Key,
    pub retries: Option<i32>,
    /// New activation timeout in ms, counted from now.
    pub timeout: Option<i64>,
}

impl UpdateJob {
    /// The intent of the command's record: `UPDATE` when both retries and timeout
    /// change, else `UPDATE_RETRIES` or `UPDATE_TIMEOUT`.
    pub fn intent(&self) -> Intent {
        match (self.retries, self.timeout) {
            (Some(_), Some(_)) => Intent::Update,
            (Some(_), None) => Intent::UpdateRetries,
            (None, _) => Intent::UpdateTimeout,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishMessage {
    pub name: String,
    pub correlation_key: String,
    /// Time to live in ms; 0 means "correlate now or never".
    pub time_to_live: i64,
    /// Optional id; a second message with the same id is rejected while the first is
    /// buffered.
    pub message_id: String,
    pub variables: JsonValue,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetVariables {
    pub element_instance_key: Key,
    pub variables: JsonValue,
    /// Set on the given scope only, instead of Zeebe's propagation.
    pub local: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BroadcastSignal {
    pub signal_name: String,
    pub variables: JsonValue,
}

/// What a client changes on a user task with an update (`None`: unchanged).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserTaskChanges {
    pub candidate_groups: Option<Vec<String>>,
    pub candidate_users: Option<Vec<String>>,
    /// ISO 8601 date-time; empty clears it.
    pub due_date: Option<String>,
    pub follow_up_date: Option<String>,
    pub priority: Option<i32>,
}

/// A client's command on a user task. `action` is the client's name for it (empty:
/// Zeebe's default for the command).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum UserTaskCommand {
    /// Sets the assignee (empty: unassigns). Without `allow_override`, a task assigned
    /// to someone else is not taken over (Zeebe's `CLAIM`).
    Assign {
        user_task_key: Key,
        assignee: String,
        action: String,
        allow_override: bool,
    },
    Update {
        user_task_key: Key,
        changes: UserTaskChanges,
        action: String,
    },
    Complete {
        user_task_key: Key,
        variables: JsonValue,
        action: String,
    },
}

impl UserTaskCommand {
    /// The intent of the command's record (Zeebe's: an assignment without override is a
    /// `CLAIM`).
    pub fn intent(&self) -> Intent {
        match self {
            UserTaskCommand::Assign {
                allow_override: false,
                ..
            } => Intent::Claim,
            UserTaskCommand::Assign { .. } => Intent::Assign,
            UserTaskCommand::Update { .. } => Intent::Update,
            UserTaskCommand::Complete { .. } => Intent::Complete,
        }
    }

    pub fn user_task_key(&self) -> Key {
        match self {
            UserTaskCommand::Assign { user_task_key, .. }
            | UserTaskCommand::Update { user_task_key, .. }
            | UserTaskCommand::Complete { user_task_key, .. } => *user_task_key,
        }
    }
}

/// A command sent by one partition to another through the replicated outbox. The
/// receiver de-duplicates on `(source partition, sequence)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterPartitionCommand {
    pub source: PartitionId,
    pub sequence: u64,
    pub value_type: ValueType,
    pub intent: Intent,
    pub key: Key,
    pub value: RecordValue,
}

/// Which decision to evaluate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DecisionSelector {
    /// The latest version of a decision id.
    ById(String),
    ByKey(Key),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvaluateDecision {
    pub decision: DecisionSelector,
    pub variables: JsonValue,
}

/// Where an activated element gets variables before it is entered: `scope_id` is the
/// id of one of its flow scopes (locals there), or empty (the process instance's scope).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariableInstruction {
    pub variables: JsonValue,
    pub scope_id: String,
}

/// Enter an element of a running instance, as if a token had arrived at it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivateInstruction {
    pub element_id: String,
    /// The element instance to enter the element in (or a higher scope, which gets a new
    /// instance of each scope in between); `Key::NONE`: the one live instance of its
    /// flow scope.
    pub ancestor_element_instance_key: Key,
    pub variable_instructions: Vec<VariableInstruction>,
}

/// Zeebe's process instance modification: every activation, then every termination, all
/// or nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModifyProcessInstance {
    pub process_instance_key: Key,
    pub activate_instructions: Vec<ActivateInstruction>,
    /// Element instances to terminate (with everything inside them).
    pub terminate_instructions: Vec<Key>,
}

/// Zeebe's process instance migration: move a running instance to another process
/// definition; each active element goes to the element its instruction maps it to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MigrateProcessInstance {
    pub process_instance_key: Key,
    pub target_process_definition_key: Key,
    pub mapping_instructions: Vec<crate::value::MigrationMappingInstruction>,
}

/// Zeebe's ad-hoc subprocess activation: enter the given inner elements of an active
/// ad-hoc subprocess, each in a new inner instance with its variables as locals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivateAdHocSubProcessActivities {
    pub ad_hoc_sub_process_instance_key: Key,
    pub elements: Vec<crate::value::AdHocSubProcessActivateElement>,
    /// Terminate the inner instances that are active first.
    pub cancel_remaining_instances: bool,
}

/// A client's command on a user of basic authentication (Camunda's `/v2/users`). Made
/// on the deployment partition, which distributes the result to every partition. The
/// gateway hashes passwords before the command is written: the engine never sees one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum UserCommand {
    Create {
        username: String,
        name: String,
        email: String,
        password: crate::value::PasswordHash,
    },
    /// Changes what is given (`None`: unchanged).
    Update {
        username: String,
        name: Option<String>,
        email: Option<String>,
        password: Option<crate::value::PasswordHash>,
    },
    Delete {
        username: String,
    },
}

impl UserCommand {
    pub fn intent(&self) -> Intent {
        match self {
            UserCommand::Create { .. } => Intent::Create,
            UserCommand::Update { .. } => Intent::Update,
            UserCommand::Delete { .. } => Intent::Delete,
        }
    }

    pub fn username(&self) -> &str {
        match self {
            UserCommand::Create { username, .. }
            | UserCommand::Update { username, .. }
            | UserCommand::Delete { username } => username,
        }
    }
}

/// Everything an engine can be asked to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Command {
    // --- from clients ---
    Deploy {
        resources: Vec<Resource>,
    },
    CreateProcessInstance(CreateProcessInstance),
    CancelProcessInstance {
        process_instance_key: Key,
    },
    ActivateJobs(ActivateJobs),
    CompleteJob {
        job_key: Key,
        variables: JsonValue,
        /// A task listener's verdict (empty for other jobs).
        result: crate::value::JobResult,
    },
    FailJob(FailJob),
    ThrowError(ThrowError),
    UpdateJob(UpdateJob),
    PublishMessage(PublishMessage),
    ResolveIncident {
        incident_key: Key,
    },
    SetVariables(SetVariables),

    // --- proposed by the leader when wall-clock work is due ---
    TriggerTimer {
        timer_key: Key,
    },
    TimeOutJob {
        job_key: Key,
    },
    RecurJob {
        job_key: Key,
    },
    ExpireMessage {
        message_key: Key,
    },
    /// Retired: removed a finished instance's summary once its read retention had
    /// passed. No longer proposed (the engine keeps no summaries; the history store
    /// answers reads); logs written before hold it, so it stays, and the engine accepts
    /// it and changes nothing.
    ExpireInstanceSummary {
        process_instance_key: Key,
    },

    // --- from other partitions ---
    /// Boxed: it carries a whole record value, and it is rare next to client commands.
    FromPartition(Box<InterPartitionCommand>),
    /// The receiver has applied the command `sequence` sent by this partition.
    AcknowledgeSend {
        target: PartitionId,
        sequence: u64,
    },

    // --- added later (commands are encoded by variant index: new ones go last) ---
    /// From a client: a signal for every partition (the partition that takes it
    /// passes it on to the others).
    BroadcastSignal(BroadcastSignal),
    // --- from clients (encoded by variant index: new commands go at the end) ---
    UserTask(UserTaskCommand),
    // --- from clients (added later; variants keep their encoding index) ---
    EvaluateDecision(EvaluateDecision),
    // --- from clients (added later; variants keep their encoding index) ---
    ModifyProcessInstance(ModifyProcessInstance),
    // --- from clients (added later; variants keep their encoding index) ---
    /// Delete a deployed resource on every partition.
    DeleteResource {
        resource_key: Key,
    },
    // --- proposed by the partition core (added later; variants keep their encoding index) ---
    /// Partitions `first..=last` were added to the cluster: every deployment this
    /// partition made is sent to them, in the order they were made, ahead of any later
    /// one (docs/decisions/cluster-scaling.md).
    RedistributeDeployments {
        first: PartitionId,
        last: PartitionId,
    },
    // --- from clients (added later; variants keep their encoding index) ---
    MigrateProcessInstance(MigrateProcessInstance),
    // --- from clients (added later; variants keep their encoding index) ---
    ActivateAdHocSubProcessActivities(ActivateAdHocSubProcessActivities),
    // --- from gateways and job push (added later; variants keep their encoding index) ---
    /// Hands an activated job back unworked (Zeebe's JOB YIELD): it is activatable again
    /// at once, its retries unchanged and no failure recorded.
    YieldJob {
        job_key: Key,
    },
    // --- from clients (added later; variants keep their encoding index) ---
    /// A client's command with the operation reference it gave: processed as `command`,
    /// and the command's record, its rejection and every record that follows from it on
    /// this partition carry the reference. Never nested (the engine rejects that).
    Referenced {
        operation_reference: u64,
        command: Box<Command>,
    },
    // --- from clients (added later; variants keep their encoding index) ---
    /// Create, update or delete a user (on the deployment partition, which passes the
    /// result on to every partition).
    User(UserCommand),
}

impl Command {
    /// The command with a client's operation reference, if one was given.
    pub fn referenced(self, operation_reference: Option<u64>) -> Command {
        match operation_reference {
            Some(operation_reference) => Command::Referenced {
                operation_reference,
                command: Box::new(self),
            },
            None => self,
        }
    }

    /// The command itself, under any [`Command::Referenced`] wrapper (never a wrapper:
    /// nested ones, which no gateway builds and the engine rejects, are looked through
    /// in a loop, not by recursion).
    pub fn inner(&self) -> &Command {
        let mut command = self;
        while let Command::Referenced { command: inner, .. } = command {
            command = inner;
        }
        command
    }

    /// The operation reference the client gave, if any.
    pub fn operation_reference(&self) -> Option<u64> {
        match self {
            Command::Referenced {
                operation_reference,
                ..
            } => Some(*operation_reference),
            _ => None,
        }
    }

    /// The intent of the command's record, as the engine writes it (and its rejection):
    /// Zeebe's intent name for the command.
    pub fn intent(&self) -> Intent {
        match self.inner() {
            Command::Deploy { .. } => Intent::Create,
            Command::CreateProcessInstance(c) => c.intent(),
            Command::CancelProcessInstance { .. } => Intent::Cancel,
            Command::ActivateJobs(_) => Intent::Activate,
            Command::CompleteJob { .. } => Intent::Complete,
            Command::FailJob(_) => Intent::Fail,
            Command::ThrowError(_) => Intent::ThrowError,
            Command::UpdateJob(c) => c.intent(),
            Command::PublishMessage(_) => Intent::Publish,
            Command::ResolveIncident { .. } => Intent::Resolve,
            Command::SetVariables(_) => Intent::Update,
            Command::TriggerTimer { .. } => Intent::Trigger,
            Command::TimeOutJob { .. } => Intent::TimeOut,
            Command::RecurJob { .. } => Intent::RecurAfterBackoff,
            Command::ExpireMessage { .. } => Intent::Expire,
            Command::ExpireInstanceSummary { .. } => Intent::Delete,
            // The receiving partition writes a COMMAND_DISTRIBUTION DISTRIBUTE for it.
            Command::FromPartition(_) => Intent::Distribute,
            Command::AcknowledgeSend { .. } => Intent::Acknowledge,
            Command::BroadcastSignal(_) => Intent::Broadcast,
            Command::UserTask(c) => c.intent(),
            Command::EvaluateDecision(_) => Intent::Evaluate,
            Command::ModifyProcessInstance(_) => Intent::Modify,
            Command::DeleteResource { .. } => Intent::Delete,
            Command::RedistributeDeployments { .. } => Intent::Distribute,
            Command::MigrateProcessInstance(_) => Intent::Migrate,
            Command::ActivateAdHocSubProcessActivities(_) => Intent::Activate,
            Command::YieldJob { .. } => Intent::Yield,
            Command::User(c) => c.intent(),
            // Not reached: `inner()` is never a wrapper.
            Command::Referenced { .. } => Intent::Create,
        }
    }

    /// The value type of the command's record, as the engine writes it (and its
    /// rejection).
    pub fn value_type(&self) -> ValueType {
        match self.inner() {
            Command::Deploy { .. } => ValueType::Deployment,
            Command::CreateProcessInstance(_) => ValueType::ProcessInstanceCreation,
            Command::CancelProcessInstance { .. } | Command::ExpireInstanceSummary { .. } => {
                ValueType::ProcessInstance
            }
            Command::ActivateJobs(_) => ValueType::JobBatch,
            Command::CompleteJob { .. }
            | Command::FailJob(_)
            | Command::ThrowError(_)
            | Command::UpdateJob(_)
            | Command::TimeOutJob { .. }
            | Command::RecurJob { .. }
            | Command::YieldJob { .. } => ValueType::Job,
            Command::PublishMessage(_) | Command::ExpireMessage { .. } => ValueType::Message,
            Command::ResolveIncident { .. } => ValueType::Incident,
            Command::SetVariables(_) => ValueType::VariableDocument,
            Command::TriggerTimer { .. } => ValueType::Timer,
            Command::FromPartition(_)
            | Command::AcknowledgeSend { .. }
            | Command::RedistributeDeployments { .. } => ValueType::CommandDistribution,
            Command::BroadcastSignal(_) => ValueType::Signal,
            Command::UserTask(_) => ValueType::UserTask,
            Command::EvaluateDecision(_) => ValueType::DecisionEvaluation,
            Command::ModifyProcessInstance(_) => ValueType::ProcessInstanceModification,
            Command::DeleteResource { .. } => ValueType::ResourceDeletion,
            Command::MigrateProcessInstance(_) => ValueType::ProcessInstanceMigration,
            Command::ActivateAdHocSubProcessActivities(_) => ValueType::AdHocSubProcessInstruction,
            Command::User(_) => ValueType::User,
            // Not reached: `inner()` is never a wrapper.
            Command::Referenced { .. } => ValueType::CommandDistribution,
        }
    }

    /// The engine version a partition's log must be at before this command may be
    /// written to it: commands added since the first release need
    /// [`ENGINE_VERSION_2`](crate::version::ENGINE_VERSION_2), since a replica of that
    /// release could not read them (docs/decisions/versions.md).
    /// A command wrapped in `Referenced` needs what the command it carries needs.
    pub fn required_engine_version(&self) -> u32 {
        self.own_engine_version()
            .max(self.inner().own_engine_version())
    }

    fn own_engine_version(&self) -> u32 {
        use crate::version::{ENGINE_VERSION_1, ENGINE_VERSION_2};
        match self {
            Command::Referenced { .. }
            | Command::YieldJob { .. }
            | Command::ActivateAdHocSubProcessActivities(_)
            | Command::User(_) => ENGINE_VERSION_2,
            // A user distributed to another partition carries a record value the first
            // release has no variant for.
            Command::FromPartition(carried) if carried.value_type == ValueType::User => {
                ENGINE_VERSION_2
            }
            _ => ENGINE_VERSION_1,
        }
    }

    /// Commands that finish or advance work already admitted. Flow control never
    /// rejects them: rejecting a completion only makes the backlog larger.
    pub fn is_never_rejected(&self) -> bool {
        matches!(
            self.inner(),
            Command::CompleteJob { .. }
                | Command::UserTask(UserTaskCommand::Complete { .. })
                | Command::FailJob(_)
                | Command::ThrowError(_)
                | Command::TriggerTimer { .. }
                | Command::TimeOutJob { .. }
                | Command::RecurJob { .. }
                | Command::YieldJob { .. }
                | Command::ExpireMessage { .. }
                | Command::ExpireInstanceSummary { .. }
                | Command::FromPartition(_)
                | Command::AcknowledgeSend { .. }
                | Command::RedistributeDeployments { .. }
        )
    }

    /// Whether a leader takes this command while its disk is past
    /// `data.disk-usage-command-watermark`: the commands that finish work
    /// ([`Command::is_never_rejected`]) and those that let instances end, so that state
    /// shrinks (job activation, which job completion needs; cancelation; incident
    /// resolution; resource deletion), as Zeebe lets them through.
    pub fn passes_disk_watermark(&self) -> bool {
        self.is_never_rejected()
            || matches!(
                self.inner(),
                Command::ActivateJobs(_)
                    | Command::CancelProcessInstance { .. }
                    | Command::ResolveIncident { .. }
                    | Command::DeleteResource { .. }
            )
    }

    /// The partition-routing key of a command addressed to an existing entity.
    pub fn target_key(&self) -> Option<Key> {
        match self.inner() {
            Command::CancelProcessInstance {
                process_instance_key,
            } => Some(*process_instance_key),
            Command::CompleteJob { job_key, .. }
            | Command::TimeOutJob { job_key }
            | Command::RecurJob { job_key }
            | Command::YieldJob { job_key } => Some(*job_key),
            Command::FailJob(c) => Some(c.job_key),
            Command::ThrowError(c) => Some(c.job_key),
            Command::UpdateJob(c) => Some(c.job_key),
            Command::ResolveIncident { incident_key } => Some(*incident_key),
            Command::SetVariables(c) => Some(c.element_instance_key),
            Command::TriggerTimer { timer_key } => Some(*timer_key),
            Command::ExpireMessage { message_key } => Some(*message_key),
            Command::UserTask(c) => Some(c.user_task_key()),
            Command::ModifyProcessInstance(c) => Some(c.process_instance_key),
            Command::MigrateProcessInstance(c) => Some(c.process_instance_key),
            Command::ActivateAdHocSubProcessActivities(c) => {
                Some(c.ad_hoc_sub_process_instance_key)
            }
            Command::DeleteResource { resource_key } => Some(*resource_key),
            Command::CreateProcessInstance(CreateProcessInstance {
                process: ProcessSelector::ByKey(key),
                ..
            }) => Some(*key),
            _ => None,
        }
    }
}

/// A rejected command: a type and a reason the user can act on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rejection {
    pub rejection_type: RejectionType,
    pub reason: String,
}

impl Rejection {
    pub fn new(rejection_type: RejectionType, reason: impl Into<String>) -> Rejection {
        Rejection {
            rejection_type,
            reason: reason.into(),
        }
    }
}

/// What the client hears back: the event that answered its command, or a rejection.
// Responses are built once and moved to the waiting request; boxing the value would
// only add an allocation per command.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CommandResponse {
    Accepted {
        key: Key,
        intent: Intent,
        value: RecordValue,
    },
    Rejected(Rejection),
}

#[cfg(test)]
mod tests;
