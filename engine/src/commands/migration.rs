//! PROCESS_INSTANCE_MIGRATION MIGRATE: move a running process instance to another
//! process definition (Zeebe 8.8's semantics), all or nothing.
//!
//! ```text
//!  check: instance, target definition, instructions (duplicates, unknown ids)
//!    └─► plan every element instance, parents first: supported type, mapped, same
//!        type, same flow scope, its subscriptions (kept, closed, newly opened);
//!        tokens waiting at joins; then nothing is left to fail
//!  write: MIGRATE, then per element instance ELEMENT_MIGRATED and what it holds
//!        (JOB / USER_TASK / VARIABLE / INCIDENT / TIMER / subscriptions MIGRATED,
//!        unmapped catch events closed, new ones opened), then MIGRATED
//! ```
//!
//! Every check runs before the first record is written, so a command with one bad
//! instruction is rejected whole and changes nothing. Keys stay: a migrated job, user
//! task, timer or subscription keeps its key and its state (a timer its due date, a
//! message subscription its correlation key).

use std::collections::BTreeMap;
use std::sync::Arc;

use rill_protocol::value::{
    BpmnElementType, CompensationSubscriptionRecord, IncidentRecord, JobRecord,
    MessageSubscriptionRecord, MigrationMappingInstruction, ProcessInstanceMigrationRecord,
    ProcessInstanceRecord, ProcessMessageSubscriptionRecord, TimerRecord, UserTaskRecord,
    VariableRecord,
};
use rill_protocol::{Intent, JsonValue, Key, MigrateProcessInstance};

use super::tenant;
use crate::behavior::{PreparedTriggers, held_catch_event_ids};
use crate::context::{Active, Processing};
use crate::error::{Result, inconsistent};
use crate::model::{ElementIdx, ElementKind, ProcessModel, TriggerDefinition, UserTaskDefinition};
use crate::model_cache::DeployedProcess;
use crate::outcome::{Halt, Rejection};
use crate::state::{
    ElementInstance, ElementState, StoredProcessMessageSubscription, StoredSignalSubscription,
};

/// The record of a migration command as the client sent it.
pub(super) fn placeholder(command: &MigrateProcessInstance) -> ProcessInstanceMigrationRecord {
    ProcessInstanceMigrationRecord {
        process_instance_key: command.process_instance_key.get(),
        target_process_definition_key: command.target_process_definition_key.get(),
        mapping_instructions: command.mapping_instructions.clone(),
        tenant_id: tenant(),
    }
}

/// A subscription an element instance holds (for itself or for a catch event it holds).
enum Subscription {
    Timer(Key, TimerRecord),
    Message(StoredProcessMessageSubscription),
    Signal(StoredSignalSubscription),
}

impl Subscription {
    /// The catch event it waits for.
    fn catch_event(&self) -> &str {
        match self {
            Subscription::Timer(_, timer) => &timer.target_element_id,
            Subscription::Message(s) => &s.record.element_id,
            Subscription::Signal(s) => &s.record.catch_event_id,
        }
    }
}

/// One element instance and what its migration writes.
struct Planned {
    instance: ElementInstance,
    /// Its record as migrated.
    record: ProcessInstanceRecord,
    /// The element it becomes in the target process.
    target_idx: ElementIdx,
    /// Subscriptions kept, with the target catch event each now waits for.
    kept: Vec<(Subscription, String)>,
    /// Subscriptions of source catch events that nothing maps: closed.
    closed: Vec<Subscription>,
    /// Triggers of target catch events that nothing maps to: opened.
    opened: PreparedTriggers,
}

