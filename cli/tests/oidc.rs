//! OIDC authentication on the real `rill standalone` binary, against a real OpenID
//! provider (npm `oidc-provider`, run by `tests/clients/oidc-provider/run.sh`) that
//! issues client-credentials JWTs. Every token Rill accepts here comes from the
//! provider. The provider cannot issue a token that is not yet valid, unsigned or
//! HMAC-signed, so those few are made by the test from a real token's claims, signed
//! with the provider's own key (the test wrote its key file).
//!
//! Also here: Camunda's REST SDKs (Python and npm) and Zeebe's gRPC clients (pyzeebe,
//! `@camunda8/sdk`) authenticating with OAuth client credentials, unmodified, and a
//! three-broker cluster with oidc.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use rill_gateway::grpc::proto::gateway_client::GatewayClient;
use rill_gateway::grpc::proto::{StreamActivatedJobsRequest, TopologyRequest};
use serde_json::{Value, json};
use support::{Standalone, free_port};
use tonic::Code;

const AUDIENCE: &str = "rill-api";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn provider_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/oidc-provider/run.sh")
}

fn install_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("oidc-provider")
}

/// A new RS256 key in `dir`: the private JWK for the provider, PKCS#8 for the test.
struct SigningKey {
    file: PathBuf,
    pkcs8: Vec<u8>,
}

impl SigningKey {
    fn generate(dir: &Path, kid: &str) -> SigningKey {
        let file = dir.join(format!("{kid}.json"));
        let output = Command::new("bash")
            .arg(provider_script())
            .args(["keys", file.to_str().expect("path"), kid])
            .env("RILL_OIDC_DIR", install_dir())
            .output()
            .expect("run the provider's key script (needs bash and node)");
        assert!(output.status.success(), "keys.mjs failed: {output:?}");
        let written: Value =
            serde_json::from_slice(&std::fs::read(&file).expect("key file")).expect("JSON");
        let pkcs8 = base64::engine::general_purpose::STANDARD
            .decode(written["pkcs8"].as_str().expect("pkcs8"))
            .expect("base64");
        SigningKey { file, pkcs8 }
    }

    /// `header.claims` signed with RS256.
    fn sign(&self, header: &Value, claims: &Value) -> String {
        let pair = ring::signature::RsaKeyPair::from_pkcs8(&self.pkcs8).expect("RSA key");
        let signed = format!("{}.{}", b64(header), b64(claims));
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signed.as_bytes(),
            &mut signature,
        )
        .expect("sign");
        format!(
            "{signed}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature)
        )
    }
}

fn b64(value: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
}

/// A token's header and claims, decoded.
fn decode(token: &str) -> (Value, Value) {
    let mut parts = token.split('.').map(|part| {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .expect("base64url");
        serde_json::from_slice::<Value>(&bytes).expect("JSON")
    });
    (parts.next().expect("header"), parts.next().expect("claims"))
}

