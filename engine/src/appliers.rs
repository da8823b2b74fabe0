//! Event appliers: the only code that changes state. One function per (value type,
//! intent); [`apply`] dispatches. Processors decide and emit events; applying an event
//! to state happens here, both while processing and when replaying records.

use rill_protocol::value::BpmnElementType;
use rill_protocol::value::{
    IncidentRecord, JobBatchRecord, JobRecord, MessageRecord, MessageSubscriptionRecord,
    ProcessInstanceCreationRecord, ProcessInstanceRecord, ProcessMessageSubscriptionRecord,
    TimerRecord, VariableRecord,
};
use rill_protocol::{Intent, RecordDraft, RecordType, RecordValue, Timestamp};

use crate::error::{Result, inconsistent};
use crate::model::ElementKind;
use crate::model_cache::ModelCache;
use crate::state::{
    AwaitRegistration, ElementInstance, ElementState, InstanceState, InstanceSummary, JobState,
    StoredMessage, StoredMessageSubscription, StoredProcessMessageSubscription, StoredVariable,
    Writer,
};

/// Applies one record to state. Commands and rejections change nothing.
pub(crate) fn apply(
    state: &mut Writer<'_>,
    models: &mut ModelCache,
    record: &RecordDraft,
    timestamp: Timestamp,
) -> Result<()> {
    if record.record_type != RecordType::Event {
        return Ok(());
    }
    let key = record.key.get();
    let intent = record.intent;
    match &record.value {
        RecordValue::Process(value) if intent == Intent::Created => state.put_process(value),
        RecordValue::ProcessInstance(value) => {
            process_instance(state, models, key, intent, value, timestamp)
        }
        RecordValue::ProcessInstanceCreation(value) if intent == Intent::Created => {
            instance_created(state, value)
        }
        RecordValue::Job(value) => job(state, key, intent, value),
        RecordValue::JobBatch(value) if intent == Intent::Activated => jobs_activated(state, value),
        RecordValue::Variable(value) => variable(state, key, value),
        RecordValue::Incident(value) => incident(state, key, intent, value),
        RecordValue::Message(value) => message(state, key, intent, value),
        RecordValue::MessageSubscription(value) => message_subscription(state, key, intent, value),
        RecordValue::ProcessMessageSubscription(value) => {
            process_message_subscription(state, key, intent, value)
        }
        RecordValue::Timer(value) => timer(state, key, intent, value),
        RecordValue::Deployment(value) if intent == Intent::Created => {
            state.put_deployment(key, value)
        }
        RecordValue::CommandDistribution(value) => distribution(state, key, intent, value),
        // Deployments, variable documents and the rest only tell what happened.
        _ => Ok(()),
    }
}

fn process_instance(
    state: &mut Writer<'_>,
    models: &mut ModelCache,
    key: i64,
    intent: Intent,
    value: &ProcessInstanceRecord,
    timestamp: Timestamp,
) -> Result<()> {
    match intent {
        Intent::ElementActivating => element_activating(state, models, key, value, timestamp),
        Intent::ElementActivated => set_element_state(state, key, ElementState::Activated),
        Intent::ElementCompleting => set_element_state(state, key, ElementState::Completing),
        Intent::ElementTerminating => set_element_state(state, key, ElementState::Terminating),
        Intent::ElementCompleted => {
            element_ended(state, key, value, timestamp, InstanceState::Completed)
        }
        Intent::ElementTerminated => {
            element_ended(state, key, value, timestamp, InstanceState::Terminated)
        }
        Intent::SequenceFlowTaken => sequence_flow_taken(state, models, value),
        Intent::Deleted => instance_deleted(state, key),
        _ => Ok(()),
    }
}

