//! Jobs: activation (the long poll is `ops::activate_jobs`); complete, fail, throw
//! error, update.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::value::{AdHocSubProcessActivateElement, JobRecord, JobResult};
use rill_protocol::{ActivateJobs, FailJob, JsonValue, ThrowError, UpdateJob};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::json::{Variables, long, optional_long, parse_body, parse_optional_body};
use super::{Body, KeyParam, SharedState, check_tenant, operation_reference, unsupported};
use crate::ops::{self, ClientError, Corrections, ResultInput, client_timeout, job_result};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActivationRequest {
    #[serde(rename = "type")]
    job_type: String,
    #[serde(deserialize_with = "long")]
    timeout: i64,
    max_jobs_to_activate: i32,
    worker: Option<String>,
    fetch_variable: Option<Vec<String>>,
    #[serde(default, deserialize_with = "optional_long")]
    request_timeout: Option<i64>,
    tenant_ids: Option<Vec<String>>,
    /// `PROVIDED` or `ASSIGNED`; with a single tenant both mean the same.
    #[allow(dead_code)]
    tenant_filter: Option<TenantFilter>,
    with_lease: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum TenantFilter {
    Provided,
    Assigned,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivationResult {
    jobs: Vec<ActivatedJob>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ActivatedJob {
    #[serde(rename = "type")]
    job_type: String,
    process_definition_id: String,
    process_definition_version: i32,
    element_id: String,
    custom_headers: serde_json::Value,
    worker: String,
    retries: i32,
    deadline: i64,
    variables: JsonValue,
    tenant_id: String,
    job_key: String,
    process_instance_key: String,
    process_definition_key: String,
    element_instance_key: String,
    kind: &'static str,
    listener_event_type: &'static str,
    tags: Vec<String>,
    // Camunda 8.8's `ActivatedJobResult` ends here: `userTask` (not nullable) is sent for
    // user task listener jobs only, and 8.10's fields (`rootProcessInstanceKey`,
    // `businessId`, `priority`...) are not sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    user_task: Option<UserTaskProperties>,
}

/// 8.8's `UserTaskProperties`: the task a listener's job is about, from the job's
/// `io.camunda.zeebe:*` headers.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UserTaskProperties {
    action: Option<String>,
    assignee: Option<String>,
    candidate_groups: Vec<String>,
    candidate_users: Vec<String>,
    changed_attributes: Vec<String>,
    due_date: Option<String>,
    follow_up_date: Option<String>,
    form_key: Option<String>,
    priority: Option<i32>,
    user_task_key: Option<String>,
}

impl UserTaskProperties {
    fn from_headers(headers: &std::collections::BTreeMap<String, String>) -> Self {
        let text = |name: &str| headers.get(&format!("io.camunda.zeebe:{name}")).cloned();
        let list = |name: &str| {
            text(name)
                .and_then(|json| serde_json::from_str::<Vec<String>>(&json).ok())
                .unwrap_or_default()
        };
        UserTaskProperties {
            action: text("action"),
            assignee: text("assignee"),
            candidate_groups: list("candidateGroups"),
            candidate_users: list("candidateUsers"),
            changed_attributes: list("changedAttributes"),
            due_date: text("dueDate"),
            follow_up_date: text("followUpDate"),
            form_key: text("formKey"),
            priority: text("priority").and_then(|p| p.parse().ok()),
            user_task_key: text("userTaskKey"),
        }
    }
}

impl ActivatedJob {
    fn new(key: i64, job: JobRecord) -> Self {
        let user_task = (job.job_kind == rill_protocol::value::JobKind::TaskListener)
            .then(|| UserTaskProperties::from_headers(&job.custom_headers));
        let custom_headers = job
            .custom_headers
            .into_iter()
            .map(|(name, value)| (name, serde_json::Value::String(value)))
            .collect();
        ActivatedJob {
            job_type: job.job_type,
            process_definition_id: job.bpmn_process_id,
            process_definition_version: job.process_definition_version,
            element_id: job.element_id,
            custom_headers: serde_json::Value::Object(custom_headers),
            worker: job.worker,
            retries: job.retries,
            deadline: job.deadline,
            variables: if job.variables.is_null() {
                JsonValue::empty_object()
            } else {
                job.variables
            },
            tenant_id: job.tenant_id,
            job_key: key.to_string(),
            process_instance_key: job.process_instance_key.to_string(),
            process_definition_key: job.process_definition_key.to_string(),
            element_instance_key: job.element_instance_key.to_string(),
            kind: job.job_kind.name(),
            listener_event_type: job.job_listener_event_type.name(),
            tags: job.tags,
            user_task,
        }
    }
}

pub async fn activate(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<ActivationResult>, ClientError> {
    let request: ActivationRequest = parse_body(&body)?;
    if request.job_type.trim().is_empty() {
        return Err(ClientError::invalid_field("type", "No type provided"));
    }
    if request.timeout <= 0 {
        return Err(ClientError::invalid_field(
            "timeout",
            format!(
                "The value for timeout is '{}' but must be greater than 0",
                request.timeout
            ),
        ));
    }
    if request.max_jobs_to_activate <= 0 {
        return Err(ClientError::invalid_field(
            "maxJobsToActivate",
            format!(
                "The value for maxJobsToActivate is '{}' but must be greater than 0",
                request.max_jobs_to_activate
            ),
        ));
    }
    for tenant in request.tenant_ids.iter().flatten() {
        check_tenant("tenantIds", Some(tenant))?;
    }
    unsupported(
        request.with_lease == Some(true),
        "Job activation with a lease (withLease)",
    )?;

    let long_poll_until = match request.request_timeout {
        Some(ms) if ms < 0 => None,
        requested => Some(
            Instant::now()
                + client_timeout(requested, &state.settings)
                    .unwrap_or(state.settings.long_polling_timeout),
        ),
    };
    let template = ActivateJobs {
        job_type: request.job_type,
        worker: request.worker.unwrap_or_default(),
        timeout: request.timeout,
        max_jobs: request.max_jobs_to_activate,
        fetch_variables: request.fetch_variable.unwrap_or_default(),
    };
    let jobs = ops::activate_jobs(&state, &template, long_poll_until)
        .await?
        .into_iter()
        .flatten()
        .map(|(key, job)| ActivatedJob::new(key, job))
        .collect();
    Ok(Json(ActivationResult { jobs }))
}

/// Camunda 8.8's `JobResult` of a job completion: `JobResultUserTask` (a task
/// listener's denial or corrections) or `JobResultAdHocSubProcess` (what an ad-hoc
/// subprocess's job worker activates next, or that it is done).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResultRequest {
    #[serde(rename = "type")]
    result_type: Option<String>,
    denied: Option<bool>,
    denied_reason: Option<String>,
    corrections: Option<CorrectionsRequest>,
    activate_elements: Option<Vec<ActivateElementRequest>>,
    is_completion_condition_fulfilled: Option<bool>,
    is_cancel_remaining_instances: Option<bool>,
}

/// Camunda 8.8's `JobResultActivateElement`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActivateElementRequest {
    element_id: Option<String>,
    #[serde(default)]
    variables: Option<Variables>,
}

/// Corrections of a user task by its listener; an absent or null field is not
/// corrected, an empty one is cleared.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CorrectionsRequest {
    assignee: Option<String>,
    due_date: Option<String>,
    follow_up_date: Option<String>,
    candidate_users: Option<Vec<String>>,
    candidate_groups: Option<Vec<String>>,
    priority: Option<i32>,
}

