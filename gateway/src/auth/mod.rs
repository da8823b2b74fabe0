//! Who is calling: the [`Authenticator`] reads the credentials of a request (REST's
//! `Authorization` header, gRPC's `authorization` metadata: the same HTTP header) and
//! yields the caller's [`Principal`] or [`ClientError::Unauthenticated`]. It runs once
//! per request, in front of both APIs (`rest::authenticate`, `grpc::auth`), and on the
//! management port; handlers find the principal in the request's extensions.
//!
//! ```text
//! request ─► credentials? ─► too many failures from this source? ─► 429 / RESOURCE_EXHAUSTED
//!                │                                   │ no
//!                │ none / malformed ─► 401           ▼
//!                │                    cached as verified (10 s)? ─► Principal
//!                │                                   │ no
//!                │                    the replicated user (deployment partition's state),
//!                │                    or a configured one not seeded yet
//!                │                                   │
//!                │                    Argon2id verify (blocking pool, bounded) ─► Principal
//!                │                                   │ wrong
//!                └──────────────────────────► count the failure ─► 401, same answer
//!                                             whether or not the user exists
//! ```
//!
//! With `oidc`, the header carries a bearer JWT, checked by `oidc.rs` against the
//! provider's keys; a principal from a token is valid until the token expires, and a
//! job stream opened with it is closed then.
//!
//! Secrets never leave this module: a log line names the source, the username and the
//! reason, never a password, a token or the header.

mod basic;
mod oidc;
mod password;
mod throttle;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::http::{HeaderMap, HeaderValue, header};
use rill_config::{AuthenticationMethod, SecurityConfig};

use self::basic::BasicUsers;
pub(crate) use self::basic::{Seed, UserDirectory};
use self::oidc::OidcVerifier;
pub(crate) use self::password::hash_password;
use self::throttle::FailedLogins;
use crate::error::GatewayError;
use crate::ops::ClientError;

/// The longest `Authorization` header read; a longer one is refused unread (a bearer
/// JWT with many claims stays well below).
pub const MAX_AUTHORIZATION_LENGTH: usize = 8 * 1024;

/// The realm named in `WWW-Authenticate`.
const REALM: &str = "rill";

/// Who made a request, established once for both APIs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The username (basic), the username or client-id claim (oidc), or `None` when
    /// authentication is off.
    pub username: Option<String>,
    /// Display name, where known.
    pub name: Option<String>,
    pub email: Option<String>,
    /// Groups the caller belongs to (the groups claim of a token).
    pub groups: Vec<String>,
    /// When the credentials stop being valid (a token's `exp` plus the clock skew);
    /// `None` when they do not expire.
    pub valid_until: Option<Instant>,
}

impl Principal {
    /// The caller when authentication is off.
    pub fn anonymous() -> Principal {
        Principal {
            username: None,
            name: None,
            email: None,
            groups: Vec::new(),
            valid_until: None,
        }
    }
}

/// Establishes the principal of each request, as `security.authentication.method` says.
pub struct Authenticator {
    method: Method,
}

enum Method {
    None,
    Basic {
        users: Arc<BasicUsers>,
        failures: FailedLogins,
    },
    Oidc(OidcVerifier),
}

impl Authenticator {
    /// Everyone is let in (`method = "none"`).
    pub fn none() -> Authenticator {
        Authenticator {
            method: Method::None,
        }
    }

    /// From the validated `security` settings. Hashes every basic user's password
    /// (slow on purpose, once at start); with oidc, reads the provider's discovery
    /// document and keys, and fails when they cannot be used.
    pub async fn from_config(security: &SecurityConfig) -> Result<Authenticator, GatewayError> {
        let method = match security.authentication.method {
            AuthenticationMethod::None => Method::None,
            AuthenticationMethod::Basic => Method::Basic {
                users: Arc::new(BasicUsers::new(&security.initialization.users)?),
                failures: FailedLogins::new(throttle::Policy::default()),
            },
            AuthenticationMethod::Oidc => {
                Method::Oidc(OidcVerifier::discover(&security.authentication.oidc).await?)
            }
        };
        Ok(Authenticator { method })
    }

