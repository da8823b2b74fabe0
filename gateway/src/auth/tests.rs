use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine;
use rill_config::InitialUser;

use rill_protocol::value::UserRecord;

use super::throttle::Policy;
use super::*;

fn user(username: &str, password: &str) -> InitialUser {
    InitialUser {
        username: username.to_owned(),
        password: password.to_owned(),
        name: Some(format!("{username} (display)")),
        email: None,
    }
}

fn basic(username: &str, password: &str) -> HeaderMap {
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    authorization(&format!("Basic {encoded}"))
}

fn authorization(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(value).expect("header"),
    );
    headers
}

fn authenticator(policy: Policy) -> Authenticator {
    Authenticator::basic_with(
        &[user("demo", "demo"), user("jürgen", "pässwörd €")],
        policy,
    )
}

const SOURCE: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
const OTHER_SOURCE: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));

fn detail(error: ClientError) -> String {
    match error {
        ClientError::Unauthenticated { detail } => detail,
        other => panic!("expected Unauthenticated, got {other:?}"),
    }
}

#[tokio::test]
async fn right_credentials_give_the_user_including_non_ascii_passwords() {
    let auth = authenticator(Policy::default());
    let principal = auth
        .authenticate(&basic("demo", "demo"), SOURCE)
        .await
        .expect("valid");
    assert_eq!(principal.username.as_deref(), Some("demo"));
    assert_eq!(principal.name.as_deref(), Some("demo (display)"));
    let principal = auth
        .authenticate(&basic("jürgen", "pässwörd €"), SOURCE)
        .await
        .expect("valid UTF-8 credentials");
    assert_eq!(principal.username.as_deref(), Some("jürgen"));
    // A password may contain a colon: only the first one separates.
    let auth = Authenticator::basic_with(&[user("a", "b:c")], Policy::default());
    assert!(auth.authenticate(&basic("a", "b:c"), SOURCE).await.is_ok());
}

#[tokio::test]
async fn a_wrong_password_and_an_unknown_user_get_the_same_answer() {
    let auth = authenticator(Policy::default());
    let wrong_password = auth
        .authenticate(&basic("demo", "wrong"), SOURCE)
        .await
        .expect_err("refused");
    let unknown_user = auth
        .authenticate(&basic("nobody", "demo"), SOURCE)
        .await
        .expect_err("refused");
    assert_eq!(wrong_password, unknown_user);
    assert!(!detail(wrong_password).contains("demo"));
    // The same password bytes in another encoding are another password.
    assert!(
        auth.authenticate(&basic("jürgen", "passwort €"), SOURCE)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn malformed_headers_say_what_is_wrong_with_their_form() {
    let auth = authenticator(Policy::default());
    let cases = [
        (HeaderMap::new(), "has no credentials"),
        (
            authorization("Bearer abc.def.ghi"),
            "has the scheme `Bearer`",
        ),
        (authorization("Basic !!!"), "not valid base64"),
        (
            authorization(&format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("no-colon")
            )),
            "no `:` between",
        ),
        (
            authorization(&format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode([0xff, b':', 0xfe])
            )),
            "not UTF-8",
        ),
        (
            authorization(&format!("Basic {}", "A".repeat(MAX_AUTHORIZATION_LENGTH))),
            "at most 8192 are accepted",
        ),
    ];
    for (headers, expected) in cases {
        let detail = detail(
            auth.authenticate(&headers, SOURCE)
                .await
                .expect_err("refused"),
        );
        assert!(detail.contains(expected), "{detail:?} lacks {expected:?}");
        assert!(
            !detail.contains("abc.def"),
            "the credential is echoed: {detail}"
        );
    }
}

#[tokio::test]
async fn failed_logins_are_limited_per_source() {
    let auth = authenticator(Policy {
        max_failures: 3,
        window: Duration::from_secs(60),
        max_sources: 100,
    });
    for _ in 0..3 {
        auth.authenticate(&basic("demo", "guess"), SOURCE)
            .await
            .expect_err("wrong password");
    }
    // Now even the right password is not looked at from this source...
    match auth.authenticate(&basic("demo", "demo"), SOURCE).await {
        Err(ClientError::TooManyFailedLogins { retry_after }) => {
            assert!(retry_after <= Duration::from_secs(60) && !retry_after.is_zero());
        }
        other => panic!("expected a throttled login, got {other:?}"),
    }
    // ...while another source logs in.
    assert!(
        auth.authenticate(&basic("demo", "demo"), OTHER_SOURCE)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn the_window_of_failures_ends() {
    let auth = authenticator(Policy {
        max_failures: 1,
        window: Duration::from_millis(200),
        max_sources: 100,
    });
    let _ = auth.authenticate(&basic("demo", "guess"), SOURCE).await;
    assert!(matches!(
        auth.authenticate(&basic("demo", "demo"), SOURCE).await,
        Err(ClientError::TooManyFailedLogins { .. })
    ));
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(
        auth.authenticate(&basic("demo", "demo"), SOURCE)
            .await
            .is_ok()
    );
}

#[test]
fn the_table_of_sources_is_bounded() {
    let failures = throttle::FailedLogins::new(Policy {
        max_failures: 1,
        window: Duration::from_secs(60),
        max_sources: 3,
    });
    for i in 0..10u8 {
        failures.record(Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, i))));
    }
    let blocked = (0..10u8)
        .filter(|i| {
            failures
                .blocked(Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, *i))))
                .is_some()
        })
        .count();
    assert_eq!(blocked, 3, "only the latest sources are kept");
}

