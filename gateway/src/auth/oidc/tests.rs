//! The verifier with keys made here: claims, signatures, headers, and the rate limit
//! on fetching keys again (a key set served by the test).

use axum::http::HeaderValue;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::json;

use super::*;

fn encode(value: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
}

struct Signer {
    pair: EcdsaKeyPair,
    kid: &'static str,
}

impl Signer {
    fn new(kid: &'static str) -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("key");
        Signer { pair, kid }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
               "x": b64(&point[1..33]), "y": b64(&point[33..])})
    }

    fn sign(&self, header: Value, claims: Value) -> String {
        let signed = format!("{}.{}", encode(&header), encode(&claims));
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signed.as_bytes())
            .expect("sign");
        format!(
            "{signed}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature.as_ref())
        )
    }
}

fn verifier(signer: &Signer) -> OidcVerifier {
    let now = Instant::now();
    OidcVerifier {
        issuer: "https://idp.example".to_owned(),
        audiences: vec!["rill-api".to_owned()],
        username_claim: "preferred_username".to_owned(),
        client_id_claim: Some("client_id".to_owned()),
        groups_claim: Some("groups".to_owned()),
        clock_skew: Duration::from_secs(30),
        // Nothing listens here: a refetch fails and keeps the keys.
        jwks_uri: "http://127.0.0.1:9/jwks".to_owned(),
        http: reqwest::Client::new(),
        keys: RwLock::new(KeySet {
            keys: parse_jwks(&json!({"keys": [signer.jwk()]})).expect("keys"),
            fetched_at: now,
        }),
        refetch: tokio::sync::Mutex::new(now),
    }
}

fn claims(extra: Value) -> Value {
    let now = unix_now() as i64;
    let mut claims = json!({"iss": "https://idp.example", "aud": ["other", "rill-api"],
                            "exp": now + 300, "iat": now, "client_id": "worker-1",
                            "groups": ["engineers", "ops"]});
    for (name, value) in extra.as_object().expect("object") {
        claims[name] = value.clone();
    }
    claims
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {token}")).expect("header"),
    );
    headers
}

async fn check(verifier: &OidcVerifier, token: &str) -> Result<Principal, TokenRefusal> {
    verifier.authenticate(&bearer(token)).await
}

#[tokio::test]
async fn a_valid_token_gives_its_client_and_groups() {
    let signer = Signer::new("k1");
    let verifier = verifier(&signer);
    let header = json!({"alg": "ES256", "kid": "k1", "typ": "at+jwt"});
    let principal = check(&verifier, &signer.sign(header.clone(), claims(json!({}))))
        .await
        .expect("valid");
    assert_eq!(principal.username.as_deref(), Some("worker-1"));
    assert_eq!(principal.groups, ["engineers", "ops"]);
    assert!(principal.valid_until.is_some());
    let named = claims(json!({"preferred_username": "ada", "email": "ada@example.com"}));
    let principal = check(&verifier, &signer.sign(header, named))
        .await
        .expect("valid");
    assert_eq!(principal.username.as_deref(), Some("ada"));
    assert_eq!(principal.email.as_deref(), Some("ada@example.com"));
}

#[tokio::test]
async fn claims_out_of_bounds_are_refused() {
    let signer = Signer::new("k1");
    let verifier = verifier(&signer);
    let header = json!({"alg": "ES256", "kid": "k1"});
    let now = unix_now() as i64;
    for (extra, refusal) in [
        (json!({"exp": now - 31}), TokenRefusal::Expired),
        (json!({"nbf": now + 31}), TokenRefusal::NotYetValid),
        (
            json!({"iss": "https://evil.example"}),
            TokenRefusal::WrongIssuer("https://evil.example".to_owned()),
        ),
        (json!({"aud": "other"}), TokenRefusal::WrongAudience),
        (json!({"aud": null}), TokenRefusal::WrongAudience),
        (json!({"exp": null}), TokenRefusal::NoExpiry),
        (json!({"client_id": 7}), TokenRefusal::NoPrincipal),
    ] {
        let token = signer.sign(header.clone(), claims(extra.clone()));
        assert_eq!(check(&verifier, &token).await, Err(refusal), "{extra}");
    }
    // Within the skew both ways.
    let token = signer.sign(header, claims(json!({"exp": now - 20, "nbf": now + 20})));
    assert!(check(&verifier, &token).await.is_ok());
}

