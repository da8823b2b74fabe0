//! With authentication on, every route the REST router registers and every method of
//! the gRPC Gateway service answers 401 / UNAUTHENTICATED to a request without
//! credentials; only `/v2/status` is public. The routes are read from the router's
//! source and the methods from `gateway.proto`, so a route or method added later without
//! the check fails here.

use std::sync::Arc;

use rill_config::{AuthenticationMethod, GatewayConfig, InitialUser, SecurityConfig};
use rill_gateway::{Authenticator, GatewayMetrics, GatewayServer};
use tokio::sync::oneshot;

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, test_config};

const ROUTER_SOURCE: &str = include_str!("../../src/rest/mod.rs");
const GATEWAY_PROTO: &str = include_str!("../../proto/gateway.proto");
const METHODS: &[&str] = &["get", "post", "put", "patch", "delete"];

fn basic_authenticator() -> Arc<Authenticator> {
    let mut security = SecurityConfig::default();
    security.authentication.method = AuthenticationMethod::Basic;
    security.initialization.users = vec![InitialUser {
        username: "demo".to_owned(),
        password: "démo-pässword".to_owned(),
        name: Some("Demo User".to_owned()),
        email: Some("demo@example.com".to_owned()),
    }];
    let authenticator = futures::executor::block_on(Authenticator::from_config(&security));
    Arc::new(authenticator.expect("valid security settings"))
}

/// Every `(method, path)` that `routes()` registers, path parameters filled in.
fn registered_routes() -> Vec<(String, String)> {
    let start = ROUTER_SOURCE
        .find("pub fn routes()")
        .expect("rest/mod.rs defines routes()");
    let body = &ROUTER_SOURCE[start..];
    let body = &body[..body.find("\n}\n").expect("the end of routes()")];
    let mut routes = Vec::new();
    for registration in body.split(".route(").skip(1) {
        let path = registration
            .split('"')
            .nth(1)
            .expect("a route's path is its first string");
        let concrete = path
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "1"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let mut found = false;
        for method in METHODS {
            let call = format!("{method}(");
            let named = registration.match_indices(&call).any(|(at, _)| {
                registration[..at]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            });
            if named {
                routes.push((method.to_ascii_uppercase(), concrete.clone()));
                found = true;
            }
        }
        assert!(found, "no method found for route {path}");
    }
    routes
}

#[test]
fn the_router_registers_its_routes_in_one_place() {
    // The walk below reads `routes()`; a route registered elsewhere would escape it.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut stack = vec![std::path::PathBuf::from(dir)];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(
                std::fs::read_dir(&path)
                    .expect("dir")
                    .map(|e| e.expect("entry").path()),
            );
            continue;
        }
        let name = path.to_string_lossy().into_owned();
        if name.ends_with("rest/mod.rs") || name.contains("test") || !name.ends_with(".rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        assert!(
            !text.contains(".route(") && !text.contains(".nest("),
            "{name} registers a route outside rest::routes()"
        );
    }
    assert!(registered_routes().len() > 50);
}

#[tokio::test]
async fn every_rest_route_but_the_status_answers_401_without_credentials() {
    let gateway =
        TestGateway::start_secured(EngineBackend::new(1), test_config(), basic_authenticator())
            .await;
    let routes = registered_routes();
    let mut checked = 0;
    for (method, path) in &routes {
        let url = format!("{}{path}", gateway.base);
        let request = gateway
            .client
            .request(method.parse().expect("method"), &url)
            .header("content-type", "application/json")
            .body("{}");
        let response = request.send().await.expect("answer");
        if path == "/v2/status" {
            assert_ne!(response.status(), 401, "{method} {path} is public");
            continue;
        }
        assert_eq!(response.status(), 401, "{method} {path}");
        assert_eq!(
            response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok()),
            Some("Basic realm=\"rill\""),
            "{method} {path}"
        );
        let body: serde_json::Value = response.json().await.expect("a problem");
        assert_eq!(body["title"], "UNAUTHORIZED", "{method} {path}");
        assert_eq!(body["instance"], path.as_str(), "{method} {path}");
        checked += 1;
    }
    assert_eq!(checked, routes.len() - 1);
    // A path no route knows answers 401 too: nothing tells which paths exist.
    let unknown = gateway
        .client
        .get(format!("{}/v2/no-such-thing", gateway.base))
        .send()
        .await
        .expect("answer");
    assert_eq!(unknown.status(), 401);
}