pub(super) fn migrate(p: &mut Processing<'_>, command: &MigrateProcessInstance) -> Result<()> {
    let key = command.process_instance_key;
    let record = placeholder(command);
    match plan(p, command) {
        Ok((plan, compensations)) => {
            let source_definition = p
                .read()
                .element_instance(key)?
                .map(|instance| Key(instance.record.process_definition_key));
            p.command(key, Intent::Migrate, record.clone());
            for planned in plan {
                write_migration(p, planned)?;
            }
            for compensation in compensations {
                match compensation {
                    Compensation::Migrated(key, record) => {
                        p.event(key, Intent::Migrated, record)?;
                    }
                    Compensation::Deleted(key, record) => p.event(key, Intent::Deleted, record)?,
                }
            }
            p.event(key, Intent::Migrated, record.clone())?;
            p.respond(key, Intent::Migrated, record);
            // The instance no longer holds its old definition back from deletion.
            match source_definition {
                Some(definition) => p.definition_instance_ended(definition),
                None => Ok(()),
            }
        }
        Err(Checked::Rejected(rejection)) => {
            p.reject(key, Intent::Migrate, record, rejection);
            Ok(())
        }
        Err(Checked::Failed(error)) => Err(error),
    }
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

fn invalid_state(reason: String) -> Checked {
    Checked::Rejected(Rejection::invalid_state(reason))
}

fn invalid_argument(reason: String) -> Checked {
    Checked::Rejected(Rejection::invalid_argument(reason))
}

/// Zeebe's name of an element type, e.g. `SERVICE_TASK`.
fn type_name(element_type: BpmnElementType) -> String {
    serde_json::to_value(element_type)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The element types whose instances Rill migrates (Zeebe 8.8's list, of the kinds
/// that can be waiting in Rill).
fn supported(element_type: BpmnElementType) -> bool {
    matches!(
        element_type,
        BpmnElementType::Process
            | BpmnElementType::SubProcess
            | BpmnElementType::ServiceTask
            | BpmnElementType::UserTask
            | BpmnElementType::ScriptTask
            | BpmnElementType::SendTask
            | BpmnElementType::BusinessRuleTask
            | BpmnElementType::ReceiveTask
            | BpmnElementType::CallActivity
            | BpmnElementType::IntermediateCatchEvent
            | BpmnElementType::EventBasedGateway
            | BpmnElementType::MultiInstanceBody
    )
}

type Planning = std::result::Result<(Vec<Planned>, Vec<Compensation>), Checked>;

/// What happens to a compensation subscription (a completed activity that can still be
/// compensated).
enum Compensation {
    Migrated(Key, CompensationSubscriptionRecord),
    Deleted(Key, CompensationSubscriptionRecord),
}

/// Checks the whole command and plans what each element instance becomes.
fn plan(p: &mut Processing<'_>, command: &MigrateProcessInstance) -> Planning {
    let key = command.process_instance_key;
    let instance = p
        .read()
        .element_instance(key)?
        .filter(|i| i.record.bpmn_element_type == BpmnElementType::Process);
    let Some(instance) = instance else {
        return Err(Checked::Rejected(Rejection::not_found(format!(
            "Expected to migrate process instance but no process instance found with key \
             '{key}'"
        ))));
    };
    let target_key = command.target_process_definition_key;
    if target_key.get() <= 0 || p.read().process(target_key)?.is_none() {
        return Err(Checked::Rejected(Rejection::not_found(format!(
            "Expected to migrate process instance to process definition but no process \
             definition found with key '{target_key}'"
        ))));
    }
    if p.read().is_process_deleting(target_key)? {
        return Err(Checked::Rejected(Rejection::not_found(format!(
            "Expected to migrate process instance to process definition with key \
             '{target_key}' but it is deleted"
        ))));
    }
    let source = p.model(instance.record.process_definition_key)?;
    let target = p.model(target_key)?;
    let mapping = check_instructions(key, &command.mapping_instructions, &source, &target)?;
    let context = Context {
        process_instance_key: key,
        source,
        target,
        mapping,
    };

    let mut planned: Vec<Planned> = Vec::new();
    let mut pending = std::collections::VecDeque::from([instance]);
    while let Some(instance) = pending.pop_front() {
        let element = plan_element(p, &context, &planned, instance)?;
        for child in p.read().children(element.instance.key)? {
            if let Some(child) = p.read().element_instance(child)? {
                pending.push_back(child);
            }
        }
        check_waiting_tokens(p, &context, &element)?;
        planned.push(element);
    }
    let compensations = plan_compensations(p, &context, &planned)?;
    Ok((planned, compensations))
}

/// What the checks of every element instance share.
struct Context {
    process_instance_key: Key,
    source: Arc<DeployedProcess>,
    target: Arc<DeployedProcess>,
    /// Source element id → target element id.
    mapping: BTreeMap<String, String>,
}

/// Duplicate source ids and ids that name no element are rejected (Zeebe's order:
/// duplicates first, then each instruction's source and target).
fn check_instructions(
    key: Key,
    instructions: &[MigrationMappingInstruction],
    source: &DeployedProcess,
    target: &DeployedProcess,
) -> std::result::Result<BTreeMap<String, String>, Checked> {
    let mut mapping = BTreeMap::new();
    let mut duplicates: Vec<&str> = Vec::new();
    for instruction in instructions {
        let first = mapping
            .insert(
                instruction.source_element_id.clone(),
                instruction.target_element_id.clone(),
            )
            .is_none();
        if !first && !duplicates.contains(&instruction.source_element_id.as_str()) {
            duplicates.push(&instruction.source_element_id);
        }
    }
    if !duplicates.is_empty() {
        return Err(invalid_argument(format!(
            "Expected to migrate process instance '{key}' but the mapping instructions \
             contain duplicate source element ids '[{}]'.",
            duplicates.join(", ")
        )));
    }
    for instruction in instructions {
        for (side, id, model) in [
            ("source", &instruction.source_element_id, &source.model),
            ("target", &instruction.target_element_id, &target.model),
        ] {
            if model.element_by_id(id).is_none() {
                return Err(invalid_argument(format!(
                    "Expected to migrate process instance '{key}' but mapping instructions \
                     contain a non-existing {side} element id '{id}'. Elements provided in \
                     mapping instructions must exist in the {side} process definition."
                )));
            }
        }
    }
    Ok(mapping)
}

/// The model element an element instance runs (the process for the process instance).
fn element_of(model: &ProcessModel, record: &ProcessInstanceRecord) -> Result<ElementIdx> {
    if record.bpmn_element_type == BpmnElementType::Process {
        return Ok(ProcessModel::ROOT);
    }
    model.element_by_id(&record.element_id).ok_or_else(|| {
        inconsistent(format!(
            "element '{}' is not in its process model",
            record.element_id
        ))
    })
}

fn plan_element(
    p: &mut Processing<'_>,
    context: &Context,
    planned: &[Planned],
    instance: ElementInstance,
) -> std::result::Result<Planned, Checked> {
    let key = context.process_instance_key;
    let source = &context.source.model;
    let target = &context.target.model;
    let record = &instance.record;
    let element_id = &record.element_id;
    if !supported(record.bpmn_element_type) {
        return Err(invalid_state(format!(
            "Expected to migrate process instance '{key}' but active element with id \
             '{element_id}' has an unsupported type. The migration of a {} is not supported.",
            type_name(record.bpmn_element_type)
        )));
    }
    if instance.state == ElementState::Terminating {
        // Canceling task listeners hold its termination up; it ends in this version.
        return Err(invalid_state(format!(
            "Expected to migrate process instance '{key}' but element with id \
             '{element_id}' is being terminated (its user task's canceling listeners are \
             running); migrate the instance once they completed"
        )));
    }
    let source_idx = element_of(source, record)?;
    let flow_scope = planned
        .iter()
        .find(|s| s.instance.key.get() == record.flow_scope_key);
    let target_idx = if record.bpmn_element_type == BpmnElementType::Process {
        ProcessModel::ROOT
    } else {
        let Some(target_id) = context.mapping.get(element_id) else {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but no mapping instruction \
                 defined for active element with id '{element_id}'. Elements cannot be \
                 migrated without a mapping."
            )));
        };
        let target_idx = target
            .element_by_id(target_id)
            .ok_or_else(|| inconsistent("a checked target element is missing"))?;
        let inner = flow_scope.is_some_and(|s| {
            s.instance.record.bpmn_element_type == BpmnElementType::MultiInstanceBody
        });
        check_same_type(key, p, &instance, target, target_idx, inner)?;
        if let Some(scope) = flow_scope {
            let expected = &target.element(scope.target_idx).id;
            let actual = if inner {
                target_id
            } else {
                let scope_idx = target
                    .element(target_idx)
                    .flow_scope
                    .unwrap_or(ProcessModel::ROOT);
                &target.element(scope_idx).id
            };
            if expected != actual {
                return Err(invalid_state(format!(
                    "Expected to migrate process instance '{key}' but the flow scope of \
                     active element with id '{element_id}' is changed. The flow scope of the \
                     active element is expected to be '{expected}' but was '{actual}'. The \
                     flow scope of an element cannot be changed during migration yet."
                )));
            }
        }
        target_idx
    };
    let migrated = ProcessInstanceRecord {
        element_id: target.element(target_idx).id.clone(),
        bpmn_process_id: target.bpmn_process_id.clone(),
        version: context.target.version,
        process_definition_key: context.target.key.get(),
        ..record.clone()
    };
    let source_active = Active {
        instance: instance.clone(),
        process: context.source.clone(),
        idx: source_idx,
    };
    let target_active = Active {
        instance: ElementInstance {
            record: migrated.clone(),
            ..instance.clone()
        },
        process: context.target.clone(),
        idx: target_idx,
    };
    let held_by_target = held_catch_event_ids(&target_active);
    check_catch_events(context, &source_active, &target_active, &held_by_target)?;

    let mut kept = Vec::new();
    let mut closed = Vec::new();
    for subscription in subscriptions_of(p, instance.key)? {
        let catch = subscription.catch_event();
        if catch == element_id.as_str() {
            let target_id = migrated.element_id.clone();
            kept.push((subscription, target_id));
        } else if let Some(target_id) = context.mapping.get(catch) {
            let target_id = target_id.clone();
            kept.push((subscription, target_id));
        } else {
            closed.push(subscription);
        }
    }
    let covered: Vec<String> = kept.iter().map(|(_, id)| id.clone()).collect();
    let opened = match p.prepare_new_triggers(&target_active, &covered) {
        Ok(opened) => opened,
        Err(Halt::Error(error)) => return Err(Checked::Failed(error)),
        Err(Halt::Failed(failure)) => {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but active element with id \
                 '{element_id}' is mapped to element with id '{}' whose catch events could \
                 not be subscribed to. {}",
                migrated.element_id, failure.message
            )));
        }
    };
    Ok(Planned {
        instance,
        record: migrated,
        target_idx,
        kept,
        closed,
        opened,
    })
}