/// A running provider, stopped when dropped.
struct Provider {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Provider {
    fn start(dir: &Path, port: u16, keys: &[&SigningKey]) -> Provider {
        let log = dir.join(format!("provider-{port}-{}.log", keys.len()));
        let mut command = Command::new("bash");
        command
            .arg(provider_script())
            .args(["provider", &port.to_string()])
            .args(keys.iter().map(|key| key.file.as_os_str()))
            .env("RILL_OIDC_DIR", install_dir())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(std::fs::File::create(log.with_extension("err")).expect("log"));
        let child = command
            .spawn()
            .expect("start the provider (needs bash and node)");
        let mut provider = Provider { child, port, log };
        // An install on a cold npm cache is bounded by run.sh (600 s).
        let deadline = std::time::Instant::now() + Duration::from_secs(620);
        while !provider.log_text().contains("issuer http://") {
            if let Ok(Some(status)) = provider.child.try_wait() {
                panic!(
                    "the provider exited ({status}): {}\n{}",
                    provider.log_text(),
                    std::fs::read_to_string(provider.log.with_extension("err")).unwrap_or_default()
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the provider did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        provider
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn token_url(&self) -> String {
        format!("{}/token", self.issuer())
    }

    /// A client-credentials access token for `client` (secret: id + "-secret"),
    /// optionally for another resource than Rill's.
    async fn token(&self, client: &str, resource: Option<&str>) -> String {
        let secret = format!("{client}-secret");
        let mut form = vec![("grant_type", "client_credentials")];
        let request = reqwest::Client::new().post(self.token_url());
        let request = if client == "rill-client-basic" {
            request.basic_auth(client, Some(&secret))
        } else {
            form.push(("client_id", client));
            form.push(("client_secret", secret.as_str()));
            request
        };
        if let Some(resource) = resource {
            form.push(("resource", resource));
        }
        let answer: Value = request
            .form(&form)
            .send()
            .await
            .expect("token request")
            .json()
            .await
            .expect("token JSON");
        answer["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {answer}"))
            .to_owned()
    }
}

impl Provider {
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop();
    }
}

fn oidc_settings(provider: &Provider) -> Vec<String> {
    vec![
        "security.authentication.method=oidc".to_owned(),
        format!(
            "security.authentication.oidc.issuer-uri={}",
            provider.issuer()
        ),
        format!("security.authentication.oidc.audiences={AUDIENCE}"),
        "security.authentication.oidc.client-id-claim=client_id".to_owned(),
        "security.authentication.oidc.groups-claim=groups".to_owned(),
        "security.authentication.oidc.clock-skew=1s".to_owned(),
    ]
}

/// Status, `WWW-Authenticate` and problem detail of a REST answer.
async fn answer(response: reqwest::Response) -> (u16, Option<String>, String) {
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: Value = response.json().await.unwrap_or_default();
    let detail = body["detail"].as_str().unwrap_or_default().to_owned();
    (status, challenge, detail)
}

fn grpc_request<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("metadata"),
    );
    request
}

const INVALID_TOKEN: &str = "Bearer realm=\"rill\", error=\"invalid_token\"";

#[test]
fn tokens_of_a_real_provider_guard_rest_grpc_and_the_management_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first_key = SigningKey::generate(dir.path(), "first-key");
    let second_key = SigningKey::generate(dir.path(), "second-key");
    let port = free_port();
    let mut provider = Provider::start(dir.path(), port, &[&first_key]);
    // Another provider with the same key: its tokens differ only in their issuer.
    let elsewhere = Provider::start(dir.path(), free_port(), &[&first_key]);
    let settings = oidc_settings(&provider);
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &settings);
        rill.wait_ready(Duration::from_secs(30)).await;
        let http = reqwest::Client::new();
        let rest = rill.rest();
        let get = |path: &str, token: Option<&str>| {
            let request = http.get(format!("{rest}{path}"));
            match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            }
        };

        // Without a token: 401 with the bare challenge; the status stays public.
        let (status, challenge, detail) =
            answer(get("/v2/topology", None).send().await.unwrap()).await;
        assert_eq!(status, 401, "{detail}");
        assert_eq!(challenge.as_deref(), Some("Bearer realm=\"rill\""));
        assert!(detail.contains("bearer token"), "{detail}");
        let status = get("/v2/status", None).send().await.unwrap().status();
        assert_eq!(status.as_u16(), 204);

        // A token from the provider (client_secret_post): the API works and knows the
        // caller: the client (no `sub`-less token here: sub is the client) and its groups.
        let token = provider.token("rill-client", None).await;
        let (header, claims) = decode(&token);
        assert_eq!(header["kid"], "first-key", "{header}");
        assert_eq!(claims["aud"], AUDIENCE, "{claims}");
        let me: Value = get("/v2/authentication/me", Some(&token))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .expect("JSON");
        assert_eq!(me["username"], "rill-client", "{me}");
        assert_eq!(me["groups"], json!(["engineers"]), "{me}");
        let deploy = support::deployment_request(&http, &rest, "two-rest-calls.bpmn")
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(deploy.status().as_u16(), 200, "{:?}", deploy.text().await);
        // A client authenticating with client_secret_basic gets a token as good.
        let basic_client_token = provider.token("rill-client-basic", None).await;
        let me: Value = get("/v2/authentication/me", Some(&basic_client_token))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .expect("JSON");
        assert_eq!(me["username"], "rill-client-basic", "{me}");

        // gRPC: the `authorization` metadata.
        let channel = tonic::transport::Endpoint::from_shared(rill.grpc())
            .expect("endpoint")
            .connect()
            .await
            .expect("connect");
        let mut grpc = GatewayClient::new(channel);
        let refused = grpc
            .topology(TopologyRequest {})
            .await
            .expect_err("no token");
        assert_eq!(refused.code(), Code::Unauthenticated);
        let topology = grpc
            .topology(grpc_request(TopologyRequest {}, &token))
            .await
            .expect("authenticated");
        assert_eq!(topology.into_inner().brokers.len(), 1);

        // The management API needs a token too; the probes do not.
        let monitoring = rill.monitoring();
        let cluster = |token: Option<&str>| {
            let request = http.get(format!("{monitoring}/actuator/cluster"));
            match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            }
        };
        assert_eq!(cluster(None).send().await.unwrap().status().as_u16(), 401);
        assert_eq!(
            cluster(Some(&token))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
            200
        );
        let ready = http
            .get(format!("{monitoring}/ready"))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status().as_u16(), 200);
        // `rill cluster status` sends RILL_TOKEN, or gets a token itself with OAuth
        // client credentials (RILL_CLIENT_ID, RILL_CLIENT_SECRET, RILL_OAUTH_URL).
        let cluster_status = |env: &[(&str, &str)]| {
            let mut command = Command::new(support::rill_binary());
            command
                .args(["cluster", "status", "--management", &monitoring])
                .env_remove("RILL_USERNAME")
                .env_remove("RILL_PASSWORD")
                .env_remove("RILL_TOKEN")
                .env_remove("RILL_CLIENT_ID")
                .env_remove("RILL_CLIENT_SECRET")
                .env_remove("RILL_OAUTH_URL")
                .env_remove("RILL_TOKEN_AUDIENCE")
                .envs(env.iter().copied());
            command.output().expect("run rill cluster status")
        };
        let refused = cluster_status(&[]);
        assert!(
            !refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("401"),
            "{refused:?}"
        );
        let shown = cluster_status(&[("RILL_TOKEN", &token)]);
        assert!(shown.status.success(), "{shown:?}");
        let token_url = provider.token_url();
        let oauth = cluster_status(&[
            ("RILL_CLIENT_ID", "rill-client"),
            ("RILL_CLIENT_SECRET", "rill-client-secret"),
            ("RILL_OAUTH_URL", &token_url),
            ("RILL_TOKEN_AUDIENCE", AUDIENCE),
        ]);
        assert!(oauth.status.success(), "{oauth:?}");
        assert!(
            String::from_utf8_lossy(&oauth.stdout).contains("BROKER"),
            "{oauth:?}"
        );
        let wrong_secret = cluster_status(&[
            ("RILL_CLIENT_ID", "rill-client"),
            ("RILL_CLIENT_SECRET", "not-the-secret"),
            ("RILL_OAUTH_URL", &token_url),
        ]);
        let said = String::from_utf8_lossy(&wrong_secret.stderr);
        assert!(
            !wrong_secret.status.success()
                && said.contains("RILL_OAUTH_URL")
                && said.contains("invalid_client")
                && !said.contains("not-the-secret"),
            "{wrong_secret:?}"
        );

        // Refused tokens, each with its reason. A refused deployment deploys nothing.
        let other_audience = provider.token("rill-client", Some("urn:other-api")).await;
        assert_eq!(decode(&other_audience).1["aud"], "other-api");
        let other_issuer = elsewhere.token("rill-client", None).await;
        let issued_at = claims["iat"].as_i64().expect("iat");
        let mut not_yet_claims = claims.clone();
        not_yet_claims["nbf"] = json!(issued_at + 600);
        let not_yet_valid = first_key.sign(&header, &not_yet_claims);
        let mut unsigned_header = header.clone();
        unsigned_header["alg"] = json!("none");
        let unsigned = format!("{}.{}.", b64(&unsigned_header), b64(&claims));
        let mut hmac_header = header.clone();
        hmac_header["alg"] = json!("HS256");
        let hmac = format!(
            "{}.{}.{}",
            b64(&hmac_header),
            b64(&claims),
            token.rsplit('.').next().unwrap()
        );
        let token_parts: Vec<&str> = token.split('.').collect();
        let mut more_claims = claims.clone();
        more_claims["client_id"] = json!("admin");
        let tampered = format!(
            "{}.{}.{}",
            token_parts[0],
            b64(&more_claims),
            token_parts[2]
        );
        for (name, bad, expected) in [
            (
                "another audience",
                other_audience.as_str(),
                "aud names none of",
            ),
            ("another issuer", other_issuer.as_str(), "was issued by"),
            ("not yet valid", not_yet_valid.as_str(), "not valid yet"),
            ("alg none", unsigned.as_str(), "unsigned"),
            ("HS256", hmac.as_str(), "symmetric"),
            (
                "changed claims",
                tampered.as_str(),
                "signature is not valid",
            ),
            ("not a JWT", "abc.def", "not a valid JWT"),
        ] {
            let deploy = support::deployment_request(&http, &rest, "wait-timer.bpmn")
                .bearer_auth(bad)
                .send()
                .await
                .unwrap();
            let (status, challenge, detail) = answer(deploy).await;
            assert_eq!(status, 401, "{name}: {detail}");
            assert_eq!(challenge.as_deref(), Some(INVALID_TOKEN), "{name}");
            assert!(
                detail.contains(expected),
                "{name}: {detail:?} lacks {expected:?}"
            );
            let refused = grpc
                .topology(grpc_request(TopologyRequest {}, bad))
                .await
                .expect_err(name);
            assert_eq!(refused.code(), Code::Unauthenticated, "{name}");
        }
        // The history store shows the accepted deployment, and only that one.
        let mut deployed = Vec::new();
        for _ in 0..100 {
            let definitions: Value = http
                .post(format!("{rest}/v2/process-definitions/search"))
                .bearer_auth(&token)
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .expect("JSON");
            deployed = definitions["items"]
                .as_array()
                .expect("items")
                .iter()
                .filter_map(|d| d["processDefinitionId"].as_str().map(str::to_owned))
                .collect();
            if !deployed.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            deployed,
            ["two-rest-calls"],
            "a refused deployment deployed"
        );

        // Malformed and oversized headers.
        for (value, expected) in [
            ("Basic ZGVtbzpkZW1v".to_owned(), "scheme `Basic`"),
            ("Bearer".to_owned(), "empty"),
            (format!("Bearer {}", "A".repeat(9000)), "at most 8192"),
        ] {
            let response = http
                .get(format!("{rest}/v2/topology"))
                .header("authorization", value)
                .send()
                .await
                .unwrap();
            let (status, _, detail) = answer(response).await;
            assert_eq!(status, 401, "{detail}");
            assert!(detail.contains(expected), "{detail:?} lacks {expected:?}");
        }

        // A job stream opened with a short-lived token (3 s, skew 1 s) is closed with
        // UNAUTHENTICATED when the token expires; the token is refused from then on.
        let short_lived = provider.token("rill-short-lived", None).await;
        let opened = std::time::Instant::now();
        let mut stream = grpc
            .stream_activated_jobs(grpc_request(
                StreamActivatedJobsRequest {
                    r#type: "never-created".to_owned(),
                    worker: "w".to_owned(),
                    timeout: 10_000,
                    ..Default::default()
                },
                &short_lived,
            ))
            .await
            .expect("stream opened")
            .into_inner();
        let ended = tokio::time::timeout(Duration::from_secs(15), stream.message())
            .await
            .expect("the stream ends when its token expires")
            .expect_err("closed with an error");
        assert_eq!(ended.code(), Code::Unauthenticated, "{ended:?}");
        assert!(
            opened.elapsed() >= Duration::from_secs(2),
            "{:?}",
            opened.elapsed()
        );
        let (status, _, detail) = answer(
            get("/v2/topology", Some(&short_lived))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 401);
        assert!(detail.contains("expired"), "{detail}");

        // The provider rotates its key: the first key is gone, the second signs. A
        // token of the new key makes Rill fetch the keys again; a token of the old key
        // is refused from then on.
        provider.stop();
        provider = Provider::start(dir.path(), port, &[&second_key]);
        let rotated = provider.token("rill-client", None).await;
        assert_eq!(decode(&rotated).0["kid"], "second-key");
        let status = get("/v2/topology", Some(&rotated))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 200);
        let (status, challenge, detail) =
            answer(get("/v2/topology", Some(&token)).send().await.unwrap()).await;
        assert_eq!(status, 401, "{detail}");
        assert_eq!(challenge.as_deref(), Some(INVALID_TOKEN));
        assert!(detail.contains("kid `first-key`"), "{detail}");

        // The log says why, and never holds a token.
        let log = rill
            .wait_log(Duration::from_secs(5), |log| log.contains("not yet valid"))
            .await;
        for reason in [
            "wrong audience",
            "wrong issuer",
            "unsigned",
            "expired",
            "fetched again",
        ] {
            assert!(log.contains(reason), "the log lacks {reason:?}: {log}");
        }
        for secret in [&token, &short_lived, &rotated, &other_audience] {
            let signature = secret.rsplit('.').next().unwrap();
            assert!(!log.contains(signature), "a token reached the log");
        }
        rill.terminate(Duration::from_secs(20));
    });
}

