//! The `Engine` trait: where the partition core and the BPMN engine meet.
//!
//! The stream processor hands each committed command to [`Engine::process`] with the
//! entry's timestamp and the command's position; the engine reads and writes state only
//! through the given transaction and describes everything else as data: records, the
//! response, and leader-only [`Action`]s. The processor commits state, records and the
//! applied index in one batch; only then does the leader carry out the actions.

use std::fmt::Debug;

use rill_protocol::{PartitionId, Position, RecordDraft, Timestamp};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::state::{StateError, StateRead, StateTxn};

/// Identifies a waiting client request on the leader that proposed a command. Only
/// meaningful on that leader; a new leader never sees a request id it issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RequestId(pub u64);

/// Everything the engine may know about the command being applied. All of it comes from
/// the log entry, so it is identical on every replica.
#[derive(Clone, Debug)]
pub struct ProcessingContext {
    pub partition_id: PartitionId,
    /// The partitions of the cluster (`1..=partition_count`): where deployments and
    /// signals are distributed. Grows when partitions are added.
    pub partition_count: u16,
    /// The position the command's own record gets; follow-up records come after it.
    pub position: Position,
    /// The leader's timestamp for the entry (monotonic within the partition).
    pub timestamp: Timestamp,
    /// The replicated engine version gating behaviour changes across upgrades.
    pub engine_version: u32,
    /// The client request waiting for this command, if any.
    pub request: Option<RequestId>,
    /// Messages are routed by correlation-key hash over partitions
    /// `1..=message_partition_count`: the count the cluster was created with, which no
    /// change alters (docs/decisions/cluster-scaling.md).
    pub message_partition_count: u16,
    /// How much one command may write (docs/decisions/command-limits.md). The leader
    /// stamps its configured limits into each entry, so every replica stops a command
    /// at the same record.
    pub limits: CommandLimits,
}

/// Bounds on the records one command writes (its own, its follow-ups, and everything
/// its in-line steps write), so that no model can make one command run forever or fill
/// memory: past them, the engine stops the command's work where it is (an incident on
/// the element being entered), and far past them it refuses the command as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandLimits {
    /// Records (`engine.max-records-per-command`).
    pub max_records: u32,
    /// Encoded bytes of those records (`engine.max-bytes-per-command`).
    pub max_bytes: u64,
}

impl CommandLimits {
    pub const DEFAULT_MAX_RECORDS: u32 = 200_000;
    pub const DEFAULT_MAX_BYTES: u64 = 32 * 1024 * 1024;
}

impl Default for CommandLimits {
    fn default() -> Self {
        CommandLimits {
            max_records: CommandLimits::DEFAULT_MAX_RECORDS,
            max_bytes: CommandLimits::DEFAULT_MAX_BYTES,
        }
    }
}

/// Side effects the leader carries out after the batch is committed. Followers drop
/// them. Each must be safe to lose (a new leader recomputes what it needs from state).
#[derive(Debug, Clone, PartialEq)]
pub enum Action<C, R> {
    /// Answer a client request that was waiting for a later event (create-and-await).
    Respond { request: RequestId, response: R },
    /// Jobs of this type became activatable: wake long-polling workers.
    JobsAvailable { job_type: String },
    /// Something is due at this time: ask [`Engine::due_commands`] then.
    WakeAt { due: Timestamp },
    /// Deliver a command to another partition (the engine keeps it in its outbox until
    /// acknowledged, and lists it again from [`Engine::pending_sends`]).
    Send { partition: PartitionId, command: C },
}

/// What applying one command produced.
#[derive(Debug)]
pub struct ProcessingOutput<C, R> {
    /// Records in order. The first is the command's own record (or its rejection), at
    /// `ctx.position`; the rest follow from it.
    pub records: Vec<RecordDraft>,
    /// The answer for `ctx.request`, if the command is answered now.
    pub response: Option<R>,
    pub actions: Vec<Action<C, R>>,
}

impl<C, R> Default for ProcessingOutput<C, R> {
    fn default() -> Self {
        ProcessingOutput {
            records: Vec::new(),
            response: None,
            actions: Vec::new(),
        }
    }
}

impl<C, R> ProcessingOutput<C, R> {
    pub fn clear(&mut self) {
        self.records.clear();
        self.response = None;
        self.actions.clear();
    }
}

/// A business event a record stands for, counted in the node's metrics
/// (`rill_engine_events_total{kind, action}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineEvent {
    /// What it is about, e.g. `process_instance` or `job`.
    pub kind: &'static str,
    /// What happened, e.g. `created` or `completed`.
    pub action: &'static str,
    /// How many (a batch of activated jobs counts each job).
    pub count: u64,
}

