//! The history entries after process instances: jobs and incidents, their search fields,
//! and the history queries that carry them across the command API.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{FieldValue, Historic, Page, Search, SearchField};
use crate::ids::{Key, Timestamp};
use crate::value::IncidentErrorType;

fn text(value: &str) -> Option<FieldValue> {
    Some(FieldValue::Text(value.to_owned()))
}

fn int(value: i64) -> Option<FieldValue> {
    Some(FieldValue::Int(value))
}

/// Defines a field enum with Camunda's names.
macro_rules! fields {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($variant),*
        }

        impl SearchField for $name {
            fn all() -> &'static [Self] {
                &[$($name::$variant),*]
            }

            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }
        }
    };
}

/// Where a job is, in Camunda's `JobStateEnum` (which has no "activated": an activation
/// sets the worker and deadline and leaves the state as it was).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobState {
    Created,
    Completed,
    Failed,
    ErrorThrown,
    RetriesUpdated,
    TimedOut,
    Canceled,
    Migrated,
}

impl JobState {
    pub const NAMES: &'static [&'static str] = &[
        "CANCELED",
        "COMPLETED",
        "CREATED",
        "ERROR_THROWN",
        "FAILED",
        "MIGRATED",
        "RETRIES_UPDATED",
        "TIMED_OUT",
    ];

    pub fn name(self) -> &'static str {
        match self {
            JobState::Created => "CREATED",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::ErrorThrown => "ERROR_THROWN",
            JobState::RetriesUpdated => "RETRIES_UPDATED",
            JobState::TimedOut => "TIMED_OUT",
            JobState::Canceled => "CANCELED",
            JobState::Migrated => "MIGRATED",
        }
    }
}

/// Camunda's job kinds and listener event types (Rill's jobs are all of BPMN elements).
pub const JOB_KINDS: &[&str] = &[
    "BPMN_ELEMENT",
    "EXECUTION_LISTENER",
    "TASK_LISTENER",
    "AD_HOC_SUB_PROCESS",
];
pub const JOB_LISTENER_EVENT_TYPES: &[&str] = &[
    "ASSIGNING",
    "CANCELING",
    "COMPLETING",
    "CREATING",
    "END",
    "START",
    "UNSPECIFIED",
    "UPDATING",
];

fields! {
    /// The fields of a job that searches filter and sort by.
    JobField {
        Deadline = "deadline",
        DeniedReason = "deniedReason",
        ElementId = "elementId",
        ElementInstanceKey = "elementInstanceKey",
        EndTime = "endTime",
        ErrorCode = "errorCode",
        ErrorMessage = "errorMessage",
        HasFailedWithRetriesLeft = "hasFailedWithRetriesLeft",
        IsDenied = "isDenied",
        JobKey = "jobKey",
        Kind = "kind",
        ListenerEventType = "listenerEventType",
        ProcessDefinitionId = "processDefinitionId",
        ProcessDefinitionKey = "processDefinitionKey",
        ProcessInstanceKey = "processInstanceKey",
        Retries = "retries",
        State = "state",
        TenantId = "tenantId",
        Type = "type",
        Worker = "worker",
    }
}

/// A job as the history store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricJob {
    pub key: Key,
    pub job_type: String,
    pub worker: String,
    pub state: JobState,
    pub retries: i32,
    pub bpmn_process_id: String,
    pub process_definition_version: i32,
    pub process_definition_key: Key,
    pub process_instance_key: Key,
    pub element_id: String,
    pub element_instance_key: Key,
    pub tenant_id: String,
    /// When an activated job times out.
    pub deadline: Option<Timestamp>,
    pub error_code: String,
    pub error_message: String,
    /// Failed at least once while it still had retries.
    pub failed_with_retries_left: bool,
    pub custom_headers: BTreeMap<String, String>,
    pub creation_time: Timestamp,
    /// Completed, canceled or ended with a thrown error.
    pub end_time: Option<Timestamp>,
}

impl Historic for HistoricJob {
    type Field = JobField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: JobField) -> Option<FieldValue> {
        use JobField as F;
        let optional = |s: &str| (!s.is_empty()).then(|| FieldValue::Text(s.to_owned()));
        match field {
            F::Deadline => self.deadline.and_then(|d| int(d.millis())),
            // User task listeners are not in Rill: never denied.
            F::DeniedReason | F::IsDenied => None,
            F::ElementId => text(&self.element_id),
            F::ElementInstanceKey => int(self.element_instance_key.get()),
            F::EndTime => self.end_time.and_then(|d| int(d.millis())),
            F::ErrorCode => optional(&self.error_code),
            F::ErrorMessage => optional(&self.error_message),
            F::HasFailedWithRetriesLeft => Some(FieldValue::Bool(self.failed_with_retries_left)),
            F::JobKey => int(self.key.get()),
            F::Kind => text("BPMN_ELEMENT"),
            F::ListenerEventType => text("UNSPECIFIED"),
            F::ProcessDefinitionId => text(&self.bpmn_process_id),
            F::ProcessDefinitionKey => int(self.process_definition_key.get()),
            F::ProcessInstanceKey => int(self.process_instance_key.get()),
            F::Retries => int(i64::from(self.retries)),
            F::State => text(self.state.name()),
            F::TenantId => text(&self.tenant_id),
            F::Type => text(&self.job_type),
            F::Worker => optional(&self.worker),
        }
    }
}

