//! User tasks. A Camunda user task (`zeebe:userTask`) is kept by the engine: on entry
//! its assignment, schedule, priority and form are evaluated, then `USER_TASK CREATING`,
//! `CREATED`, the element's `ELEMENT_ACTIVATED`, and, with an assignee, `ASSIGNING` and
//! `ASSIGNED` (as Zeebe 8.8 assigns after creation). Clients assign, update and complete
//! it with the user-task commands; terminating the element cancels it (`CANCELING`,
//! `CANCELED`). A job-worker user task is a job of type `io.camunda.zeebe:userTask`,
//! worked like a service task's. Either may carry boundary events.

use rill_protocol::value::{BpmnElementType, IncidentErrorType, UserTaskRecord};
use rill_protocol::{Intent, JsonValue, Key};
use serde_json::Value;

use super::service_task::wait_for_new_job;
use super::{ElementBehavior, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{
    CamundaUserTask, CandidateList, ElementKind, FormBinding, FormLink, JobWorkerUserTask,
    UserTaskDefinition, ValueOrExpr,
};
use crate::outcome::{Evaluated, Failure};
use crate::parse::user_task_headers as headers;
use crate::state::UserTaskState;

pub(super) struct UserTask;

impl ElementBehavior for UserTask {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::UserTask(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "userTask").into());
        };
        match definition.as_ref() {
            UserTaskDefinition::Job(task) => {
                let headers = p.job_worker_user_task_headers(task, active)?;
                let job = p.evaluate_job(&task.job, active)?.with_headers(headers);
                wait_for_new_job(p, active, job)
            }
            UserTaskDefinition::Camunda(task) => {
                let record = p.evaluate_user_task(task, active)?;
                p.open_event_triggers(active)?;
                p.create_user_task(record)
            }
        }
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        if p.termination_held(active)? {
            // Terminated before, and its canceling listeners still run: they go on.
            return Ok(());
        }
        let listened = p.cancel_user_task(active)?;
        p.cancel_job(active)?;
        p.close_event_triggers(active)?;
        p.resolve_element_incident(active.key())?;
        if listened {
            // The first canceling listener, once nothing else of the task is left (an
            // incident it raises must not be resolved with the old ones).
            p.next_task_listener(active.instance.job_key)?;
        }
        Ok(())
    }
}

