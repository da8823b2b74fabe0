//! User tasks: assign (claim), unassign, update and complete, as commands to the task's
//! partition. Reading them is `reads`.

use rill_protocol::{Command, JsonValue, Key, UserTaskChanges, UserTaskCommand};

use super::{AppState, ClientError, operation};

pub(super) fn not_found(key: Key) -> ClientError {
    ClientError::not_found(format!("User task with key '{key}' not found"))
}

/// Assigns a user task to `assignee`; without `allow_override`, only if it has no
/// assignee yet (a claim).
pub async fn assign_user_task(
    state: &AppState,
    user_task_key: Key,
    assignee: String,
    action: String,
    allow_override: bool,
) -> Result<(), ClientError> {
    let command = UserTaskCommand::Assign {
        user_task_key,
        assignee,
        action,
        allow_override,
    };
    operation(
        "AssignUserTask",
        Some(user_task_key),
        submit(state, command),
    )
    .await
}

/// Removes a user task's assignee.
pub async fn unassign_user_task(
    state: &AppState,
    user_task_key: Key,
    action: String,
) -> Result<(), ClientError> {
    let command = UserTaskCommand::Assign {
        user_task_key,
        assignee: String::new(),
        action,
        allow_override: true,
    };
    operation(
        "UnassignUserTask",
        Some(user_task_key),
        submit(state, command),
    )
    .await
}

/// Changes a user task's attributes.
pub async fn update_user_task(
    state: &AppState,
    user_task_key: Key,
    changes: UserTaskChanges,
    action: String,
) -> Result<(), ClientError> {
    let command = UserTaskCommand::Update {
        user_task_key,
        changes,
        action,
    };
    operation(
        "UpdateUserTask",
        Some(user_task_key),
        submit(state, command),
    )
    .await
}

/// Completes a user task with `variables`.
pub async fn complete_user_task(
    state: &AppState,
    user_task_key: Key,
    variables: JsonValue,
    action: String,
) -> Result<(), ClientError> {
    let command = UserTaskCommand::Complete {
        user_task_key,
        variables,
        action,
    };
    operation(
        "CompleteUserTask",
        Some(user_task_key),
        submit(state, command),
    )
    .await
}

/// Sends a user-task command to the task's partition.
async fn submit(state: &AppState, command: UserTaskCommand) -> Result<(), ClientError> {
    let key = command.user_task_key();
    let partition = state
        .dispatch
        .partition_of(key, "user task")
        .map_err(|_| not_found(key))?;
    state
        .dispatch
        .submit(
            partition,
            Command::UserTask(command),
            state.settings.request_timeout,
        )
        .await
        .map(drop)
}
