//! OpenID Connect: bearer JWTs issued by one provider (`security.authentication.oidc.*`).
//!
//! ```text
//! start:   <issuer-uri>/.well-known/openid-configuration ─► issuer, jwks_uri ─► JWKS
//!          (unreachable, invalid, or no usable key: the node does not start)
//!
//! request: Authorization: Bearer <header>.<claims>.<signature>
//!            header: alg (RS*, PS*, ES256/384, EdDSA; never none or HS*), kid
//!              ─► key of that kid in the cached JWKS
//!                   unknown kid ─► fetch the JWKS again (at most once per
//!                                  REFETCH_INTERVAL, one fetch at a time) ─► still unknown: 401
//!            signature ─► iss = the discovered issuer ─► aud ∋ one of `audiences`
//!              ─► exp and nbf, each with `clock-skew` ─► Principal
//!                 (username claim, else client-id claim; groups claim)
//! ```
//!
//! The keys are also fetched again when they are older than [`MAX_KEY_AGE`], so a key
//! the provider removed stops being accepted even when no new key appears. A log line
//! says why a token was refused; it never contains the token.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, header};
use base64::Engine;
use parking_lot::RwLock;
use rill_config::OidcConfig;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

use super::{MAX_AUTHORIZATION_LENGTH, Principal};
use crate::error::GatewayError;

/// At most one fetch of the JWKS per this interval when tokens name unknown keys, so a
/// flood of made-up `kid`s cannot hammer the provider.
pub(crate) const REFETCH_INTERVAL: Duration = Duration::from_secs(10);
/// Keys older than this are fetched again before a token is checked against them.
pub(crate) const MAX_KEY_AGE: Duration = Duration::from_secs(10 * 60);
/// Bounds of a request to the provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest discovery document or JWKS read.
const MAX_PROVIDER_DOCUMENT: usize = 1024 * 1024;

/// The signature algorithms accepted (asymmetric only: a symmetric key would have to
/// be shared with every client that can read the JWKS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algorithm {
    Rs256,
    Rs384,
    Rs512,
    Ps256,
    Ps384,
    Ps512,
    Es256,
    Es384,
    EdDsa,
}

impl Algorithm {
    fn parse(name: &str) -> Option<Algorithm> {
        Some(match name {
            "RS256" => Algorithm::Rs256,
            "RS384" => Algorithm::Rs384,
            "RS512" => Algorithm::Rs512,
            "PS256" => Algorithm::Ps256,
            "PS384" => Algorithm::Ps384,
            "PS512" => Algorithm::Ps512,
            "ES256" => Algorithm::Es256,
            "ES384" => Algorithm::Es384,
            "EdDSA" => Algorithm::EdDsa,
            _ => return None,
        })
    }

    fn fits(self, key: &KeyMaterial) -> bool {
        matches!(
            (self, key),
            (
                Algorithm::Rs256
                    | Algorithm::Rs384
                    | Algorithm::Rs512
                    | Algorithm::Ps256
                    | Algorithm::Ps384
                    | Algorithm::Ps512,
                KeyMaterial::Rsa { .. },
            ) | (Algorithm::Es256, KeyMaterial::P256(_))
                | (Algorithm::Es384, KeyMaterial::P384(_))
                | (Algorithm::EdDsa, KeyMaterial::Ed25519(_))
        )
    }

