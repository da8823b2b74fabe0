//! PROCESS_INSTANCE_MODIFICATION MODIFY: activate elements of a running instance and
//! terminate element instances of it, all or nothing (Zeebe 8.8's semantics).
//!
//! Every instruction is checked before anything is written; a command with one bad
//! instruction is rejected whole, naming what is wrong. Then, in order: for each
//! activation, the missing instances of the element's flow scopes are created and its
//! variables set; the terminations run (a scope left empty is terminated too, unless an
//! activation enters it); `MODIFIED` is written; the elements are entered.

use std::sync::Arc;

use rill_protocol::value::{
    BpmnElementType, ModificationActivateInstruction, ModificationTerminateInstruction,
    ModificationVariableInstruction, ProcessInstanceModificationRecord,
};
use rill_protocol::{Intent, Key, ModifyProcessInstance};
use serde_json::{Map, Value};

use super::{tenant, variables_map};
use crate::context::Processing;
use crate::error::Result;
use crate::model::{ElementIdx, ElementKind, ProcessModel};
use crate::model_cache::DeployedProcess;
use crate::outcome::Rejection;
use crate::state::{ElementInstance, ElementState};

/// The record of a modification command as the client sent it.
pub(super) fn placeholder(command: &ModifyProcessInstance) -> ProcessInstanceModificationRecord {
    ProcessInstanceModificationRecord {
        process_instance_key: command.process_instance_key.get(),
        terminate_instructions: command
            .terminate_instructions
            .iter()
            .map(|key| ModificationTerminateInstruction {
                element_instance_key: key.get(),
            })
            .collect(),
        activate_instructions: command
            .activate_instructions
            .iter()
            .map(|instruction| ModificationActivateInstruction {
                element_id: instruction.element_id.clone(),
                ancestor_scope_key: if instruction.ancestor_element_instance_key.get() > 0 {
                    instruction.ancestor_element_instance_key.get()
                } else {
                    -1
                },
                variable_instructions: instruction
                    .variable_instructions
                    .iter()
                    .map(|v| ModificationVariableInstruction {
                        variables: v.variables.clone(),
                        element_id: v.scope_id.clone(),
                    })
                    .collect(),
                ancestor_scope_keys: Vec::new(),
            })
            .collect(),
        ancestor_scope_keys: Vec::new(),
        tenant_id: tenant(),
    }
}

/// One checked activation: where the element is entered and with which variables.
struct Activation {
    element: ElementIdx,
    /// The live element instance the missing flow scopes are created under.
    base: Key,
    /// The flow scopes to create, outermost first (empty: `base` is the flow scope).
    missing_scopes: Vec<ElementIdx>,
    /// Variables by scope element (`None`: the process instance's scope).
    variables: Vec<(Option<ElementIdx>, Map<String, Value>)>,
}

