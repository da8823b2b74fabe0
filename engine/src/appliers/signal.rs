//! SIGNAL and SIGNAL_SUBSCRIPTION: subscriptions come and go with their catch events
//! (and with the latest version of a process with signal start events); a broadcast
//! is kept as the last one, which its distribution to other partitions carries.

use rill_protocol::Key;
use rill_protocol::value::{SignalRecord, SignalSubscriptionRecord};

use super::Apply;
use crate::error::Result;
use crate::state::StoredSignalSubscription;

pub(super) fn broadcasted(ctx: &mut Apply<'_, '_>, key: Key, value: &SignalRecord) -> Result<()> {
    ctx.state.set_last_broadcast_signal(key, value)
}

pub(super) fn subscription_created(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &SignalSubscriptionRecord,
) -> Result<()> {
    ctx.state
        .put_signal_subscription(&StoredSignalSubscription {
            key,
            record: value.clone(),
        })
}

pub(super) fn subscription_deleted(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &SignalSubscriptionRecord,
) -> Result<()> {
    ctx.state
        .delete_signal_subscription(&StoredSignalSubscription {
            key,
            record: value.clone(),
        });
    Ok(())
}
