//! Service and send tasks: a job for a worker (for a send task, the worker sends the
//! message, as in Zeebe); the task waits for it to be completed (or for an error it
//! throws to be caught). They may carry boundary events.

use rill_protocol::Intent;

use super::{ElementBehavior, Trigger, wrong_kind};
use crate::behavior::jobs::NewJob;
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{ElementKind, JobDefinition};
use crate::outcome::Evaluated;

pub(super) struct ServiceTask;

impl ElementBehavior for ServiceTask {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let (ElementKind::ServiceTask(definition) | ElementKind::SendTask(definition)) =
            &active.element().kind
        else {
            return Err(wrong_kind(active, "serviceTask or sendTask").into());
        };
        wait_for_job(p, active, definition)
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_job(active)?;
        p.close_event_triggers(active)?;
        p.resolve_element_incident(active.key())
    }
}

/// Enters a job-based task: its job, its boundary timers, and `ELEMENT_ACTIVATED`.
pub(super) fn wait_for_job(
    p: &mut Processing<'_>,
    active: &Active,
    definition: &JobDefinition,
) -> Evaluated {
    let job = p.evaluate_job(definition, active)?;
    wait_for_new_job(p, active, job)
}

/// [`wait_for_job`] with the job already evaluated.
pub(super) fn wait_for_new_job(p: &mut Processing<'_>, active: &Active, job: NewJob) -> Evaluated {
    p.open_event_triggers(active)?;
    p.create_job(active, job)?;
    p.mark(active, Intent::ElementActivated)?;
    Ok(())
}
