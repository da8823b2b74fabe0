//! Incidents: resolve one, read one (open or resolved).

use rill_protocol::history::{HistoricIncident, HistoryQuery, HistoryResult};
use rill_protocol::{Command, Key, Query, QueryResult};

use super::{AppState, ClientError, operation, submit_by_key};

/// Resolves an incident: its element is retried (or its job, once it has retries).
pub async fn resolve_incident(
    state: &AppState,
    incident_key: Key,
    reference: Option<u64>,
) -> Result<(), ClientError> {
    let command = Command::ResolveIncident { incident_key }.referenced(reference);
    operation("ResolveIncident", Some(incident_key), async {
        submit_by_key(state, incident_key, "incident", command)
            .await
            .map(drop)
    })
    .await
}

fn wrong_result() -> ClientError {
    ClientError::internal("The broker answered an incident query with another kind of result")
}

/// Reads an incident, open or resolved, from the history store.
pub async fn get_incident(
    state: &AppState,
    incident_key: Key,
) -> Result<HistoricIncident, ClientError> {
    operation("GetIncident", Some(incident_key), async {
        let not_found =
            || ClientError::not_found(format!("Incident with key '{incident_key}' not found"));
        let partition = state
            .dispatch
            .partition_of(incident_key, "incident")
            .map_err(|_| not_found())?;
        let timeout = state.settings.request_timeout;
        let query = Query::History(HistoryQuery::Incident { key: incident_key });
        match state.dispatch.query(partition, query, timeout).await? {
            QueryResult::History(HistoryResult::Incident(Some(incident))) => Ok(incident),
            QueryResult::History(HistoryResult::Incident(None)) => Err(not_found()),
            _ => Err(wrong_result()),
        }
    })
    .await
}

/// Whether the history store knows the process instance.
pub async fn instance_known(state: &AppState, key: Key) -> Result<bool, ClientError> {
    operation("FindProcessInstance", Some(key), find_instance(state, key)).await
}

async fn find_instance(state: &AppState, key: Key) -> Result<bool, ClientError> {
    let Ok(partition) = state.dispatch.partition_of(key, "process instance") else {
        return Ok(false);
    };
    let timeout = state.settings.request_timeout;
    let query = Query::HistoricProcessInstance { key };
    match state.dispatch.query(partition, query, timeout).await? {
        QueryResult::HistoricProcessInstance(found) => Ok(found.is_some()),
        _ => Err(wrong_result()),
    }
}
