//! JOB and JOB_BATCH commands: activate, complete, fail, throw error, update, and the
//! leader's time-outs and back-off recurrences.

use rill_protocol::value::{
    IncidentErrorType, JobBatchRecord, JobKind, JobRecord, JobResult, JobResultType,
};
use rill_protocol::{
    ActivateJobs, CommandResponse, FailJob, Intent, JsonValue, Key, RecordValue, ThrowError,
    UpdateJob,
};
use serde_json::{Map, Value};

use super::variables_map;
use crate::behavior::{ad_hoc_definition, resolve_ad_hoc_elements};
use crate::context::Processing;
use crate::error::Result;
use crate::model::ElementIdx;
use crate::outcome::Rejection;
use crate::state::{ElementState, JobState, Reader, StoredJob};

/// A placeholder job record for rejections of commands on jobs that do not exist.
pub(super) fn unknown_job() -> JobRecord {
    JobRecord {
        job_type: String::new(),
        element_id: String::new(),
        element_instance_key: -1,
        bpmn_process_id: String::new(),
        process_definition_version: -1,
        process_definition_key: -1,
        process_instance_key: -1,
        worker: String::new(),
        retries: 0,
        retry_backoff: 0,
        recurring_time: -1,
        deadline: -1,
        timeout: -1,
        error_message: String::new(),
        error_code: String::new(),
        custom_headers: Default::default(),
        variables: JsonValue::empty_object(),
        tenant_id: super::tenant(),
        job_kind: JobKind::BpmnElement,
        job_listener_event_type: Default::default(),
        result: Default::default(),
        root_process_instance_key: -1,
        tags: Vec::new(),
    }
}

/// Looks a job up for a command; rejects (and returns `None`) when it does not exist
/// or is not in one of `allowed` states.
fn job_for(
    p: &mut Processing<'_>,
    key: Key,
    intent: Intent,
    action: &str,
    allowed: &[JobState],
) -> Result<Option<StoredJob>> {
    let job = p.read().job(key)?;
    if let Err(rejection) = check_job(job.as_ref(), key, action, allowed) {
        let record = job.map_or_else(unknown_job, |job| job.record);
        p.reject(key, intent, record, rejection);
        return Ok(None);
    }
    Ok(job)
}

/// Refuses a command on a job that does not exist or is not in one of `allowed` states.
fn check_job(
    job: Option<&StoredJob>,
    key: Key,
    action: &str,
    allowed: &[JobState],
) -> std::result::Result<(), Rejection> {
    match job {
        None => Err(Rejection::not_found(format!(
            "Expected to {action} job with key '{key}', but no such job was found"
        ))),
        Some(job) if !allowed.contains(&job.state) => Err(Rejection::invalid_state(format!(
            "Expected to {action} job with key '{key}', but it is in state '{}'",
            job.state.name()
        ))),
        Some(_) => Ok(()),
    }
}

/// Most variable bytes in one job batch (Zeebe's default maximum message size).
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

const WORKABLE: &[JobState] = &[JobState::Activatable, JobState::Activated];

/// The batch an activation starts from: the request, no job yet.
fn empty_batch(command: &ActivateJobs) -> JobBatchRecord {
    JobBatchRecord {
        job_type: command.job_type.clone(),
        worker: command.worker.clone(),
        timeout: command.timeout,
        max_jobs_to_activate: command.max_jobs,
        job_keys: Vec::new(),
        jobs: Vec::new(),
        truncated: false,
        tenant_ids: vec![super::tenant()],
    }
}

/// Refuses an activation request that cannot be served.
fn check_activation(command: &ActivateJobs) -> std::result::Result<(), Rejection> {
    if command.job_type.is_empty() {
        Err(Rejection::invalid_argument(
            "Expected to activate jobs of a non-empty type, but the type is empty",
        ))
    } else if command.max_jobs < 1 {
        Err(Rejection::invalid_argument(format!(
            "Expected to activate at least one job (maxJobsToActivate >= 1), but it was {}",
            command.max_jobs
        )))
    } else if command.timeout < 1 {
        Err(Rejection::invalid_argument(format!(
            "Expected an activation timeout of at least 1 ms, but it was {}",
            command.timeout
        )))
    } else {
        Ok(())
    }
}

