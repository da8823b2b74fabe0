//! Ad-hoc subprocess (`AD_HOC_SUB_PROCESS`, Zeebe 8.8's BPMN implementation): a scope
//! whose inner elements are not reached by flows from a start event but activated, on
//! entry by `activeElementsCollection` and later by the activation command, in any
//! order and any number of times. Each activation creates an inner instance
//! (`AD_HOC_SUB_PROCESS_INNER_INSTANCE`, element id `<id>#innerInstance`, written
//! `ELEMENT_ACTIVATING` and `ELEMENT_ACTIVATED` at once) and enters the element in it;
//! flows leaving the element continue inside that inner instance, which completes when
//! no token is left in it, as a subprocess does.
//!
//! When an inner instance completes, its `outputElement` is appended to the ad-hoc
//! subprocess's local `outputCollection` and the `completionCondition` is evaluated in
//! the ad-hoc subprocess's scope. Without a condition the ad-hoc subprocess completes
//! once no inner instance is left; with one, it completes when the condition holds:
//! at once, terminating the inner instances still active (`cancelRemainingInstances`,
//! the default), or once none is left. A failing output element or condition is an
//! `EXTRACT_VALUE_ERROR` incident on the completing inner instance, which stays in
//! `ELEMENT_COMPLETING`.
//!
//! With a `zeebe:taskDefinition` (Zeebe 8.8's job-worker implementation, as the AI
//! agent connector uses) a job's worker decides instead: the ad-hoc subprocess creates
//! a job (kind `AD_HOC_SUB_PROCESS`) on activation and again each time an inner
//! instance completes, one job at a time (a job still open is cancelled first). The
//! worker completes it with a result naming the elements to activate (each with local
//! variables) or fulfilling the completion condition, which completes the ad-hoc
//! subprocess at once (terminating the inner instances still active when the result
//! asks for it) or once its inner instances are done. `activeElementsCollection` and
//! `completionCondition` are not evaluated then.
//!
//! Its event subprocesses are its own children, not content: it holds their triggers,
//! and a triggered one runs beside the inner instances. A non-interrupting one that
//! completes ends an execution path as an inner instance does (no output element); an
//! interrupting one cancels the job and the inner instances, and completes the ad-hoc
//! subprocess when it completes.

use rill_protocol::value::{AdHocSubProcessInstructionRecord, JobRecord};
use rill_protocol::{Intent, Key};
use serde_json::{Map, Value};

use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::behavior::jobs::NewJob;
use crate::behavior::json_type_name;
use crate::context::{Active, Processing, Step};
use crate::error::{Result, inconsistent};
use crate::model::{AdHocDefinition, ElementIdx, ElementKind};
use crate::outcome::{Evaluated, Failure};
use crate::state::ElementState;

/// The local variable describing the activatable elements (Zeebe's name).
const ELEMENTS_VARIABLE: &str = "adHocSubProcessElements";

pub(super) struct AdHocSubProcess;

/// The inner instance of an ad-hoc subprocess: created by the ad-hoc subprocess with
/// its element, never entered over a flow.
pub(super) struct InnerInstance;

fn definition(active: &Active) -> Result<&AdHocDefinition> {
    match &active.element().kind {
        ElementKind::AdHocSubProcess(definition) => Ok(definition),
        _ => Err(wrong_kind(active, "adHocSubProcess")),
    }
}

/// Zeebe's rendering of a list of element ids in messages: `[a, b]`.
fn id_list(ids: &[&str]) -> String {
    format!("[{}]", ids.join(", "))
}

