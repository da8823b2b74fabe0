//! `bpmn:userTask`: a Camunda user task (`zeebe:userTask`) with its assignment,
//! schedule, priority and form, or, without `zeebe:userTask`, a job-worker user task
//! (a job of type `io.camunda.zeebe:userTask` whose headers carry the same things, as
//! in Zeebe).

use rill_feel::temporal::parse_date_time;
use roxmltree::Node;

use super::process::{Builder, Extensions};
use super::values;
use crate::model::{
    CamundaUserTask, CandidateList, ElementKind, FormBinding, FormLink, JobDefinition,
    TaskListeners, UserTaskDefinition, ValueOrExpr,
};

/// The job type of a job-worker user task (Zeebe's).
pub const USER_TASK_JOB_TYPE: &str = "io.camunda.zeebe:userTask";

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

impl<'a, 'input> Builder<'_, 'a, 'input> {
    pub(super) fn user_task(
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
            if node.tag_name().namespace() != Some(super::document::ZEEBE_NS)
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
                let binding = match attr(Some(form), "bindingType").unwrap_or("latest") {
                    "latest" => FormBinding::Latest,
                    "deployment" => FormBinding::Deployment,
                    "versionTag" => match attr(Some(form), "versionTag") {
                        Some(tag) => FormBinding::VersionTag(tag.to_owned()),
                        None => {
                            self.problem(
                                Some(id),
                                form,
                                "zeebe:formDefinition bindingType=\"versionTag\" needs a \
                                 versionTag attribute"
                                    .to_owned(),
                            );
                            return None;
                        }
                    },
                    other => {
                        self.problem(
                            Some(id),
                            form,
                            format!(
                                "bindingType '{other}' is not known; use latest, deployment or \
                                 versionTag"
                            ),
                        );
                        return None;
                    }
                };
                if form_id.starts_with('=') {
                    self.problem(
                        Some(id),
                        form,
                        "zeebe:formDefinition formId must be a static form id, not an expression"
                            .to_owned(),
                    );
                    return None;
                }
                Some(FormLink::Linked {
                    form_id: form_id.to_owned(),
                    binding,
                })
            }
        }
    }

    /// A job-worker user task: its assignment, schedule, priority and form key go into
    /// the job's headers. Only static values: the headers are fixed at deploy.
    fn job_worker_user_task(
        &mut self,
        id: &str,
        extensions: &Extensions<'a, 'input>,
        mut headers: Vec<(String, String)>,
    ) -> JobDefinition {
        let static_only = |what: &str| {
            format!(
                "{what} is an expression; a job-worker user task takes static values only (its \
                 job headers are fixed at deploy); add zeebe:userTask to make it a Camunda user \
                 task, which evaluates expressions"
            )
        };
        let mut put = |this: &mut Self, node: Option<Node<'a, 'input>>, attribute: &str, header| {
            let Some(raw) = attr(node, attribute) else {
                return;
            };
            if raw.starts_with('=') {
                if let Some(node) = node {
                    this.problem(Some(id), node, static_only(attribute));
                }
                return;
            }
            let value = match attribute {
                "candidateGroups" | "candidateUsers" => {
                    serde_json::Value::from(split_list(raw)).to_string()
                }
                _ => raw.to_owned(),
            };
            headers.push((String::from(header), value));
        };
        put(self, extensions.assignment, "assignee", headers::ASSIGNEE);
        put(
            self,
            extensions.assignment,
            "candidateGroups",
            headers::CANDIDATE_GROUPS,
        );
        put(
            self,
            extensions.assignment,
            "candidateUsers",
            headers::CANDIDATE_USERS,
        );
        put(self, extensions.schedule, "dueDate", headers::DUE_DATE);
        put(
            self,
            extensions.schedule,
            "followUpDate",
            headers::FOLLOW_UP_DATE,
        );
        put(self, extensions.priority, "priority", headers::PRIORITY);
        if let Some(form) = extensions.form {
            if attr(Some(form), "formId").is_some()
                || attr(Some(form), "externalReference").is_some()
            {
                self.problem(
                    Some(id),
                    form,
                    "a linked form (formId) or an externalReference needs a Camunda user task; \
                     add zeebe:userTask, or use formKey on a job-worker user task"
                        .to_owned(),
                );
            } else {
                put(self, Some(form), "formKey", headers::FORM_KEY);
            }
        }
        for (node, what) in [
            (extensions.schedule, "dueDate"),
            (extensions.schedule, "followUpDate"),
        ] {
            if let Some(raw) = attr(node, what)
                && !raw.starts_with('=')
                && let Err(message) = date(what, raw)
                && let Some(node) = node
            {
                self.problem(Some(id), node, message);
            }
        }
        if let Some(raw) = attr(extensions.priority, "priority")
            && !raw.starts_with('=')
            && let Err(message) = priority_value(raw)
            && let Some(node) = extensions.priority
        {
            self.problem(Some(id), node, message);
        }
        JobDefinition {
            job_type: ValueOrExpr::Static(USER_TASK_JOB_TYPE.to_owned()),
            retries: ValueOrExpr::Static(super::process::DEFAULT_RETRIES),
            headers,
        }
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
