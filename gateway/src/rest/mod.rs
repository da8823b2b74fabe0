//! The REST API: Camunda's Orchestration Cluster API v2 paths and JSON shapes.
//!
//! Every handler reads its request, calls an operation of `crate::ops`, and answers
//! its JSON (or 204) or the operation's [`ClientError`], written as a problem document
//! (`problem`). Extractors here reject with client errors too, so no axum default error
//! text reaches a client.

mod ad_hoc_activities;
mod authentication;
mod cluster;
mod decision_definitions;
mod decision_instances;
mod decisions;
mod deployments;
mod element_instances;
#[cfg(test)]
mod entity_search_tests;
mod history_search;
mod incidents;
mod job_search;
mod jobs;
mod json;
mod message_subscriptions;
mod messages;
mod problem;
mod process_definitions;
mod process_instance_migration;
mod process_instance_search;
mod process_instances;
mod resources;
mod signals;
mod user_tasks;
mod users;
mod variables;

use std::time::{Duration, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::routing::{delete, get, patch, post, put};
use rill_protocol::value::DEFAULT_TENANT;
use rill_protocol::{Key, Timestamp};

pub use self::authentication::{admit, authenticate};
use self::problem::payload_too_large;
pub use self::problem::{CONTENT_TYPE_PROBLEM, Problem};
use crate::ops::{ClientError, SharedState};

/// All `/v2` routes.
pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/v2/authentication/me", get(authentication::me))
        .route("/v2/deployments", post(deployments::deploy))
        .route(
            "/v2/decision-definitions/evaluation",
            post(decisions::evaluate),
        )
        .route(
            "/v2/decision-definitions/search",
            post(decision_definitions::search_definitions),
        )
        .route(
            "/v2/decision-definitions/{decisionDefinitionKey}",
            get(decision_definitions::get_definition),
        )
        .route(
            "/v2/decision-definitions/{decisionDefinitionKey}/xml",
            get(decision_definitions::definition_xml),
        )
        .route(
            "/v2/decision-instances/search",
            post(decision_instances::search),
        )
        .route(
            "/v2/decision-instances/{decisionEvaluationInstanceKey}",
            get(decision_instances::get),
        )
        .route(
            "/v2/decision-requirements/search",
            post(decision_definitions::search_requirements),
        )
        .route(
            "/v2/decision-requirements/{decisionRequirementsKey}",
            get(decision_definitions::get_requirements),
        )
        .route(
            "/v2/decision-requirements/{decisionRequirementsKey}/xml",
            get(decision_definitions::requirements_xml),
        )
        .route("/v2/process-instances", post(process_instances::create))
        .route(
            "/v2/process-instances/search",
            post(process_instance_search::search),
        )
        .route(
            "/v2/process-instances/{processInstanceKey}",
            get(process_instances::get),
        )
        .route(
            "/v2/process-instances/{processInstanceKey}/cancellation",
            post(process_instances::cancel),
        )
        .route("/v2/resources/{resourceKey}", get(resources::get))
        .route(
            "/v2/resources/{resourceKey}/content",
            get(resources::content),
        )
        .route(
            "/v2/resources/{resourceKey}/deletion",
            post(resources::delete),
        )
        .route(
            "/v2/process-instances/{processInstanceKey}/modification",
            post(process_instances::modify),
        )
        .route(
            "/v2/process-instances/{processInstanceKey}/migration",
            post(process_instance_migration::migrate),
        )
        .route(
            "/v2/process-instances/{processInstanceKey}/incidents/search",
            post(incidents::search_of_instance),
        )
        .route("/v2/jobs/activation", post(jobs::activate))
        .route("/v2/jobs/search", post(job_search::search))
        .route("/v2/jobs/{jobKey}", patch(jobs::update))
        .route("/v2/jobs/{jobKey}/completion", post(jobs::complete))
        .route("/v2/jobs/{jobKey}/failure", post(jobs::fail))
        .route("/v2/jobs/{jobKey}/error", post(jobs::throw_error))
        .route("/v2/messages/publication", post(messages::publish))
        .route("/v2/signals/broadcast", post(signals::broadcast))
        .route("/v2/user-tasks/search", post(user_tasks::search))
        .route(
            "/v2/user-tasks/{userTaskKey}",
            get(user_tasks::get).patch(user_tasks::update),
        )
        .route(
            "/v2/user-tasks/{userTaskKey}/assignment",
            post(user_tasks::assign),
        )
        .route(
            "/v2/user-tasks/{userTaskKey}/assignee",
            delete(user_tasks::unassign),
        )
        .route(
            "/v2/user-tasks/{userTaskKey}/completion",
            post(user_tasks::complete),
        )
        .route(
            "/v2/user-tasks/{userTaskKey}/variables/search",
            post(user_tasks::search_variables),
        )
        .route("/v2/user-tasks/{userTaskKey}/form", get(user_tasks::form))
        .route("/v2/incidents/search", post(incidents::search))
        .route("/v2/incidents/{incidentKey}", get(incidents::get))
        .route(
            "/v2/incidents/{incidentKey}/resolution",
            post(incidents::resolve),
        )
        .route(
            "/v2/element-instances/search",
            post(element_instances::search),
        )
        .route(
            "/v2/element-instances/{elementInstanceKey}",
            get(element_instances::get),
        )
        .route(
            "/v2/element-instances/{elementInstanceKey}/variables",
            put(element_instances::set_variables),
        )
        .route(
            "/v2/element-instances/ad-hoc-activities/{adHocSubProcessInstanceKey}/activation",
            post(ad_hoc_activities::activate),
        )
        .route(
            "/v2/process-definitions/search",
            post(process_definitions::search),
        )
        .route(
            "/v2/process-definitions/{processDefinitionKey}",
            get(process_definitions::get),
        )
        .route(
            "/v2/process-definitions/{processDefinitionKey}/xml",
            get(process_definitions::xml),
        )
        .route(
            "/v2/process-definitions/{processDefinitionKey}/form",
            get(process_definitions::form),
        )
        .route(
            "/v2/process-definitions/{processDefinitionKey}/statistics/element-instances",
            post(process_definitions::element_statistics),
        )
        .route(
            "/v2/message-subscriptions/search",
            post(message_subscriptions::search),
        )
        .route("/v2/variables/search", post(variables::search))
        .route("/v2/variables/{variableKey}", get(variables::get))
        .route("/v2/users", post(users::create))
        .route("/v2/users/search", post(users::search))
        .route(
            "/v2/users/{username}",
            get(users::get).put(users::update).delete(users::delete),
        )
        .route("/v2/topology", get(cluster::topology))
        .route("/v2/status", get(cluster::status))
}