impl ElementBehavior for AdHocSubProcess {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let definition = definition(active)?;
        let (elements, job) = match &definition.job {
            Some(job) => (Vec::new(), Some(p.evaluate_job(job, active)?)),
            None => (p.active_elements(active, definition)?, None),
        };
        p.open_event_triggers(active)?;
        p.set_variable(
            active.record(),
            active.key(),
            ELEMENTS_VARIABLE,
            &definition.elements_metadata,
        )?;
        if let Some(name) = &definition.output_collection {
            p.set_variable(
                active.record(),
                active.key(),
                name,
                &Value::Array(Vec::new()),
            )?;
        }
        if let Some(job) = job {
            p.create_ad_hoc_job(active, job)?;
        }
        p.mark(active, Intent::ElementActivated)?;
        for element in elements {
            p.activate_in_ad_hoc(active, definition, element, Map::new())?;
        }
        Ok(())
    }

    fn complete(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.close_event_triggers(active)?;
        let definition = definition(active)?;
        if let Some(name) = &definition.output_collection {
            let instance = Key(active.record().process_instance_key);
            let collected = p
                .read()
                .variable(instance, active.key(), name)?
                .map(|stored| serde_json::from_str(&stored.value).unwrap_or(Value::Null))
                .unwrap_or_else(|| Value::Array(Vec::new()));
            let mut variables = Map::new();
            variables.insert(name.clone(), collected);
            let scope = Key(active.record().flow_scope_key);
            p.propagate_variables(scope, &active.instance, variables)?;
        }
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.cancel_job(active)?;
        p.close_event_triggers(active)?;
        p.delete_compensation_subscriptions(active)?;
        p.resolve_element_incident(active.key())
    }
}

/// What the completion of an inner instance means for its ad-hoc subprocess, decided
/// before anything is written.
pub(crate) enum InnerVerdict {
    /// The BPMN implementation: the completion condition's value (`None` without one).
    Condition(Option<bool>),
    /// The job-worker implementation: the worker decides again with a new job.
    NextJob(NewJob),
    /// The job-worker implementation, its completion condition already fulfilled:
    /// complete once the inner instances are done.
    Fulfilled,
    /// An interrupting event subprocess completed: the ad-hoc subprocess completes,
    /// whatever its completion condition or worker would say.
    Interrupted,
}

/// Whether an element instance is an event subprocess of an ad-hoc subprocess: its
/// completion ends an execution path of the ad-hoc subprocess, as an inner instance's
/// does.
pub(super) fn is_ad_hoc_event_subprocess(active: &Active) -> bool {
    let element = active.element();
    matches!(
        element.kind,
        ElementKind::SubProcess {
            triggered_by_event: true,
            ..
        }
    ) && element.flow_scope.is_some_and(|scope| {
        matches!(
            active.process.model.element(scope).kind,
            ElementKind::AdHocSubProcess(_)
        )
    })
}

impl ElementBehavior for InnerInstance {
    fn activate(&self, _p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        Err(inconsistent(format!(
            "the inner instance '{}' of an ad-hoc subprocess is created by its ad-hoc \
             subprocess, never entered",
            active.element().id
        ))
        .into())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.delete_compensations_thrown_in(active)?;
        // An incident of its completion (output element, completion condition).
        p.resolve_element_incident(active.key())
    }
}

