//! Process instances: create (optionally awaiting completion), cancel, modify, read.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::history::{HistoricProcessInstance, process_instance_state_name};
use rill_protocol::{
    ActivateInstruction, CreateProcessInstance, JsonValue, Key, ModifyProcessInstance,
    ProcessSelector, VariableInstruction,
};
use serde::{Deserialize, Serialize};

use super::json::{KeyString, Variables, optional_long, parse_body, parse_optional_body};
use super::{
    Body, KeyParam, SharedState, check_tenant, date_text, key_text, operation_reference,
    unsupported,
};
use crate::ops::{self, ClientError, client_timeout};

/// `ProcessCreationById` and `ProcessCreationByKey` in one: exactly one of the two
/// selectors must be given.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateRequest {
    process_definition_id: Option<String>,
    process_definition_key: Option<KeyString>,
    process_definition_version: Option<i32>,
    process_definition_version_tag: Option<String>,
    #[serde(default)]
    variables: Variables,
    tenant_id: Option<String>,
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
    start_instructions: Option<Vec<serde_json::Value>>,
    runtime_instructions: Option<Vec<serde_json::Value>>,
    await_completion: Option<bool>,
    fetch_variables: Option<Vec<String>>,
    #[serde(default, deserialize_with = "optional_long")]
    request_timeout: Option<i64>,
    tags: Option<Vec<String>>,
    business_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateResult {
    process_definition_id: String,
    process_definition_version: i32,
    tenant_id: String,
    variables: JsonValue,
    process_definition_key: String,
    process_instance_key: String,
    // 8.8's `CreateProcessInstanceResult` has no `businessId` (an 8.10 field).
    tags: Vec<String>,
}

