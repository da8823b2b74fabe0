//! PROCESS and DEPLOYMENT: deployed definitions, and the deployment kept for
//! distribution to other partitions.

use rill_protocol::Key;
use rill_protocol::value::{DeploymentRecord, ProcessRecord};

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
    let mut starts = Vec::new();
    let mut names = Vec::new();
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
                    bpmn_process_id: value.bpmn_process_id.clone(),
                    process_definition_key: key,
                    start_event_id: element.id.clone(),
                });
                names.push(message_name.clone());
            }
        }
    }
    ctx.state
        .replace_message_starts(&value.bpmn_process_id, &starts, &names)
}

pub(super) fn deployment_created(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &DeploymentRecord,
) -> Result<()> {
    ctx.state.put_deployment(key, value)
}
