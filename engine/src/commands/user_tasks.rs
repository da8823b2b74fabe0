//! USER_TASK commands from clients: assign (or claim), update, complete. Each checks
//! that the task exists and is not in the middle of another transition, then writes the
//! command and its `…ING` event; the transition's task listeners run, then its `…ED`
//! event is written and the client answered with it (at once without listeners).
//! Completing completes the task's element with the client's variables, as a job
//! completion does.

use rill_feel::temporal::parse_date_time;
use rill_protocol::value::UserTaskRecord;
use rill_protocol::{Intent, JsonValue, Key, UserTaskChanges, UserTaskCommand};

use super::variables_map;
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;
use crate::state::{StoredUserTask, UserTaskState};

/// A placeholder record for rejections of commands on tasks that do not exist.
pub(super) fn unknown_user_task(key: Key) -> UserTaskRecord {
    UserTaskRecord {
        user_task_key: key.get(),
        assignee: String::new(),
        candidate_groups_list: Vec::new(),
        candidate_users_list: Vec::new(),
        due_date: String::new(),
        follow_up_date: String::new(),
        form_key: -1,
        external_form_reference: String::new(),
        variables: JsonValue::empty_object(),
        custom_headers: Default::default(),
        bpmn_process_id: String::new(),
        process_definition_version: -1,
        process_definition_key: -1,
        process_instance_key: -1,
        element_id: String::new(),
        element_instance_key: -1,
        tenant_id: super::tenant(),
        changed_attributes: Vec::new(),
        action: String::new(),
        creation_timestamp: -1,
        priority: UserTaskRecord::DEFAULT_PRIORITY,
        root_process_instance_key: -1,
        tags: Vec::new(),
    }
}

pub(super) fn process(p: &mut Processing<'_>, command: &UserTaskCommand) -> Result<()> {
    let key = command.user_task_key();
    let intent = command.intent();
    let verb = match intent {
        Intent::Claim => "claim",
        Intent::Assign => "assign",
        Intent::Update => "update",
        _ => "complete",
    };
    let task = p.read().user_task(key)?;
    let task = match check_task(task, key, verb) {
        Ok(task) => task,
        Err(rejected) => {
            let (rejection, record) = *rejected;
            p.reject(key, intent, record, rejection);
            return Ok(());
        }
    };
    match command {
        UserTaskCommand::Assign {
            assignee,
            action,
            allow_override,
            ..
        } => assign(p, key, task, assignee, action, *allow_override, intent),
        UserTaskCommand::Update {
            changes, action, ..
        } => update(p, key, task, changes, action),
        UserTaskCommand::Complete {
            variables, action, ..
        } => complete(p, key, task, variables, action),
    }
}

fn check_task(
    task: Option<StoredUserTask>,
    key: Key,
    verb: &str,
) -> std::result::Result<StoredUserTask, Box<(Rejection, UserTaskRecord)>> {
    let Some(task) = task else {
        return Err(Box::new((
            Rejection::not_found(format!(
                "Expected to {verb} user task with key '{key}', but no such user task was found"
            )),
            unknown_user_task(key),
        )));
    };
    if task.state != UserTaskState::Created {
        return Err(Box::new((
            Rejection::invalid_state(format!(
                "Expected to {verb} user task with key '{key}', but it is in state '{}'",
                task.state.name()
            )),
            task.record,
        )));
    }
    Ok(task)
}

fn action_or(action: &str, default: &str) -> String {
    if action.is_empty() {
        default.to_owned()
    } else {
        action.to_owned()
    }
}