    /// Whether `signature` over `message` is valid for `key` (which `fits` this).
    fn verify(self, key: &KeyMaterial, message: &[u8], signature: &[u8]) -> bool {
        let rsa = |params: &'static signature::RsaParameters| match key {
            KeyMaterial::Rsa { n, e } => RsaPublicKeyComponents { n, e }
                .verify(params, message, signature)
                .is_ok(),
            _ => false,
        };
        let point = |params: &'static dyn signature::VerificationAlgorithm, bytes: &[u8]| {
            UnparsedPublicKey::new(params, bytes)
                .verify(message, signature)
                .is_ok()
        };
        match (self, key) {
            (Algorithm::Rs256, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
            (Algorithm::Rs384, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
            (Algorithm::Rs512, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA512),
            (Algorithm::Ps256, _) => rsa(&signature::RSA_PSS_2048_8192_SHA256),
            (Algorithm::Ps384, _) => rsa(&signature::RSA_PSS_2048_8192_SHA384),
            (Algorithm::Ps512, _) => rsa(&signature::RSA_PSS_2048_8192_SHA512),
            (Algorithm::Es256, KeyMaterial::P256(bytes)) => {
                point(&signature::ECDSA_P256_SHA256_FIXED, bytes)
            }
            (Algorithm::Es384, KeyMaterial::P384(bytes)) => {
                point(&signature::ECDSA_P384_SHA384_FIXED, bytes)
            }
            (Algorithm::EdDsa, KeyMaterial::Ed25519(bytes)) => point(&signature::ED25519, bytes),
            _ => false,
        }
    }
}

/// A public key of the provider's JWKS.
#[derive(Debug)]
struct PublicKey {
    kid: Option<String>,
    /// The key's `alg`, when the JWKS pins one.
    alg: Option<Algorithm>,
    material: KeyMaterial,
}

#[derive(Debug)]
enum KeyMaterial {
    /// Modulus and exponent, big-endian without leading zeros.
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// Uncompressed points (0x04 ‖ x ‖ y).
    P256(Vec<u8>),
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

/// The JWKS as last fetched.
struct KeySet {
    keys: Vec<PublicKey>,
    fetched_at: Instant,
}

/// Why a token was refused: logged, and said to the client (nothing here is secret).
#[derive(Debug, PartialEq)]
pub(crate) enum TokenRefusal {
    Missing,
    TooLong(usize),
    WrongScheme(String),
    Malformed(&'static str),
    Unsigned,
    SymmetricAlgorithm(String),
    UnknownAlgorithm(String),
    CriticalExtension,
    UnknownKey(Option<String>),
    AmbiguousKey,
    KeyAlgorithmMismatch,
    BadSignature,
    WrongIssuer(String),
    WrongAudience,
    NoExpiry,
    Expired,
    NotYetValid,
    NoPrincipal,
}

impl TokenRefusal {
    /// Short, for the log.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            TokenRefusal::Missing => "no Authorization header",
            TokenRefusal::TooLong(_) => "Authorization header too long",
            TokenRefusal::WrongScheme(_) => "not Bearer credentials",
            TokenRefusal::Malformed(_) => "malformed token",
            TokenRefusal::Unsigned => "unsigned token (alg none)",
            TokenRefusal::SymmetricAlgorithm(_) => "symmetric signature algorithm",
            TokenRefusal::UnknownAlgorithm(_) => "unknown signature algorithm",
            TokenRefusal::CriticalExtension => "critical header extension",
            TokenRefusal::UnknownKey(_) => "signed with a key the provider does not publish",
            TokenRefusal::AmbiguousKey => "no kid and several keys",
            TokenRefusal::KeyAlgorithmMismatch => "key does not fit the algorithm",
            TokenRefusal::BadSignature => "bad signature",
            TokenRefusal::WrongIssuer(_) => "wrong issuer",
            TokenRefusal::WrongAudience => "wrong audience",
            TokenRefusal::NoExpiry => "no exp claim",
            TokenRefusal::Expired => "expired",
            TokenRefusal::NotYetValid => "not yet valid (nbf)",
            TokenRefusal::NoPrincipal => "no username or client-id claim",
        }
    }

    /// Whether the request presented a token at all (RFC 6750: a challenge to a
    /// request without one carries no error code).
    pub(crate) fn presented_a_token(&self) -> bool {
        !matches!(self, TokenRefusal::Missing)
    }