/// An element is mapped to one of the same type (a multi-instance body to a
/// multi-instance element, a user task to one of the same implementation).
fn check_same_type(
    key: Key,
    p: &Processing<'_>,
    instance: &ElementInstance,
    target: &ProcessModel,
    target_idx: ElementIdx,
    inner: bool,
) -> std::result::Result<(), Checked> {
    let record = &instance.record;
    let element = target.element(target_idx);
    let target_type = if element.multi_instance.is_some() && !inner {
        BpmnElementType::MultiInstanceBody
    } else {
        element.element_type()
    };
    if record.bpmn_element_type != target_type {
        return Err(invalid_state(format!(
            "Expected to migrate process instance '{key}' but active element with id '{}' \
             and type '{}' is mapped to an element with id '{}' and different type '{}'. \
             Elements must be mapped to elements of the same type.",
            record.element_id,
            type_name(record.bpmn_element_type),
            element.id,
            type_name(target_type)
        )));
    }
    if let ElementKind::UserTask(definition) = &element.kind {
        let name = |camunda: bool| {
            if camunda {
                "zeebe user task"
            } else {
                "job worker"
            }
        };
        let source_camunda =
            instance.job_key.get() > 0 && p.read().user_task(instance.job_key)?.is_some();
        let target_camunda = matches!(**definition, UserTaskDefinition::Camunda(_));
        if source_camunda != target_camunda {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but active user task with id \
                 '{}' and implementation '{}' is mapped to an user task with id '{}' and \
                 different implementation '{}'. Elements must be mapped to elements of the \
                 same implementation.",
                record.element_id,
                name(source_camunda),
                element.id,
                name(target_camunda)
            )));
        }
    }
    Ok(())
}

