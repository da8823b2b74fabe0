//! Answers the read-only questions of `rill_protocol::Query` from the leader's state,
//! mapping the storage enums onto the wire's own.

use rill_protocol::value::BpmnElementType;
use rill_protocol::{
    ElementInstanceState, ElementInstanceView, IncidentView, JobView, Key, ProcessDefinitionView,
    ProcessInstanceState, ProcessInstanceView, Timestamp, VariableView,
};
pub use rill_protocol::{Query, QueryResult};

use crate::error::{Error, Result};
use crate::state::{ElementInstance, ElementState, InstanceState, JobState, Reader};

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
        Query::IncidentsOfInstance {
            process_instance_key,
        } => QueryResult::Incidents(
            state
                .incidents_of_instance(process_instance_key.get())?
                .into_iter()
                .map(|i| IncidentView {
                    key: i.key,
                    record: i.record,
                })
                .collect(),
        ),
        Query::Incident { key } => {
            QueryResult::Incident(state.incident(key.get())?.map(|i| IncidentView {
                key: i.key,
                record: i.record,
            }))
        }
        Query::Variables {
            process_instance_key,
            scope_key,
        } => {
            let instance = process_instance_key.get();
            let variables = match scope_key {
                Some(scope) => state
                    .scope_variables(instance, scope.get())?
                    .into_iter()
                    .map(|(name, v)| (scope.get(), name, v))
                    .collect(),
                None => state.instance_variables(instance)?,
            };
            QueryResult::Variables(
                variables
                    .into_iter()
                    // The engine's hidden bookkeeping (a message start's marker).
                    .filter(|(_, name, _)| name != crate::behavior::MESSAGE_START_VARIABLE)
                    .map(|(scope, name, v)| VariableView {
                        key: v.key,
                        name,
                        value: v.value,
                        scope_key: Key(scope),
                        process_instance_key: *process_instance_key,
                    })
                    .collect(),
            )
        }
        Query::Job { key } => QueryResult::Job(state.job(key.get())?.map(|j| JobView {
            key: *key,
            state: j.state.into(),
            record: j.record,
        })),
        Query::ElementInstances {
            process_instance_key,
        } => {
            let mut out = Vec::new();
            let mut pending = vec![process_instance_key.get()];
            while let Some(key) = pending.pop() {
                let Some(instance) = state.element_instance(key)? else {
                    continue;
                };
                out.push(ElementInstanceView {
                    key: Key(key),
                    element_id: instance.record.element_id.clone(),
                    element_type: instance.record.bpmn_element_type,
                    state: instance.state.into(),
                    flow_scope_key: Key(instance.record.flow_scope_key),
                    has_incident: state.incident_of_element(key)?.is_some()
                        || called_has_incident(&state, &instance)?
                        || (instance.job_key.get() > 0
                            && state.incident_of_job(instance.job_key)?.is_some()),
                });
                let mut children = state.children(key)?;
                children.reverse();
                pending.extend(children);
            }
            QueryResult::ElementInstances(out)
        }
        Query::ProcessDefinition { key } => {
            QueryResult::ProcessDefinition(state.process(key.get())?.map(definition_view))
        }
        Query::ProcessDefinitions { bpmn_process_id } => {
            let mut out = Vec::new();
            state.processes(|p| {
                if bpmn_process_id
                    .as_ref()
                    .is_none_or(|id| *id == p.bpmn_process_id)
                {
                    out.push(definition_view(p));
                }
                true
            })?;
            QueryResult::ProcessDefinitions(out)
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

/// Whether the instance a call activity called, or one called further down from it,
/// has an open incident: the call activity shows it, as Operate does.
fn called_has_incident(state: &Reader<'_>, instance: &ElementInstance) -> Result<bool> {
    if instance.record.bpmn_element_type != BpmnElementType::CallActivity {
        return Ok(false);
    }
    let mut pending = vec![instance.job_key];
    // Bounded: call activities nest as deep as instances were created.
    while let Some(child) = pending.pop() {
        if child.get() <= 0 {
            continue;
        }
        if state.has_incident(child)? {
            return Ok(true);
        }
        let mut elements = vec![child.get()];
        while let Some(key) = elements.pop() {
            let Some(element) = state.element_instance(key)? else {
                continue;
            };
            if element.record.bpmn_element_type == BpmnElementType::CallActivity {
                pending.push(element.job_key);
            }
            elements.extend(state.children(key)?);
        }
    }
    Ok(false)
}

fn definition_view(p: rill_protocol::value::ProcessRecord) -> ProcessDefinitionView {
    ProcessDefinitionView {
        key: Key(p.process_definition_key),
        bpmn_process_id: p.bpmn_process_id,
        version: p.version,
        resource_name: p.resource_name,
        resource: p.resource,
    }
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

impl From<ElementState> for ElementInstanceState {
    fn from(state: ElementState) -> Self {
        match state {
            ElementState::Activating => ElementInstanceState::Activating,
            ElementState::Activated => ElementInstanceState::Activated,
            ElementState::Completing => ElementInstanceState::Completing,
            ElementState::Terminating => ElementInstanceState::Terminating,
        }
    }
}

impl From<JobState> for rill_protocol::JobState {
    fn from(state: JobState) -> Self {
        match state {
            JobState::Activatable => rill_protocol::JobState::Activatable,
            JobState::Activated => rill_protocol::JobState::Activated,
            JobState::Failed => rill_protocol::JobState::Failed,
            JobState::ErrorThrown => rill_protocol::JobState::ErrorThrown,
        }
    }
}