/// The answer to an activation that would find no job, for the leader to give without a
/// log entry (long-polling workers send many of these). `None` when the command must go
/// through the log: jobs of the type may be there, or it is invalid and earns a rejection.
pub(super) fn nothing_to_activate(
    reader: Reader<'_>,
    command: &ActivateJobs,
) -> Result<Option<CommandResponse>> {
    if check_activation(command).is_err()
        || !reader.activatable_jobs(&command.job_type, 1)?.is_empty()
    {
        return Ok(None);
    }
    Ok(Some(CommandResponse::Accepted {
        key: Key::NONE,
        intent: Intent::Activated,
        value: RecordValue::JobBatch(empty_batch(command)),
    }))
}

pub(super) fn activate(p: &mut Processing<'_>, command: &ActivateJobs) -> Result<()> {
    let mut batch = empty_batch(command);
    if let Err(rejection) = check_activation(command) {
        p.reject(Key::NONE, Intent::Activate, batch, rejection);
        return Ok(());
    }
    p.command(Key::NONE, Intent::Activate, batch.clone());
    let batch_key = p.next_key()?;
    let deadline = p.now().saturating_add(command.timeout);
    let keys = p
        .read()
        .activatable_jobs(&command.job_type, command.max_jobs as usize)?;
    let mut batch_bytes = 0;
    for key in keys {
        let Some(job) = p.read().job(key)? else {
            continue;
        };
        let record = job.record;
        let chain = p.job_scope_chain(&record)?;
        let names = (!command.fetch_variables.is_empty()).then_some(&command.fetch_variables[..]);
        let variables = p.variables_document(Key(record.process_instance_key), &chain, names)?;
        // Keep a batch within Zeebe's default maximum message size; the rest stay
        // activatable for the next request.
        let size = variables.as_str().len();
        if !batch.jobs.is_empty() && batch_bytes + size > MAX_BATCH_BYTES {
            batch.truncated = true;
            break;
        }
        batch_bytes += size;
        batch.job_keys.push(key.get());
        batch.jobs.push(JobRecord {
            worker: command.worker.clone(),
            deadline,
            timeout: command.timeout,
            variables,
            ..record
        });
    }
    if !batch.jobs.is_empty() {
        p.wake_at(deadline);
    }
    p.event(batch_key, Intent::Activated, batch.clone())?;
    p.respond(batch_key, Intent::Activated, batch);
    Ok(())
}

pub(super) fn complete(
    p: &mut Processing<'_>,
    key: Key,
    variables: &JsonValue,
    result: &JobResult,
) -> Result<()> {
    let Some(job) = job_for(p, key, Intent::Complete, "complete", WORKABLE)? else {
        return Ok(());
    };
    let checked = variables_map(variables, "the job's variables").and_then(|document| {
        check_result(p, &job.record, key, &document, result).map(|()| document)
    });
    let checked = match checked {
        Ok(document) if job.record.job_kind == JobKind::AdHocSubProcess => {
            check_ad_hoc_result(p, &job.record, key, result)?.map(|found| (document, found))
        }
        Ok(document) => Ok((document, Vec::new())),
        Err(rejection) => Err(rejection),
    };
    let (document, activations) = match checked {
        Ok(checked) => checked,
        Err(rejection) => {
            p.reject(key, Intent::Complete, job.record, rejection);
            return Ok(());
        }
    };
    let record = JobRecord {
        variables: variables.clone(),
        result: result.clone(),
        ..job.record
    };
    p.command(key, Intent::Complete, record.clone());
    p.event(key, Intent::Completed, record.clone())?;
    p.respond(key, Intent::Completed, record.clone());
    match record.job_kind {
        JobKind::ExecutionListener => p.listener_completed(&record, document),
        JobKind::TaskListener => p.task_listener_completed(&record),
        JobKind::BpmnElement => p.complete_with(Key(record.element_instance_key), Some(document)),
        JobKind::AdHocSubProcess => p.ad_hoc_job_completed(&record, document, activations),
    }
}