#[test]
fn a_provider_that_cannot_be_reached_stops_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nobody = free_port();
    runtime().block_on(async {
        let mut rill = Standalone::start(
            &dir.path().join("data"),
            &[
                "security.authentication.method=oidc",
                &format!("security.authentication.oidc.issuer-uri=http://127.0.0.1:{nobody}"),
                "security.authentication.oidc.audiences=rill-api",
            ],
        );
        let exit = rill
            .wait_exit(Duration::from_secs(30))
            .await
            .expect("refused at start");
        assert!(!exit.success());
        let log = rill.log_text();
        assert!(
            log.contains("security.authentication.oidc.issuer-uri")
                && log.contains("/.well-known/openid-configuration"),
            "{log}"
        );
    });
}

/// Runs a client script against a standalone with oidc, the client configured for
/// OAuth client credentials with the provider's token endpoint.
fn run_oauth_client(script: &str, install_var: &str, install_dir: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = SigningKey::generate(dir.path(), "client-key");
    let provider = Provider::start(dir.path(), free_port(), &[&key]);
    let settings = oidc_settings(&provider);
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let token_url = provider.token_url();
    support::run_client_script_with(
        script,
        install_var,
        install_dir,
        &settings,
        &[
            ("RILL_CLIENT_OAUTH_URL", token_url.as_str()),
            ("RILL_CLIENT_ID", "rill-client"),
            ("RILL_CLIENT_SECRET", "rill-client-secret"),
            ("RILL_CLIENT_AUDIENCE", AUDIENCE),
        ],
    );
    assert!(
        provider.log_text().contains("issuer"),
        "{}",
        provider.log_text()
    );
}

