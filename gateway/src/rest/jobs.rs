//! Jobs: activation with long polling across partitions; complete, fail, throw error,
//! update.
//!
//! Long polling: the request joins the waiters of its job type first, then polls every
//! partition once. If nothing was found it waits until a notification wakes it (then it
//! polls the partition named) or until its request timeout, and answers with what it
//! has, possibly nothing. Joining before polling means a job created between the poll
//! and the wait still wakes the request. `job_waiters` says who is woken. The answers go
//! through `crate::activation` before a worker sees them: jobs past or near their
//! deadline, or from a term the partition has left, are not handed out.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::value::{
    AdHocSubProcessActivateElement, JobRecord, JobResult, JobResultType, UserTaskRecord,
};
use rill_protocol::{
    ActivateJobs, Command, CommandResponse, FailJob, JsonValue, PartitionId, RecordValue,
    ThrowError, UpdateJob,
};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::json::{Variables, long, optional_long, parse_body, parse_optional_body};
use super::{Body, KeyParam, SharedState, check_tenant, operation_reference, unsupported};
use crate::activation::{Activation, usable_jobs};
use crate::backend::{Answered, BackendError};
use crate::ops::job_waiters::Wake;
use crate::ops::{ClientError, client_timeout};

/// The least time a partition without a leader is retried for, even at the end of a
/// long poll.
const MIN_PARTITION_TIMEOUT: Duration = Duration::from_millis(100);

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
        return Err(ClientError::invalid_argument("No type provided"));
    }
    if request.timeout <= 0 {
        return Err(ClientError::invalid_argument(format!(
            "The value for timeout is '{}' but must be greater than 0",
            request.timeout
        )));
    }
    if request.max_jobs_to_activate <= 0 {
        return Err(ClientError::invalid_argument(format!(
            "The value for maxJobsToActivate is '{}' but must be greater than 0",
            request.max_jobs_to_activate
        )));
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
    let jobs = activate_jobs(&state, &template, long_poll_until)
        .await?
        .into_iter()
        .flatten()
        .map(|(key, job)| ActivatedJob::new(key, job))
        .collect();
    Ok(Json(ActivationResult { jobs }))
}

/// Jobs a worker may work on, each batch as one partition activated it.
pub(crate) type ActivatedBatches = Vec<Vec<(i64, JobRecord)>>;

/// The long poll behind both APIs' job activation: polls the partitions, then waits for
/// a notification or `long_poll_until` (`None`: no waiting) and answers with what it
/// has, possibly nothing. Every job answered has been activated for this caller alone.
pub(crate) async fn activate_jobs(
    state: &SharedState,
    template: &ActivateJobs,
    long_poll_until: Option<Instant>,
) -> Result<ActivatedBatches, ClientError> {
    // Join the waiters before the first poll, so no notification falls between poll
    // and wait.
    let waiters = &state.job_waiters;
    let mut registration = waiters.register(&template.job_type);
    let mut shutdown = state.shutdown.clone();
    let mut waiting = None;
    let mut look = Wake::Everywhere;
    loop {
        // A partition without a leader is retried, but not past the long poll's end. (An
        // answer to a command sent is awaited longer: see `poll_partitions`.)
        let timeout = match long_poll_until {
            Some(until) => until
                .saturating_duration_since(Instant::now())
                .clamp(MIN_PARTITION_TIMEOUT, state.settings.request_timeout),
            None => state.settings.request_timeout,
        };
        let answers = match look {
            Wake::Everywhere => poll_partitions(state, template, timeout).await?,
            Wake::Partition(partition) => poll_woken(state, template, partition).await,
        };
        let batches = hand_out(state, answers);
        let found: usize = batches.iter().map(Vec::len).sum();
        if found > 0 {
            state.metrics.jobs_activated(found);
            return Ok(batches);
        }
        let Some(until) = long_poll_until else {
            return Ok(Vec::new());
        };
        if waiting.is_none() {
            waiting = Some(state.metrics.long_poll_waiting());
        }
        let woken = tokio::select! {
            wake = registration.woken() => Some(wake),
            _ = tokio::time::sleep_until(until) => None,
            _ = shutdown.wait_for(|stopping| *stopping) => None,
        };
        let Some(wake) = woken else {
            return Ok(Vec::new());
        };
        look = wake;
        // Back in the queue before polling, for notifications that arrive meanwhile.
        registration = waiters.register(&template.job_type);
    }
}

/// The jobs of `answers` that a worker may still get (`crate::activation`: not past or
/// near their deadline, not from a term the partition has left), one batch per answer.
fn hand_out(state: &SharedState, answers: Vec<Activation>) -> ActivatedBatches {
    answers
        .into_iter()
        .map(|answer| usable_jobs(state.dispatch.backend(), &state.metrics, answer))
        .filter(|batch| !batch.is_empty())
        .collect()
}

