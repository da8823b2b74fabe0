//! Authentication on the real `rill standalone` binary, with basic authentication and a
//! user from the configuration: REST and gRPC with and without credentials, malformed
//! and oversized headers, a wrong password, the management port, and the rate limit on
//! failed logins. Also: the warning of an open node; users made through `/v2/users`
//! logging in on every broker of a cluster. OIDC is tested in `oidc.rs`.

mod support;

use std::time::Duration;

use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::{ActivateJobsRequest, TopologyRequest};
use support::{Brokers, Standalone};
use tonic::Code;

const PASSWORD: &str = "pässwörd";
/// `demo:pässwörd`, UTF-8, base64.
const CREDENTIALS: &str = "Basic ZGVtbzpww6Rzc3fDtnJk";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn basic_settings() -> Vec<String> {
    vec![
        "security.authentication.method=basic".to_owned(),
        "security.initialization.users.0.username=demo".to_owned(),
        format!("security.initialization.users.0.password={PASSWORD}"),
        "security.initialization.users.0.name=Demo User".to_owned(),
    ]
}

async fn problem(response: reqwest::Response) -> (u16, Option<String>, serde_json::Value) {
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.json().await.unwrap_or_default();
    (status, challenge, body)
}

#[test]
fn basic_authentication_guards_rest_grpc_and_the_management_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = basic_settings();
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &settings);
        // The probes stay open.
        rill.wait_ready(Duration::from_secs(30)).await;
        let http = reqwest::Client::new();
        let rest = rill.rest();

        // REST without credentials: 401 with the challenge, and the status stays public.
        let (status, challenge, body) = problem(
            http.get(format!("{rest}/v2/topology"))
                .send()
                .await
                .expect("answer"),
        )
        .await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(challenge.as_deref(), Some("Basic realm=\"rill\""));
        assert_eq!(body["title"], "UNAUTHORIZED");
        let status = http
            .get(format!("{rest}/v2/status"))
            .send()
            .await
            .expect("answer");
        assert_eq!(status.status().as_u16(), 204);

        // With credentials (a non-ASCII password), the API works and knows the caller.
        let deploy = support::deployment_request(&http, &rest, "two-rest-calls.bpmn")
            .basic_auth("demo", Some(PASSWORD))
            .send()
            .await
            .expect("answer");
        assert_eq!(deploy.status().as_u16(), 200, "{:?}", deploy.text().await);
        let me: serde_json::Value = http
            .get(format!("{rest}/v2/authentication/me"))
            .basic_auth("demo", Some(PASSWORD))
            .send()
            .await
            .expect("answer")
            .json()
            .await
            .expect("JSON");
        assert_eq!(me["username"], "demo");
        assert_eq!(me["displayName"], "Demo User");

        // Malformed and oversized headers say what is wrong with their form.
        for (header, expected) in [
            ("Basic %%%".to_owned(), "not valid base64"),
            ("Bearer abc".to_owned(), "scheme `Bearer`"),
            (format!("Basic {}", "A".repeat(9000)), "at most 8192"),
        ] {
            let (status, challenge, body) = problem(
                http.get(format!("{rest}/v2/topology"))
                    .header("authorization", header)
                    .send()
                    .await
                    .expect("answer"),
            )
            .await;
            assert_eq!(status, 401, "{body}");
            assert!(challenge.is_some());
            let detail = body["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(expected), "{detail:?} lacks {expected:?}");
        }

        // A wrong password and an unknown user get the same answer; the log says why,
        // without the secret.
        let (_, _, wrong_password) = problem(
            http.get(format!("{rest}/v2/topology"))
                .basic_auth("demo", Some("not-the-password"))
                .send()
                .await
                .expect("answer"),
        )
        .await;
        let (status, _, unknown_user) = problem(
            http.get(format!("{rest}/v2/topology"))
                .basic_auth("mallory", Some("not-the-password"))
                .send()
                .await
                .expect("answer"),
        )
        .await;
        assert_eq!(status, 401);
        assert_eq!(wrong_password["detail"], unknown_user["detail"]);
        let log = rill
            .wait_log(Duration::from_secs(5), |log| log.contains("no such user"))
            .await;
        assert!(log.contains("wrong password"), "{log}");
        assert!(
            !log.contains("not-the-password"),
            "a password reached the log"
        );
        assert!(!log.contains(PASSWORD), "a password reached the log");

        // gRPC: the `authorization` metadata, and UNAUTHENTICATED without it.
        let channel = tonic::transport::Endpoint::from_shared(rill.grpc())
            .expect("endpoint")
            .connect()
            .await
            .expect("connect");
        let mut grpc = GatewayClient::new(channel.clone());
        let refused = grpc
            .topology(TopologyRequest {})
            .await
            .expect_err("no credentials");
        assert_eq!(refused.code(), Code::Unauthenticated);
        let mut request = tonic::Request::new(TopologyRequest {});
        request
            .metadata_mut()
            .insert("authorization", CREDENTIALS.parse().expect("metadata"));
        let topology = grpc.topology(request).await.expect("authenticated");
        assert_eq!(topology.into_inner().brokers.len(), 1);
        let mut activate = tonic::Request::new(ActivateJobsRequest {
            r#type: "nothing-here".to_owned(),
            worker: "w".to_owned(),
            timeout: 1000,
            max_jobs_to_activate: 1,
            request_timeout: 100,
            ..Default::default()
        });
        activate
            .metadata_mut()
            .insert("authorization", CREDENTIALS.parse().expect("metadata"));
        let mut stream = grpc
            .activate_jobs(activate)
            .await
            .expect("authenticated stream")
            .into_inner();
        while let Some(batch) = stream.message().await.expect("stream") {
            assert!(batch.jobs.is_empty());
        }

        // The management API needs the same credentials; probes and metrics do not.
        let monitoring = rill.monitoring();
        let (status, challenge, _) = problem(
            http.get(format!("{monitoring}/actuator/cluster"))
                .send()
                .await
                .expect("answer"),
        )
        .await;
        assert_eq!(status, 401);
        assert!(challenge.is_some());
        let patch = http
            .patch(format!("{monitoring}/actuator/cluster"))
            .json(&serde_json::json!({"brokers": {"add": [1]}}))
            .send()
            .await
            .expect("answer");
        assert_eq!(patch.status().as_u16(), 401);
        // The backup API too, for every method.
        for request in [
            http.get(format!("{monitoring}/actuator/backups")),
            http.get(format!("{monitoring}/actuator/backups/1")),
            http.post(format!("{monitoring}/actuator/backups"))
                .json(&serde_json::json!({"backupId": 1})),
            http.delete(format!("{monitoring}/actuator/backups/1")),
        ] {
            let answer = request.send().await.expect("answer");
            assert_eq!(answer.status().as_u16(), 401, "{:?}", answer.url());
        }
        let backups = http
            .get(format!("{monitoring}/actuator/backups"))
            .basic_auth("demo", Some(PASSWORD))
            .send()
            .await
            .expect("answer");
        // No store configured: refused, but past the guard.
        assert_eq!(backups.status().as_u16(), 400);
        let cluster = http
            .get(format!("{monitoring}/actuator/cluster"))
            .basic_auth("demo", Some(PASSWORD))
            .send()
            .await
            .expect("answer");
        assert_eq!(cluster.status().as_u16(), 200);
        // `rill cluster status` sends RILL_USERNAME and RILL_PASSWORD.
        let cluster_status = |credentials: bool| {
            let mut command = std::process::Command::new(support::rill_binary());
            command.args(["cluster", "status", "--management", &monitoring]);
            command
                .env_remove("RILL_USERNAME")
                .env_remove("RILL_PASSWORD");
            if credentials {
                command
                    .env("RILL_USERNAME", "demo")
                    .env("RILL_PASSWORD", PASSWORD);
            }
            command.output().expect("run rill cluster status")
        };
        let refused = cluster_status(false);
        assert!(!refused.status.success());
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains("401"),
            "{refused:?}"
        );
        let shown = cluster_status(true);
        assert!(shown.status.success(), "{shown:?}");
        for open in ["/metrics", "/ready", "/health", "/startup"] {
            let answer = http
                .get(format!("{monitoring}{open}"))
                .send()
                .await
                .expect("answer");
            assert_eq!(answer.status().as_u16(), 200, "{open}");
        }

        // Failed logins from one source are limited: after ten, even the right
        // password waits (429 with Retry-After; RESOURCE_EXHAUSTED on gRPC).
        for _ in 0..10 {
            let _ = http
                .get(format!("{rest}/v2/topology"))
                .basic_auth("demo", Some("guess"))
                .send()
                .await
                .expect("answer");
        }
        let throttled = http
            .get(format!("{rest}/v2/topology"))
            .basic_auth("demo", Some(PASSWORD))
            .send()
            .await
            .expect("answer");
        assert_eq!(throttled.status().as_u16(), 429);
        assert!(throttled.headers().contains_key("retry-after"));
        let mut request = tonic::Request::new(TopologyRequest {});
        request
            .metadata_mut()
            .insert("authorization", CREDENTIALS.parse().expect("metadata"));
        let status = grpc.topology(request).await.expect_err("throttled");
        assert_eq!(status.code(), Code::ResourceExhausted);
        rill.terminate(Duration::from_secs(20));
    });
}