pub(super) fn modify(p: &mut Processing<'_>, command: &ModifyProcessInstance) -> Result<()> {
    let key = command.process_instance_key;
    let mut record = placeholder(command);
    let instance = p
        .read()
        .element_instance(key)?
        .filter(|i| i.record.bpmn_element_type == BpmnElementType::Process);
    let Some(instance) = instance else {
        let rejection = Rejection::not_found(format!(
            "Expected to modify process instance but no process instance found with key \
             '{key}'"
        ));
        p.reject(key, Intent::Modify, record, rejection);
        return Ok(());
    };
    let process = p.model(instance.record.process_definition_key)?;
    let checked = check_activations(p, command, &instance, &process)
        .and_then(|activations| {
            check_terminations(p, command, &instance, &process)?;
            Ok(activations)
        })
        .map_err(|rejection| rejection.map(|r| r.in_process(&process.model.bpmn_process_id)));
    let activations = match checked {
        Ok(activations) => activations,
        Err(Checked::Rejected(rejection)) => {
            p.reject(key, Intent::Modify, record, rejection);
            return Ok(());
        }
        Err(Checked::Failed(error)) => return Err(error),
    };

    p.command(key, Intent::Modify, record.clone());
    // The flow scopes and variables of each activation first: the terminations must not
    // end a scope an activation enters.
    let mut entered_in = Vec::with_capacity(activations.len());
    for (activation, recorded) in activations.iter().zip(&mut record.activate_instructions) {
        let chain = create_flow_scopes(p, &process, activation)?;
        if let Some(&scope) = chain.last() {
            for (scope_element, variables) in &activation.variables {
                let holder = match scope_element {
                    None => key,
                    Some(element) => scope_instance(&process.model, &chain, *element),
                };
                if let Some(holder) = p.read().element_instance(holder)? {
                    p.set_local_variables(&holder, variables.clone())?;
                }
            }
            entered_in.push(Some(scope));
        } else {
            entered_in.push(None);
        }
        recorded.ancestor_scope_keys = chain.iter().map(|k| k.get()).collect();
    }
    let kept: Vec<Key> = record
        .activate_instructions
        .iter()
        .flat_map(|i| i.ancestor_scope_keys.iter().map(|k| Key(*k)))
        .collect();
    for terminate in &command.terminate_instructions {
        p.terminate_for_modification(*terminate, &kept)?;
    }
    let mut all_scopes: Vec<i64> = Vec::new();
    for scope in kept {
        if !all_scopes.contains(&scope.get()) {
            all_scopes.push(scope.get());
        }
    }
    record.ancestor_scope_keys = all_scopes;
    p.event(key, Intent::Modified, record.clone())?;
    p.respond(key, Intent::Modified, record);
    for (activation, scope) in activations.iter().zip(entered_in) {
        if let Some(scope) = scope {
            p.activate_for_modification(scope, &process, activation.element)?;
        }
    }
    Ok(())
}

/// Why a check did not pass: a rejection for the client, or a failure to read state.
enum Checked {
    Rejected(Rejection),
    Failed(crate::error::Error),
}

impl From<crate::error::Error> for Checked {
    fn from(error: crate::error::Error) -> Self {
        Checked::Failed(error)
    }
}

impl Checked {
    fn map(self, f: impl FnOnce(Rejection) -> Rejection) -> Checked {
        match self {
            Checked::Rejected(rejection) => Checked::Rejected(f(rejection)),
            failed => failed,
        }
    }
}

/// A rejection whose reason still needs the process id (`{process}` in the text).
trait InProcess {
    fn in_process(self, bpmn_process_id: &str) -> Rejection;
}

impl InProcess for Rejection {
    fn in_process(mut self, bpmn_process_id: &str) -> Rejection {
        self.reason = self.reason.replace("{process}", bpmn_process_id);
        self
    }
}

fn invalid(reason: String) -> Checked {
    Checked::Rejected(Rejection::invalid_argument(reason))
}

