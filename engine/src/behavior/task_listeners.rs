//! User task listeners (`zeebe:taskListeners`): jobs a Camunda user task's transition
//! (creating, assigning, updating, completing, canceling) waits for, run one after the
//! other in model order. Canceling holds up the termination of the task's element (see
//! `Processing::terminate`); its listeners may neither deny nor correct. The transition's `…ING` event starts it; each listener's job sees the
//! task as the transition would leave it (in its headers), and its worker may correct
//! fields (a `CORRECTED` event) or deny the transition (`…_DENIED`: the task stays as
//! it was). When the last listener completed, the transition ends as it would have
//! without listeners (`CREATED`, `ASSIGNED`, `UPDATED`, `COMPLETED`), and a client
//! waiting for it hears the outcome. The state of a transition is kept with the task
//! ([`ListenerTransition`]).

use std::collections::BTreeMap;

use rill_engine_api::Action;
use rill_protocol::value::{
    JobListenerEventType, JobRecord, JobResult, JobResultCorrections, UserTaskRecord,
};
use rill_protocol::{CommandResponse, Intent, Key, RecordValue, RejectionType};

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{CamundaUserTask, ElementKind, UserTaskDefinition};
use crate::outcome::{Halt, Rejection};
use crate::parse::user_task_headers as headers;
use crate::state::{ListenerTransition, StoredUserTask};

/// The Camunda user task definition of an element, if it is one.
fn camunda_task(active: &Active) -> Option<&CamundaUserTask> {
    match &active.element().kind {
        ElementKind::UserTask(definition) => match definition.as_ref() {
            UserTaskDefinition::Camunda(task) => Some(task),
            UserTaskDefinition::Job(_) => None,
        },
        _ => None,
    }
}

/// The attributes whose values differ between two records (Zeebe's names).
fn differences(before: &UserTaskRecord, after: &UserTaskRecord) -> Vec<&'static str> {
    let mut names = Vec::new();
    if before.assignee != after.assignee {
        names.push(UserTaskRecord::ASSIGNEE);
    }
    if before.candidate_groups_list != after.candidate_groups_list {
        names.push(UserTaskRecord::CANDIDATE_GROUPS);
    }
    if before.candidate_users_list != after.candidate_users_list {
        names.push(UserTaskRecord::CANDIDATE_USERS);
    }
    if before.due_date != after.due_date {
        names.push(UserTaskRecord::DUE_DATE);
    }
    if before.follow_up_date != after.follow_up_date {
        names.push(UserTaskRecord::FOLLOW_UP_DATE);
    }
    if before.priority != after.priority {
        names.push(UserTaskRecord::PRIORITY);
    }
    names
}