    /// A basic authenticator with its own failure policy, for tests.
    #[cfg(test)]
    pub(crate) fn basic_with(
        users: &[rill_config::InitialUser],
        policy: throttle::Policy,
    ) -> Authenticator {
        Authenticator {
            method: Method::Basic {
                users: Arc::new(BasicUsers::new(users).expect("valid users")),
                failures: FailedLogins::new(policy),
            },
        }
    }

    /// Basic authentication reads the replicated users from `directory` from now on.
    pub(crate) fn attach_users(&self, directory: Arc<dyn UserDirectory>) {
        if let Method::Basic { users, .. } = &self.method {
            users.attach(directory);
        }
    }

    /// The configured users still to create in the replicated users (none unless the
    /// method is basic).
    pub(crate) fn unseeded_users(&self) -> Vec<Seed> {
        match &self.method {
            Method::Basic { users, .. } => users.unseeded(),
            _ => Vec::new(),
        }
    }

    /// A configured user is in the replicated users now.
    pub(crate) fn user_seeded(&self, username: &str) {
        if let Method::Basic { users, .. } = &self.method {
            users.seeded(username);
        }
    }

    /// Forgets what is cached of a user changed or deleted through this gateway.
    pub(crate) fn forget_user(&self, username: &str) {
        if let Method::Basic { users, .. } = &self.method {
            users.forget(username);
        }
    }

    /// Whether requests must prove who they are.
    pub fn is_enabled(&self) -> bool {
        !matches!(self.method, Method::None)
    }

    /// `WWW-Authenticate` of a 401 to a request with these headers, when
    /// authentication is on. A refused bearer token is an `invalid_token` (RFC 6750);
    /// a request without one gets the bare challenge.
    pub fn challenge(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        match self.method {
            Method::None => None,
            Method::Basic { .. } => Some(HeaderValue::from_static(BASIC_CHALLENGE)),
            Method::Oidc(_) if headers.contains_key(header::AUTHORIZATION) => {
                Some(HeaderValue::from_static(BEARER_INVALID_TOKEN_CHALLENGE))
            }
            Method::Oidc(_) => Some(HeaderValue::from_static(BEARER_CHALLENGE)),
        }
    }

    /// The caller of a request with these headers, from `source` (for rate limiting
    /// failed logins; `None` when the transport does not say).
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        source: Option<IpAddr>,
    ) -> Result<Principal, ClientError> {
        let source_text = source.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
        let (users, failures) = match &self.method {
            Method::None => return Ok(Principal::anonymous()),
            Method::Basic { users, failures } => (users, failures),
            Method::Oidc(verifier) => {
                return verifier.authenticate(headers).await.map_err(|refusal| {
                    // Not a login attempt that could guess a secret: no failure counted.
                    if refusal.presented_a_token() {
                        tracing::info!(source = %source_text, reason = refusal.reason(), "request refused: invalid bearer token");
                    } else {
                        tracing::debug!(source = %source_text, reason = refusal.reason(), "request refused: no credentials");
                    }
                    ClientError::Unauthenticated {
                        detail: refusal.detail(verifier),
                    }
                });
            }
        };
        if let Some(retry_after) = failures.blocked(source) {
            tracing::info!(
                source = %source_text,
                "request refused: too many failed logins from this source"
            );
            return Err(ClientError::TooManyFailedLogins { retry_after });
        }
        let credentials = match basic_credentials(headers) {
            Ok(credentials) => credentials,
            Err(refusal) => {
                tracing::info!(source = %source_text, reason = refusal.reason(), "request refused: no valid credentials");
                if refusal.counts_as_failure() {
                    failures.record(source);
                }
                return Err(refusal.into_error());
            }
        };
        match users
            .verify(&credentials.username, credentials.password)
            .await
        {
            Ok(principal) => Ok(principal),
            Err(why) => {
                failures.record(source);
                tracing::info!(
                    source = %source_text,
                    username = ?credentials.username,
                    reason = why.reason(),
                    "request refused: invalid credentials"
                );
                Err(ClientError::Unauthenticated {
                    detail: "Invalid credentials: the username or the password is wrong".to_owned(),
                })
            }
        }
    }
}

