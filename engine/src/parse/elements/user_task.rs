//! `bpmn:userTask`: a Camunda user task (`zeebe:userTask`) with its assignment,
//! schedule, priority and form, or, without `zeebe:userTask`, a job-worker user task
//! (a job of type `io.camunda.zeebe:userTask` whose headers carry the same things, as
//! in Zeebe).

use rill_feel::temporal::parse_date_time;
use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{
    CamundaUserTask, CandidateList, ElementKind, FormBinding, FormLink, JobDefinition,
    JobWorkerUserTask, StartForm, TaskListeners, UserTaskDefinition, ValueOrExpr,
};
use crate::parse::extensions::Extensions;
use crate::parse::process::Builder;
use crate::parse::values;

/// The job type of a job-worker user task (Zeebe's).
pub const USER_TASK_JOB_TYPE: &str = "io.camunda.zeebe:userTask";

/// The retries of a job-worker user task's job (Zeebe creates it with one).
const JOB_WORKER_USER_TASK_RETRIES: i32 = 1;

/// The form of a job-worker user task.
enum JobWorkerForm {
    /// `formKey`: an embedded (`camunda-forms:bpmn:…`) or custom form key, a header as is.
    Key(String),
    /// `formId` with its binding: resolved to a deployed form's key when the job is created.
    Linked(String, FormBinding),
}

/// Headers of a job-worker user task's job (Zeebe's names).
pub mod headers {
    pub const ASSIGNEE: &str = "io.camunda.zeebe:assignee";
    pub const CANDIDATE_GROUPS: &str = "io.camunda.zeebe:candidateGroups";
    pub const CANDIDATE_USERS: &str = "io.camunda.zeebe:candidateUsers";
    pub const DUE_DATE: &str = "io.camunda.zeebe:dueDate";
    pub const FOLLOW_UP_DATE: &str = "io.camunda.zeebe:followUpDate";
    pub const FORM_KEY: &str = "io.camunda.zeebe:formKey";
    pub const PRIORITY: &str = "io.camunda.zeebe:priority";
    /// Task listener jobs only.
    pub const ACTION: &str = "io.camunda.zeebe:action";
    pub const CHANGED_ATTRIBUTES: &str = "io.camunda.zeebe:changedAttributes";
    pub const USER_TASK_KEY: &str = "io.camunda.zeebe:userTaskKey";
}

pub(super) struct UserTask;

