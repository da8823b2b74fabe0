//! The engine answers no client's read: the partition's history store answers every one
//! (`history.enabled`), and the engine keeps only what processing needs. The one read
//! it answers is internal: a user with its password hash, which a gateway verifies
//! credentials against (the history store never holds the hash).
//! `rill_protocol::Query` keeps its first two variants (an instance by key, an incident
//! by key) for the encoding of the ones after them; the engine answers every variant with
//! an error that says where the read belongs.

pub use rill_protocol::{Query, QueryResult};

use crate::error::{Error, Result};
use crate::state::Reader;

pub(crate) fn answer(state: Reader<'_>, query: &Query) -> Result<QueryResult> {
    let reason = match query {
        Query::UserCredentials { username } => {
            return Ok(QueryResult::UserCredentials(state.user(username)?));
        }
        Query::ProcessInstance { .. } | Query::Incident { .. } => {
            "retired: read the history store's instance or incident instead"
        }
        Query::SearchProcessInstances(_)
        | Query::HistoricProcessInstance { .. }
        | Query::History(_) => "the partition's history store answers this one",
    };
    Err(Error::NotARead(reason))
}
