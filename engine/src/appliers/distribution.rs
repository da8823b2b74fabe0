//! COMMAND_DISTRIBUTION: commands between partitions. `DISTRIBUTING` queues one (key:
//! the entity), `ACKNOWLEDGED` removes it (key: its sequence number), `DISTRIBUTED`
//! records on the receiver that the sender's sequence number was applied (key: that
//! number).

use rill_protocol::value::CommandDistributionRecord;
use rill_protocol::{Key, RecordValue, ValueType};

use super::Apply;
use crate::error::{Result, inconsistent};
use crate::state::OutboxEntry;

fn partition(value: &CommandDistributionRecord) -> Result<u16> {
    u16::try_from(value.partition_id)
        .map_err(|_| inconsistent(format!("partition {} out of range", value.partition_id)))
}

pub(super) fn distributing(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &CommandDistributionRecord,
) -> Result<()> {
    let partition = partition(value)?;
    // A signal is not kept in state like a deployment: the entry carries it, taken from
    // the broadcast just written.
    let payload = match value.value_type {
        ValueType::Signal => match ctx.state.read().last_broadcast_signal()? {
            Some((signal_key, signal)) if signal_key == key => Some(RecordValue::Signal(signal)),
            _ => {
                return Err(inconsistent(format!(
                    "signal {key} to distribute is not known"
                )));
            }
        },
        // A user goes with its password hash, as it is in state now (a deletion queues
        // its distribution before the user is removed).
        ValueType::User => match ctx.state.read().user_by_key(key)? {
            Some(user) => Some(RecordValue::User(user)),
            None => {
                return Err(inconsistent(format!(
                    "user {key} to distribute is not known"
                )));
            }
        },
        _ => None,
    };
    ctx.state.push_outbox(
        partition,
        &OutboxEntry {
            value_type: value.value_type,
            intent: value.intent,
            key,
            value: payload,
        },
    )?;
    Ok(())
}

pub(super) fn acknowledged(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &CommandDistributionRecord,
) -> Result<()> {
    let partition = partition(value)?;
    ctx.state.remove_outbox(partition, key.get() as u64);
    Ok(())
}

pub(super) fn distributed(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &CommandDistributionRecord,
) -> Result<()> {
    let partition = partition(value)?;
    ctx.state.set_inbox_sequence(partition, key.get() as u64)
}