#[test]
fn an_open_node_on_a_public_address_warns() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut open = Standalone::start(&dir.path().join("open"), &["gateway.host=0.0.0.0"]);
        open.wait_ready(Duration::from_secs(30)).await;
        let log = open
            .wait_log(Duration::from_secs(5), |log| {
                log.contains("security.authentication.method")
            })
            .await;
        assert!(log.contains("gateway.host"), "{log}");
        assert!(
            !log.contains("monitoring.host = 127.0.0.1 accepts"),
            "{log}"
        );
        open.terminate(Duration::from_secs(20));
    });
}

/// Camunda's Python SDK (`camunda-orchestration-sdk`, unmodified) with
/// `CAMUNDA_AUTH_STRATEGY=BASIC`, as its README shows, runs its whole flow against a
/// standalone with basic authentication.
#[test]
fn the_camunda_python_sdk_authenticates_with_basic() {
    let settings = basic_settings();
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    support::run_client_script_with(
        "python/run.sh",
        "RILL_PY_VENV",
        "python-clients",
        &settings,
        &[
            ("RILL_CLIENT_USERNAME", "demo"),
            ("RILL_CLIENT_PASSWORD", PASSWORD),
        ],
    );
}

/// Camunda's npm SDK (`@camunda8/orchestration-cluster-api`, unmodified) with
/// `CAMUNDA_AUTH_STRATEGY=BASIC` runs its whole flow against basic authentication.
#[test]
fn the_camunda_npm_sdk_authenticates_with_basic() {
    let settings = basic_settings();
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    support::run_client_script_with(
        "node/run.sh",
        "RILL_NODE_DIR",
        "node-clients",
        &settings,
        &[
            ("RILL_CLIENT_USERNAME", "demo"),
            ("RILL_CLIENT_PASSWORD", PASSWORD),
        ],
    );
}