pub async fn create(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<CreateResult>, ClientError> {
    let request: CreateRequest = parse_body(&body)?;
    check_tenant("tenantId", request.tenant_id.as_deref())?;
    unsupported(
        request
            .start_instructions
            .as_ref()
            .is_some_and(|v| !v.is_empty()),
        "startInstructions",
    )?;
    unsupported(
        request
            .runtime_instructions
            .as_ref()
            .is_some_and(|v| !v.is_empty()),
        "runtimeInstructions",
    )?;
    let tags = rill_protocol::tags::validate_tags(&request.tags.unwrap_or_default()).map_err(
        |reason| ClientError::invalid_field("tags", format!("Invalid value for 'tags': {reason}")),
    )?;
    unsupported(request.business_id.is_some(), "businessId")?;
    unsupported(
        request.process_definition_version_tag.is_some(),
        "Selecting a process by processDefinitionVersionTag",
    )?;
    let reference = operation_reference(request.operation_reference)?;

    let process = match (
        request.process_definition_id,
        request.process_definition_key,
    ) {
        (Some(_), Some(_)) => {
            return Err(ClientError::invalid_argument(
                "Only one of [processDefinitionId, processDefinitionKey] is allowed",
            ));
        }
        (None, None) => {
            return Err(ClientError::invalid_argument(
                "At least one of [processDefinitionId, processDefinitionKey] is required",
            ));
        }
        (Some(id), None) => {
            if id.trim().is_empty() {
                return Err(ClientError::invalid_field(
                    "processDefinitionId",
                    "No processDefinitionId provided",
                ));
            }
            let version = match request.process_definition_version {
                None | Some(-1) => None,
                Some(v) if v > 0 => Some(v),
                Some(v) => {
                    return Err(ClientError::invalid_field(
                        "processDefinitionVersion",
                        format!(
                            "The value for processDefinitionVersion is '{v}' but must be a \
                             positive version, or -1 for the latest"
                        ),
                    ));
                }
            };
            ProcessSelector::ById {
                bpmn_process_id: id,
                version,
            }
        }
        (None, Some(KeyString(key))) => ProcessSelector::ByKey(key),
    };

    let await_result = request.await_completion.unwrap_or(false);
    let create = CreateProcessInstance {
        process,
        variables: request.variables.checked("variables", &state.settings)?,
        await_result,
        fetch_variables: request.fetch_variables.unwrap_or_default(),
        tags: tags.clone(),
    };
    let result = if await_result {
        let timeout = client_timeout(request.request_timeout, &state.settings)
            .unwrap_or(state.settings.request_timeout);
        let record = ops::create_instance_with_result(&state, create, reference, timeout).await?;
        CreateResult {
            process_definition_id: record.bpmn_process_id,
            process_definition_version: record.version,
            tenant_id: record.tenant_id,
            variables: if record.variables.is_null() {
                JsonValue::empty_object()
            } else {
                record.variables
            },
            process_definition_key: record.process_definition_key.to_string(),
            process_instance_key: record.process_instance_key.to_string(),
            // The result record has no tags: the instance's are the ones asked for.
            tags,
        }
    } else {
        let record = ops::create_instance(&state, create, reference).await?;
        CreateResult {
            process_definition_id: record.bpmn_process_id,
            process_definition_version: record.version,
            tenant_id: record.tenant_id,
            // Variables are only returned when awaiting completion, as in Camunda.
            variables: JsonValue::empty_object(),
            process_definition_key: record.process_definition_key.to_string(),
            process_instance_key: record.process_instance_key.to_string(),
            tags: record.tags,
        }
    };
    Ok(Json(result))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CancelRequest {
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
}

pub async fn cancel(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: CancelRequest = parse_optional_body(&body)?;
    let reference = operation_reference(request.operation_reference)?;
    ops::cancel_instance(&state, key, reference).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Camunda 8.8's `ProcessInstanceModificationInstruction`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ModifyRequest {
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
    #[serde(default)]
    activate_instructions: Vec<ActivateRequest>,
    #[serde(default)]
    terminate_instructions: Vec<TerminateRequest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActivateRequest {
    element_id: String,
    /// An element instance key, or -1 (the default): the flow scope's one instance.
    #[serde(default, deserialize_with = "optional_long")]
    ancestor_element_instance_key: Option<i64>,
    #[serde(default)]
    variable_instructions: Vec<VariableRequest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VariableRequest {
    variables: Variables,
    #[serde(default)]
    scope_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TerminateRequest {
    element_instance_key: KeyString,
}

/// `POST /v2/process-instances/{processInstanceKey}/modification`: 204, or a problem
/// naming the instruction that could not be applied (nothing is changed then).
pub async fn modify(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: ModifyRequest = parse_body(&body)?;
    let reference = operation_reference(request.operation_reference)?;
    let mut activate_instructions = Vec::with_capacity(request.activate_instructions.len());
    for (index, instruction) in request.activate_instructions.into_iter().enumerate() {
        if instruction.element_id.trim().is_empty() {
            return Err(ClientError::invalid_argument(format!(
                "No elementId provided in activateInstructions[{index}]"
            )));
        }
        let ancestor = match instruction.ancestor_element_instance_key {
            None | Some(-1) => Key::NONE,
            Some(key) if key > 0 => Key(key),
            Some(other) => {
                return Err(ClientError::invalid_argument(format!(
                    "The value for activateInstructions[{index}].ancestorElementInstanceKey is \
                     '{other}' but must be an element instance key, or -1"
                )));
            }
        };
        let mut variable_instructions = Vec::with_capacity(instruction.variable_instructions.len());
        for (v, variable) in instruction.variable_instructions.into_iter().enumerate() {
            let field =
                format!("activateInstructions[{index}].variableInstructions[{v}].variables");
            variable_instructions.push(VariableInstruction {
                variables: variable.variables.checked(&field, &state.settings)?,
                scope_id: variable.scope_id,
            });
        }
        activate_instructions.push(ActivateInstruction {
            element_id: instruction.element_id,
            ancestor_element_instance_key: ancestor,
            variable_instructions,
        });
    }
    if activate_instructions.is_empty() && request.terminate_instructions.is_empty() {
        return Err(ClientError::invalid_argument(
            "No instructions given: expected at least one of activateInstructions and \
             terminateInstructions",
        ));
    }
    let modification = ModifyProcessInstance {
        process_instance_key: key,
        activate_instructions,
        terminate_instructions: request
            .terminate_instructions
            .into_iter()
            .map(|t| t.element_instance_key.0)
            .collect(),
    };
    ops::modify_instance(&state, modification, reference).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Camunda's `ProcessInstanceResult`. Fields without a value are left out: the 8.8
/// spec has none of them nullable.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct InstanceResult {
    process_definition_id: String,
    process_definition_name: String,
    process_definition_version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_definition_version_tag: Option<String>,
    start_date: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_date: Option<String>,
    state: &'static str,
    has_incident: bool,
    tenant_id: String,
    process_instance_key: String,
    process_definition_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_process_instance_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_element_instance_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    root_process_instance_key: Option<String>,
    tags: Vec<String>,
}

impl From<HistoricProcessInstance> for InstanceResult {
    fn from(view: HistoricProcessInstance) -> Self {
        InstanceResult {
            process_definition_name: view.display_name().to_owned(),
            process_definition_id: view.bpmn_process_id,
            process_definition_version: view.version,
            process_definition_version_tag: view.process_definition_version_tag,
            start_date: date_text(view.start_date),
            end_date: view.end_date.map(date_text),
            state: process_instance_state_name(view.state),
            has_incident: view.incidents > 0,
            tenant_id: view.tenant_id,
            process_instance_key: key_text(view.key),
            process_definition_key: key_text(view.process_definition_key),
            parent_process_instance_key: view.parent_process_instance_key.map(key_text),
            parent_element_instance_key: view.parent_element_instance_key.map(key_text),
            root_process_instance_key: Some(key_text(view.root_process_instance_key)),
            tags: view.tags,
        }
    }
}

pub async fn get(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<InstanceResult>, ClientError> {
    Ok(Json(ops::get_process_instance(&state, key).await?.into()))
}
