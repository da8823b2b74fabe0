//! One processor per command. A processor validates (rejecting with a reason the user
//! can act on, changing nothing), then writes the command's record and the events that
//! follow; the element behaviours in `behavior` do the rest in-line.

mod ad_hoc;
mod decision_deployment;
mod decision_evaluation;
mod deployment;

pub(crate) use decision_evaluation::EvaluationSite;
mod distribution;
mod forms;
mod incidents;
mod instances;
mod jobs;
mod messages;
mod migration;
mod modification;
mod resource_deletion;
mod rpa_resources;
mod signals;
mod timers;
mod user_tasks;
mod users;
mod variables;

use rill_protocol::value::DEFAULT_TENANT;
use rill_protocol::{Command, CommandResponse, Intent, JsonValue, Key};
use serde_json::{Map, Value};

use crate::behavior::json_type_name;
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;
use crate::state::Reader;

pub(crate) fn process(p: &mut Processing<'_>, command: &Command) -> Result<()> {
    match command {
        Command::Deploy { resources } => deployment::deploy(p, resources),
        Command::CreateProcessInstance(create) => instances::create(p, create),
        Command::CancelProcessInstance {
            process_instance_key,
        } => instances::cancel(p, *process_instance_key),
        Command::ExpireInstanceSummary {
            process_instance_key,
        } => {
            instances::expire_summary(p, *process_instance_key);
            Ok(())
        }
        Command::ActivateJobs(activate) => jobs::activate(p, activate),
        Command::CompleteJob {
            job_key,
            variables,
            result,
        } => jobs::complete(p, *job_key, variables, result),
        Command::FailJob(fail) => jobs::fail(p, fail),
        Command::ThrowError(throw) => jobs::throw_error(p, throw),
        Command::UpdateJob(update) => jobs::update(p, update),
        Command::TimeOutJob { job_key } => jobs::time_out(p, *job_key),
        Command::RecurJob { job_key } => jobs::recur(p, *job_key),
        Command::YieldJob { job_key } => jobs::yield_back(p, *job_key),
        Command::PublishMessage(publish) => messages::publish(p, publish),
        Command::ExpireMessage { message_key } => messages::expire(p, *message_key),
        Command::ResolveIncident { incident_key } => incidents::resolve(p, *incident_key),
        Command::SetVariables(set) => variables::set(p, set),
        Command::EvaluateDecision(evaluate) => decision_evaluation::evaluate(p, evaluate),
        Command::TriggerTimer { timer_key } => timers::trigger(p, *timer_key),
        Command::FromPartition(command) => distribution::from_partition(p, command),
        Command::AcknowledgeSend { target, sequence } => {
            distribution::acknowledge(p, *target, *sequence)
        }
        Command::BroadcastSignal(broadcast) => signals::broadcast(p, broadcast),
        Command::UserTask(command) => user_tasks::process(p, command),
        Command::ModifyProcessInstance(modify) => modification::modify(p, modify),
        Command::DeleteResource { resource_key } => resource_deletion::delete(p, *resource_key),
        Command::RedistributeDeployments { first, last } => {
            distribution::redistribute(p, *first, *last)
        }
        Command::MigrateProcessInstance(migrate) => migration::migrate(p, migrate),
        Command::ActivateAdHocSubProcessActivities(activate) => ad_hoc::activate(p, activate),
        Command::User(command) => users::process(p, command),
        Command::Referenced {
            operation_reference,
            command,
        } => referenced(p, *operation_reference, command),
    }
}

/// A client's command with its operation reference: processed as the command itself
/// (the engine stamps the reference on its records afterwards).
fn referenced(p: &mut Processing<'_>, operation_reference: u64, command: &Command) -> Result<()> {
    let invalid = if matches!(command, Command::Referenced { .. }) {
        Some("Expected a command with one operation reference, but it carried several".into())
    } else if recorded_reference(operation_reference) == rill_protocol::NO_OPERATION_REFERENCE {
        Some(format!(
            "Expected an operation reference between 1 and {}, but it was {operation_reference}",
            i64::MAX
        ))
    } else {
        None
    };
    if let Some(reason) = invalid {
        let (key, intent, value) = describe(command);
        p.reject(key, intent, value, Rejection::invalid_argument(reason));
        return Ok(());
    }
    process(p, command)
}

