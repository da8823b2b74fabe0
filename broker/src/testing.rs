//! A small deterministic engine for tests and benchmarks of the partition core: it
//! appends ids to a list in state and emits a command and an event record for each.
//! The BPMN engine plugs in through the same [`Engine`] trait.

use std::ops::ControlFlow;

use rill_engine_api::{
    Action, Engine, EngineError, EngineResult, ProcessingContext, ProcessingError,
    ProcessingOutput, StateError, StateRead, StateTxn, keys, state_digest,
};
use rill_protocol::value::VariableRecord;
use rill_protocol::{Intent, Key, PartitionId, RecordDraft, RecordValue, RejectionType, Timestamp};
use serde::{Deserialize, Serialize};

const COUNT: &[u8] = b"list/count";
const ITEM: &[u8] = b"list/item/";

/// What the test engine can be asked to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ListCommand {
    /// Append `id` to the list.
    Append { id: u64 },
    /// Write something, then fail with a processing error (its writes must vanish).
    FailAfterWriting { id: u64 },
    /// Like `Append`, but flow control never rejects it (work that finishes something).
    Finish { id: u64 },
    /// What is at `seq`? Answered from state when it is there; otherwise it goes through
    /// the log (one command record) and is answered there.
    Lookup { seq: u64 },
    /// Sends `Append { id }` to `partition` (one command record here). There is no
    /// outbox: a send lost on the way is not sent again.
    SendTo { partition: u16, id: u64 },
    /// `partition` took the `Append { id }` this partition sent: appends `id` here.
    Acknowledged { partition: u16, id: u64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ListResponse {
    /// The id is at `seq` (1-based) in the list, with a fresh key.
    Appended {
        seq: u64,
        key: Key,
        timestamp: Timestamp,
    },
    Failed {
        reason: String,
    },
    /// The id at `seq`, if any.
    Found {
        seq: u64,
        id: Option<u64>,
    },
    /// `Append { id }` is on its way to another partition.
    Sent {
        id: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ListQuery {
    /// Number of ids in the list.
    Count,
    /// Ids at `seq` from (1-based) on, at most `limit`.
    Items { from: u64, limit: usize },
    /// A digest of the whole state.
    Digest,
    /// The raw value under a state key.
    Raw { key: Vec<u8> },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ListQueryResult {
    Count(u64),
    Items(Vec<u64>),
    Digest(u64),
    Raw(Option<Vec<u8>>),
}

/// The test engine. Stateless apart from state: any instance gives the same results.
#[derive(Clone, Debug, Default)]
pub struct ListEngine;

fn count(state: &dyn StateRead) -> EngineResult<u64> {
    match state.get(COUNT)? {
        None => Ok(0),
        Some(bytes) => {
            let raw: [u8; 8] = bytes
                .as_slice()
                .try_into()
                .map_err(|e| StateError::corrupt(format!("count has {} bytes", bytes.len()), e))?;
            Ok(u64::from_be_bytes(raw))
        }
    }
}

fn item(state: &dyn StateRead, seq: u64) -> EngineResult<Option<u64>> {
    Ok(state
        .get(&item_key(seq))?
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map(u64::from_be_bytes))
}

fn item_key(seq: u64) -> Vec<u8> {
    let mut key = ITEM.to_vec();
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

fn value(id: u64, ctx: &ProcessingContext) -> RecordValue {
    RecordValue::Variable(VariableRecord {
        name: "id".into(),
        value: id.to_string(),
        scope_key: -1,
        process_instance_key: -1,
        process_definition_key: -1,
        bpmn_process_id: format!("partition-{}", ctx.partition_id),
        tenant_id: rill_protocol::value::DEFAULT_TENANT.into(),
        root_process_instance_key: -1,
    })
}

impl ListEngine {
    fn append(
        &self,
        ctx: &ProcessingContext,
        state: &mut dyn StateTxn,
        id: u64,
        out: &mut ProcessingOutput<ListCommand, ListResponse>,
    ) -> EngineResult<()> {
        let seq = count(state)? + 1;
        let key = keys::next_key(state, ctx.partition_id)?;
        state.put(&item_key(seq), &id.to_be_bytes());
        state.put(COUNT, &seq.to_be_bytes());
        out.records.push(RecordDraft::command(
            Key::NONE,
            Intent::Create,
            value(id, ctx),
        ));
        out.records
            .push(RecordDraft::event(key, Intent::Created, value(id, ctx)));
        out.response = Some(ListResponse::Appended {
            seq,
            key,
            timestamp: ctx.timestamp,
        });
        Ok(())
    }
}

impl Engine for ListEngine {
    type Command = ListCommand;
    type Response = ListResponse;
    type Query = ListQuery;
    type QueryResult = ListQueryResult;

    fn process(
        &mut self,
        ctx: &ProcessingContext,
        state: &mut dyn StateTxn,
        command: &ListCommand,
        out: &mut ProcessingOutput<ListCommand, ListResponse>,
    ) -> EngineResult<()> {
        match command {
            ListCommand::Append { id }
            | ListCommand::Finish { id }
            | ListCommand::Acknowledged { id, .. } => self.append(ctx, state, *id, out),
            ListCommand::SendTo { partition, id } => {
                out.records.push(RecordDraft::command(
                    Key::NONE,
                    Intent::Create,
                    value(*id, ctx),
                ));
                out.actions.push(Action::Send {
                    partition: PartitionId(*partition),
                    command: ListCommand::Append { id: *id },
                });
                out.response = Some(ListResponse::Sent { id: *id });
                Ok(())
            }
            ListCommand::Lookup { seq } => {
                out.records.push(RecordDraft::command(
                    Key::NONE,
                    Intent::Create,
                    value(*seq, ctx),
                ));
                out.response = Some(ListResponse::Found {
                    seq: *seq,
                    id: item(state, *seq)?,
                });
                Ok(())
            }
            ListCommand::FailAfterWriting { id } => {
                state.put(b"list/poison", &id.to_be_bytes());
                Err(EngineError::Processing(ProcessingError::new(format!(
                    "command {id} fails on purpose"
                ))))
            }
        }
    }

    fn processing_error_response(&self, reason: &str) -> ListResponse {
        ListResponse::Failed {
            reason: reason.to_owned(),
        }
    }

    fn processing_error_record(&self, command: &ListCommand, reason: &str) -> RecordDraft {
        let id = match command {
            ListCommand::Append { id }
            | ListCommand::FailAfterWriting { id }
            | ListCommand::Finish { id }
            | ListCommand::SendTo { id, .. }
            | ListCommand::Acknowledged { id, .. } => *id,
            ListCommand::Lookup { seq } => *seq,
        };
        RecordDraft::rejection(
            Key::NONE,
            Intent::Create,
            RecordValue::Variable(VariableRecord {
                name: "id".into(),
                value: id.to_string(),
                scope_key: -1,
                process_instance_key: -1,
                process_definition_key: -1,
                bpmn_process_id: String::new(),
                tenant_id: rill_protocol::value::DEFAULT_TENANT.into(),
                root_process_instance_key: -1,
            }),
            RejectionType::ProcessingError,
            reason,
        )
    }

    fn due_commands(
        &mut self,
        _state: &dyn StateRead,
        _now: Timestamp,
        _limit: usize,
        _out: &mut Vec<ListCommand>,
    ) -> EngineResult<Option<Timestamp>> {
        Ok(None)
    }

    fn pending_sends(
        &mut self,
        _state: &dyn StateRead,
        _limit: usize,
        _out: &mut Vec<(PartitionId, ListCommand)>,
    ) -> EngineResult<()> {
        Ok(())
    }

    fn answer_from_state(
        &mut self,
        state: &dyn StateRead,
        command: &ListCommand,
    ) -> EngineResult<Option<ListResponse>> {
        let ListCommand::Lookup { seq } = command else {
            return Ok(None);
        };
        Ok(item(state, *seq)?.map(|id| ListResponse::Found {
            seq: *seq,
            id: Some(id),
        }))
    }

    fn query(&mut self, state: &dyn StateRead, query: &ListQuery) -> EngineResult<ListQueryResult> {
        match query {
            ListQuery::Count => Ok(ListQueryResult::Count(count(state)?)),
            ListQuery::Digest => Ok(ListQueryResult::Digest(state_digest(state)?)),
            ListQuery::Raw { key } => Ok(ListQueryResult::Raw(state.get(key)?)),
            ListQuery::Items { from, limit } => {
                let mut items = Vec::new();
                let end = rill_engine_api::prefix_end(ITEM);
                state.scan(&item_key((*from).max(1)), &end, &mut |_, v| {
                    if let Ok(raw) = <[u8; 8]>::try_from(v) {
                        items.push(u64::from_be_bytes(raw));
                    }
                    if items.len() >= *limit {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })?;
                Ok(ListQueryResult::Items(items))
            }
        }
    }

    fn is_never_rejected(command: &ListCommand) -> bool {
        matches!(
            command,
            ListCommand::Finish { .. } | ListCommand::Acknowledged { .. }
        )
    }

    fn acknowledgement(
        target: PartitionId,
        sent: &ListCommand,
        response: &ListResponse,
    ) -> Option<ListCommand> {
        match (sent, response) {
            (ListCommand::Append { id }, ListResponse::Appended { .. }) => {
                Some(ListCommand::Acknowledged {
                    partition: target.get(),
                    id: *id,
                })
            }
            _ => None,
        }
    }
}

/// Raft traffic between nodes in one process, through the same encoding as on the wire
/// but without sockets: for tests and benchmarks of several replicas in one process.
/// Disconnecting a node makes it unreachable, as a crashed process would be.
#[derive(Clone, Default)]
pub struct LoopbackNetwork {
    nodes: std::sync::Arc<
        parking_lot::RwLock<std::collections::BTreeMap<u64, rill_raft::RaftService>>,
    >,
}

impl LoopbackNetwork {
    pub fn new() -> Self {
        Self::default()
    }

    /// Routes requests for `node` to `service`.
    pub fn connect(&self, node: rill_protocol::NodeId, service: rill_raft::RaftService) {
        self.nodes.write().insert(u64::from(node.0), service);
    }

    /// Makes `node` unreachable.
    pub fn disconnect(&self, node: rill_protocol::NodeId) {
        self.nodes.write().remove(&u64::from(node.0));
    }

    /// The transport a node uses to reach the others.
    pub fn transport(&self) -> std::sync::Arc<dyn rill_raft::RaftTransport> {
        std::sync::Arc::new(self.clone())
    }
}

impl rill_raft::RaftTransport for LoopbackNetwork {
    fn request(
        &self,
        target: u64,
        partition: PartitionId,
        _kind: rill_raft::RaftRpcKind,
        payload: bytes::Bytes,
        timeout: std::time::Duration,
    ) -> futures::future::BoxFuture<'static, Result<bytes::Bytes, rill_raft::TransportFailure>>
    {
        use rill_raft::TransportFailure;
        let service = self.nodes.read().get(&target).cloned();
        Box::pin(async move {
            let service = service
                .ok_or_else(|| TransportFailure::Unreachable(format!("node {target} is down")))?;
            match tokio::time::timeout(timeout, service.handle(partition, payload)).await {
                Err(_) => Err(TransportFailure::Timeout),
                Ok(Err(reason)) => Err(TransportFailure::Remote(reason)),
                Ok(Ok(reply)) => Ok(reply),
            }
        })
    }
}
