//! Authentication on the REST API: one middleware over every route (and the fallback),
//! and `GET /v2/authentication/me`, which answers who the caller is.

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rill_tls::PeerAddr;
use serde_json::{Value, json};

use super::Problem;
use crate::auth::{Authenticator, Principal};
use crate::ops::{ClientError, SharedState};

/// Paths anyone may call: Camunda leaves the cluster status public (load balancers and
/// probes ask it).
const PUBLIC_PATHS: &[&str] = &["/v2/status"];

/// Establishes the caller's [`Principal`] (put in the request's extensions for the
/// handlers), or answers 401 with the challenge, or 429 for a source with too many
/// failed logins. The handler never runs without a principal.
pub async fn authenticate(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    if PUBLIC_PATHS.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    match admit(&state.authenticator, request).await {
        Ok(request) => next.run(request).await,
        Err(refusal) => refusal,
    }
}

/// The request with its caller's [`Principal`] in its extensions, or the problem
/// answer that refuses it. The REST API and the management port use it alike.
pub async fn admit(
    authenticator: &Authenticator,
    mut request: Request,
) -> Result<Request, Response> {
    let source = request
        .extensions()
        .get::<ConnectInfo<PeerAddr>>()
        .map(|ConnectInfo(PeerAddr(address))| address.ip());
    match authenticator.authenticate(request.headers(), source).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            Ok(request)
        }
        Err(error) => {
            let challenge = matches!(error, ClientError::Unauthenticated { .. })
                .then(|| authenticator.challenge(request.headers()))
                .flatten();
            Err(Problem::from(error)
                .with_challenge(challenge)
                .into_response())
        }
    }
}

/// `GET /v2/authentication/me`: Camunda's `CamundaUserResult`. Rill has no web
/// components, roles or tenants of users yet, so those lists are empty.
pub async fn me(request: Request) -> Result<Json<Value>, ClientError> {
    let principal = request
        .extensions()
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| ClientError::internal("The request passed no authentication"))?;
    Ok(Json(json!({
        "username": principal.username,
        "displayName": principal.name,
        "email": principal.email,
        "authorizedComponents": [],
        "tenants": [],
        "groups": principal.groups,
        "roles": [],
        "salesPlanType": null,
        "c8Links": {},
        "canLogout": false,
    })))
}