/// Camunda's Python SDK (`camunda-orchestration-sdk`, unmodified) with
/// `CAMUNDA_AUTH_STRATEGY=OAUTH`, as its README shows, gets its token from the provider
/// and runs its whole flow against a standalone with oidc.
#[test]
fn the_camunda_python_sdk_authenticates_with_oauth() {
    run_oauth_client("python/run.sh", "RILL_PY_VENV", "python-clients");
}

/// Camunda's npm SDK (`@camunda8/orchestration-cluster-api`, unmodified) with
/// `CAMUNDA_AUTH_STRATEGY=OAUTH` runs its whole flow against a standalone with oidc.
#[test]
fn the_camunda_npm_sdk_authenticates_with_oauth() {
    run_oauth_client("node/run.sh", "RILL_NODE_DIR", "node-clients");
}

/// Runs `tests/clients/{script}` with `env`, expecting "all checks passed".
fn run_client(script: &str, env: &[(&str, String)], rill: &Standalone) {
    support::assert_client_passes(script, env, || rill.log_text());
}

/// Zeebe's gRPC clients, unmodified, with OAuth as their READMEs show, against a
/// standalone with oidc and TLS on its client APIs (gRPC sends call credentials only
/// over TLS): pyzeebe's OAuth2 client-credentials channel, and `@camunda8/sdk`'s
/// `ZeebeGrpcClient` with `grpcs://` and `CAMUNDA_AUTH_STRATEGY=OAUTH`. Both fetch
/// their tokens from the provider, and their workers (polling and streaming) run jobs.
#[test]
fn zeebe_grpc_clients_authenticate_with_oauth_over_tls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).expect("certs dir");
    let ca = rill_tls::testing::TestCa::new("rill CA");
    let ca_file = ca.write(&certs, "ca.crt");
    let (certificate, private_key) = ca
        .issue(&["localhost", "127.0.0.1"])
        .write(&certs, "gateway");
    let key = SigningKey::generate(dir.path(), "grpc-client-key");
    let provider = Provider::start(dir.path(), free_port(), &[&key]);
    let mut settings = oidc_settings(&provider);
    settings.extend([
        "gateway.tls.enabled=true".to_owned(),
        format!("gateway.tls.certificate={}", certificate.display()),
        format!("gateway.tls.private-key={}", private_key.display()),
    ]);
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let mut rill = Standalone::start(&dir.path().join("data"), &settings);
    runtime().block_on(rill.wait_ready(Duration::from_secs(30)));
    let installs = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let oauth = [
        ("RILL_GRPC_ADDRESS", format!("localhost:{}", rill.grpc_port)),
        ("RILL_GRPC_CA", ca_file.display().to_string()),
        ("RILL_CLIENT_OAUTH_URL", provider.token_url()),
        ("RILL_CLIENT_ID", "rill-client".to_owned()),
        ("RILL_CLIENT_SECRET", "rill-client-secret".to_owned()),
        ("RILL_CLIENT_AUDIENCE", AUDIENCE.to_owned()),
    ];
    let with = |extra: &[(&'static str, String)]| {
        let mut env = oauth.to_vec();
        env.extend_from_slice(extra);
        env
    };
    run_client(
        "pyzeebe/run.sh",
        &with(&[
            (
                "RILL_PYZEEBE_VENV",
                installs.join("pyzeebe-clients").display().to_string(),
            ),
            // oauthlib refuses a token endpoint that is not https unless told: the
            // test's provider is plain HTTP on loopback.
            ("OAUTHLIB_INSECURE_TRANSPORT", "1".to_owned()),
        ]),
        &rill,
    );
    run_client(
        "zeebe-node/run.sh",
        &with(&[(
            "RILL_ZEEBE_NODE_DIR",
            installs.join("zeebe-node-clients").display().to_string(),
        )]),
        &rill,
    );
    assert!(rill.terminate(Duration::from_secs(20)));
}

