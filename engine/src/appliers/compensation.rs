//! COMPENSATION_SUBSCRIPTION: a subscription lives from the completion of its activity
//! (`CREATED`, updated by `TRIGGERED`) until it is `COMPLETED` or `DELETED`.

use rill_protocol::Key;
use rill_protocol::value::CompensationSubscriptionRecord;

use super::Apply;
use crate::error::Result;

pub(super) fn stored(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &CompensationSubscriptionRecord,
) -> Result<()> {
    ctx.state.put_compensation_subscription(key, value)
}

pub(super) fn removed(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &CompensationSubscriptionRecord,
) -> Result<()> {
    ctx.state.delete_compensation_subscription(key, value);
    Ok(())
}
