//! DECISION and DECISION_REQUIREMENTS: deployed DMN decisions and their resources.

use rill_protocol::Key;
use rill_protocol::value::{DecisionRecord, DecisionRequirementsRecord};

use super::Apply;
use crate::error::Result;

pub(super) fn decision_created(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &DecisionRecord,
) -> Result<()> {
    ctx.state.put_decision(value)
}

pub(super) fn decision_requirements_created(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &DecisionRequirementsRecord,
) -> Result<()> {
    ctx.state.put_decision_requirements(value)
}