/// An incident's state in Camunda's terms (Rill has no migration, nor pending incidents).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IncidentState {
    Active,
    Resolved,
}

impl IncidentState {
    pub const NAMES: &'static [&'static str] = &["ACTIVE", "MIGRATED", "RESOLVED", "PENDING"];

    pub fn name(self) -> &'static str {
        match self {
            IncidentState::Active => "ACTIVE",
            IncidentState::Resolved => "RESOLVED",
        }
    }
}

/// Camunda's incident error types.
pub const INCIDENT_ERROR_TYPES: &[&str] = &[
    "UNSPECIFIED",
    "UNKNOWN",
    "IO_MAPPING_ERROR",
    "JOB_NO_RETRIES",
    "EXECUTION_LISTENER_NO_RETRIES",
    "TASK_LISTENER_NO_RETRIES",
    "AD_HOC_SUB_PROCESS_NO_RETRIES",
    "CONDITION_ERROR",
    "EXTRACT_VALUE_ERROR",
    "CALLED_ELEMENT_ERROR",
    "UNHANDLED_ERROR_EVENT",
    "MESSAGE_SIZE_EXCEEDED",
    "CALLED_DECISION_ERROR",
    "DECISION_EVALUATION_ERROR",
    "FORM_NOT_FOUND",
    "RESOURCE_NOT_FOUND",
];

/// Camunda's name of an incident error type.
pub fn incident_error_type_name(error_type: IncidentErrorType) -> &'static str {
    match error_type {
        IncidentErrorType::Unknown => "UNKNOWN",
        IncidentErrorType::IoMappingError => "IO_MAPPING_ERROR",
        IncidentErrorType::JobNoRetries => "JOB_NO_RETRIES",
        IncidentErrorType::ConditionError => "CONDITION_ERROR",
        IncidentErrorType::ExtractValueError => "EXTRACT_VALUE_ERROR",
        IncidentErrorType::UnhandledErrorEvent => "UNHANDLED_ERROR_EVENT",
        IncidentErrorType::MessageSizeExceeded => "MESSAGE_SIZE_EXCEEDED",
    }
}

fields! {
    /// The fields of an incident that searches filter and sort by.
    IncidentField {
        ProcessDefinitionId = "processDefinitionId",
        ErrorType = "errorType",
        ErrorMessage = "errorMessage",
        ElementId = "elementId",
        CreationTime = "creationTime",
        State = "state",
        TenantId = "tenantId",
        IncidentKey = "incidentKey",
        ProcessDefinitionKey = "processDefinitionKey",
        ProcessInstanceKey = "processInstanceKey",
        ElementInstanceKey = "elementInstanceKey",
        JobKey = "jobKey",
    }
}

/// An incident as the history store keeps it, open or resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricIncident {
    pub key: Key,
    pub error_type: IncidentErrorType,
    pub error_message: String,
    pub bpmn_process_id: String,
    pub process_definition_key: Key,
    pub process_instance_key: Key,
    pub element_id: String,
    pub element_instance_key: Key,
    pub job_key: Option<Key>,
    pub tenant_id: String,
    pub state: IncidentState,
    pub creation_time: Timestamp,
    pub resolution_time: Option<Timestamp>,
}

impl Historic for HistoricIncident {
    type Field = IncidentField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: IncidentField) -> Option<FieldValue> {
        use IncidentField as F;
        match field {
            F::ProcessDefinitionId => text(&self.bpmn_process_id),
            F::ErrorType => text(incident_error_type_name(self.error_type)),
            F::ErrorMessage => text(&self.error_message),
            F::ElementId => text(&self.element_id),
            F::CreationTime => int(self.creation_time.millis()),
            F::State => text(self.state.name()),
            F::TenantId => text(&self.tenant_id),
            F::IncidentKey => int(self.key.get()),
            F::ProcessDefinitionKey => int(self.process_definition_key.get()),
            F::ProcessInstanceKey => int(self.process_instance_key.get()),
            F::ElementInstanceKey => int(self.element_instance_key.get()),
            F::JobKey => self.job_key.and_then(|k| int(k.get())),
        }
    }
}

/// History queries after the first (process instances), in one variant of
/// [`crate::Query`] so that new kinds of entries do not touch the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HistoryQuery {
    SearchJobs(Search<JobField>),
    SearchIncidents(Search<IncidentField>),
    Incident { key: Key },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HistoryResult {
    Jobs(Page<HistoricJob>),
    Incidents(Page<HistoricIncident>),
    Incident(Option<HistoricIncident>),
}
