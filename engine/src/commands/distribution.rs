//! Commands between partitions, through a replicated outbox.
//!
//! ```text
//! sender:   DISTRIBUTING (outbox += (target, seq)) ─► Action::Send / pending_sends
//! receiver: FromPartition{source, seq}: seq = last + 1 ? apply, DISTRIBUTED (inbox = seq)
//!                                       seq <= last   ? duplicate: rejected, nothing changes
//! sender:   AcknowledgeSend{target, seq} ─► ACKNOWLEDGED (outbox -= (target, seq))
//! ```
//!
//! The partition core delivers what `pending_sends` lists (again until acknowledged)
//! and proposes `AcknowledgeSend` on the sender once the receiver applied it. Carried:
//! deployments, resource deletions, signals, users, and the open/correlate/close commands of message subscriptions whose
//! two sides live on different partitions.

use rill_engine_api::Action;
use rill_protocol::Key;
use rill_protocol::value::{CommandDistributionRecord, DeploymentRecord, ProcessRecord};
use rill_protocol::{Command, Intent, InterPartitionCommand, PartitionId, RecordValue, ValueType};

use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;
use crate::state::{OutboxEntry, Reader};

fn record(partition: u16, value_type: ValueType, intent: Intent) -> CommandDistributionRecord {
    CommandDistributionRecord {
        partition_id: i32::from(partition),
        value_type,
        intent,
    }
}