/// The value records carry for a command's operation reference: Zeebe's records hold a
/// positive long, -1 for none (a reference out of that range is rejected).
pub(crate) fn recorded_reference(operation_reference: u64) -> i64 {
    match i64::try_from(operation_reference) {
        Ok(reference) if reference > 0 => reference,
        _ => rill_protocol::NO_OPERATION_REFERENCE,
    }
}

/// The answer to `command` from state alone, when writing nothing is what processing it
/// would amount to (see [`jobs::nothing_to_activate`]); `None`: it goes through the log.
pub(crate) fn answer_from_state(
    reader: Reader<'_>,
    command: &Command,
) -> Result<Option<CommandResponse>> {
    match command.inner() {
        Command::ActivateJobs(activate) => jobs::nothing_to_activate(reader, activate),
        _ => Ok(None),
    }
}

/// A variables document from a client, parsed: a JSON object, or nothing (`null`).
pub(crate) fn variables_map(
    variables: &JsonValue,
    what: &str,
) -> std::result::Result<Map<String, Value>, Rejection> {
    if variables.is_null() {
        return Ok(Map::new());
    }
    match variables.to_value() {
        Value::Object(map) => Ok(map),
        other => Err(not_an_object(what, json_type_name(&other))),
    }
}

/// A variables document from a client, split into its variables, each value left as its
/// JSON text.
pub(crate) fn variables_entries<'a>(
    variables: &'a JsonValue,
    what: &str,
) -> std::result::Result<Vec<(String, &'a str)>, Rejection> {
    variables
        .object_entries()
        .map_err(|_| not_an_object(what, json_type_name(&variables.to_value())))
}

fn not_an_object(what: &str, kind: &str) -> Rejection {
    Rejection::invalid_argument(format!(
        "Expected {what} to be a JSON object, but it was '{kind}'"
    ))
}

pub(crate) fn tenant() -> String {
    DEFAULT_TENANT.to_owned()
}

/// The key, intent and (placeholder) value of a command's record, for the rejection
/// written when processing it failed. The intent and the value's type are the
/// command's own ([`Command::intent`], [`Command::value_type`]).
pub(crate) fn describe(command: &Command) -> (Key, Intent, rill_protocol::RecordValue) {
    let command = command.inner();
    let (key, value) = placeholder(command);
    debug_assert_eq!(value.value_type(), command.value_type(), "{command:?}");
    (key, command.intent(), value)
}

