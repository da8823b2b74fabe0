//! Execution listeners (`zeebe:executionListeners`): jobs that run one after the other
//! before an element's own work (start listeners, after its input mappings) and before
//! it is left (end listeners, after its output mappings). The element waits in
//! ELEMENT_ACTIVATING or ELEMENT_COMPLETING meanwhile; the next listener's job is
//! created when the previous one completes. Which one is next comes from the element
//! instance's count of completed listener jobs (`listeners_done`, kept by the JOB
//! COMPLETED applier), start listeners counted first.

use rill_protocol::Key;
use rill_protocol::value::{JobListenerEventType, JobRecord};
use serde_json::{Map, Value};

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::JobDefinition;
use crate::outcome::Evaluated;
use crate::state::ElementState;

/// The listeners of `event` that `active` runs: none for a multi-instance body (its
/// inner instances run the element's listeners, as in Zeebe).
fn listeners_of(active: &Active, event: JobListenerEventType) -> &[JobDefinition] {
    if active.is_multi_instance_body() {
        return &[];
    }
    let listeners = &active.element().listeners;
    match event {
        JobListenerEventType::Start => &listeners.start,
        JobListenerEventType::End => &listeners.end,
        _ => &[],
    }
}

impl Processing<'_> {
    /// Creates the job of the next listener of `event` that has not run yet on `active`;
    /// `false` when all of them ran (the element goes on). A type or retries expression
    /// that fails is a failure: the element keeps its state and the same listener is
    /// tried again when the incident is resolved.
    pub(crate) fn next_listener(
        &mut self,
        active: &Active,
        event: JobListenerEventType,
    ) -> Evaluated<bool> {
        let listeners = listeners_of(active, event);
        if listeners.is_empty() {
            return Ok(false);
        }
        let mut done = active.instance.listeners_done as usize;
        if event == JobListenerEventType::End {
            // Every start listener completed before the element was activated.
            done = done.saturating_sub(listeners_of(active, JobListenerEventType::Start).len());
        }
        let Some(listener) = listeners.get(done) else {
            return Ok(false);
        };
        let job = self.evaluate_job(listener, active)?;
        self.create_listener_job(active, job, event)?;
        Ok(true)
    }

    /// A listener's job completed (its JOB COMPLETED is written): a start listener's
    /// variables become locals of the element, an end listener's propagate from the
    /// element's flow scope as output mappings do; then the next listener runs, or the
    /// element goes on with its activation or completion.
    pub fn listener_completed(
        &mut self,
        job: &JobRecord,
        variables: Map<String, Value>,
    ) -> Result<()> {
        let key = Key(job.element_instance_key);
        let Some(active) = self.active(key)? else {
            return Ok(());
        };
        match (job.job_listener_event_type, active.instance.state) {
            (JobListenerEventType::Start, ElementState::Activating) => {
                self.set_local_variables(&active.instance, variables)?;
                self.resume_activation_after_listener(key)
            }
            (JobListenerEventType::End, ElementState::Completing) => {
                // The process has no flow scope: its own scope takes them.
                let scope = match active.record().flow_scope_key {
                    scope if scope > 0 => Key(scope),
                    _ => key,
                };
                self.propagate_variables(scope, &active.instance, variables)?;
                self.resume_completion_after_listener(key)
            }
            _ => Ok(()),
        }
    }
}