/// Mapped catch events stay with the element instance that holds them and keep their
/// event type (a timer stays a timer).
fn check_catch_events(
    context: &Context,
    source: &Active,
    target: &Active,
    held_by_target: &[(ElementIdx, String)],
) -> std::result::Result<(), Checked> {
    let key = context.process_instance_key;
    let source_model = &source.process.model;
    let target_model = &target.process.model;
    let element_id = &source.record().element_id;
    let target_id = &target.record().element_id;
    let mut pairs: Vec<(ElementIdx, ElementIdx)> = Vec::new();
    if matches!(
        source.element().kind,
        ElementKind::IntermediateCatchEvent(_)
    ) {
        pairs.push((source.idx, target.idx));
    }
    for (catch_idx, catch_id) in held_catch_event_ids(source) {
        let Some(mapped) = context.mapping.get(&catch_id) else {
            continue;
        };
        let Some((mapped_idx, _)) = held_by_target.iter().find(|(_, id)| id == mapped) else {
            let what = match source_model.element(catch_idx).kind {
                ElementKind::BoundaryEvent { .. } => "a boundary event",
                _ => "a catch event",
            };
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but active element with id \
                 '{element_id}' is mapped to an element with id '{target_id}' and has {what} \
                 with id '{catch_id}' that is mapped to an element with id '{mapped}'. These \
                 mappings detach the catch event from the element in the target process. \
                 Catch events must stay attached to the same element instance."
            )));
        };
        pairs.push((catch_idx, *mapped_idx));
    }
    for (from, to) in pairs {
        let from = source_model.element(from);
        let to = target_model.element(to);
        if from.event_type() != to.event_type() {
            let name = |t| {
                serde_json::to_value(t)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            };
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but catch event with id '{}' \
                 and event type '{}' is mapped to a catch event with id '{}' and different \
                 event type '{}'. Catch events must be mapped to catch events of the same \
                 event type.",
                from.id,
                name(from.event_type()),
                to.id,
                name(to.event_type())
            )));
        }
    }
    Ok(())
}

