//! Send task: as in Zeebe, a job for a worker that sends the message; it behaves
//! exactly as a service task (waits for the job, may carry boundary events).

use rill_protocol::Intent;

use super::{ElementBehavior, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct SendTask;

impl ElementBehavior for SendTask {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::SendTask(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "sendTask").into());
        };
        let job = p.evaluate_job(definition, active)?;
        p.arm_boundary_timers(active)?;
        p.create_job(active, job)?;
        p.mark(active, Intent::ElementActivated)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_boundary_timers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_job(active)?;
        p.cancel_boundary_timers(active)?;
        p.resolve_element_incident(active.key())
    }
}
