//! USER: a user created or changed (the event's draft carries its password hash), or
//! deleted.

use rill_protocol::Key;
use rill_protocol::value::UserRecord;

use super::Apply;
use crate::error::Result;

pub(super) fn stored(ctx: &mut Apply<'_, '_>, _key: Key, value: &UserRecord) -> Result<()> {
    ctx.state.put_user(value)
}

pub(super) fn deleted(ctx: &mut Apply<'_, '_>, _key: Key, value: &UserRecord) -> Result<()> {
    ctx.state.delete_user(value);
    Ok(())
}