/// Tokens waiting at a joining gateway of this scope: the gateway must be mapped to a
/// gateway of the same id and type in the same scope whose incoming flows include every
/// flow a token waits on.
fn check_waiting_tokens(
    p: &Processing<'_>,
    context: &Context,
    scope: &Planned,
) -> std::result::Result<(), Checked> {
    let key = context.process_instance_key;
    let source = &context.source.model;
    let target = &context.target.model;
    for gateway_id in p.read().gateways_with_tokens(scope.instance.key)? {
        let Some(target_id) = context.mapping.get(&gateway_id) else {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but no mapping instruction \
                 defined for active element with id '{gateway_id}'. Elements cannot be \
                 migrated without a mapping."
            )));
        };
        if *target_id != gateway_id {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but gateway with id \
                 '{gateway_id}', where tokens wait to join, is mapped to an element with id \
                 '{target_id}'. Rill moves waiting tokens only to a gateway with the same id."
            )));
        }
        let source_idx = source
            .element_by_id(&gateway_id)
            .ok_or_else(|| inconsistent("a gateway with tokens is not in its model"))?;
        let target_idx = target
            .element_by_id(target_id)
            .ok_or_else(|| inconsistent("a checked target element is missing"))?;
        let (from, to) = (source.element(source_idx), target.element(target_idx));
        if from.element_type() != to.element_type() {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but active element with id \
                 '{gateway_id}' and type '{}' is mapped to an element with id '{target_id}' \
                 and different type '{}'. Elements must be mapped to elements of the same \
                 type.",
                type_name(from.element_type()),
                type_name(to.element_type())
            )));
        }
        let scope_id = &target.element(scope.target_idx).id;
        let target_scope = &target
            .element(to.flow_scope.unwrap_or(ProcessModel::ROOT))
            .id;
        if scope_id != target_scope {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but the flow scope of active \
                 element with id '{gateway_id}' is changed. The flow scope of the active \
                 element is expected to be '{scope_id}' but was '{target_scope}'. The flow \
                 scope of an element cannot be changed during migration yet."
            )));
        }
        for (flow_id, _) in p.read().join_tokens(scope.instance.key, &gateway_id)? {
            let leads_there = target
                .flow_by_id(&flow_id)
                .is_some_and(|flow| target.flow(flow).target == target_idx);
            if !leads_there {
                return Err(invalid_state(format!(
                    "Expected to migrate process instance '{key}' but a token waits at \
                     gateway '{gateway_id}' on the sequence flow '{flow_id}', which is not \
                     an incoming sequence flow of gateway '{target_id}' in the target \
                     process."
                )));
            }
        }
    }
    Ok(())
}