impl ElementParser for UserTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.user_task(at.id, at.node, &at.extensions)
    }

    fn is_activity(&self) -> bool {
        true
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    fn user_task(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        // Headers are read as for any job (`zeebe:taskHeaders`).
        let job = self.job(id, node, extensions, None);
        let definition = if extensions.user_task.is_some() {
            UserTaskDefinition::Camunda(self.camunda_user_task(id, extensions, job.headers))
        } else {
            if let Some(listeners) = extensions.task_listeners {
                self.problem(
                    Some(id),
                    listeners,
                    "zeebe:taskListeners need a Camunda user task: add zeebe:userTask (a \
                     job-worker user task has no task lifecycle to listen to)"
                        .to_owned(),
                );
            }
            UserTaskDefinition::Job(self.job_worker_user_task(id, extensions, job.headers))
        };
        ElementKind::UserTask(Box::new(definition))
    }

    fn camunda_user_task(
        &mut self,
        id: &str,
        extensions: &Extensions<'a, 'input>,
        headers: Vec<(String, String)>,
    ) -> CamundaUserTask {
        let mut task = CamundaUserTask {
            headers,
            ..CamundaUserTask::default()
        };
        let assignment = extensions.assignment;
        if let Some(raw) = attr(assignment, "assignee") {
            task.assignee = self.checked(id, assignment, values::string_or_expr("assignee", raw));
        }
        if let Some(raw) = attr(assignment, "candidateGroups") {
            task.candidate_groups =
                self.checked(id, assignment, candidates("candidateGroups", raw));
        }
        if let Some(raw) = attr(assignment, "candidateUsers") {
            task.candidate_users = self.checked(id, assignment, candidates("candidateUsers", raw));
        }
        let schedule = extensions.schedule;
        if let Some(raw) = attr(schedule, "dueDate") {
            task.due_date = self.checked(id, schedule, date("dueDate", raw));
        }
        if let Some(raw) = attr(schedule, "followUpDate") {
            task.follow_up_date = self.checked(id, schedule, date("followUpDate", raw));
        }
        let priority = extensions.priority;
        if let Some(raw) = attr(priority, "priority") {
            task.priority = self.checked(id, priority, priority_value(raw));
        }
        if let Some(form) = extensions.form {
            task.form = self.form_link(id, form);
        }
        if let Some(listeners) = extensions.task_listeners {
            task.listeners = self.task_listeners(id, listeners);
        }
        task
    }

    /// Reads `zeebe:taskListeners`: each `zeebe:taskListener` is a job (a `type`, static
    /// or `=`FEEL, and `retries`, default 3) run at its `eventType`. Zeebe 8.8's names
    /// and the older ones it still reads (`create`, `assignment`, `update`, `complete`)
    /// are accepted.
    fn task_listeners(&mut self, id: &str, container: Node<'a, 'input>) -> TaskListeners {
        let mut listeners = TaskListeners::default();
        for node in container.children().filter(|n| n.is_element()) {
            let name = node.tag_name().name();
            if node.tag_name().namespace() != Some(crate::parse::document::ZEEBE_NS)
                || name != "taskListener"
            {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "'{name}' is not expected in zeebe:taskListeners (only zeebe:taskListener)"
                    ),
                );
                continue;
            }
            let event = node.attribute("eventType").map(str::trim).unwrap_or("");
            let into = match event {
                "creating" | "create" => &mut listeners.creating,
                "assigning" | "assignment" => &mut listeners.assigning,
                "updating" | "update" => &mut listeners.updating,
                "completing" | "complete" => &mut listeners.completing,
                "canceling" | "cancel" => &mut listeners.canceling,
                _ => {
                    self.problem(
                        Some(id),
                        node,
                        format!(
                            "a task listener's eventType must be 'creating', 'assigning', \
                             'updating', 'completing' or 'canceling', not '{event}'"
                        ),
                    );
                    continue;
                }
            };
            let raw_type = node.attribute("type").map(str::trim).unwrap_or("");
            if raw_type.is_empty() {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "a {event} task listener has no type; set the job type that workers \
                         subscribe to"
                    ),
                );
                continue;
            }
            if let Some(child) = node.children().find(|n| n.is_element()) {
                // Nothing inside a task listener runs: refused rather than dropped.
                let name = child.tag_name().name();
                self.problem(
                    Some(id),
                    child,
                    format!(
                        "'{name}' inside a zeebe:taskListener is not supported; a task listener \
                         takes only its attributes (eventType, type, retries)"
                    ),
                );
                continue;
            }
            let job = self.listener_job(id, node, raw_type);
            into.push(job);
        }
        listeners
    }

    /// `zeebe:formDefinition` of a Camunda user task: `formId` (with `bindingType` and,
    /// for `versionTag`, a `versionTag`) or `externalReference`, exactly one.
    fn form_link(&mut self, id: &str, form: Node<'a, 'input>) -> Option<FormLink> {
        let form_id = attr(Some(form), "formId");
        let external = attr(Some(form), "externalReference");
        if attr(Some(form), "formKey").is_some() {
            // Zeebe 8.8 refuses a formKey alone here ("exactly one of formId,
            // externalReference") and ignores one beside them; Rill refuses both.
            self.problem(
                Some(id),
                form,
                "zeebe:formDefinition formKey is not used by a Camunda user task \
                 (zeebe:userTask): exactly one of the attributes 'formId, externalReference' \
                 must be present and not blank for native user tasks; a formKey (an embedded \
                 or custom form key) belongs to a job-worker user task"
                    .to_owned(),
            );
            return None;
        }
        match (form_id, external) {
            (Some(_), Some(_)) => {
                self.problem(
                    Some(id),
                    form,
                    "zeebe:formDefinition has both formId and externalReference; keep one"
                        .to_owned(),
                );
                None
            }
            (None, None) => {
                self.problem(
                    Some(id),
                    form,
                    "zeebe:formDefinition names no form; set formId (a deployed form) or \
                     externalReference"
                        .to_owned(),
                );
                None
            }
            (None, Some(raw)) => {
                let reference = values::string_or_expr("externalReference", raw);
                self.checked(id, Some(form), reference)
                    .map(FormLink::External)
            }
            (Some(form_id), None) => {
                let binding = self.form_binding(id, form)?;
                let form_id = self.static_form_id(id, form, form_id)?;
                Some(FormLink::Linked { form_id, binding })
            }
        }
    }

    /// A job-worker user task: a job of Zeebe's type with one retry (as Zeebe creates
    /// it). Its priority and form key are static headers; its assignment, schedule and
    /// linked form (static or FEEL) are evaluated when the job is created, as in Zeebe.
    fn job_worker_user_task(
        &mut self,
        id: &str,
        extensions: &Extensions<'a, 'input>,
        mut headers: Vec<(String, String)>,
    ) -> JobWorkerUserTask {
        let mut task = JobWorkerUserTask {
            job: JobDefinition {
                job_type: ValueOrExpr::Static(USER_TASK_JOB_TYPE.to_owned()),
                retries: ValueOrExpr::Static(JOB_WORKER_USER_TASK_RETRIES),
                headers: Vec::new(),
                linked_resources: Vec::new(),
            },
            assignee: None,
            candidate_groups: None,
            candidate_users: None,
            due_date: None,
            follow_up_date: None,
            linked_form: None,
        };
        let assignment = extensions.assignment;
        if let Some(raw) = attr(assignment, "assignee") {
            task.assignee = self.checked(id, assignment, values::string_or_expr("assignee", raw));
        }
        if let Some(raw) = attr(assignment, "candidateGroups") {
            task.candidate_groups =
                self.checked(id, assignment, candidates("candidateGroups", raw));
        }
        if let Some(raw) = attr(assignment, "candidateUsers") {
            task.candidate_users = self.checked(id, assignment, candidates("candidateUsers", raw));
        }
        let schedule = extensions.schedule;
        if let Some(raw) = attr(schedule, "dueDate") {
            task.due_date = self.checked(id, schedule, date("dueDate", raw));
        }
        if let Some(raw) = attr(schedule, "followUpDate") {
            task.follow_up_date = self.checked(id, schedule, date("followUpDate", raw));
        }
        if let Some(node) = extensions.priority
            && let Some(raw) = attr(Some(node), "priority")
        {
            if raw.starts_with('=') {
                self.problem(
                    Some(id),
                    node,
                    "priority is an expression; a job-worker user task takes a static priority \
                     (a header of its job); add zeebe:userTask to make it a Camunda user task, \
                     which evaluates it"
                        .to_owned(),
                );
            } else if let Some(ValueOrExpr::Static(priority)) =
                self.checked(id, Some(node), priority_value(raw))
            {
                headers.push((headers::PRIORITY.to_owned(), priority.to_string()));
            }
        }
        if let Some(form) = extensions.form {
            match self.job_worker_form(id, form) {
                Some(JobWorkerForm::Key(form_key)) => {
                    headers.push((headers::FORM_KEY.to_owned(), form_key));
                }
                Some(JobWorkerForm::Linked(form_id, binding)) => {
                    task.linked_form = Some((form_id, binding));
                }
                None => {}
            }
        }
        task.job.headers = headers;
        task
    }

    /// `zeebe:formDefinition` of the process's none start event (a start form): as on a
    /// job-worker user task, exactly one of `formKey` and `formId` (Zeebe validates both
    /// the same way).
    pub(in crate::parse) fn start_form(
        &mut self,
        id: &str,
        form: Node<'a, 'input>,
    ) -> Option<StartForm> {
        Some(match self.job_worker_form(id, form)? {
            JobWorkerForm::Key(form_key) => StartForm::Key(form_key),
            JobWorkerForm::Linked(form_id, binding) => StartForm::Linked { form_id, binding },
        })
    }

    /// `zeebe:formDefinition` of a job-worker user task: exactly one of `formKey` (an
    /// embedded or custom form key, static) and `formId` (a deployed form, with its
    /// binding), as Zeebe validates.
    fn job_worker_form(&mut self, id: &str, form: Node<'a, 'input>) -> Option<JobWorkerForm> {
        if attr(Some(form), "externalReference").is_some() {
            self.problem(
                Some(id),
                form,
                "zeebe:formDefinition externalReference needs a Camunda user task \
                 (zeebe:userTask); here link a deployed form (formId) or set a formKey"
                    .to_owned(),
            );
            return None;
        }
        match (attr(Some(form), "formKey"), attr(Some(form), "formId")) {
            (Some(_), Some(_)) | (None, None) => {
                self.problem(
                    Some(id),
                    form,
                    "zeebe:formDefinition: exactly one of the attributes 'formId, formKey' \
                     must be present and not blank (for a job-worker user task or a start \
                     form)"
                        .to_owned(),
                );
                None
            }
            (Some(form_key), None) => {
                if form.attribute("bindingType").is_some() {
                    self.problem(
                        Some(id),
                        form,
                        "zeebe:formDefinition: attribute 'formKey' must not be used in \
                         combination with attribute 'bindingType'"
                            .to_owned(),
                    );
                    return None;
                }
                Some(JobWorkerForm::Key(form_key.to_owned()))
            }
            (None, Some(form_id)) => {
                let binding = self.form_binding(id, form)?;
                let form_id = self.static_form_id(id, form, form_id)?;
                Some(JobWorkerForm::Linked(form_id, binding))
            }
        }
    }

    /// A linked form's `bindingType`: `latest` (the default), `deployment` or
    /// `versionTag` with its `versionTag` attribute.
    pub(in crate::parse) fn form_binding(
        &mut self,
        id: &str,
        form: Node<'a, 'input>,
    ) -> Option<FormBinding> {
        match attr(Some(form), "bindingType").unwrap_or("latest") {
            "latest" => Some(FormBinding::Latest),
            "deployment" => Some(FormBinding::Deployment),
            "versionTag" => match attr(Some(form), "versionTag") {
                Some(tag) => Some(FormBinding::VersionTag(tag.to_owned())),
                None => {
                    self.problem(
                        Some(id),
                        form,
                        "zeebe:formDefinition bindingType=\"versionTag\" needs a versionTag \
                         attribute"
                            .to_owned(),
                    );
                    None
                }
            },
            other => {
                self.problem(
                    Some(id),
                    form,
                    format!(
                        "bindingType '{other}' is not known; use latest, deployment or versionTag"
                    ),
                );
                None
            }
        }
    }

    /// A linked form's `formId`, which must be static.
    pub(in crate::parse) fn static_form_id(
        &mut self,
        id: &str,
        form: Node<'a, 'input>,
        form_id: &str,
    ) -> Option<String> {
        if form_id.starts_with('=') {
            self.problem(
                Some(id),
                form,
                "zeebe:formDefinition formId must be a static form id, not an expression"
                    .to_owned(),
            );
            return None;
        }
        Some(form_id.to_owned())
    }

    /// The value, or `None` with the problem reported at `node`.
    fn checked<T>(
        &mut self,
        id: &str,
        node: Option<Node<'a, 'input>>,
        value: Result<T, String>,
    ) -> Option<T> {
        match value {
            Ok(value) => Some(value),
            Err(message) => {
                if let Some(node) = node {
                    self.problem(Some(id), node, message);
                }
                None
            }
        }
    }
}

