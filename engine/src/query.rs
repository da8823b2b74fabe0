//! Answers the engine's read-only questions of `rill_protocol::Query` from the leader's
//! state: the two the gateway asks with the history store off (an instance by key, an
//! incident by key). Every other read is the history store's.

use rill_protocol::value::BpmnElementType;
use rill_protocol::{IncidentView, Key, ProcessInstanceState, ProcessInstanceView, Timestamp};
pub use rill_protocol::{Query, QueryResult};

use crate::error::{Error, Result};
use crate::state::{InstanceState, Reader};

/// A key as the view has it: `None` for Zeebe's -1.
fn positive(key: i64) -> Option<Key> {
    (key > 0).then_some(Key(key))
}

/// The root an instance's record names; one stored before records named it (-1) is
/// shown as its own root.
fn root_of(instance: Key, root: i64) -> Key {
    if root > 0 { Key(root) } else { instance }
}

pub(crate) fn answer(state: Reader<'_>, query: &Query) -> Result<QueryResult> {
    Ok(match query {
        Query::ProcessInstance { key } => {
            let view = match state.summary(key.get())? {
                Some(s) => Some(ProcessInstanceView {
                    key: *key,
                    bpmn_process_id: s.bpmn_process_id,
                    version: s.version,
                    process_definition_key: s.process_definition_key,
                    state: s.state.into(),
                    has_incident: state.has_incident(key.get())?,
                    start_date: Timestamp(s.start_date),
                    end_date: (s.end_date >= 0).then_some(Timestamp(s.end_date)),
                    parent_process_instance_key: positive(s.parent_process_instance_key),
                    parent_element_instance_key: positive(s.parent_element_instance_key),
                    root_process_instance_key: root_of(*key, s.root_process_instance_key),
                }),
                None => match state.element_instance(key.get())? {
                    Some(i) if i.record.bpmn_element_type == BpmnElementType::Process => {
                        Some(ProcessInstanceView {
                            key: *key,
                            bpmn_process_id: i.record.bpmn_process_id,
                            version: i.record.version,
                            process_definition_key: Key(i.record.process_definition_key),
                            state: ProcessInstanceState::Active,
                            has_incident: state.has_incident(key.get())?,
                            start_date: Timestamp(i.start_date),
                            end_date: None,
                            parent_process_instance_key: positive(
                                i.record.parent_process_instance_key,
                            ),
                            parent_element_instance_key: positive(
                                i.record.parent_element_instance_key,
                            ),
                            root_process_instance_key: root_of(
                                *key,
                                i.record.root_process_instance_key,
                            ),
                        })
                    }
                    _ => None,
                },
            };
            QueryResult::ProcessInstance(view)
        }
        Query::Incident { key } => {
            QueryResult::Incident(state.incident(key.get())?.map(|i| IncidentView {
                key: i.key,
                record: i.record,
            }))
        }
        // The partition's history store answers these, outside the engine.
        Query::SearchProcessInstances(_)
        | Query::HistoricProcessInstance { .. }
        | Query::History(_) => {
            return Err(Error::Inconsistent(
                "history queries are answered by the partition's history store, not the engine"
                    .to_owned(),
            ));
        }
    })
}

impl From<InstanceState> for ProcessInstanceState {
    fn from(state: InstanceState) -> Self {
        match state {
            InstanceState::Active => ProcessInstanceState::Active,
            InstanceState::Completed => ProcessInstanceState::Completed,
            InstanceState::Terminated => ProcessInstanceState::Terminated,
        }
    }
}
