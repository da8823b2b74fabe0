//! Forms in a deployment: `.form` resources (Camunda Forms JSON). Each is checked
//! before anything of the deployment is written; a changed form gets a new version
//! (`FORM CREATED`), the same form again keeps its version (a duplicate), as processes
//! do. Other partitions receive the forms with the deployment.

use rill_protocol::value::{DeploymentRecord, FormMetadata, FormRecord};
use rill_protocol::{Blob, Intent, Key, Resource};
use serde_json::Value;

use super::tenant;
use crate::Checksum;
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

/// Whether a resource is a form (by its name, as Zeebe decides).
pub(super) fn is_form(resource: &Resource) -> bool {
    resource.name.ends_with(".form")
}

/// A form resource that passed the checks.
pub(super) struct CheckedForm<'r> {
    resource: &'r Resource,
    form_id: String,
    version_tag: String,
}

impl CheckedForm<'_> {
    /// The form's `id`, which user tasks link it by.
    pub(super) fn form_id(&self) -> &str {
        &self.form_id
    }
}

/// Checks every form of a deployment: JSON with a non-empty string `id`, each id once.
pub(super) fn check_forms(
    resources: &[Resource],
) -> std::result::Result<Vec<CheckedForm<'_>>, Rejection> {
    let mut forms: Vec<CheckedForm<'_>> = Vec::new();
    for resource in resources.iter().filter(|r| is_form(r)) {
        let name = &resource.name;
        let json: Value = serde_json::from_slice(&resource.content.0).map_err(|e| {
            Rejection::invalid_argument(format!(
                "Expected the form '{name}' to be Camunda Forms JSON, but it is not valid JSON: \
                 {e}"
            ))
        })?;
        let form_id = match json.get("id") {
            Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
            _ => {
                return Err(Rejection::invalid_argument(format!(
                    "Expected the form '{name}' to have an 'id' (a non-empty string: the formId \
                     user tasks link it by), but it has none"
                )));
            }
        };
        if let Some(other) = forms.iter().find(|f| f.form_id == form_id) {
            return Err(Rejection::invalid_argument(format!(
                "Expected each form id once in a deployment, but '{form_id}' is the id of both \
                 '{}' and '{name}'",
                other.resource.name
            )));
        }
        let version_tag = match json.get("versionTag") {
            Some(Value::String(tag)) => tag.clone(),
            _ => String::new(),
        };
        forms.push(CheckedForm {
            resource,
            form_id,
            version_tag,
        });
    }
    Ok(forms)
}

/// Deploys checked forms: a new version for each changed one, the existing one for a
/// duplicate; each is listed in the deployment's `formMetadata`.
pub(super) fn deploy_forms(
    p: &mut Processing<'_>,
    deployment_key: Key,
    forms: &[CheckedForm<'_>],
    record: &mut DeploymentRecord,
) -> Result<()> {
    for form in forms {
        let checksum = Checksum::of(&form.resource.content.0).as_bytes().to_vec();
        let latest = p.read().latest_form(&form.form_id)?;
        let mut duplicate_of = None;
        if let Some((version, key)) = latest
            && let Some(existing) = p.read().form(key)?
            && existing.checksum.0 == checksum
            && existing.resource_name == form.resource.name
        {
            duplicate_of = Some((version, key));
        }
        let (version, key, is_duplicate) = match duplicate_of {
            Some((version, key)) => (version, key, true),
            None => {
                let highest = p.read().highest_form_version(&form.form_id)?;
                let version = highest.map_or(1, |v| v + 1);
                let key = p.next_key()?;
                let value = FormRecord {
                    form_id: form.form_id.clone(),
                    version,
                    form_key: key.get(),
                    resource_name: form.resource.name.clone(),
                    checksum: Blob(checksum.clone()),
                    resource: form.resource.content.clone(),
                    is_duplicate: false,
                    tenant_id: tenant(),
                    deployment_key: deployment_key.get(),
                    version_tag: form.version_tag.clone(),
                };
                p.event(key, Intent::Created, value)?;
                (version, key, false)
            }
        };
        record.form_metadata.push(FormMetadata {
            form_id: form.form_id.clone(),
            version,
            form_key: key.get(),
            resource_name: form.resource.name.clone(),
            checksum: Blob(checksum),
            is_duplicate,
            tenant_id: tenant(),
            deployment_key: deployment_key.get(),
            version_tag: form.version_tag.clone(),
        });
    }
    Ok(())
}

/// A deployment received from another partition: its new forms, with the keys and
/// versions the deploying partition gave them.
pub(super) fn apply_distributed_forms(
    p: &mut Processing<'_>,
    deployment_key: Key,
    deployment: &DeploymentRecord,
) -> Result<()> {
    for metadata in &deployment.form_metadata {
        if metadata.is_duplicate || p.read().form(metadata.form_key)?.is_some() {
            continue;
        }
        let Some(resource) = deployment.resource_named(&metadata.resource_name) else {
            continue;
        };
        let value = FormRecord {
            form_id: metadata.form_id.clone(),
            version: metadata.version,
            form_key: metadata.form_key,
            resource_name: metadata.resource_name.clone(),
            checksum: metadata.checksum.clone(),
            resource: resource.resource.clone(),
            is_duplicate: false,
            tenant_id: metadata.tenant_id.clone(),
            deployment_key: deployment_key.get(),
            version_tag: metadata.version_tag.clone(),
        };
        p.event(Key(metadata.form_key), Intent::Created, value)?;
    }
    Ok(())
}
