//! Resource deletion (`RESOURCE_DELETION DELETE`): a deployed form, or a decision
//! requirements graph with its decisions, is deleted on the partition that takes the
//! command and then on every other one, as deployments are distributed. The previous
//! version of the id becomes the latest again; its version number is never reused.
//! Deleting process definitions is not supported yet and is rejected.

use rill_protocol::value::ResourceDeletionRecord;
use rill_protocol::{Intent, Key, ValueType};

use super::{distribute, tenant};
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

pub(crate) fn placeholder(resource_key: Key) -> ResourceDeletionRecord {
    ResourceDeletionRecord {
        resource_key: resource_key.get(),
        tenant_id: tenant(),
    }
}

pub(super) fn delete(p: &mut Processing<'_>, resource_key: Key) -> Result<()> {
    let value = placeholder(resource_key);
    if let Err(rejection) = check(p, resource_key)? {
        p.reject(resource_key, Intent::Delete, value, rejection);
        return Ok(());
    }
    p.command(resource_key, Intent::Delete, value.clone());
    let key = p.next_key()?;
    p.event(key, Intent::Deleting, value.clone())?;
    delete_here(p, resource_key)?;
    p.event(key, Intent::Deleted, value.clone())?;
    distribute(p, key, ValueType::ResourceDeletion, Intent::Delete)?;
    p.respond(key, Intent::Deleting, value);
    Ok(())
}

fn check(p: &Processing<'_>, resource_key: Key) -> Result<std::result::Result<(), Rejection>> {
    let state = p.read();
    if state.process(resource_key)?.is_some() {
        return Ok(Err(Rejection::invalid_state(format!(
            "Expected to delete the resource with key '{resource_key}', but it is a process \
             definition: deleting process definitions is not supported yet (forms and \
             decision requirements can be deleted)"
        ))));
    }
    if state.form(resource_key)?.is_some() || state.decision_requirements(resource_key)?.is_some() {
        return Ok(Ok(()));
    }
    let hint = match state.decision(resource_key)? {
        Some(decision) => format!(
            " (it is the key of the decision '{}': delete its decision requirements, key \
             '{}', instead)",
            decision.decision_id, decision.decision_requirements_key
        ),
        None => String::new(),
    };
    Ok(Err(Rejection::not_found(format!(
        "Expected to delete a resource with key '{resource_key}', but no such resource was \
         found{hint}"
    ))))
}

/// A deletion received from another partition: the same resource deleted here (if this
/// partition still has it), under the sender's deletion key.
pub(super) fn apply_distributed(
    p: &mut Processing<'_>,
    key: Key,
    value: &ResourceDeletionRecord,
) -> Result<()> {
    p.event(key, Intent::Deleting, value.clone())?;
    delete_here(p, Key(value.resource_key))?;
    p.event(key, Intent::Deleted, value.clone())
}

/// `FORM DELETED`, or each decision's `DECISION DELETED` and then
/// `DECISION_REQUIREMENTS DELETED`.
fn delete_here(p: &mut Processing<'_>, resource_key: Key) -> Result<()> {
    if let Some(form) = p.read().form(resource_key)? {
        return p.event(resource_key, Intent::Deleted, form);
    }
    let Some(requirements) = p.read().decision_requirements(resource_key)? else {
        return Ok(());
    };
    for decision_key in p
        .read()
        .decisions_of_requirements(requirements.decision_requirements_key)?
    {
        if let Some(decision) = p.read().decision(decision_key)? {
            p.event(decision_key, Intent::Deleted, decision)?;
        }
    }
    p.event(resource_key, Intent::Deleted, requirements)
}