/// The key of a command's record and a placeholder of its value.
fn placeholder(command: &Command) -> (Key, rill_protocol::RecordValue) {
    use rill_protocol::value::*;
    let job = |key: Key| (key, jobs::unknown_job().into());
    match command {
        Command::Deploy { .. } => (
            Key::NONE,
            DeploymentRecord {
                resources: Vec::new(),
                processes_metadata: Vec::new(),
                tenant_id: tenant(),
                form_metadata: Vec::new(),
                decisions_metadata: Vec::new(),
                decision_requirements_metadata: Vec::new(),
                resource_metadata: Vec::new(),
            }
            .into(),
        ),
        Command::CreateProcessInstance(_) => (
            Key::NONE,
            ProcessInstanceCreationRecord {
                bpmn_process_id: String::new(),
                version: -1,
                process_definition_key: -1,
                process_instance_key: -1,
                variables: JsonValue::empty_object(),
                fetch_variables: Vec::new(),
                tenant_id: tenant(),
                await_request_id: None,
                tags: Vec::new(),
            }
            .into(),
        ),
        Command::CancelProcessInstance {
            process_instance_key: key,
        }
        | Command::ExpireInstanceSummary {
            process_instance_key: key,
        } => (*key, instances::placeholder(*key).into()),
        Command::ActivateJobs(a) => (
            Key::NONE,
            JobBatchRecord {
                job_type: a.job_type.clone(),
                worker: a.worker.clone(),
                timeout: a.timeout,
                max_jobs_to_activate: a.max_jobs,
                job_keys: Vec::new(),
                jobs: Vec::new(),
                truncated: false,
                tenant_ids: Vec::new(),
            }
            .into(),
        ),
        Command::CompleteJob { job_key, .. }
        | Command::TimeOutJob { job_key }
        | Command::RecurJob { job_key }
        | Command::YieldJob { job_key } => job(*job_key),
        Command::FailJob(c) => job(c.job_key),
        Command::ThrowError(c) => job(c.job_key),
        Command::UpdateJob(c) => job(c.job_key),
        Command::PublishMessage(_) => (Key::NONE, messages::placeholder().into()),
        Command::ExpireMessage { message_key } => (*message_key, messages::placeholder().into()),
        Command::ResolveIncident { incident_key } => {
            (*incident_key, incidents::placeholder().into())
        }
        Command::SetVariables(c) => (
            c.element_instance_key,
            VariableDocumentRecord {
                scope_key: c.element_instance_key.get(),
                update_semantics: VariableUpdateSemantics::Propagate,
                variables: JsonValue::empty_object(),
                tenant_id: tenant(),
            }
            .into(),
        ),
        Command::TriggerTimer { timer_key } => (*timer_key, timers::placeholder().into()),
        Command::BroadcastSignal(c) => (
            Key::NONE,
            SignalRecord {
                signal_name: c.signal_name.clone(),
                ..signals::placeholder()
            }
            .into(),
        ),
        Command::UserTask(c) => (
            c.user_task_key(),
            user_tasks::unknown_user_task(c.user_task_key()).into(),
        ),
        Command::EvaluateDecision(_) => (Key::NONE, decision_evaluation::placeholder().into()),
        Command::ModifyProcessInstance(c) => {
            (c.process_instance_key, modification::placeholder(c).into())
        }
        Command::DeleteResource { resource_key } => (
            *resource_key,
            resource_deletion::placeholder(*resource_key).into(),
        ),
        Command::MigrateProcessInstance(c) => {
            (c.process_instance_key, migration::placeholder(c).into())
        }
        Command::ActivateAdHocSubProcessActivities(c) => (
            c.ad_hoc_sub_process_instance_key,
            ad_hoc::placeholder(c).into(),
        ),
        Command::User(c) => (Key::NONE, users::placeholder(c).into()),
        // Not reached for `Referenced`: `inner()` is never a wrapper.
        Command::FromPartition(_)
        | Command::AcknowledgeSend { .. }
        | Command::RedistributeDeployments { .. }
        | Command::Referenced { .. } => (
            Key::NONE,
            CommandDistributionRecord {
                partition_id: 0,
                value_type: rill_protocol::ValueType::CommandDistribution,
                intent: Intent::Distribute,
            }
            .into(),
        ),
    }
}

pub(crate) use distribution::{distribute, outgoing, send_latest};

#[cfg(test)]
mod tests {
    use rill_protocol::{
        CreateProcessInstance, PartitionId, ProcessSelector, UpdateJob, UserTaskCommand, ValueType,
    };

    use super::*;

    #[test]
    fn a_failed_command_is_rejected_with_its_own_value_type_and_intent() {
        let key = Key(9);
        let commands = [
            Command::CreateProcessInstance(CreateProcessInstance {
                process: ProcessSelector::ByKey(key),
                variables: JsonValue::empty_object(),
                await_result: true,
                fetch_variables: Vec::new(),
                tags: Vec::new(),
            }),
            Command::UpdateJob(UpdateJob {
                job_key: key,
                retries: Some(2),
                timeout: None,
            }),
            Command::UserTask(UserTaskCommand::Assign {
                user_task_key: key,
                assignee: "demo".into(),
                action: String::new(),
                allow_override: false,
            }),
            Command::AcknowledgeSend {
                target: PartitionId(2),
                sequence: 3,
            },
            Command::ExpireInstanceSummary {
                process_instance_key: key,
            },
            Command::YieldJob { job_key: key }.referenced(Some(4)),
        ];
        let described: Vec<(ValueType, Intent)> = commands
            .iter()
            .map(|command| {
                let (_, intent, value) = describe(command);
                (value.value_type(), intent)
            })
            .collect();
        assert_eq!(
            described,
            vec![
                (
                    ValueType::ProcessInstanceCreation,
                    Intent::CreateWithAwaitingResult
                ),
                (ValueType::Job, Intent::UpdateRetries),
                (ValueType::UserTask, Intent::Claim),
                (ValueType::CommandDistribution, Intent::Acknowledge),
                (ValueType::ProcessInstance, Intent::Delete),
                (ValueType::Job, Intent::Yield),
            ]
        );
    }
}