fn check_activations(
    p: &mut Processing<'_>,
    command: &ModifyProcessInstance,
    instance: &ElementInstance,
    process: &Arc<DeployedProcess>,
) -> std::result::Result<Vec<Activation>, Checked> {
    let model = &process.model;
    if !command.activate_instructions.is_empty() && instance.state != ElementState::Activated {
        return Err(Checked::Rejected(Rejection::invalid_state(format!(
            "Expected to modify instance of process '{{process}}' but it is in state {}; \
             elements can be activated only in an active process instance",
            instance.state.name()
        ))));
    }
    let mut activations = Vec::new();
    let mut unknown = Vec::new();
    for instruction in &command.activate_instructions {
        match model.element_by_id(&instruction.element_id) {
            Some(idx) => activations.push(idx),
            None => unknown.push(instruction.element_id.as_str()),
        }
    }
    if !unknown.is_empty() {
        return Err(invalid(format!(
            "Expected to modify instance of process '{{process}}' but it contains one or more \
             activate instructions with an element that could not be found: '{}'",
            unknown.join("', '")
        )));
    }
    for idx in &activations {
        if let Some(why) = unsupported_activation(model, *idx) {
            return Err(invalid(format!(
                "Expected to modify instance of process '{{process}}' but it contains one or \
                 more activate instructions for elements that are unsupported: '{}'. {why}.",
                model.element(*idx).id
            )));
        }
    }
    let mut checked = Vec::with_capacity(activations.len());
    for (instruction, element) in command.activate_instructions.iter().zip(activations) {
        let flow_scopes = flow_scopes(model, element);
        let mut variables = Vec::new();
        for variable in &instruction.variable_instructions {
            let document =
                variables_map(&variable.variables, "the variables").map_err(Checked::Rejected)?;
            if variable.scope_id.is_empty() {
                variables.push((None, document));
                continue;
            }
            let Some(scope) = model.element_by_id(&variable.scope_id) else {
                return Err(invalid(format!(
                    "Expected to modify instance of process '{{process}}' but it contains one \
                     or more variable instructions with a scope element id that could not be \
                     found: '{}'",
                    variable.scope_id
                )));
            };
            if !flow_scopes.contains(&scope) {
                return Err(invalid(format!(
                    "Expected to modify instance of process '{{process}}' but it contains one \
                     or more variable instructions with a scope element that doesn't belong to \
                     the activating element's flow scope: '{}' is not a flow scope of '{}'. \
                     These variables should be set before or after the modification.",
                    variable.scope_id, instruction.element_id
                )));
            }
            let scope = (scope != ProcessModel::ROOT).then_some(scope);
            variables.push((scope, document));
        }
        let (base, missing_scopes) = select_ancestor(
            p,
            instance.key,
            model,
            &flow_scopes,
            instruction.ancestor_element_instance_key,
            &instruction.element_id,
        )?;
        checked.push(Activation {
            element,
            base,
            missing_scopes,
            variables,
        });
    }
    Ok(checked)
}

/// Why Zeebe does not activate this element, if it does not.
fn unsupported_activation(model: &ProcessModel, idx: ElementIdx) -> Option<String> {
    let element = model.element(idx);
    match &element.kind {
        ElementKind::Process { .. } => {
            return Some("The process itself cannot be activated".to_owned());
        }
        ElementKind::StartEvent
        | ElementKind::EventStartEvent { .. }
        | ElementKind::TimerStartEvent(_)
        | ElementKind::MessageStartEvent { .. }
        | ElementKind::SignalStartEvent { .. }
        | ElementKind::BoundaryEvent { .. } => {
            let name = serde_json::to_value(element.element_type())
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            return Some(format!(
                "The activation of elements with type '{name}' is not supported"
            ));
        }
        _ => {}
    }
    let after_event_gateway = element.incoming.iter().any(|flow| {
        matches!(
            model.element(model.flow(*flow).source).kind,
            ElementKind::EventBasedGateway
        )
    });
    if after_event_gateway {
        return Some(
            "The activation of events belonging to an event-based gateway is not supported"
                .to_owned(),
        );
    }
    if model.inside_ad_hoc(idx) {
        let mut ad_hoc = idx;
        while !matches!(model.element(ad_hoc).kind, ElementKind::AdHocSubProcess(_)) {
            match model.element(ad_hoc).flow_scope {
                Some(scope) => ad_hoc = scope,
                None => break,
            }
        }
        return Some(format!(
            "The activation of elements inside an ad-hoc subprocess ('{}') is not supported; \
             activate them with the ad-hoc subprocess activation \
             (/v2/element-instances/ad-hoc-activities/{{adHocSubProcessInstanceKey}}/activation)",
            model.element(ad_hoc).id
        ));
    }
    let mut scope = element.flow_scope;
    while let Some(s) = scope {
        let scope_element = model.element(s);
        if scope_element.multi_instance.is_some() {
            return Some(format!(
                "The activation of elements inside a multi-instance subprocess ('{}') is not \
                 supported",
                scope_element.id
            ));
        }
        scope = scope_element.flow_scope;
    }
    None
}

/// The flow scopes of an element, from the process down to its direct flow scope.
fn flow_scopes(model: &ProcessModel, idx: ElementIdx) -> Vec<ElementIdx> {
    let mut scopes = Vec::new();
    let mut scope = model.element(idx).flow_scope;
    while let Some(s) = scope {
        scopes.push(s);
        scope = model.element(s).flow_scope;
    }
    scopes.reverse();
    scopes
}