/// How long jobs in hand may wait while further partitions are asked: a tenth of their
/// timeout, so that a worker gets nearly all of it.
fn hold_limit(job_timeout_ms: i64) -> Duration {
    Duration::from_millis((job_timeout_ms / 10).max(0) as u64)
}

/// Asks the partition a notification named, awaiting its answer for
/// `gateway.request-timeout` however little is left of the long poll: the partition had
/// a leader a moment ago, and an answer given up on leaves the jobs it activated out of
/// every worker's reach until they time out. Large variables make such answers slow
/// (each job carries its instance's variables). A failure counts as nothing found: the
/// request goes on waiting instead of failing in the middle of its long poll.
async fn poll_woken(
    state: &SharedState,
    template: &ActivateJobs,
    partition: PartitionId,
) -> Vec<Activation> {
    let command = Command::ActivateJobs(template.clone());
    match state
        .dispatch
        .submit_raw(partition, &command, state.settings.request_timeout)
        .await
    {
        Ok(Answered {
            response:
                CommandResponse::Accepted {
                    value: RecordValue::JobBatch(batch),
                    ..
                },
            term,
        }) => {
            state.metrics.activation_command(batch.jobs.len());
            // A full batch may have left jobs behind: the next waiter looks too.
            if batch.jobs.len() >= template.max_jobs as usize {
                state
                    .job_waiters
                    .notify(&template.job_type, Wake::Partition(partition));
            }
            vec![Activation {
                partition,
                term,
                batch,
            }]
        }
        Ok(answer) => {
            tracing::debug!(%partition, ?answer, "job activation after a notification found nothing");
            Vec::new()
        }
        Err(error) => {
            tracing::debug!(%partition, %error, "job activation after a notification failed");
            Vec::new()
        }
    }
}

/// Asks every partition once, starting at a rotating one, until `max_jobs` are found.
/// Partitions that fail are skipped; if every partition fails, the first error is the
/// answer. A partition without a leader is passed over for the next one at once, as
/// Zeebe's gateway does: jobs waiting on the others must not wait out its election.
/// Only when the others had nothing is it asked again, retried within `timeout`. Until
/// jobs are in hand, a partition's answer is awaited for `gateway.request-timeout`, as
/// in [`poll_woken`]. Once jobs are in hand, all further partitions together get
/// [`hold_limit`]: jobs in hand must not wait long for more, which would leave the
/// worker little of their time.
async fn poll_partitions(
    state: &SharedState,
    template: &ActivateJobs,
    timeout: Duration,
) -> Result<Vec<Activation>, ClientError> {
    let deadline = Instant::now() + timeout;
    let count = state.dispatch.partition_count();
    let first = state.dispatch.round_robin().get();
    let mut poll = Poll::default();
    let mut leaderless = Vec::new();
    for offset in 0..count {
        let partition = PartitionId((first - 1 + offset) % count + 1);
        let Some(command) = poll.command(template) else {
            break;
        };
        let limit = match poll.hold_until {
            None => state.settings.request_timeout,
            Some(until) => until.saturating_duration_since(Instant::now()).min(timeout),
        };
        if limit.is_zero() {
            break;
        }
        match state.dispatch.attempt(partition, &command, limit).await {
            Err(error) if error.is_retryable() && poll.found == 0 => {
                tracing::debug!(%partition, %error, "job activation passes over a partition without a leader");
                leaderless.push((partition, error));
            }
            result => poll.take(state, partition, &command, template, result)?,
        }
    }
    for (partition, error) in leaderless {
        let (command, result) = match poll.command(template) {
            // The others had nothing: this one may, once it has a leader again.
            Some(command) if poll.found == 0 => {
                let left = deadline.saturating_duration_since(Instant::now());
                let result = state.dispatch.submit_raw(partition, &command, left).await;
                (command, result)
            }
            _ => (Command::ActivateJobs(template.clone()), Err(error)),
        };
        poll.take(state, partition, &command, template, result)?;
    }
    if poll.failures == count
        && let Some(error) = poll.first_error
    {
        return Err(ClientError::from(error));
    }
    Ok(poll.answers)
}

/// What a pass over the partitions has gathered.
#[derive(Default)]
struct Poll {
    answers: Vec<Activation>,
    found: usize,
    /// Set once jobs are in hand: when asking further partitions ends.
    hold_until: Option<Instant>,
    first_error: Option<BackendError>,
    failures: u16,
}