fn assign(
    p: &mut Processing<'_>,
    key: Key,
    task: StoredUserTask,
    assignee: &str,
    action: &str,
    allow_override: bool,
    intent: Intent,
) -> Result<()> {
    let current = &task.record.assignee;
    if !allow_override && !current.is_empty() && current != assignee {
        let rejection = Rejection::invalid_state(format!(
            "Expected to claim user task with key '{key}', but it has already been assigned"
        ));
        p.reject(key, intent, task.record, rejection);
        return Ok(());
    }
    let default = match (intent, assignee.is_empty()) {
        (_, true) => "unassign",
        (Intent::Claim, false) => "claim",
        _ => "assign",
    };
    let record = UserTaskRecord {
        assignee: assignee.to_owned(),
        action: action_or(action, default),
        changed_attributes: vec![UserTaskRecord::ASSIGNEE.to_owned()],
        ..task.record
    };
    p.command(key, intent, record.clone());
    // As in Zeebe 8.8, a claim begins with CLAIMING; both end with ASSIGNED.
    let beginning = if intent == Intent::Claim {
        Intent::Claiming
    } else {
        Intent::Assigning
    };
    p.event(key, beginning, record)?;
    p.await_transition(key);
    p.next_task_listener(key)
}

fn update(
    p: &mut Processing<'_>,
    key: Key,
    task: StoredUserTask,
    changes: &UserTaskChanges,
    action: &str,
) -> Result<()> {
    if let Err(rejection) = check_changes(changes, key) {
        p.reject(key, Intent::Update, task.record, rejection);
        return Ok(());
    }
    let mut record = UserTaskRecord {
        action: action_or(action, "update"),
        changed_attributes: Vec::new(),
        ..task.record
    };
    let mut names = Vec::new();
    if let Some(groups) = &changes.candidate_groups {
        record.candidate_groups_list = groups.clone();
        names.push(UserTaskRecord::CANDIDATE_GROUPS);
    }
    if let Some(users) = &changes.candidate_users {
        record.candidate_users_list = users.clone();
        names.push(UserTaskRecord::CANDIDATE_USERS);
    }
    if let Some(due) = &changes.due_date {
        record.due_date = due.clone();
        names.push(UserTaskRecord::DUE_DATE);
    }
    if let Some(follow_up) = &changes.follow_up_date {
        record.follow_up_date = follow_up.clone();
        names.push(UserTaskRecord::FOLLOW_UP_DATE);
    }
    if let Some(priority) = changes.priority {
        record.priority = priority;
        names.push(UserTaskRecord::PRIORITY);
    }
    record.changed_attributes = names.into_iter().map(str::to_owned).collect();
    p.command(key, Intent::Update, record.clone());
    p.event(key, Intent::Updating, record)?;
    p.await_transition(key);
    p.next_task_listener(key)
}

fn check_changes(changes: &UserTaskChanges, key: Key) -> std::result::Result<(), Rejection> {
    if let Some(priority) = changes.priority
        && !(0..=100).contains(&priority)
    {
        return Err(Rejection::invalid_argument(format!(
            "Expected the priority of user task with key '{key}' to be from 0 to 100, but it \
             was {priority}"
        )));
    }
    for (name, value) in [
        ("dueDate", &changes.due_date),
        ("followUpDate", &changes.follow_up_date),
    ] {
        if let Some(text) = value
            && !text.is_empty()
            && let Err(error) = parse_date_time(text)
        {
            return Err(Rejection::invalid_argument(format!(
                "Expected the {name} of user task with key '{key}' to be an ISO 8601 date-time \
                 with an offset, but it was '{text}': {}",
                error.reason()
            )));
        }
    }
    Ok(())
}

fn complete(
    p: &mut Processing<'_>,
    key: Key,
    task: StoredUserTask,
    variables: &JsonValue,
    action: &str,
) -> Result<()> {
    match variables_map(variables, "the user task's variables") {
        Ok(_) => {}
        Err(rejection) => {
            p.reject(key, Intent::Complete, task.record, rejection);
            return Ok(());
        }
    };
    let record = UserTaskRecord {
        variables: variables.clone(),
        action: action_or(action, "complete"),
        changed_attributes: Vec::new(),
        ..task.record
    };
    p.command(key, Intent::Complete, record.clone());
    p.event(key, Intent::Completing, record)?;
    p.await_transition(key);
    p.next_task_listener(key)
}
