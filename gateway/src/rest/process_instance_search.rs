//! `POST /v2/process-instances/search`: Camunda's process instance search, answered from
//! every partition's history store (the machinery is `history_search`).

use axum::Json;
use axum::extract::State;
use rill_protocol::history::{HistoricProcessInstance, ProcessInstanceField as F};

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::process_instances::InstanceResult;
use super::{Body, SharedState};
use crate::ops::ClientError;

impl SearchEntity for HistoricProcessInstance {
    const NOT_YET: &'static [&'static str] = &[
        "variables",
        "batchOperationId",
        "errorMessage",
        "hasRetriesLeft",
        "elementInstanceState",
        "elementId",
        "hasElementInstanceIncident",
        "incidentErrorHashCode",
        "$or",
    ];
    const KEY_FIELD: F = F::ProcessInstanceKey;
    const TIME_FIELD: Option<F> = Some(F::StartDate);
    type Item = InstanceResult;

    fn kind(field: F) -> Kind {
        match field {
            F::ProcessInstanceKey
            | F::ProcessDefinitionKey
            | F::ParentProcessInstanceKey
            | F::ParentElementInstanceKey => Kind::Key,
            F::ProcessDefinitionId
            | F::ProcessDefinitionName
            | F::ProcessDefinitionVersionTag
            | F::TenantId => Kind::Text,
            F::ProcessDefinitionVersion => Kind::Int,
            F::StartDate | F::EndDate => Kind::Date,
            F::State => Kind::Enum(&["ACTIVE", "COMPLETED", "TERMINATED"]),
            F::HasIncident => Kind::Bool,
            F::Tags => Kind::Tags,
        }
    }
}

pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<InstanceResult>>, ClientError> {
    run::<HistoricProcessInstance>(&state, &body, None)
        .await
        .map(Json)
}

#[cfg(test)]
mod tests;
