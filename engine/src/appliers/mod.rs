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
mod user_task;
mod variable;

#[cfg(test)]
mod tests;

use rill_protocol::Key;
use rill_protocol::value::{
    CommandDistributionRecord, DecisionRecord, DecisionRequirementsRecord, DeploymentRecord,
    IncidentRecord, JobBatchRecord, JobRecord, MessageRecord, MessageSubscriptionRecord,
    ProcessInstanceCreationRecord, ProcessInstanceRecord, ProcessMessageSubscriptionRecord,
    ProcessRecord, SignalRecord, SignalSubscriptionRecord, TimerRecord, VariableRecord,
};
use rill_protocol::value::{
    FormRecord, ProcessEventRecord, ResourceDeletionRecord, UserTaskRecord,
};
use rill_protocol::{Intent, RecordDraft, RecordType, RecordValue, Timestamp, ValueType};

use crate::error::{Result, inconsistent};
use crate::model_cache::ModelCache;
use crate::state::Writer;

/// What an applier works with: the state, the parsed models (element instances need
/// their model), and the entry's timestamp.
pub(crate) struct Apply<'s, 'w> {
    pub state: &'s mut Writer<'w>,
    pub models: &'s mut ModelCache,
    pub timestamp: Timestamp,
}

/// One applier, typed by the record value it takes; `key` is the record's key.
#[derive(Clone, Copy)]
pub(crate) enum Applier {
    Deployment(fn(&mut Apply<'_, '_>, Key, &DeploymentRecord) -> Result<()>),
    Process(fn(&mut Apply<'_, '_>, Key, &ProcessRecord) -> Result<()>),
    ProcessInstance(fn(&mut Apply<'_, '_>, Key, &ProcessInstanceRecord) -> Result<()>),
    ProcessInstanceCreation(
        fn(&mut Apply<'_, '_>, Key, &ProcessInstanceCreationRecord) -> Result<()>,
    ),
    Job(fn(&mut Apply<'_, '_>, Key, &JobRecord) -> Result<()>),
    JobBatch(fn(&mut Apply<'_, '_>, Key, &JobBatchRecord) -> Result<()>),
    Variable(fn(&mut Apply<'_, '_>, Key, &VariableRecord) -> Result<()>),
    Incident(fn(&mut Apply<'_, '_>, Key, &IncidentRecord) -> Result<()>),
    Message(fn(&mut Apply<'_, '_>, Key, &MessageRecord) -> Result<()>),
    MessageSubscription(fn(&mut Apply<'_, '_>, Key, &MessageSubscriptionRecord) -> Result<()>),
    ProcessMessageSubscription(
        fn(&mut Apply<'_, '_>, Key, &ProcessMessageSubscriptionRecord) -> Result<()>,
    ),
    Timer(fn(&mut Apply<'_, '_>, Key, &TimerRecord) -> Result<()>),
    CommandDistribution(fn(&mut Apply<'_, '_>, Key, &CommandDistributionRecord) -> Result<()>),
    Signal(fn(&mut Apply<'_, '_>, Key, &SignalRecord) -> Result<()>),
    SignalSubscription(fn(&mut Apply<'_, '_>, Key, &SignalSubscriptionRecord) -> Result<()>),
    UserTask(fn(&mut Apply<'_, '_>, Key, &UserTaskRecord) -> Result<()>),
    Form(fn(&mut Apply<'_, '_>, Key, &FormRecord) -> Result<()>),
    Decision(fn(&mut Apply<'_, '_>, Key, &DecisionRecord) -> Result<()>),
    DecisionRequirements(fn(&mut Apply<'_, '_>, Key, &DecisionRequirementsRecord) -> Result<()>),
    CompensationSubscription(
        fn(
            &mut Apply<'_, '_>,
            Key,
            &rill_protocol::value::CompensationSubscriptionRecord,
        ) -> Result<()>,
    ),
    ResourceDeletion(fn(&mut Apply<'_, '_>, Key, &ResourceDeletionRecord) -> Result<()>),
    ProcessEvent(fn(&mut Apply<'_, '_>, Key, &ProcessEventRecord) -> Result<()>),
    AdHocSubProcessInstruction(
        fn(
            &mut Apply<'_, '_>,
            Key,
            &rill_protocol::value::AdHocSubProcessInstructionRecord,
        ) -> Result<()>,
    ),
}