#[tokio::test]
async fn verified_credentials_are_cached_and_wrong_ones_are_not() {
    let users = Arc::new(BasicUsers::new(&[user("demo", "demo")]).expect("users"));
    assert!(users.verify("demo", b"demo".to_vec()).await.is_ok());
    assert!(users.is_cached("demo", b"demo"));
    assert_eq!(
        users.verify("demo", b"nope".to_vec()).await,
        Err(basic::Mismatch::WrongPassword)
    );
    assert!(!users.is_cached("demo", b"nope"));
    assert_eq!(
        users.verify("ghost", b"demo".to_vec()).await,
        Err(basic::Mismatch::UnknownUser)
    );
}

/// Replicated users as a map; `None` makes every lookup fail (no partition answers).
struct MapDirectory(parking_lot::Mutex<Option<std::collections::HashMap<String, UserRecord>>>);

impl UserDirectory for MapDirectory {
    fn lookup<'a>(
        &'a self,
        username: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Option<UserRecord>, ClientError>> {
        let answer = match &*self.0.lock() {
            Some(users) => Ok(users.get(username).cloned()),
            None => Err(ClientError::Unavailable {
                detail: "no leader".into(),
            }),
        };
        Box::pin(async move { answer })
    }
}

fn replicated(username: &str, password: &str) -> UserRecord {
    UserRecord {
        user_key: 1,
        username: username.into(),
        name: "Jane".into(),
        email: String::new(),
        password: hash_password(password).expect("hash"),
    }
}

#[tokio::test]
async fn the_replicated_users_decide_once_a_configured_user_is_seeded() {
    let users = Arc::new(BasicUsers::new(&[user("demo", "demo")]).expect("users"));
    let directory = Arc::new(MapDirectory(parking_lot::Mutex::new(Some(
        [("jane".to_owned(), replicated("jane", "jane-pw"))].into(),
    ))));
    users.attach(directory.clone());

    let jane = users
        .verify("jane", b"jane-pw".to_vec())
        .await
        .expect("jane");
    assert_eq!(jane.username.as_deref(), Some("jane"));
    assert_eq!(jane.name.as_deref(), Some("Jane"));
    assert_eq!(jane.email, None);
    assert_eq!(
        users.verify("jane", b"demo".to_vec()).await,
        Err(basic::Mismatch::WrongPassword)
    );

    // Not seeded yet: the configured user is accepted with its configured password.
    assert!(users.verify("demo", b"demo".to_vec()).await.is_ok());
    let seeds = users.unseeded();
    assert_eq!(seeds.len(), 1);
    assert!(seeds[0].password.0.starts_with("$argon2id$"));
    users.seeded("demo");
    assert!(users.unseeded().is_empty());
    users.forget("demo");
    // Seeded, and not in the replicated users (deleted): refused.
    assert_eq!(
        users.verify("demo", b"demo".to_vec()).await,
        Err(basic::Mismatch::UnknownUser)
    );

    // A changed password: the cached old one works until forgotten (or the bound).
    directory
        .0
        .lock()
        .as_mut()
        .unwrap()
        .insert("jane".into(), replicated("jane", "new-pw"));
    assert!(
        users.verify("jane", b"jane-pw".to_vec()).await.is_ok(),
        "cached"
    );
    users.forget("jane");
    assert_eq!(
        users.verify("jane", b"jane-pw".to_vec()).await,
        Err(basic::Mismatch::WrongPassword)
    );
    assert!(users.verify("jane", b"new-pw".to_vec()).await.is_ok());

    // A stored hash that cannot be read is no way in.
    let mut broken = replicated("bob", "bob-pw");
    broken.password = rill_protocol::value::PasswordHash("bob-pw".into());
    directory
        .0
        .lock()
        .as_mut()
        .unwrap()
        .insert("bob".into(), broken);
    assert!(users.verify("bob", b"bob-pw".to_vec()).await.is_err());

    // The replicated users unreadable: the configured users decide.
    *directory.0.lock() = None;
    assert!(users.verify("demo", b"demo".to_vec()).await.is_ok());
    assert!(users.verify("bob", b"bob-pw".to_vec()).await.is_err());
}

#[test]
fn the_challenge_names_the_realm_and_none_has_none() {
    let auth = authenticator(Policy::default());
    assert_eq!(
        auth.challenge(&HeaderMap::new()),
        Some(HeaderValue::from_static("Basic realm=\"rill\""))
    );
    assert!(auth.is_enabled());
    assert_eq!(Authenticator::none().challenge(&HeaderMap::new()), None);
    assert!(!Authenticator::none().is_enabled());
}

#[tokio::test]
async fn without_authentication_everyone_is_anonymous() {
    let principal = Authenticator::none()
        .authenticate(&HeaderMap::new(), None)
        .await
        .expect("open");
    assert_eq!(principal, Principal::anonymous());
}

#[tokio::test]
async fn oidc_with_an_unreachable_provider_does_not_start() {
    let mut security = rill_config::SecurityConfig::default();
    security.authentication.method = AuthenticationMethod::Oidc;
    // Nothing listens on the discard port.
    security.authentication.oidc.issuer_uri = Some("http://127.0.0.1:9/realms/rill".to_owned());
    security.authentication.oidc.audiences = vec!["rill-api".to_owned()];
    let error = Authenticator::from_config(&security)
        .await
        .err()
        .expect("refused");
    let text = error.to_string();
    assert!(
        text.contains("security.authentication.oidc.issuer-uri")
            && text.contains("http://127.0.0.1:9/realms/rill/.well-known/openid-configuration"),
        "{text}"
    );
}