impl Poll {
    /// The command for the jobs still wanted, if any are.
    fn command(&self, template: &ActivateJobs) -> Option<Command> {
        let remaining = template.max_jobs - self.found as i32;
        (remaining > 0).then(|| {
            Command::ActivateJobs(ActivateJobs {
                max_jobs: remaining,
                ..template.clone()
            })
        })
    }

    /// Takes one partition's answer to `command`. A rejection is about the request itself
    /// (the same on every partition), so it is the answer to the whole poll.
    fn take(
        &mut self,
        state: &SharedState,
        partition: PartitionId,
        command: &Command,
        template: &ActivateJobs,
        result: Result<Answered, BackendError>,
    ) -> Result<(), ClientError> {
        match result {
            Ok(Answered {
                response:
                    CommandResponse::Accepted {
                        value: RecordValue::JobBatch(batch),
                        ..
                    },
                term,
            }) => {
                state.metrics.activation_command(batch.jobs.len());
                if !batch.jobs.is_empty() && self.hold_until.is_none() {
                    self.hold_until = Some(Instant::now() + hold_limit(template.timeout));
                }
                self.found += batch.jobs.len();
                self.answers.push(Activation {
                    partition,
                    term,
                    batch,
                });
            }
            Ok(Answered {
                response: CommandResponse::Accepted { value, .. },
                ..
            }) => {
                tracing::warn!(%partition, value_type = value.value_type().name(), "unexpected answer to job activation");
                self.failures += 1;
            }
            Ok(Answered {
                response: CommandResponse::Rejected(rejection),
                ..
            }) => {
                return Err(ClientError::rejected(command, &rejection));
            }
            Err(error) => {
                tracing::debug!(%partition, %error, "job activation failed on partition");
                self.failures += 1;
                self.first_error.get_or_insert(error);
            }
        }
        Ok(())
    }
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
    corrections: Option<Corrections>,
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
pub(crate) struct Corrections {
    pub assignee: Option<String>,
    pub due_date: Option<String>,
    pub follow_up_date: Option<String>,
    pub candidate_users: Option<Vec<String>>,
    pub candidate_groups: Option<Vec<String>>,
    pub priority: Option<i32>,
}

impl Corrections {
    /// Whether any field is corrected.
    fn any(&self) -> bool {
        self.assignee.is_some()
            || self.due_date.is_some()
            || self.follow_up_date.is_some()
            || self.candidate_users.is_some()
            || self.candidate_groups.is_some()
            || self.priority.is_some()
    }
}

/// A client's job result, as the REST and gRPC APIs give it (the ad-hoc elements'
/// variables already checked); `None` where the client set nothing.
#[derive(Default)]
pub(crate) struct ResultInput {
    pub result_type: Option<String>,
    pub denied: Option<bool>,
    pub denied_reason: Option<String>,
    pub corrections: Option<Corrections>,
    pub activate_elements: Option<Vec<AdHocSubProcessActivateElement>>,
    pub completion_condition_fulfilled: Option<bool>,
    pub cancel_remaining_instances: Option<bool>,
}

/// The engine's job result from a client's: the user-task kind (`userTask`, the
/// default) or the ad-hoc subprocess kind (`adHocSubProcess`); a field of the other
/// kind is refused, naming it.
pub(crate) fn job_result(input: ResultInput) -> Result<JobResult, String> {
    let ad_hoc = match input.result_type.as_deref() {
        None | Some("userTask") => false,
        // gRPC clients have spelled it with a lower-case 'p'.
        Some("adHocSubProcess" | "adHocSubprocess") => true,
        Some(other) => {
            return Err(format!(
                "Expected the job result's type to be 'userTask' or 'adHocSubProcess', but it \
                 was '{other}'"
            ));
        }
    };
    // A field of the other type counts only with a value that means something, so
    // clients that send every field with its default are not refused.
    if ad_hoc {
        let user_task_field = [
            ("denied", input.denied == Some(true)),
            (
                "deniedReason",
                input.denied_reason.as_ref().is_some_and(|r| !r.is_empty()),
            ),
            (
                "corrections",
                input.corrections.as_ref().is_some_and(Corrections::any),
            ),
        ]
        .into_iter()
        .find(|(_, set)| *set);
        if let Some((field, _)) = user_task_field {
            return Err(format!(
                "result.{field} belongs to a job result of type 'userTask', but the type is \
                 'adHocSubProcess'"
            ));
        }
        let activate_elements = input.activate_elements.unwrap_or_default();
        for (index, element) in activate_elements.iter().enumerate() {
            if element.element_id.trim().is_empty() {
                return Err(format!(
                    "No elementId provided in result.activateElements[{index}]"
                ));
            }
        }
        return Ok(JobResult {
            result_type: JobResultType::AdHocSubProcess,
            activate_elements,
            completion_condition_fulfilled: input.completion_condition_fulfilled.unwrap_or(false),
            cancel_remaining_instances: input.cancel_remaining_instances.unwrap_or(false),
            ..JobResult::default()
        });
    }
    let ad_hoc_field = [
        (
            "activateElements",
            input
                .activate_elements
                .as_ref()
                .is_some_and(|e| !e.is_empty()),
        ),
        (
            "isCompletionConditionFulfilled",
            input.completion_condition_fulfilled == Some(true),
        ),
        (
            "isCancelRemainingInstances",
            input.cancel_remaining_instances == Some(true),
        ),
    ]
    .into_iter()
    .find(|(_, set)| *set);
    if let Some((field, _)) = ad_hoc_field {
        return Err(format!(
            "result.{field} belongs to a job result of type 'adHocSubProcess', but the type is \
             '{}'",
            input.result_type.as_deref().unwrap_or("userTask")
        ));
    }
    let denied = input.denied.unwrap_or(false);
    let denied_reason = input.denied_reason.unwrap_or_default();
    let corrections = input.corrections.unwrap_or_default();
    let mut result = JobResult {
        denied,
        denied_reason,
        ..JobResult::default()
    };
    let mut corrected = |name: &str| result.corrected_attributes.push(name.to_owned());
    let c = &mut result.corrections;
    if let Some(assignee) = corrections.assignee {
        c.assignee = assignee;
        corrected(UserTaskRecord::ASSIGNEE);
    }
    if let Some(due_date) = corrections.due_date {
        c.due_date = due_date;
        corrected(UserTaskRecord::DUE_DATE);
    }
    if let Some(follow_up_date) = corrections.follow_up_date {
        c.follow_up_date = follow_up_date;
        corrected(UserTaskRecord::FOLLOW_UP_DATE);
    }
    if let Some(users) = corrections.candidate_users {
        c.candidate_users_list = users;
        corrected(UserTaskRecord::CANDIDATE_USERS);
    }
    if let Some(groups) = corrections.candidate_groups {
        c.candidate_groups_list = groups;
        corrected(UserTaskRecord::CANDIDATE_GROUPS);
    }
    if let Some(priority) = corrections.priority {
        c.priority = priority;
        corrected(UserTaskRecord::PRIORITY);
    }
    Ok(result)
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
                corrections: result.corrections,
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
    let partition = state.dispatch.partition_of(job_key, "job")?;
    let command = Command::CompleteJob {
        job_key,
        variables: request.variables.checked("variables", &state.settings)?,
        result,
    };
    state
        .dispatch
        .submit(partition, command, state.settings.request_timeout)
        .await?;
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
        return Err(ClientError::invalid_argument(format!(
            "The value for retries is '{retries}' but must be 0 or greater"
        )));
    }
    let retry_backoff = request.retry_back_off.unwrap_or(0);
    if retry_backoff < 0 {
        return Err(ClientError::invalid_argument(format!(
            "The value for retryBackOff is '{retry_backoff}' but must be 0 or greater"
        )));
    }
    let partition = state.dispatch.partition_of(job_key, "job")?;
    let command = Command::FailJob(FailJob {
        job_key,
        retries,
        error_message: request.error_message.unwrap_or_default(),
        retry_backoff,
        variables: request.variables.checked("variables", &state.settings)?,
    });
    state
        .dispatch
        .submit(partition, command, state.settings.request_timeout)
        .await?;
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
        return Err(ClientError::invalid_argument("No errorCode provided"));
    }
    let partition = state.dispatch.partition_of(job_key, "job")?;
    let command = Command::ThrowError(ThrowError {
        job_key,
        error_code: request.error_code,
        error_message: request.error_message.unwrap_or_default(),
        variables: request.variables.checked("variables", &state.settings)?,
    });
    state
        .dispatch
        .submit(partition, command, state.settings.request_timeout)
        .await?;
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
        return Err(ClientError::invalid_argument(format!(
            "The value for changeset.retries is '{retries}' but must be greater than 0"
        )));
    }
    if let Some(timeout) = changeset.timeout
        && timeout < 1
    {
        return Err(ClientError::invalid_argument(format!(
            "The value for changeset.timeout is '{timeout}' but must be greater than 0"
        )));
    }
    let reference = operation_reference(request.operation_reference)?;
    let partition = state.dispatch.partition_of(job_key, "job")?;
    let command = Command::UpdateJob(UpdateJob {
        job_key,
        retries: changeset.retries,
        timeout: changeset.timeout,
    })
    .referenced(reference);
    state
        .dispatch
        .submit(partition, command, state.settings.request_timeout)
        .await?;
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