impl Applier {
    fn apply(self, ctx: &mut Apply<'_, '_>, key: Key, value: &RecordValue) -> Result<()> {
        match (self, value) {
            (Applier::Deployment(f), RecordValue::Deployment(v)) => f(ctx, key, v),
            (Applier::Process(f), RecordValue::Process(v)) => f(ctx, key, v),
            (Applier::ProcessInstance(f), RecordValue::ProcessInstance(v)) => f(ctx, key, v),
            (Applier::ProcessInstanceCreation(f), RecordValue::ProcessInstanceCreation(v)) => {
                f(ctx, key, v)
            }
            (Applier::Job(f), RecordValue::Job(v)) => f(ctx, key, v),
            (Applier::JobBatch(f), RecordValue::JobBatch(v)) => f(ctx, key, v),
            (Applier::Variable(f), RecordValue::Variable(v)) => f(ctx, key, v),
            (Applier::Incident(f), RecordValue::Incident(v)) => f(ctx, key, v),
            (Applier::Message(f), RecordValue::Message(v)) => f(ctx, key, v),
            (Applier::MessageSubscription(f), RecordValue::MessageSubscription(v)) => {
                f(ctx, key, v)
            }
            (
                Applier::ProcessMessageSubscription(f),
                RecordValue::ProcessMessageSubscription(v),
            ) => f(ctx, key, v),
            (Applier::Timer(f), RecordValue::Timer(v)) => f(ctx, key, v),
            (Applier::CommandDistribution(f), RecordValue::CommandDistribution(v)) => {
                f(ctx, key, v)
            }
            (Applier::Signal(f), RecordValue::Signal(v)) => f(ctx, key, v),
            (Applier::SignalSubscription(f), RecordValue::SignalSubscription(v)) => f(ctx, key, v),
            (Applier::UserTask(f), RecordValue::UserTask(v)) => f(ctx, key, v),
            (Applier::Form(f), RecordValue::Form(v)) => f(ctx, key, v),
            (Applier::Decision(f), RecordValue::Decision(v)) => f(ctx, key, v),
            (Applier::DecisionRequirements(f), RecordValue::DecisionRequirements(v)) => {
                f(ctx, key, v)
            }
            (Applier::CompensationSubscription(f), RecordValue::CompensationSubscription(v)) => {
                f(ctx, key, v)
            }
            (Applier::ResourceDeletion(f), RecordValue::ResourceDeletion(v)) => f(ctx, key, v),
            (Applier::ProcessEvent(f), RecordValue::ProcessEvent(v)) => f(ctx, key, v),
            (
                Applier::AdHocSubProcessInstruction(f),
                RecordValue::AdHocSubProcessInstruction(v),
            ) => f(ctx, key, v),
            (_, value) => Err(inconsistent(format!(
                "an applier is registered for a {} value of another type",
                value.value_type().name()
            ))),
        }
    }
}

/// The versions of the applier of one (value type, intent), oldest first.
pub(crate) type Versions = &'static [(u32, Applier)];