/// `WWW-Authenticate` of a 401 under basic authentication (credentials are read as
/// UTF-8, as RFC 7617 recommends).
pub const BASIC_CHALLENGE: &str = "Basic realm=\"rill\"";

/// `WWW-Authenticate` of a 401 without a token under oidc authentication.
pub const BEARER_CHALLENGE: &str = "Bearer realm=\"rill\"";

/// `WWW-Authenticate` of a 401 whose bearer token was refused.
pub const BEARER_INVALID_TOKEN_CHALLENGE: &str = "Bearer realm=\"rill\", error=\"invalid_token\"";

/// Username and password of a `Basic` header.
struct BasicCredentials {
    username: String,
    password: Vec<u8>,
}

/// Why a request carries no usable credentials. The 401's detail says what is wrong
/// with the header's form, never anything about users.
#[derive(Debug, PartialEq)]
enum Refusal {
    Missing,
    TooLong(usize),
    WrongScheme(String),
    NotBase64,
    NotUtf8,
    NoColon,
}

impl Refusal {
    fn reason(&self) -> &'static str {
        match self {
            Refusal::Missing => "no Authorization header",
            Refusal::TooLong(_) => "Authorization header too long",
            Refusal::WrongScheme(_) => "not Basic credentials",
            Refusal::NotBase64 => "credentials not base64",
            Refusal::NotUtf8 => "credentials not UTF-8",
            Refusal::NoColon => "credentials without a colon",
        }
    }

    /// A request without credentials is no login attempt; a broken one is.
    fn counts_as_failure(&self) -> bool {
        !matches!(self, Refusal::Missing)
    }

    fn into_error(self) -> ClientError {
        let detail = match self {
            Refusal::Missing => format!(
                "The request has no credentials: send an Authorization header with Basic \
                 credentials (realm \"{REALM}\")"
            ),
            Refusal::TooLong(length) => format!(
                "The Authorization header is {length} bytes long; at most \
                 {MAX_AUTHORIZATION_LENGTH} are accepted"
            ),
            Refusal::WrongScheme(scheme) => format!(
                "Expected Basic credentials (Authorization: Basic base64(username:password)), \
                 but the Authorization header has the scheme `{scheme}`"
            ),
            Refusal::NotBase64 => {
                "The Basic credentials in the Authorization header are not valid base64".to_owned()
            }
            Refusal::NotUtf8 => {
                "The Basic credentials in the Authorization header are not UTF-8 text".to_owned()
            }
            Refusal::NoColon => "The Basic credentials in the Authorization header have no \
                                 `:` between username and password"
                .to_owned(),
        };
        ClientError::Unauthenticated { detail }
    }
}

/// Reads `Authorization: Basic base64(username:password)` (RFC 7617, UTF-8).
fn basic_credentials(headers: &HeaderMap) -> Result<BasicCredentials, Refusal> {
    use base64::Engine;

    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(Refusal::Missing);
    };
    let bytes = value.as_bytes();
    if bytes.len() > MAX_AUTHORIZATION_LENGTH {
        return Err(Refusal::TooLong(bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Refusal::NotUtf8)?;
    let (scheme, encoded) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
    if !scheme.eq_ignore_ascii_case("basic") {
        // Only the scheme's name, cut short, goes into the answer.
        let scheme: String = scheme
            .chars()
            .take(20)
            .filter(|c| !c.is_control())
            .collect();
        return Err(Refusal::WrongScheme(scheme));
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| Refusal::NotBase64)?;
    let decoded = String::from_utf8(decoded).map_err(|_| Refusal::NotUtf8)?;
    let (username, password) = decoded.split_once(':').ok_or(Refusal::NoColon)?;
    Ok(BasicCredentials {
        username: username.to_owned(),
        password: password.as_bytes().to_vec(),
    })
}

#[cfg(test)]
mod tests;