    /// The 401's detail.
    pub(crate) fn detail(&self, verifier: &OidcVerifier) -> String {
        match self {
            TokenRefusal::Missing => "The request has no credentials: send an Authorization \
                                      header with a bearer token (Authorization: Bearer <JWT>) \
                                      from the OpenID provider"
                .to_owned(),
            TokenRefusal::TooLong(length) => format!(
                "The Authorization header is {length} bytes long; at most \
                 {MAX_AUTHORIZATION_LENGTH} are accepted"
            ),
            TokenRefusal::WrongScheme(scheme) => format!(
                "Expected a bearer token (Authorization: Bearer <JWT>), but the Authorization \
                 header has the scheme `{scheme}`"
            ),
            TokenRefusal::Malformed(what) => format!("The bearer token is not a valid JWT: {what}"),
            TokenRefusal::Unsigned => "The bearer token is unsigned (alg none)".to_owned(),
            TokenRefusal::SymmetricAlgorithm(alg) => format!(
                "The bearer token is signed with {alg}, a symmetric algorithm, which is not \
                 accepted; the provider must sign with an asymmetric key (e.g. RS256, ES256)"
            ),
            TokenRefusal::UnknownAlgorithm(alg) => format!(
                "The bearer token is signed with `{alg}`, which is not accepted (accepted: \
                 RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)"
            ),
            TokenRefusal::CriticalExtension => {
                "The bearer token's header has a `crit` extension, which is not supported"
                    .to_owned()
            }
            TokenRefusal::UnknownKey(kid) => format!(
                "The bearer token is signed with a key ({}) that the provider does not publish",
                kid.as_deref()
                    .map_or_else(|| "no kid".to_owned(), |kid| format!("kid `{kid}`"))
            ),
            TokenRefusal::AmbiguousKey => "The bearer token names no key (kid), and the \
                                           provider publishes several"
                .to_owned(),
            TokenRefusal::KeyAlgorithmMismatch => "The bearer token's algorithm does not fit \
                                                   the key it names"
                .to_owned(),
            TokenRefusal::BadSignature => "The bearer token's signature is not valid".to_owned(),
            TokenRefusal::WrongIssuer(issuer) => format!(
                "The bearer token was issued by `{issuer}`, not by `{}`",
                verifier.issuer
            ),
            TokenRefusal::WrongAudience => format!(
                "The bearer token is not meant for this cluster: its aud names none of {:?}",
                verifier.audiences
            ),
            TokenRefusal::NoExpiry => "The bearer token has no exp claim".to_owned(),
            TokenRefusal::Expired => "The bearer token has expired".to_owned(),
            TokenRefusal::NotYetValid => "The bearer token is not valid yet (nbf)".to_owned(),
            TokenRefusal::NoPrincipal => format!(
                "The bearer token has no `{}` claim{}",
                verifier.username_claim,
                verifier
                    .client_id_claim
                    .as_deref()
                    .map_or_else(String::new, |claim| format!(" and no `{claim}` claim"))
            ),
        }
    }
}

/// Checks bearer tokens against one provider's keys.
pub(crate) struct OidcVerifier {
    /// The discovered issuer: a token's `iss` must be exactly this.
    issuer: String,
    audiences: Vec<String>,
    username_claim: String,
    client_id_claim: Option<String>,
    groups_claim: Option<String>,
    clock_skew: Duration,
    jwks_uri: String,
    http: reqwest::Client,
    keys: RwLock<KeySet>,
    /// Held while the JWKS is fetched again; holds when that was last tried.
    refetch: tokio::sync::Mutex<Instant>,
}

