//! `POST /v2/jobs/search`: Camunda's job search, answered from every partition's history
//! store (the machinery is `history_search`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use rill_protocol::history::{
    HistoricJob, JOB_KINDS, JOB_LISTENER_EVENT_TYPES, JobField as F, JobState,
};
use serde::Serialize;

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::{Body, SharedState, date_text, key_text};
use crate::ops::ClientError;

/// Camunda's `JobSearchResult`. The fields 8.8 marks nullable (`deadline`,
/// `deniedReason`, `errorCode`, `errorMessage`, `isDenied`) are `null` without a value;
/// `endTime`, which it does not, is left out.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct JobResult {
    custom_headers: BTreeMap<String, String>,
    deadline: Option<String>,
    denied_reason: Option<String>,
    element_id: String,
    element_instance_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_time: Option<String>,
    error_code: Option<String>,
    error_message: Option<String>,
    has_failed_with_retries_left: bool,
    is_denied: Option<bool>,
    job_key: String,
    kind: &'static str,
    listener_event_type: &'static str,
    process_definition_id: String,
    process_definition_key: String,
    process_instance_key: String,
    /// The top instance of its call hierarchy.
    root_process_instance_key: String,
    retries: i32,
    state: &'static str,
    tenant_id: String,
    #[serde(rename = "type")]
    job_type: String,
    worker: String,
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

impl From<HistoricJob> for JobResult {
    fn from(job: HistoricJob) -> Self {
        JobResult {
            custom_headers: job.custom_headers,
            deadline: job.deadline.map(date_text),
            denied_reason: None,
            element_id: job.element_id,
            element_instance_key: key_text(job.element_instance_key),
            end_time: job.end_time.map(date_text),
            error_code: non_empty(job.error_code),
            error_message: non_empty(job.error_message),
            has_failed_with_retries_left: job.failed_with_retries_left,
            is_denied: None,
            job_key: key_text(job.key),
            kind: job.kind.name(),
            listener_event_type: job.listener_event_type.name(),
            process_definition_id: job.bpmn_process_id,
            process_definition_key: key_text(job.process_definition_key),
            process_instance_key: key_text(job.process_instance_key),
            root_process_instance_key: key_text(job.root_process_instance_key),
            retries: job.retries,
            state: job.state.name(),
            tenant_id: job.tenant_id,
            job_type: job.job_type,
            worker: job.worker,
        }
    }
}

impl SearchEntity for HistoricJob {
    const KEY_FIELD: F = F::JobKey;
    type Item = JobResult;

    fn kind(field: F) -> Kind {
        match field {
            F::Deadline | F::EndTime => Kind::Date,
            F::DeniedReason
            | F::ElementId
            | F::ErrorCode
            | F::ErrorMessage
            | F::ProcessDefinitionId
            | F::TenantId
            | F::Type
            | F::Worker => Kind::Text,
            F::ElementInstanceKey | F::JobKey | F::ProcessDefinitionKey | F::ProcessInstanceKey => {
                Kind::Key
            }
            F::HasFailedWithRetriesLeft | F::IsDenied => Kind::Bool,
            F::Kind => Kind::Enum(JOB_KINDS),
            F::ListenerEventType => Kind::Enum(JOB_LISTENER_EVENT_TYPES),
            F::Retries => Kind::Int,
            F::State => Kind::Enum(JobState::NAMES),
        }
    }
}

pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<JobResult>>, ClientError> {
    run::<HistoricJob>(&state, &body, None).await.map(Json)
}