/// The timers and message and signal subscriptions an element instance holds.
fn subscriptions_of(p: &Processing<'_>, holder: Key) -> Result<Vec<Subscription>> {
    let reader = p.read();
    let mut out = Vec::new();
    for key in reader.timers_of_element(holder)? {
        if let Some(timer) = reader.timer(key)? {
            out.push(Subscription::Timer(key, timer));
        }
    }
    for subscription in reader.process_message_subscriptions(holder)? {
        if !subscription.closing {
            out.push(Subscription::Message(subscription));
        }
    }
    for subscription in reader.signal_subscriptions_of(holder)? {
        out.push(Subscription::Signal(subscription));
    }
    Ok(out)
}

/// Writes the migration of one element instance and of everything it holds.
fn write_migration(p: &mut Processing<'_>, planned: Planned) -> Result<()> {
    let key = planned.instance.key;
    let record = planned.record;
    p.event(key, Intent::ElementMigrated, record.clone())?;
    let element_id = &record.element_id;
    let definition_key = record.process_definition_key;
    let bpmn_process_id = &record.bpmn_process_id;

    let job_key = planned.instance.job_key;
    let mut jobs = Vec::new();
    if job_key.get() > 0 {
        if let Some(job) = p.read().job(job_key)? {
            jobs.push((job_key, job.record));
        } else if let Some(task) = p.read().user_task(job_key)? {
            let listener = task.transition.as_ref().map(|t| t.listener_job);
            let migrated = UserTaskRecord {
                element_id: element_id.clone(),
                bpmn_process_id: bpmn_process_id.clone(),
                process_definition_key: definition_key,
                process_definition_version: record.version,
                ..task.record
            };
            p.event(job_key, Intent::Migrated, migrated)?;
            if let Some(listener) = listener.filter(|k| k.get() > 0)
                && let Some(job) = p.read().job(listener)?
            {
                jobs.push((listener, job.record));
            }
        }
    }
    for (job_key, job) in jobs {
        let migrated = JobRecord {
            element_id: element_id.clone(),
            bpmn_process_id: bpmn_process_id.clone(),
            process_definition_key: definition_key,
            process_definition_version: record.version,
            ..job
        };
        p.event(job_key, Intent::Migrated, migrated)?;
    }

    for (name, variable) in p.read().scope_variables(record.process_instance_key, key)? {
        if name.starts_with('~') {
            // Hidden engine variables (a multi-instance body's input snapshot).
            continue;
        }
        let migrated = VariableRecord {
            name,
            value: variable.value,
            scope_key: key.get(),
            process_instance_key: record.process_instance_key,
            process_definition_key: definition_key,
            bpmn_process_id: bpmn_process_id.clone(),
            tenant_id: record.tenant_id.clone(),
            root_process_instance_key: record.root_process_instance_key,
        };
        p.event(variable.key, Intent::Migrated, migrated)?;
    }

    let incidents = p
        .read()
        .incidents_of_instance(record.process_instance_key)?;
    for incident in incidents {
        if incident.record.element_instance_key != key.get() {
            continue;
        }
        // The path names the target definition from now on.
        let path = p.tree_path(key, &record)?;
        let migrated = IncidentRecord {
            element_id: element_id.clone(),
            bpmn_process_id: bpmn_process_id.clone(),
            process_definition_key: definition_key,
            element_instance_path: path.element_instance_path,
            process_definition_path: path.process_definition_path,
            calling_element_path: path.calling_element_path,
            ..incident.record
        };
        p.event(incident.key, Intent::Migrated, migrated)?;
    }

    for (subscription, catch_event) in planned.kept {
        match subscription {
            Subscription::Timer(timer_key, timer) => {
                let migrated = TimerRecord {
                    target_element_id: catch_event,
                    process_definition_key: definition_key,
                    ..timer
                };
                p.event(timer_key, Intent::Migrated, migrated)?;
            }
            Subscription::Message(subscription) => {
                let mut migrated = subscription.record;
                migrated.element_id = catch_event;
                migrated.bpmn_process_id = bpmn_process_id.clone();
                p.event(subscription.key, Intent::Migrated, migrated.clone())?;
                let target = migrated.subscription_partition_id as u16;
                if Key(migrated.process_instance_key).partition().get() == target {
                    migrate_message_side(p, &message_side(&migrated))?;
                } else {
                    // The applier queued MIGRATE for the message's partition.
                    super::send_latest(p, target)?;
                }
            }
            Subscription::Signal(subscription) => {
                let mut migrated = subscription.record;
                migrated.catch_event_id = catch_event;
                migrated.bpmn_process_id = bpmn_process_id.clone();
                migrated.process_definition_key = definition_key;
                p.event(subscription.key, Intent::Migrated, migrated)?;
            }
        }
    }
    for subscription in planned.closed {
        match subscription {
            Subscription::Timer(timer_key, timer) => {
                p.event(timer_key, Intent::Canceled, timer)?;
            }
            Subscription::Message(subscription) => {
                p.close_message_subscription(key, &subscription.record.message_name)?;
            }
            Subscription::Signal(subscription) => {
                p.event(subscription.key, Intent::Deleted, subscription.record)?;
            }
        }
    }
    let Some(active) = p.active(key)? else {
        return Err(inconsistent(format!(
            "migrated element instance {key} is gone"
        )));
    };
    p.open_prepared_triggers(&active, planned.opened)
}

