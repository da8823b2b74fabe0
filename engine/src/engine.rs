//! [`BpmnEngine`]: the BPMN engine behind the [`Engine`] trait.

use rill_engine_api::{
    Engine, EngineEvent, EngineResult, ProcessingContext, ProcessingOutput, StateRead, StateTxn,
};
use rill_protocol::{Command, CommandResponse, PartitionId, RecordDraft, RejectionType, Timestamp};

use crate::appliers::Appliers;
use crate::commands;
use crate::context::{EngineParts, Processing};
use crate::error::Result;
use crate::model_cache::ModelCache;
use crate::query::{self, Query, QueryResult};
use crate::state::{DueIndex, ElementCache, Reader, ScanFloors, Writer};

/// Runs BPMN processes with Zeebe's semantics, deterministically.
#[derive(Default)]
pub struct BpmnEngine {
    appliers: Appliers,
    models: ModelCache,
    elements: ElementCache,
    floors: ScanFloors,
    collections: crate::context::CollectionCache,
    task_requests: crate::context::TaskRequests,
}

impl BpmnEngine {
    pub fn new() -> BpmnEngine {
        BpmnEngine::default()
    }

    /// An engine that applies events with other appliers (a later version of one).
    #[cfg(test)]
    pub(crate) fn with_appliers(appliers: Appliers) -> BpmnEngine {
        BpmnEngine {
            appliers,
            ..BpmnEngine::default()
        }
    }

    /// Applies one record to state as the event appliers do while processing (commands
    /// and rejections change nothing), with the appliers in force under
    /// `engine_version`, the replicated version the record was written under.
    /// Replaying every record a partition wrote, in order, on empty state rebuilds the
    /// engine's state (all but the key counter).
    pub fn apply_record(
        &mut self,
        state: &mut dyn StateTxn,
        record: &RecordDraft,
        engine_version: u32,
    ) -> EngineResult<()> {
        self.elements.clear();
        let mut writer = Writer::new(state, &self.elements, &self.floors);
        self.appliers
            .apply(&mut writer, &mut self.models, record, engine_version)?;
        self.elements.flush(state)?;
        Ok(())
    }

    fn collect_due(
        &self,
        state: &dyn StateRead,
        now: Timestamp,
        limit: usize,
        out: &mut Vec<Command>,
    ) -> Result<Option<Timestamp>> {
        let reader = Reader::with_floors(state, &self.floors);
        let now = now.millis();
        let mut next: Option<i64> = None;
        let indexes = [
            DueIndex::Timers,
            DueIndex::JobDeadlines,
            DueIndex::JobBackoffs,
            DueIndex::MessageDeadlines,
        ];
        for index in indexes {
            reader.scan_due(index, |due, key| {
                if due > now || out.len() >= limit {
                    next = Some(next.map_or(due, |n| n.min(due)));
                    return false;
                }
                let key = rill_protocol::Key(key);
                out.push(match index {
                    DueIndex::Timers => Command::TriggerTimer { timer_key: key },
                    DueIndex::JobDeadlines => Command::TimeOutJob { job_key: key },
                    DueIndex::JobBackoffs => Command::RecurJob { job_key: key },
                    DueIndex::MessageDeadlines => Command::ExpireMessage { message_key: key },
                });
                true
            })?;
        }
        Ok(next.map(Timestamp))
    }
}

impl Engine for BpmnEngine {
    type Command = Command;
    type Response = CommandResponse;
    type Query = Query;
    type QueryResult = QueryResult;

