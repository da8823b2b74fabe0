//! What tasks run: called elements, decisions, scripts, jobs, linked resources, user
//! tasks and their forms.

use super::*;

/// `zeebe:calledElement`: which process a call activity starts and which variables
/// cross between the two instances.
#[derive(Debug)]
pub struct CalledElement {
    /// The called BPMN process id, evaluated on entry.
    pub process_id: ValueOrExpr<String>,
    pub binding: CalledBinding,
    /// Without output mappings: whether the child's variables propagate from the call
    /// activity when the child completes (default true). With output mappings the
    /// mappings decide.
    pub propagate_all_child_variables: bool,
    /// Whether the child starts with every variable visible at the call activity
    /// (default true), or only with the call activity's locals (its input mappings).
    pub propagate_all_parent_variables: bool,
}

/// `bindingType`: which version of the called process a call activity starts (or of
/// the decision a business rule task evaluates, or of a resource a service task links).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalledBinding {
    /// The latest version when the element is entered (the default).
    Latest,
    /// The version deployed in the same deployment as the process.
    Deployment,
    /// The latest version whose `zeebe:versionTag` is this tag.
    VersionTag(String),
}

/// How a business rule task runs.
#[derive(Debug)]
pub enum BusinessRuleDefinition {
    /// `zeebe:calledDecision`: the engine evaluates the decision and its output becomes
    /// `result_variable`.
    Decision {
        decision_id: ValueOrExpr<String>,
        result_variable: String,
        binding: CalledBinding,
    },
    /// `zeebe:taskDefinition`: a job for a worker, as a service task.
    Job(JobDefinition),
}

/// How a script task runs.
#[derive(Debug)]
pub enum ScriptDefinition {
    /// `zeebe:script`: the engine evaluates `expression` and the result becomes the
    /// variable `result_variable`, merged as a job's variables are.
    Expression {
        expression: Expression,
        result_variable: String,
    },
    /// `zeebe:taskDefinition`: a job for a worker, as a service task.
    Job(JobDefinition),
}

/// `zeebe:taskDefinition` plus `zeebe:taskHeaders` (headers in document order).
#[derive(Debug)]
pub struct JobDefinition {
    pub job_type: ValueOrExpr<String>,
    /// Defaults to 3, as in Zeebe.
    pub retries: ValueOrExpr<i32>,
    pub headers: Vec<(String, String)>,
    /// A service task's `zeebe:linkedResources`: deployed resources (RPA scripts) its
    /// job gets in the `linkedResources` header. Empty for every other job.
    pub linked_resources: Vec<LinkedResource>,
}

/// One `zeebe:linkedResource`: a deployed resource (an RPA script) a service task's job
/// is given, resolved by its binding when the job is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedResource {
    /// The resource's `id` (taken as written: Zeebe 8.8 does not evaluate it).
    pub resource_id: String,
    /// What the worker takes it for (`RPA`); handed out as written.
    pub resource_type: String,
    /// What the worker knows it by (`RPAScript`); may be empty.
    pub link_name: String,
    pub binding: CalledBinding,
}

/// A user task's definition (boxed as a whole in [`ElementKind::UserTask`]).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum UserTaskDefinition {
    /// No `zeebe:userTask`: a job of type `io.camunda.zeebe:userTask` whose headers
    /// carry the assignment, schedule and form (as in Zeebe).
    Job(JobWorkerUserTask),
    /// `zeebe:userTask`: the engine keeps the task and clients work it through the
    /// user-task commands.
    Camunda(CamundaUserTask),
}

/// A job-worker user task (Zeebe's): the job, whose static headers hold the model's
/// `zeebe:taskHeaders` and the `formKey` and `priority`, and the values evaluated when
/// the job is created into Zeebe's `io.camunda.zeebe:*` headers.
#[derive(Debug)]
pub struct JobWorkerUserTask {
    /// Type `io.camunda.zeebe:userTask`, one retry (as in Zeebe).
    pub job: JobDefinition,
    pub assignee: Option<ValueOrExpr<String>>,
    pub candidate_groups: Option<CandidateList>,
    pub candidate_users: Option<CandidateList>,
    /// ISO 8601 date-times (checked at deploy when static).
    pub due_date: Option<ValueOrExpr<String>>,
    pub follow_up_date: Option<ValueOrExpr<String>>,
    /// `zeebe:formDefinition formId`: the key of the form found by the binding when the
    /// job is created becomes the `io.camunda.zeebe:formKey` header.
    pub linked_form: Option<(String, FormBinding)>,
}

/// A candidate list: comma-separated in the model, or FEEL giving a list of strings.
pub type CandidateList = ValueOrExpr<Vec<String>>;

/// The properties of a Camunda user task; `None` where the model sets nothing.
#[derive(Debug, Default)]
pub struct CamundaUserTask {
    pub assignee: Option<ValueOrExpr<String>>,
    pub candidate_groups: Option<CandidateList>,
    pub candidate_users: Option<CandidateList>,
    /// ISO 8601 date-times (checked at deploy when static).
    pub due_date: Option<ValueOrExpr<String>>,
    pub follow_up_date: Option<ValueOrExpr<String>>,
    /// 0 to 100; the task's priority is 50 without one.
    pub priority: Option<ValueOrExpr<i32>>,
    pub form: Option<FormLink>,
    pub headers: Vec<(String, String)>,
    /// `zeebe:taskListeners`: jobs each lifecycle transition waits for.
    pub listeners: TaskListeners,
}

/// `zeebe:taskListeners` of a Camunda user task, each a job (type and retries), by the
/// event they run at, in document order.
#[derive(Debug, Default)]
pub struct TaskListeners {
    pub creating: Vec<JobDefinition>,
    pub assigning: Vec<JobDefinition>,
    pub updating: Vec<JobDefinition>,
    pub completing: Vec<JobDefinition>,
    /// Run while the task is canceled (its element terminated): the termination waits.
    pub canceling: Vec<JobDefinition>,
}

impl TaskListeners {
    /// The listeners run at `event` (none for an event that has no task listeners).
    pub fn of(&self, event: rill_protocol::value::JobListenerEventType) -> &[JobDefinition] {
        use rill_protocol::value::JobListenerEventType as Event;
        match event {
            Event::Creating => &self.creating,
            Event::Assigning => &self.assigning,
            Event::Updating => &self.updating,
            Event::Completing => &self.completing,
            Event::Canceling => &self.canceling,
            _ => &[],
        }
    }
}

/// The form a user task shows.
#[derive(Debug)]
pub enum FormLink {
    /// A deployed form by its id (`zeebe:formDefinition formId`), picked by binding.
    Linked {
        form_id: String,
        binding: FormBinding,
    },
    /// A form outside Camunda (`externalReference`): a URL or key for the task list.
    External(ValueOrExpr<String>),
}

/// The form of a process's none start event (a start form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartForm {
    /// A deployed form by its id (`formId`), with the binding as written (Camunda's API
    /// serves its latest version).
    Linked {
        form_id: String,
        binding: FormBinding,
    },
    /// An embedded (`camunda-forms:bpmn:…`) or custom form key (`formKey`), for task
    /// lists that read the model.
    Key(String),
}

/// Which version of a linked form a task gets (Zeebe's `bindingType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormBinding {
    /// The latest version when the task is created.
    Latest,
    /// The version deployed with the process (by the same deployment).
    Deployment,
    /// The newest version with this `versionTag`.
    VersionTag(String),
}
