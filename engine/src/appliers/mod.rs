//! Event appliers: the only code that changes state. Processors decide and emit events;
//! applying an event to state happens here, both while processing and when replaying
//! records.
//!
//! Appliers are registered by (value type, intent, version), as Zeebe's
//! `EventAppliers`: a behaviour change adds a new version of an applier and keeps the
//! old one, and the replicated engine version selects the version in force, so a log
//! written under an older version replays to the same state. [`registered`] is the
//! table (a `match`: nothing is built or allocated per event).

mod compensation;
mod decision;
mod deployment;
mod distribution;
mod incident;
mod job;
mod message;
mod migration;
mod process_instance;
mod signal;
mod timer;
mod user;
mod user_task;
mod variable;

use rill_protocol::{Intent, Key, RecordDraft, RecordType, RecordValue, TypedValue, ValueType};

use crate::error::{Result, inconsistent};
use crate::model_cache::ModelCache;
use crate::state::Writer;

/// What an applier works with: the state and the parsed models (element instances need
/// their model). No clock: what an event does to state follows from the event alone.
pub(crate) struct Apply<'s, 'w> {
    pub state: &'s mut Writer<'w>,
    pub models: &'s mut ModelCache,
}

/// One applier; `key` is the record's key. Built by [`applier!`] from a function that
/// takes its value type's record struct.
#[derive(Clone, Copy)]
pub(crate) struct Applier(fn(&mut Apply<'_, '_>, Key, &RecordValue) -> Result<()>);

impl Applier {
    fn apply(self, ctx: &mut Apply<'_, '_>, key: Key, value: &RecordValue) -> Result<()> {
        (self.0)(ctx, key, value)
    }
}

/// An [`Applier`] of `$f`, a function taking one value type's record struct.
macro_rules! applier {
    ($f:path) => {
        Applier(|ctx, key, value| typed(ctx, key, value, $f))
    };
}

/// Calls `f` with the record struct `value` holds.
fn typed<T: TypedValue>(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &RecordValue,
    f: fn(&mut Apply<'_, '_>, Key, &T) -> Result<()>,
) -> Result<()> {
    match T::from_value(value) {
        Some(value) => f(ctx, key, value),
        None => Err(inconsistent(format!(
            "an applier is registered for a {} value of another type",
            value.value_type().name()
        ))),
    }
}

/// The versions of the applier of one (value type, intent), oldest first.
pub(crate) type Versions = &'static [(u32, Applier)];

