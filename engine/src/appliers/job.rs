//! JOB and JOB_BATCH: a job's state and the indexes that find it (activatable by type,
//! deadline, back-off).

use rill_protocol::Key;
use rill_protocol::value::{JobBatchRecord, JobKind, JobRecord};

use super::Apply;
use crate::error::{Result, inconsistent};
use crate::state::{JobState, Writer};

pub(super) fn created(ctx: &mut Apply<'_, '_>, key: Key, value: &JobRecord) -> Result<()> {
    let state = &mut *ctx.state;
    if value.job_kind == JobKind::TaskListener {
        // The element's key slot holds its user task, whose transition notes the job.
        super::user_task::listener_job_created(state, value.element_instance_key, key)?;
    } else {
        state.update_element_instance(value.element_instance_key, |i| i.job_key = key)?;
    }
    state.put_job(key, JobState::Activatable, value, None)
}

/// COMPLETED and CANCELED: the job goes.
pub(super) fn removed(ctx: &mut Apply<'_, '_>, key: Key, value: &JobRecord) -> Result<()> {
    let state = &mut *ctx.state;
    // The record is the job as stored: it tells which indexes hold it.
    state.delete_job_record(key, value);
    state.update_element_instance(value.element_instance_key, |i| {
        if i.job_key == key {
            i.job_key = Key::NONE;
        }
    })?;
    Ok(())
}

/// COMPLETED: the job goes; a listener's element (or user task) counts it as done.
pub(super) fn completed(ctx: &mut Apply<'_, '_>, key: Key, value: &JobRecord) -> Result<()> {
    removed(ctx, key, value)?;
    match value.job_kind {
        JobKind::ExecutionListener => {
            ctx.state
                .update_element_instance(value.element_instance_key, |i| i.listeners_done += 1)?;
        }
        JobKind::TaskListener => {
            super::user_task::listener_job_completed(ctx.state, value.element_instance_key)?
        }
        JobKind::BpmnElement | JobKind::AdHocSubProcess => {}
    }
    Ok(())
}

/// TIMED_OUT and RECURRED_AFTER_BACKOFF.
pub(super) fn activatable_again(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &JobRecord,
) -> Result<()> {
    put(ctx.state, key, value, |_| Ok(JobState::Activatable))
}

pub(super) fn failed(ctx: &mut Apply<'_, '_>, key: Key, value: &JobRecord) -> Result<()> {
    // With retries left and no back-off, a failed job is offered to workers again.
    let new_state = if value.retries > 0 && value.recurring_time < 0 {
        JobState::Activatable
    } else {
        JobState::Failed
    };
    put(ctx.state, key, value, |_| Ok(new_state))
}

pub(super) fn error_thrown(ctx: &mut Apply<'_, '_>, key: Key, value: &JobRecord) -> Result<()> {
    put(ctx.state, key, value, |_| Ok(JobState::ErrorThrown))
}

/// RETRIES_UPDATED and TIMEOUT_UPDATED: the job keeps its state.
pub(super) fn updated(ctx: &mut Apply<'_, '_>, key: Key, value: &JobRecord) -> Result<()> {
    put(ctx.state, key, value, |previous| match previous {
        Some(previous) => Ok(previous.state),
        None => Err(inconsistent(format!("job {key} not found"))),
    })
}

/// Stores the job in the state `new_state` picks from the stored job.
fn put(
    state: &mut Writer<'_>,
    key: Key,
    value: &JobRecord,
    new_state: impl FnOnce(Option<&crate::state::StoredJob>) -> Result<JobState>,
) -> Result<()> {
    let previous = state.read().job(key)?;
    let new_state = new_state(previous.as_ref())?;
    state.put_job(key, new_state, value, previous.as_ref())
}

pub(super) fn batch_activated(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    batch: &JobBatchRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    for (key, value) in batch.job_keys.iter().zip(&batch.jobs) {
        // Only activatable jobs are activated: that is the one index entry to remove.
        state.remove_activatable(*key, &value.job_type);
        state.put_job(*key, JobState::Activated, value, None)?;
    }
    Ok(())
}
