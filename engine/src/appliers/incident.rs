//! INCIDENT: open incidents and what resolving one frees.

use rill_protocol::Key;
use rill_protocol::value::{IncidentRecord, JobRecord};

use super::Apply;
use crate::error::{Result, inconsistent};
use crate::state::JobState;

pub(super) fn created(ctx: &mut Apply<'_, '_>, key: Key, value: &IncidentRecord) -> Result<()> {
    ctx.state.put_incident(key, value)
}

pub(super) fn resolved(ctx: &mut Apply<'_, '_>, key: Key, value: &IncidentRecord) -> Result<()> {
    let state = &mut *ctx.state;
    let Some(incident) = state.read().incident(key)? else {
        return Err(inconsistent(format!("incident {key} not found")));
    };
    state.delete_incident(&incident);
    if value.job_key <= 0 {
        super::user_task::listener_incident_resolved(state, value.element_instance_key)?;
    }
    // A job waiting for this incident can be worked on again.
    if value.job_key > 0
        && let Some(job) = state.read().job(value.job_key)?
        && matches!(job.state, JobState::Failed | JobState::ErrorThrown)
        && job.record.retries > 0
    {
        let record = JobRecord {
            recurring_time: -1,
            ..job.record.clone()
        };
        state.put_job(value.job_key, JobState::Activatable, &record, Some(&job))?;
    }
    Ok(())
}
