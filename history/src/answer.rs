//! Answering the history queries of the command API from a store (the broker's column
//! family, or memory in tests).

use rill_protocol::history::{HistoryQuery, HistoryResult};
use rill_protocol::{Query, QueryResult};

use crate::search::{decision_xml, definition_xml, element_statistics, get, search};
use crate::store::HistoryRead;
use crate::{HistoryError, Result};

/// The answer to a history query ([`Query::is_history`]); any other query is an error.
pub fn answer<R: HistoryRead + ?Sized>(store: &R, query: &Query) -> Result<QueryResult> {
    Ok(match query {
        Query::SearchProcessInstances(s) => QueryResult::ProcessInstancePage(search(store, s)?),
        Query::HistoricProcessInstance { key } => {
            QueryResult::HistoricProcessInstance(get(store, *key)?)
        }
        Query::History(query) => QueryResult::History(match query {
            HistoryQuery::SearchJobs(s) => HistoryResult::Jobs(search(store, s)?),
            HistoryQuery::SearchIncidents(s) => HistoryResult::Incidents(search(store, s)?),
            HistoryQuery::Incident { key } => HistoryResult::Incident(get(store, *key)?),
            HistoryQuery::SearchVariables(s) => HistoryResult::Variables(search(store, s)?),
            HistoryQuery::Variable { key } => HistoryResult::Variable(get(store, *key)?),
            HistoryQuery::SearchElementInstances(s) => {
                HistoryResult::ElementInstances(search(store, s)?)
            }
            HistoryQuery::ElementInstance { key } => {
                HistoryResult::ElementInstance(get(store, *key)?)
            }
            HistoryQuery::SearchProcessDefinitions(s) => {
                HistoryResult::ProcessDefinitions(search(store, s)?)
            }
            HistoryQuery::ProcessDefinition { key } => {
                HistoryResult::ProcessDefinition(get(store, *key)?)
            }
            HistoryQuery::ProcessDefinitionXml { key } => {
                HistoryResult::ProcessDefinitionXml(definition_xml(store, *key)?)
            }
            HistoryQuery::ElementStatistics {
                process_definition_key,
                filter,
            } => HistoryResult::ElementStatistics(element_statistics(
                store,
                *process_definition_key,
                filter,
            )?),
            HistoryQuery::SearchMessageSubscriptions(s) => {
                HistoryResult::MessageSubscriptions(search(store, s)?)
            }
            HistoryQuery::SearchUserTasks(s) => HistoryResult::UserTasks(search(store, s)?),
            HistoryQuery::UserTask { key } => HistoryResult::UserTask(get(store, *key)?),
            HistoryQuery::Form { key } => HistoryResult::Form(get(store, *key)?),
            HistoryQuery::SearchForms(s) => HistoryResult::Forms(search(store, s)?),
            HistoryQuery::Resource { key } => HistoryResult::Resource(get(store, *key)?),
            HistoryQuery::SearchUsers(s) => HistoryResult::Users(search(store, s)?),
            HistoryQuery::SearchDecisionDefinitions(s) => {
                HistoryResult::DecisionDefinitions(search(store, s)?)
            }
            HistoryQuery::DecisionDefinition { key } => {
                HistoryResult::DecisionDefinition(get(store, *key)?)
            }
            HistoryQuery::SearchDecisionRequirements(s) => {
                HistoryResult::DecisionRequirementsPage(search(store, s)?)
            }
            HistoryQuery::DecisionRequirements { key } => {
                HistoryResult::DecisionRequirements(get(store, *key)?)
            }
            HistoryQuery::DecisionXml { key } => {
                HistoryResult::DecisionXml(decision_xml(store, *key)?)
            }
            HistoryQuery::SearchDecisionInstances(s) => {
                HistoryResult::DecisionInstances(search(store, s)?)
            }
            HistoryQuery::DecisionInstance { key } => {
                HistoryResult::DecisionInstance(get(store, *key)?)
            }
        }),
        other => {
            return Err(HistoryError::Storage(format!(
                "not a history query: {other:?}"
            )));
        }
    })
}
