//! The MIGRATED events of a process instance migration: each entity keeps its key and
//! its state and takes the target process's ids from the event (VARIABLE MIGRATED
//! changes nothing stored: variables keep only their value).

use rill_protocol::value::{
    BpmnElementType, IncidentRecord, JobRecord, MessageSubscriptionRecord, ProcessInstanceRecord,
    ProcessMessageSubscriptionRecord, SignalSubscriptionRecord, TimerRecord, UserTaskRecord,
};
use rill_protocol::{Intent, Key};

use super::Apply;
use crate::error::{Result, inconsistent};

/// PROCESS_INSTANCE ELEMENT_MIGRATED: the element instance's record becomes the event's;
/// its lifecycle state, children and tokens stay.
pub(super) fn element_migrated(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessInstanceRecord,
) -> Result<()> {
    let Some(before) = ctx.state.read().element_instance(key)? else {
        return Err(inconsistent(format!(
            "migrated element instance {key} not found"
        )));
    };
    let from = before.record.process_definition_key;
    ctx.state
        .update_element_instance(key, |instance| instance.record = value.clone())?;
    if value.bpmn_element_type == BpmnElementType::Process && from != value.process_definition_key {
        // Each definition counts its active instances, for deletion.
        ctx.state.count_instance_ended(from)?;
        ctx.state
            .count_instance_started(value.process_definition_key)?;
    }
    Ok(())
}

pub(super) fn job_migrated(ctx: &mut Apply<'_, '_>, key: Key, value: &JobRecord) -> Result<()> {
    let state = &mut *ctx.state;
    let Some(job) = state.read().job(key)? else {
        return Err(inconsistent(format!("migrated job {key} not found")));
    };
    state.put_job(key, job.state, value, Some(&job))
}

pub(super) fn user_task_migrated(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &UserTaskRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    let Some(mut task) = state.read().user_task(key)? else {
        return Err(inconsistent(format!("migrated user task {key} not found")));
    };
    let retarget = |record: &mut UserTaskRecord| {
        record.element_id = value.element_id.clone();
        record.bpmn_process_id = value.bpmn_process_id.clone();
        record.process_definition_key = value.process_definition_key;
        record.process_definition_version = value.process_definition_version;
    };
    retarget(&mut task.record);
    if let Some(transition) = task.transition.as_mut() {
        retarget(&mut transition.record);
    }
    state.put_user_task(key, &task)
}

pub(super) fn incident_migrated(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &IncidentRecord,
) -> Result<()> {
    ctx.state.put_incident(key, value)
}

/// The timer keeps its due date, so its due index entry stays as it is.
pub(super) fn timer_migrated(ctx: &mut Apply<'_, '_>, key: Key, value: &TimerRecord) -> Result<()> {
    ctx.state.put_timer(key, value)
}

pub(super) fn process_message_subscription_migrated(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessMessageSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    let found = state
        .read()
        .process_message_subscription(value.element_instance_key, &value.message_name)?;
    let Some(mut subscription) = found else {
        return Err(inconsistent(format!(
            "migrated message subscription '{}' of {} not found",
            value.message_name, value.element_instance_key
        )));
    };
    subscription.record.element_id = value.element_id.clone();
    subscription.record.bpmn_process_id = value.bpmn_process_id.clone();
    state.put_process_message_subscription(&subscription)?;
    // The message side learns the new process id (MIGRATE through the outbox when it
    // lives on another partition; the processor writes it in place otherwise).
    super::message::send_to_message_side(state, subscription.key, value, Intent::Migrate)
}

/// MESSAGE_SUBSCRIPTION MIGRATED (on the message's partition): the subscription now
/// belongs to the target process (which a message correlates to once).
pub(super) fn message_subscription_migrated(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    let found = state.read().message_subscription(
        &value.message_name,
        &value.correlation_key,
        value.element_instance_key,
    )?;
    if let Some(mut subscription) = found {
        subscription.record.bpmn_process_id = value.bpmn_process_id.clone();
        state.put_message_subscription(&subscription)?;
    }
    Ok(())
}

pub(super) fn signal_subscription_migrated(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &SignalSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    let Some(mut subscription) = state.read().signal_subscription(&value.signal_name, key)? else {
        return Err(inconsistent(format!(
            "migrated signal subscription {key} not found"
        )));
    };
    subscription.record = value.clone();
    state.put_signal_subscription(&subscription)
}