/// The live element instance to enter the element under, and the flow scopes to create
/// below it. Without a selected ancestor: the one live instance of the nearest flow
/// scope that has any (the process instance at the top has one).
fn select_ancestor(
    p: &Processing<'_>,
    process_instance_key: Key,
    model: &ProcessModel,
    flow_scopes: &[ElementIdx],
    selected: Key,
    element_id: &str,
) -> std::result::Result<(Key, Vec<ElementIdx>), Checked> {
    if selected.get() > 0 {
        let ancestor = p
            .read()
            .element_instance(selected)?
            .filter(|i| i.state == ElementState::Activated);
        let Some(ancestor) = ancestor else {
            return Err(invalid(format!(
                "Expected to modify instance of process '{{process}}' but it contains one or \
                 more activate instructions with an ancestor scope key that does not exist, or \
                 is not in an active state: '{selected}'"
            )));
        };
        if Key(ancestor.record.process_instance_key) != process_instance_key {
            return Err(invalid(format!(
                "Expected to modify instance of process '{{process}}' but it contains one or \
                 more activate instructions with an ancestor scope key that does not belong to \
                 the modified process instance: '{selected}'"
            )));
        }
        let position = flow_scopes.iter().position(|s| {
            if *s == ProcessModel::ROOT {
                ancestor.record.bpmn_element_type == BpmnElementType::Process
            } else {
                ancestor.record.bpmn_element_type != BpmnElementType::Process
                    && model.element(*s).id == ancestor.record.element_id
            }
        });
        let Some(position) = position else {
            return Err(invalid(format!(
                "Expected to modify instance of process '{{process}}' but it contains one or \
                 more activate instructions with an ancestor scope key that is not an ancestor \
                 of the element to activate: '{selected}' is an instance of '{}', which does \
                 not contain '{element_id}'",
                ancestor.record.element_id
            )));
        };
        return Ok((selected, flow_scopes[position + 1..].to_vec()));
    }
    for (position, scope) in flow_scopes.iter().enumerate().rev() {
        if *scope == ProcessModel::ROOT {
            return Ok((process_instance_key, flow_scopes[1..].to_vec()));
        }
        let scope_id = &model.element(*scope).id;
        let instances = live_instances_of(p, process_instance_key, scope_id)?;
        match instances.as_slice() {
            [] => continue,
            [one] => return Ok((*one, flow_scopes[position + 1..].to_vec())),
            _ => {
                return Err(invalid(format!(
                    "Expected to modify instance of process '{{process}}' but it contains one \
                     or more activate instructions for an element that has a flow scope with \
                     more than one active instance: '{element_id}' (flow scope '{scope_id}'). \
                     Can't decide in which instance of the flow scope the element should be \
                     activated. Please specify an ancestor element instance key for this \
                     activate instruction."
                )));
            }
        }
    }
    Ok((
        process_instance_key,
        flow_scopes.get(1..).unwrap_or(&[]).to_vec(),
    ))
}

/// The active element instances of an element in a process instance (not in the
/// instances it called).
fn live_instances_of(
    p: &Processing<'_>,
    process_instance_key: Key,
    element_id: &str,
) -> Result<Vec<Key>> {
    let mut found = Vec::new();
    let mut pending = vec![process_instance_key];
    while let Some(scope) = pending.pop() {
        for child in p.read().children(scope)? {
            let Some(instance) = p.read().element_instance(child)? else {
                continue;
            };
            if instance.record.element_id == element_id
                && instance.state == ElementState::Activated
                && instance.record.bpmn_element_type != BpmnElementType::MultiInstanceBody
            {
                found.push(Key(child));
            }
            pending.push(Key(child));
        }
    }
    found.sort();
    Ok(found)
}