/// What the transition changes so far: its own changes, and those corrections that left
/// a value different from the task's (a correction back to the old value is no change).
fn changed_attributes(task: &StoredUserTask, transition: &ListenerTransition) -> Vec<String> {
    let corrected = differences(&task.record, &transition.record);
    let mut names: Vec<String> = transition.changed.clone();
    for name in corrected {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// The user-task values a listener's job carries in its headers (Zeebe's names; empty
/// values are left out).
fn listener_headers(
    model_headers: &[(String, String)],
    record: &UserTaskRecord,
    changed: &[String],
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = model_headers.iter().cloned().collect();
    let list = |items: &[String]| serde_json::to_string(items).unwrap_or_default();
    let mut put = |name: &str, value: String| {
        if !value.is_empty() {
            out.insert(name.to_owned(), value);
        }
    };
    put(headers::ACTION, record.action.clone());
    put(headers::ASSIGNEE, record.assignee.clone());
    if !record.candidate_groups_list.is_empty() {
        put(
            headers::CANDIDATE_GROUPS,
            list(&record.candidate_groups_list),
        );
    }
    if !record.candidate_users_list.is_empty() {
        put(headers::CANDIDATE_USERS, list(&record.candidate_users_list));
    }
    put(headers::CHANGED_ATTRIBUTES, list(changed));
    put(headers::DUE_DATE, record.due_date.clone());
    put(headers::FOLLOW_UP_DATE, record.follow_up_date.clone());
    if record.form_key > 0 {
        put(headers::FORM_KEY, record.form_key.to_string());
    }
    put(headers::PRIORITY, record.priority.to_string());
    put(headers::USER_TASK_KEY, record.user_task_key.to_string());
    out
}

/// Whether a listener of `event` may deny its transition (creation may not, as in
/// Zeebe).
fn may_deny(event: JobListenerEventType) -> bool {
    matches!(
        event,
        JobListenerEventType::Assigning
            | JobListenerEventType::Updating
            | JobListenerEventType::Completing
    )
}

/// Checks a task listener's job result against the transition it is for: a denial only
/// where the event may be denied, corrections only of known attributes with valid
/// values, and an assignee only in creating when the model gave none.
pub(crate) fn check_result(
    result: &JobResult,
    job: &JobRecord,
    transition: Option<&ListenerTransition>,
    key: Key,
) -> std::result::Result<(), Rejection> {
    let event = job.job_listener_event_type;
    if result.denied && !may_deny(event) {
        return Err(Rejection::invalid_argument(format!(
            "Expected to complete task listener job with key '{key}' with a denial, but a \
             {} listener cannot deny its transition (only assigning, updating and completing \
             listeners can)",
            event.name().to_lowercase()
        )));
    }
    if !result.denied && !result.denied_reason.is_empty() {
        return Err(Rejection::invalid_argument(format!(
            "Expected a denied reason only with a denial, but job with key '{key}' was \
             completed with the reason '{}' and denied false",
            result.denied_reason
        )));
    }
    if event == JobListenerEventType::Canceling && !result.corrected_attributes.is_empty() {
        // The task is going away: there is nothing left to correct.
        return Err(Rejection::invalid_argument(format!(
            "Expected to complete task listener job with key '{key}' without corrections, \
             but a canceling listener cannot correct the user task (it corrected {:?})",
            result.corrected_attributes
        )));
    }
    for name in &result.corrected_attributes {
        let known = [
            UserTaskRecord::ASSIGNEE,
            UserTaskRecord::CANDIDATE_GROUPS,
            UserTaskRecord::CANDIDATE_USERS,
            UserTaskRecord::DUE_DATE,
            UserTaskRecord::FOLLOW_UP_DATE,
            UserTaskRecord::PRIORITY,
        ];
        if !known.contains(&name.as_str()) {
            return Err(Rejection::invalid_argument(format!(
                "Expected to correct the user task attributes {known:?} of job with key \
                 '{key}', but '{name}' is not one of them"
            )));
        }
    }
    let corrects = |name: &str| result.corrected_attributes.iter().any(|n| n == name);
    let corrections = &result.corrections;
    if corrects(UserTaskRecord::PRIORITY) && !(0..=100).contains(&corrections.priority) {
        return Err(Rejection::invalid_argument(format!(
            "Expected the corrected priority of job with key '{key}' to be from 0 to 100, but \
             it was {}",
            corrections.priority
        )));
    }
    for (name, value) in [
        (UserTaskRecord::DUE_DATE, &corrections.due_date),
        (UserTaskRecord::FOLLOW_UP_DATE, &corrections.follow_up_date),
    ] {
        if corrects(name)
            && !value.is_empty()
            && let Err(error) = rill_feel::temporal::parse_date_time(value)
        {
            return Err(Rejection::invalid_argument(format!(
                "Expected the corrected {name} of job with key '{key}' to be an ISO 8601 \
                 date-time with an offset, but it was '{value}': {}",
                error.reason()
            )));
        }
    }
    if event == JobListenerEventType::Creating
        && corrects(UserTaskRecord::ASSIGNEE)
        && let Some(transition) = transition
        && !transition.initial_assignee.is_empty()
    {
        return Err(Rejection::invalid_argument(format!(
            "Expected to correct the assignee of the user task in a creating listener (job \
             with key '{key}'), but the process assigns it to '{}'; correct it in an \
             assigning listener instead",
            transition.initial_assignee
        )));
    }
    Ok(())
}

/// `record` with the corrections named in `attributes` applied.
fn corrected(
    mut record: UserTaskRecord,
    attributes: &[String],
    corrections: &JobResultCorrections,
) -> UserTaskRecord {
    for name in attributes {
        match name.as_str() {
            UserTaskRecord::ASSIGNEE => record.assignee = corrections.assignee.clone(),
            UserTaskRecord::CANDIDATE_GROUPS => {
                record.candidate_groups_list = corrections.candidate_groups_list.clone()
            }
            UserTaskRecord::CANDIDATE_USERS => {
                record.candidate_users_list = corrections.candidate_users_list.clone()
            }
            UserTaskRecord::DUE_DATE => record.due_date = corrections.due_date.clone(),
            UserTaskRecord::FOLLOW_UP_DATE => {
                record.follow_up_date = corrections.follow_up_date.clone()
            }
            UserTaskRecord::PRIORITY => record.priority = corrections.priority,
            _ => {}
        }
    }
    record
}

impl Processing<'_> {
    /// A client's user-task command started a transition: its answer waits until the
    /// transition ends.
    pub(crate) fn await_transition(&mut self, task_key: Key) {
        self.started_transition = Some(task_key);
        if let Some(request) = self.ctx.request {
            self.task_requests.insert(task_key, request);
        }
    }

    /// Answers the client waiting for the transition of `task_key`: in this command's
    /// response when this command started it, else the request held for it.
    fn answer_transition(&mut self, task_key: Key, response: CommandResponse) {
        let request = self.task_requests.remove(&task_key);
        if self.started_transition == Some(task_key) {
            self.out.response = Some(response);
        } else if let Some(request) = request {
            self.out.actions.push(Action::Respond { request, response });
        }
    }

    /// Runs the next listener of the transition under way on `task_key`, or ends the
    /// transition when all of them ran. A listener whose type or retries cannot be
    /// evaluated raises an incident on the element; resolving it runs the transition's
    /// listeners again.
    pub(crate) fn next_task_listener(&mut self, task_key: Key) -> Result<()> {
        let Some(task) = self.read().user_task(task_key)? else {
            return Ok(());
        };
        let Some(transition) = task.transition.clone() else {
            return Ok(());
        };
        let Some(active) = self.active(Key(task.record.element_instance_key))? else {
            return Ok(());
        };
        let Some(definition) = camunda_task(&active) else {
            return Ok(());
        };
        let listeners = definition.listeners.of(transition.event);
        let Some(listener) = listeners.get(transition.listeners_done as usize) else {
            return self.end_transition(task_key, task, transition, &active);
        };
        match self.evaluate_job(listener, &active) {
            Ok(job) => {
                let changed = changed_attributes(&task, &transition);
                let headers = listener_headers(&definition.headers, &transition.record, &changed);
                self.create_task_listener_job(&active, job, headers, transition.event)
            }
            Err(Halt::Failed(failure)) => self.raise_incident(
                active.record(),
                active.key(),
                failure.error_type,
                failure.message,
                Key::NONE,
            ),
            Err(Halt::Error(error)) => Err(error),
        }
    }

    /// A task listener's job completed (its JOB COMPLETED is written): the transition is
    /// denied, or takes the corrections and goes on with the next listener.
    pub(crate) fn task_listener_completed(&mut self, job: &JobRecord) -> Result<()> {
        let task_key = match self.read().element_instance(job.element_instance_key)? {
            Some(instance) => instance.job_key,
            None => return Ok(()),
        };
        let Some(task) = self.read().user_task(task_key)? else {
            return Ok(());
        };
        let Some(transition) = task.transition.clone() else {
            return Ok(());
        };
        if job.result.denied {
            return self.deny_transition(task_key, task, &transition, &job.result.denied_reason);
        }
        if !job.result.corrected_attributes.is_empty() {
            let record = corrected(
                transition.record.clone(),
                &job.result.corrected_attributes,
                &job.result.corrections,
            );
            let record = UserTaskRecord {
                changed_attributes: job.result.corrected_attributes.clone(),
                ..record
            };
            self.event(task_key, Intent::Corrected, record)?;
        }
        self.next_task_listener(task_key)
    }

    /// Every listener of the transition ran: it ends as it would without listeners.
    fn end_transition(
        &mut self,
        task_key: Key,
        task: StoredUserTask,
        transition: ListenerTransition,
        active: &Active,
    ) -> Result<()> {
        let record = UserTaskRecord {
            changed_attributes: changed_attributes(&task, &transition),
            ..transition.record
        };
        match transition.event {
            JobListenerEventType::Creating => {
                let record = UserTaskRecord {
                    changed_attributes: Vec::new(),
                    ..record
                };
                self.event(task_key, Intent::Created, record.clone())?;
                self.mark(active, Intent::ElementActivated)?;
                if !transition.initial_assignee.is_empty() {
                    let assigning = UserTaskRecord {
                        assignee: transition.initial_assignee,
                        changed_attributes: vec![UserTaskRecord::ASSIGNEE.to_owned()],
                        ..record
                    };
                    self.event(task_key, Intent::Assigning, assigning)?;
                    return self.next_task_listener(task_key);
                }
                Ok(())
            }
            JobListenerEventType::Assigning => {
                self.event(task_key, Intent::Assigned, record.clone())?;
                self.answer_transition(task_key, accepted(task_key, Intent::Assigned, record));
                Ok(())
            }
            JobListenerEventType::Updating => {
                self.event(task_key, Intent::Updated, record.clone())?;
                self.answer_transition(task_key, accepted(task_key, Intent::Updated, record));
                Ok(())
            }
            JobListenerEventType::Completing => {
                let variables = record.variables.to_object().unwrap_or_default();
                self.event(task_key, Intent::Completed, record.clone())?;
                self.answer_transition(task_key, accepted(task_key, Intent::Completed, record));
                self.complete_with(active.key(), Some(variables))
            }
            JobListenerEventType::Canceling => {
                self.event(task_key, Intent::Canceled, task.record)?;
                self.resume_termination(active.key())
            }
            _ => Ok(()),
        }
    }

    /// A listener denied the transition: the task is as it was before it, and the client
    /// that asked for it hears why.
    fn deny_transition(
        &mut self,
        task_key: Key,
        task: StoredUserTask,
        transition: &ListenerTransition,
        reason: &str,
    ) -> Result<()> {
        let (intent, what) = match transition.event {
            JobListenerEventType::Assigning => (Intent::AssignmentDenied, "Assignment"),
            JobListenerEventType::Updating => (Intent::UpdateDenied, "Update"),
            _ => (Intent::CompletionDenied, "Completion"),
        };
        self.event(task_key, intent, task.record)?;
        let rejection = rill_protocol::Rejection::new(
            RejectionType::InvalidState,
            format!(
                "{what} of the user task with key '{task_key}' was denied by a task listener; \
                 reason: '{reason}'"
            ),
        );
        self.answer_transition(task_key, CommandResponse::Rejected(rejection));
        Ok(())
    }

    /// The task of a terminated element is canceled: a listener job it waits for is
    /// canceled with it (and its incident resolved), and a waiting client hears it.
    pub(crate) fn cancel_task_listener_job(&mut self, task: &StoredUserTask) -> Result<()> {
        let Some(transition) = &task.transition else {
            return Ok(());
        };
        let job_key = transition.listener_job;
        if job_key.get() > 0 {
            if let Some(incident_key) = self.read().incident_of_job(job_key)?
                && let Some(incident) = self.read().incident(incident_key)?
            {
                self.event(incident_key, Intent::Resolved, incident.record)?;
            }
            if let Some(job) = self.read().job(job_key)? {
                self.event(job_key, Intent::Canceled, job.record)?;
            }
        }
        let task_key = Key(task.record.user_task_key);
        let rejection = rill_protocol::Rejection::new(
            RejectionType::InvalidState,
            format!(
                "Expected the user task with key '{task_key}' to finish its {} transition, but \
                 it was canceled",
                transition.event.name().to_lowercase()
            ),
        );
        self.answer_transition(task_key, CommandResponse::Rejected(rejection));
        Ok(())
    }
}

fn accepted(key: Key, intent: Intent, record: UserTaskRecord) -> CommandResponse {
    CommandResponse::Accepted {
        key,
        intent,
        value: RecordValue::UserTask(record),
    }
}
