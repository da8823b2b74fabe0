//! JOB and JOB_BATCH commands: activate, complete, fail, throw error, update, and the
//! leader's time-outs and back-off recurrences.

use rill_protocol::value::{JobBatchRecord, JobRecord};
use rill_protocol::{
    ActivateJobs, CommandResponse, FailJob, Intent, JsonValue, Key, RecordValue, RejectionType,
    ThrowError, UpdateJob,
};
use serde_json::{Map, Value};

use super::variables_document;
use crate::error::Result;
use crate::processing::Processing;
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
    }
}

/// Looks a job up for a command; rejects (and returns `None`) when it does not exist
/// or is not in one of `allowed` states.
fn job_for(
    p: &mut Processing<'_>,
    key: i64,
    intent: Intent,
    action: &str,
    allowed: &[JobState],
) -> Result<Option<StoredJob>> {
    match p.read().job(key)? {
        None => {
            p.reject(
                key,
                intent,
                unknown_job(),
                RejectionType::NotFound,
                format!("Expected to {action} job with key '{key}', but no such job was found"),
            );
            Ok(None)
        }
        Some(job) if !allowed.contains(&job.state) => {
            let reason = format!(
                "Expected to {action} job with key '{key}', but it is in state '{}'",
                job.state.name()
            );
            p.reject(key, intent, job.record, RejectionType::InvalidState, reason);
            Ok(None)
        }
        Some(job) => Ok(Some(job)),
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

/// Why an activation request is refused, if it is.
fn invalid_activation(command: &ActivateJobs) -> Option<String> {
    if command.job_type.is_empty() {
        Some("Expected to activate jobs of a non-empty type, but the type is empty".to_owned())
    } else if command.max_jobs < 1 {
        Some(format!(
            "Expected to activate at least one job (maxJobsToActivate >= 1), but it was {}",
            command.max_jobs
        ))
    } else if command.timeout < 1 {
        Some(format!(
            "Expected an activation timeout of at least 1 ms, but it was {}",
            command.timeout
        ))
    } else {
        None
    }
}

/// The answer to an activation that would find no job, for the leader to give without a
/// log entry (long-polling workers send many of these). `None` when the command must go
/// through the log: jobs of the type may be there, or it is invalid and earns a rejection.
pub(super) fn nothing_to_activate(
    reader: Reader<'_>,
    command: &ActivateJobs,
) -> Result<Option<CommandResponse>> {
    if invalid_activation(command).is_some()
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
    if let Some(reason) = invalid_activation(command) {
        p.reject(
            -1,
            Intent::Activate,
            batch,
            RejectionType::InvalidArgument,
            reason,
        );
        return Ok(());
    }
    p.command(-1, Intent::Activate, batch.clone());
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
        let variables = if command.fetch_variables.is_empty() {
            p.all_variables(record.process_instance_key, &chain)?
        } else {
            p.variables_named(
                record.process_instance_key,
                &chain,
                &command.fetch_variables,
            )?
        };
        // Keep a batch within Zeebe's default maximum message size; the rest stay
        // activatable for the next request.
        let size = if variables.is_empty() {
            0
        } else {
            serde_json::to_vec(&variables).map_or(0, |v| v.len())
        };
        if !batch.jobs.is_empty() && batch_bytes + size > MAX_BATCH_BYTES {
            batch.truncated = true;
            break;
        }
        batch_bytes += size;
        batch.job_keys.push(key);
        batch.jobs.push(JobRecord {
            worker: command.worker.clone(),
            deadline,
            timeout: command.timeout,
            variables: JsonValue(Value::Object(variables)),
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

pub(super) fn complete(p: &mut Processing<'_>, key: i64, variables: &JsonValue) -> Result<()> {
    let Some(job) = job_for(p, key, Intent::Complete, "complete", WORKABLE)? else {
        return Ok(());
    };
    let document = match variables_document(variables, "the job's variables") {
        Ok(document) => document,
        Err(reason) => {
            p.reject(
                key,
                Intent::Complete,
                job.record,
                RejectionType::InvalidArgument,
                reason,
            );
            return Ok(());
        }
    };
    let record = JobRecord {
        variables: variables.clone(),
        ..job.record
    };
    p.command(key, Intent::Complete, record.clone());
    p.event(key, Intent::Completed, record.clone())?;
    p.respond(key, Intent::Completed, record.clone());
    p.complete_with(record.element_instance_key, Some(document))
}

pub(super) fn fail(p: &mut Processing<'_>, command: &FailJob) -> Result<()> {
    let key = command.job_key.get();
    let Some(job) = job_for(p, key, Intent::Fail, "fail", WORKABLE)? else {
        return Ok(());
    };
    let problem = if command.retries < 0 {
        Some(format!(
            "Expected the remaining retries of job with key '{key}' to be 0 or more, but it was {}",
            command.retries
        ))
    } else if command.retry_backoff < 0 {
        Some(format!(
            "Expected the retry back-off of job with key '{key}' to be 0 or more ms, but it was {}",
            command.retry_backoff
        ))
    } else {
        None
    };
    let document = match variables_document(&command.variables, "the job's variables") {
        Ok(document) => document,
        Err(reason) => {
            p.reject(
                key,
                Intent::Fail,
                job.record,
                RejectionType::InvalidArgument,
                reason,
            );
            return Ok(());
        }
    };
    if let Some(reason) = problem {
        p.reject(
            key,
            Intent::Fail,
            job.record,
            RejectionType::InvalidArgument,
            reason,
        );
        return Ok(());
    }
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
        p.raise_incident(
            &task.record,
            task.key,
            rill_protocol::value::IncidentErrorType::JobNoRetries,
            message,
            key,
        )?;
    } else if backoff {
        p.wake_at(record.recurring_time);
    } else {
        p.notify_jobs_available(&record.job_type);
    }
    Ok(())
}

pub(super) fn throw_error(p: &mut Processing<'_>, command: &ThrowError) -> Result<()> {
    let key = command.job_key.get();
    let Some(job) = job_for(p, key, Intent::ThrowError, "throw an error for", WORKABLE)? else {
        return Ok(());
    };
    let document = match variables_document(&command.variables, "the error's variables") {
        Ok(document) => document,
        Err(reason) => {
            p.reject(
                key,
                Intent::ThrowError,
                job.record,
                RejectionType::InvalidArgument,
                reason,
            );
            return Ok(());
        }
    };
    if command.error_code.is_empty() {
        p.reject(
            key,
            Intent::ThrowError,
            job.record,
            RejectionType::InvalidArgument,
            format!("Expected to throw an error for job with key '{key}' with an error code, but it was empty"),
        );
        return Ok(());
    }
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
    let Some(task) = p.active(record.element_instance_key)? else {
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

pub(super) fn update(p: &mut Processing<'_>, command: &UpdateJob) -> Result<()> {
    let key = command.job_key.get();
    let intent = match (command.retries, command.timeout) {
        (Some(_), Some(_)) => Intent::Update,
        (Some(_), None) => Intent::UpdateRetries,
        (None, _) => Intent::UpdateTimeout,
    };
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
    let problem = match (command.retries, command.timeout) {
        (None, None) => {
            Some("Expected retries or a timeout to update, but neither was given".to_owned())
        }
        (Some(retries), _) if retries < 1 => Some(format!(
            "Expected to update retries for job with key '{key}' with a positive amount of \
             retries, but the amount given was '{retries}'"
        )),
        (_, Some(timeout)) if timeout < 1 => Some(format!(
            "Expected to update the timeout of job with key '{key}' to at least 1 ms, but it was \
             '{timeout}'"
        )),
        (_, Some(_)) if job.state != JobState::Activated => Some(format!(
            "Expected to update the timeout of job with key '{key}', but it is in state '{}' \
             (only activated jobs have a timeout)",
            job.state.name()
        )),
        _ => None,
    };
    if let Some(reason) = problem {
        let rejection_type = if reason.contains("in state") {
            RejectionType::InvalidState
        } else {
            RejectionType::InvalidArgument
        };
        p.reject(key, intent, job.record, rejection_type, reason);
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

pub(super) fn time_out(p: &mut Processing<'_>, key: i64) -> Result<()> {
    let Some(job) = job_for(p, key, Intent::TimeOut, "time out", &[JobState::Activated])? else {
        return Ok(());
    };
    if job.record.deadline > p.now() {
        let reason = format!(
            "Expected to time out job with key '{key}', but its deadline {} has not passed",
            job.record.deadline
        );
        p.reject(
            key,
            Intent::TimeOut,
            job.record,
            RejectionType::InvalidState,
            reason,
        );
        return Ok(());
    }
    let record = JobRecord {
        deadline: -1,
        worker: String::new(),
        ..job.record
    };
    p.command(key, Intent::TimeOut, record.clone());
    p.event(key, Intent::TimedOut, record.clone())?;
    p.notify_jobs_available(&record.job_type);
    p.respond(key, Intent::TimedOut, record);
    Ok(())
}

pub(super) fn recur(p: &mut Processing<'_>, key: i64) -> Result<()> {
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
        let reason = format!(
            "Expected to make job with key '{key}' activatable after its back-off, but it is not \
             waiting for a back-off that has passed"
        );
        p.reject(
            key,
            Intent::RecurAfterBackoff,
            job.record,
            RejectionType::InvalidState,
            reason,
        );
        return Ok(());
    }
    let record = JobRecord {
        recurring_time: -1,
        ..job.record
    };
    p.command(key, Intent::RecurAfterBackoff, record.clone());
    p.event(key, Intent::RecurredAfterBackoff, record.clone())?;
    p.notify_jobs_available(&record.job_type);
    p.respond(key, Intent::RecurredAfterBackoff, record);
    Ok(())
}
