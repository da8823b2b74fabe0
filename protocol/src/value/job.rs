//! The values of jobs: a job, its result from a job worker or listener, and batches.

use serde::{Deserialize, Serialize};

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobRecord {
    #[serde(rename = "type")]
    pub job_type: String,
    pub element_id: String,
    pub element_instance_key: i64,
    pub bpmn_process_id: String,
    pub process_definition_version: i32,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub worker: String,
    pub retries: i32,
    /// Milliseconds to wait before a failed job can be activated again.
    pub retry_backoff: i64,
    /// When a job that failed with a backoff becomes activatable (ms since epoch), or -1.
    pub recurring_time: i64,
    /// When an activated job times out (ms since epoch), or -1.
    pub deadline: i64,
    /// The activation timeout in ms, or -1.
    pub timeout: i64,
    pub error_message: String,
    pub error_code: String,
    pub custom_headers: BTreeMap<String, String>,
    pub variables: JsonValue,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// What the job is for: a BPMN element's work or an execution listener.
    #[serde(default)]
    pub job_kind: JobKind,
    /// For an execution listener's job: whether it runs before (`START`) or after
    /// (`END`) its element; `UNSPECIFIED` for other jobs.
    #[serde(default)]
    pub job_listener_event_type: JobListenerEventType,
    /// What the worker decided (on a completed job): a task listener's denial or
    /// corrections of the user task, or an ad-hoc subprocess's next step.
    #[serde(default)]
    pub result: JobResult,
    /// The top-level instance of its call hierarchy: its own process instance's key
    /// unless a call activity created that instance (as Zeebe writes it since 8.9; -1
    /// in records written before Rill filled it).
    #[serde(default = "no_key")]
    pub root_process_instance_key: i64,
    /// The process instance's tags (Camunda 8.8), empty without any.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Zeebe's `JobResult`: a job worker's verdict given with the completion of its job.
/// A task listener's (`USER_TASK`) denies or corrects a user-task transition; an
/// ad-hoc subprocess's (`AD_HOC_SUB_PROCESS`) names the elements to activate next or
/// ends the ad-hoc subprocess. The fields of the other type keep their defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobResult {
    #[serde(rename = "type")]
    pub result_type: JobResultType,
    /// The listener denies the transition: the task stays as it was.
    pub denied: bool,
    pub denied_reason: String,
    /// Which fields of `corrections` are set (`UserTaskRecord`'s attribute names).
    pub corrected_attributes: Vec<String>,
    pub corrections: JobResultCorrections,
    /// The elements of the ad-hoc subprocess to activate, each with the local
    /// variables of its inner instance.
    pub activate_elements: Vec<AdHocSubProcessActivateElement>,
    /// The ad-hoc subprocess is done: it completes once its inner instances are.
    pub completion_condition_fulfilled: bool,
    /// With `completion_condition_fulfilled`: terminate the inner instances still
    /// active and complete at once.
    pub cancel_remaining_instances: bool,
}

impl JobResult {
    /// Whether the worker gave a verdict at all.
    pub fn is_empty(&self) -> bool {
        self.result_type == JobResultType::UserTask
            && !self.denied
            && self.denied_reason.is_empty()
            && self.corrected_attributes.is_empty()
            && self.activate_elements.is_empty()
            && !self.completion_condition_fulfilled
            && !self.cancel_remaining_instances
    }
}

/// Zeebe's `JobResultType` names. Encoded by variant index: add new ones at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobResultType {
    #[default]
    UserTask,
    AdHocSubProcess,
}

/// New values for user-task fields, each used only when named in `corrected_attributes`
/// (an empty text or list clears the field).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobResultCorrections {
    pub assignee: String,
    pub due_date: String,
    pub follow_up_date: String,
    pub candidate_users_list: Vec<String>,
    pub candidate_groups_list: Vec<String>,
    /// -1 when not corrected (as in Zeebe's record).
    pub priority: i32,
}

impl Default for JobResultCorrections {
    fn default() -> Self {
        JobResultCorrections {
            assignee: String::new(),
            due_date: String::new(),
            follow_up_date: String::new(),
            candidate_users_list: Vec::new(),
            candidate_groups_list: Vec::new(),
            priority: -1,
        }
    }
}

/// Zeebe's `JobKind` names. Encoded by variant index: add new ones at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobKind {
    #[default]
    BpmnElement,
    ExecutionListener,
    TaskListener,
    /// The job of an ad-hoc subprocess's job-worker implementation: its worker decides
    /// what the ad-hoc subprocess activates and when it completes.
    AdHocSubProcess,
}

impl JobKind {
    /// The name Zeebe's records and Camunda's REST API use.
    pub fn name(self) -> &'static str {
        match self {
            JobKind::BpmnElement => "BPMN_ELEMENT",
            JobKind::ExecutionListener => "EXECUTION_LISTENER",
            JobKind::TaskListener => "TASK_LISTENER",
            JobKind::AdHocSubProcess => "AD_HOC_SUB_PROCESS",
        }
    }
}

/// Zeebe's `JobListenerEventType` names: execution listeners' `START` and `END`, and
/// the user-task events task listeners run at. Encoded by variant index: add new ones
/// at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobListenerEventType {
    #[default]
    Unspecified,
    Start,
    End,
    Creating,
    Assigning,
    Updating,
    Completing,
    Canceling,
}

impl JobListenerEventType {
    /// The name Zeebe's records and Camunda's REST API use.
    pub fn name(self) -> &'static str {
        match self {
            JobListenerEventType::Unspecified => "UNSPECIFIED",
            JobListenerEventType::Start => "START",
            JobListenerEventType::End => "END",
            JobListenerEventType::Creating => "CREATING",
            JobListenerEventType::Assigning => "ASSIGNING",
            JobListenerEventType::Updating => "UPDATING",
            JobListenerEventType::Completing => "COMPLETING",
            JobListenerEventType::Canceling => "CANCELING",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobBatchRecord {
    #[serde(rename = "type")]
    pub job_type: String,
    pub worker: String,
    pub timeout: i64,
    pub max_jobs_to_activate: i32,
    pub job_keys: Vec<i64>,
    pub jobs: Vec<JobRecord>,
    pub truncated: bool,
    #[serde(default)]
    pub tenant_ids: Vec<String>,
}