/// A request body, read up to the configured limit.
pub struct Body(pub Bytes);

impl FromRequest<SharedState> for Body {
    type Rejection = ClientError;

    async fn from_request(req: Request, state: &SharedState) -> Result<Self, ClientError> {
        match Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(Body(bytes)),
            Err(BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(_))) => {
                Err(payload_too_large(state.settings.max_message_size))
            }
            Err(rejection) => Err(ClientError::invalid_argument(format!(
                "Could not read the request body: {}",
                rejection.body_text()
            ))),
        }
    }
}

/// The single `{…Key}` path parameter of a route, parsed as a key.
pub struct KeyParam(pub Key);

impl FromRequestParts<SharedState> for KeyParam {
    type Rejection = ClientError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &SharedState,
    ) -> Result<Self, ClientError> {
        let Path(params) = Path::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| {
                ClientError::invalid_argument(format!(
                    "Invalid path parameter: {}",
                    rejection.body_text()
                ))
            })?;
        let (name, value) = params.into_iter().next().ok_or_else(|| {
            ClientError::invalid_argument("Expected a key in the request path, but found none")
        })?;
        json::path_key(&name, &value).map(KeyParam)
    }
}

/// A key as the REST API writes it: a string.
pub fn key_text(key: Key) -> String {
    key.get().to_string()
}

/// A record timestamp as an RFC 3339 date with milliseconds (UTC), as Camunda writes
/// dates.
pub fn date_text(timestamp: Timestamp) -> String {
    let millis = u64::try_from(timestamp.millis()).unwrap_or(0);
    let time = UNIX_EPOCH + Duration::from_millis(millis);
    humantime::format_rfc3339_millis(time).to_string()
}

/// Rill is single-tenant: a tenant id must be left out or be the default tenant.
pub fn check_tenant(field: &str, tenant: Option<&str>) -> Result<(), ClientError> {
    match tenant {
        None => Ok(()),
        Some(t) if t == DEFAULT_TENANT => Ok(()),
        Some(other) => Err(ClientError::invalid_field(
            field,
            format!(
                "Expected to handle the request with {field} '{other}', but multi-tenancy is \
                 not supported; leave {field} out or use '{DEFAULT_TENANT}'"
            ),
        )),
    }
}

/// Fails with a clear message for a Camunda feature Rill does not implement, when the
/// client actually asked for it.
pub fn unsupported(condition: bool, what: &str) -> Result<(), ClientError> {
    if condition {
        Err(ClientError::invalid_argument(format!(
            "{what} is not supported by Rill"
        )))
    } else {
        Ok(())
    }
}

/// A client's `operationReference`, checked: Camunda takes positive numbers only. The
/// command is then sent with it (`Command::referenced`) and its records carry it.
pub fn operation_reference(reference: Option<i64>) -> Result<Option<u64>, ClientError> {
    match reference {
        None => Ok(None),
        Some(reference) if reference > 0 => Ok(Some(reference as u64)),
        Some(reference) => Err(ClientError::invalid_field(
            "operationReference",
            format!("The value for operationReference is '{reference}' but must be > 0"),
        )),
    }
}

/// Whether reading a multipart body failed because it is longer than
/// `gateway.max-message-size` (the body limit wraps the body, and its error is somewhere
/// in the chain of causes).
pub fn over_body_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_with_millis() {
        assert_eq!(date_text(Timestamp(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            date_text(Timestamp(1_700_000_000_123)),
            "2023-11-14T22:13:20.123Z"
        );
    }

    #[test]
    fn only_the_default_tenant_is_accepted() {
        assert!(check_tenant("tenantId", None).is_ok());
        assert!(check_tenant("tenantId", Some("<default>")).is_ok());
        let problem = check_tenant("tenantId", Some("acme")).unwrap_err();
        assert!(problem.to_string().contains("'acme'"));
    }
}
