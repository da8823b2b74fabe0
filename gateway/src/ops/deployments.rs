//! Deployments and deployed resources: deploy, delete.

use rill_protocol::value::DeploymentRecord;
use rill_protocol::{Command, Key, PartitionId, RecordValue, Resource};

use super::{AppState, ClientError, operation, submit_by_key};

/// Deployments are made on partition 1, which distributes them to the others.
pub const DEPLOYMENT_PARTITION: PartitionId = PartitionId(1);

/// Deploys `resources` (BPMN, DMN, forms) together: the deployment's key and record.
pub async fn deploy(
    state: &AppState,
    resources: Vec<Resource>,
) -> Result<(Key, DeploymentRecord), ClientError> {
    operation("DeployResource", None, async {
        let accepted = state
            .dispatch
            .submit(
                DEPLOYMENT_PARTITION,
                Command::Deploy { resources },
                state.settings.request_timeout,
            )
            .await?;
        match accepted.value {
            RecordValue::Deployment(record) => Ok((accepted.key, record)),
            other => Err(ClientError::unexpected_answer("deployment", &other)),
        }
    })
    .await
}

/// Deletes a deployed resource (a process definition, a form, decision requirements)
/// on the partition that took it; the other partitions follow through the outbox. A
/// process definition with running instances is deleted once they end.
pub async fn delete_resource(
    state: &AppState,
    resource_key: Key,
    reference: Option<u64>,
) -> Result<(), ClientError> {
    let command = Command::DeleteResource { resource_key }.referenced(reference);
    operation("DeleteResource", Some(resource_key), async {
        submit_by_key(state, resource_key, "resource", command)
            .await
            .map(drop)
    })
    .await
}
