//! USER_TASK and FORM: Camunda user tasks while they live, and deployed forms.

use rill_protocol::Key;
use rill_protocol::value::{FormRecord, UserTaskRecord};

use super::Apply;
use crate::error::Result;
use crate::state::{StoredUserTask, UserTaskState};

/// Stores the task as the event carries it, in `state`.
fn put(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &UserTaskRecord,
    state: UserTaskState,
) -> Result<()> {
    let record = UserTaskRecord {
        variables: rill_protocol::JsonValue::empty_object(),
        ..value.clone()
    };
    ctx.state
        .put_user_task(key, &StoredUserTask { state, record })
}

/// CREATED: the task is kept, and its element knows it.
pub(super) fn created(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    ctx.state
        .update_element_instance(value.element_instance_key, |i| i.job_key = key)?;
    put(ctx, key, value, UserTaskState::Created)
}

pub(super) fn assigning(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    put(ctx, key, value, UserTaskState::Assigning)
}

pub(super) fn updating(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    put(ctx, key, value, UserTaskState::Updating)
}

/// ASSIGNED and UPDATED: the task takes the event's values and is workable again.
pub(super) fn changed(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    put(ctx, key, value, UserTaskState::Created)
}

pub(super) fn completing(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    put(ctx, key, value, UserTaskState::Completing)
}

pub(super) fn canceling(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    put(ctx, key, value, UserTaskState::Canceling)
}

/// COMPLETED and CANCELED: the task goes.
pub(super) fn removed(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    ctx.state.delete_user_task(key);
    ctx.state
        .update_element_instance(value.element_instance_key, |i| {
            if i.job_key == key {
                i.job_key = Key::NONE;
            }
        })?;
    Ok(())
}

/// FORM CREATED: a new form version, found by id and version (and by deployment, from
/// the deployment's `formMetadata`).
pub(super) fn form_created(ctx: &mut Apply<'_, '_>, _key: Key, value: &FormRecord) -> Result<()> {
    ctx.state.put_form(value)
}

pub(super) fn form_deleted(ctx: &mut Apply<'_, '_>, _key: Key, value: &FormRecord) -> Result<()> {
    ctx.state.delete_form(value)
}
