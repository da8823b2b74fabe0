//! The history entries after process instances (jobs, incidents, variables, element
//! instances, process definitions, message subscriptions), their search fields,
//! and the history queries that carry them across the command API.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Condition, FieldValue, Historic, Page, ProcessInstanceField, Search, SearchField};
use crate::ids::{Key, Timestamp};
use crate::value::{BpmnElementType, IncidentErrorType, JobKind, JobListenerEventType};

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

mod definitions;
pub use definitions::*;

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

/// Camunda's job kinds and listener event types (Rill's jobs are BPMN elements' and
/// execution listeners').
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
    /// The top instance of its call hierarchy.
    pub root_process_instance_key: Key,
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
    pub kind: JobKind,
    pub listener_event_type: JobListenerEventType,
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
            F::Kind => text(self.kind.name()),
            F::ListenerEventType => text(self.listener_event_type.name()),
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
        IncidentErrorType::CalledElementError => "CALLED_ELEMENT_ERROR",
        IncidentErrorType::ExecutionListenerNoRetries => "EXECUTION_LISTENER_NO_RETRIES",
        IncidentErrorType::FormNotFound => "FORM_NOT_FOUND",
        IncidentErrorType::DecisionEvaluationError => "DECISION_EVALUATION_ERROR",
        IncidentErrorType::CalledDecisionError => "CALLED_DECISION_ERROR",
        IncidentErrorType::TaskListenerNoRetries => "TASK_LISTENER_NO_RETRIES",
        IncidentErrorType::AdHocSubProcessNoRetries => "AD_HOC_SUB_PROCESS_NO_RETRIES",
        IncidentErrorType::ResourceNotFound => "RESOURCE_NOT_FOUND",
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
    /// The top instance of its call hierarchy.
    pub root_process_instance_key: Key,
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

/// Values longer than this (in bytes) are truncated in variable search results (unless
/// the client asks for full values) and count as truncated for `isTruncated`.
pub const VARIABLE_TRUNCATE_LIMIT: usize = 8_191;

fields! {
    /// The fields of a variable that searches filter and sort by.
    VariableField {
        Name = "name",
        Value = "value",
        TenantId = "tenantId",
        IsTruncated = "isTruncated",
        VariableKey = "variableKey",
        ScopeKey = "scopeKey",
        ProcessInstanceKey = "processInstanceKey",
    }
}

/// A variable as the history store keeps it: its latest value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricVariable {
    pub key: Key,
    pub name: String,
    /// JSON text.
    pub value: String,
    pub scope_key: Key,
    pub process_instance_key: Key,
    /// The top instance of its call hierarchy.
    pub root_process_instance_key: Key,
    pub process_definition_key: Key,
    pub bpmn_process_id: String,
    pub tenant_id: String,
}

impl Historic for HistoricVariable {
    type Field = VariableField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: VariableField) -> Option<FieldValue> {
        use VariableField as F;
        match field {
            F::Name => text(&self.name),
            F::Value => text(&self.value),
            F::TenantId => text(&self.tenant_id),
            F::IsTruncated => Some(FieldValue::Bool(self.value.len() > VARIABLE_TRUNCATE_LIMIT)),
            F::VariableKey => int(self.key.get()),
            F::ScopeKey => int(self.scope_key.get()),
            F::ProcessInstanceKey => int(self.process_instance_key.get()),
        }
    }
}

/// An element instance's state in Camunda's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementState {
    Active,
    Completed,
    Terminated,
}

impl ElementState {
    pub const NAMES: &'static [&'static str] = &["ACTIVE", "COMPLETED", "TERMINATED"];

    pub fn name(self) -> &'static str {
        match self {
            ElementState::Active => "ACTIVE",
            ElementState::Completed => "COMPLETED",
            ElementState::Terminated => "TERMINATED",
        }
    }
}