/// A non-empty attribute of an optional extension element.
fn attr<'n>(node: Option<Node<'n, '_>>, name: &str) -> Option<&'n str> {
    let value = node?.attribute(name)?.trim();
    (!value.is_empty()).then_some(value)
}

/// `a, b ,c` as `["a", "b", "c"]`.
fn split_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn candidates(field: &str, raw: &str) -> Result<CandidateList, String> {
    match raw.strip_prefix('=') {
        Some(source) => values::expression(field, source).map(ValueOrExpr::Expr),
        None => Ok(ValueOrExpr::Static(split_list(raw))),
    }
}

/// A static date must be an ISO 8601 date-time with an offset.
fn date(field: &str, raw: &str) -> Result<ValueOrExpr<String>, String> {
    let value = values::string_or_expr(field, raw)?;
    if let ValueOrExpr::Static(text) = &value {
        parse_date_time(text).map_err(|error| {
            format!(
                "{field} '{text}' is not an ISO 8601 date-time with an offset (e.g. \
                 2026-12-31T17:00:00Z): {}",
                error.reason()
            )
        })?;
    }
    Ok(value)
}

fn priority_value(raw: &str) -> Result<ValueOrExpr<i32>, String> {
    if let Some(source) = raw.strip_prefix('=') {
        return values::expression("priority", source).map(ValueOrExpr::Expr);
    }
    match raw.parse::<i32>() {
        Ok(priority) if (0..=100).contains(&priority) => Ok(ValueOrExpr::Static(priority)),
        _ => Err(format!(
            "priority '{raw}' is not a whole number from 0 to 100 (or an expression starting \
             with '=')"
        )),
    }
}
