//! DEPLOYMENT CREATE: parse and validate every resource, then a new version of each
//! process whose resource changed (the same XML again keeps its version). DMN resources
//! are deployed by [`super::decision_deployment`].

use std::collections::HashSet;

use rill_protocol::Key;
use rill_protocol::value::{DeploymentRecord, DeploymentResource, ProcessMetadata, ProcessRecord};
use rill_protocol::{Blob, Intent, Resource};

use super::decision_deployment::{self, ParsedDecisions};
use super::{forms, rpa_resources, tenant};
use crate::ParsedResource;
use crate::context::Processing;
use crate::error::Result;
use crate::model::{
    BusinessRuleDefinition, CalledBinding, CalledElement, ElementKind, FormBinding, FormLink,
    ProcessModel, TimerDefinition, UserTaskDefinition, ValueOrExpr,
};
use crate::model_cache::DeployedProcess;
use crate::outcome::Rejection;

/// A BPMN resource: neither a decision, a form nor an RPA script.
fn is_bpmn(resource: &Resource) -> bool {
    !decision_deployment::is_dmn(&resource.name)
        && !forms::is_form(resource)
        && !rpa_resources::is_rpa(resource)
}

/// Parses the resources of a deployment, or says why it is refused.
fn check_resources(
    resources: &[Resource],
) -> std::result::Result<(Vec<ParsedResource>, Vec<ParsedDecisions>), Rejection> {
    if resources.is_empty() {
        return Err(Rejection::invalid_argument(
            "Expected to deploy at least one resource, but none was given",
        ));
    }
    if let Some(bad) = resources.iter().find(|r| {
        !(r.name.ends_with(".bpmn")
            || r.name.ends_with(".xml")
            || decision_deployment::is_dmn(&r.name)
            || forms::is_form(r)
            || rpa_resources::is_rpa(r))
    }) {
        return Err(Rejection::invalid_argument(format!(
            "Expected to deploy BPMN, DMN, form or RPA resources (names ending in '.bpmn', \
             '.xml', '.dmn', '.form' or '.rpa'), but '{}' is none of these",
            bad.name
        )));
    }
    let mut problems = crate::DeployError::default();
    let bpmn: Vec<_> = resources
        .iter()
        .filter(|r| is_bpmn(r))
        .map(|r| (r.name.as_str(), r.content.0.as_slice()))
        .collect();
    let processes = if bpmn.is_empty() {
        Vec::new()
    } else {
        crate::parse_deployment(bpmn).unwrap_or_else(|error| {
            problems.absorb(error);
            Vec::new()
        })
    };
    let decisions = decision_deployment::parse_resources(resources, &mut problems);
    if problems.problems.is_empty() {
        Ok((processes, decisions))
    } else {
        Err(Rejection::invalid_argument(problems.to_string()))
    }
}

/// The `timeDate` and `timeCycle` expressions of timer start events are evaluated when
/// the process is deployed, without variables, as in Zeebe: one that fails or gives no
/// date (no cycle) refuses the deployment, naming the start event.
fn check_start_timer_expressions(
    p: &Processing<'_>,
    parsed: &[ParsedResource],
) -> std::result::Result<(), Rejection> {
    let mut problems = crate::DeployError::default();
    for resource in parsed {
        for model in &resource.processes {
            for start in model.event_start_events() {
                let element = model.element(start);
                let (field, gives, checked) = match &element.kind {
                    ElementKind::TimerStartEvent(TimerDefinition::Date(ValueOrExpr::Expr(
                        date,
                    ))) => (
                        "timeDate",
                        "a date and time",
                        p.start_timer_date(date).map(|_| ()),
                    ),
                    ElementKind::TimerStartEvent(TimerDefinition::Cycle(ValueOrExpr::Expr(
                        cycle,
                    ))) => (
                        "timeCycle",
                        "a cycle (ISO 8601 or cron)",
                        p.start_timer_cycle(cycle).map(|_| ()),
                    ),
                    _ => continue,
                };
                if let Err(reason) = checked {
                    problems.push(crate::Problem {
                        resource_name: resource.resource_name.clone(),
                        element_id: Some(element.id.clone()),
                        line: None,
                        message: format!(
                            "the {field} of a timer start event is evaluated when the process \
                             is deployed, without variables, and must give {gives}: {reason}"
                        ),
                    });
                }
            }
        }
    }
    if problems.problems.is_empty() {
        Ok(())
    } else {
        Err(Rejection::invalid_argument(problems.to_string()))
    }
}