/// A job result belongs to a task listener's job, which takes no variables (as in
/// Zeebe 8.8), or to an ad-hoc subprocess's job (checked by [`check_ad_hoc_result`]).
fn check_result(
    p: &Processing<'_>,
    job: &JobRecord,
    key: Key,
    variables: &Map<String, Value>,
    result: &JobResult,
) -> std::result::Result<(), Rejection> {
    let ad_hoc_result = result.result_type == JobResultType::AdHocSubProcess
        || !result.activate_elements.is_empty()
        || result.completion_condition_fulfilled
        || result.cancel_remaining_instances;
    match job.job_kind {
        // Checked against the ad-hoc subprocess by `check_ad_hoc_result`.
        JobKind::AdHocSubProcess => return Ok(()),
        JobKind::TaskListener if !ad_hoc_result => {}
        JobKind::BpmnElement | JobKind::ExecutionListener if result.is_empty() => return Ok(()),
        kind => {
            let (result_type, owner) = if ad_hoc_result {
                ("adHocSubProcess", "an ad-hoc subprocess")
            } else {
                ("userTask", "a user task listener")
            };
            return Err(Rejection::invalid_argument(format!(
                "Expected a job result of type '{result_type}' only for the job of {owner}, but \
                 job with key '{key}' is of kind {}",
                kind.name()
            )));
        }
    }
    if !variables.is_empty() {
        return Err(Rejection::invalid_argument(format!(
            "Expected to complete task listener job with key '{key}' without variables, but \
             variables were given; a task listener may correct the task or deny its \
             transition, not set variables"
        )));
    }
    let transition = p
        .read()
        .element_instance(job.element_instance_key)
        .ok()
        .flatten()
        .and_then(|instance| p.read().user_task(instance.job_key).ok().flatten())
        .and_then(|task| task.transition);
    crate::behavior::check_task_listener_result(result, job, transition.as_ref(), key)
}

pub(super) fn fail(p: &mut Processing<'_>, command: &FailJob) -> Result<()> {
    let key = command.job_key;
    let Some(job) = job_for(p, key, Intent::Fail, "fail", WORKABLE)? else {
        return Ok(());
    };
    let document = match check_fail(command, key) {
        Ok(document) => document,
        Err(rejection) => {
            p.reject(key, Intent::Fail, job.record, rejection);
            return Ok(());
        }
    };
    let backoff = command.retries > 0 && command.retry_backoff > 0;
    let record = JobRecord {
        retries: command.retries,
        error_message: command.error_message.clone(),
        retry_backoff: command.retry_backoff,
        recurring_time: if backoff {
            p.now().saturating_add(command.retry_backoff)
        } else {
            -1
        },
        deadline: -1,
        variables: command.variables.clone(),
        ..job.record
    };
    p.command(key, Intent::Fail, record.clone());
    p.event(key, Intent::Failed, record.clone())?;
    p.respond(key, Intent::Failed, record.clone());
    if !document.is_empty()
        && let Some(task) = p.read().element_instance(record.element_instance_key)?
    {
        p.set_local_variables(&task, document)?;
    }
    if command.retries == 0 {
        let Some(task) = p.read().element_instance(record.element_instance_key)? else {
            return Ok(());
        };
        let message = if command.error_message.is_empty() {
            "No more retries left.".to_owned()
        } else {
            command.error_message.clone()
        };
        let error_type = match record.job_kind {
            JobKind::BpmnElement => IncidentErrorType::JobNoRetries,
            JobKind::ExecutionListener => IncidentErrorType::ExecutionListenerNoRetries,
            JobKind::TaskListener => IncidentErrorType::TaskListenerNoRetries,
            JobKind::AdHocSubProcess => IncidentErrorType::AdHocSubProcessNoRetries,
        };
        p.raise_incident(&task.record, task.key, error_type, message, key)?;
    } else if backoff {
        p.wake_at(record.recurring_time);
    } else {
        p.notify_jobs_available(&record.job_type);
    }
    Ok(())
}

/// An element of an ad-hoc subprocess to activate and the locals of its inner instance.
type Activation = (ElementIdx, Map<String, Value>);