impl OidcVerifier {
    /// Reads the provider's discovery document and its keys; every failure names the
    /// setting, so the node does not start with a provider it cannot use.
    pub(crate) async fn discover(config: &OidcConfig) -> Result<OidcVerifier, GatewayError> {
        let setting = "security.authentication.oidc.issuer-uri";
        let issuer_uri = config.issuer_uri.as_deref().ok_or_else(|| {
            GatewayError::Security(format!(
                "{setting} is not set, but oidc authentication needs it"
            ))
        })?;
        // No idle connections are kept: the keys are fetched rarely, and a kept
        // connection would belong to whichever runtime opened it.
        let http = reqwest::Client::builder()
            .timeout(PROVIDER_TIMEOUT)
            .connect_timeout(PROVIDER_TIMEOUT)
            .pool_max_idle_per_host(0)
            // A redirect could lead off https; a provider's URLs are given as they are.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| GatewayError::Security(format!("an HTTP client for {setting}: {e}")))?;
        let discovery_url = format!(
            "{}/.well-known/openid-configuration",
            issuer_uri.trim_end_matches('/')
        );
        let discovery = fetch_json(&http, &discovery_url).await.map_err(|why| {
            GatewayError::Security(format!(
                "{setting} = {issuer_uri}: the discovery document {discovery_url} could not be \
                 read ({why}); check that the provider runs and that the issuer URL is right"
            ))
        })?;
        let issuer = discovery
            .get("issuer")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                GatewayError::Security(format!(
                    "{setting} = {issuer_uri}: the discovery document {discovery_url} has no \
                     `issuer`"
                ))
            })?;
        if issuer.trim_end_matches('/') != issuer_uri.trim_end_matches('/') {
            return Err(GatewayError::Security(format!(
                "{setting} = {issuer_uri}, but the provider's discovery document names the \
                 issuer `{issuer}`: set {setting} to the provider's issuer"
            )));
        }
        let jwks_uri = discovery
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                GatewayError::Security(format!(
                    "{setting} = {issuer_uri}: the discovery document {discovery_url} has no \
                     `jwks_uri`"
                ))
            })?;
        check_key_url(jwks_uri).map_err(|why| {
            GatewayError::Security(format!(
                "{setting} = {issuer_uri}: the provider's jwks_uri `{jwks_uri}` {why}"
            ))
        })?;
        let keys = fetch_keys(&http, jwks_uri).await.map_err(|why| {
            GatewayError::Security(format!(
                "{setting} = {issuer_uri}: the provider's keys at {jwks_uri} could not be used \
                 ({why})"
            ))
        })?;
        let now = Instant::now();
        tracing::info!(
            issuer,
            jwks_uri,
            keys = keys.len(),
            "OIDC provider discovered"
        );
        Ok(OidcVerifier {
            issuer: issuer.to_owned(),
            audiences: config
                .audiences
                .iter()
                .map(|a| a.trim().to_owned())
                .filter(|a| !a.is_empty())
                .collect(),
            username_claim: config.username_claim.clone(),
            client_id_claim: config.client_id_claim.clone(),
            groups_claim: config.groups_claim.clone(),
            clock_skew: config.clock_skew,
            jwks_uri: jwks_uri.to_owned(),
            http,
            keys: RwLock::new(KeySet {
                keys,
                fetched_at: now,
            }),
            // The fetch at start does not count: the first unknown key is asked for.
            refetch: tokio::sync::Mutex::new(now.checked_sub(REFETCH_INTERVAL).unwrap_or(now)),
        })
    }

    /// The caller a request's bearer token proves, or why not.
    pub(crate) async fn authenticate(
        &self,
        headers: &HeaderMap,
    ) -> Result<Principal, TokenRefusal> {
        let token = bearer_token(headers)?;
        let jwt = Jwt::parse(token)?;
        if self.keys.read().fetched_at.elapsed() >= MAX_KEY_AGE {
            self.refetch_keys(None).await;
        }
        match self.check_signature(&jwt) {
            Ok(()) => {}
            Err(TokenRefusal::UnknownKey(kid)) => {
                // The provider may have rotated its keys: ask it again (rate limited).
                self.refetch_keys(kid.as_deref()).await;
                self.check_signature(&jwt)?;
            }
            Err(refusal) => return Err(refusal),
        }
        self.check_claims(&jwt.claims)
    }

    /// Whether a key of the cached set verifies the token's signature, or why not.
    fn check_signature(&self, jwt: &Jwt) -> Result<(), TokenRefusal> {
        let keys = self.keys.read();
        let key = find_key(&keys.keys, jwt)?;
        if jwt.alg.verify(&key.material, &jwt.signed, &jwt.signature) {
            Ok(())
        } else {
            Err(TokenRefusal::BadSignature)
        }
    }

    /// Fetches the JWKS again, unless another request just did (then its answer is
    /// used) or the last try was less than [`REFETCH_INTERVAL`] ago. A failed fetch
    /// keeps the keys held, so a provider that is briefly away locks nobody out.
    async fn refetch_keys(&self, wanted_kid: Option<&str>) {
        let asked_at = Instant::now();
        let mut last_try = self.refetch.lock().await;
        let fetched_at = self.keys.read().fetched_at;
        if fetched_at >= asked_at || last_try.elapsed() < REFETCH_INTERVAL {
            // Fetched while this request waited, or too recently to ask again.
            return;
        }
        *last_try = Instant::now();
        match fetch_keys(&self.http, &self.jwks_uri).await {
            Ok(keys) => {
                tracing::info!(
                    jwks_uri = %self.jwks_uri,
                    keys = keys.len(),
                    wanted_kid,
                    "OIDC provider keys fetched again"
                );
                *self.keys.write() = KeySet {
                    keys,
                    fetched_at: Instant::now(),
                };
            }
            Err(why) => tracing::warn!(
                jwks_uri = %self.jwks_uri,
                error = %why,
                "the OIDC provider's keys could not be fetched again; the keys held stay in use"
            ),
        }
    }

    fn check_claims(&self, claims: &Value) -> Result<Principal, TokenRefusal> {
        let issuer = claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if issuer != self.issuer {
            return Err(TokenRefusal::WrongIssuer(printable(issuer)));
        }
        let audience_accepted = |audience: &Value| {
            audience
                .as_str()
                .is_some_and(|audience| self.audiences.iter().any(|a| a == audience))
        };
        let audience_ok = match claims.get("aud") {
            Some(Value::Array(audiences)) => audiences.iter().any(audience_accepted),
            Some(audience) => audience_accepted(audience),
            None => false,
        };
        if !audience_ok {
            return Err(TokenRefusal::WrongAudience);
        }
        let now = unix_now();
        let skew = self.clock_skew.as_secs_f64();
        let expiry = claims
            .get("exp")
            .and_then(Value::as_f64)
            .ok_or(TokenRefusal::NoExpiry)?;
        if now >= expiry + skew {
            return Err(TokenRefusal::Expired);
        }
        if let Some(not_before) = claims.get("nbf") {
            let not_before = not_before
                .as_f64()
                .ok_or(TokenRefusal::Malformed("nbf is not a number"))?;
            if now + skew < not_before {
                return Err(TokenRefusal::NotYetValid);
            }
        }
        let text_claim = |name: &str| {
            claims
                .get(name)
                .and_then(Value::as_str)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        let username = text_claim(&self.username_claim)
            .or_else(|| self.client_id_claim.as_deref().and_then(text_claim))
            .ok_or(TokenRefusal::NoPrincipal)?;
        let groups = match self.groups_claim.as_deref().and_then(|c| claims.get(c)) {
            Some(Value::Array(groups)) => groups
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(Value::String(group)) => vec![group.clone()],
            _ => Vec::new(),
        };
        let remaining = Duration::try_from_secs_f64(expiry + skew - now).unwrap_or_default();
        Ok(Principal {
            username: Some(username),
            name: text_claim("name"),
            email: text_claim("email"),
            groups,
            valid_until: Instant::now().checked_add(remaining),
        })
    }
}