impl Processing<'_> {
    /// The elements `activeElementsCollection` names, checked against the activatable
    /// ones (Zeebe's messages); no expression: none.
    fn active_elements(
        &self,
        active: &Active,
        definition: &AdHocDefinition,
    ) -> Evaluated<Vec<ElementIdx>> {
        let Some(expression) = &definition.active_elements else {
            return Ok(Vec::new());
        };
        let context = self.context_at(expression, active)?;
        let value = expression
            .evaluate(&context, self.feel_env())
            .map_err(|e| {
                Failure::extract_value(format!("Failed to activate ad-hoc elements. {e}"))
            })?;
        let Value::Array(items) = value else {
            return Err(Failure::extract_value(format!(
                "Failed to activate ad-hoc elements. Expected result of the expression '{}' to \
                 be 'ARRAY', but was '{}'.",
                expression.source(),
                json_type_name(&value)
            ))
            .into());
        };
        let mut ids = Vec::with_capacity(items.len());
        for item in &items {
            match item {
                Value::String(id) => ids.push(id.as_str()),
                other => {
                    return Err(Failure::extract_value(format!(
                        "Failed to activate ad-hoc elements. Expected result of the expression \
                         '{}' to be a list of strings, but it contains a '{}'.",
                        expression.source(),
                        json_type_name(other)
                    ))
                    .into());
                }
            }
        }
        resolve_elements(active, definition, &ids)
            .map_err(|reason| Failure::extract_value(reason).into())
    }

    /// Creates an inner instance of an activated ad-hoc subprocess (`ELEMENT_ACTIVATING`
    /// and `ELEMENT_ACTIVATED`), gives it its local variables (the output element's
    /// variable as `null` when it is a plain variable, so that what a worker sets under
    /// that name stays in this activation; then `variables`), and queues the entry of
    /// `element` in it.
    pub(crate) fn activate_in_ad_hoc(
        &mut self,
        ad_hoc: &Active,
        definition: &AdHocDefinition,
        element: ElementIdx,
        variables: Map<String, Value>,
    ) -> Result<()> {
        let inner = self.enter_element(
            ad_hoc.key(),
            ad_hoc.record().clone(),
            &ad_hoc.process,
            definition.inner_instance,
        )?;
        // Zeebe writes ACTIVATED from the ACTIVATING value here, tree path included.
        let mut activated = inner.record().clone();
        self.fill_tree_path(inner.key(), &mut activated)?;
        self.event(inner.key(), Intent::ElementActivated, activated)?;
        if let Some(name) = definition.output_element_variable()
            && !variables.contains_key(name)
        {
            self.set_variable(inner.record(), inner.key(), name, &Value::Null)?;
        }
        self.set_local_variables(&inner.instance, variables)?;
        self.push_step(Step::Activate {
            scope_key: inner.key(),
            process: ad_hoc.process.clone(),
            element,
            trigger: None,
        });
        Ok(())
    }

    /// The activation command: terminates the active inner instances first when asked,
    /// then activates each element with its variables.
    pub(crate) fn activate_ad_hoc_elements(
        &mut self,
        ad_hoc: &Active,
        elements: Vec<(ElementIdx, Map<String, Value>)>,
        cancel_remaining_instances: bool,
    ) -> Result<()> {
        if cancel_remaining_instances {
            self.terminate_children(ad_hoc.key())?;
        }
        let definition = definition(ad_hoc)?;
        for (element, variables) in elements {
            self.activate_in_ad_hoc(ad_hoc, definition, element, variables)?;
        }
        Ok(())
    }

    /// An inner instance completes (in ELEMENT_COMPLETING): its output element joins the
    /// output collection and the completion condition is evaluated in the ad-hoc
    /// subprocess's scope (seeing the collection with it); for the job-worker
    /// implementation, the next job is evaluated instead. Fails before writing
    /// anything.
    pub(super) fn ad_hoc_inner_verdict(&mut self, inner: &Active) -> Evaluated<InnerVerdict> {
        let ad_hoc_key = Key(inner.record().flow_scope_key);
        let Some(ad_hoc) = self.active(ad_hoc_key)? else {
            return Ok(InnerVerdict::Condition(None));
        };
        let definition = definition(&ad_hoc)?;
        let mut collected = None;
        if let (Some(name), Some(expression)) =
            (&definition.output_collection, &definition.output_element)
        {
            let context = self.context_at(expression, inner)?;
            let value = expression
                .evaluate(&context, self.feel_env())
                .map_err(|e| Failure::extract_value(e.to_string()))?;
            let instance = Key(inner.record().process_instance_key);
            let mut list = match self.read().variable(instance, ad_hoc_key, name)? {
                None => Vec::new(),
                Some(stored) => match serde_json::from_str(&stored.value) {
                    Ok(Value::Array(items)) => items,
                    Ok(other) => {
                        return Err(Failure::extract_value(format!(
                            "The output collection '{name}' has the wrong type. Expected \
                             'ARRAY' but was '{}'.",
                            json_type_name(&other)
                        ))
                        .into());
                    }
                    Err(_) => Vec::new(),
                },
            };
            list.push(value);
            collected = Some((name, Value::Array(list)));
        }
        let verdict = self.path_verdict(&ad_hoc, definition, &collected)?;
        if let Some((name, list)) = collected {
            self.set_variable(ad_hoc.record(), ad_hoc_key, name, &list)?;
        }
        Ok(verdict)
    }

    /// What the end of an execution path (an inner instance, a non-interrupting event
    /// subprocess) means, the output collection being about to be `collected`.
    fn path_verdict(
        &mut self,
        ad_hoc: &Active,
        definition: &AdHocDefinition,
        collected: &Option<(&String, Value)>,
    ) -> Evaluated<InnerVerdict> {
        Ok(if ad_hoc.instance.ad_hoc_completion_fulfilled {
            InnerVerdict::Fulfilled
        } else if let Some(job) = &definition.job {
            InnerVerdict::NextJob(self.evaluate_job(job, ad_hoc)?)
        } else {
            InnerVerdict::Condition(self.completion_condition(definition, ad_hoc, collected)?)
        })
    }

    /// An event subprocess of an ad-hoc subprocess completes (in ELEMENT_COMPLETING):
    /// an interrupting one completes the ad-hoc subprocess; a non-interrupting one ends
    /// an execution path as an inner instance does, without an output element (the
    /// completion condition, or the next job). Fails before writing anything.
    pub(super) fn ad_hoc_event_subprocess_verdict(
        &mut self,
        subprocess: &Active,
    ) -> Evaluated<InnerVerdict> {
        let model = &subprocess.process.model;
        let interrupting = model
            .start_event(subprocess.idx)
            .is_some_and(|start| matches!(model.element(start).kind.trigger(), Some((_, true))));
        if interrupting {
            return Ok(InnerVerdict::Interrupted);
        }
        let Some(ad_hoc) = self.active(Key(subprocess.record().flow_scope_key))? else {
            return Ok(InnerVerdict::Condition(None));
        };
        let definition = definition(&ad_hoc)?;
        self.path_verdict(&ad_hoc, definition, &None)
    }

    /// An interrupting event subprocess of the ad-hoc subprocess `holder` starts: the
    /// job of the job-worker implementation is cancelled with the inner instances, as
    /// nothing more is activated in it.
    pub(super) fn interrupt_ad_hoc_job(&mut self, holder: &Active) -> Result<()> {
        if matches!(holder.element().kind, ElementKind::AdHocSubProcess(_))
            && !holder.is_multi_instance_body()
        {
            self.cancel_job(holder)?;
        }
        Ok(())
    }

    /// The value of the completion condition (`None` without one), seeing the output
    /// collection as it is about to be.
    fn completion_condition(
        &self,
        definition: &AdHocDefinition,
        ad_hoc: &Active,
        collected: &Option<(&String, Value)>,
    ) -> Evaluated<Option<bool>> {
        let holds = match &definition.completion_condition {
            None => None,
            Some(condition) => {
                let mut context = self.context_at(condition, ad_hoc)?;
                if let Some((name, list)) = collected
                    && condition.variable_names().iter().any(|n| n == *name)
                {
                    context.insert((*name).clone(), list.clone());
                }
                match condition.evaluate(&context, self.feel_env()) {
                    Ok(Value::Bool(holds)) => Some(holds),
                    Ok(other) => {
                        return Err(Failure::extract_value(format!(
                            "Failed to evaluate completion condition. Expected result of the \
                             expression '{}' to be 'BOOLEAN', but was '{}'.",
                            condition.source(),
                            json_type_name(&other)
                        ))
                        .into());
                    }
                    Err(e) => {
                        return Err(Failure::extract_value(format!(
                            "Failed to evaluate completion condition. {e}"
                        ))
                        .into());
                    }
                }
            }
        };
        Ok(holds)
    }

    /// After an inner instance completed: without a completion condition the ad-hoc
    /// subprocess completes once nothing is left in it; with one that holds, it
    /// completes at once (terminating what is left, `cancelRemainingInstances`) or once
    /// nothing is left. The job-worker implementation replaces its job (one at a time,
    /// as in Zeebe), or, its condition fulfilled, completes once nothing is left.
    pub(super) fn ad_hoc_inner_completed(
        &mut self,
        ad_hoc_key: Key,
        verdict: InnerVerdict,
    ) -> Result<()> {
        let Some(ad_hoc) = self.active(ad_hoc_key)? else {
            return Ok(());
        };
        if ad_hoc.instance.state != ElementState::Activated {
            return Ok(());
        }
        let idle = ad_hoc.instance.active_children == 0 && ad_hoc.instance.active_flows == 0;
        let holds = match verdict {
            InnerVerdict::Condition(holds) => holds,
            InnerVerdict::Fulfilled | InnerVerdict::Interrupted if idle => {
                return self.complete(&ad_hoc, None, Outgoing::All);
            }
            InnerVerdict::Fulfilled | InnerVerdict::Interrupted => return Ok(()),
            InnerVerdict::NextJob(job) => {
                self.cancel_job(&ad_hoc)?;
                return self.create_ad_hoc_job(&ad_hoc, job);
            }
        };
        let cancel = definition(&ad_hoc)?.cancel_remaining_instances;
        match holds {
            None | Some(true) if idle => self.complete(&ad_hoc, None, Outgoing::All),
            Some(true) if cancel => self.complete_ad_hoc_now(ad_hoc_key),
            _ => Ok(()),
        }
    }

    /// Terminates the inner instances still active, then completes the ad-hoc
    /// subprocess.
    fn complete_ad_hoc_now(&mut self, ad_hoc_key: Key) -> Result<()> {
        let done = self.terminate_children(ad_hoc_key)?;
        let Some(ad_hoc) = self.active(ad_hoc_key)? else {
            return Ok(());
        };
        if !done {
            // An inner instance waits for its canceling task listeners: the subprocess
            // stays in ELEMENT_COMPLETING (its triggers closed) and completes once it is
            // terminated (`resume_termination`).
            self.mark(&ad_hoc, Intent::ElementCompleting)?;
            return self.close_event_triggers(&ad_hoc);
        }
        self.complete(&ad_hoc, None, Outgoing::All)
    }

    /// The job of a job-worker ad-hoc subprocess completed with a checked result: its
    /// variables are set as a completed job's are (where visible from the ad-hoc
    /// subprocess, else in the process), the named elements are activated, and a
    /// fulfilled completion condition completes the ad-hoc subprocess, at once when
    /// nothing is left in it or the result cancels what is, else once its inner
    /// instances are done. Each step is written as Zeebe's instruction records.
    pub(crate) fn ad_hoc_job_completed(
        &mut self,
        job: &JobRecord,
        variables: Map<String, Value>,
        activations: Vec<(ElementIdx, Map<String, Value>)>,
    ) -> Result<()> {
        let key = Key(job.element_instance_key);
        let Some(ad_hoc) = self.active(key)? else {
            return Ok(());
        };
        self.propagate_variables(key, &ad_hoc.instance, variables)?;
        let result = &job.result;
        let instruction = AdHocSubProcessInstructionRecord {
            ad_hoc_sub_process_instance_key: key.get(),
            activate_elements: result.activate_elements.clone(),
            cancel_remaining_instances: result.cancel_remaining_instances,
            tenant_id: job.tenant_id.clone(),
            completion_condition_fulfilled: result.completion_condition_fulfilled,
        };
        if !activations.is_empty() {
            self.command(key, Intent::Activate, instruction.clone());
            let definition = definition(&ad_hoc)?;
            for (element, locals) in activations {
                self.activate_in_ad_hoc(&ad_hoc, definition, element, locals)?;
            }
            self.event(key, Intent::Activated, instruction.clone())?;
        }
        if !result.completion_condition_fulfilled {
            return Ok(());
        }
        self.command(key, Intent::Complete, instruction.clone());
        self.event(key, Intent::Completed, instruction)?;
        let Some(ad_hoc) = self.active(key)? else {
            return Ok(());
        };
        let idle = ad_hoc.instance.active_children == 0 && ad_hoc.instance.active_flows == 0;
        if idle {
            self.complete(&ad_hoc, None, Outgoing::All)
        } else if result.cancel_remaining_instances {
            self.complete_ad_hoc_now(key)
        } else {
            Ok(())
        }
    }
}

/// The activatable elements of `definition` named by `ids`, in that order; an id that
/// is not one is refused with Zeebe's reason.
pub(crate) fn resolve_elements(
    active: &Active,
    definition: &AdHocDefinition,
    ids: &[&str],
) -> std::result::Result<Vec<ElementIdx>, String> {
    let model = &active.process.model;
    let mut found = Vec::with_capacity(ids.len());
    let mut missing = Vec::new();
    for id in ids {
        match definition
            .activatable
            .iter()
            .find(|idx| model.element(**idx).id == *id)
        {
            Some(idx) => found.push(*idx),
            None => missing.push(*id),
        }
    }
    if missing.is_empty() {
        Ok(found)
    } else {
        Err(format!(
            "Expected to activate activities for ad-hoc sub-process with key '{}', but the given \
             elements {} do not exist.",
            active.key(),
            id_list(&missing)
        ))
    }
}

/// The definition of a live ad-hoc subprocess instance, for the activation command.
pub(crate) fn ad_hoc_definition(active: &Active) -> Option<&AdHocDefinition> {
    match &active.element().kind {
        ElementKind::AdHocSubProcess(definition) => Some(definition),
        _ => None,
    }
}
