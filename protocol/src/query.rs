//! Read-only questions a gateway asks a partition leader, and the views it answers with.
//!
//! The views carry enums of their own instead of the engine's storage enums: a storage
//! enum may change with the engine's state layout, and the wire must not change with it.
//! The engine maps its enums onto these when it answers.

use serde::{Deserialize, Serialize};

use crate::history::{
    HistoricProcessInstance, HistoryQuery, HistoryResult, ProcessInstancePage,
    ProcessInstanceSearch,
};
use crate::ids::{Key, Timestamp};
use crate::value::{IncidentRecord, UserRecord};

/// A read a gateway sends a partition. The partition's history store answers every
/// read (`history.enabled`); the engine answers none. The variant order is the wire's
/// encoding: append only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Query {
    /// Retired: the engine no longer keeps finished instances for readers, and answers
    /// this with an error. It stays so that the variants after it keep their encoding;
    /// read [`Query::HistoricProcessInstance`] instead.
    ProcessInstance { key: Key },
    /// Retired as [`Query::ProcessInstance`] is; read
    /// `Query::History(HistoryQuery::Incident)` instead.
    Incident { key: Key },
    /// (History store) Process instances matching a filter, in a sort order, after a
    /// cursor. Answered by the partition's history store, not by the engine.
    SearchProcessInstances(ProcessInstanceSearch),
    /// (History store) One process instance, active or finished within
    /// `history.retention`.
    HistoricProcessInstance { key: Key },
    /// (History store) Jobs, incidents, and the entries to come.
    History(HistoryQuery),
    /// (Engine) A user of basic authentication with its password hash, for a gateway
    /// to verify credentials with: an internal read, never a client's answer (the
    /// history store answers clients' user reads, without the hash). Appended.
    UserCredentials { username: String },
}

impl Query {
    /// True for the queries a partition's history store answers (the engine does not).
    pub fn is_history(&self) -> bool {
        matches!(
            self,
            Query::SearchProcessInstances(_)
                | Query::HistoricProcessInstance { .. }
                | Query::History(_)
        )
    }
}

/// The answer to a [`Query`]; the first two variants stay (unanswered) for the encoding
/// of the ones after them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum QueryResult {
    ProcessInstance(Option<ProcessInstanceView>),
    Incident(Option<IncidentView>),
    ProcessInstancePage(ProcessInstancePage),
    HistoricProcessInstance(Option<HistoricProcessInstance>),
    History(HistoryResult),
    /// The user with its password hash (see [`Query::UserCredentials`]).
    UserCredentials(Option<UserRecord>),
}

/// The state of a process instance as readers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcessInstanceState {
    Active,
    Completed,
    Terminated,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessInstanceView {
    pub key: Key,
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: Key,
    pub state: ProcessInstanceState,
    pub has_incident: bool,
    pub start_date: Timestamp,
    pub end_date: Option<Timestamp>,
    /// The call activity's instance and element instance that created it, if any.
    pub parent_process_instance_key: Option<Key>,
    pub parent_element_instance_key: Option<Key>,
    /// The top instance of its call hierarchy (its own key for an instance no call
    /// activity created).
    pub root_process_instance_key: Key,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IncidentView {
    pub key: Key,
    pub record: IncidentRecord,
}