/// A JWS in compact form, decoded but not yet verified.
struct Jwt {
    alg: Algorithm,
    kid: Option<String>,
    /// `<header>.<claims>` as sent: what the signature covers.
    signed: Vec<u8>,
    signature: Vec<u8>,
    claims: Value,
}

impl Jwt {
    fn parse(token: &str) -> Result<Jwt, TokenRefusal> {
        let mut parts = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenRefusal::Malformed(
                "a signed JWT has three dot-separated parts",
            ));
        };
        let header: Value = serde_json::from_slice(&base64url(header)?)
            .map_err(|_| TokenRefusal::Malformed("the header is not a JSON object"))?;
        let header = header
            .as_object()
            .ok_or(TokenRefusal::Malformed("the header is not a JSON object"))?;
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or(TokenRefusal::Malformed("the header has no alg"))?;
        if alg.eq_ignore_ascii_case("none") {
            return Err(TokenRefusal::Unsigned);
        }
        if alg.starts_with("HS") {
            return Err(TokenRefusal::SymmetricAlgorithm(printable(alg)));
        }
        let alg =
            Algorithm::parse(alg).ok_or_else(|| TokenRefusal::UnknownAlgorithm(printable(alg)))?;
        if header.contains_key("crit") {
            return Err(TokenRefusal::CriticalExtension);
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.clone()),
            Some(_) => return Err(TokenRefusal::Malformed("kid is not a string")),
        };
        let claims_value: Value = serde_json::from_slice(&base64url(claims)?)
            .map_err(|_| TokenRefusal::Malformed("the claims are not a JSON object"))?;
        if !claims_value.is_object() {
            return Err(TokenRefusal::Malformed("the claims are not a JSON object"));
        }
        let signature = base64url(signature)?;
        if signature.is_empty() {
            return Err(TokenRefusal::Malformed("the signature is empty"));
        }
        let signed_length = token.len() - token.rsplit('.').next().map_or(0, str::len) - 1;
        Ok(Jwt {
            alg,
            kid,
            signed: token.as_bytes()[..signed_length].to_vec(),
            signature,
            claims: claims_value,
        })
    }
}

