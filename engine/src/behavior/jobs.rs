//! Jobs of job-based elements (service, send and job-worker script tasks, message throw
//! and message end events, job-worker ad-hoc subprocesses) and of execution listeners:
//! created on activation (or when a listener is due), cancelled on termination.

use std::collections::BTreeMap;

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{JobDefinition, ValueOrExpr};
use crate::outcome::{Evaluated, Failure};
use rill_protocol::value::{JobKind, JobListenerEventType, JobRecord};
use rill_protocol::{Intent, JsonValue};

/// A job's type and retries, evaluated, and its custom headers (the definition's
/// `zeebe:taskHeaders` and what an element adds, such as a job-worker user task's).
pub(crate) struct NewJob {
    job_type: String,
    retries: i32,
    headers: BTreeMap<String, String>,
}

impl NewJob {
    /// Adds headers; one of the definition's with the same key is replaced (as Zeebe's
    /// user task headers replace a model header of the same name).
    pub(crate) fn with_headers(
        mut self,
        headers: impl IntoIterator<Item = (String, String)>,
    ) -> NewJob {
        self.headers.extend(headers);
        self
    }
}

impl Processing<'_> {
    pub fn evaluate_job(&self, definition: &JobDefinition, active: &Active) -> Evaluated<NewJob> {
        let job_type = self.evaluate_string(&definition.job_type, active)?;
        if job_type.is_empty() {
            return Err(Failure::extract_value(format!(
                "Expected the job type of {} '{}' not to be empty",
                active.element().kind.bpmn_name(),
                active.element().id
            ))
            .into());
        }
        let retries = match &definition.retries {
            ValueOrExpr::Static(retries) => *retries,
            ValueOrExpr::Expr(expression) => {
                let context = self.context_at(expression, active)?;
                let n = expression
                    .evaluate_integer(&context, self.feel_env())
                    .map_err(|e| {
                        Failure::extract_value(format!(
                            "Expected the retries of {} '{}' to be a whole number: {e}",
                            active.element().kind.bpmn_name(),
                            active.element().id
                        ))
                    })?;
                n.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
            }
        };
        let headers = definition.headers.iter().cloned().collect();
        Ok(NewJob {
            job_type,
            retries,
            headers,
        })
    }

    pub fn create_job(&mut self, active: &Active, job: NewJob) -> Result<()> {
        self.write_job(
            active,
            job,
            JobKind::BpmnElement,
            JobListenerEventType::Unspecified,
        )
    }

    /// Creates the job of an execution listener of `active`.
    pub fn create_listener_job(
        &mut self,
        active: &Active,
        job: NewJob,
        event: JobListenerEventType,
    ) -> Result<()> {
        self.write_job(active, job, JobKind::ExecutionListener, event)
    }

    /// Creates the job of an ad-hoc subprocess's job-worker implementation, with the
    /// headers of its `zeebe:taskHeaders`.
    pub fn create_ad_hoc_job(&mut self, active: &Active, job: NewJob) -> Result<()> {
        self.write_job(
            active,
            job,
            JobKind::AdHocSubProcess,
            JobListenerEventType::Unspecified,
        )
    }

    /// Creates the job of a user task listener, with the task's values in its headers.
    pub fn create_task_listener_job(
        &mut self,
        active: &Active,
        mut job: NewJob,
        headers: BTreeMap<String, String>,
        event: JobListenerEventType,
    ) -> Result<()> {
        job.headers = headers;
        self.write_job(active, job, JobKind::TaskListener, event)
    }

    fn write_job(
        &mut self,
        active: &Active,
        job: NewJob,
        job_kind: JobKind,
        job_listener_event_type: JobListenerEventType,
    ) -> Result<()> {
        let record = active.record();
        let value = JobRecord {
            job_type: job.job_type,
            element_id: record.element_id.clone(),
            element_instance_key: active.key().get(),
            bpmn_process_id: record.bpmn_process_id.clone(),
            process_definition_version: record.version,
            process_definition_key: record.process_definition_key,
            process_instance_key: record.process_instance_key,
            worker: String::new(),
            retries: job.retries,
            retry_backoff: 0,
            recurring_time: -1,
            deadline: -1,
            timeout: -1,
            error_message: String::new(),
            error_code: String::new(),
            custom_headers: job.headers,
            variables: JsonValue::empty_object(),
            tenant_id: record.tenant_id.clone(),
            job_kind,
            job_listener_event_type,
            result: Default::default(),
            root_process_instance_key: record.root_process_instance_key,
            tags: record.tags.clone(),
        };
        let key = self.next_key()?;
        self.notify_jobs_available(&value.job_type);
        self.event(key, Intent::Created, value)
    }

    /// Cancels the job of a terminated task, and resolves its incident.
    pub fn cancel_job(&mut self, active: &Active) -> Result<()> {
        let job_key = active.instance.job_key;
        if job_key.is_none() {
            return Ok(());
        }
        if let Some(incident_key) = self.read().incident_of_job(job_key)?
            && let Some(incident) = self.read().incident(incident_key)?
        {
            self.event(incident_key, Intent::Resolved, incident.record)?;
        }
        if let Some(job) = self.read().job(job_key)? {
            self.event(job_key, Intent::Canceled, job.record)?;
        }
        Ok(())
    }
}
