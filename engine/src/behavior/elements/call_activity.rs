//! Call activity: creates an instance of another process (its child) on entry and
//! completes when the child completes, with the child's variables. Terminating it
//! terminates the child; an error the child does not catch reaches the call activity's
//! boundary events (`behavior/errors.rs`). The child runs on the parent's partition.

use rill_protocol::value::IncidentErrorType;
use rill_protocol::{Intent, Key};
use serde_json::{Map, Value};

use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{CalledBinding, CalledElement, ElementKind};
use crate::model_cache::DeployedProcess;
use crate::outcome::{Evaluated, Failure};
use crate::state::ElementState;

pub(super) struct CallActivity;

/// How deep call activities may nest (Zeebe's default `maxProcessDepth`): a process that
/// calls itself without waiting would otherwise create instances forever in one command.
const MAX_CALL_DEPTH: u32 = 1000;

impl ElementBehavior for CallActivity {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::CallActivity(called) = &active.element().kind else {
            return Err(wrong_kind(active, "callActivity").into());
        };
        let process_id = p.evaluate_string(&called.process_id, active)?;
        let child = p.called_process(called, &process_id, active)?;
        p.check_call_depth(active)?;
        let instance = Key(active.record().process_instance_key);
        let variables = if called.propagate_all_parent_variables {
            let chain = p.scope_chain(active.key())?;
            p.all_variables(instance, &chain)?
        } else {
            // Only the call activity's locals: its input mappings.
            p.all_variables(instance, &[active.key()])?
        };
        p.open_event_triggers(active)?;
        p.mark(active, Intent::ElementActivated)?;
        p.start_child(active, &child, &variables)?;
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        // The child instance is terminated next, by the lifecycle (`runs_inside`).
        p.resolve_element_incident(active.key())
    }
}

impl Processing<'_> {
    /// The process definition a call activity calls, per its binding type; not finding
    /// it is a `CALLED_ELEMENT_ERROR` incident (resolved by deploying it, then
    /// resolving the incident).
    fn called_process(
        &mut self,
        called: &CalledElement,
        process_id: &str,
        active: &Active,
    ) -> Evaluated<std::sync::Arc<DeployedProcess>> {
        let missing = |what: String| Failure::new(IncidentErrorType::CalledElementError, what);
        if process_id.is_empty() {
            return Err(missing(
                "Expected the called process id to be a non-empty string, but it was empty"
                    .to_owned(),
            )
            .into());
        }
        let key = match &called.binding {
            CalledBinding::Latest => self.latest_process(process_id)?.map(|(_, key)| key),
            CalledBinding::Deployment => {
                let deployment = self.read().deployment_of_process(active.process.key)?;
                match deployment {
                    // A definition deleted since is not called (an incident).
                    Some(deployment) => {
                        match self.read().process_in_deployment(deployment, process_id)? {
                            Some(key) if self.read().is_process_startable(key)? => Some(key),
                            _ => None,
                        }
                    }
                    None => None,
                }
            }
            CalledBinding::VersionTag(tag) => self.process_with_tag(process_id, tag)?,
        };
        let Some(key) = key else {
            let binding = match &called.binding {
                CalledBinding::Latest => String::new(),
                CalledBinding::Deployment => format!(
                    " in the deployment of process '{}' (binding type deployment)",
                    active.process.model.bpmn_process_id
                ),
                CalledBinding::VersionTag(tag) => format!(" with version tag '{tag}'"),
            };
            return Err(missing(format!(
                "Expected to call a process with BPMN process id '{process_id}'{binding}, but \
                 no such process is deployed; deploy it, then resolve this incident"
            ))
            .into());
        };
        let child = self.model(key)?;
        if child
            .model
            .start_event(crate::model::ProcessModel::ROOT)
            .is_none()
        {
            return Err(missing(format!(
                "Expected to call process '{process_id}' at its none start event, but it has \
                 none: it starts only by timer, message or signal"
            ))
            .into());
        }
        Ok(child)
    }

    /// Refuses a child when [`MAX_CALL_DEPTH`] instances, the caller's included, are
    /// already nested (an incident).
    fn check_call_depth(&self, active: &Active) -> Evaluated {
        let mut depth = 1;
        let mut parent = active.record().parent_process_instance_key;
        while parent > 0 {
            depth += 1;
            if depth >= MAX_CALL_DEPTH {
                return Err(Failure::new(
                    IncidentErrorType::CalledElementError,
                    format!(
                        "The call activity cannot create a child instance: {MAX_CALL_DEPTH} \
                         process instances are already nested here (does the process call \
                         itself without waiting?)"
                    ),
                )
                .into());
            }
            parent = match self.read().element_instance(parent)? {
                Some(instance) => instance.record.parent_process_instance_key,
                None => break,
            };
        }
        Ok(())
    }

    /// The latest version of `process_id` whose `zeebe:versionTag` is `tag` (versions
    /// are looked at newest first).
    fn process_with_tag(&mut self, process_id: &str, tag: &str) -> Result<Option<Key>> {
        let Some((latest, _)) = self.latest_process(process_id)? else {
            return Ok(None);
        };
        for version in (1..=latest).rev() {
            if let Some(key) = self.read().process_key_by_version(process_id, version)?
                && self.model(key)?.model.version_tag.as_deref() == Some(tag)
            {
                return Ok(Some(key));
            }
        }
        Ok(None)
    }

    /// Creates the child instance of a call activity: its variables, then its process
    /// element (whose applier links it to the call activity), then its start event.
    fn start_child(
        &mut self,
        call_activity: &Active,
        child: &DeployedProcess,
        variables: &Map<String, Value>,
    ) -> Result<()> {
        let key = self.next_key()?;
        let mut root = Processing::root_record(child, key);
        root.parent_process_instance_key = call_activity.record().process_instance_key;
        root.parent_element_instance_key = call_activity.key().get();
        root.root_process_instance_key = call_activity.record().root_process_instance_key;
        root.tenant_id = call_activity.record().tenant_id.clone();
        // A called instance carries its caller's tags.
        root.tags = call_activity.record().tags.clone();
        for (name, value) in variables {
            self.set_variable(&root, key, name, value)?;
        }
        self.enter_process(key, root)?;
        self.start_process(key)
    }

    /// The child of a call activity is about to complete: the variables it hands back
    /// (its process-scope variables), read before its scope goes away.
    pub(super) fn child_variables(&self, child: &Active) -> Result<Map<String, Value>> {
        self.all_variables(child.key(), &[child.key()])
    }

    /// The child of a call activity completed: the call activity completes with the
    /// child's variables. Without output mappings they propagate only when
    /// `propagateAllChildVariables` is set; with output mappings they are the call
    /// activity's locals, and the mappings decide what leaves.
    pub(super) fn called_instance_completed(
        &mut self,
        call_activity_key: Key,
        variables: Map<String, Value>,
    ) -> Result<()> {
        let Some(active) = self.active(call_activity_key)? else {
            return Ok(());
        };
        if active.instance.state != ElementState::Activated {
            return Ok(());
        }
        let ElementKind::CallActivity(called) = &active.element().kind else {
            return Err(wrong_kind(&active, "callActivity"));
        };
        let keep = called.propagate_all_child_variables || !active.element().outputs.is_empty();
        let trigger = keep.then_some(variables);
        self.complete(&active, trigger, Outgoing::All)
    }
}
