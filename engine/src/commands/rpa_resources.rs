//! RPA scripts in a deployment: `.rpa` resources, JSON with an `id` (and optionally a
//! `versionTag`), as Zeebe 8.8 deploys them. Each is checked before anything of the
//! deployment is written; a changed one gets a new version (`RESOURCE CREATED`), the
//! same one again keeps its version (a duplicate), as forms do. Service tasks link them
//! with `zeebe:linkedResource`; other partitions receive them with the deployment.

use rill_protocol::value::{DeploymentRecord, ResourceMetadata, ResourceRecord};
use rill_protocol::{Blob, Intent, Key, Resource};
use serde_json::Value;

use super::tenant;
use crate::Checksum;
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

/// Whether a resource is an RPA script (by its name, as Zeebe decides).
pub(super) fn is_rpa(resource: &Resource) -> bool {
    resource.name.ends_with(".rpa")
}

/// An RPA resource that passed the checks.
pub(super) struct CheckedResource<'r> {
    resource: &'r Resource,
    /// The resource's `id`, which service tasks link it by.
    resource_id: String,
    version_tag: String,
    /// The content as text (`resourceProp`): checked to be JSON, so UTF-8.
    text: String,
}

/// Checks every RPA resource of a deployment: a JSON object with a non-blank string
/// `id` and, if it has one, a string `versionTag`; each id once.
pub(super) fn check_rpa_resources(
    resources: &[Resource],
) -> std::result::Result<Vec<CheckedResource<'_>>, Rejection> {
    let mut checked: Vec<CheckedResource<'_>> = Vec::new();
    for resource in resources.iter().filter(|r| is_rpa(r)) {
        let name = &resource.name;
        let refused = |reason: String| {
            Rejection::invalid_argument(format!(
                "Expected the RPA resource '{name}' to be JSON with an 'id' (the resourceId a \
                 zeebe:linkedResource links it by), but {reason}"
            ))
        };
        let text = std::str::from_utf8(&resource.content.0)
            .map_err(|_| refused("it is not UTF-8 text".to_owned()))?;
        let json: Value = serde_json::from_str(text)
            .map_err(|e| refused(format!("it is not valid JSON: {e}")))?;
        let Value::Object(fields) = json else {
            return Err(refused("it is not a JSON object".to_owned()));
        };
        let resource_id = match fields.get("id") {
            Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
            Some(Value::String(_)) => return Err(refused("its 'id' is blank".to_owned())),
            None | Some(Value::Null) => return Err(refused("it has no 'id'".to_owned())),
            Some(other) => {
                return Err(refused(format!("its 'id' is {other}, not a string")));
            }
        };
        let version_tag = match fields.get("versionTag") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(tag)) => tag.clone(),
            Some(other) => {
                return Err(refused(format!(
                    "its 'versionTag' is {other}, not a string"
                )));
            }
        };
        if let Some(other) = checked.iter().find(|c| c.resource_id == resource_id) {
            return Err(Rejection::invalid_argument(format!(
                "Expected the resource ids to be unique within a deployment but found a \
                 duplicated id '{resource_id}' in the resources '{}' and '{name}'.",
                other.resource.name
            )));
        }
        checked.push(CheckedResource {
            resource,
            resource_id,
            version_tag,
            text: text.to_owned(),
        });
    }
    Ok(checked)
}

/// Deploys checked RPA resources: a new version for each changed one, the existing one
/// for a duplicate; each is listed in the deployment's `resourceMetadata`.
pub(super) fn deploy_rpa_resources(
    p: &mut Processing<'_>,
    deployment_key: Key,
    checked: &[CheckedResource<'_>],
    record: &mut DeploymentRecord,
) -> Result<()> {
    for resource in checked {
        let checksum = Checksum::of(&resource.resource.content.0)
            .as_bytes()
            .to_vec();
        let latest = p.read().latest_resource(&resource.resource_id)?;
        let mut duplicate_of = None;
        if let Some((version, key)) = latest
            && let Some(existing) = p.read().resource(key)?
            && existing.checksum.0 == checksum
            && existing.resource_name == resource.resource.name
        {
            duplicate_of = Some((version, key, existing.deployment_key));
        }
        let (version, key, is_duplicate, deployed_by) = match duplicate_of {
            Some((version, key, deployed_by)) => (version, key, true, deployed_by),
            None => {
                let version = latest.map_or(1, |(version, _)| version + 1);
                let key = p.next_key()?;
                let value = ResourceRecord {
                    resource_id: resource.resource_id.clone(),
                    version,
                    version_tag: resource.version_tag.clone(),
                    resource_key: key.get(),
                    checksum: Blob(checksum.clone()),
                    resource_name: resource.resource.name.clone(),
                    is_duplicate: false,
                    tenant_id: tenant(),
                    deployment_key: deployment_key.get(),
                    resource_prop: resource.text.clone(),
                };
                p.event(key, Intent::Created, value)?;
                (version, key, false, deployment_key.get())
            }
        };
        record.resource_metadata.push(ResourceMetadata {
            resource_id: resource.resource_id.clone(),
            version,
            version_tag: resource.version_tag.clone(),
            resource_key: key.get(),
            checksum: Blob(checksum),
            resource_name: resource.resource.name.clone(),
            is_duplicate,
            tenant_id: tenant(),
            deployment_key: deployed_by,
        });
    }
    Ok(())
}

/// A deployment received from another partition: its new RPA resources, with the keys
/// and versions the deploying partition gave them.
pub(super) fn apply_distributed_rpa_resources(
    p: &mut Processing<'_>,
    deployment: &DeploymentRecord,
) -> Result<()> {
    for metadata in &deployment.resource_metadata {
        if metadata.is_duplicate || p.read().resource(metadata.resource_key)?.is_some() {
            continue;
        }
        let Some(resource) = deployment.resource_named(&metadata.resource_name) else {
            continue;
        };
        let value = ResourceRecord {
            resource_id: metadata.resource_id.clone(),
            version: metadata.version,
            version_tag: metadata.version_tag.clone(),
            resource_key: metadata.resource_key,
            checksum: metadata.checksum.clone(),
            resource_name: metadata.resource_name.clone(),
            is_duplicate: false,
            tenant_id: metadata.tenant_id.clone(),
            deployment_key: metadata.deployment_key,
            resource_prop: String::from_utf8_lossy(&resource.resource.0).into_owned(),
        };
        p.event(Key(metadata.resource_key), Intent::Created, value)?;
    }
    Ok(())
}
