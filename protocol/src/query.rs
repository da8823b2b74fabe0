//! Read-only questions a gateway asks a partition leader, and the views it answers with.
//!
//! The views carry enums of their own instead of the engine's storage enums: a storage
//! enum may change with the engine's state layout, and the wire must not change with it.
//! The engine maps its enums onto these when it answers.

use serde::{Deserialize, Serialize};

use crate::history::{
    HistoricProcessInstance, HistoryQuery, HistoryResult, ProcessInstancePage,
    ProcessInstanceSearch,
};
use crate::ids::{Key, Timestamp};
use crate::json::Blob;
use crate::value::{BpmnElementType, IncidentRecord, JobRecord};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// (History store) Process instances matching a filter, in a sort order, after a
    /// cursor. Answered by the partition's history store, not by the engine.
    SearchProcessInstances(ProcessInstanceSearch),
    /// (History store) One process instance, active or finished within
    /// `history.retention`.
    HistoricProcessInstance {
        key: Key,
    },
    /// (History store) Jobs, incidents, and the entries to come.
    History(HistoryQuery),
}

impl Query {
    /// True for the queries a partition's history store answers (the engine does not).
    pub fn is_history(&self) -> bool {
        matches!(
            self,
            Query::SearchProcessInstances(_)
                | Query::HistoricProcessInstance { .. }
                | Query::History(_)
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum QueryResult {
    ProcessInstance(Option<ProcessInstanceView>),
    Incidents(Vec<IncidentView>),
    Incident(Option<IncidentView>),
    Variables(Vec<VariableView>),
    Job(Option<JobView>),
    ElementInstances(Vec<ElementInstanceView>),
    ProcessDefinition(Option<ProcessDefinitionView>),
    ProcessDefinitions(Vec<ProcessDefinitionView>),
    ProcessInstancePage(ProcessInstancePage),
    HistoricProcessInstance(Option<HistoricProcessInstance>),
    History(HistoryResult),
}

/// The state of a process instance as readers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcessInstanceState {
    Active,
    Completed,
    Terminated,
}

/// Where a live element instance is in Zeebe's lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ElementInstanceState {
    Activating,
    Activated,
    Completing,
    Terminating,
}

/// The state of a job as readers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    Activatable,
    Activated,
    /// Failed: waiting for its backoff (retries left) or for an incident (no retries).
    Failed,
    /// An error was thrown and nobody caught it: waiting for the incident.
    ErrorThrown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessInstanceView {
    pub key: Key,
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: Key,
    pub state: ProcessInstanceState,
    pub has_incident: bool,
    pub start_date: Timestamp,
    pub end_date: Option<Timestamp>,
    /// The call activity's instance and element instance that created it, if any.
    pub parent_process_instance_key: Option<Key>,
    pub parent_element_instance_key: Option<Key>,
    /// The top instance of its call hierarchy (its own key for an instance no call
    /// activity created).
    pub root_process_instance_key: Key,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IncidentView {
    pub key: Key,
    pub record: IncidentRecord,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariableView {
    pub key: Key,
    pub name: String,
    /// The value as JSON text.
    pub value: String,
    pub scope_key: Key,
    pub process_instance_key: Key,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobView {
    pub key: Key,
    pub state: JobState,
    /// The job without variables.
    pub record: JobRecord,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementInstanceView {
    pub key: Key,
    pub element_id: String,
    pub element_type: BpmnElementType,
    pub state: ElementInstanceState,
    pub flow_scope_key: Key,
    pub has_incident: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessDefinitionView {
    pub key: Key,
    pub bpmn_process_id: String,
    pub version: i32,
    pub resource_name: String,
    /// The deployed BPMN XML.
    pub resource: Blob,
}