#[tokio::test]
async fn the_caller_is_known_with_credentials() {
    let gateway =
        TestGateway::start_secured(EngineBackend::new(1), test_config(), basic_authenticator())
            .await;
    let me = gateway
        .client
        .get(format!("{}/v2/authentication/me", gateway.base))
        .basic_auth("demo", Some("démo-pässword"))
        .send()
        .await
        .expect("answer");
    assert_eq!(me.status(), 200);
    let me: serde_json::Value = me.json().await.expect("JSON");
    assert_eq!(me["username"], "demo");
    assert_eq!(me["displayName"], "Demo User");
    assert_eq!(me["email"], "demo@example.com");
    for list in ["authorizedComponents", "tenants", "groups", "roles"] {
        assert!(me[list].is_array(), "{list}: {me}");
    }
    assert_eq!(me["canLogout"], false);
    assert!(me["c8Links"].is_object());
    // With credentials, a route does its work.
    let topology = gateway
        .client
        .get(format!("{}/v2/topology", gateway.base))
        .basic_auth("demo", Some("démo-pässword"))
        .send()
        .await
        .expect("answer");
    assert_eq!(topology.status(), 200);
    let wrong = gateway
        .client
        .get(format!("{}/v2/topology", gateway.base))
        .basic_auth("demo", Some("demo-password"))
        .send()
        .await
        .expect("answer");
    assert_eq!(wrong.status(), 401);
}

#[tokio::test]
async fn without_authentication_the_caller_is_anonymous() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let me: serde_json::Value = gateway
        .client
        .get(format!("{}/v2/authentication/me", gateway.base))
        .send()
        .await
        .expect("answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(me["username"], serde_json::Value::Null);
}

/// Every rpc of `service Gateway` in `gateway.proto`.
fn gateway_methods() -> Vec<String> {
    let service = &GATEWAY_PROTO[GATEWAY_PROTO
        .find("service Gateway")
        .expect("the Gateway service")..];
    service
        .lines()
        .filter_map(|line| line.trim().strip_prefix("rpc "))
        .map(|rest| rest.split('(').next().expect("name").trim().to_owned())
        .collect()
}

#[tokio::test]
async fn every_grpc_method_answers_unauthenticated_without_credentials() {
    let config = GatewayConfig {
        grpc_port: 0,
        ..test_config()
    };
    let registry = prometheus::Registry::new();
    let metrics = GatewayMetrics::register(&registry).expect("metrics");
    let server = GatewayServer::bind(
        &config,
        basic_authenticator(),
        EngineBackend::new(1),
        metrics,
    )
    .await
    .expect("bind");
    let address = server.grpc_addr().expect("address");
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let methods = gateway_methods();
    assert!(methods.len() >= 20, "{methods:?}");
    for (i, method) in methods.iter().enumerate() {
        // Wrong credentials count as failed logins, which are limited per source: a few
        // methods try them, every method goes without.
        let wrong = (i < 5).then_some("Basic ZGVtbzp3cm9uZw==");
        for credentials in std::iter::once(None).chain(wrong.map(Some)) {
            let mut client = tonic::client::Grpc::new(channel.clone());
            client.ready().await.expect("ready");
            let mut request = tonic::Request::new(());
            if let Some(value) = credentials {
                request
                    .metadata_mut()
                    .insert("authorization", value.parse().expect("metadata"));
            }
            let path = format!("/gateway_protocol.Gateway/{method}")
                .parse()
                .expect("path");
            let codec = tonic_prost::ProstCodec::<(), ()>::default();
            let status = client
                .unary(request, path, codec)
                .await
                .expect_err("refused");
            assert_eq!(
                status.code(),
                tonic::Code::Unauthenticated,
                "{method} with {credentials:?}: {status:?}"
            );
        }
    }
    // Health checks stay open for probes.
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let answer = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "gateway_protocol.Gateway".to_owned(),
        })
        .await
        .expect("health is public");
    assert_eq!(answer.into_inner().status, 1);
    let _ = stop.send(());
    serving.await.expect("joined").expect("served");
}