impl From<CorrectionsRequest> for Corrections {
    fn from(c: CorrectionsRequest) -> Corrections {
        Corrections {
            assignee: c.assignee,
            due_date: c.due_date,
            follow_up_date: c.follow_up_date,
            candidate_users: c.candidate_users,
            candidate_groups: c.candidate_groups,
            priority: c.priority,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CompletionRequest {
    #[serde(default)]
    variables: Variables,
    result: Option<ResultRequest>,
    job_lease_token: Option<String>,
    business_id: Option<String>,
}

pub async fn complete(
    State(state): State<SharedState>,
    KeyParam(job_key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: CompletionRequest = parse_optional_body(&body)?;
    let result = match request.result {
        Some(result) => {
            let activate_elements = match result.activate_elements {
                None => None,
                Some(elements) => {
                    let mut checked = Vec::with_capacity(elements.len());
                    for (index, element) in elements.into_iter().enumerate() {
                        let variables = element.variables.unwrap_or_default().checked(
                            &format!("result.activateElements[{index}].variables"),
                            &state.settings,
                        )?;
                        checked.push(AdHocSubProcessActivateElement {
                            element_id: element.element_id.unwrap_or_default(),
                            variables,
                        });
                    }
                    Some(checked)
                }
            };
            job_result(ResultInput {
                result_type: result.result_type,
                denied: result.denied,
                denied_reason: result.denied_reason,
                corrections: result.corrections.map(Corrections::from),
                activate_elements,
                completion_condition_fulfilled: result.is_completion_condition_fulfilled,
                cancel_remaining_instances: result.is_cancel_remaining_instances,
            })
            .map_err(ClientError::invalid_argument)?
        }
        None => JobResult::default(),
    };
    unsupported(
        request.job_lease_token.is_some(),
        "jobLeaseToken (job leases)",
    )?;
    unsupported(request.business_id.is_some(), "businessId")?;
    let variables = request.variables.checked("variables", &state.settings)?;
    ops::complete_job(&state, job_key, variables, result).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FailRequest {
    retries: Option<i32>,
    error_message: Option<String>,
    #[serde(default, deserialize_with = "optional_long")]
    retry_back_off: Option<i64>,
    #[serde(default)]
    variables: Variables,
    job_lease_token: Option<String>,
}

pub async fn fail(
    State(state): State<SharedState>,
    KeyParam(job_key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: FailRequest = parse_optional_body(&body)?;
    unsupported(
        request.job_lease_token.is_some(),
        "jobLeaseToken (job leases)",
    )?;
    let retries = request.retries.unwrap_or(0);
    if retries < 0 {
        return Err(ClientError::invalid_field(
            "retries",
            format!("The value for retries is '{retries}' but must be 0 or greater"),
        ));
    }
    let retry_backoff = request.retry_back_off.unwrap_or(0);
    if retry_backoff < 0 {
        return Err(ClientError::invalid_field(
            "retryBackOff",
            format!("The value for retryBackOff is '{retry_backoff}' but must be 0 or greater"),
        ));
    }
    let fail = FailJob {
        job_key,
        retries,
        error_message: request.error_message.unwrap_or_default(),
        retry_backoff,
        variables: request.variables.checked("variables", &state.settings)?,
    };
    ops::fail_job(&state, fail).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ErrorRequest {
    error_code: String,
    error_message: Option<String>,
    #[serde(default)]
    variables: Variables,
    job_lease_token: Option<String>,
}

pub async fn throw_error(
    State(state): State<SharedState>,
    KeyParam(job_key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: ErrorRequest = parse_body(&body)?;
    unsupported(
        request.job_lease_token.is_some(),
        "jobLeaseToken (job leases)",
    )?;
    if request.error_code.trim().is_empty() {
        return Err(ClientError::invalid_field(
            "errorCode",
            "No errorCode provided",
        ));
    }
    let error = ThrowError {
        job_key,
        error_code: request.error_code,
        error_message: request.error_message.unwrap_or_default(),
        variables: request.variables.checked("variables", &state.settings)?,
    };
    ops::throw_error(&state, error).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UpdateRequest {
    changeset: Changeset,
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
    job_lease_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Changeset {
    retries: Option<i32>,
    #[serde(default, deserialize_with = "optional_long")]
    timeout: Option<i64>,
    priority: Option<i32>,
}

pub async fn update(
    State(state): State<SharedState>,
    KeyParam(job_key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: UpdateRequest = parse_body(&body)?;
    unsupported(
        request.job_lease_token.is_some(),
        "jobLeaseToken (job leases)",
    )?;
    let changeset = request.changeset;
    unsupported(changeset.priority.is_some(), "Job priority")?;
    if changeset.retries.is_none() && changeset.timeout.is_none() {
        return Err(ClientError::invalid_argument(
            "No update data provided. Provide a non-null value for 'retries' or 'timeout' in \
             the \"changeset\"",
        ));
    }
    if let Some(retries) = changeset.retries
        && retries < 1
    {
        return Err(ClientError::invalid_field(
            "changeset.retries",
            format!("The value for changeset.retries is '{retries}' but must be greater than 0"),
        ));
    }
    if let Some(timeout) = changeset.timeout
        && timeout < 1
    {
        return Err(ClientError::invalid_field(
            "changeset.timeout",
            format!("The value for changeset.timeout is '{timeout}' but must be greater than 0"),
        ));
    }
    let reference = operation_reference(request.operation_reference)?;
    let update = UpdateJob {
        job_key,
        retries: changeset.retries,
        timeout: changeset.timeout,
    };
    ops::update_job(&state, update, reference).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activated_job_carries_keys_as_strings() {
        let job = JobRecord {
            job_type: "pay".into(),
            element_id: "task".into(),
            element_instance_key: 2251799813685252,
            bpmn_process_id: "order".into(),
            process_definition_version: 1,
            process_definition_key: 2251799813685249,
            process_instance_key: 2251799813685251,
            worker: "w".into(),
            retries: 3,
            retry_backoff: 0,
            recurring_time: -1,
            deadline: 1_700_000_000_000,
            timeout: 1000,
            error_message: String::new(),
            error_code: String::new(),
            custom_headers: [("h".to_owned(), "v".to_owned())].into_iter().collect(),
            variables: JsonValue::from(serde_json::json!({"a": 1})),
            tenant_id: "<default>".into(),
            job_kind: Default::default(),
            job_listener_event_type: Default::default(),
            result: Default::default(),
            root_process_instance_key: 2251799813685251,
            tags: Vec::new(),
        };
        let json = serde_json::to_value(ActivatedJob::new(2251799813685253, job)).unwrap();
        assert_eq!(json["jobKey"], "2251799813685253");
        assert_eq!(json["processInstanceKey"], "2251799813685251");
        assert_eq!(json["customHeaders"]["h"], "v");
        assert_eq!(json["variables"]["a"], 1);
        assert_eq!(json["deadline"], 1_700_000_000_000_i64);
        assert_eq!(json["type"], "pay");
        assert_eq!(json["kind"], "BPMN_ELEMENT");
    }
}