/// Why processing a command failed outright.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Reading or writing state failed on this replica: stop the partition.
    #[error(transparent)]
    State(#[from] StateError),
    /// A deterministic failure (corrupt value, broken invariant). The processor rolls
    /// the command's changes back and writes a `PROCESSING_ERROR` rejection instead.
    #[error(transparent)]
    Processing(#[from] ProcessingError),
}

/// A deterministic failure to process a command, the same on every replica: the
/// engine's own error, kept as it is. Its message is the reason of the
/// `PROCESSING_ERROR` rejection written in the command's place.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ProcessingError(Box<dyn std::error::Error + Send + Sync>);

impl ProcessingError {
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ProcessingError(error.into())
    }

    /// The engine's error.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

pub type EngineResult<T> = Result<T, EngineError>;

/// A deterministic state machine over commands. No clock, no I/O, no threads: the same
/// commands with the same contexts on the same state give the same state, records,
/// response and actions on every replica.
pub trait Engine: Send + 'static {
    /// What the log carries.
    type Command: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static;
    /// What a client hears back.
    type Response: Clone + Debug + Send + Sync + 'static;
    /// Read-only questions answered from state (the leader's state after apply).
    type Query: Debug + Send + 'static;
    type QueryResult: Debug + Send + 'static;

    /// Applies one command.
    fn process(
        &mut self,
        ctx: &ProcessingContext,
        state: &mut dyn StateTxn,
        command: &Self::Command,
        out: &mut ProcessingOutput<Self::Command, Self::Response>,
    ) -> EngineResult<()>;

    /// The response for a command whose processing failed with
    /// [`EngineError::Processing`] (its changes were rolled back).
    fn processing_error_response(&self, reason: &str) -> Self::Response;

    /// The record written in place of a command whose processing failed with
    /// [`EngineError::Processing`].
    fn processing_error_record(&self, command: &Self::Command, reason: &str) -> RecordDraft;

    /// Commands the leader should propose because their time has come (timers due, job
    /// deadlines passed, messages expired), at most `limit`. Also returns when the next
    /// such command will be due, if known.
    fn due_commands(
        &mut self,
        state: &dyn StateRead,
        now: Timestamp,
        limit: usize,
        out: &mut Vec<Self::Command>,
    ) -> EngineResult<Option<Timestamp>>;

    /// Cross-partition sends not yet acknowledged, for the leader to (re)deliver.
    fn pending_sends(
        &mut self,
        state: &dyn StateRead,
        limit: usize,
        out: &mut Vec<(PartitionId, Self::Command)>,
    ) -> EngineResult<()>;

    /// The response to `command` when the leader can give it from its applied state with
    /// nothing to write (e.g. a job activation that would find no job): the command then
    /// never enters the log. `None` (the default): propose it. The answer must be what
    /// processing the command would respond on this state, with no state change that
    /// matters (a command that only consumes a key and writes its own records qualifies).
    fn answer_from_state(
        &mut self,
        _state: &dyn StateRead,
        _command: &Self::Command,
    ) -> EngineResult<Option<Self::Response>> {
        Ok(None)
    }

    /// Answers a read-only query from state.
    fn query(
        &mut self,
        state: &dyn StateRead,
        query: &Self::Query,
    ) -> EngineResult<Self::QueryResult>;

    /// True for commands that finish admitted work; flow control never rejects them.
    fn is_never_rejected(command: &Self::Command) -> bool;

    /// True for commands a leader takes while its disk is past the command watermark:
    /// those that finish work or let instances end (docs/decisions/disk-full.md).
    fn passes_disk_watermark(command: &Self::Command) -> bool {
        Self::is_never_rejected(command)
    }

    /// The engine version a partition's log must be at before a leader writes
    /// `command` to it (a replica of an older release could not read it); the leader
    /// refuses it until then (docs/decisions/versions.md).
    fn required_engine_version(_command: &Self::Command) -> u32 {
        1
    }

    /// The command that tells this (the sending) partition that `target` has taken
    /// `sent`, given the target's `response`: proposing it removes `sent` from the
    /// outbox. `None` when the response does not show that the target applied it (the
    /// command stays in the outbox and is delivered again).
    fn acknowledgement(
        _target: PartitionId,
        _sent: &Self::Command,
        _response: &Self::Response,
    ) -> Option<Self::Command> {
        None
    }

    /// The business event `record` stands for, if it is one worth counting.
    fn record_event(_record: &RecordDraft) -> Option<EngineEvent> {
        None
    }

    /// The command the partition core runs (in the log, right after raising the
    /// partition count) when partitions `first..=last` were added to the cluster, so
    /// that they get what this partition distributed before they existed. `None` (the
    /// default): nothing to send.
    fn partitions_added(
        &self,
        _partition: PartitionId,
        _first: PartitionId,
        _last: PartitionId,
    ) -> Option<Self::Command> {
        None
    }

    /// Forget caches derived from state (after a snapshot was installed).
    fn reset_caches(&mut self) {}
}
