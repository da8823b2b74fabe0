//! Users of basic authentication, in Camunda 8.8's shapes: `POST /v2/users` (201),
//! `GET`/`PUT`/`DELETE /v2/users/{username}` (200, 200, 204) and
//! `POST /v2/users/search`. Input is checked here, each problem a 400 naming its field;
//! no answer carries a password or its hash.

use axum::Json;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use rill_protocol::history::{HistoricUser, UserField as F};
use rill_protocol::value::UserRecord;
use serde::{Deserialize, Serialize};

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::json::parse_body;
use super::{Body, SharedState};
use crate::ops::{self, ClientError, NewUser, UserChanges};

/// Longest username, name and email (Camunda's identifiers are at most 256 long).
pub const MAX_TEXT_LENGTH: usize = 256;
/// Passwords are 1 to 1024 characters (Argon2 takes any length; the bound keeps a
/// request from making the hash read megabytes).
pub const MAX_PASSWORD_LENGTH: usize = 1024;

/// Camunda's default identifier characters: letters, digits and `_ ~ @ . + -`.
fn username_problem(username: &str) -> Option<String> {
    if username.is_empty() {
        return Some("Expected a username, but it was empty".into());
    }
    if username.chars().count() > MAX_TEXT_LENGTH {
        return Some(format!(
            "Expected a username of at most {MAX_TEXT_LENGTH} characters, but it has {}",
            username.chars().count()
        ));
    }
    if let Some(bad) = username
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_~@.+-".contains(*c)))
    {
        let shown = if bad.is_control() || bad.is_whitespace() {
            format!("U+{:04X}", u32::from(bad))
        } else {
            format!("'{bad}'")
        };
        return Some(format!(
            "The username contains the character {shown}; a username may contain letters, \
             digits and _ ~ @ . + - only"
        ));
    }
    None
}

fn check_username(field: &str, username: &str) -> Result<(), ClientError> {
    match username_problem(username) {
        Some(problem) => Err(ClientError::invalid_field(field, problem)),
        None => Ok(()),
    }
}

/// The password's length only: its text never goes into a message.
fn check_password(password: &str) -> Result<(), ClientError> {
    let length = password.chars().count();
    if length == 0 || length > MAX_PASSWORD_LENGTH {
        return Err(ClientError::invalid_field(
            "password",
            format!(
                "Expected a password of 1 to {MAX_PASSWORD_LENGTH} characters, but it has \
                 {length}"
            ),
        ));
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), ClientError> {
    if name.chars().count() > MAX_TEXT_LENGTH || name.chars().any(char::is_control) {
        return Err(ClientError::invalid_field(
            "name",
            format!(
                "Expected a name of at most {MAX_TEXT_LENGTH} characters without control \
                 characters"
            ),
        ));
    }
    Ok(())
}

/// An email address's shape: `local@domain`, one `@`, a domain of dot-separated
/// non-empty labels, no spaces or control characters. Empty: none.
fn check_email(email: &str) -> Result<(), ClientError> {
    if email.is_empty() {
        return Ok(());
    }
    let well_formed = email.chars().count() <= MAX_TEXT_LENGTH
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && match email.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.contains('.')
                    && domain.split('.').all(|label| !label.is_empty())
            }
            None => false,
        };
    if well_formed {
        Ok(())
    } else {
        Err(ClientError::invalid_field(
            "email",
            format!(
                "Expected an email address like name@example.com (at most {MAX_TEXT_LENGTH} \
                 characters), but got '{}'",
                email.chars().take(MAX_TEXT_LENGTH).collect::<String>()
            ),
        ))
    }
}

/// Camunda's `UserRequest`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UserRequest {
    username: Option<String>,
    password: Option<String>,
    name: Option<String>,
    email: Option<String>,
}

/// Camunda's `UserUpdateRequest`: what is left out stays; a blank password too.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UserUpdateRequest {
    password: Option<String>,
    name: Option<String>,
    email: Option<String>,
}

/// Camunda's `UserResult` (and `UserCreateResult`, `UserUpdateResult`, the same fields).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct UserResult {
    username: String,
    name: String,
    email: String,
}

impl From<HistoricUser> for UserResult {
    fn from(user: HistoricUser) -> Self {
        UserResult {
            username: user.username,
            name: user.name,
            email: user.email,
        }
    }
}

