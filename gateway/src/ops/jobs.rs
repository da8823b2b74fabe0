//! Jobs: activation with long polling across partitions; complete, fail, throw error,
//! update, yield.
//!
//! Long polling: the request joins the waiters of its job type first, then polls every
//! partition once. If nothing was found it waits until a notification wakes it (then it
//! polls the partition named) or until its request timeout, and answers with what it
//! has, possibly nothing. Joining before polling means a job created between the poll
//! and the wait still wakes the request. `job_waiters` says who is woken. The answers go
//! through `crate::activation` before a worker sees them: jobs past or near their
//! deadline, or from a term the partition has left, are not handed out.

use std::time::Duration;

use rill_protocol::value::{
    AdHocSubProcessActivateElement, JobRecord, JobResult, JobResultType, UserTaskRecord,
};
use rill_protocol::{
    ActivateJobs, Command, CommandResponse, FailJob, JsonValue, Key, PartitionId, RecordValue,
    ThrowError, UpdateJob,
};
use tokio::time::Instant;

use super::job_waiters::Wake;
use super::{AppState, ClientError, operation, submit_by_key};
use crate::activation::{Activation, usable_jobs};
use crate::backend::Answered;

/// The least time a partition without a leader is retried for, even at the end of a
/// long poll.
const MIN_PARTITION_TIMEOUT: Duration = Duration::from_millis(100);

/// Activates jobs of `template`'s type for a worker (Zeebe's ActivateJobs): polls the
/// partitions, then, until `long_poll_until` (`None`: no waiting), waits for jobs to
/// become available. Answers the jobs in batches, one per partition that had some.
pub async fn activate_jobs(
    state: &AppState,
    template: &ActivateJobs,
    long_poll_until: Option<Instant>,
) -> Result<ActivatedBatches, ClientError> {
    operation(
        "ActivateJobs",
        None,
        long_poll(state, template, long_poll_until),
    )
    .await
}

/// Completes a job with `variables` and, for a task listener's or an ad-hoc
/// subprocess's job, its `result`.
pub async fn complete_job(
    state: &AppState,
    job_key: Key,
    variables: JsonValue,
    result: JobResult,
) -> Result<(), ClientError> {
    let command = Command::CompleteJob {
        job_key,
        variables,
        result,
    };
    on_job(state, "CompleteJob", job_key, command).await
}

/// Fails a job: retried after its back-off while it has retries, an incident without.
pub async fn fail_job(state: &AppState, fail: FailJob) -> Result<(), ClientError> {
    let job_key = fail.job_key;
    on_job(state, "FailJob", job_key, Command::FailJob(fail)).await
}

/// Throws a BPMN error from a job, caught by a boundary or event subprocess.
pub async fn throw_error(state: &AppState, error: ThrowError) -> Result<(), ClientError> {
    let job_key = error.job_key;
    on_job(state, "ThrowError", job_key, Command::ThrowError(error)).await
}

/// Changes a job's retries and/or timeout.
pub async fn update_job(
    state: &AppState,
    update: UpdateJob,
    reference: Option<u64>,
) -> Result<(), ClientError> {
    let job_key = update.job_key;
    let command = Command::UpdateJob(update).referenced(reference);
    on_job(state, "UpdateJob", job_key, command).await
}

/// Makes an activated job that could not reach its worker activatable again at once:
/// yielded (Zeebe's JOB YIELD), so its retries stay and no failure is recorded.
pub async fn yield_job(state: &AppState, job_key: Key) -> Result<(), ClientError> {
    on_job(state, "YieldJob", job_key, Command::YieldJob { job_key }).await
}

/// Sends a command about one job to the partition of its key, in the operation's span.
async fn on_job(
    state: &AppState,
    name: &'static str,
    job_key: Key,
    command: Command,
) -> Result<(), ClientError> {
    operation(name, Some(job_key), async {
        submit_by_key(state, job_key, "job", command)
            .await
            .map(drop)
    })
    .await
}

/// Jobs a worker may work on, each batch as one partition activated it.
pub type ActivatedBatches = Vec<Vec<(i64, JobRecord)>>;

/// The long poll behind job activation: polls the partitions, then waits for a
/// notification or `long_poll_until` (`None`: no waiting) and answers with what it has,
/// possibly nothing. Every job answered has been activated for this caller alone.
async fn long_poll(
    state: &AppState,
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
fn hand_out(state: &AppState, answers: Vec<Activation>) -> ActivatedBatches {
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
    state: &AppState,
    template: &ActivateJobs,
    partition: PartitionId,
) -> Vec<Activation> {
    let command = Command::ActivateJobs(template.clone());
    let asked_at = Instant::now();
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
                asked_at: Some(asked_at),
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
    state: &AppState,
    template: &ActivateJobs,
    timeout: Duration,
) -> Result<Vec<Activation>, ClientError> {
    let deadline = Instant::now() + timeout;
    let count = state.dispatch.partition_count();
    let first = state.dispatch.next_poll_partition().get();
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
        let asked_at = Instant::now();
        match state.dispatch.attempt(partition, &command, limit).await {
            Err(error) if error.is_retryable() && poll.found == 0 => {
                tracing::debug!(%partition, %error, "job activation passes over a partition without a leader");
                leaderless.push((partition, error));
            }
            result => poll.take(state, partition, &command, template, asked_at, result)?,
        }
    }
    for (partition, error) in leaderless {
        let (command, asked_at, result) = match poll.command(template) {
            // The others had nothing: this one may, once it has a leader again.
            Some(command) if poll.found == 0 => {
                let left = deadline.saturating_duration_since(Instant::now());
                let asked_at = Instant::now();
                let result = state.dispatch.submit_raw(partition, &command, left).await;
                (command, asked_at, result)
            }
            _ => (
                Command::ActivateJobs(template.clone()),
                Instant::now(),
                Err(error),
            ),
        };
        poll.take(state, partition, &command, template, asked_at, result)?;
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
    first_error: Option<rill_client::Error>,
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
        state: &AppState,
        partition: PartitionId,
        command: &Command,
        template: &ActivateJobs,
        asked_at: Instant,
        result: Result<Answered, rill_client::Error>,
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
                    asked_at: Some(asked_at),
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

/// Corrections of a user task by its listener; an absent or null field is not
/// corrected, an empty one is cleared.
#[derive(Default)]
pub struct Corrections {
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
pub struct ResultInput {
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
pub fn job_result(input: ResultInput) -> Result<JobResult, String> {
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
