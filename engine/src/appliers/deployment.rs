//! PROCESS and DEPLOYMENT: deployed definitions, and the deployment kept for
//! distribution to other partitions.

use rill_protocol::Key;
use rill_protocol::value::{DeploymentRecord, ProcessRecord, ResourceRecord};

use super::Apply;
use crate::error::Result;
use crate::model::ElementKind;
use crate::state::MessageStartSubscription;

pub(super) fn process_created(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessRecord,
) -> Result<()> {
    let latest = ctx.state.read().latest_process(&value.bpmn_process_id)?;
    ctx.state.put_process(value)?;
    if latest.is_some_and(|(version, _)| version >= value.version) {
        return Ok(());
    }
    // The new latest version's message start events replace the previous version's.
    // On every partition the deployment reaches, so a message starts an instance on
    // the partition its correlation key belongs to.
    replace_message_starts(ctx, &value.bpmn_process_id, Some((key, value)))
}

/// Points the message start events of `bpmn_process_id` at those of `latest` (none if
/// no version is left).
fn replace_message_starts(
    ctx: &mut Apply<'_, '_>,
    bpmn_process_id: &str,
    latest: Option<(Key, &ProcessRecord)>,
) -> Result<()> {
    let mut starts = Vec::new();
    let mut names = Vec::new();
    if let Some((key, value)) = latest {
        let may_have_starts = value
            .resource
            .0
            .windows(b"messageEventDefinition".len())
            .any(|w| w == b"messageEventDefinition");
        if may_have_starts {
            let process = ctx.models.get(ctx.state.read(), key)?;
            for start in process.model.event_start_events() {
                let element = process.model.element(start);
                if let ElementKind::MessageStartEvent { message_name } = &element.kind {
                    starts.push(MessageStartSubscription {
                        bpmn_process_id: bpmn_process_id.to_owned(),
                        process_definition_key: key,
                        start_event_id: element.id.clone(),
                    });
                    names.push(message_name.clone());
                }
            }
        }
    }
    ctx.state
        .replace_message_starts(bpmn_process_id, &starts, &names)
}

/// `PROCESS DELETING`: no new instance starts from the definition; if it was the
/// latest version, the previous one is the latest again and its message start events
/// are the ones subscribed.
pub(super) fn process_deleting(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessRecord,
) -> Result<()> {
    let id = &value.bpmn_process_id;
    let definition = Key(value.process_definition_key);
    let was_latest = ctx
        .state
        .read()
        .latest_process(id)?
        .is_some_and(|(_, key)| key == definition);
    ctx.state.mark_process_deleting(value)?;
    ctx.models.forget_latest(id);
    if !was_latest {
        return Ok(());
    }
    let latest = ctx.state.read().latest_process(id)?;
    let record = match latest {
        Some((_, key)) => ctx.state.read().process(key)?.map(|record| (key, record)),
        None => None,
    };
    replace_message_starts(ctx, id, record.as_ref().map(|(key, r)| (*key, r)))
}

/// `PROCESS DELETED`: the definition is gone from this partition (no instance of it
/// is active here any more).
pub(super) fn process_deleted(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessRecord,
) -> Result<()> {
    ctx.state.delete_process(value)?;
    ctx.models.remove(Key(value.process_definition_key));
    Ok(())
}

/// RESOURCE CREATED: a new version of a resource (an RPA script), found by id and
/// version (and by deployment, from the deployment's `resourceMetadata`).
pub(super) fn resource_created(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ResourceRecord,
) -> Result<()> {
    ctx.state.put_resource(value)
}

pub(super) fn deployment_created(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &DeploymentRecord,
) -> Result<()> {
    ctx.state.put_deployment(key, value)
}