/// Camunda's element instance types.
pub const ELEMENT_TYPES: &[&str] = &[
    "UNSPECIFIED",
    "PROCESS",
    "SUB_PROCESS",
    "EVENT_SUB_PROCESS",
    "AD_HOC_SUB_PROCESS",
    "AD_HOC_SUB_PROCESS_INNER_INSTANCE",
    "START_EVENT",
    "INTERMEDIATE_CATCH_EVENT",
    "INTERMEDIATE_THROW_EVENT",
    "BOUNDARY_EVENT",
    "END_EVENT",
    "SERVICE_TASK",
    "RECEIVE_TASK",
    "USER_TASK",
    "MANUAL_TASK",
    "TASK",
    "EXCLUSIVE_GATEWAY",
    "INCLUSIVE_GATEWAY",
    "PARALLEL_GATEWAY",
    "EVENT_BASED_GATEWAY",
    "SEQUENCE_FLOW",
    "MULTI_INSTANCE_BODY",
    "CALL_ACTIVITY",
    "BUSINESS_RULE_TASK",
    "SCRIPT_TASK",
    "SEND_TASK",
    "UNKNOWN",
];

/// Camunda's name of an element type (Zeebe's, which Rill's records use; `UNKNOWN` for
/// one Camunda's enum does not have).
pub fn element_type_name(element_type: BpmnElementType) -> &'static str {
    let name = serde_json::to_value(element_type).ok();
    let name = name.as_ref().and_then(|v| v.as_str()).unwrap_or("UNKNOWN");
    ELEMENT_TYPES
        .iter()
        .find(|known| **known == name)
        .copied()
        .unwrap_or("UNKNOWN")
}

fields! {
    /// The fields of an element instance that searches filter and sort by.
    ElementInstanceField {
        ElementInstanceKey = "elementInstanceKey",
        ProcessInstanceKey = "processInstanceKey",
        ProcessDefinitionKey = "processDefinitionKey",
        ProcessDefinitionId = "processDefinitionId",
        StartDate = "startDate",
        EndDate = "endDate",
        ElementId = "elementId",
        ElementName = "elementName",
        Type = "type",
        State = "state",
        IncidentKey = "incidentKey",
        TenantId = "tenantId",
        HasIncident = "hasIncident",
        ElementInstanceScopeKey = "elementInstanceScopeKey",
    }
}

/// An element instance (every element but the process itself, which is the process
/// instance) as the history store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricElementInstance {
    pub key: Key,
    pub element_id: String,
    pub element_type: BpmnElementType,
    pub bpmn_process_id: String,
    pub process_definition_key: Key,
    pub process_instance_key: Key,
    /// The top instance of its call hierarchy.
    pub root_process_instance_key: Key,
    /// The element instance (or process instance) it runs in.
    pub flow_scope_key: Key,
    pub state: ElementState,
    pub start_date: Timestamp,
    pub end_date: Option<Timestamp>,
    /// Its open incident, if it has one.
    pub incident_key: Option<Key>,
    pub tenant_id: String,
    /// The element's name as drawn in the model, if it has one.
    pub element_name: Option<String>,
}

impl HistoricElementInstance {
    /// The name Camunda shows for the element: the drawn one, else the element id.
    pub fn display_name(&self) -> &str {
        self.element_name.as_deref().unwrap_or(&self.element_id)
    }
}

impl Historic for HistoricElementInstance {
    type Field = ElementInstanceField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: ElementInstanceField) -> Option<FieldValue> {
        use ElementInstanceField as F;
        match field {
            F::ElementInstanceKey => int(self.key.get()),
            F::ProcessInstanceKey => int(self.process_instance_key.get()),
            F::ProcessDefinitionKey => int(self.process_definition_key.get()),
            F::ProcessDefinitionId => text(&self.bpmn_process_id),
            F::StartDate => int(self.start_date.millis()),
            F::EndDate => self.end_date.and_then(|d| int(d.millis())),
            F::ElementId => text(&self.element_id),
            F::ElementName => text(self.display_name()),
            F::Type => text(element_type_name(self.element_type)),
            F::State => text(self.state.name()),
            F::IncidentKey => self.incident_key.and_then(|k| int(k.get())),
            F::TenantId => text(&self.tenant_id),
            F::HasIncident => Some(FieldValue::Bool(self.incident_key.is_some())),
            F::ElementInstanceScopeKey => int(self.flow_scope_key.get()),
        }
    }
}