/// Every registered applier. Events with no entry (a deployment's distribution, a
/// variable document, a job's own command) only tell what happened.
pub(crate) fn registered(value_type: ValueType, intent: Intent) -> Versions {
    use Intent as I;
    use ValueType as V;
    match (value_type, intent) {
        (V::Deployment, I::Created) => &[(1, applier!(deployment::deployment_created))],
        (V::Process, I::Created) => &[(1, applier!(deployment::process_created))],
        (V::Decision, I::Created) => &[(1, applier!(decision::decision_created))],
        (V::DecisionRequirements, I::Created) => {
            &[(1, applier!(decision::decision_requirements_created))]
        }

        (V::ProcessInstance, I::ElementActivating) => {
            &[(1, applier!(process_instance::element_activating))]
        }
        (V::ProcessInstance, I::ElementActivated) => {
            &[(1, applier!(process_instance::element_activated))]
        }
        (V::ProcessInstance, I::ElementCompleting) => {
            &[(1, applier!(process_instance::element_completing))]
        }
        (V::ProcessInstance, I::ElementTerminating) => {
            &[(1, applier!(process_instance::element_terminating))]
        }
        (V::ProcessInstance, I::ElementCompleted) => {
            &[(1, applier!(process_instance::element_completed))]
        }
        (V::ProcessInstance, I::ElementTerminated) => {
            &[(1, applier!(process_instance::element_terminated))]
        }
        (V::ProcessInstance, I::SequenceFlowTaken) => {
            &[(1, applier!(process_instance::sequence_flow_taken))]
        }
        // PROCESS_INSTANCE DELETED (a finished instance's summary expiring) is written no
        // more: the engine keeps nothing of a finished instance to delete.
        // Logs written before these existed hold TRIGGERING and TRIGGERED side by side,
        // so they replay to the same state.
        (V::ProcessEvent, I::Triggering) => &[(1, applier!(process_instance::event_triggering))],
        (V::ProcessEvent, I::Triggered) => &[(1, applier!(process_instance::event_triggered))],
        (V::ProcessInstanceCreation, I::Created) => {
            &[(1, applier!(process_instance::instance_created))]
        }

        (V::Job, I::Created) => &[(1, applier!(job::created))],
        // Version 1 counts a listener's job on its element; logs written before
        // listeners existed hold no such job, so they replay the same.
        (V::Job, I::Completed) => &[(1, applier!(job::completed))],
        (V::Job, I::Canceled) => &[(1, applier!(job::removed))],
        (V::Job, I::TimedOut) => &[(1, applier!(job::activatable_again))],
        (V::Job, I::RecurredAfterBackoff) => &[(1, applier!(job::activatable_again))],
        (V::Job, I::Yielded) => &[(1, applier!(job::activatable_again))],
        (V::Job, I::Failed) => &[(1, applier!(job::failed))],
        (V::Job, I::ErrorThrown) => &[(1, applier!(job::error_thrown))],
        (V::Job, I::RetriesUpdated) => &[(1, applier!(job::updated))],
        (V::Job, I::TimeoutUpdated) => &[(1, applier!(job::updated))],
        (V::JobBatch, I::Activated) => &[(1, applier!(job::batch_activated))],

        (V::Variable, I::Created) => &[(1, applier!(variable::written))],
        (V::Variable, I::Updated) => &[(1, applier!(variable::written))],

        (V::Incident, I::Created) => &[(1, applier!(incident::created))],
        (V::Incident, I::Resolved) => &[(1, applier!(incident::resolved))],

        (V::Message, I::Published) => &[(1, applier!(message::published))],
        (V::Message, I::Expired) => &[(1, applier!(message::expired))],
        (V::MessageSubscription, I::Created) => &[(1, applier!(message::subscription_created))],
        (V::MessageSubscription, I::Correlating) => {
            &[(1, applier!(message::subscription_correlating))]
        }
        (V::MessageSubscription, I::Correlated) => {
            &[(1, applier!(message::subscription_correlated))]
        }
        (V::MessageSubscription, I::Rejected) => &[(1, applier!(message::subscription_rejected))],
        (V::MessageSubscription, I::Deleted) => &[(1, applier!(message::subscription_deleted))],
        (V::ProcessMessageSubscription, I::Creating) => {
            &[(1, applier!(message::process_subscription_creating))]
        }
        (V::ProcessMessageSubscription, I::Created) => {
            &[(1, applier!(message::process_subscription_created))]
        }
        (V::ProcessMessageSubscription, I::Deleting) => {
            &[(1, applier!(message::process_subscription_deleting))]
        }
        (V::ProcessMessageSubscription, I::Correlated) => {
            &[(1, applier!(message::process_subscription_correlated))]
        }
        (V::ProcessMessageSubscription, I::Deleted) => {
            &[(1, applier!(message::process_subscription_deleted))]
        }

        (V::Timer, I::Created) => &[(1, applier!(timer::created))],
        (V::Timer, I::Triggered) => &[(1, applier!(timer::removed))],
        (V::Timer, I::Canceled) => &[(1, applier!(timer::removed))],

        (V::CommandDistribution, I::Distributing) => &[(1, applier!(distribution::distributing))],
        (V::CommandDistribution, I::Acknowledged) => &[(1, applier!(distribution::acknowledged))],
        (V::CommandDistribution, I::Distributed) => &[(1, applier!(distribution::distributed))],

        (V::Signal, I::Broadcasted) => &[(1, applier!(signal::broadcasted))],
        (V::SignalSubscription, I::Created) => &[(1, applier!(signal::subscription_created))],
        (V::SignalSubscription, I::Deleted) => &[(1, applier!(signal::subscription_deleted))],
        (V::CompensationSubscription, I::Created | I::Triggered | I::Migrated) => {
            &[(1, applier!(compensation::stored))]
        }
        (V::CompensationSubscription, I::Completed | I::Deleted) => {
            &[(1, applier!(compensation::removed))]
        }
        (V::UserTask, I::Creating) => &[(1, applier!(user_task::creating))],
        (V::UserTask, I::Created) => &[(1, applier!(user_task::created))],
        (V::UserTask, I::Corrected) => &[(1, applier!(user_task::corrected))],
        (V::UserTask, I::CompletionDenied | I::AssignmentDenied | I::UpdateDenied) => {
            &[(1, applier!(user_task::denied))]
        }
        (V::UserTask, I::Assigning | I::Claiming) => &[(1, applier!(user_task::assigning))],
        (V::UserTask, I::Assigned) => &[(1, applier!(user_task::changed))],
        (V::UserTask, I::Updating) => &[(1, applier!(user_task::updating))],
        (V::UserTask, I::Updated) => &[(1, applier!(user_task::changed))],
        (V::UserTask, I::Completing) => &[(1, applier!(user_task::completing))],
        (V::UserTask, I::Completed) => &[(1, applier!(user_task::removed))],
        // Now keeps a canceling transition; logs written before canceling listeners
        // hold CANCELED right after, which removes the task: the same state.
        (V::UserTask, I::Canceling) => &[(1, applier!(user_task::canceling))],
        (V::UserTask, I::Canceled) => &[(1, applier!(user_task::removed))],
        (V::Form, I::Created) => &[(1, applier!(user_task::form_created))],
        (V::Form, I::Deleted) => &[(1, applier!(user_task::form_deleted))],
        (V::Resource, I::Created) => &[(1, applier!(deployment::resource_created))],
        (V::Decision, I::Deleted) => &[(1, applier!(decision::decision_deleted))],
        (V::DecisionRequirements, I::Deleted) => {
            &[(1, applier!(decision::decision_requirements_deleted))]
        }
        (V::Process, I::Deleting) => &[(1, applier!(deployment::process_deleting))],
        (V::Process, I::Deleted) => &[(1, applier!(deployment::process_deleted))],
        (V::ProcessInstance, I::ElementMigrated) => &[(1, applier!(migration::element_migrated))],
        (V::Job, I::Migrated) => &[(1, applier!(migration::job_migrated))],
        (V::UserTask, I::Migrated) => &[(1, applier!(migration::user_task_migrated))],
        (V::Incident, I::Migrated) => &[(1, applier!(migration::incident_migrated))],
        (V::Timer, I::Migrated) => &[(1, applier!(migration::timer_migrated))],
        (V::ProcessMessageSubscription, I::Migrated) => &[(
            1,
            applier!(migration::process_message_subscription_migrated),
        )],
        (V::MessageSubscription, I::Migrated) => {
            &[(1, applier!(migration::message_subscription_migrated))]
        }
        (V::SignalSubscription, I::Migrated) => {
            &[(1, applier!(migration::signal_subscription_migrated))]
        }
        (V::ResourceDeletion, I::Deleting) => &[(1, applier!(decision::resource_deleting))],
        (V::User, I::Created | I::Updated) => &[(1, applier!(user::stored))],
        (V::User, I::Deleted) => &[(1, applier!(user::deleted))],
        (V::AdHocSubProcessInstruction, I::Completed) => {
            &[(1, applier!(process_instance::ad_hoc_completion_fulfilled))]
        }
        _ => &[],
    }
}