impl From<UserRecord> for UserResult {
    fn from(user: UserRecord) -> Self {
        UserResult {
            username: user.username,
            name: user.name,
            email: user.email,
        }
    }
}

impl SearchEntity for HistoricUser {
    const KEY_FIELD: F = F::UserKey;
    type Item = UserResult;

    fn kind(field: F) -> Kind {
        match field {
            F::UserKey => Kind::Key,
            F::Username | F::Name | F::Email => Kind::Text,
        }
    }
}

/// The `{username}` of a route, checked as a username.
pub struct UsernameParam(pub String);

impl FromRequestParts<SharedState> for UsernameParam {
    type Rejection = ClientError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &SharedState,
    ) -> Result<Self, ClientError> {
        let Path(username) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| {
                ClientError::invalid_argument(format!(
                    "Invalid path parameter: {}",
                    rejection.body_text()
                ))
            })?;
        check_username("username", &username)?;
        Ok(UsernameParam(username))
    }
}

/// `POST /v2/users`.
pub async fn create(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: UserRequest = parse_body(&body)?;
    let username = request.username.ok_or_else(|| {
        ClientError::invalid_field("username", "No username provided; a user needs one")
    })?;
    check_username("username", &username)?;
    let password = request.password.ok_or_else(|| {
        ClientError::invalid_field("password", "No password provided; a user needs one")
    })?;
    check_password(&password)?;
    let name = request.name.unwrap_or_default();
    check_name(&name)?;
    let email = request.email.unwrap_or_default();
    check_email(&email)?;
    let user = ops::create_user(
        &state,
        NewUser {
            username,
            name,
            email,
            password,
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(UserResult::from(user))).into_response())
}

/// `GET /v2/users/{username}`.
pub async fn get(
    State(state): State<SharedState>,
    UsernameParam(username): UsernameParam,
) -> Result<Json<UserResult>, ClientError> {
    Ok(Json(ops::get_user(&state, &username).await?.into()))
}

/// `PUT /v2/users/{username}`.
pub async fn update(
    State(state): State<SharedState>,
    UsernameParam(username): UsernameParam,
    Body(body): Body,
) -> Result<Json<UserResult>, ClientError> {
    let request: UserUpdateRequest = parse_body(&body)?;
    let password = request.password.filter(|p| !p.is_empty());
    if let Some(password) = &password {
        check_password(password)?;
    }
    if let Some(name) = &request.name {
        check_name(name)?;
    }
    if let Some(email) = &request.email {
        check_email(email)?;
    }
    let user = ops::update_user(
        &state,
        username,
        UserChanges {
            name: request.name,
            email: request.email,
            password,
        },
    )
    .await?;
    Ok(Json(user.into()))
}

/// `DELETE /v2/users/{username}`.
pub async fn delete(
    State(state): State<SharedState>,
    UsernameParam(username): UsernameParam,
) -> Result<Response, ClientError> {
    ops::delete_user(&state, username).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /v2/users/search`.
pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<UserResult>>, ClientError> {
    run::<HistoricUser>(&state, &body, None).await.map(Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_take_camundas_identifier_characters() {
        for good in ["demo", "jane.doe@example.com", "a_b~c+d-e", "X9"] {
            assert_eq!(username_problem(good), None, "{good}");
        }
        let bad = username_problem("jane doe").unwrap();
        assert!(bad.contains("U+0020"), "{bad}");
        assert!(username_problem("a:b").unwrap().contains("':'"));
        assert!(username_problem("").unwrap().contains("empty"));
        assert!(username_problem(&"a".repeat(257)).unwrap().contains("257"));
    }

    #[test]
    fn passwords_are_bounded_and_never_quoted() {
        assert!(check_password("x").is_ok());
        let long = "p".repeat(MAX_PASSWORD_LENGTH + 1);
        let problem = check_password(&long).unwrap_err();
        assert_eq!(problem.field(), Some("password"));
        assert!(!problem.to_string().contains("ppp"));
        assert!(check_password("").is_err());
    }

    #[test]
    fn emails_need_their_shape() {
        for good in ["", "a@b.c", "jane.doe+x@mail.example.com"] {
            assert!(check_email(good).is_ok(), "{good}");
        }
        for bad in ["a", "a@b", "@b.c", "a@b..c", "a b@c.d", "a@b@c.d"] {
            let problem = check_email(bad).unwrap_err();
            assert_eq!(problem.field(), Some("email"), "{bad}");
        }
    }
}