fn element_activating(
    state: &mut Writer<'_>,
    models: &mut ModelCache,
    key: i64,
    value: &ProcessInstanceRecord,
    timestamp: Timestamp,
) -> Result<()> {
    state.insert_element_instance(ElementInstance {
        key,
        state: ElementState::Activating,
        record: value.clone(),
        active_children: 0,
        active_flows: 0,
        job_key: -1,
        has_variables: false,
        awaited: false,
        start_date: timestamp.millis(),
    });
    if value.bpmn_element_type == BpmnElementType::Process {
        // Readers see an active instance through its element instance; the summary is
        // written when it ends.
        return Ok(());
    }
    // A token that arrived over sequence flows is consumed now: one per incoming
    // flow for a parallel join, one otherwise. Start and boundary events have none.
    let process = models.get(state.read(), value.process_definition_key)?;
    let model = &process.model;
    let element = model
        .element_by_id(&value.element_id)
        .ok_or_else(|| inconsistent(format!("element '{}' not in model", value.element_id)))?;
    let element = model.element(element);
    let scope_key = value.flow_scope_key;
    let mut consumed = 0;
    if matches!(element.kind, ElementKind::ParallelGateway) && element.incoming.len() > 1 {
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

fn set_element_state(state: &mut Writer<'_>, key: i64, new_state: ElementState) -> Result<()> {
    if state.update_element_instance(key, |instance| instance.state = new_state)? {
        Ok(())
    } else {
        Err(inconsistent(format!("element instance {key} not found")))
    }
}

fn element_ended(
    state: &mut Writer<'_>,
    key: i64,
    value: &ProcessInstanceRecord,
    timestamp: Timestamp,
    ending: InstanceState,
) -> Result<()> {
    let ended = state
        .read()
        .peek_element_instance(key, |i| (i.has_variables, i.awaited, i.start_date))?;
    let has_variables = ended.is_some_and(|(has_variables, _, _)| has_variables);
    state.delete_element_instance(key);
    if matches!(
        value.bpmn_element_type,
        BpmnElementType::Process | BpmnElementType::SubProcess
    ) {
        state.delete_join_tokens(key)?;
    }
    if value.bpmn_element_type == BpmnElementType::Process {
        // The process scope's variables stay readable with the summary.
        let Some((_, awaited, start_date)) = ended else {
            return Err(inconsistent(format!("process instance {key} not found")));
        };
        if awaited {
            state.delete_await_registration(key);
        }
        return state.put_summary(&InstanceSummary {
            process_instance_key: key,
            bpmn_process_id: value.bpmn_process_id.clone(),
            version: value.version,
            process_definition_key: value.process_definition_key,
            state: ending,
            start_date,
            end_date: timestamp.millis(),
        });
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

fn sequence_flow_taken(
    state: &mut Writer<'_>,
    models: &mut ModelCache,
    value: &ProcessInstanceRecord,
) -> Result<()> {
    let scope_key = value.flow_scope_key;
    let process = models.get(state.read(), value.process_definition_key)?;
    let model = &process.model;
    let flow = model
        .flow_by_id(&value.element_id)
        .ok_or_else(|| inconsistent(format!("flow '{}' not in model", value.element_id)))?;
    let target = model.element(model.flow(flow).target);
    if matches!(target.kind, ElementKind::ParallelGateway) && target.incoming.len() > 1 {
        let count = state.join_token_count(scope_key, &target.id, &value.element_id)?;
        state.set_join_tokens(scope_key, &target.id, &value.element_id, count + 1)?;
    }
    state.update_element_instance(scope_key, |scope| scope.active_flows += 1)?;
    Ok(())
}

fn instance_deleted(state: &mut Writer<'_>, key: i64) -> Result<()> {
    if let Some(summary) = state.read().summary(key)? {
        state.delete_summary(&summary);
    }
    state.delete_instance_variables(key)
}

fn instance_created(state: &mut Writer<'_>, value: &ProcessInstanceCreationRecord) -> Result<()> {
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

fn job(state: &mut Writer<'_>, key: i64, intent: Intent, value: &JobRecord) -> Result<()> {
    match intent {
        Intent::Created => {
            state.update_element_instance(value.element_instance_key, |i| i.job_key = key)?;
            return state.put_job(key, JobState::Activatable, value, None);
        }
        Intent::Completed | Intent::Canceled => {
            // The record is the job as stored: it tells which indexes hold it.
            state.delete_job_record(key, value);
            state.update_element_instance(value.element_instance_key, |i| {
                if i.job_key == key {
                    i.job_key = -1;
                }
            })?;
            return Ok(());
        }
        _ => {}
    }
    let previous = state.read().job(key)?;
    let new_state = match intent {
        Intent::TimedOut | Intent::RecurredAfterBackoff => JobState::Activatable,
        Intent::Failed if value.retries > 0 && value.recurring_time < 0 => JobState::Activatable,
        Intent::Failed => JobState::Failed,
        Intent::ErrorThrown => JobState::ErrorThrown,
        Intent::RetriesUpdated | Intent::TimeoutUpdated => match &previous {
            Some(previous) => previous.state,
            None => return Err(inconsistent(format!("job {key} not found"))),
        },
        _ => return Ok(()),
    };
    state.put_job(key, new_state, value, previous.as_ref())
}

fn jobs_activated(state: &mut Writer<'_>, batch: &JobBatchRecord) -> Result<()> {
    for (key, value) in batch.job_keys.iter().zip(&batch.jobs) {
        // Only activatable jobs are activated: that is the one index entry to remove.
        state.remove_activatable(*key, &value.job_type);
        state.put_job(*key, JobState::Activated, value, None)?;
    }
    Ok(())
}

fn variable(state: &mut Writer<'_>, key: i64, value: &VariableRecord) -> Result<()> {
    if value.scope_key != value.process_instance_key {
        state.update_element_instance(value.scope_key, |i| i.has_variables = true)?;
    }
    state.put_variable(
        value.process_instance_key,
        value.scope_key,
        &value.name,
        &StoredVariable {
            key,
            value: value.value.clone(),
        },
    )
}

fn incident(
    state: &mut Writer<'_>,
    key: i64,
    intent: Intent,
    value: &IncidentRecord,
) -> Result<()> {
    match intent {
        Intent::Created => state.put_incident(key, value),
        Intent::Resolved => {
            let Some(incident) = state.read().incident(key)? else {
                return Err(inconsistent(format!("incident {key} not found")));
            };
            state.delete_incident(&incident);
            // A job waiting for this incident can be worked on again.
            if value.job_key > 0
                && let Some(job) = state.read().job(value.job_key)?
                && matches!(job.state, JobState::Failed | JobState::ErrorThrown)
                && job.record.retries > 0
            {
                let record = JobRecord {
                    recurring_time: -1,
                    ..job.record.clone()
                };
                state.put_job(value.job_key, JobState::Activatable, &record, Some(&job))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn message(state: &mut Writer<'_>, key: i64, intent: Intent, value: &MessageRecord) -> Result<()> {
    match intent {
        Intent::Published => state.put_message(&StoredMessage {
            key,
            record: value.clone(),
        }),
        Intent::Expired => match state.read().message(key)? {
            Some(message) => state.delete_message(&message),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

fn message_subscription(
    state: &mut Writer<'_>,
    key: i64,
    intent: Intent,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    let name = &value.message_name;
    let correlation_key = &value.correlation_key;
    let element = value.element_instance_key;
    match intent {
        Intent::Created => state.put_message_subscription(&StoredMessageSubscription {
            key,
            record: value.clone(),
            correlating: false,
        }),
        Intent::Correlating => {
            let instance_partition = rill_protocol::Key(value.process_instance_key).partition();
            if instance_partition != rill_protocol::Key(key).partition() {
                state.push_outbox(
                    instance_partition.get(),
                    &crate::state::OutboxEntry {
                        value_type: rill_protocol::ValueType::ProcessMessageSubscription,
                        intent: Intent::Correlate,
                        key,
                        value: Some(RecordValue::MessageSubscription(value.clone())),
                    },
                )?;
            }
            state.mark_message_correlated(value.message_key, &value.bpmn_process_id);
            if let Some(mut subscription) =
                state
                    .read()
                    .message_subscription(name, correlation_key, element)?
            {
                subscription.correlating = true;
                subscription.record.message_key = value.message_key;
                state.put_message_subscription(&subscription)?;
            }
            Ok(())
        }
        Intent::Correlated => {
            if value.is_interrupting {
                state.delete_message_subscription(name, correlation_key, element);
            } else if let Some(mut subscription) =
                state
                    .read()
                    .message_subscription(name, correlation_key, element)?
            {
                subscription.correlating = false;
                state.put_message_subscription(&subscription)?;
            }
            Ok(())
        }
        Intent::Rejected => {
            state.unmark_message_correlated(value.message_key, &value.bpmn_process_id);
            if let Some(mut subscription) =
                state
                    .read()
                    .message_subscription(name, correlation_key, element)?
            {
                subscription.correlating = false;
                state.put_message_subscription(&subscription)?;
            }
            Ok(())
        }
        Intent::Deleted => {
            state.delete_message_subscription(name, correlation_key, element);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn process_message_subscription(
    state: &mut Writer<'_>,
    key: i64,
    intent: Intent,
    value: &ProcessMessageSubscriptionRecord,
) -> Result<()> {
    let element = value.element_instance_key;
    let name = &value.message_name;
    // The message side lives on another partition: the command goes through the outbox.
    let remote = rill_protocol::Key(value.process_instance_key)
        .partition()
        .get() as i32
        != value.subscription_partition_id;
    if remote && matches!(intent, Intent::Creating | Intent::Deleting) {
        let command_intent = if intent == Intent::Creating {
            Intent::Create
        } else {
            Intent::Delete
        };
        state.push_outbox(
            value.subscription_partition_id as u16,
            &crate::state::OutboxEntry {
                value_type: rill_protocol::ValueType::MessageSubscription,
                intent: command_intent,
                key,
                value: Some(RecordValue::MessageSubscription(
                    MessageSubscriptionRecord {
                        process_instance_key: value.process_instance_key,
                        element_instance_key: value.element_instance_key,
                        bpmn_process_id: value.bpmn_process_id.clone(),
                        message_name: value.message_name.clone(),
                        correlation_key: value.correlation_key.clone(),
                        message_key: -1,
                        variables: rill_protocol::JsonValue::empty_object(),
                        is_interrupting: value.is_interrupting,
                        tenant_id: value.tenant_id.clone(),
                    },
                )),
            },
        )?;
    }
    match intent {
        Intent::Creating => {
            state.put_process_message_subscription(&StoredProcessMessageSubscription {
                key,
                record: value.clone(),
                opened: false,
                closing: false,
            })
        }
        Intent::Created | Intent::Deleting => {
            if let Some(mut subscription) =
                state.read().process_message_subscription(element, name)?
            {
                if intent == Intent::Created {
                    subscription.opened = true;
                } else {
                    subscription.closing = true;
                }
                state.put_process_message_subscription(&subscription)?;
            }
            Ok(())
        }
        Intent::Correlated if !value.is_interrupting => Ok(()),
        Intent::Correlated | Intent::Deleted => {
            state.delete_process_message_subscription(element, name);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn timer(state: &mut Writer<'_>, key: i64, intent: Intent, value: &TimerRecord) -> Result<()> {
    match intent {
        Intent::Created => state.put_timer(key, value),
        Intent::Triggered | Intent::Canceled => {
            if let Some(timer) = state.read().timer(key)? {
                state.delete_timer(key, &timer);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Commands between partitions: `DISTRIBUTING` queues one (key: the entity),
/// `ACKNOWLEDGED` removes it (key: its sequence number), `DISTRIBUTED` records on the
/// receiver that the sender's sequence number was applied (key: that number).
fn distribution(
    state: &mut Writer<'_>,
    key: i64,
    intent: Intent,
    value: &rill_protocol::value::CommandDistributionRecord,
) -> Result<()> {
    let partition = u16::try_from(value.partition_id)
        .map_err(|_| inconsistent(format!("partition {} out of range", value.partition_id)))?;
    match intent {
        Intent::Distributing => {
            state.push_outbox(
                partition,
                &crate::state::OutboxEntry {
                    value_type: value.value_type,
                    intent: value.intent,
                    key,
                    value: None,
                },
            )?;
            Ok(())
        }
        Intent::Acknowledged => {
            state.remove_outbox(partition, key as u64);
            Ok(())
        }
        Intent::Distributed => state.set_inbox_sequence(partition, key as u64),
        _ => Ok(()),
    }
}