/// How many instances of one element are in each state, for a definition's statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementStatistics {
    pub element_id: String,
    pub active: u64,
    pub canceled: u64,
    /// Element instances with an open incident.
    pub incidents: u64,
    pub completed: u64,
}

impl ElementStatistics {
    /// Adds another partition's counts of the same element.
    pub fn add(&mut self, other: &ElementStatistics) {
        self.active += other.active;
        self.canceled += other.canceled;
        self.incidents += other.incidents;
        self.completed += other.completed;
    }
}

/// A message subscription's state in Camunda's terms (Rill has no migration).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MessageSubscriptionState {
    Created,
    Correlated,
    Deleted,
}

impl MessageSubscriptionState {
    pub const NAMES: &'static [&'static str] = &["CORRELATED", "CREATED", "DELETED", "MIGRATED"];

    pub fn name(self) -> &'static str {
        match self {
            MessageSubscriptionState::Created => "CREATED",
            MessageSubscriptionState::Correlated => "CORRELATED",
            MessageSubscriptionState::Deleted => "DELETED",
        }
    }
}

fields! {
    /// The fields of a message subscription that searches filter and sort by.
    MessageSubscriptionField {
        MessageSubscriptionKey = "messageSubscriptionKey",
        ProcessDefinitionId = "processDefinitionId",
        ProcessInstanceKey = "processInstanceKey",
        ElementId = "elementId",
        ElementInstanceKey = "elementInstanceKey",
        MessageSubscriptionState = "messageSubscriptionState",
        LastUpdatedDate = "lastUpdatedDate",
        MessageName = "messageName",
        CorrelationKey = "correlationKey",
        TenantId = "tenantId",
    }
}

/// A message subscription of a waiting element (the instance's side of it), as the
/// history store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricMessageSubscription {
    pub key: Key,
    pub bpmn_process_id: String,
    /// From the element instance's entry (the subscription's records do not carry it).
    pub process_definition_key: Option<Key>,
    pub process_instance_key: Key,
    pub element_id: String,
    pub element_instance_key: Key,
    pub state: MessageSubscriptionState,
    pub last_updated: Timestamp,
    pub message_name: String,
    pub correlation_key: String,
    pub tenant_id: String,
}

impl Historic for HistoricMessageSubscription {
    type Field = MessageSubscriptionField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: MessageSubscriptionField) -> Option<FieldValue> {
        use MessageSubscriptionField as F;
        match field {
            F::MessageSubscriptionKey => int(self.key.get()),
            F::ProcessDefinitionId => text(&self.bpmn_process_id),
            F::ProcessInstanceKey => int(self.process_instance_key.get()),
            F::ElementId => text(&self.element_id),
            F::ElementInstanceKey => int(self.element_instance_key.get()),
            F::MessageSubscriptionState => text(self.state.name()),
            F::LastUpdatedDate => int(self.last_updated.millis()),
            F::MessageName => text(&self.message_name),
            F::CorrelationKey => text(&self.correlation_key),
            F::TenantId => text(&self.tenant_id),
        }
    }
}

/// A user task's state in Camunda's terms: created, completed or canceled, and
/// canceling while `canceling` task listeners hold its cancellation up. (The other
/// transitions' listeners are not shown: such a task reads as created.) New variants
/// go last: stored tasks are decoded by variant index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UserTaskState {
    Created,
    Completed,
    Canceled,
    Canceling,
}