fn check_terminations(
    p: &mut Processing<'_>,
    command: &ModifyProcessInstance,
    instance: &ElementInstance,
    process: &Arc<DeployedProcess>,
) -> std::result::Result<(), Checked> {
    let mut unknown = Vec::new();
    for key in &command.terminate_instructions {
        let found = p.read().element_instance(*key)?.filter(|i| {
            Key(i.record.process_instance_key) == instance.key
                && i.record.bpmn_element_type != BpmnElementType::Process
                && i.state != ElementState::Terminating
        });
        if found.is_none() {
            unknown.push(key.to_string());
        }
    }
    let mut inside_ad_hoc = Vec::new();
    for key in &command.terminate_instructions {
        if let Some(found) = p.read().element_instance(*key)?
            && let Some(idx) = process.model.element_by_id(&found.record.element_id)
            && found.record.bpmn_element_type != BpmnElementType::Process
            && process.model.inside_ad_hoc(idx)
        {
            inside_ad_hoc.push(key.to_string());
        }
    }
    if !inside_ad_hoc.is_empty() {
        return Err(invalid(format!(
            "Expected to modify instance of process '{{process}}' but it contains one or more \
             terminate instructions for element instances inside an ad-hoc subprocess, which \
             is not supported: '{}'; terminate the ad-hoc subprocess instead",
            inside_ad_hoc.join("', '")
        )));
    }
    if !unknown.is_empty() {
        return Err(invalid(format!(
            "Expected to modify instance of process '{{process}}' but it contains one or more \
             terminate instructions with an element instance that could not be found: '{}' \
             (an active element instance of this process instance is expected; to end the \
             whole instance, cancel it)",
            unknown.join("', '")
        )));
    }
    let is_called = instance.record.parent_process_instance_key > 0;
    if is_called
        && command.activate_instructions.is_empty()
        && !command.terminate_instructions.is_empty()
        && !survives(p, instance, &command.terminate_instructions)?
    {
        return Err(invalid(format!(
            "Expected to modify instance of process '{{process}}' but the terminate \
             instructions would terminate every active element instance of a process instance \
             created by a call activity; terminate the call activity (element instance '{}') \
             in the parent process instance '{}' instead",
            instance.record.parent_element_instance_key,
            instance.record.parent_process_instance_key
        )));
    }
    Ok(())
}

/// Whether something of `scope` is left once the instances in `terminated` are
/// terminated (a scope whose last instance goes is terminated with it).
fn survives(p: &Processing<'_>, scope: &ElementInstance, terminated: &[Key]) -> Result<bool> {
    if scope.active_flows > 0 {
        return Ok(true);
    }
    for child in p.read().children(scope.key)? {
        if terminated.contains(&Key(child)) {
            continue;
        }
        let Some(child) = p.read().element_instance(child)? else {
            continue;
        };
        let has_children = !p.read().children(child.key)?.is_empty();
        if !has_children || survives(p, &child, terminated)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Creates the missing flow scopes of an activation; returns the element instances of
/// every flow scope, from the process instance down (empty if one could not be
/// entered: an incident is on it).
fn create_flow_scopes(
    p: &mut Processing<'_>,
    process: &Arc<DeployedProcess>,
    activation: &Activation,
) -> Result<Vec<Key>> {
    let mut chain = Vec::new();
    let mut key = activation.base;
    while key.get() > 0 {
        let Some(instance) = p.read().element_instance(key)? else {
            break;
        };
        chain.push(key);
        key = Key(instance.record.flow_scope_key);
    }
    chain.reverse();
    let mut scope = activation.base;
    for element in &activation.missing_scopes {
        let Some(record) = p.read().element_instance(scope)?.map(|i| i.record) else {
            return Ok(Vec::new());
        };
        match p.enter_scope_for_modification(scope, record, process, *element)? {
            Some(created) => {
                chain.push(created);
                scope = created;
            }
            None => return Ok(Vec::new()),
        }
    }
    Ok(chain)
}

/// The element instance of the flow scope `element` among an activation's scopes
/// (`chain`, from the process instance down, aligned with the element's flow scopes).
fn scope_instance(model: &ProcessModel, chain: &[Key], element: ElementIdx) -> Key {
    let mut depth = 0;
    let mut scope = model.element(element).flow_scope;
    while let Some(s) = scope {
        depth += 1;
        scope = model.element(s).flow_scope;
    }
    chain.get(depth).copied().unwrap_or(chain[0])
}