/// The key of `keys` that the token names (by kid, or the one key of its kind).
fn find_key<'k>(keys: &'k [PublicKey], jwt: &Jwt) -> Result<&'k PublicKey, TokenRefusal> {
    let key = match &jwt.kid {
        Some(kid) => keys
            .iter()
            .find(|key| key.kid.as_deref() == Some(kid.as_str()))
            .ok_or_else(|| TokenRefusal::UnknownKey(Some(printable(kid))))?,
        None => {
            let mut fitting = keys.iter().filter(|key| jwt.alg.fits(&key.material));
            match (fitting.next(), fitting.next()) {
                (Some(key), None) => key,
                (None, _) => return Err(TokenRefusal::UnknownKey(None)),
                (Some(_), Some(_)) => return Err(TokenRefusal::AmbiguousKey),
            }
        }
    };
    if !jwt.alg.fits(&key.material) || key.alg.is_some_and(|alg| alg != jwt.alg) {
        return Err(TokenRefusal::KeyAlgorithmMismatch);
    }
    Ok(key)
}

/// The token of `Authorization: Bearer <token>`.
fn bearer_token(headers: &HeaderMap) -> Result<&str, TokenRefusal> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(TokenRefusal::Missing);
    };
    let bytes = value.as_bytes();
    if bytes.len() > MAX_AUTHORIZATION_LENGTH {
        return Err(TokenRefusal::TooLong(bytes.len()));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| TokenRefusal::Malformed("the header is not text"))?
        .trim();
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(TokenRefusal::WrongScheme(printable(scheme)));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(TokenRefusal::Malformed("the bearer token is empty"));
    }
    Ok(token)
}

/// A value from a token, made safe and short for a log line or an answer.
fn printable(text: &str) -> String {
    text.chars().take(64).filter(|c| !c.is_control()).collect()
}

fn base64url(part: &str) -> Result<Vec<u8>, TokenRefusal> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| TokenRefusal::Malformed("a part is not base64url"))
}

// The gateway's clock, to judge a token's exp and nbf; never engine time.
#[allow(clippy::disallowed_methods)]
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// An `https://` URL, or `http://` on a loopback host (a provider in a test), as for
/// the issuer itself.
fn check_key_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("is not a URL ({e})"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            let host = parsed.host_str().unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Ok(())
            } else {
                Err("is http:// on a host that is not a loopback address".to_owned())
            }
        }
        other => Err(format!("has the scheme `{other}`, not https")),
    }
}