impl UserTaskState {
    pub const NAMES: &'static [&'static str] = &[
        "CREATING",
        "CREATED",
        "ASSIGNING",
        "UPDATING",
        "COMPLETING",
        "COMPLETED",
        "CANCELING",
        "CANCELED",
        "FAILED",
    ];

    pub fn name(self) -> &'static str {
        match self {
            UserTaskState::Created => "CREATED",
            UserTaskState::Completed => "COMPLETED",
            UserTaskState::Canceled => "CANCELED",
            UserTaskState::Canceling => "CANCELING",
        }
    }
}

fields! {
    /// The fields of a user task that searches filter and sort by.
    UserTaskField {
        UserTaskKey = "userTaskKey",
        State = "state",
        Assignee = "assignee",
        Priority = "priority",
        ElementId = "elementId",
        Name = "name",
        CandidateGroup = "candidateGroup",
        CandidateUser = "candidateUser",
        ProcessDefinitionId = "processDefinitionId",
        ProcessDefinitionKey = "processDefinitionKey",
        ProcessInstanceKey = "processInstanceKey",
        ElementInstanceKey = "elementInstanceKey",
        TenantId = "tenantId",
        CreationDate = "creationDate",
        CompletionDate = "completionDate",
        DueDate = "dueDate",
        FollowUpDate = "followUpDate",
        Tags = "tags",
    }
}

/// A Camunda user task as the history store keeps it. Dates are kept as the model or
/// client wrote them (`due_date`), with their instant for filters and sorts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricUserTask {
    pub key: Key,
    pub state: UserTaskState,
    pub assignee: String,
    pub candidate_groups: Vec<String>,
    pub candidate_users: Vec<String>,
    pub due_date: String,
    pub follow_up_date: String,
    pub form_key: Option<Key>,
    pub external_form_reference: String,
    pub custom_headers: BTreeMap<String, String>,
    pub priority: i32,
    pub bpmn_process_id: String,
    pub process_definition_version: i32,
    pub process_definition_key: Key,
    pub process_instance_key: Key,
    pub element_id: String,
    /// The element's name from the model (its id when it has none).
    pub name: String,
    /// The process's name from the model, if it has one.
    pub process_name: Option<String>,
    pub element_instance_key: Key,
    pub tenant_id: String,
    pub creation_date: Timestamp,
    pub completion_date: Option<Timestamp>,
    /// The tags of the task's process instance.
    pub tags: Vec<String>,
}

impl Historic for HistoricUserTask {
    type Field = UserTaskField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: UserTaskField) -> Option<FieldValue> {
        use UserTaskField as F;
        let optional = |s: &str| (!s.is_empty()).then(|| FieldValue::Text(s.to_owned()));
        let date = |s: &str| super::date_millis(s).map(FieldValue::Int);
        match field {
            F::UserTaskKey => int(self.key.get()),
            F::State => text(self.state.name()),
            F::Assignee => optional(&self.assignee),
            F::Priority => int(i64::from(self.priority)),
            F::ElementId => text(&self.element_id),
            F::Name => text(&self.name),
            // Lists: one value here (the first); `matches` looks at every one.
            F::CandidateGroup => self.candidate_groups.first().and_then(|g| text(g)),
            F::CandidateUser => self.candidate_users.first().and_then(|u| text(u)),
            F::ProcessDefinitionId => text(&self.bpmn_process_id),
            F::ProcessDefinitionKey => int(self.process_definition_key.get()),
            F::ProcessInstanceKey => int(self.process_instance_key.get()),
            F::ElementInstanceKey => int(self.element_instance_key.get()),
            F::TenantId => text(&self.tenant_id),
            F::CreationDate => int(self.creation_date.millis()),
            F::CompletionDate => self.completion_date.and_then(|d| int(d.millis())),
            F::DueDate => date(&self.due_date),
            F::FollowUpDate => date(&self.follow_up_date),
            F::Tags => self.tags.first().and_then(|t| text(t)),
        }
    }

    /// Candidates and tags are lists: see [`super::list_matches`].
    fn matches(&self, filter: &[(UserTaskField, Condition)]) -> bool {
        filter.iter().all(|(field, condition)| {
            let list = match field {
                UserTaskField::CandidateGroup => &self.candidate_groups,
                UserTaskField::CandidateUser => &self.candidate_users,
                UserTaskField::Tags => &self.tags,
                _ => return condition.matches(self.field(*field).as_ref()),
            };
            super::list_matches(list, condition)
        })
    }
}

