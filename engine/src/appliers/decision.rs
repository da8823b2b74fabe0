//! DECISION and DECISION_REQUIREMENTS: deployed DMN decisions and their resources, and
//! RESOURCE_DELETION (which deletes them and forms).

use rill_protocol::Key;
use rill_protocol::value::{DecisionRecord, DecisionRequirementsRecord, ResourceDeletionRecord};

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

pub(super) fn decision_deleted(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &DecisionRecord,
) -> Result<()> {
    ctx.state.delete_decision(value)
}

pub(super) fn decision_requirements_deleted(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &DecisionRequirementsRecord,
) -> Result<()> {
    ctx.models.remove_decision_requirements(key);
    ctx.state.delete_decision_requirements(value)
}

/// Kept so that the deletion's distribution to other partitions can carry it.
pub(super) fn resource_deleting(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ResourceDeletionRecord,
) -> Result<()> {
    ctx.state.put_resource_deletion(key, value)
}
