//! PROCESS_INSTANCE and PROCESS_INSTANCE_CREATION: element instances and their tokens.
//! A finished instance leaves nothing: the history store keeps it for readers.

use rill_protocol::Key;
use rill_protocol::value::{
    BpmnElementType, ProcessEventRecord, ProcessInstanceCreationRecord, ProcessInstanceRecord,
};

use super::Apply;
use crate::error::{Result, inconsistent};
use crate::model::ElementKind;
use crate::state::{AwaitRegistration, ElementInstance, ElementState, PendingTrigger, Writer};

pub(super) fn element_activating(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessInstanceRecord,
) -> Result<()> {
    let Apply { state, models, .. } = ctx;
    state.insert_element_instance(ElementInstance {
        key,
        state: ElementState::Activating,
        // The tree path is only written on this record; the instance's other records
        // (and its children, which start from it) go without.
        record: value.without_tree_path(),
        active_children: 0,
        active_flows: 0,
        job_key: Key::NONE,
        has_variables: false,
        awaited: false,
        listeners_done: 0,
        ad_hoc_completion_fulfilled: false,
    });
    if value.bpmn_element_type == BpmnElementType::Process {
        // A called instance is noted on its call activity, which terminates it when it
        // is terminated itself. Its definition counts it, so a
        // deleted definition is kept until its last instance ends.
        state.count_instance_started(value.process_definition_key)?;
        if value.parent_element_instance_key > 0 {
            state.update_element_instance(value.parent_element_instance_key, |call| {
                call.job_key = key;
            })?;
        }
        return Ok(());
    }
    // A token that arrived over sequence flows is consumed now: one per incoming
    // flow that holds one for a join, one otherwise. Start and boundary events have
    // none.
    let process = models.get(state.read(), value.process_definition_key)?;
    let model = &process.model;
    let element = model
        .element_by_id(&value.element_id)
        .ok_or_else(|| inconsistent(format!("element '{}' not in model", value.element_id)))?;
    let element = model.element(element);
    let scope_key = value.flow_scope_key;
    let mut consumed = 0;
    let inner = element.multi_instance.is_some()
        && value.bpmn_element_type != BpmnElementType::MultiInstanceBody;
    if inner {
        // An inner instance of a multi-instance body: no token of the scope is consumed
        // (the body took it); it gets the next loop counter.
        let mut counts = state.read().multi_instance_counts(scope_key)?;
        counts.created += 1;
        state.put_multi_instance_counts(scope_key, &counts)?;
        state.put_loop_counter(key, counts.created)?;
    } else if counts_tokens(&element.kind, element.incoming.len()) {
        for flow in &element.incoming {
            let flow_id = &model.flow(*flow).id;
            let count = state.join_token_count(scope_key, &element.id, flow_id)?;
            if count > 0 {
                state.set_join_tokens(scope_key, &element.id, flow_id, count - 1)?;
                consumed += 1;
            }
        }
    } else if !element.incoming.is_empty() {
        consumed = 1;
    }
    state.add_child(scope_key, key);
    let found = state.update_element_instance(scope_key, |scope| {
        scope.active_children += 1;
        scope.active_flows = scope.active_flows.saturating_sub(consumed);
    })?;
    if !found {
        return Err(inconsistent(format!("flow scope {scope_key} not found")));
    }
    Ok(())
}

pub(super) fn element_activated(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    _value: &ProcessInstanceRecord,
) -> Result<()> {
    set_element_state(ctx.state, key, ElementState::Activated)
}

pub(super) fn element_completing(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    _value: &ProcessInstanceRecord,
) -> Result<()> {
    set_element_state(ctx.state, key, ElementState::Completing)
}

pub(super) fn element_terminating(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    _value: &ProcessInstanceRecord,
) -> Result<()> {
    set_element_state(ctx.state, key, ElementState::Terminating)
}

pub(super) fn element_completed(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessInstanceRecord,
) -> Result<()> {
    multi_instance_ended(ctx, key, value, true)?;
    element_ended(ctx, key, value)
}

