//! INCIDENT RESOLVE: the incident goes, and the instance carries on where it stopped
//! (a job becomes activatable again; an element's step runs again).

use rill_protocol::Intent;
use rill_protocol::Key;
use rill_protocol::value::{IncidentErrorType, IncidentRecord};

use super::tenant;
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;
use crate::state::ElementState;

pub(super) fn resolve(p: &mut Processing<'_>, key: Key) -> Result<()> {
    let Some(incident) = p.read().incident(key)? else {
        let rejection = Rejection::not_found(format!(
            "Expected to resolve incident with key '{key}', but no such incident was found"
        ));
        p.reject(key, Intent::Resolve, placeholder(), rejection);
        return Ok(());
    };
    let record = incident.record;
    if record.job_key > 0
        && let Some(job) = p.read().job(record.job_key)?
        && job.record.retries <= 0
    {
        let rejection = Rejection::invalid_state(format!(
            "Expected to resolve incident with key '{key}', but job with key '{}' has no \
             retries left; update the job's retries first",
            record.job_key
        ));
        p.reject(key, Intent::Resolve, record, rejection);
        return Ok(());
    }
    p.command(key, Intent::Resolve, record.clone());
    p.event(key, Intent::Resolved, record.clone())?;
    p.respond(key, Intent::Resolved, record.clone());

    if record.job_key > 0 {
        if let Some(job) = p.read().job(record.job_key)? {
            p.notify_jobs_available(&job.record.job_type);
        }
        return Ok(());
    }
    let Some(active) = p.active(Key(record.element_instance_key))? else {
        return Ok(());
    };
    // A user task whose transition waits for its task listeners runs them again.
    if let Some(task) = p.read().user_task(active.instance.job_key)?
        && task.transition.is_some()
    {
        return p.next_task_listener(active.instance.job_key);
    }
    match active.instance.state {
        ElementState::Activating => p.run_activation(active, None),
        ElementState::Completing => p.resume_completion(active),
        ElementState::Activated | ElementState::Terminating => Ok(()),
    }
}

pub(super) fn placeholder() -> IncidentRecord {
    IncidentRecord {
        error_type: IncidentErrorType::Unknown,
        error_message: String::new(),
        bpmn_process_id: String::new(),
        process_definition_key: -1,
        process_instance_key: -1,
        element_id: String::new(),
        element_instance_key: -1,
        job_key: -1,
        variable_scope_key: -1,
        tenant_id: tenant(),
        element_instance_path: Vec::new(),
        process_definition_path: Vec::new(),
        calling_element_path: Vec::new(),
        root_process_instance_key: -1,
    }
}