/// The message side of a process message subscription, as MIGRATE carries it.
fn message_side(value: &ProcessMessageSubscriptionRecord) -> MessageSubscriptionRecord {
    MessageSubscriptionRecord {
        process_instance_key: value.process_instance_key,
        element_instance_key: value.element_instance_key,
        bpmn_process_id: value.bpmn_process_id.clone(),
        message_name: value.message_name.clone(),
        correlation_key: value.correlation_key.clone(),
        message_key: -1,
        variables: JsonValue::empty_object(),
        is_interrupting: value.is_interrupting,
        tenant_id: value.tenant_id.clone(),
    }
}

/// MESSAGE_SUBSCRIPTION MIGRATE on the message's partition: the subscription takes the
/// target's process id (`MIGRATED`), if it is still there.
pub(super) fn migrate_message_side(
    p: &mut Processing<'_>,
    value: &MessageSubscriptionRecord,
) -> Result<()> {
    let found = p.read().message_subscription(
        &value.message_name,
        &value.correlation_key,
        value.element_instance_key,
    )?;
    let Some(subscription) = found else {
        return Ok(());
    };
    let migrated = MessageSubscriptionRecord {
        bpmn_process_id: value.bpmn_process_id.clone(),
        ..subscription.record
    };
    p.event(subscription.key, Intent::Migrated, migrated)
}

/// The innermost ad-hoc subprocess an element lies in, at any depth.
fn ad_hoc_around(model: &ProcessModel, idx: ElementIdx) -> Option<ElementIdx> {
    let mut at = model.element(idx).flow_scope;
    while let Some(scope) = at {
        if matches!(
            model.element(scope).kind,
            ElementKind::AdHocInnerInstance { .. }
        ) {
            return model.element(scope).flow_scope;
        }
        at = model.element(scope).flow_scope;
    }
    None
}