pub(super) fn element_terminated(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessInstanceRecord,
) -> Result<()> {
    multi_instance_ended(ctx, key, value, false)?;
    // An interrupting trigger kept for this holder is dropped with it (the engine took
    // what it activates before writing this). Only activities and scopes hold one.
    let may_hold = !matches!(
        value.bpmn_element_type,
        BpmnElementType::StartEvent
            | BpmnElementType::IntermediateCatchEvent
            | BpmnElementType::IntermediateThrowEvent
            | BpmnElementType::BoundaryEvent
            | BpmnElementType::EndEvent
            | BpmnElementType::ExclusiveGateway
            | BpmnElementType::ParallelGateway
            | BpmnElementType::InclusiveGateway
            | BpmnElementType::EventBasedGateway
            | BpmnElementType::SequenceFlow
    );
    if may_hold {
        ctx.state.delete_pending_triggers(key)?;
    }
    element_ended(ctx, key, value)
}

/// PROCESS_EVENT TRIGGERING: the trigger is kept for its holder until TRIGGERED (an
/// interrupting event may have to wait for a termination held up by listeners).
pub(super) fn event_triggering(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessEventRecord,
) -> Result<()> {
    let trigger = PendingTrigger {
        catch_event: value.target_element_id.clone(),
        variables: value.variables.as_str().to_owned(),
    };
    ctx.state
        .put_pending_trigger(value.scope_key, key, &trigger)
}

/// PROCESS_EVENT TRIGGERED: the event was activated; its trigger goes.
pub(super) fn event_triggered(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessEventRecord,
) -> Result<()> {
    ctx.state.delete_pending_trigger(value.scope_key, key);
    Ok(())
}

/// A multi-instance body or inner instance ended. A body drops what it kept. A
/// completed inner instance hands its output element to the body: the local variable
/// named like the output collection, which the engine set while it completed, is kept
/// under its loop counter (before the instance's variables are removed), so collecting
/// the outputs costs one entry per instance and never rewrites the whole list.
fn multi_instance_ended(
    ctx: &mut Apply<'_, '_>,
    key: Key,
    value: &ProcessInstanceRecord,
    completed: bool,
) -> Result<()> {
    let state = &mut *ctx.state;
    if value.bpmn_element_type == BpmnElementType::MultiInstanceBody {
        return state.delete_multi_instance(key);
    }
    // Most elements sit directly in their process, which is no body: no read for them.
    if value.flow_scope_key == value.process_instance_key || value.flow_scope_key <= 0 {
        return Ok(());
    }
    let in_body = state
        .read()
        .peek_element_instance(value.flow_scope_key, |scope| {
            scope.record.bpmn_element_type == BpmnElementType::MultiInstanceBody
        })?
        == Some(true);
    if !in_body {
        return Ok(());
    }
    let counter = state.read().loop_counter(key)?;
    state.delete_loop_counter(key);
    if !completed {
        return Ok(());
    }
    let body_key = value.flow_scope_key;
    let mut counts = state.read().multi_instance_counts(body_key)?;
    counts.completed += 1;
    state.put_multi_instance_counts(body_key, &counts)?;
    let process = ctx.models.get(state.read(), value.process_definition_key)?;
    let output_collection = process
        .model
        .element_by_id(&value.element_id)
        .and_then(|idx| process.model.element(idx).multi_instance.as_ref())
        .and_then(|mi| mi.output_collection.as_deref());
    if let (Some(name), Some(counter)) = (output_collection, counter)
        && let Some(output) = state
            .read()
            .variable(value.process_instance_key, key, name)?
    {
        state.put_multi_instance_output(body_key, counter, &output.value)?;
    }
    Ok(())
}

fn set_element_state(state: &mut Writer<'_>, key: Key, new_state: ElementState) -> Result<()> {
    if state.update_element_instance(key, |instance| instance.state = new_state)? {
        Ok(())
    } else {
        Err(inconsistent(format!("element instance {key} not found")))
    }
}