impl Processing<'_> {
    /// Everything a new Camunda user task needs, evaluated before anything is written.
    fn evaluate_user_task(
        &self,
        task: &CamundaUserTask,
        active: &Active,
    ) -> Evaluated<UserTaskRecord> {
        let text = |value: Option<&ValueOrExpr<String>>, what: &str| {
            self.user_task_text(value, active, what)
        };
        let assignee = text(task.assignee.as_ref(), "assignee")?;
        let due_date = date(text(task.due_date.as_ref(), "dueDate")?, active, "dueDate")?;
        let follow_up_date = date(
            text(task.follow_up_date.as_ref(), "followUpDate")?,
            active,
            "followUpDate",
        )?;
        let candidate_groups =
            self.candidates(&task.candidate_groups, active, "candidateGroups")?;
        let candidate_users = self.candidates(&task.candidate_users, active, "candidateUsers")?;
        let priority = match &task.priority {
            None => UserTaskRecord::DEFAULT_PRIORITY,
            Some(ValueOrExpr::Static(priority)) => *priority,
            Some(ValueOrExpr::Expr(expression)) => match self.evaluate_json(expression, active)? {
                Value::Number(n) if n.as_i64().is_some_and(|n| (0..=100).contains(&n)) => {
                    n.as_i64().unwrap_or_default() as i32
                }
                other => {
                    return Err(type_failure(
                        active,
                        "priority",
                        "a whole number from 0 to 100",
                        &other,
                    )
                    .into());
                }
            },
        };
        let (form_key, external_form_reference) = match &task.form {
            None => (-1, String::new()),
            Some(FormLink::External(reference)) => {
                (-1, text(Some(reference), "externalReference")?)
            }
            Some(FormLink::Linked { form_id, binding }) => (
                self.linked_form(form_id, binding, active)?.get(),
                String::new(),
            ),
        };
        let record = active.record();
        Ok(UserTaskRecord {
            user_task_key: -1,
            assignee,
            candidate_groups_list: candidate_groups,
            candidate_users_list: candidate_users,
            due_date,
            follow_up_date,
            form_key,
            external_form_reference,
            variables: JsonValue::empty_object(),
            custom_headers: task.headers.iter().cloned().collect(),
            bpmn_process_id: record.bpmn_process_id.clone(),
            process_definition_version: record.version,
            process_definition_key: record.process_definition_key,
            process_instance_key: record.process_instance_key,
            element_id: record.element_id.clone(),
            element_instance_key: active.key().get(),
            tenant_id: record.tenant_id.clone(),
            changed_attributes: Vec::new(),
            action: String::new(),
            tags: record.tags.clone(),
            creation_timestamp: self.now(),
            priority,
            root_process_instance_key: record.root_process_instance_key,
        })
    }

    /// The `io.camunda.zeebe:*` headers of a job-worker user task's job, evaluated when
    /// the job is created (as Zeebe does): what evaluates to nothing (null, an empty
    /// text) gives no header; candidate lists are JSON lists of strings, a linked form
    /// the key of the form its binding finds. A failure is an incident.
    fn job_worker_user_task_headers(
        &self,
        task: &JobWorkerUserTask,
        active: &Active,
    ) -> Evaluated<Vec<(String, String)>> {
        let mut found = Vec::new();
        let mut put = |name: &str, value: String| {
            if !value.is_empty() {
                found.push((name.to_owned(), value));
            }
        };
        put(
            headers::ASSIGNEE,
            self.user_task_text(task.assignee.as_ref(), active, "assignee")?,
        );
        for (list, name, what) in [
            (
                &task.candidate_groups,
                headers::CANDIDATE_GROUPS,
                "candidateGroups",
            ),
            (
                &task.candidate_users,
                headers::CANDIDATE_USERS,
                "candidateUsers",
            ),
        ] {
            if list.is_some() {
                let items = self.candidates(list, active, what)?;
                put(name, Value::from(items).to_string());
            }
        }
        for (value, name, what) in [
            (&task.due_date, headers::DUE_DATE, "dueDate"),
            (
                &task.follow_up_date,
                headers::FOLLOW_UP_DATE,
                "followUpDate",
            ),
        ] {
            let text = self.user_task_text(value.as_ref(), active, what)?;
            put(name, date(text, active, what)?);
        }
        if let Some((form_id, binding)) = &task.linked_form {
            let key = self.linked_form(form_id, binding, active)?;
            put(headers::FORM_KEY, key.get().to_string());
        }
        Ok(found)
    }

    /// A text value of a user task: static, or FEEL giving a string (null: empty).
    fn user_task_text(
        &self,
        value: Option<&ValueOrExpr<String>>,
        active: &Active,
        what: &str,
    ) -> Evaluated<String> {
        match value {
            None => Ok(String::new()),
            Some(ValueOrExpr::Static(text)) => Ok(text.clone()),
            Some(ValueOrExpr::Expr(expression)) => match self.evaluate_json(expression, active)? {
                Value::Null => Ok(String::new()),
                Value::String(text) => Ok(text),
                other => Err(type_failure(active, what, "a string", &other).into()),
            },
        }
    }

    fn evaluate_json(
        &self,
        expression: &rill_feel::Expression,
        active: &Active,
    ) -> Evaluated<Value> {
        let context = self.context_at(expression, active)?;
        expression
            .evaluate(&context, self.feel_env())
            .map_err(|e| Failure::extract_value(e.to_string()).into())
    }

    fn candidates(
        &self,
        list: &Option<CandidateList>,
        active: &Active,
        what: &str,
    ) -> Evaluated<Vec<String>> {
        let expression = match list {
            None => return Ok(Vec::new()),
            Some(ValueOrExpr::Static(list)) => return Ok(list.clone()),
            Some(ValueOrExpr::Expr(expression)) => expression,
        };
        match self.evaluate_json(expression, active)? {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(items
                .into_iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()),
            other => Err(type_failure(active, what, "a list of strings", &other).into()),
        }
    }

    /// The key of the deployed form a task links, by its binding.
    fn linked_form(&self, form_id: &str, binding: &FormBinding, active: &Active) -> Evaluated<Key> {
        let found = match binding {
            FormBinding::Latest => self.read().latest_form(form_id)?.map(|(_, key)| key),
            FormBinding::Deployment => {
                match self
                    .read()
                    .deployment_of_process(active.record().process_definition_key)?
                {
                    Some(deployment) => self.read().form_in_deployment(deployment, form_id)?,
                    None => None,
                }
            }
            FormBinding::VersionTag(tag) => {
                let mut found = None;
                for key in self.read().form_versions(form_id)?.into_iter().rev() {
                    if self
                        .read()
                        .form(key)?
                        .is_some_and(|form| &form.version_tag == tag)
                    {
                        found = Some(key);
                        break;
                    }
                }
                found
            }
        };
        found.ok_or_else(|| {
            let how = match binding {
                FormBinding::Latest => "".to_owned(),
                FormBinding::Deployment => " in the deployment of the process".to_owned(),
                FormBinding::VersionTag(tag) => format!(" with version tag '{tag}'"),
            };
            Failure::new(
                IncidentErrorType::FormNotFound,
                format!(
                    "Expected to find a form with id '{form_id}'{how} for user task '{}', but \
                     none is deployed; deploy the form and resolve the incident",
                    active.element().id
                ),
            )
            .into()
        })
    }

    /// Writes the new task's CREATING (with the model's assignee, assigned once it is
    /// created); its creating listeners run, then it is CREATED and the element
    /// ELEMENT_ACTIVATED.
    fn create_user_task(&mut self, mut record: UserTaskRecord) -> Evaluated {
        let key = self.next_key()?;
        record.user_task_key = key.get();
        self.event(key, Intent::Creating, record)?;
        Ok(self.next_task_listener(key)?)
    }

    /// Cancels the Camunda user task of a terminated element, if it has one (and the
    /// listener job its transition waits for): CANCELING, then CANCELED at once, or,
    /// when the task has `canceling` listeners, true: they run first and the element's
    /// termination waits for them.
    fn cancel_user_task(&mut self, active: &Active) -> Result<bool> {
        let key = active.instance.job_key;
        if key.is_none() {
            return Ok(false);
        }
        let Some(task) = self.read().user_task(key)? else {
            return Ok(false);
        };
        self.cancel_task_listener_job(&task)?;
        self.event(key, Intent::Canceling, task.record.clone())?;
        let listened = matches!(
            &active.element().kind,
            ElementKind::UserTask(definition) if matches!(
                definition.as_ref(),
                UserTaskDefinition::Camunda(task) if !task.listeners.canceling.is_empty()
            )
        );
        if listened {
            return Ok(true);
        }
        self.event(key, Intent::Canceled, task.record)?;
        Ok(false)
    }

    /// Whether the termination of `active` waits for the canceling listeners of its user
    /// task (the task is CANCELING until the last one completed).
    pub(crate) fn termination_held(&self, active: &Active) -> Result<bool> {
        if active.record().bpmn_element_type != BpmnElementType::UserTask {
            return Ok(false);
        }
        let key = active.instance.job_key;
        if key.get() <= 0 {
            return Ok(false);
        }
        Ok(self
            .read()
            .user_task(key)?
            .is_some_and(|task| task.state == UserTaskState::Canceling))
    }
}

/// An evaluated date must be an ISO 8601 date-time (FEEL date-times come out as one).
fn date(text: String, active: &Active, what: &str) -> Evaluated<String> {
    if text.is_empty() {
        return Ok(text);
    }
    match rill_feel::temporal::parse_date_time(&text) {
        Ok(_) => Ok(text),
        Err(error) => Err(Failure::extract_value(format!(
            "Expected the {what} of user task '{}' to be an ISO 8601 date-time with an offset, \
             but it was '{text}': {}",
            active.element().id,
            error.reason()
        ))
        .into()),
    }
}

fn type_failure(active: &Active, what: &str, expected: &str, actual: &Value) -> Failure {
    Failure::extract_value(format!(
        "Expected the {what} of user task '{}' to be {expected}, but it was '{actual}'",
        active.element().id
    ))
}
