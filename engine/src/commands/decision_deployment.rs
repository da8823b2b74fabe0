//! The DMN part of DEPLOYMENT CREATE: each `.dmn` resource is a decision requirements
//! graph (DRG); a changed resource is a new version of the DRG and of each of its
//! decisions (versions count per id), the same resource again is a duplicate that keeps
//! its versions. Records as Zeebe writes them: DECISION_REQUIREMENTS CREATED, then
//! DECISION CREATED per decision, before the DEPLOYMENT CREATED event.

use std::collections::BTreeMap;

use rill_protocol::value::{
    DecisionRecord, DecisionRequirementsMetadata, DecisionRequirementsRecord, DeploymentRecord,
};
use rill_protocol::{Blob, Intent, Key, Resource};

use super::tenant;
use crate::context::Processing;
use crate::dmn::{DecisionRequirements, parse_dmn};
use crate::error::Result;
use crate::outcome::Rejection;
use crate::parse::{Checksum, DeployError, Problem};

/// A parsed `.dmn` resource of a deployment.
pub(super) struct ParsedDecisions {
    /// Index of the resource in the deployment.
    pub resource: usize,
    pub checksum: Checksum,
    pub drg: DecisionRequirements,
}

pub(super) fn is_dmn(name: &str) -> bool {
    name.ends_with(".dmn")
}

/// Parses the `.dmn` resources; problems join those of the BPMN resources.
pub(super) fn parse_resources(
    resources: &[Resource],
    problems: &mut DeployError,
) -> Vec<ParsedDecisions> {
    let mut parsed = Vec::new();
    for (index, resource) in resources.iter().enumerate() {
        if !is_dmn(&resource.name) {
            continue;
        }
        match parse_dmn(&resource.name, &resource.content.0) {
            Ok(drg) => parsed.push(ParsedDecisions {
                resource: index,
                checksum: Checksum::of(&resource.content.0),
                drg,
            }),
            Err(error) => problems.absorb(error),
        }
    }
    // Ids are global: one deployment may not define a DRG id or a decision id twice.
    let mut drg_ids: BTreeMap<&str, &str> = BTreeMap::new();
    let mut decision_ids: BTreeMap<&str, &str> = BTreeMap::new();
    let mut duplicates = Vec::new();
    for entry in &parsed {
        let name = resources[entry.resource].name.as_str();
        if let Some(first) = drg_ids.insert(&entry.drg.id, name) {
            duplicates.push((name, None, format!(
                "the decision requirements id '{}' is defined more than once in this deployment \
                 (also in '{first}')",
                entry.drg.id
            )));
        }
        for decision in &entry.drg.decisions {
            if let Some(first) = decision_ids.insert(&decision.id, name)
                && first != name
            {
                duplicates.push((name, Some(decision.id.clone()), format!(
                    "the decision id '{}' is defined more than once in this deployment (also in \
                     '{first}')",
                    decision.id
                )));
            }
        }
    }
    for (resource_name, element_id, message) in duplicates {
        problems.push(Problem {
            resource_name: resource_name.to_owned(),
            element_id,
            line: None,
            message,
        });
    }
    parsed
}

/// Refuses decisions whose id already belongs to another deployed DRG (as Zeebe does:
/// a decision id's versions all come from one DRG id).
pub(super) fn check_against_state(
    p: &Processing<'_>,
    parsed: &[ParsedDecisions],
) -> Result<std::result::Result<(), Rejection>> {
    for entry in parsed {
        for decision in &entry.drg.decisions {
            let Some((_, key)) = p.read().latest_decision(&decision.id)? else {
                continue;
            };
            if let Some(existing) = p.read().decision(key)?
                && existing.decision_requirements_id != entry.drg.id
            {
                return Ok(Err(Rejection::invalid_argument(format!(
                    "Expected the decision id '{}' to belong to the decision requirements '{}', \
                     but it is already deployed in the decision requirements '{}'",
                    decision.id, entry.drg.id, existing.decision_requirements_id
                ))));
            }
        }
    }
    Ok(Ok(()))
}

