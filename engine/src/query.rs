//! Read-only questions the gateway asks, answered from the leader's state.

use rill_protocol::value::{BpmnElementType, IncidentRecord, JobRecord};
use rill_protocol::{Blob, Key, Timestamp};

use crate::error::Result;
use crate::state::{ElementState, InstanceState, JobState, Reader};

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Query {
    /// A process instance, active or finished within the retention.
    ProcessInstance {
        key: Key,
    },
    /// The open incidents of a process instance.
    IncidentsOfInstance {
        process_instance_key: Key,
    },
    Incident {
        key: Key,
    },
    /// Variables of an instance: of one scope, or of every scope.
    Variables {
        process_instance_key: Key,
        scope_key: Option<Key>,
    },
    Job {
        key: Key,
    },
    /// The live element instances of a process instance, parents before children.
    ElementInstances {
        process_instance_key: Key,
    },
    ProcessDefinition {
        key: Key,
    },
    /// All versions of all processes (or of one process id), by key.
    ProcessDefinitions {
        bpmn_process_id: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum QueryResult {
    ProcessInstance(Option<ProcessInstanceView>),
    Incidents(Vec<IncidentView>),
    Incident(Option<IncidentView>),
    Variables(Vec<VariableView>),
    Job(Option<JobView>),
    ElementInstances(Vec<ElementInstanceView>),
    ProcessDefinition(Option<ProcessDefinitionView>),
    ProcessDefinitions(Vec<ProcessDefinitionView>),
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcessInstanceView {
    pub key: Key,
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: Key,
    pub state: InstanceState,
    pub has_incident: bool,
    pub start_date: Timestamp,
    pub end_date: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IncidentView {
    pub key: Key,
    pub record: IncidentRecord,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VariableView {
    pub key: Key,
    pub name: String,
    /// The value as JSON text.
    pub value: String,
    pub scope_key: Key,
    pub process_instance_key: Key,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobView {
    pub key: Key,
    pub state: JobState,
    /// The job without variables.
    pub record: JobRecord,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ElementInstanceView {
    pub key: Key,
    pub element_id: String,
    pub element_type: BpmnElementType,
    pub state: ElementState,
    pub flow_scope_key: Key,
    pub has_incident: bool,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcessDefinitionView {
    pub key: Key,
    pub bpmn_process_id: String,
    pub version: i32,
    pub resource_name: String,
    /// The deployed BPMN XML.
    pub resource: Blob,
}

pub(crate) fn answer(state: Reader<'_>, query: &Query) -> Result<QueryResult> {
    Ok(match query {
        Query::ProcessInstance { key } => {
            let view = match state.summary(key.get())? {
                Some(s) => Some(ProcessInstanceView {
                    key: *key,
                    bpmn_process_id: s.bpmn_process_id,
                    version: s.version,
                    process_definition_key: Key(s.process_definition_key),
                    state: s.state,
                    has_incident: state.has_incident(key.get())?,
                    start_date: Timestamp(s.start_date),
                    end_date: (s.end_date >= 0).then_some(Timestamp(s.end_date)),
                }),
                None => match state.element_instance(key.get())? {
                    Some(i) if i.record.bpmn_element_type == BpmnElementType::Process => {
                        Some(ProcessInstanceView {
                            key: *key,
                            bpmn_process_id: i.record.bpmn_process_id,
                            version: i.record.version,
                            process_definition_key: Key(i.record.process_definition_key),
                            state: InstanceState::Active,
                            has_incident: state.has_incident(key.get())?,
                            start_date: Timestamp(i.start_date),
                            end_date: None,
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
                    key: Key(i.key),
                    record: i.record,
                })
                .collect(),
        ),
        Query::Incident { key } => {
            QueryResult::Incident(state.incident(key.get())?.map(|i| IncidentView {
                key: Key(i.key),
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
                    .map(|(scope, name, v)| VariableView {
                        key: Key(v.key),
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
            state: j.state,
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
                    state: instance.state,
                    flow_scope_key: Key(instance.record.flow_scope_key),
                    has_incident: state.incident_of_element(key)?.is_some()
                        || (instance.job_key > 0
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
    })
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
