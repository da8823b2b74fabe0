//! AD_HOC_SUB_PROCESS_INSTRUCTION ACTIVATE: enter elements of an active ad-hoc
//! subprocess on request (Zeebe 8.8's "activate activities within an ad-hoc
//! sub-process"). Everything is checked first; a bad element id rejects the whole
//! command. Then the inner instances are created, `ACTIVATED` is written (the answer),
//! and the elements are entered.

use std::collections::HashSet;

use rill_protocol::value::{AdHocSubProcessInstructionRecord, BpmnElementType};
use rill_protocol::{ActivateAdHocSubProcessActivities, Intent};
use serde_json::{Map, Value};

use super::{tenant, variables_map};
use crate::behavior::{ad_hoc_definition, resolve_ad_hoc_elements};
use crate::context::Processing;
use crate::error::Result;
use crate::model::ElementIdx;
use crate::outcome::Rejection;
use crate::state::ElementState;

/// The record of the command as the client sent it.
pub(super) fn placeholder(
    command: &ActivateAdHocSubProcessActivities,
) -> AdHocSubProcessInstructionRecord {
    AdHocSubProcessInstructionRecord {
        ad_hoc_sub_process_instance_key: command.ad_hoc_sub_process_instance_key.get(),
        activate_elements: command.elements.clone(),
        cancel_remaining_instances: command.cancel_remaining_instances,
        tenant_id: tenant(),
        completion_condition_fulfilled: false,
    }
}

pub(super) fn activate(
    p: &mut Processing<'_>,
    command: &ActivateAdHocSubProcessActivities,
) -> Result<()> {
    let key = command.ad_hoc_sub_process_instance_key;
    let record = placeholder(command);
    let Some(ad_hoc) = p.active(key)? else {
        let rejection = Rejection::not_found(format!(
            "Expected to activate activities for ad-hoc sub-process but no ad-hoc sub-process \
             instance found with key '{key}'."
        ));
        p.reject(key, Intent::Activate, record, rejection);
        return Ok(());
    };
    let checked = match check(&ad_hoc, command) {
        Ok(_) if p.ad_hoc_interrupted(&ad_hoc)? => Err(interrupted(&ad_hoc)),
        checked => checked,
    };
    let elements = match checked {
        Ok(elements) => elements,
        Err(rejection) => {
            p.reject(key, Intent::Activate, record, rejection);
            return Ok(());
        }
    };
    p.command(key, Intent::Activate, record.clone());
    p.activate_ad_hoc_elements(&ad_hoc, elements, command.cancel_remaining_instances)?;
    p.event(key, Intent::Activated, record.clone())?;
    p.respond(key, Intent::Activated, record);
    Ok(())
}

/// An interrupting event subprocess runs in the ad-hoc subprocess: nothing more is
/// activated in it (the ad-hoc subprocess completes with the event subprocess).
pub(super) fn interrupted(ad_hoc: &crate::context::Active) -> Rejection {
    Rejection::invalid_state(format!(
        "Expected to activate activities for ad-hoc sub-process '{}' with key '{}', but it \
         is interrupted by an event sub-process.",
        ad_hoc.record().element_id,
        ad_hoc.key()
    ))
}

/// An element to enter and the locals of its inner instance.
type Activation = (ElementIdx, Map<String, Value>);

/// The elements to enter with their variables, or why the command is refused (Zeebe's
/// reasons and types).
fn check(
    ad_hoc: &crate::context::Active,
    command: &ActivateAdHocSubProcessActivities,
) -> std::result::Result<Vec<Activation>, Rejection> {
    let key = command.ad_hoc_sub_process_instance_key;
    let record = ad_hoc.record();
    let definition = match ad_hoc_definition(ad_hoc) {
        Some(definition) if record.bpmn_element_type == BpmnElementType::AdHocSubProcess => {
            definition
        }
        _ => {
            // A multi-instance ad-hoc subprocess's body holds the iterations; each
            // iteration is an ad-hoc subprocess instance with its own key.
            let what = if ad_hoc.is_multi_instance_body() {
                format!(
                    "multi-instance body of the {}",
                    ad_hoc.element().kind.bpmn_name()
                )
            } else {
                ad_hoc.element().kind.bpmn_name().to_owned()
            };
            return Err(Rejection::not_found(format!(
                "Expected to activate activities for ad-hoc sub-process with key '{key}', but \
                 the element instance is the {what} '{}', not an ad-hoc sub-process.",
                record.element_id
            )));
        }
    };
    if ad_hoc.instance.state != ElementState::Activated {
        return Err(Rejection::invalid_state(format!(
            "Expected to activate activities for ad-hoc sub-process with key '{key}', but it \
             is not active."
        )));
    }
    if command.elements.is_empty() {
        return Err(Rejection::invalid_argument(format!(
            "Expected to activate activities for ad-hoc sub-process with key '{key}', but no \
             elements were given."
        )));
    }
    let mut seen = HashSet::new();
    if !command
        .elements
        .iter()
        .all(|element| seen.insert(element.element_id.as_str()))
    {
        return Err(Rejection::invalid_argument(format!(
            "Expected to activate activities for ad-hoc sub-process with key '{key}', but \
             duplicate activities were given."
        )));
    }
    let ids: Vec<&str> = command
        .elements
        .iter()
        .map(|element| element.element_id.as_str())
        .collect();
    let found = resolve_ad_hoc_elements(ad_hoc, definition, &ids).map_err(Rejection::not_found)?;
    let mut elements = Vec::with_capacity(found.len());
    for (idx, element) in found.into_iter().zip(&command.elements) {
        let what = format!("the variables of element '{}'", element.element_id);
        let variables = variables_map(&element.variables, &what)?;
        elements.push((idx, variables));
    }
    Ok(elements)
}