fn element_ended(ctx: &mut Apply<'_, '_>, key: Key, value: &ProcessInstanceRecord) -> Result<()> {
    let state = &mut *ctx.state;
    let ended = state
        .read()
        .peek_element_instance(key, |i| (i.has_variables, i.awaited))?;
    let has_variables = ended.is_some_and(|(has_variables, _)| has_variables);
    state.delete_element_instance(key);
    if matches!(
        value.bpmn_element_type,
        BpmnElementType::Process
            | BpmnElementType::SubProcess
            | BpmnElementType::EventSubProcess
            | BpmnElementType::AdHocSubProcessInnerInstance
    ) {
        state.delete_join_tokens(key)?;
    }
    if value.bpmn_element_type == BpmnElementType::Process {
        let Some((_, awaited)) = ended else {
            return Err(inconsistent(format!("process instance {key} not found")));
        };
        if awaited {
            state.delete_await_registration(key);
        }
        state.count_instance_ended(value.process_definition_key)?;
        // A message-started instance frees its correlation key for the next message.
        if let Some(variable) =
            state
                .read()
                .variable(key, key, crate::behavior::MESSAGE_START_VARIABLE)?
            && let Ok(start) =
                serde_json::from_str::<crate::behavior::MessageStart>(&variable.value)
            && state
                .read()
                .message_start_lock(&value.bpmn_process_id, &start.correlation_key)?
                == Some(key)
        {
            state.delete_message_start_lock(&value.bpmn_process_id, &start.correlation_key);
        }
        // The process scope's variables go with the instance (the history store keeps
        // them for readers): the engine keeps nothing of a finished instance.
        return state.delete_scope_variables(key, key);
    }
    if has_variables {
        state.delete_scope_variables(value.process_instance_key, key)?;
    }
    state.remove_child(value.flow_scope_key, key);
    state.update_element_instance(value.flow_scope_key, |scope| {
        scope.active_children = scope.active_children.saturating_sub(1);
    })?;
    Ok(())
}

pub(super) fn sequence_flow_taken(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessInstanceRecord,
) -> Result<()> {
    let Apply { state, models, .. } = ctx;
    let scope_key = value.flow_scope_key;
    let process = models.get(state.read(), value.process_definition_key)?;
    let model = &process.model;
    let flow = model
        .flow_by_id(&value.element_id)
        .ok_or_else(|| inconsistent(format!("flow '{}' not in model", value.element_id)))?;
    let target = model.element(model.flow(flow).target);
    if counts_tokens(&target.kind, target.incoming.len()) {
        let count = state.join_token_count(scope_key, &target.id, &value.element_id)?;
        state.set_join_tokens(scope_key, &target.id, &value.element_id, count + 1)?;
    }
    state.update_element_instance(scope_key, |scope| scope.active_flows += 1)?;
    Ok(())
}

pub(super) fn instance_created(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &ProcessInstanceCreationRecord,
) -> Result<()> {
    let state = &mut *ctx.state;
    if let Some(request_id) = value.await_request_id {
        state.update_element_instance(value.process_instance_key, |i| i.awaited = true)?;
        state.put_await_registration(
            value.process_instance_key,
            &AwaitRegistration {
                request_id,
                fetch_variables: value.fetch_variables.clone(),
            },
        )?;
    }
    Ok(())
}

/// Whether tokens arriving at this element are counted per incoming flow until it is
/// entered: a parallel or inclusive gateway with several incoming flows (a join).
fn counts_tokens(kind: &ElementKind, incoming: usize) -> bool {
    incoming > 1
        && matches!(
            kind,
            ElementKind::ParallelGateway | ElementKind::InclusiveGateway { .. }
        )
}

/// AD_HOC_SUB_PROCESS_INSTRUCTION COMPLETED: the job worker of an ad-hoc subprocess
/// fulfilled its completion condition; it creates no more jobs.
pub(super) fn ad_hoc_completion_fulfilled(
    ctx: &mut Apply<'_, '_>,
    _key: Key,
    value: &rill_protocol::value::AdHocSubProcessInstructionRecord,
) -> Result<()> {
    ctx.state
        .update_element_instance(value.ad_hoc_sub_process_instance_key, |i| {
            i.ad_hoc_completion_fulfilled = true;
        })?;
    Ok(())
}