/// The applier in force under `engine_version`, with its version: the newest one
/// registered for a version not above it (version 1 is in force from the start).
pub(crate) fn in_force(versions: Versions, engine_version: u32) -> Option<&'static (u32, Applier)> {
    let engine_version = engine_version.max(1);
    versions
        .iter()
        .rev()
        .find(|(version, _)| *version <= engine_version)
}

/// The appliers an engine applies events with: the registered table, or another one in
/// tests (a table is a function, so choosing one costs nothing per event).
#[derive(Clone, Copy)]
pub(crate) struct Appliers {
    table: fn(ValueType, Intent) -> Versions,
}

impl Default for Appliers {
    fn default() -> Self {
        Appliers { table: registered }
    }
}

impl Appliers {
    #[cfg(test)]
    pub fn with_table(table: fn(ValueType, Intent) -> Versions) -> Appliers {
        Appliers { table }
    }

    /// Applies one record to state with the applier in force under `engine_version`.
    /// Commands and rejections change nothing.
    pub fn apply(
        &self,
        state: &mut Writer<'_>,
        models: &mut ModelCache,
        record: &RecordDraft,
        engine_version: u32,
    ) -> Result<()> {
        if record.record_type != RecordType::Event {
            return Ok(());
        }
        let versions = (self.table)(record.value.value_type(), record.intent);
        let Some((_, applier)) = in_force(versions, engine_version) else {
            return Ok(());
        };
        let mut ctx = Apply { state, models };
        applier.apply(&mut ctx, record.key, &record.value)
    }
}

#[cfg(test)]
mod tests;
