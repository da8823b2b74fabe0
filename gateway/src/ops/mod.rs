//! The gateway's API-neutral operations layer: one function per client operation, for
//! REST (`rest/`) and gRPC (`grpc/`) alike. Each takes protocol types (or a small typed
//! request), routes to partitions through the [`Dispatcher`], and answers a typed
//! result or a [`ClientError`]; the two APIs only read their requests, call an
//! operation and write its answer in their own shapes. `rest/` and `grpc/` import
//! from here, never from each other.
//!
//! Every operation runs in a tracing span of its own ([`operation`]): the operation's
//! name, the key it is about where there is one, and the partition it went to.

mod cluster;
mod decisions;
mod deployments;
mod dispatch;
mod error;
mod incidents;
mod instances;
pub(crate) mod job_waiters;
mod jobs;
mod messages;
mod reads;
mod user_tasks;
mod users;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rill_protocol::{Command, Key, PartitionId};
use tokio::sync::watch;
use tracing::Instrument;

pub use self::cluster::{status, topology};
pub use self::decisions::evaluate_decision;
pub use self::deployments::{delete_resource, deploy};
pub use self::dispatch::{Accepted, Backoff, Dispatcher};
#[cfg(test)]
pub(crate) use self::error::one_of_each;
pub use self::error::{ClientError, rejection_code};
pub use self::incidents::{get_incident, instance_known, resolve_incident};
pub use self::instances::{
    activate_ad_hoc_activities, cancel_instance, create_instance, create_instance_with_result,
    get_process_instance, migrate_instance, modify_instance, set_variables,
};
pub use self::job_waiters::JobWaiters;
pub use self::jobs::{
    ActivatedBatches, Corrections, ResultInput, activate_jobs, complete_job, fail_job, job_result,
    throw_error, update_job, yield_job,
};
pub use self::messages::{broadcast_signal, publish_message};
pub use self::reads::{
    Searchable, decision_definition, decision_definition_xml, decision_instance,
    decision_requirements, decision_requirements_xml, element_instance, element_statistics,
    process_definition, process_definition_form, process_definition_xml, resource, search,
    user_task, user_task_form, user_task_scopes, variable,
};
pub use self::user_tasks::{
    assign_user_task, complete_user_task, unassign_user_task, update_user_task,
};
pub use self::users::{
    NewUser, UserChanges, create_user, delete_user, get_user, start_users, update_user,
};
use crate::auth::Authenticator;
use crate::metrics::GatewayMetrics;

/// Settings the operations need, taken from `GatewayConfig`.
#[derive(Clone, Debug)]
pub struct ApiSettings {
    /// Default timeout of a request to a broker.
    pub request_timeout: Duration,
    /// How long a job activation waits for jobs when the client does not say.
    pub long_polling_timeout: Duration,
    /// The longest `requestTimeout` a client may ask for (longer ones are cut to it).
    pub max_request_timeout: Duration,
    /// Largest accepted request body, in bytes.
    pub max_message_size: u64,
    /// Largest accepted variable document, in bytes of JSON text.
    pub max_variable_document_size: u64,
}

/// What every request of either API shares: one dispatcher, one set of long-polling
/// job waiters, the settings and the metrics.
pub struct AppState {
    /// Who is calling: run once per request, in front of both APIs.
    pub authenticator: Arc<Authenticator>,
    pub dispatch: Dispatcher,
    /// Long-polling job activations waiting for jobs.
    pub job_waiters: JobWaiters,
    pub settings: ApiSettings,
    pub metrics: GatewayMetrics,
    /// Turns true when the server shuts down, ending long polls early.
    pub shutdown: watch::Receiver<bool>,
}

pub type SharedState = Arc<AppState>;

/// A client's request timeout if positive (`None` otherwise), cut to the configured
/// maximum so that no request holds its connection and flow-control permit for long.
pub fn client_timeout(requested_millis: Option<i64>, settings: &ApiSettings) -> Option<Duration> {
    match requested_millis {
        Some(ms) if ms > 0 => {
            Some(Duration::from_millis(ms as u64).min(settings.max_request_timeout))
        }
        _ => None,
    }
}

/// Runs one client operation in its span: `operation` (Zeebe's RPC name, e.g.
/// `CompleteJob`), `key` where the request names one, and `partition` once the
/// dispatcher has picked it. A failure is logged there at debug level, with its field
/// for bad input.
pub async fn operation<T>(
    name: &'static str,
    key: Option<Key>,
    work: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    let span = tracing::info_span!(
        "client_request",
        operation = name,
        key = tracing::field::Empty,
        partition = tracing::field::Empty,
    );
    if let Some(key) = key {
        span.record("key", key.get());
    }
    async move {
        let result = work.await;
        if let Err(error) = &result {
            tracing::debug!(%error, field = error.field(), "client request failed");
        }
        result
    }
    .instrument(span)
    .await
}

/// Sends `command` to the partition that owns `key` (the entity named by `what`).
async fn submit_by_key(
    state: &AppState,
    key: Key,
    what: &str,
    command: Command,
) -> Result<Accepted, ClientError> {
    let partition = state.dispatch.partition_of(key, what)?;
    state
        .dispatch
        .submit(partition, command, state.settings.request_timeout)
        .await
}

/// Notes the partition a request went to on its operation's span (see [`operation`]).
fn note_partition(partition: PartitionId) {
    tracing::Span::current().record("partition", partition.get());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_timeouts_are_capped_by_the_maximum() {
        let settings = ApiSettings {
            request_timeout: Duration::from_secs(15),
            long_polling_timeout: Duration::from_secs(10),
            max_request_timeout: Duration::from_secs(60),
            max_message_size: 1024,
            max_variable_document_size: 1024,
        };
        assert_eq!(
            client_timeout(Some(i64::MAX), &settings),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            client_timeout(Some(5_000), &settings),
            Some(Duration::from_secs(5))
        );
        assert_eq!(client_timeout(Some(0), &settings), None);
        assert_eq!(client_timeout(Some(-1), &settings), None);
        assert_eq!(client_timeout(None, &settings), None);
    }
}
