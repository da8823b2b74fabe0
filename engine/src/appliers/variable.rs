//! VARIABLE: a variable's value in its scope.

use rill_protocol::Key;
use rill_protocol::value::VariableRecord;

use super::Apply;
use crate::error::Result;
use crate::state::StoredVariable;

/// CREATED and UPDATED.
pub(super) fn written(ctx: &mut Apply<'_, '_>, key: Key, value: &VariableRecord) -> Result<()> {
    let state = &mut *ctx.state;
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
