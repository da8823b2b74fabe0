//! Process instances: create (optionally awaiting the result), cancel, modify, migrate,
//! set variables, activate ad-hoc activities, and read one.

use std::time::Duration;

use rill_protocol::history::HistoricProcessInstance;
use rill_protocol::value::{ProcessInstanceCreationRecord, ProcessInstanceResultRecord};
use rill_protocol::{
    ActivateAdHocSubProcessActivities, Command, CreateProcessInstance, Key, MigrateProcessInstance,
    ModifyProcessInstance, ProcessSelector, Query, QueryResult, RecordValue, RejectionType,
    SetVariables,
};

use super::deployments::DEPLOYMENT_PARTITION;
use super::{Accepted, AppState, ClientError, operation, submit_by_key};

/// Creates a process instance (`await_result` is ignored: see
/// [`create_instance_with_result`]) on the next partition in turn.
pub async fn create_instance(
    state: &AppState,
    create: CreateProcessInstance,
    reference: Option<u64>,
) -> Result<ProcessInstanceCreationRecord, ClientError> {
    let create = CreateProcessInstance {
        await_result: false,
        ..create
    };
    operation("CreateProcessInstance", selected_key(&create), async {
        let accepted = submit_create(state, create, reference, state.settings.request_timeout);
        match accepted.await?.value {
            RecordValue::ProcessInstanceCreation(record) => Ok(record),
            other => Err(ClientError::unexpected_answer(
                "process instance creation",
                &other,
            )),
        }
    })
    .await
}

/// Creates a process instance and waits up to `timeout` for it to complete: its result
/// (the variables asked for).
pub async fn create_instance_with_result(
    state: &AppState,
    create: CreateProcessInstance,
    reference: Option<u64>,
    timeout: Duration,
) -> Result<ProcessInstanceResultRecord, ClientError> {
    let create = CreateProcessInstance {
        await_result: true,
        ..create
    };
    operation(
        "CreateProcessInstanceWithResult",
        selected_key(&create),
        async {
            match submit_create(state, create, reference, timeout)
                .await?
                .value
            {
                RecordValue::ProcessInstanceResult(record) => Ok(record),
                other => Err(ClientError::unexpected_answer(
                    "process instance creation",
                    &other,
                )),
            }
        },
    )
    .await
}

fn selected_key(create: &CreateProcessInstance) -> Option<Key> {
    match &create.process {
        ProcessSelector::ByKey(key) => Some(*key),
        ProcessSelector::ById { .. } => None,
    }
}

/// Creates a process instance on the next partition in turn.
async fn submit_create(
    state: &AppState,
    create: CreateProcessInstance,
    reference: Option<u64>,
    timeout: Duration,
) -> Result<Accepted, ClientError> {
    // Deployments are distributed to every partition, so instances by key are spread
    // round-robin too; the key's partition is only checked to exist.
    if let ProcessSelector::ByKey(key) = &create.process {
        state.dispatch.partition_of(*key, "process definition")?;
    }
    let command = Command::CreateProcessInstance(create).referenced(reference);
    let (partition, created) = state.dispatch.submit_to_any(command.clone(), timeout).await;
    match created {
        // Deployments reach the other partitions shortly after the one they were made
        // on: a process deployed a moment ago may not be here yet, but is there.
        Err(ClientError::Rejected {
            kind: RejectionType::NotFound,
            ..
        }) if partition != DEPLOYMENT_PARTITION => {
            state
                .dispatch
                .submit(DEPLOYMENT_PARTITION, command, timeout)
                .await
        }
        other => other,
    }
}

/// Cancels a process instance.
pub async fn cancel_instance(
    state: &AppState,
    process_instance_key: Key,
    reference: Option<u64>,
) -> Result<(), ClientError> {
    let command = Command::CancelProcessInstance {
        process_instance_key,
    }
    .referenced(reference);
    operation("CancelProcessInstance", Some(process_instance_key), async {
        submit_by_key(state, process_instance_key, "process instance", command)
            .await
            .map(drop)
    })
    .await
}

/// Activates and terminates elements of a process instance; all or nothing.
pub async fn modify_instance(
    state: &AppState,
    modification: ModifyProcessInstance,
    reference: Option<u64>,
) -> Result<(), ClientError> {
    let key = modification.process_instance_key;
    let command = Command::ModifyProcessInstance(modification).referenced(reference);
    operation("ModifyProcessInstance", Some(key), async {
        submit_by_key(state, key, "process instance", command)
            .await
            .map(drop)
    })
    .await
}

/// Moves a process instance onto another process definition; all or nothing.
pub async fn migrate_instance(
    state: &AppState,
    migration: MigrateProcessInstance,
    reference: Option<u64>,
) -> Result<(), ClientError> {
    let key = migration.process_instance_key;
    let command = Command::MigrateProcessInstance(migration).referenced(reference);
    operation("MigrateProcessInstance", Some(key), async {
        submit_by_key(state, key, "process instance", command)
            .await
            .map(drop)
    })
    .await
}

/// Sets variables in an element instance's scope: the variable document's key.
pub async fn set_variables(
    state: &AppState,
    set: SetVariables,
    reference: Option<u64>,
) -> Result<Key, ClientError> {
    let key = set.element_instance_key;
    let command = Command::SetVariables(set).referenced(reference);
    operation("SetVariables", Some(key), async {
        let accepted = submit_by_key(state, key, "element instance", command).await?;
        Ok(accepted.key)
    })
    .await
}

/// Activates elements of an active ad-hoc subprocess.
pub async fn activate_ad_hoc_activities(
    state: &AppState,
    activation: ActivateAdHocSubProcessActivities,
) -> Result<(), ClientError> {
    let key = activation.ad_hoc_sub_process_instance_key;
    let command = Command::ActivateAdHocSubProcessActivities(activation);
    operation("ActivateAdHocSubProcessActivities", Some(key), async {
        submit_by_key(state, key, "ad-hoc sub-process instance", command)
            .await
            .map(drop)
    })
    .await
}

/// Reads a process instance, live or finished, from the history store (the one place
/// that answers reads).
pub async fn get_process_instance(
    state: &AppState,
    key: Key,
) -> Result<HistoricProcessInstance, ClientError> {
    operation("GetProcessInstance", Some(key), async {
        let not_found = || {
            ClientError::not_found(format!(
                "Process instance with key '{key}' not found (finished instances stay readable \
                 for history.retention)"
            ))
        };
        let partition = state
            .dispatch
            .partition_of(key, "process instance")
            .map_err(|_| not_found())?;
        let timeout = state.settings.request_timeout;
        let query = Query::HistoricProcessInstance { key };
        match state.dispatch.query(partition, query, timeout).await? {
            QueryResult::HistoricProcessInstance(Some(instance)) => Ok(instance),
            QueryResult::HistoricProcessInstance(None) => Err(not_found()),
            _ => Err(ClientError::wrong_answer("process instance")),
        }
    })
    .await
}