/// The command that delivers an outbox entry, with its payload read from state.
pub(crate) fn outgoing(
    state: Reader<'_>,
    target: u16,
    sequence: u64,
    entry: &OutboxEntry,
) -> Result<Option<(PartitionId, Command)>> {
    let value = match (&entry.value, entry.value_type, entry.intent) {
        (Some(value), _, _) => value.clone(),
        (None, ValueType::Deployment, Intent::Create) => match state.deployment(entry.key)? {
            Some(deployment) => RecordValue::Deployment(deployment),
            None => return Ok(None),
        },
        (None, ValueType::ResourceDeletion, Intent::Delete) => {
            match state.resource_deletion(entry.key)? {
                Some(deletion) => RecordValue::ResourceDeletion(deletion),
                None => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    Ok(Some((
        PartitionId(target),
        Command::FromPartition(Box::new(InterPartitionCommand {
            source: entry.key.partition(),
            sequence,
            value_type: entry.value_type,
            intent: entry.intent,
            key: entry.key,
            value,
        })),
    )))
}

/// Queues `key` (of `value_type`/`intent`) for every other partition and sends it.
pub(crate) fn distribute(
    p: &mut Processing<'_>,
    key: Key,
    value_type: ValueType,
    intent: Intent,
) -> Result<()> {
    let me = p.ctx.partition_id.get();
    for target in 1..=p.ctx.partition_count {
        if target == me {
            continue;
        }
        p.event(
            key,
            Intent::Distributing,
            record(target, value_type, intent),
        )?;
        send_latest(p, target)?;
    }
    Ok(())
}

/// Partitions `first..=last` were added: every deployment and resource deletion made
/// here goes to them, in the order they were made, before anything distributed later
/// (the partition core runs this right after raising the partition count).
pub(super) fn redistribute(
    p: &mut Processing<'_>,
    first: PartitionId,
    last: PartitionId,
) -> Result<()> {
    let me = p.ctx.partition_id.get();
    p.command(
        Key::NONE,
        Intent::Distribute,
        record(last.get(), ValueType::Deployment, Intent::Create),
    );
    let made = p.read().distributed_resources(me)?;
    for target in first.get()..=last.get() {
        if target == me {
            continue;
        }
        for &(key, is_deployment) in &made {
            let (value_type, intent) = if is_deployment {
                (ValueType::Deployment, Intent::Create)
            } else {
                (ValueType::ResourceDeletion, Intent::Delete)
            };
            p.event(
                key,
                Intent::Distributing,
                record(target, value_type, intent),
            )?;
            send_latest(p, target)?;
        }
    }
    Ok(())
}

pub(super) fn from_partition(
    p: &mut Processing<'_>,
    command: &InterPartitionCommand,
) -> Result<()> {
    let source = command.source.get();
    let value = record(source, command.value_type, command.intent);
    let last = p.read().inbox_sequence(source)?;
    if let Err(rejection) = check_sequence(source, last, command.sequence) {
        p.reject(command.key, Intent::Distribute, value, rejection);
        return Ok(());
    }
    p.command(command.key, Intent::Distribute, value.clone());
    // Anything this version does not understand is skipped (and still counted), so
    // the sender's later commands are not blocked behind it.
    match (&command.value, command.value_type, command.intent) {
        (RecordValue::Deployment(deployment), _, Intent::Create) => {
            apply_deployment(p, command.key, deployment)?;
        }
        (RecordValue::MessageSubscription(s), ValueType::MessageSubscription, Intent::Create) => {
            p.open_remote_subscription(s)?;
        }
        (RecordValue::MessageSubscription(s), ValueType::MessageSubscription, Intent::Delete) => {
            p.delete_message_subscription(s)?;
        }
        (RecordValue::MessageSubscription(s), ValueType::MessageSubscription, Intent::Migrate) => {
            super::migration::migrate_message_side(p, s)?;
        }
        (
            RecordValue::MessageSubscription(s),
            ValueType::ProcessMessageSubscription,
            Intent::Correlate,
        ) => {
            p.correlate_here(s)?;
        }
        (RecordValue::Signal(signal), ValueType::Signal, Intent::Broadcast) => {
            p.event(command.key, Intent::Broadcasted, signal.clone())?;
            p.catch_signal(signal, false)?;
        }
        (RecordValue::ResourceDeletion(deletion), _, Intent::Delete) => {
            super::resource_deletion::apply_distributed(p, command.key, deletion)?;
        }
        (RecordValue::User(user), ValueType::User, intent) => {
            super::users::apply_distributed(p, intent, user)?;
        }
        _ => {}
    }
    p.event(
        Key(command.sequence as i64),
        Intent::Distributed,
        value.clone(),
    )?;
    p.respond(command.key, Intent::Distributed, value);
    Ok(())
}

/// Takes a command from `source` only if it is the next one after `last`.
fn check_sequence(source: u16, last: u64, sequence: u64) -> std::result::Result<(), Rejection> {
    if sequence <= last {
        return Err(Rejection::already_exists(format!(
            "Expected command {sequence} from partition {source} to be new, but it was already \
             applied"
        )));
    }
    if sequence != last + 1 {
        return Err(Rejection::invalid_state(format!(
            "Expected command {} from partition {source}, but got command {sequence}; commands \
             are applied in order",
            last + 1
        )));
    }
    Ok(())
}

/// A deployment made on another partition: the same processes, keys and versions.
fn apply_deployment(p: &mut Processing<'_>, key: Key, deployment: &DeploymentRecord) -> Result<()> {
    for metadata in &deployment.processes_metadata {
        if metadata.is_duplicate || p.read().process(metadata.process_definition_key)?.is_some() {
            continue;
        }
        let Some(resource) = deployment.resource_named(&metadata.resource_name) else {
            continue;
        };
        let process = ProcessRecord {
            bpmn_process_id: metadata.bpmn_process_id.clone(),
            version: metadata.version,
            process_definition_key: metadata.process_definition_key,
            resource_name: metadata.resource_name.clone(),
            checksum: metadata.checksum.clone(),
            resource: resource.resource.clone(),
            is_duplicate: false,
            tenant_id: metadata.tenant_id.clone(),
            version_tag: metadata.version_tag.clone(),
        };
        let latest = p.read().latest_process(&metadata.bpmn_process_id)?;
        let key = Key(metadata.process_definition_key);
        p.event(key, Intent::Created, process)?;
        // Signals reach every partition, so every partition subscribes the signal start
        // events of the latest version.
        if latest.is_none_or(|(version, _)| version < metadata.version) {
            p.write_message_start_subscriptions(key, latest.map(|(_, k)| k))?;
            if let Some((_, previous)) = latest {
                p.close_signal_subscriptions(previous)?;
            }
            let signalled = resource
                .resource
                .0
                .windows(b"signalEventDefinition".len())
                .any(|w| w == b"signalEventDefinition");
            if signalled {
                let deployed = p.model(key)?;
                p.replace_signal_start_subscriptions(&deployed, None)?;
            }
        }
    }
    super::forms::apply_distributed_forms(p, key, deployment)?;
    super::rpa_resources::apply_distributed_rpa_resources(p, deployment)?;
    super::decision_deployment::apply_distributed(p, deployment)?;
    p.event(key, Intent::Created, deployment.clone())
}

pub(super) fn acknowledge(
    p: &mut Processing<'_>,
    target: PartitionId,
    sequence: u64,
) -> Result<()> {
    let target_id = target.get();
    let Some(entry) = p.read().outbox_entry(target_id, sequence)? else {
        let rejection = Rejection::not_found(format!(
            "Expected to acknowledge command {sequence} sent to partition {target_id}, but it \
             is not waiting (already acknowledged?)"
        ));
        p.reject(
            Key(sequence as i64),
            Intent::Acknowledge,
            record(
                target_id,
                ValueType::CommandDistribution,
                Intent::Acknowledge,
            ),
            rejection,
        );
        return Ok(());
    };
    let value = record(target_id, entry.value_type, entry.intent);
    p.command(Key(sequence as i64), Intent::Acknowledge, value.clone());
    p.event(Key(sequence as i64), Intent::Acknowledged, value.clone())?;
    p.respond(Key(sequence as i64), Intent::Acknowledged, value);
    // The instance's partition has taken the message: the correlation is done here.
    if let (
        ValueType::ProcessMessageSubscription,
        Intent::Correlate,
        Some(RecordValue::MessageSubscription(sent)),
    ) = (entry.value_type, entry.intent, &entry.value)
    {
        p.finish_remote_correlation(sent)?;
    }
    Ok(())
}

/// After an event queued an outbox entry for `target`, sends it at once.
pub(crate) fn send_latest(p: &mut Processing<'_>, target: u16) -> Result<()> {
    let sequence = p.read().outbox_sequence(target)?;
    if let Some(entry) = p.read().outbox_entry(target, sequence)?
        && let Some((partition, command)) = outgoing(p.read(), target, sequence, &entry)?
    {
        p.out.actions.push(Action::Send { partition, command });
    }
    Ok(())
}
