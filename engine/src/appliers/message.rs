//! MESSAGE, MESSAGE_SUBSCRIPTION (the message partition's side) and
//! PROCESS_MESSAGE_SUBSCRIPTION (the instance's side). When the two sides live on
//! different partitions, the appliers queue the command for the other side in the
//! outbox.

use rill_protocol::value::{
    MessageRecord, MessageSubscriptionRecord, ProcessMessageSubscriptionRecord,
};
use rill_protocol::{Intent, JsonValue, Key, RecordValue, ValueType};

use super::Apply;
use crate::error::Result;
use crate::state::{
    OutboxEntry, StoredMessage, StoredMessageSubscription, StoredProcessMessageSubscription, Writer,
};

pub(super) fn published(ctx: &mut Apply<'_, '_>, key: Key, value: &MessageRecord) -> Result<()> {
    ctx.state.put_message(&StoredMessage {
        key,
        record: value.clone(),
    })
}

pub(super) fn expired(ctx: &mut Apply<'_, '_>, key: Key, _value: &MessageRecord) -> Result<()> {
    let state = &mut *ctx.state;
    match state.read().message(key)? {
        Some(message) => state.delete_message(&message),
        None => Ok(()),
    }
}

pub(super) fn subscription_created(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    ctx.state
        .put_message_subscription(&StoredMessageSubscription {
            key,
            record: value.clone(),
            correlating: false,
        })
}

pub(super) fn subscription_correlating(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    let instance_partition = Key(value.process_instance_key).partition();
    if instance_partition != key.partition() {
        state.push_outbox(
            instance_partition.get(),
            &OutboxEntry {
                value_type: ValueType::ProcessMessageSubscription,
                intent: Intent::Correlate,
                key,
                value: Some(RecordValue::MessageSubscription(value.clone())),
            },
        )?;
    }
    state.mark_message_correlated(value.message_key, &value.bpmn_process_id);
    if let Some(mut subscription) = state.read().message_subscription(
        &value.message_name,
        &value.correlation_key,
        value.element_instance_key,
    )? {
        subscription.correlating = true;
        subscription.record.message_key = value.message_key;
        state.put_message_subscription(&subscription)?;
    }
    Ok(())
}

pub(super) fn subscription_correlated(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    if value.is_interrupting {
        state.delete_message_subscription(
            &value.message_name,
            &value.correlation_key,
            value.element_instance_key,
        );
        return Ok(());
    }
    stop_correlating(state, value)
}

pub(super) fn subscription_rejected(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    state.unmark_message_correlated(value.message_key, &value.bpmn_process_id);
    stop_correlating(state, value)
}

/// The subscription waits for the next message again.
fn stop_correlating(state: &mut Writer<'_>, value: &MessageSubscriptionRecord) -> Result<()> {
    if let Some(mut subscription) = state.read().message_subscription(
        &value.message_name,
        &value.correlation_key,
        value.element_instance_key,
    )? {
        subscription.correlating = false;
        state.put_message_subscription(&subscription)?;
    }
    Ok(())
}

pub(super) fn subscription_deleted(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    ctx.state.delete_message_subscription(
        &value.message_name,
        &value.correlation_key,
        value.element_instance_key,
    );
    Ok(())
}

/// Queues `intent` (CREATE, DELETE, MIGRATE) for the message side when it lives on
/// another partition.
pub(super) fn send_to_message_side(
    state: &mut Writer<'_>,
    key: Key,
    value: &ProcessMessageSubscriptionRecord,
    intent: Intent,
) -> Result<()> {
    let remote =
        Key(value.process_instance_key).partition().get() as i32 != value.subscription_partition_id;
    if !remote {
        return Ok(());
    }
    state.push_outbox(
        value.subscription_partition_id as u16,
        &OutboxEntry {
            value_type: ValueType::MessageSubscription,
            intent,
            key,
            value: Some(RecordValue::MessageSubscription(
                MessageSubscriptionRecord {
                    process_instance_key: value.process_instance_key,
                    element_instance_key: value.element_instance_key,
                    bpmn_process_id: value.bpmn_process_id.clone(),
                    message_name: value.message_name.clone(),
                    correlation_key: value.correlation_key.clone(),
                    message_key: -1,
                    variables: JsonValue::empty_object(),
                    is_interrupting: value.is_interrupting,
                    tenant_id: value.tenant_id.clone(),
                },
            )),
        },
    )?;
    Ok(())
}

pub(super) fn process_subscription_creating(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessMessageSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    send_to_message_side(state, key, value, Intent::Create)?;
    state.put_process_message_subscription(&StoredProcessMessageSubscription {
        key,
        record: value.clone(),
        opened: false,
        closing: false,
    })
}

pub(super) fn process_subscription_created(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessMessageSubscriptionRecord,
) -> Result<()> {
    update_process_subscription(ctx.state, value, |s| s.opened = true)
}

pub(super) fn process_subscription_deleting(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessMessageSubscriptionRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    send_to_message_side(state, key, value, Intent::Delete)?;
    update_process_subscription(state, value, |s| s.closing = true)
}

fn update_process_subscription(
    state: &mut Writer<'_>,
    value: &ProcessMessageSubscriptionRecord,
    change: impl FnOnce(&mut StoredProcessMessageSubscription),
) -> Result<()> {
    if let Some(mut subscription) = state
        .read()
        .process_message_subscription(value.element_instance_key, &value.message_name)?
    {
        change(&mut subscription);
        state.put_process_message_subscription(&subscription)?;
    }
    Ok(())
}

pub(super) fn process_subscription_correlated(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessMessageSubscriptionRecord,
) -> Result<()> {
    // A non-interrupting subscription stays open for the next message.
    if !value.is_interrupting {
        return Ok(());
    }
    ctx.state
        .delete_process_message_subscription(value.element_instance_key, &value.message_name);
    Ok(())
}

pub(super) fn process_subscription_deleted(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessMessageSubscriptionRecord,
) -> Result<()> {
    ctx.state
        .delete_process_message_subscription(value.element_instance_key, &value.message_name);
    Ok(())
}