/// The elements a job result of an ad-hoc subprocess's job activates, each with the
/// locals of its inner instance; or why the completion is refused: a user-task result,
/// an ad-hoc subprocess that is not active or already fulfilled its completion
/// condition, activations together with a fulfilled condition (as Zeebe refuses them),
/// an element that is not activatable, variables that are not an object. The same
/// element may be named more than once (a worker may run one tool twice at a time).
fn check_ad_hoc_result(
    p: &mut Processing<'_>,
    job: &JobRecord,
    key: Key,
    result: &JobResult,
) -> Result<std::result::Result<Vec<Activation>, Rejection>> {
    let ad_hoc_key = Key(job.element_instance_key);
    if result.denied || !result.denied_reason.is_empty() || !result.corrected_attributes.is_empty()
    {
        return Ok(Err(Rejection::invalid_argument(format!(
            "Expected a job result of type 'adHocSubProcess' for the job with key '{key}' of \
             ad-hoc subprocess '{}', but it denies or corrects a user task",
            job.element_id
        ))));
    }
    let ad_hoc = p.active(ad_hoc_key)?;
    let definition = ad_hoc
        .as_ref()
        .filter(|ad_hoc| {
            ad_hoc.instance.state == ElementState::Activated
                && !ad_hoc.instance.ad_hoc_completion_fulfilled
        })
        .and_then(|ad_hoc| ad_hoc_definition(ad_hoc).map(|definition| (ad_hoc, definition)));
    let Some((ad_hoc, definition)) = definition else {
        return Ok(Err(Rejection::invalid_state(format!(
            "Expected to complete the job with key '{key}' of ad-hoc subprocess '{}', but the \
             ad-hoc subprocess instance '{ad_hoc_key}' is not active or already completing",
            job.element_id
        ))));
    };
    if p.ad_hoc_interrupted(ad_hoc)? {
        return Ok(Err(super::ad_hoc::interrupted(ad_hoc)));
    }
    if result.completion_condition_fulfilled && !result.activate_elements.is_empty() {
        return Ok(Err(Rejection::invalid_argument(format!(
            "Expected to complete the job with key '{key}' of ad-hoc subprocess '{}' either \
             activating elements or fulfilling its completion condition, but the result does \
             both (activateElements: [{}])",
            job.element_id,
            result
                .activate_elements
                .iter()
                .map(|element| element.element_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))));
    }
    let ids: Vec<&str> = result
        .activate_elements
        .iter()
        .map(|element| element.element_id.as_str())
        .collect();
    let found = match resolve_ad_hoc_elements(ad_hoc, definition, &ids) {
        Ok(found) => found,
        Err(reason) => return Ok(Err(Rejection::not_found(reason))),
    };
    let mut activations = Vec::with_capacity(found.len());
    for (idx, element) in found.into_iter().zip(&result.activate_elements) {
        let what = format!("the variables of element '{}'", element.element_id);
        match variables_map(&element.variables, &what) {
            Ok(variables) => activations.push((idx, variables)),
            Err(rejection) => return Ok(Err(rejection)),
        }
    }
    Ok(Ok(activations))
}

/// The variables of a valid fail command.
fn check_fail(command: &FailJob, key: Key) -> std::result::Result<Map<String, Value>, Rejection> {
    let document = variables_map(&command.variables, "the job's variables")?;
    if command.retries < 0 {
        return Err(Rejection::invalid_argument(format!(
            "Expected the remaining retries of job with key '{key}' to be 0 or more, but it was {}",
            command.retries
        )));
    }
    if command.retry_backoff < 0 {
        return Err(Rejection::invalid_argument(format!(
            "Expected the retry back-off of job with key '{key}' to be 0 or more ms, but it was {}",
            command.retry_backoff
        )));
    }
    Ok(document)
}

pub(super) fn throw_error(p: &mut Processing<'_>, command: &ThrowError) -> Result<()> {
    let key = command.job_key;
    let Some(job) = job_for(p, key, Intent::ThrowError, "throw an error for", WORKABLE)? else {
        return Ok(());
    };
    let document = match check_throw_error(command, key, &job.record) {
        Ok(document) => document,
        Err(rejection) => {
            p.reject(key, Intent::ThrowError, job.record, rejection);
            return Ok(());
        }
    };
    let record = JobRecord {
        error_code: command.error_code.clone(),
        error_message: command.error_message.clone(),
        variables: command.variables.clone(),
        deadline: -1,
        ..job.record
    };
    p.command(key, Intent::ThrowError, record.clone());
    p.event(key, Intent::ErrorThrown, record.clone())?;
    p.respond(key, Intent::ErrorThrown, record.clone());
    let Some(task) = p.active(Key(record.element_instance_key))? else {
        return Ok(());
    };
    if task.instance.state != ElementState::Activated {
        return Ok(());
    }
    let variables: Option<Map<String, Value>> = (!document.is_empty()).then_some(document);
    p.throw_error_from_job(
        task,
        key,
        &command.error_code,
        &command.error_message,
        variables,
    )
}

/// The variables of a valid throw-error command.
fn check_throw_error(
    command: &ThrowError,
    key: Key,
    job: &JobRecord,
) -> std::result::Result<Map<String, Value>, Rejection> {
    if matches!(
        job.job_kind,
        JobKind::TaskListener | JobKind::ExecutionListener
    ) {
        // As in Zeebe: a listener's element is not in a state where an error can be
        // caught (it is activating or completing, or its task is in a transition).
        let kind = match job.job_kind {
            JobKind::TaskListener => "a task listener",
            _ => "an execution listener",
        };
        return Err(Rejection::invalid_state(format!(
            "Expected to throw an error for job with key '{key}', but it is the job of {kind} \
             (type '{}'), which cannot throw BPMN errors; complete or fail the job instead",
            job.job_type
        )));
    }
    let document = variables_map(&command.variables, "the error's variables")?;
    if command.error_code.is_empty() {
        return Err(Rejection::invalid_argument(format!(
            "Expected to throw an error for job with key '{key}' with an error code, but it was \
             empty"
        )));
    }
    Ok(document)
}

pub(super) fn update(p: &mut Processing<'_>, command: &UpdateJob) -> Result<()> {
    let key = command.job_key;
    let intent = command.intent();
    let Some(job) = job_for(
        p,
        key,
        intent,
        "update",
        &[
            JobState::Activatable,
            JobState::Activated,
            JobState::Failed,
            JobState::ErrorThrown,
        ],
    )?
    else {
        return Ok(());
    };
    if let Err(rejection) = check_update(command, key, job.state) {
        p.reject(key, intent, job.record, rejection);
        return Ok(());
    }
    let mut record = job.record;
    p.command(key, intent, record.clone());
    let mut last = Intent::RetriesUpdated;
    if let Some(retries) = command.retries {
        record.retries = retries;
        p.event(key, Intent::RetriesUpdated, record.clone())?;
    }
    if let Some(timeout) = command.timeout {
        record.timeout = timeout;
        record.deadline = p.now().saturating_add(timeout);
        p.wake_at(record.deadline);
        p.event(key, Intent::TimeoutUpdated, record.clone())?;
        last = Intent::TimeoutUpdated;
    }
    p.respond(key, last, record);
    Ok(())
}

fn check_update(
    command: &UpdateJob,
    key: Key,
    state: JobState,
) -> std::result::Result<(), Rejection> {
    match (command.retries, command.timeout) {
        (None, None) => Err(Rejection::invalid_argument(
            "Expected retries or a timeout to update, but neither was given",
        )),
        (Some(retries), _) if retries < 1 => Err(Rejection::invalid_argument(format!(
            "Expected to update retries for job with key '{key}' with a positive amount of \
             retries, but the amount given was '{retries}'"
        ))),
        (_, Some(timeout)) if timeout < 1 => Err(Rejection::invalid_argument(format!(
            "Expected to update the timeout of job with key '{key}' to at least 1 ms, but it was \
             '{timeout}'"
        ))),
        (_, Some(_)) if state != JobState::Activated => Err(Rejection::invalid_state(format!(
            "Expected to update the timeout of job with key '{key}', but it is in state '{}' \
             (only activated jobs have a timeout)",
            state.name()
        ))),
        _ => Ok(()),
    }
}

pub(super) fn time_out(p: &mut Processing<'_>, key: Key) -> Result<()> {
    let Some(job) = job_for(p, key, Intent::TimeOut, "time out", &[JobState::Activated])? else {
        return Ok(());
    };
    if job.record.deadline > p.now() {
        let rejection = Rejection::invalid_state(format!(
            "Expected to time out job with key '{key}', but its deadline {} has not passed",
            job.record.deadline
        ));
        p.reject(key, Intent::TimeOut, job.record, rejection);
        return Ok(());
    }
    activatable_again(
        p,
        key,
        (Intent::TimeOut, Intent::TimedOut),
        unassigned(job.record),
    )
}

/// An activated job handed back unworked, e.g. pushed to a job stream whose client had
/// gone: activatable again at once, with its retries, and no failure in its history.
pub(super) fn yield_back(p: &mut Processing<'_>, key: Key) -> Result<()> {
    let Some(job) = job_for(p, key, Intent::Yield, "yield", &[JobState::Activated])? else {
        return Ok(());
    };
    activatable_again(
        p,
        key,
        (Intent::Yield, Intent::Yielded),
        unassigned(job.record),
    )
}

pub(super) fn recur(p: &mut Processing<'_>, key: Key) -> Result<()> {
    let Some(job) = job_for(
        p,
        key,
        Intent::RecurAfterBackoff,
        "recur",
        &[JobState::Failed],
    )?
    else {
        return Ok(());
    };
    let r = &job.record;
    if r.retries <= 0 || r.recurring_time < 0 || r.recurring_time > p.now() {
        let rejection = Rejection::invalid_state(format!(
            "Expected to make job with key '{key}' activatable after its back-off, but it is not \
             waiting for a back-off that has passed"
        ));
        p.reject(key, Intent::RecurAfterBackoff, job.record, rejection);
        return Ok(());
    }
    let record = JobRecord {
        recurring_time: -1,
        ..job.record
    };
    activatable_again(
        p,
        key,
        (Intent::RecurAfterBackoff, Intent::RecurredAfterBackoff),
        record,
    )
}

/// An activated job no longer held by its worker: no deadline, no worker.
fn unassigned(job: JobRecord) -> JobRecord {
    JobRecord {
        deadline: -1,
        worker: String::new(),
        ..job
    }
}

/// Writes a command and the event that makes its job activatable again, and tells the
/// job's workers there is work.
fn activatable_again(
    p: &mut Processing<'_>,
    key: Key,
    (command, event): (Intent, Intent),
    record: JobRecord,
) -> Result<()> {
    p.command(key, command, record.clone());
    p.event(key, event, record.clone())?;
    p.notify_jobs_available(&record.job_type);
    p.respond(key, event, record);
    Ok(())
}

#[cfg(test)]
mod tests {
    use rill_protocol::RejectionType;

    use super::*;

    fn update(retries: Option<i32>, timeout: Option<i64>) -> UpdateJob {
        UpdateJob {
            job_key: Key(1),
            retries,
            timeout,
        }
    }

    #[test]
    fn an_update_says_whether_the_argument_or_the_job_state_is_wrong() {
        let kind =
            |command: UpdateJob, state| check_update(&command, Key(1), state).map_err(|r| r.kind);
        assert_eq!(
            kind(update(None, Some(1000)), JobState::Activatable),
            Err(RejectionType::InvalidState)
        );
        assert_eq!(
            kind(update(None, Some(0)), JobState::Activatable),
            Err(RejectionType::InvalidArgument)
        );
        assert_eq!(
            kind(update(Some(0), None), JobState::Activated),
            Err(RejectionType::InvalidArgument)
        );
        assert_eq!(
            kind(update(None, None), JobState::Activated),
            Err(RejectionType::InvalidArgument)
        );
        assert_eq!(
            kind(update(Some(2), Some(1000)), JobState::Activated),
            Ok(())
        );
    }
}
