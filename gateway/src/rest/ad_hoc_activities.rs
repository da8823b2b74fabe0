//! `POST /v2/element-instances/ad-hoc-activities/{adHocSubProcessInstanceKey}/activation`:
//! Camunda 8.8's activation of elements inside an active ad-hoc subprocess, onto the
//! engine's AD_HOC_SUB_PROCESS_INSTRUCTION ACTIVATE command.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::ActivateAdHocSubProcessActivities;
use rill_protocol::value::AdHocSubProcessActivateElement;
use serde::Deserialize;

use super::json::{Variables, parse_body};
use super::{Body, KeyParam, SharedState};
use crate::ops::{self, ClientError};

/// Camunda 8.8's `AdHocSubProcessActivateActivitiesInstruction`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActivationRequest {
    elements: Vec<ElementRequest>,
    #[serde(default)]
    cancel_remaining_instances: bool,
}

/// Camunda 8.8's `AdHocSubProcessActivateActivityReference`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ElementRequest {
    element_id: String,
    #[serde(default)]
    variables: Option<Variables>,
}

/// 204 once the elements are activated; 400 for a malformed request or an element
/// that cannot be activated with these variables, 404 for a key that is not an active
/// ad-hoc subprocess's or an element id that is not an activatable element of it, 409
/// when the ad-hoc subprocess is not active (nothing is changed then).
pub async fn activate(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: ActivationRequest = parse_body(&body)?;
    if request.elements.is_empty() {
        return Err(ClientError::invalid_argument(
            "No elements provided; give at least one element to activate",
        ));
    }
    let mut elements = Vec::with_capacity(request.elements.len());
    for (index, element) in request.elements.into_iter().enumerate() {
        if element.element_id.trim().is_empty() {
            return Err(ClientError::invalid_argument(format!(
                "No elementId provided in elements[{index}]"
            )));
        }
        let variables = element
            .variables
            .unwrap_or_default()
            .checked(&format!("elements[{index}].variables"), &state.settings)?;
        elements.push(AdHocSubProcessActivateElement {
            element_id: element.element_id,
            variables,
        });
    }
    let activation = ActivateAdHocSubProcessActivities {
        ad_hoc_sub_process_instance_key: key,
        elements,
        cancel_remaining_instances: request.cancel_remaining_instances,
    };
    ops::activate_ad_hoc_activities(&state, activation).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