    fn process(
        &mut self,
        ctx: &ProcessingContext,
        state: &mut dyn StateTxn,
        command: &Command,
        out: &mut ProcessingOutput<Command, CommandResponse>,
    ) -> EngineResult<()> {
        let parts = EngineParts {
            appliers: self.appliers,
            models: &mut self.models,
            cache: &self.elements,
            floors: &self.floors,
            collections: &mut self.collections,
            task_requests: &mut self.task_requests,
        };
        let first_record = out.records.len();
        let mut processing = Processing::new(ctx, state, parts, out);
        let result = commands::process(&mut processing, command).and_then(|()| processing.finish());
        if let Some(reference) = command.operation_reference() {
            // Every record of a client's referenced command carries its reference (the
            // command's, its rejection's and the follow-ups'), as Zeebe's metadata does.
            let reference = commands::recorded_reference(reference);
            for draft in &mut out.records[first_record..] {
                draft.operation_reference = reference;
            }
        }
        if result.is_err() {
            // The command's writes are rolled back, and keys will be handed out again:
            // forget anything cached from it.
            self.models.clear();
            self.elements.clear();
            self.floors.clear();
        }
        Ok(result?)
    }

    fn processing_error_response(&self, reason: &str) -> CommandResponse {
        CommandResponse::Rejected(rill_protocol::Rejection::new(
            rill_protocol::RejectionType::ProcessingError,
            reason,
        ))
    }

    fn processing_error_record(&self, command: &Command, reason: &str) -> RecordDraft {
        let (key, intent, value) = commands::describe(command);
        let mut draft = RecordDraft::rejection(
            key,
            intent,
            value,
            rill_protocol::RejectionType::ProcessingError,
            reason,
        );
        if let Some(reference) = command.operation_reference() {
            draft.operation_reference = commands::recorded_reference(reference);
        }
        draft
    }

    fn due_commands(
        &mut self,
        state: &dyn StateRead,
        now: Timestamp,
        limit: usize,
        out: &mut Vec<Command>,
    ) -> EngineResult<Option<Timestamp>> {
        Ok(self.collect_due(state, now, limit, out)?)
    }

    fn partitions_added(
        &self,
        partition: PartitionId,
        first: PartitionId,
        last: PartitionId,
    ) -> Option<Command> {
        // Deployments are made on the deployment partition, which hands them on.
        (partition == PartitionId(1)).then_some(Command::RedistributeDeployments { first, last })
    }

    fn pending_sends(
        &mut self,
        state: &dyn StateRead,
        limit: usize,
        out: &mut Vec<(PartitionId, Command)>,
    ) -> EngineResult<()> {
        let reader = Reader::new(state);
        for (target, sequence, entry) in reader.outbox(limit)? {
            if let Some(send) = commands::outgoing(reader, target, sequence, &entry)? {
                out.push(send);
            }
        }
        Ok(())
    }

    fn answer_from_state(
        &mut self,
        state: &dyn StateRead,
        command: &Command,
    ) -> EngineResult<Option<CommandResponse>> {
        let reader = Reader::with_floors(state, &self.floors);
        Ok(commands::answer_from_state(reader, command)?)
    }

    /// Answers a user's credentials only: the history store answers every other read
    /// (see `query`).
    fn query(&mut self, state: &dyn StateRead, query: &Query) -> EngineResult<QueryResult> {
        Ok(query::answer(Reader::new(state), query)?)
    }

    fn is_never_rejected(command: &Command) -> bool {
        command.is_never_rejected()
    }

    fn passes_disk_watermark(command: &Command) -> bool {
        command.passes_disk_watermark()
    }

    fn required_engine_version(command: &Command) -> u32 {
        command.required_engine_version()
    }

    fn record_event(record: &RecordDraft) -> Option<EngineEvent> {
        crate::metrics::record_event(record)
    }

    fn acknowledgement(
        target: PartitionId,
        sent: &Command,
        response: &CommandResponse,
    ) -> Option<Command> {
        let Command::FromPartition(sent) = sent else {
            return None;
        };
        let applied = match response {
            CommandResponse::Accepted { .. } => true,
            // Applied by an earlier delivery.
            CommandResponse::Rejected(r) => r.rejection_type == RejectionType::AlreadyExists,
        };
        applied.then_some(Command::AcknowledgeSend {
            target,
            sequence: sent.sequence,
        })
    }

    fn reset_caches(&mut self) {
        self.models.clear();
        self.floors.clear();
    }
}
