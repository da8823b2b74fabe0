//! USER_TASK and FORM: Camunda user tasks while they live, and deployed forms.

use rill_protocol::value::{FormRecord, JobListenerEventType, UserTaskRecord};
use rill_protocol::{JsonValue, Key};

use super::Apply;
use crate::error::Result;
use crate::state::{ListenerTransition, StoredUserTask, UserTaskState, Writer};

/// `value` as the task keeps it (the client's variables are not kept).
fn kept(value: &UserTaskRecord) -> UserTaskRecord {
    UserTaskRecord {
        variables: JsonValue::empty_object(),
        ..value.clone()
    }
}

/// Changes the stored task (nothing when it is gone).
fn update(
    state: &mut Writer<'_>,
    key: Key,
    change: impl FnOnce(&mut StoredUserTask),
) -> Result<()> {
    if let Some(mut task) = state.read().user_task(key)? {
        change(&mut task);
        state.put_user_task(key, &task)?;
    }
    Ok(())
}

/// The user task of a task listener's element, if it has one.
pub(super) fn task_of_element(state: &Writer<'_>, element_instance_key: i64) -> Result<Key> {
    Ok(state
        .read()
        .element_instance(element_instance_key)?
        .map_or(Key::NONE, |instance| instance.job_key))
}

fn transition(event: JobListenerEventType, value: &UserTaskRecord) -> ListenerTransition {
    ListenerTransition {
        event,
        record: value.clone(),
        changed: value.changed_attributes.clone(),
        listeners_done: 0,
        listener_job: Key::NONE,
        initial_assignee: String::new(),
    }
}

/// CREATING: the task is kept while its creating listeners run; the assignee the model
/// gives it waits until it is created.
pub(super) fn creating(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    ctx.state
        .update_element_instance(value.element_instance_key, |i| i.job_key = key)?;
    let record = UserTaskRecord {
        assignee: String::new(),
        ..kept(value)
    };
    let transition = ListenerTransition {
        initial_assignee: value.assignee.clone(),
        ..transition(JobListenerEventType::Creating, &record)
    };
    ctx.state.put_user_task(
        key,
        &StoredUserTask {
            state: UserTaskState::Creating,
            record,
            transition: Some(transition),
        },
    )
}

/// CREATED: the task is kept, and its element knows it.
pub(super) fn created(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    ctx.state
        .update_element_instance(value.element_instance_key, |i| i.job_key = key)?;
    settled(ctx, key, value)
}

/// ASSIGNING, UPDATING and COMPLETING: the task keeps its values until the transition
/// ends; the transition holds the new ones.
fn begin(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &UserTaskRecord,
    state: UserTaskState,
) -> Result<()> {
    let event = match state {
        UserTaskState::Assigning => JobListenerEventType::Assigning,
        UserTaskState::Updating => JobListenerEventType::Updating,
        _ => JobListenerEventType::Completing,
    };
    update(ctx.state, key, |task| {
        task.state = state;
        task.transition = Some(transition(event, value));
    })
}

pub(super) fn assigning(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    begin(ctx, key, value, UserTaskState::Assigning)
}

pub(super) fn updating(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    begin(ctx, key, value, UserTaskState::Updating)
}

pub(super) fn completing(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    begin(ctx, key, value, UserTaskState::Completing)
}

/// CREATED, ASSIGNED and UPDATED: the task takes the event's values and is workable.
pub(super) fn changed(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    settled(ctx, key, value)
}

fn settled(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    ctx.state.put_user_task(
        key,
        &StoredUserTask {
            state: UserTaskState::Created,
            record: kept(value),
            transition: None,
        },
    )
}

/// CORRECTED: a task listener corrected the transition's values.
pub(super) fn corrected(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    update(ctx.state, key, |task| {
        if let Some(transition) = &mut task.transition {
            transition.record = value.clone();
        }
    })
}

/// COMPLETION_DENIED, ASSIGNMENT_DENIED and UPDATE_DENIED: a listener denied the
/// transition; the task is as it was before it.
pub(super) fn denied(ctx: &mut Apply<'_, '_>, key: Key, _value: &UserTaskRecord) -> Result<()> {
    update(ctx.state, key, |task| {
        task.state = UserTaskState::Created;
        task.transition = None;
    })
}

/// CANCELING: a transition in progress is dropped; the cancellation is the transition
/// now, and its canceling listeners (if any) run before CANCELED.
pub(super) fn canceling(ctx: &mut Apply<'_, '_>, key: Key, value: &UserTaskRecord) -> Result<()> {
    update(ctx.state, key, |task| {
        task.state = UserTaskState::Canceling;
        let record = UserTaskRecord {
            changed_attributes: Vec::new(),
            ..kept(value)
        };
        task.transition = Some(transition(JobListenerEventType::Canceling, &record));
    })
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

/// JOB CREATED of a task listener: the transition waits for it.
pub(super) fn listener_job_created(
    state: &mut Writer<'_>,
    element_instance_key: i64,
    job_key: Key,
) -> Result<()> {
    let task_key = task_of_element(state, element_instance_key)?;
    update(state, task_key, |task| {
        if let Some(transition) = &mut task.transition {
            transition.listener_job = job_key;
        }
    })
}

/// JOB COMPLETED of a task listener: one more listener of the transition ran.
pub(super) fn listener_job_completed(
    state: &mut Writer<'_>,
    element_instance_key: i64,
) -> Result<()> {
    let task_key = task_of_element(state, element_instance_key)?;
    update(state, task_key, |task| {
        if let Some(transition) = &mut task.transition {
            transition.listeners_done += 1;
            transition.listener_job = Key::NONE;
        }
    })
}

/// INCIDENT RESOLVED of an incident without a job on a user task whose transition waits
/// for its listeners (a listener's type or retries could not be evaluated): the
/// transition runs its listeners again from the first, as in Zeebe.
pub(super) fn listener_incident_resolved(
    state: &mut Writer<'_>,
    element_instance_key: i64,
) -> Result<()> {
    let task_key = task_of_element(state, element_instance_key)?;
    update(state, task_key, |task| {
        if let Some(transition) = &mut task.transition
            && transition.listener_job.is_none()
        {
            transition.listeners_done = 0;
        }
    })
}

/// FORM CREATED: a new form version, found by id and version (and by deployment, from
/// the deployment's `formMetadata`).
pub(super) fn form_created(ctx: &mut Apply<'_, '_>, _key: Key, value: &FormRecord) -> Result<()> {
    ctx.state.put_form(value)
}

pub(super) fn form_deleted(ctx: &mut Apply<'_, '_>, _key: Key, value: &FormRecord) -> Result<()> {
    ctx.state.delete_form(value)
}
