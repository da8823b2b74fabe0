//! `POST /v2/deployments`: multipart upload of one or more `resources` files.

use axum::Json;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartRejection};
use rill_protocol::value::{DEFAULT_TENANT, FormMetadata, ProcessMetadata, ResourceMetadata};
use rill_protocol::{Blob, Resource};
use serde::Serialize;

use super::decisions::{DeploymentDecision, DeploymentDecisionRequirements};
use super::{SharedState, check_tenant, key_text};
use crate::ops::{self, ClientError};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentResult {
    deployment_key: String,
    tenant_id: String,
    deployments: Vec<DeploymentMetadata>,
}

/// One deployed thing: exactly one of the fields is present.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentMetadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    process_definition: Option<DeploymentProcess>,
    #[serde(skip_serializing_if = "Option::is_none")]
    form: Option<DeploymentForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<DeploymentResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision_definition: Option<DeploymentDecision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision_requirements: Option<DeploymentDecisionRequirements>,
}

impl DeploymentMetadata {
    fn empty() -> DeploymentMetadata {
        DeploymentMetadata {
            process_definition: None,
            form: None,
            resource: None,
            decision_definition: None,
            decision_requirements: None,
        }
    }
}

/// Camunda's `DeploymentResourceResult`: an RPA script.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentResource {
    resource_id: String,
    resource_name: String,
    version: i32,
    tenant_id: String,
    resource_key: String,
}

impl From<&ResourceMetadata> for DeploymentResource {
    fn from(resource: &ResourceMetadata) -> Self {
        DeploymentResource {
            resource_id: resource.resource_id.clone(),
            resource_name: resource.resource_name.clone(),
            version: resource.version,
            tenant_id: resource.tenant_id.clone(),
            resource_key: resource.resource_key.to_string(),
        }
    }
}

/// Camunda's `DeploymentFormResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentForm {
    form_id: String,
    version: i32,
    resource_name: String,
    tenant_id: String,
    form_key: String,
}

impl From<&FormMetadata> for DeploymentForm {
    fn from(form: &FormMetadata) -> Self {
        DeploymentForm {
            form_id: form.form_id.clone(),
            version: form.version,
            resource_name: form.resource_name.clone(),
            tenant_id: form.tenant_id.clone(),
            form_key: form.form_key.to_string(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentProcess {
    process_definition_id: String,
    process_definition_version: i32,
    resource_name: String,
    tenant_id: String,
    process_definition_key: String,
}

impl From<&ProcessMetadata> for DeploymentProcess {
    fn from(process: &ProcessMetadata) -> Self {
        DeploymentProcess {
            process_definition_id: process.bpmn_process_id.clone(),
            process_definition_version: process.version,
            resource_name: process.resource_name.clone(),
            tenant_id: process.tenant_id.clone(),
            process_definition_key: process.process_definition_key.to_string(),
        }
    }
}

pub async fn deploy(
    State(state): State<SharedState>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<DeploymentResult>, ClientError> {
    let mut multipart = multipart.map_err(|rejection| {
        ClientError::invalid_argument(format!(
            "Expected a multipart/form-data request with one or more 'resources' files: {}",
            rejection.body_text()
        ))
    })?;
    let limit = state.settings.max_message_size;
    let read_error = |error: axum::extract::multipart::MultipartError| {
        if super::over_body_limit(&error) {
            super::payload_too_large(limit)
        } else {
            ClientError::invalid_argument(format!(
                "Could not read the multipart body: {}",
                error.body_text()
            ))
        }
    };

    let mut resources = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(read_error)? {
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "resources" => {
                let resource_name = field
                    .file_name()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("resource-{}.bpmn", resources.len() + 1));
                let content = field.bytes().await.map_err(read_error)?;
                resources.push(Resource {
                    name: resource_name,
                    content: Blob(content.to_vec()),
                });
            }
            "tenantId" => {
                let tenant = field.text().await.map_err(read_error)?;
                check_tenant("tenantId", Some(tenant.trim()))?;
            }
            other => {
                return Err(ClientError::invalid_argument(format!(
                    "Unexpected multipart field '{other}'; expected one or more 'resources' \
                     files and optionally 'tenantId'"
                )));
            }
        }
    }
    if resources.is_empty() {
        return Err(ClientError::invalid_argument(
            "No resources provided; attach one or more BPMN, DMN or form files as multipart field 'resources'",
        ));
    }

    let (key, record) = ops::deploy(&state, resources).await?;
    Ok(Json(DeploymentResult {
        deployment_key: key_text(key),
        tenant_id: if record.tenant_id.is_empty() {
            DEFAULT_TENANT.to_owned()
        } else {
            record.tenant_id.clone()
        },
        deployments: record
            .processes_metadata
            .iter()
            .map(|process| DeploymentMetadata {
                process_definition: Some(process.into()),
                ..DeploymentMetadata::empty()
            })
            .chain(record.form_metadata.iter().map(|form| DeploymentMetadata {
                form: Some(form.into()),
                ..DeploymentMetadata::empty()
            }))
            .chain(
                record
                    .decisions_metadata
                    .iter()
                    .map(|decision| DeploymentMetadata {
                        decision_definition: Some(decision.into()),
                        ..DeploymentMetadata::empty()
                    }),
            )
            .chain(
                record
                    .decision_requirements_metadata
                    .iter()
                    .map(|drg| DeploymentMetadata {
                        decision_requirements: Some(drg.into()),
                        ..DeploymentMetadata::empty()
                    }),
            )
            .chain(
                record
                    .resource_metadata
                    .iter()
                    .map(|resource| DeploymentMetadata {
                        resource: Some(resource.into()),
                        ..DeploymentMetadata::empty()
                    }),
            )
            .collect(),
    }))
}