/// GETs a JSON document of at most [`MAX_PROVIDER_DOCUMENT`] bytes.
async fn fetch_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let mut response = http
        .get(url)
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| describe_request_error(&e))?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| describe_request_error(&e))?
    {
        if body.len() + chunk.len() > MAX_PROVIDER_DOCUMENT {
            return Err(format!("longer than {MAX_PROVIDER_DOCUMENT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
}

fn describe_request_error(error: &reqwest::Error) -> String {
    use std::error::Error;
    // reqwest's own text is terse ("error sending request"); its sources say why.
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The provider's signing keys: keys of other uses or kinds are left out; none usable
/// is an error.
async fn fetch_keys(http: &reqwest::Client, url: &str) -> Result<Vec<PublicKey>, String> {
    let document = fetch_json(http, url).await?;
    parse_jwks(&document)
}

fn parse_jwks(document: &Value) -> Result<Vec<PublicKey>, String> {
    let entries = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("the JWKS has no `keys` list")?;
    let mut keys = Vec::new();
    for entry in entries {
        match parse_jwk(entry) {
            Ok(Some(key)) => keys.push(key),
            Ok(None) => {}
            Err(why) => {
                let kid = entry.get("kid").and_then(Value::as_str);
                tracing::debug!(kid, why = %why, "a key of the OIDC provider's JWKS is left out");
            }
        }
    }
    if keys.is_empty() {
        return Err(
            "the JWKS has no signing key of a kind Rill verifies (RSA, EC P-256 or \
                    P-384, Ed25519)"
                .to_owned(),
        );
    }
    Ok(keys)
}

/// One JWK: `Ok(None)` for a key not meant for signatures.
fn parse_jwk(entry: &Value) -> Result<Option<PublicKey>, String> {
    let text = |name: &str| entry.get(name).and_then(Value::as_str);
    if text("use").is_some_and(|usage| usage != "sig") {
        return Ok(None);
    }
    let bytes = |name: &str| -> Result<Vec<u8>, String> {
        let value = text(name).ok_or_else(|| format!("no `{name}`"))?;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(value)
            .map_err(|_| format!("`{name}` is not base64url"))
    };
    let alg = match text("alg") {
        None => None,
        Some(name) => match Algorithm::parse(name) {
            Some(alg) => Some(alg),
            None => return Err(format!("alg `{name}` is not one Rill verifies")),
        },
    };
    let point = |length: usize| -> Result<Vec<u8>, String> {
        let (x, y) = (bytes("x")?, bytes("y")?);
        if x.len() != length || y.len() != length {
            return Err("the point has the wrong length".to_owned());
        }
        Ok([&[4u8][..], &x, &y].concat())
    };
    let material = match (text("kty"), text("crv")) {
        (Some("RSA"), _) => {
            let strip = |bytes: Vec<u8>| {
                let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
                bytes[first..].to_vec()
            };
            KeyMaterial::Rsa {
                n: strip(bytes("n")?),
                e: strip(bytes("e")?),
            }
        }
        (Some("EC"), Some("P-256")) => KeyMaterial::P256(point(32)?),
        (Some("EC"), Some("P-384")) => KeyMaterial::P384(point(48)?),
        (Some("OKP"), Some("Ed25519")) => KeyMaterial::Ed25519(bytes("x")?),
        (kty, crv) => return Err(format!("kty {kty:?} crv {crv:?} is not verified by Rill")),
    };
    let key = PublicKey {
        kid: text("kid").map(str::to_owned),
        alg,
        material,
    };
    if key.alg.is_some_and(|alg| !alg.fits(&key.material)) {
        return Err("its alg does not fit its kind".to_owned());
    }
    Ok(Some(key))
}

#[cfg(test)]
mod tests;
