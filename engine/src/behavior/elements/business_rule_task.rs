//! Business rule task. With `zeebe:calledDecision` the engine evaluates the DMN
//! decision on entry (after the input mappings) and completes at once: the decision's
//! output becomes the result variable, merged as a job's variables are. A decision that
//! is not deployed is a `CALLED_DECISION_ERROR` incident, a failed evaluation (two
//! rules matching under UNIQUE, a type error) a `DECISION_EVALUATION_ERROR` incident;
//! resolving either evaluates again. With `zeebe:taskDefinition` it is a job for a
//! worker, exactly as a service task.

use rill_protocol::value::IncidentErrorType;
use rill_protocol::{Intent, Key};
use serde_json::Map;

use super::service_task::wait_for_job;
use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::commands::EvaluationSite;
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{BusinessRuleDefinition, CalledBinding, ElementKind};
use crate::outcome::{Evaluated, Failure};

pub(super) struct BusinessRuleTask;

impl ElementBehavior for BusinessRuleTask {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::BusinessRuleTask(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "businessRuleTask").into());
        };
        let (decision_id, result_variable, binding) = match definition {
            BusinessRuleDefinition::Job(job) => return wait_for_job(p, active, job),
            BusinessRuleDefinition::Decision {
                decision_id,
                result_variable,
                binding,
            } => (decision_id, result_variable, binding),
        };
        let decision_id = p.evaluate_string(decision_id, active)?;
        let deployment = p.read().deployment_of_process(active.process.key)?;
        let Some(decision) = p.find_decision(&decision_id, binding, deployment)? else {
            let how = match binding {
                CalledBinding::Latest => String::new(),
                CalledBinding::Deployment => " in the deployment of the process (binding type \
                                               deployment)"
                    .to_owned(),
                CalledBinding::VersionTag(tag) => format!(" with version tag '{tag}'"),
            };
            return Err(Failure::new(
                IncidentErrorType::CalledDecisionError,
                format!(
                    "Expected to evaluate decision '{decision_id}'{how}, but no such decision is \
                     deployed; deploy it, then resolve this incident"
                ),
            )
            .into());
        };
        let instance = Key(active.record().process_instance_key);
        let chain = p.scope_chain(active.key())?;
        let variables = p.all_variables(instance, &chain)?;
        let site = EvaluationSite {
            bpmn_process_id: active.record().bpmn_process_id.clone(),
            process_definition_key: active.record().process_definition_key,
            process_instance_key: instance.get(),
            element_id: active.element().id.clone(),
            element_instance_key: active.key().get(),
            root_process_instance_key: active.record().root_process_instance_key,
        };
        let (_, record, output) = p.evaluate_deployed_decision(&decision, &variables, site)?;
        let Some(output) = output else {
            return Err(Failure::new(
                IncidentErrorType::DecisionEvaluationError,
                record.evaluation_failure_message,
            )
            .into());
        };
        p.open_event_triggers(active)?;
        p.mark(active, Intent::ElementActivated)?;
        let mut variables = Map::new();
        variables.insert(result_variable.clone(), output);
        p.complete(active, Some(variables), Outgoing::All)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_job(active)?;
        p.close_event_triggers(active)?;
        p.resolve_element_incident(active.key())
    }
}
