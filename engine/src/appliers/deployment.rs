//! PROCESS and DEPLOYMENT: deployed definitions, and the deployment kept for
//! distribution to other partitions.

use rill_protocol::Key;
use rill_protocol::value::{DeploymentRecord, ProcessRecord};

use super::Apply;
use crate::error::Result;

pub(super) fn process_created(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessRecord,
) -> Result<()> {
    ctx.state.put_process(value)
}

pub(super) fn deployment_created(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &DeploymentRecord,
) -> Result<()> {
    ctx.state.put_deployment(key, value)
}