/// Every registered applier. Events with no entry (a deployment's distribution, a
/// variable document, a job's own command) only tell what happened.
pub(crate) fn registered(value_type: ValueType, intent: Intent) -> Versions {
    use Applier as A;
    use Intent as I;
    use ValueType as V;
    match (value_type, intent) {
        (V::Deployment, I::Created) => &[(1, A::Deployment(deployment::deployment_created))],
        (V::Process, I::Created) => &[(1, A::Process(deployment::process_created))],
        (V::Decision, I::Created) => &[(1, A::Decision(decision::decision_created))],
        (V::DecisionRequirements, I::Created) => &[(
            1,
            A::DecisionRequirements(decision::decision_requirements_created),
        )],

        (V::ProcessInstance, I::ElementActivating) => {
            &[(1, A::ProcessInstance(process_instance::element_activating))]
        }
        (V::ProcessInstance, I::ElementActivated) => {
            &[(1, A::ProcessInstance(process_instance::element_activated))]
        }
        (V::ProcessInstance, I::ElementCompleting) => {
            &[(1, A::ProcessInstance(process_instance::element_completing))]
        }
        (V::ProcessInstance, I::ElementTerminating) => {
            &[(1, A::ProcessInstance(process_instance::element_terminating))]
        }
        (V::ProcessInstance, I::ElementCompleted) => {
            &[(1, A::ProcessInstance(process_instance::element_completed))]
        }
        (V::ProcessInstance, I::ElementTerminated) => {
            &[(1, A::ProcessInstance(process_instance::element_terminated))]
        }
        (V::ProcessInstance, I::SequenceFlowTaken) => {
            &[(1, A::ProcessInstance(process_instance::sequence_flow_taken))]
        }
        (V::ProcessInstance, I::Deleted) => {
            &[(1, A::ProcessInstance(process_instance::instance_deleted))]
        }
        // Logs written before these existed hold TRIGGERING and TRIGGERED side by side,
        // so they replay to the same state.
        (V::ProcessEvent, I::Triggering) => {
            &[(1, A::ProcessEvent(process_instance::event_triggering))]
        }
        (V::ProcessEvent, I::Triggered) => {
            &[(1, A::ProcessEvent(process_instance::event_triggered))]
        }
        (V::ProcessInstanceCreation, I::Created) => &[(
            1,
            A::ProcessInstanceCreation(process_instance::instance_created),
        )],

        (V::Job, I::Created) => &[(1, A::Job(job::created))],
        // Version 1 counts a listener's job on its element; logs written before
        // listeners existed hold no such job, so they replay the same.
        (V::Job, I::Completed) => &[(1, A::Job(job::completed))],
        (V::Job, I::Canceled) => &[(1, A::Job(job::removed))],
        (V::Job, I::TimedOut) => &[(1, A::Job(job::activatable_again))],
        (V::Job, I::RecurredAfterBackoff) => &[(1, A::Job(job::activatable_again))],
        (V::Job, I::Yielded) => &[(1, A::Job(job::activatable_again))],
        (V::Job, I::Failed) => &[(1, A::Job(job::failed))],
        (V::Job, I::ErrorThrown) => &[(1, A::Job(job::error_thrown))],
        (V::Job, I::RetriesUpdated) => &[(1, A::Job(job::updated))],
        (V::Job, I::TimeoutUpdated) => &[(1, A::Job(job::updated))],
        (V::JobBatch, I::Activated) => &[(1, A::JobBatch(job::batch_activated))],

        (V::Variable, I::Created) => &[(1, A::Variable(variable::written))],
        (V::Variable, I::Updated) => &[(1, A::Variable(variable::written))],

        (V::Incident, I::Created) => &[(1, A::Incident(incident::created))],
        (V::Incident, I::Resolved) => &[(1, A::Incident(incident::resolved))],

        (V::Message, I::Published) => &[(1, A::Message(message::published))],
        (V::Message, I::Expired) => &[(1, A::Message(message::expired))],
        (V::MessageSubscription, I::Created) => {
            &[(1, A::MessageSubscription(message::subscription_created))]
        }
        (V::MessageSubscription, I::Correlating) => {
            &[(1, A::MessageSubscription(message::subscription_correlating))]
        }
        (V::MessageSubscription, I::Correlated) => {
            &[(1, A::MessageSubscription(message::subscription_correlated))]
        }
        (V::MessageSubscription, I::Rejected) => {
            &[(1, A::MessageSubscription(message::subscription_rejected))]
        }
        (V::MessageSubscription, I::Deleted) => {
            &[(1, A::MessageSubscription(message::subscription_deleted))]
        }
        (V::ProcessMessageSubscription, I::Creating) => &[(
            1,
            A::ProcessMessageSubscription(message::process_subscription_creating),
        )],
        (V::ProcessMessageSubscription, I::Created) => &[(
            1,
            A::ProcessMessageSubscription(message::process_subscription_created),
        )],
        (V::ProcessMessageSubscription, I::Deleting) => &[(
            1,
            A::ProcessMessageSubscription(message::process_subscription_deleting),
        )],
        (V::ProcessMessageSubscription, I::Correlated) => &[(
            1,
            A::ProcessMessageSubscription(message::process_subscription_correlated),
        )],
        (V::ProcessMessageSubscription, I::Deleted) => &[(
            1,
            A::ProcessMessageSubscription(message::process_subscription_deleted),
        )],

        (V::Timer, I::Created) => &[(1, A::Timer(timer::created))],
        (V::Timer, I::Triggered) => &[(1, A::Timer(timer::removed))],
        (V::Timer, I::Canceled) => &[(1, A::Timer(timer::removed))],

        (V::CommandDistribution, I::Distributing) => {
            &[(1, A::CommandDistribution(distribution::distributing))]
        }
        (V::CommandDistribution, I::Acknowledged) => {
            &[(1, A::CommandDistribution(distribution::acknowledged))]
        }
        (V::CommandDistribution, I::Distributed) => {
            &[(1, A::CommandDistribution(distribution::distributed))]
        }

        (V::Signal, I::Broadcasted) => &[(1, A::Signal(signal::broadcasted))],
        (V::SignalSubscription, I::Created) => {
            &[(1, A::SignalSubscription(signal::subscription_created))]
        }
        (V::SignalSubscription, I::Deleted) => {
            &[(1, A::SignalSubscription(signal::subscription_deleted))]
        }
        (V::CompensationSubscription, I::Created | I::Triggered | I::Migrated) => {
            &[(1, A::CompensationSubscription(compensation::stored))]
        }
        (V::CompensationSubscription, I::Completed | I::Deleted) => {
            &[(1, A::CompensationSubscription(compensation::removed))]
        }
        (V::UserTask, I::Creating) => &[(1, A::UserTask(user_task::creating))],
        (V::UserTask, I::Created) => &[(1, A::UserTask(user_task::created))],
        (V::UserTask, I::Corrected) => &[(1, A::UserTask(user_task::corrected))],
        (V::UserTask, I::CompletionDenied | I::AssignmentDenied | I::UpdateDenied) => {
            &[(1, A::UserTask(user_task::denied))]
        }
        (V::UserTask, I::Assigning | I::Claiming) => &[(1, A::UserTask(user_task::assigning))],
        (V::UserTask, I::Assigned) => &[(1, A::UserTask(user_task::changed))],
        (V::UserTask, I::Updating) => &[(1, A::UserTask(user_task::updating))],
        (V::UserTask, I::Updated) => &[(1, A::UserTask(user_task::changed))],
        (V::UserTask, I::Completing) => &[(1, A::UserTask(user_task::completing))],
        (V::UserTask, I::Completed) => &[(1, A::UserTask(user_task::removed))],
        // Now keeps a canceling transition; logs written before canceling listeners
        // hold CANCELED right after, which removes the task: the same state.
        (V::UserTask, I::Canceling) => &[(1, A::UserTask(user_task::canceling))],
        (V::UserTask, I::Canceled) => &[(1, A::UserTask(user_task::removed))],
        (V::Form, I::Created) => &[(1, A::Form(user_task::form_created))],
        (V::Form, I::Deleted) => &[(1, A::Form(user_task::form_deleted))],
        (V::Decision, I::Deleted) => &[(1, A::Decision(decision::decision_deleted))],
        (V::DecisionRequirements, I::Deleted) => &[(
            1,
            A::DecisionRequirements(decision::decision_requirements_deleted),
        )],
        (V::Process, I::Deleting) => &[(1, A::Process(deployment::process_deleting))],
        (V::Process, I::Deleted) => &[(1, A::Process(deployment::process_deleted))],
        (V::ProcessInstance, I::ElementMigrated) => {
            &[(1, A::ProcessInstance(migration::element_migrated))]
        }
        (V::Job, I::Migrated) => &[(1, A::Job(migration::job_migrated))],
        (V::UserTask, I::Migrated) => &[(1, A::UserTask(migration::user_task_migrated))],
        (V::Incident, I::Migrated) => &[(1, A::Incident(migration::incident_migrated))],
        (V::Timer, I::Migrated) => &[(1, A::Timer(migration::timer_migrated))],
        (V::ProcessMessageSubscription, I::Migrated) => &[(
            1,
            A::ProcessMessageSubscription(migration::process_message_subscription_migrated),
        )],
        (V::MessageSubscription, I::Migrated) => &[(
            1,
            A::MessageSubscription(migration::message_subscription_migrated),
        )],
        (V::SignalSubscription, I::Migrated) => &[(
            1,
            A::SignalSubscription(migration::signal_subscription_migrated),
        )],
        (V::ResourceDeletion, I::Deleting) => {
            &[(1, A::ResourceDeletion(decision::resource_deleting))]
        }
        (V::AdHocSubProcessInstruction, I::Completed) => &[(
            1,
            A::AdHocSubProcessInstruction(process_instance::ad_hoc_completion_fulfilled),
        )],
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
        timestamp: Timestamp,
        engine_version: u32,
    ) -> Result<()> {
        if record.record_type != RecordType::Event {
            return Ok(());
        }
        let versions = (self.table)(record.value.value_type(), record.intent);
        let Some((_, applier)) = in_force(versions, engine_version) else {
            return Ok(());
        };
        let mut ctx = Apply {
            state,
            models,
            timestamp,
        };
        applier.apply(&mut ctx, record.key, &record.value)
    }
}