/// Three `rill broker` processes with oidc: each broker's gateway refuses a request
/// without a token and runs instances for a token from the provider (created through
/// one broker, jobs worked through all).
#[test]
fn a_three_broker_cluster_runs_instances_for_provider_tokens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = SigningKey::generate(dir.path(), "cluster-key");
    let provider = Provider::start(dir.path(), free_port(), &[&key]);
    let settings = oidc_settings(&provider);
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    runtime().block_on(async {
        let mut brokers =
            support::Brokers::start_with(dir.path(), 3, 2, 3, &settings, |_| Vec::new());
        brokers.wait_ready(Duration::from_secs(90)).await;
        let token = provider.token("rill-client", None).await;
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {token}").parse().expect("header"),
        );
        let with_token = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        let apis: Vec<support::Api> = brokers
            .nodes
            .iter()
            .map(|node| support::Api {
                base: node.rest(),
                http: with_token.clone(),
            })
            .collect();
        for (i, node) in brokers.nodes.iter().enumerate() {
            let (status, _) = brokers.api(i).get("/v2/topology").await.expect("answer");
            assert_eq!(status, 401, "broker {i} without a token");
            let cluster = reqwest::get(format!("{}/actuator/cluster", node.monitoring()))
                .await
                .expect("answer");
            assert_eq!(
                cluster.status().as_u16(),
                401,
                "broker {i}'s management API"
            );
        }
        support::deploy(&apis[0], &["two-rest-calls.bpmn"]).await;
        let workload = support::Workload::start(apis.clone(), 20);
        let keys = workload
            .finish(&apis[1], Duration::from_secs(120), &brokers)
            .await;
        assert_eq!(keys.len(), 20);
        let (status, topology) = apis[2].get("/v2/topology").await.expect("topology");
        assert_eq!(status, 200, "{topology}");
        assert_eq!(topology["brokers"].as_array().map(Vec::len), Some(3));
    });
}
