//! Jobs of job-based elements (service, send and job-worker script tasks, message throw
//! and message end events, job-worker ad-hoc subprocesses) and of execution listeners:
//! created on activation (or when a listener is due), cancelled on termination.

use std::collections::BTreeMap;

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{CalledBinding, JobDefinition, LinkedResource, ValueOrExpr};
use crate::outcome::{Evaluated, Failure};
use rill_protocol::value::{IncidentErrorType, JobKind, JobListenerEventType, JobRecord};
use rill_protocol::{Intent, JsonValue, Key};

/// The custom header in which a service task's job gets the resources it links (Zeebe's
/// name).
pub(crate) const LINKED_RESOURCES_HEADER: &str = "linkedResources";

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
        let mut headers: BTreeMap<String, String> = definition.headers.iter().cloned().collect();
        if !definition.linked_resources.is_empty() {
            let linked = self.resolve_linked_resources(&definition.linked_resources, active)?;
            headers.insert(LINKED_RESOURCES_HEADER.to_owned(), linked);
        }
        Ok(NewJob {
            job_type,
            retries,
            headers,
        })
    }

    /// The `linkedResources` header: each link resolved by its binding to a deployed
    /// resource, as JSON `[{resourceKey, resourceType, linkName}]` (the key as a string,
    /// as in Zeebe). A link that resolves to nothing is a `RESOURCE_NOT_FOUND` failure;
    /// resolving the incident tries again.
    fn resolve_linked_resources(
        &self,
        links: &[LinkedResource],
        active: &Active,
    ) -> Evaluated<String> {
        let mut resolved = Vec::with_capacity(links.len());
        for link in links {
            let key = self.resolve_linked_resource(link, active)?;
            let link_name = if link.link_name.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::Value::String(link.link_name.clone())
            };
            resolved.push(serde_json::json!({
                "resourceKey": key.get().to_string(),
                "resourceType": link.resource_type,
                "linkName": link_name,
            }));
        }
        Ok(serde_json::Value::Array(resolved).to_string())
    }

    fn resolve_linked_resource(&self, link: &LinkedResource, active: &Active) -> Evaluated<Key> {
        let id = &link.resource_id;
        let (found, missing) = match &link.binding {
            CalledBinding::Latest => (
                self.read().latest_resource(id)?.map(|(_, key)| key),
                "no resource with this id is deployed; deploy one".to_owned(),
            ),
            CalledBinding::VersionTag(tag) => (
                self.read().resource_with_version_tag(id, tag)?,
                format!(
                    "no resource with this id has the version tag '{tag}'; deploy one with \
                     that version tag"
                ),
            ),
            CalledBinding::Deployment => {
                let definition = active.record().process_definition_key;
                let deployment = self.read().deployment_of_process(definition)?;
                let found = match deployment {
                    Some(deployment) => self.read().resource_in_deployment(deployment, id)?,
                    None => None,
                };
                let deployment = deployment.map_or(-1, Key::get);
                (
                    found,
                    format!(
                        "the link is bound to the deployment (bindingType 'deployment') and \
                         the deployment {deployment} of the process has no resource with this \
                         id; migrate the instance to a process deployed together with it"
                    ),
                )
            }
        };
        found.ok_or_else(|| {
            Failure::new(
                IncidentErrorType::ResourceNotFound,
                format!(
                    "Expected to link the resource with id '{id}' to the job of {} '{}', but \
                     {missing}, then resolve the incident",
                    active.element().kind.bpmn_name(),
                    active.element().id
                ),
            )
            .into()
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
