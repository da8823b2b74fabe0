//! `/v2/users`: users created, read, searched, changed and deleted through the REST
//! API over the real engine (three partitions: users are made on partition 1 and
//! distributed), bad input refused naming its field, no password or hash in any
//! answer; and basic authentication deciding from the replicated users.

use std::sync::Arc;
use std::time::Duration;

use rill_config::{AuthenticationMethod, InitialUser, SecurityConfig};
use rill_gateway::Authenticator;
use serde_json::{Value, json};

use crate::support::engine_backend::EngineBackend;
use crate::support::{Reply, TestGateway, test_config};

fn no_secret(reply: &Reply) {
    let text = reply.body.to_string();
    assert!(!text.contains("argon2"), "a hash in {text}");
    assert!(!text.contains("s3cret"), "a password in {text}");
    assert!(reply.body.get("password").is_none(), "{text}");
}

#[tokio::test]
async fn users_are_created_read_searched_changed_and_deleted() {
    let gateway = TestGateway::start(EngineBackend::new(3)).await;
    let created = gateway
        .post(
            "/v2/users",
            json!({"username": "jane", "password": "s3cret-jane", "name": "Jane Doe",
                   "email": "jane@example.com"}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(
        created.body,
        json!({"username": "jane", "name": "Jane Doe", "email": "jane@example.com"})
    );
    no_secret(&created);

    let taken = gateway
        .post(
            "/v2/users",
            json!({"username": "jane", "password": "s3cret-other"}),
        )
        .await;
    taken.assert_problem(409, "ALREADY_EXISTS", "/v2/users", &["'jane'"]);
    no_secret(&taken);

    let read = gateway.get("/v2/users/jane").await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body["email"], "jane@example.com");
    no_secret(&read);
    gateway.get("/v2/users/john").await.assert_problem(
        404,
        "NOT_FOUND",
        "/v2/users/john",
        &["'john'"],
    );

    for (username, name) in [("bob", "Bob"), ("alice", "Alice"), ("carol", "Jane Doe")] {
        let reply = gateway
            .post(
                "/v2/users",
                json!({"username": username, "password": "s3cret-x", "name": name}),
            )
            .await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
    }
    let found = gateway
        .post(
            "/v2/users/search",
            json!({"filter": {"name": "Jane Doe"}, "sort": [{"field": "username", "order": "DESC"}]}),
        )
        .await;
    assert_eq!(found.status, 200, "{:?}", found.body);
    let names: Vec<&str> = found.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["jane", "carol"]);
    assert_eq!(
        found.body["page"]["totalItems"], 2,
        "users are counted once"
    );
    no_secret(&found);
    let page = gateway
        .post(
            "/v2/users/search",
            json!({"sort": [{"field": "username"}], "page": {"limit": 2}}),
        )
        .await;
    assert_eq!(page.body["page"]["totalItems"], 4);
    let first: Vec<&str> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(first, vec!["alice", "bob"]);
    gateway
        .post("/v2/users/search", json!({"filter": {"password": "x"}}))
        .await
        .assert_problem(400, "INVALID_ARGUMENT", "/v2/users/search", &["password"]);

    let updated = gateway
        .put(
            "/v2/users/jane",
            json!({"name": "Jane Roe", "password": ""}),
        )
        .await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    assert_eq!(
        updated.body,
        json!({"username": "jane", "name": "Jane Roe", "email": "jane@example.com"})
    );
    assert_eq!(gateway.get("/v2/users/jane").await.body["name"], "Jane Roe");
    gateway
        .put("/v2/users/john", json!({"name": "John"}))
        .await
        .assert_problem(404, "NOT_FOUND", "/v2/users/john", &["'john'"]);

    let deleted = gateway
        .send_raw(reqwest::Method::DELETE, "/v2/users/jane", "")
        .await;
    assert_eq!(deleted.status, 204);
    assert_eq!(gateway.get("/v2/users/jane").await.status, 404);
    let again = gateway
        .send_raw(reqwest::Method::DELETE, "/v2/users/jane", "")
        .await;
    assert_eq!(again.status, 404);
    gateway.stop().await;
}

