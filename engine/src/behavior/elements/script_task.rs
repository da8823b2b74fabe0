//! Script task. With `zeebe:script` the engine evaluates the FEEL expression on entry
//! (after the input mappings; a failure is an incident and resolving it evaluates
//! again) and completes at once: the result becomes the result variable, merged as a
//! job's variables are (local to the task when it has output mappings, else propagated).
//! With `zeebe:taskDefinition` it is a job for a worker, exactly as a service task. It
//! may carry boundary events.

use rill_protocol::Intent;
use serde_json::Map;

use super::service_task::wait_for_job;
use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{ElementKind, ScriptDefinition};
use crate::outcome::{Evaluated, Failure};

pub(super) struct ScriptTask;

impl ElementBehavior for ScriptTask {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::ScriptTask(definition) = &active.element().kind else {
            return Err(wrong_kind(active, "scriptTask").into());
        };
        match definition {
            ScriptDefinition::Expression {
                expression,
                result_variable,
            } => {
                let context = p.context_at(expression, active)?;
                let result = expression
                    .evaluate(&context, p.feel_env())
                    .map_err(|e| Failure::extract_value(e.to_string()))?;
                p.open_event_triggers(active)?;
                p.mark(active, Intent::ElementActivated)?;
                let mut variables = Map::new();
                variables.insert(result_variable.clone(), result);
                p.complete(active, Some(variables), Outgoing::All)?;
            }
            ScriptDefinition::Job(definition) => wait_for_job(p, active, definition)?,
        }
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