/// Links bound to the deployment (`bindingType="deployment"`) are checked when the
/// process is deployed, as in Zeebe 8.8: the process a call activity calls, the decision
/// a business rule task evaluates and the form a user task links, when named by a
/// static id on an element directly in a process, must be in the same deployment. Such
/// an element inside a subprocess is not checked here (Zeebe reads the process's own
/// flow elements only); not finding its target when it is entered is an incident.
fn check_deployment_bindings(
    parsed: &[ParsedResource],
    decisions: &[ParsedDecisions],
    forms: &[forms::CheckedForm<'_>],
) -> std::result::Result<(), Rejection> {
    let processes: HashSet<&str> = parsed
        .iter()
        .flat_map(|r| &r.processes)
        .map(|m| m.bpmn_process_id.as_str())
        .collect();
    let decision_ids: HashSet<&str> = decisions
        .iter()
        .flat_map(|d| &d.drg.decisions)
        .map(|d| d.id.as_str())
        .collect();
    let form_ids: HashSet<&str> = forms.iter().map(|f| f.form_id()).collect();
    let has_process = |id: &str| processes.contains(id);
    let has_decision = |id: &str| decision_ids.contains(id);
    let has_form = |id: &str| form_ids.contains(id);
    let mut problems = crate::DeployError::default();
    for resource in parsed {
        for model in &resource.processes {
            for &child in model.children(ProcessModel::ROOT) {
                let element = model.element(child);
                let missing = match &element.kind {
                    ElementKind::CallActivity(CalledElement {
                        process_id: ValueOrExpr::Static(id),
                        binding: CalledBinding::Deployment,
                        ..
                    }) if !has_process(id) => Some(("process", id.as_str(), "call activity calls")),
                    ElementKind::BusinessRuleTask(BusinessRuleDefinition::Decision {
                        decision_id: ValueOrExpr::Static(id),
                        binding: CalledBinding::Deployment,
                        ..
                    }) if !has_decision(id) => {
                        Some(("decision", id.as_str(), "business rule task evaluates"))
                    }
                    ElementKind::UserTask(task) => match deployment_bound_form(task) {
                        Some(id) if !has_form(id) => Some(("form", id, "user task shows")),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some((what, id, link)) = missing {
                    problems.push(crate::Problem {
                        resource_name: resource.resource_name.clone(),
                        element_id: Some(element.id.clone()),
                        line: None,
                        message: format!(
                            "Expected to find {what} with id '{id}' in current deployment, but \
                             not found. The {what} this {link} is bound to the deployment \
                             (bindingType=\"deployment\"): deploy it together with this \
                             process"
                        ),
                    });
                }
            }
        }
    }
    if problems.problems.is_empty() {
        Ok(())
    } else {
        Err(Rejection::invalid_argument(problems.to_string()))
    }
}

/// The id of the form a user task links with `bindingType="deployment"`.
fn deployment_bound_form(task: &UserTaskDefinition) -> Option<&str> {
    match task {
        UserTaskDefinition::Camunda(task) => match &task.form {
            Some(FormLink::Linked {
                form_id,
                binding: FormBinding::Deployment,
            }) => Some(form_id),
            _ => None,
        },
        UserTaskDefinition::Job(task) => match &task.linked_form {
            Some((form_id, FormBinding::Deployment)) => Some(form_id),
            _ => None,
        },
    }
}

/// What a model needs of the partition's engine version, with the element that needs
/// it: ad-hoc subprocesses and canceling task listeners came after the first release,
/// whose replicas refuse them at deploy (docs/decisions/versions.md).
fn engine_version_needed(model: &ProcessModel) -> Option<(u32, String)> {
    use rill_protocol::version::ENGINE_VERSION_2;
    model
        .elements
        .iter()
        .find_map(|element| match &element.kind {
            ElementKind::AdHocSubProcess(_) => Some((
                ENGINE_VERSION_2,
                format!("the ad-hoc subprocess '{}'", element.id),
            )),
            ElementKind::UserTask(task) => match task.as_ref() {
                UserTaskDefinition::Camunda(task) if !task.listeners.canceling.is_empty() => {
                    Some((
                        ENGINE_VERSION_2,
                        format!("the canceling task listener of user task '{}'", element.id),
                    ))
                }
                _ => None,
            },
            _ => None,
        })
}

/// Refuses a deployment whose models need a higher engine version than the partition
/// runs: every replica, whatever its release, then rejects it alike.
fn check_engine_version(
    engine_version: u32,
    parsed: &[ParsedResource],
) -> std::result::Result<(), Rejection> {
    for resource in parsed {
        for model in &resource.processes {
            if let Some((required, what)) = engine_version_needed(model)
                && required > engine_version.max(1)
            {
                return Err(Rejection::invalid_state(format!(
                    "Expected to deploy process '{}', but {what} needs engine version \
                     {required}, and the cluster runs engine version {}: it rises once \
                     every broker runs a release that supports it (finish the rolling \
                     upgrade)",
                    model.bpmn_process_id,
                    engine_version.max(1)
                )));
            }
        }
    }
    Ok(())
}

pub(super) fn deploy(p: &mut Processing<'_>, resources: &[Resource]) -> Result<()> {
    let mut record = DeploymentRecord {
        resources: resources
            .iter()
            .map(|r| DeploymentResource {
                resource_name: r.name.clone(),
                resource: r.content.clone(),
            })
            .collect(),
        processes_metadata: Vec::new(),
        tenant_id: tenant(),
        form_metadata: Vec::new(),
        decisions_metadata: Vec::new(),
        decision_requirements_metadata: Vec::new(),
        resource_metadata: Vec::new(),
    };
    let checked = check_resources(resources).and_then(|parsed| {
        let forms = forms::check_forms(resources)?;
        let rpa = rpa_resources::check_rpa_resources(resources)?;
        Ok((parsed, forms, rpa))
    });
    let ((parsed, decisions), forms, rpa) = match checked {
        Ok(checked) => checked,
        Err(rejection) => {
            p.reject(Key::NONE, Intent::Create, record, rejection);
            return Ok(());
        }
    };
    if let Err(rejection) = decision_deployment::check_against_state(p, &decisions)? {
        p.reject(Key::NONE, Intent::Create, record, rejection);
        return Ok(());
    }
    if let Err(rejection) = check_deployment_bindings(&parsed, &decisions, &forms) {
        p.reject(Key::NONE, Intent::Create, record, rejection);
        return Ok(());
    }
    if let Err(rejection) = check_engine_version(p.ctx.engine_version, &parsed) {
        p.reject(Key::NONE, Intent::Create, record, rejection);
        return Ok(());
    }
    if let Err(rejection) = check_start_timer_expressions(p, &parsed) {
        p.reject(Key::NONE, Intent::Create, record, rejection);
        return Ok(());
    }
    let bpmn_resources: Vec<Resource> = resources.iter().filter(|r| is_bpmn(r)).cloned().collect();

    p.command(Key::NONE, Intent::Create, record.clone());
    let deployment_key = p.next_key()?;
    for (resource, content) in parsed.into_iter().zip(&bpmn_resources) {
        let checksum = resource.checksum.as_bytes().to_vec();
        let call_activities = crate::model_cache::call_activity_ids(&resource.processes);
        for model in resource.processes {
            let id = model.bpmn_process_id.clone();
            let version_tag = model.version_tag.clone().unwrap_or_default();
            let latest = p.read().latest_process(&id)?;
            let mut duplicate_of = None;
            if let Some((version, key)) = latest
                && let Some(existing) = p.read().process(key)?
                && existing.checksum.0 == checksum
                && existing.resource_name == resource.resource_name
                && existing.resource == content.content
            {
                duplicate_of = Some((version, key));
            }
            let (version, key, is_duplicate) = match duplicate_of {
                Some((version, key)) => (version, key, true),
                None => {
                    // A deleted version's number is never given out again.
                    let version = p.read().highest_process_version(&id)?.map_or(1, |v| v + 1);
                    let key = p.next_key()?;
                    let process = ProcessRecord {
                        bpmn_process_id: id.clone(),
                        version,
                        process_definition_key: key.get(),
                        resource_name: resource.resource_name.clone(),
                        checksum: Blob(checksum.clone()),
                        resource: content.content.clone(),
                        is_duplicate: false,
                        tenant_id: tenant(),
                        version_tag: version_tag.clone(),
                    };
                    p.event(key, Intent::Created, process)?;
                    p.cache_model(DeployedProcess::new(key, version, model, &call_activities));
                    // Timer start events run on the partition that takes the deployment
                    // (the others receive it without timers, as in Zeebe).
                    let deployed = p.model(key)?;
                    p.arm_start_timers(&deployed)?;
                    p.write_message_start_subscriptions(key, latest.map(|(_, k)| k))?;
                    p.replace_signal_start_subscriptions(&deployed, latest.map(|(_, k)| k))?;
                    (version, key, false)
                }
            };
            record.processes_metadata.push(ProcessMetadata {
                bpmn_process_id: id,
                version,
                process_definition_key: key.get(),
                resource_name: resource.resource_name.clone(),
                checksum: Blob(checksum.clone()),
                is_duplicate,
                tenant_id: tenant(),
                version_tag,
            });
        }
    }
    forms::deploy_forms(p, deployment_key, &forms, &mut record)?;
    rpa_resources::deploy_rpa_resources(p, deployment_key, &rpa, &mut record)?;
    decision_deployment::deploy(p, &mut record, deployment_key, decisions, resources)?;
    p.event(deployment_key, Intent::Created, record.clone())?;
    p.respond(deployment_key, Intent::Created, record);
    super::distribution::distribute(
        p,
        deployment_key,
        rill_protocol::ValueType::Deployment,
        Intent::Create,
    )
}