#[tokio::test]
async fn bad_user_input_is_refused_naming_the_field() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let long_password = "p".repeat(1025);
    let cases: Vec<(Value, &str)> = vec![
        (json!({"password": "s3cret"}), "username"),
        (
            json!({"username": "jane doe", "password": "s3cret"}),
            "username",
        ),
        (
            json!({"username": "jane:x", "password": "s3cret"}),
            "username",
        ),
        (
            json!({"username": "a".repeat(257), "password": "s3cret"}),
            "username",
        ),
        (json!({"username": "jane"}), "password"),
        (json!({"username": "jane", "password": ""}), "password"),
        (
            json!({"username": "jane", "password": long_password}),
            "password",
        ),
        (
            json!({"username": "jane", "password": "s3cret", "email": "jane"}),
            "email",
        ),
        (
            json!({"username": "jane", "password": "s3cret", "email": "a@b"}),
            "email",
        ),
        (
            json!({"username": "jane", "password": "s3cret", "nickname": "j"}),
            "nickname",
        ),
    ];
    for (body, field) in cases {
        let reply = gateway.post("/v2/users", body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {:?}", reply.body);
        let detail = reply.body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(field), "{body}: {detail}");
        assert!(
            !detail.contains("s3cret") && !detail.contains("ppppp"),
            "{detail}"
        );
    }
    gateway.get("/v2/users/jane%20doe").await.assert_problem(
        400,
        "INVALID_ARGUMENT",
        "/v2/users/jane%20doe",
        &["username"],
    );
    gateway
        .put("/v2/users/jane", json!({"email": "not-an-email"}))
        .await
        .assert_problem(400, "INVALID_ARGUMENT", "/v2/users/jane", &["email"]);
    // Nothing was created.
    assert_eq!(gateway.get("/v2/users/jane").await.status, 404);
    gateway.stop().await;
}

fn basic_authenticator() -> Arc<Authenticator> {
    let mut security = SecurityConfig::default();
    security.authentication.method = AuthenticationMethod::Basic;
    security.initialization.users = vec![InitialUser {
        username: "demo".to_owned(),
        password: "demo-s3cret".to_owned(),
        name: Some("Demo User".to_owned()),
        email: None,
    }];
    let authenticator = futures::executor::block_on(Authenticator::from_config(&security));
    Arc::new(authenticator.expect("valid security settings"))
}

async fn status_as(gateway: &TestGateway, username: &str, password: &str) -> u16 {
    gateway
        .client
        .get(gateway.url("/v2/authentication/me"))
        .basic_auth(username, Some(password))
        .send()
        .await
        .expect("answer")
        .status()
        .as_u16()
}

async fn send_as(
    gateway: &TestGateway,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> u16 {
    let mut request = gateway
        .client
        .request(method, gateway.url(path))
        .basic_auth("demo", Some("demo-s3cret"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.expect("answer").status().as_u16()
}

#[tokio::test]
async fn logins_are_checked_against_the_replicated_users() {
    let gateway =
        TestGateway::start_secured(EngineBackend::new(2), test_config(), basic_authenticator())
            .await;
    // The configured user is seeded into the replicated users at start.
    let mut seeded = false;
    for _ in 0..50 {
        if send_as(&gateway, reqwest::Method::GET, "/v2/users/demo", None).await == 200 {
            seeded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(seeded, "the configured user was not seeded");

    let created = send_as(
        &gateway,
        reqwest::Method::POST,
        "/v2/users",
        Some(json!({"username": "jane", "password": "jane-s3cret"})),
    )
    .await;
    assert_eq!(created, 201);
    assert_eq!(status_as(&gateway, "jane", "jane-s3cret").await, 200);
    assert_eq!(status_as(&gateway, "jane", "wrong").await, 401);

    // A changed password works at once on the gateway that changed it; the old one not.
    let changed = send_as(
        &gateway,
        reqwest::Method::PUT,
        "/v2/users/jane",
        Some(json!({"password": "jane-n3w"})),
    )
    .await;
    assert_eq!(changed, 200);
    assert_eq!(status_as(&gateway, "jane", "jane-s3cret").await, 401);
    assert_eq!(status_as(&gateway, "jane", "jane-n3w").await, 200);

    let deleted = send_as(&gateway, reqwest::Method::DELETE, "/v2/users/jane", None).await;
    assert_eq!(deleted, 204);
    assert_eq!(status_as(&gateway, "jane", "jane-n3w").await, 401);

    // Once seeded, the configuration no longer decides: a deleted configured user is
    // refused.
    let gone = send_as(&gateway, reqwest::Method::DELETE, "/v2/users/demo", None).await;
    assert_eq!(gone, 204);
    assert_eq!(status_as(&gateway, "demo", "demo-s3cret").await, 401);
    gateway.stop().await;
}