/// `GET /v2/authentication/me` as `username`: the status.
async fn login_status(http: &reqwest::Client, rest: &str, username: &str, password: &str) -> u16 {
    http.get(format!("{rest}/v2/authentication/me"))
        .basic_auth(username, Some(password))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

/// Users made through `/v2/users` are replicated: a user created on one broker's gateway
/// logs in on every broker, survives a restart, and once deleted is refused everywhere
/// within the credential cache's bound (10 s). The password and its hash appear in no
/// answer, exported record or log line.
#[test]
fn users_created_through_the_api_log_in_on_every_broker() {
    const JANE: &str = "jane-s3cret-pw";
    let dir = tempfile::tempdir().expect("tempdir");
    let exports: Vec<std::path::PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("records-{i}.jsonl")))
        .collect();
    let settings = basic_settings();
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    runtime().block_on(async {
        let mut brokers = Brokers::start_with(dir.path(), 3, 2, 3, &settings, |i| {
            vec![
                format!("exporters.jsonl.path={}", exports[i as usize].display()),
                "exporters.jsonl.flush-delay=100ms".to_owned(),
            ]
        });
        brokers.wait_ready(Duration::from_secs(90)).await;
        let http = reqwest::Client::new();
        let rests: Vec<String> = brokers.nodes.iter().map(|n| n.rest()).collect();

        // The configured user is seeded into the replicated users at start (every broker
        // tries; one creates it).
        let mut seeded = false;
        for _ in 0..150 {
            let reply = http
                .get(format!("{}/v2/users/demo", rests[0]))
                .basic_auth("demo", Some(PASSWORD))
                .send()
                .await;
            if reply.is_ok_and(|r| r.status().as_u16() == 200) {
                seeded = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(seeded, "demo was not seeded:\n{}", brokers.logs());

        let created = http
            .post(format!("{}/v2/users", rests[0]))
            .basic_auth("demo", Some(PASSWORD))
            .json(&serde_json::json!({"username": "jane", "password": JANE, "name": "Jane Doe"}))
            .send()
            .await
            .expect("answer");
        assert_eq!(created.status().as_u16(), 201);
        let created = created.text().await.expect("body");
        assert!(
            !created.contains(JANE) && !created.contains("argon2"),
            "{created}"
        );

        for rest in &rests {
            assert_eq!(login_status(&http, rest, "jane", JANE).await, 200, "{rest}");
            assert_eq!(
                login_status(&http, rest, "jane", "wrong").await,
                401,
                "{rest}"
            );
        }
        let search = http
            .post(format!("{}/v2/users/search", rests[1]))
            .basic_auth("jane", Some(JANE))
            .json(&serde_json::json!({"sort": [{"field": "username"}]}))
            .send()
            .await
            .expect("answer")
            .text()
            .await
            .expect("body");
        assert!(
            search.contains("\"jane\"") && search.contains("\"demo\""),
            "{search}"
        );
        assert!(
            !search.contains("argon2") && !search.contains(JANE),
            "{search}"
        );

        // A restart keeps the user.
        let mut logs = brokers.logs();
        brokers.nodes[0].restart();
        brokers.wait_ready(Duration::from_secs(90)).await;
        let mut back = false;
        for _ in 0..100 {
            if login_status(&http, &rests[0], "jane", JANE).await == 200 {
                back = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(
            back,
            "jane cannot log in after the restart:\n{}",
            brokers.logs()
        );

        // Deleted through broker 1: refused there at once; on brokers 0 and 2 (which
        // have the credentials cached) within the cache's bound, 10 s after the delete.
        assert_eq!(login_status(&http, &rests[2], "jane", JANE).await, 200);
        let deleted = http
            .delete(format!("{}/v2/users/jane", rests[1]))
            .basic_auth("demo", Some(PASSWORD))
            .send()
            .await
            .expect("answer");
        assert_eq!(deleted.status().as_u16(), 204);
        let at = std::time::Instant::now();
        assert_eq!(login_status(&http, &rests[1], "jane", JANE).await, 401);
        for broker in [0, 2] {
            loop {
                if login_status(&http, &rests[broker], "jane", JANE).await == 401 {
                    break;
                }
                assert!(
                    at.elapsed() < Duration::from_secs(13),
                    "a deleted user still logs in on broker {broker} after {:?}",
                    at.elapsed()
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }

        // No secret in the exported records or the logs. The user's records are there.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        logs.push_str(&brokers.logs());
        let mut user_records = 0;
        for export in &exports {
            let text = std::fs::read_to_string(export).unwrap_or_default();
            assert!(
                !text.contains("argon2") && !text.contains(JANE),
                "{}",
                export.display()
            );
            user_records += text
                .lines()
                .filter(|l| l.contains("\"valueType\":\"USER\"") && l.contains("\"jane\""))
                .count();
        }
        assert!(user_records > 0, "no USER record of jane was exported");
        assert!(
            !logs.contains("argon2") && !logs.contains(JANE),
            "a secret in the logs"
        );
        for node in &mut brokers.nodes {
            node.terminate(Duration::from_secs(10));
        }
    });
}
