//! Incidents: resolve one, read one (open or resolved).

use rill_protocol::history::{HistoricIncident, HistoryQuery, HistoryResult};
use rill_protocol::{Command, IncidentView, Key, Query, QueryResult};

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

/// An incident as it can be read: from the history store (open or resolved), or (with
/// the store unavailable) an open one from the engine.
#[derive(Debug)]
pub enum Incident {
    Historic(HistoricIncident),
    Live(IncidentView),
}

fn wrong_result() -> ClientError {
    ClientError::internal("The broker answered an incident query with another kind of result")
}

/// Reads an incident.
pub async fn get_incident(state: &AppState, incident_key: Key) -> Result<Incident, ClientError> {
    operation("GetIncident", Some(incident_key), async {
        let not_found =
            || ClientError::not_found(format!("Incident with key '{incident_key}' not found"));
        let partition = state
            .dispatch
            .partition_of(incident_key, "incident")
            .map_err(|_| not_found())?;
        let timeout = state.settings.request_timeout;
        let history = Query::History(HistoryQuery::Incident { key: incident_key });
        match state.dispatch.query(partition, history, timeout).await {
            Ok(QueryResult::History(HistoryResult::Incident(Some(incident)))) => {
                return Ok(Incident::Historic(incident));
            }
            Ok(QueryResult::History(HistoryResult::Incident(None))) => {}
            Ok(_) => return Err(wrong_result()),
            // A broker without the history store (history.enabled = false) fails it.
            Err(error @ ClientError::HistoryUnavailable { .. }) => {
                tracing::debug!(%error, "no history to look in");
            }
            Err(error) => return Err(error),
        }
        let live = Query::Incident { key: incident_key };
        match state.dispatch.query(partition, live, timeout).await? {
            QueryResult::Incident(Some(view)) => Ok(Incident::Live(view)),
            QueryResult::Incident(None) => Err(not_found()),
            _ => Err(wrong_result()),
        }
    })
    .await
}

/// Whether the engine or the history store knows the process instance.
pub async fn instance_known(state: &AppState, key: Key) -> Result<bool, ClientError> {
    operation("FindProcessInstance", Some(key), find_instance(state, key)).await
}

async fn find_instance(state: &AppState, key: Key) -> Result<bool, ClientError> {
    let Ok(partition) = state.dispatch.partition_of(key, "process instance") else {
        return Ok(false);
    };
    let timeout = state.settings.request_timeout;
    if let QueryResult::ProcessInstance(Some(_)) = state
        .dispatch
        .query(partition, Query::ProcessInstance { key }, timeout)
        .await?
    {
        return Ok(true);
    }
    match state
        .dispatch
        .query(partition, Query::HistoricProcessInstance { key }, timeout)
        .await
    {
        Ok(QueryResult::HistoricProcessInstance(found)) => Ok(found.is_some()),
        Ok(_) => Err(wrong_result()),
        Err(ClientError::HistoryUnavailable { .. }) => Ok(false),
        Err(error) => Err(error),
    }
}
