//! `POST /v2/process-instances/{processInstanceKey}/migration`: Camunda 8.8's process
//! instance migration, onto the engine's MIGRATE command (the same one gRPC's
//! MigrateProcessInstance sends).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::MigrateProcessInstance;
use rill_protocol::value::MigrationMappingInstruction;
use serde::Deserialize;

use super::json::{KeyString, optional_long, parse_body};
use super::{Body, KeyParam, SharedState, operation_reference};
use crate::ops::{self, ClientError};

/// Camunda 8.8's `ProcessInstanceMigrationInstruction`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MigrateRequest {
    target_process_definition_key: KeyString,
    mapping_instructions: Vec<MappingRequest>,
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MappingRequest {
    source_element_id: String,
    target_element_id: String,
}

/// 204 once migrated; 400 for a malformed request or instruction, 404 for an unknown
/// instance or target definition, 409 when the instance cannot be migrated as asked
/// (nothing is changed then).
pub async fn migrate(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: MigrateRequest = parse_body(&body)?;
    let reference = operation_reference(request.operation_reference)?;
    let mut mapping_instructions = Vec::with_capacity(request.mapping_instructions.len());
    for (index, mapping) in request.mapping_instructions.into_iter().enumerate() {
        for (field, value) in [
            ("sourceElementId", &mapping.source_element_id),
            ("targetElementId", &mapping.target_element_id),
        ] {
            if value.trim().is_empty() {
                return Err(ClientError::invalid_argument(format!(
                    "No {field} provided in mappingInstructions[{index}]"
                )));
            }
        }
        mapping_instructions.push(MigrationMappingInstruction {
            source_element_id: mapping.source_element_id,
            target_element_id: mapping.target_element_id,
        });
    }
    let migration = MigrateProcessInstance {
        process_instance_key: key,
        target_process_definition_key: request.target_process_definition_key.0,
        mapping_instructions,
    };
    ops::migrate_instance(&state, migration, reference).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