/// History queries after the first (process instances), in one variant of
/// [`crate::Query`] so that new kinds of entries do not touch the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HistoryQuery {
    SearchJobs(Search<JobField>),
    SearchIncidents(Search<IncidentField>),
    Incident {
        key: Key,
    },
    SearchVariables(Search<VariableField>),
    Variable {
        key: Key,
    },
    SearchElementInstances(Search<ElementInstanceField>),
    ElementInstance {
        key: Key,
    },
    SearchProcessDefinitions(Search<ProcessDefinitionField>),
    ProcessDefinition {
        key: Key,
    },
    ProcessDefinitionXml {
        key: Key,
    },
    /// Per element of the definition, its instances by state, over the process
    /// instances of the definition that match `filter`.
    ElementStatistics {
        process_definition_key: Key,
        filter: Vec<(ProcessInstanceField, Condition)>,
    },
    SearchMessageSubscriptions(Search<MessageSubscriptionField>),
    SearchUserTasks(Search<UserTaskField>),
    UserTask {
        key: Key,
    },
    Form {
        key: Key,
    },
    SearchDecisionDefinitions(Search<DecisionDefinitionField>),
    DecisionDefinition {
        key: Key,
    },
    SearchDecisionRequirements(Search<DecisionRequirementsField>),
    DecisionRequirements {
        key: Key,
    },
    /// The DMN resource of a decision requirements graph (`key`), or of the graph a
    /// decision (`key`) belongs to.
    DecisionXml {
        key: Key,
    },
    SearchDecisionInstances(Search<DecisionInstanceField>),
    DecisionInstance {
        key: Key,
    },
    // Appended, so that the variants above keep their encoding on the command API.
    SearchForms(Search<FormField>),
    /// A deployed resource (an RPA script) by its key, with its content.
    Resource {
        key: Key,
    },
    // Appended, so that the variants above keep their encoding on the command API.
    SearchUsers(Search<UserField>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HistoryResult {
    Jobs(Page<HistoricJob>),
    Incidents(Page<HistoricIncident>),
    Incident(Option<HistoricIncident>),
    Variables(Page<HistoricVariable>),
    Variable(Option<HistoricVariable>),
    ElementInstances(Page<HistoricElementInstance>),
    ElementInstance(Option<HistoricElementInstance>),
    ProcessDefinitions(Page<HistoricProcessDefinition>),
    ProcessDefinition(Option<HistoricProcessDefinition>),
    /// The deployed resource the definition came from.
    ProcessDefinitionXml(Option<String>),
    /// Sorted by element id.
    ElementStatistics(Vec<ElementStatistics>),
    MessageSubscriptions(Page<HistoricMessageSubscription>),
    UserTasks(Page<HistoricUserTask>),
    UserTask(Option<HistoricUserTask>),
    Form(Option<HistoricForm>),
    DecisionDefinitions(Page<HistoricDecisionDefinition>),
    DecisionDefinition(Option<HistoricDecisionDefinition>),
    DecisionRequirementsPage(Page<HistoricDecisionRequirements>),
    DecisionRequirements(Option<HistoricDecisionRequirements>),
    /// The DMN resource as deployed.
    DecisionXml(Option<String>),
    DecisionInstances(Page<HistoricDecisionInstance>),
    DecisionInstance(Option<HistoricDecisionInstance>),
    Forms(Page<HistoricForm>),
    Resource(Option<HistoricResource>),
    Users(Page<HistoricUser>),
}