/// The compensation subscriptions of the instance: one of an activity with a
/// compensation boundary event follows the mapping of that boundary event (unmapped: it
/// is deleted, as the activity can no longer be compensated); one of a completed
/// subprocess follows the subprocess's mapping (or its id, kept by the target).
fn plan_compensations(
    p: &Processing<'_>,
    context: &Context,
    planned: &[Planned],
) -> std::result::Result<Vec<Compensation>, Checked> {
    let key = context.process_instance_key;
    let source = &context.source.model;
    let target = &context.target.model;
    let process_id = &source.bpmn_process_id;
    let mut changes = Vec::new();
    for (subscription_key, record) in p.read().compensation_subscriptions(key)? {
        let activity_id = &record.compensable_activity_id;
        if record.throw_event_instance_key > 0 {
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but the compensation of \
                 activity '{activity_id}' is in progress. Migrate it once the compensation \
                 is done."
            )));
        }
        let activity = source
            .element_by_id(activity_id)
            .ok_or_else(|| inconsistent("a compensable activity is not in its model"))?;
        if let Some(ad_hoc) = ad_hoc_around(source, activity) {
            let ad_hoc_id = &source.element(ad_hoc).id;
            return Err(invalid_state(format!(
                "Expected to migrate process instance '{key}' but the completed activity \
                 '{activity_id}' inside the ad-hoc subprocess '{ad_hoc_id}' can still be \
                 compensated. Rill cannot migrate compensation inside an ad-hoc subprocess."
            )));
        }
        let migrated_scope = |scope_key: i64| {
            planned
                .iter()
                .find(|s| s.instance.key.get() == scope_key)
                .map(|s| target.element(s.target_idx).id.clone())
        };
        let (target_activity, handler_id) = match source.compensation_boundary(activity) {
            Some((boundary, _)) => {
                let boundary_id = &source.element(boundary).id;
                let Some(mapped) = context.mapping.get(boundary_id) else {
                    changes.push(Compensation::Deleted(subscription_key, record));
                    continue;
                };
                let mapped_idx = target
                    .element_by_id(mapped)
                    .ok_or_else(|| inconsistent("a checked target element is missing"))?;
                let (attached_to, handler) = match &target.element(mapped_idx).kind {
                    ElementKind::BoundaryEvent {
                        attached_to,
                        definition: TriggerDefinition::Compensation { handler },
                        ..
                    } => (*attached_to, *handler),
                    other => {
                        let event_type = serde_json::to_value(other.event_type())
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default();
                        return Err(invalid_argument(format!(
                            "Expected to migrate process instance with id '{process_id}' but \
                             compensation boundary event '{boundary_id}' is mapped to a target \
                             boundary event '{mapped}' that has event type '{event_type}' \
                             different than compensation boundary event type."
                        )));
                    }
                };
                (attached_to, target.element(handler).id.clone())
            }
            None => {
                let mapped = context
                    .mapping
                    .get(activity_id)
                    .cloned()
                    .unwrap_or_else(|| activity_id.clone());
                let same_kind = target.element_by_id(&mapped).filter(|idx| {
                    target.element(*idx).element_type() == source.element(activity).element_type()
                });
                let Some(target_activity) = same_kind else {
                    return Err(invalid_state(format!(
                        "Expected to migrate process instance '{key}' but the completed \
                         activity '{activity_id}' holds compensable activities and is mapped \
                         to no element of the same type in the target process. Map it to keep \
                         its compensation."
                    )));
                };
                (target_activity, String::new())
            }
        };
        let source_scope = source
            .element(
                source
                    .element(activity)
                    .flow_scope
                    .unwrap_or(ProcessModel::ROOT),
            )
            .id
            .clone();
        let expected = migrated_scope(record.compensable_activity_scope_key).unwrap_or_else(|| {
            if source_scope == *process_id {
                target.bpmn_process_id.clone()
            } else {
                context
                    .mapping
                    .get(&source_scope)
                    .cloned()
                    .unwrap_or_else(|| source_scope.clone())
            }
        });
        let actual = &target
            .element(
                target
                    .element(target_activity)
                    .flow_scope
                    .unwrap_or(ProcessModel::ROOT),
            )
            .id;
        if expected != *actual {
            return Err(invalid_state(format!(
                "Expected to migrate process instance with id '{process_id}' but the flow scope \
                 of compensation boundary event is changed. Flow scope '{source_scope}' is not \
                 in the same level as '{actual}'. The flow scope of a compensation boundary \
                 event cannot be changed during migration yet."
            )));
        }
        let migrated = CompensationSubscriptionRecord {
            process_definition_key: context.target.key.get(),
            compensable_activity_id: target.element(target_activity).id.clone(),
            compensation_handler_id: handler_id,
            ..record
        };
        changes.push(Compensation::Migrated(subscription_key, migrated));
    }
    Ok(changes)
}
