//! Resource deletion (`RESOURCE_DELETION DELETE`): a deployed process definition, form,
//! or decision requirements graph with its decisions, is deleted on the partition that
//! takes the command and then on every other one, as deployments are distributed. The
//! previous version of the id becomes the latest again; its version number is never
//! reused.
//!
//! A process definition is deleted in two steps on each partition:
//!
//! ```text
//! PROCESS DELETING: out of the version index (no new instance; the previous version
//!                   is the latest and its start events are subscribed instead)
//!      │ no instance of it active on this partition (now, or when the last one ends)
//!      ▼
//! PROCESS DELETED:  gone from state
//! ```

use rill_protocol::value::{ProcessRecord, ResourceDeletionRecord};
use rill_protocol::{Blob, Intent, Key, ValueType};

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
    if let Some(process) = state.process(resource_key)? {
        if state.is_process_deleting(resource_key)? {
            return Ok(Err(Rejection::invalid_state(format!(
                "Expected to delete the process definition '{}' version {} (key \
                 '{resource_key}'), but it is already deleted: it is kept until its {} \
                 active instance(s) on partition {} end",
                process.bpmn_process_id,
                process.version,
                state.running_instances(resource_key)?,
                p.ctx.partition_id.get()
            ))));
        }
        return Ok(Ok(()));
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

/// `PROCESS DELETING` (and `DELETED` unless instances of it are active), `FORM
/// DELETED`, or each decision's `DECISION DELETED` and then `DECISION_REQUIREMENTS
/// DELETED`.
fn delete_here(p: &mut Processing<'_>, resource_key: Key) -> Result<()> {
    if let Some(process) = p.read().process(resource_key)? {
        if p.read().is_process_deleting(resource_key)? {
            return Ok(());
        }
        return delete_process(p, resource_key, process);
    }
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

/// What `PROCESS DELETING` and `DELETED` carry: the definition without its resource and
/// checksum (as in Zeebe, so the records stay small).
fn deleted_process(record: ProcessRecord) -> ProcessRecord {
    ProcessRecord {
        checksum: Blob::default(),
        resource: Blob::default(),
        ..record
    }
}

fn delete_process(p: &mut Processing<'_>, key: Key, record: ProcessRecord) -> Result<()> {
    let id = record.bpmn_process_id.clone();
    let was_latest = p
        .latest_process(&id)?
        .is_some_and(|(_, latest)| latest == key);
    let value = deleted_process(record);
    let event_key = p.next_key()?;
    p.event(event_key, Intent::Deleting, value.clone())?;
    if was_latest {
        stop_start_events(p, key)?;
        if let Some((_, previous)) = p.latest_process(&id)? {
            start_start_events(p, previous)?;
        }
    }
    if p.read().running_instances(key)? == 0 {
        let event_key = p.next_key()?;
        p.event(event_key, Intent::Deleted, value)?;
    }
    Ok(())
}

/// The deleted latest version's start events are no longer subscribed: its start
/// timers are cancelled, its message and signal start subscriptions closed.
fn stop_start_events(p: &mut Processing<'_>, definition: Key) -> Result<()> {
    for timer_key in p.read().timers_of_element(-1)? {
        if let Some(timer) = p.read().timer(timer_key)?
            && timer.process_definition_key == definition.get()
        {
            p.event(timer_key, Intent::Canceled, timer)?;
        }
    }
    p.close_message_start_subscriptions(definition)?;
    p.close_signal_subscriptions(definition)
}

/// The version that is the latest again subscribes its start events, as a new
/// deployment of it would: timers (on the partition that took its deployment, where
/// start timers run), message and signal start events (on every partition).
fn start_start_events(p: &mut Processing<'_>, definition: Key) -> Result<()> {
    let process = p.model(definition)?;
    if definition.partition() == p.ctx.partition_id {
        p.arm_start_timers(&process)?;
    }
    p.write_message_start_subscriptions(definition, None)?;
    p.replace_signal_start_subscriptions(&process, None)
}

impl Processing<'_> {
    /// An instance of `definition` ended (completed or terminated): if the definition is
    /// deleted and that was its last active instance here, it is `DELETED` now.
    pub(crate) fn definition_instance_ended(&mut self, definition: Key) -> Result<()> {
        if !self.read().is_process_deleting(definition)?
            || self.read().running_instances(definition)? > 0
        {
            return Ok(());
        }
        let Some(record) = self.read().process(definition)? else {
            return Ok(());
        };
        let event_key = self.next_key()?;
        self.event(event_key, Intent::Deleted, deleted_process(record))
    }
}
