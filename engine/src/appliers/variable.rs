//! VARIABLE: a variable's value in its scope.

use rill_protocol::Key;
use rill_protocol::value::VariableRecord;

use super::Apply;
use crate::error::Result;
use crate::state::StoredVariable;

/// CREATED and UPDATED.
pub(super) fn written(ctx: &mut Apply<'_, '_>, key: Key, value: &VariableRecord) -> Result<()> {
    let state = &mut *ctx.state;
    if value.name == crate::behavior::MESSAGE_START_VARIABLE
        && value.scope_key == value.process_instance_key
    {
        // The instance was started by a message: it holds the correlation key of its
        // process until it ends, and the message counts as received by the process.
        if let Ok(start) = serde_json::from_str::<crate::behavior::MessageStart>(&value.value) {
            if !start.correlation_key.is_empty() {
                state.put_message_start_lock(
                    &value.bpmn_process_id,
                    &start.correlation_key,
                    value.process_instance_key,
                );
            }
            state.mark_message_correlated(start.message_key, &value.bpmn_process_id);
        }
    }
    if value.scope_key != value.process_instance_key {
        state.update_element_instance(value.scope_key, |i| i.has_variables = true)?;
    }
    state.put_variable(
        value.process_instance_key,
        value.scope_key,
        &value.name,
        &StoredVariable {
            key,
            value: value.value.clone(),
        },
    )
}
