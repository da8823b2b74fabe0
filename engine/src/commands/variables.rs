//! VARIABLE_DOCUMENT UPDATE: set variables on a scope, locally or with propagation.

use rill_protocol::value::{VariableDocumentRecord, VariableUpdateSemantics};
use rill_protocol::{Intent, SetVariables};

use super::{tenant, variables_map};
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

pub(super) fn set(p: &mut Processing<'_>, command: &SetVariables) -> Result<()> {
    let scope_key = command.element_instance_key;
    let record = VariableDocumentRecord {
        scope_key: scope_key.get(),
        update_semantics: if command.local {
            VariableUpdateSemantics::Local
        } else {
            VariableUpdateSemantics::Propagate
        },
        variables: command.variables.clone(),
        tenant_id: tenant(),
    };
    let document = match variables_map(&command.variables, "the variables") {
        Ok(document) => document,
        Err(rejection) => {
            p.reject(scope_key, Intent::Update, record, rejection);
            return Ok(());
        }
    };
    let Some(scope) = p.read().element_instance(scope_key)? else {
        let rejection = Rejection::not_found(format!(
            "Expected to update variables for element with key '{scope_key}', but no such \
             element was found"
        ));
        p.reject(scope_key, Intent::Update, record, rejection);
        return Ok(());
    };
    p.command(scope_key, Intent::Update, record.clone());
    let key = p.next_key()?;
    if command.local {
        p.set_local_variables(&scope, document)?;
    } else {
        p.propagate_variables(scope_key, &scope, document)?;
    }
    p.event(key, Intent::Updated, record.clone())?;
    p.respond(key, Intent::Updated, record);
    Ok(())
}