/// Writes the DRGs and decisions that are new and lists all of them in the deployment.
pub(super) fn deploy(
    p: &mut Processing<'_>,
    record: &mut DeploymentRecord,
    deployment_key: Key,
    parsed: Vec<ParsedDecisions>,
    resources: &[Resource],
) -> Result<()> {
    for entry in parsed {
        let resource = &resources[entry.resource];
        let checksum = entry.checksum.as_bytes().to_vec();
        let latest = p.read().latest_decision_requirements(&entry.drg.id)?;
        let mut duplicate_of = None;
        if let Some((version, key)) = latest
            && let Some(existing) = p.read().decision_requirements(key)?
            && existing.checksum.0 == checksum
            && existing.resource_name == resource.name
        {
            duplicate_of = Some((version, key));
        }
        let (drg_version, drg_key, is_duplicate) = match duplicate_of {
            Some((version, key)) => (version, key, true),
            None => {
                let highest = p
                    .read()
                    .highest_decision_requirements_version(&entry.drg.id)?;
                (highest.map_or(1, |v| v + 1), p.next_key()?, false)
            }
        };
        let drg_record = DecisionRequirementsRecord {
            decision_requirements_id: entry.drg.id.clone(),
            decision_requirements_name: entry.drg.name.clone(),
            decision_requirements_version: drg_version,
            decision_requirements_key: drg_key.get(),
            namespace: entry.drg.namespace.clone(),
            resource_name: resource.name.clone(),
            checksum: Blob(checksum.clone()),
            resource: resource.content.clone(),
            is_duplicate: false,
            tenant_id: tenant(),
        };
        if !is_duplicate {
            p.event(drg_key, Intent::Created, drg_record.clone())?;
        }
        for decision in &entry.drg.decisions {
            let latest = p.read().latest_decision(&decision.id)?;
            let existing = match (is_duplicate, latest) {
                (true, Some((_, key))) => p.read().decision(key)?,
                _ => None,
            };
            let decision_record = match existing {
                Some(existing) => DecisionRecord {
                    is_duplicate: true,
                    ..existing
                },
                None => DecisionRecord {
                    decision_id: decision.id.clone(),
                    decision_name: decision.name.clone(),
                    version: p
                        .read()
                        .highest_decision_version(&decision.id)?
                        .map_or(1, |v| v + 1),
                    decision_key: p.next_key()?.get(),
                    decision_requirements_id: entry.drg.id.clone(),
                    decision_requirements_key: drg_key.get(),
                    is_duplicate: false,
                    tenant_id: tenant(),
                    deployment_key: deployment_key.get(),
                    version_tag: decision.version_tag.clone().unwrap_or_default(),
                },
            };
            if !decision_record.is_duplicate {
                p.event(
                    Key(decision_record.decision_key),
                    Intent::Created,
                    decision_record.clone(),
                )?;
            }
            record.decisions_metadata.push(decision_record);
        }
        record
            .decision_requirements_metadata
            .push(DecisionRequirementsMetadata {
                decision_requirements_id: drg_record.decision_requirements_id,
                decision_requirements_name: drg_record.decision_requirements_name,
                decision_requirements_version: drg_version,
                decision_requirements_key: drg_key.get(),
                namespace: drg_record.namespace,
                resource_name: drg_record.resource_name,
                checksum: drg_record.checksum,
                is_duplicate,
                tenant_id: tenant(),
            });
        if !is_duplicate {
            p.cache_decision_requirements(drg_key, entry.drg);
        }
    }
    Ok(())
}

/// A deployment made on another partition: the same DRGs and decisions, keys and
/// versions.
pub(super) fn apply_distributed(
    p: &mut Processing<'_>,
    deployment: &DeploymentRecord,
) -> Result<()> {
    for metadata in &deployment.decision_requirements_metadata {
        let key = metadata.decision_requirements_key;
        if metadata.is_duplicate || p.read().decision_requirements(key)?.is_some() {
            continue;
        }
        let Some(resource) = deployment.resource_named(&metadata.resource_name) else {
            continue;
        };
        let record = DecisionRequirementsRecord {
            decision_requirements_id: metadata.decision_requirements_id.clone(),
            decision_requirements_name: metadata.decision_requirements_name.clone(),
            decision_requirements_version: metadata.decision_requirements_version,
            decision_requirements_key: key,
            namespace: metadata.namespace.clone(),
            resource_name: metadata.resource_name.clone(),
            checksum: metadata.checksum.clone(),
            resource: resource.resource.clone(),
            is_duplicate: false,
            tenant_id: metadata.tenant_id.clone(),
        };
        p.event(Key(key), Intent::Created, record)?;
    }
    for decision in &deployment.decisions_metadata {
        if decision.is_duplicate || p.read().decision(decision.decision_key)?.is_some() {
            continue;
        }
        p.event(
            Key(decision.decision_key),
            Intent::Created,
            decision.clone(),
        )?;
    }
    Ok(())
}
