//! The cluster as clients see it: topology and readiness.

use super::{AppState, ClientError, operation};
use crate::backend::Topology;

/// The brokers and the partitions they lead or follow.
pub async fn topology(state: &AppState) -> Result<Topology, ClientError> {
    operation("Topology", None, async {
        Ok(state.dispatch.backend().topology().await?)
    })
    .await
}

/// Whether the cluster can take requests: every partition has a healthy leader.
pub async fn status(state: &AppState) -> Result<(), ClientError> {
    operation("Status", None, async {
        if state
            .dispatch
            .backend()
            .topology()
            .await?
            .all_partitions_led()
        {
            Ok(())
        } else {
            Err(ClientError::Unavailable {
                detail: "Not every partition has a healthy leader yet".to_owned(),
            })
        }
    })
    .await
}