#[tokio::test]
async fn unsigned_symmetric_and_forged_tokens_are_refused() {
    let signer = Signer::new("k1");
    let verifier = verifier(&signer);
    let body = encode(&claims(json!({})));
    let unsigned = format!("{}.{body}.", encode(&json!({"alg": "none"})));
    assert_eq!(
        check(&verifier, &unsigned).await,
        Err(TokenRefusal::Unsigned)
    );
    let hmac = format!(
        "{}.{body}.c2ln",
        encode(&json!({"alg": "HS256", "kid": "k1"}))
    );
    assert_eq!(
        check(&verifier, &hmac).await,
        Err(TokenRefusal::SymmetricAlgorithm("HS256".to_owned()))
    );
    // The right header and another key's signature.
    let other = Signer::new("k1");
    let forged = other.sign(json!({"alg": "ES256", "kid": "k1"}), claims(json!({})));
    assert_eq!(
        check(&verifier, &forged).await,
        Err(TokenRefusal::BadSignature)
    );
    // Claims changed after signing.
    let token = signer.sign(json!({"alg": "ES256", "kid": "k1"}), claims(json!({})));
    let parts: Vec<&str> = token.split('.').collect();
    let changed = encode(&claims(json!({"client_id": "admin"})));
    let tampered = format!("{}.{changed}.{}", parts[0], parts[2]);
    assert_eq!(
        check(&verifier, &tampered).await,
        Err(TokenRefusal::BadSignature)
    );
    // A key the provider does not publish (the refetch fails: nothing listens).
    let unknown = other.sign(json!({"alg": "ES256", "kid": "k2"}), claims(json!({})));
    assert_eq!(
        check(&verifier, &unknown).await,
        Err(TokenRefusal::UnknownKey(Some("k2".to_owned())))
    );
    // An algorithm that does not fit the key.
    let wrong_alg = signer.sign(json!({"alg": "RS256", "kid": "k1"}), claims(json!({})));
    assert_eq!(
        check(&verifier, &wrong_alg).await,
        Err(TokenRefusal::KeyAlgorithmMismatch)
    );
}

#[tokio::test]
async fn malformed_headers_say_what_is_wrong() {
    let signer = Signer::new("k1");
    let verifier = verifier(&signer);
    assert_eq!(
        verifier.authenticate(&HeaderMap::new()).await,
        Err(TokenRefusal::Missing)
    );
    let mut basic = HeaderMap::new();
    basic.insert(
        header::AUTHORIZATION,
        HeaderValue::from_static("Basic ZGVtbzpkZW1v"),
    );
    assert_eq!(
        verifier.authenticate(&basic).await,
        Err(TokenRefusal::WrongScheme("Basic".to_owned()))
    );
    for token in ["abc", "a.b", "a.b.c.d.e", "%%%.e30.c2ln", "e30.e30."] {
        assert!(
            matches!(
                check(&verifier, token).await,
                Err(TokenRefusal::Malformed(_))
            ),
            "{token}"
        );
    }
    let long = "a".repeat(MAX_AUTHORIZATION_LENGTH);
    assert_eq!(
        check(&verifier, &long).await,
        Err(TokenRefusal::TooLong(MAX_AUTHORIZATION_LENGTH + 7))
    );
}

/// A flood of tokens naming made-up keys costs the provider one fetch per
/// [`REFETCH_INTERVAL`], and a key the provider then publishes is found.
#[tokio::test]
async fn unknown_keys_are_fetched_at_most_once_per_interval() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let signer = Signer::new("k1");
    let rotated = Signer::new("k2");
    let fetches = Arc::new(AtomicUsize::new(0));
    let published = Arc::new(parking_lot::Mutex::new(json!({"keys": [signer.jwk()]})));
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get({
            let fetches = fetches.clone();
            let published = published.clone();
            move || async move {
                fetches.fetch_add(1, Ordering::SeqCst);
                axum::Json(published.lock().clone())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut verifier = verifier(&signer);
    verifier.jwks_uri = format!("http://{address}/jwks");
    let now = Instant::now();
    verifier.refetch = tokio::sync::Mutex::new(now - REFETCH_INTERVAL);

    for i in 0..50 {
        let kid = format!("made-up-{i}");
        let header = json!({"alg": "ES256", "kid": kid});
        let token = rotated.sign(header, claims(json!({})));
        assert_eq!(
            check(&verifier, &token).await,
            Err(TokenRefusal::UnknownKey(Some(kid)))
        );
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "one fetch for the flood");

    // The provider publishes k2: once the interval is over, a k2 token finds it.
    published.lock()["keys"] = json!([signer.jwk(), rotated.jwk()]);
    let token = rotated.sign(json!({"alg": "ES256", "kid": "k2"}), claims(json!({})));
    assert!(matches!(
        check(&verifier, &token).await,
        Err(TokenRefusal::UnknownKey(_))
    ));
    *verifier.refetch.lock().await = Instant::now() - REFETCH_INTERVAL;
    assert!(check(&verifier, &token).await.is_ok());
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    // A key the provider no longer publishes is dropped with the next fetch.
    published.lock()["keys"] = json!([rotated.jwk()]);
    verifier.keys.write().fetched_at = Instant::now() - MAX_KEY_AGE;
    *verifier.refetch.lock().await = Instant::now() - REFETCH_INTERVAL;
    let old = signer.sign(json!({"alg": "ES256", "kid": "k1"}), claims(json!({})));
    assert_eq!(
        check(&verifier, &old).await,
        Err(TokenRefusal::UnknownKey(Some("k1".to_owned())))
    );
    assert_eq!(fetches.load(Ordering::SeqCst), 3);
}

#[test]
fn key_urls_are_https_or_loopback_http() {
    assert!(check_key_url("https://idp.example/jwks").is_ok());
    assert!(check_key_url("http://127.0.0.1:8080/jwks").is_ok());
    assert!(check_key_url("http://localhost/jwks").is_ok());
    assert!(check_key_url("http://[::1]:9/jwks").is_ok());
    assert!(check_key_url("http://idp.example/jwks").is_err());
    assert!(check_key_url("ftp://idp.example/jwks").is_err());
}
