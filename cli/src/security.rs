//! Authentication as the servers of a process use it: one [`Authenticator`] for the
//! client APIs and the management port, built once at start from `security.*`.

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::Result;
use axum::extract::Request;
use axum::response::Response;
use futures::future::BoxFuture;
use rill_broker::RequestGuard;
use rill_config::RillConfig;
use rill_gateway::Authenticator;

/// The process's authenticator. With authentication off, warns about every listener
/// that other machines can reach, naming the setting that would close it. With oidc,
/// the provider is asked for its discovery document and keys here, before anything
/// starts (on a runtime of its own: the servers' runtimes do not exist yet).
pub fn authenticator(config: &RillConfig) -> Result<Arc<Authenticator>> {
    let authenticator = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(Authenticator::from_config(&config.security))?;
    if !authenticator.is_enabled() {
        let mut listeners = vec![("monitoring.host", config.monitoring.host.as_str())];
        if config.gateway.enabled {
            listeners.insert(0, ("gateway.host", config.gateway.host.as_str()));
        }
        for (setting, host) in listeners {
            if !is_loopback(host) {
                tracing::warn!(
                    setting,
                    host,
                    "authentication is off (security.authentication.method = \"none\") while \
                     {setting} = {host} accepts connections from other machines: anyone who \
                     reaches the port may use it; set security.authentication.method = \
                     \"basic\" with [[security.initialization.users]] (or \"oidc\" with \
                     security.authentication.oidc.*), or bind {setting} to 127.0.0.1"
                );
            }
        }
    }
    Ok(Arc::new(authenticator))
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim().trim_matches(['[', ']']);
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The credentials the `rill` client commands send (`rill cluster ...`, `rill deploy ...`),
/// from the environment: one kind of them, or none.
#[derive(Debug, PartialEq, Eq)]
pub enum ClientCredentials {
    None,
    /// `RILL_USERNAME` and `RILL_PASSWORD` (basic authentication).
    Basic {
        username: String,
        password: String,
    },
    /// `RILL_TOKEN`: an access token the caller got itself (oidc).
    Token(String),
    /// `RILL_CLIENT_ID`, `RILL_CLIENT_SECRET` and `RILL_OAUTH_URL` (the provider's token
    /// endpoint), with `RILL_TOKEN_AUDIENCE` optional: an OAuth client-credentials grant,
    /// as Camunda's SDKs make it, asked for once per command.
    OAuth {
        client_id: String,
        client_secret: String,
        token_url: String,
        audience: Option<String>,
    },
}

impl ClientCredentials {
    /// Reads them with `var` (the process environment in [`client_headers`]); more than
    /// one kind, or half of one, is an error naming the variables.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<ClientCredentials> {
        let basic = (var("RILL_USERNAME"), var("RILL_PASSWORD"));
        let token = var("RILL_TOKEN");
        let oauth = (
            var("RILL_CLIENT_ID"),
            var("RILL_CLIENT_SECRET"),
            var("RILL_OAUTH_URL"),
        );
        let kinds = [
            basic.0.is_some() || basic.1.is_some(),
            token.is_some(),
            oauth.0.is_some() || oauth.1.is_some() || oauth.2.is_some(),
        ];
        if kinds.iter().filter(|set| **set).count() > 1 {
            anyhow::bail!(
                "more than one kind of credentials is set (RILL_USERNAME/RILL_PASSWORD, \
                 RILL_TOKEN, RILL_CLIENT_ID/RILL_CLIENT_SECRET/RILL_OAUTH_URL): use one"
            );
        }
        if let Some(token) = token {
            return Ok(ClientCredentials::Token(token.trim().to_owned()));
        }
        match oauth {
            (Some(client_id), Some(client_secret), Some(token_url)) => {
                if !token_url.starts_with("https://") && !token_url.starts_with("http://") {
                    anyhow::bail!("RILL_OAUTH_URL must be an http(s) URL, got '{token_url}'");
                }
                return Ok(ClientCredentials::OAuth {
                    client_id,
                    client_secret,
                    token_url,
                    audience: var("RILL_TOKEN_AUDIENCE").filter(|a| !a.is_empty()),
                });
            }
            (None, None, None) => {}
            (id, secret, url) => {
                let missing: Vec<&str> = [
                    ("RILL_CLIENT_ID", id.is_none()),
                    ("RILL_CLIENT_SECRET", secret.is_none()),
                    ("RILL_OAUTH_URL", url.is_none()),
                ]
                .into_iter()
                .filter_map(|(name, missing)| missing.then_some(name))
                .collect();
                anyhow::bail!(
                    "OAuth client credentials are incomplete: {} not set",
                    missing.join(" and ")
                );
            }
        }
        match basic {
            (None, None) => Ok(ClientCredentials::None),
            (Some(username), Some(password)) => Ok(ClientCredentials::Basic { username, password }),
            (Some(_), None) => anyhow::bail!("RILL_USERNAME is set but RILL_PASSWORD is not"),
            (None, Some(_)) => anyhow::bail!("RILL_PASSWORD is set but RILL_USERNAME is not"),
        }
    }
}

/// The `Authorization` header for the credentials in the environment
/// ([`ClientCredentials::from_env`]), sent with every request of a command. OAuth
/// credentials are exchanged for a token here, through `http`.
pub async fn client_headers(http: &reqwest::Client) -> Result<reqwest::header::HeaderMap> {
    use base64::Engine;

    let credentials = ClientCredentials::from_env(|name| std::env::var(name).ok())?;
    let value = match credentials {
        ClientCredentials::None => return Ok(reqwest::header::HeaderMap::new()),
        ClientCredentials::Basic { username, password } => {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
            format!("Basic {encoded}")
        }
        ClientCredentials::Token(token) => format!("Bearer {token}"),
        ClientCredentials::OAuth {
            client_id,
            client_secret,
            token_url,
            audience,
        } => {
            let token = fetch_token(http, &client_id, &client_secret, &token_url, audience).await?;
            format!("Bearer {token}")
        }
    };
    let mut value = reqwest::header::HeaderValue::from_str(&value)
        .map_err(|_| anyhow::anyhow!("the credentials in the environment make no HTTP header"))?;
    value.set_sensitive(true);
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, value);
    Ok(headers)
}

/// An access token from `token_url` by the client-credentials grant (RFC 6749 4.4), the
/// secret in the form (`client_secret_post`), as Camunda's SDKs send it.
async fn fetch_token(
    http: &reqwest::Client,
    client_id: &str,
    client_secret: &str,
    token_url: &str,
    audience: Option<String>,
) -> Result<String> {
    let mut form = vec![
        ("grant_type", "client_credentials".to_owned()),
        ("client_id", client_id.to_owned()),
        ("client_secret", client_secret.to_owned()),
    ];
    if let Some(audience) = audience {
        form.push(("audience", audience));
    }
    let response = http
        .post(token_url)
        .timeout(std::time::Duration::from_secs(30))
        .form(&form)
        .send()
        .await
        .map_err(|error| anyhow::anyhow!("RILL_OAUTH_URL {token_url}: {error}"))?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        // The provider's error code and description, never the secret.
        anyhow::bail!(
            "RILL_OAUTH_URL {token_url} refused client {client_id}: {status} {} {}",
            body["error"].as_str().unwrap_or(""),
            body["error_description"].as_str().unwrap_or("")
        );
    }
    match body["access_token"].as_str() {
        Some(token) if !token.is_empty() => Ok(token.to_owned()),
        _ => anyhow::bail!("RILL_OAUTH_URL {token_url} answered {status} without an access_token"),
    }
}

/// The management port's guard: the client APIs' authentication.
pub struct ManagementGuard(pub Arc<Authenticator>);

impl RequestGuard for ManagementGuard {
    fn check(&self, request: Request) -> BoxFuture<'static, Result<Request, Response>> {
        let authenticator = self.0.clone();
        Box::pin(async move { rill_gateway::admit(&authenticator, request).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn client_credentials_come_in_one_kind() {
        assert_eq!(
            ClientCredentials::from_env(env(&[])).unwrap(),
            ClientCredentials::None
        );
        assert_eq!(
            ClientCredentials::from_env(env(&[("RILL_USERNAME", "demo"), ("RILL_PASSWORD", "p")]))
                .unwrap(),
            ClientCredentials::Basic {
                username: "demo".into(),
                password: "p".into()
            }
        );
        assert_eq!(
            ClientCredentials::from_env(env(&[
                ("RILL_CLIENT_ID", "ops"),
                ("RILL_CLIENT_SECRET", "s"),
                ("RILL_OAUTH_URL", "https://idp/token"),
                ("RILL_TOKEN_AUDIENCE", "rill-api"),
            ]))
            .unwrap(),
            ClientCredentials::OAuth {
                client_id: "ops".into(),
                client_secret: "s".into(),
                token_url: "https://idp/token".into(),
                audience: Some("rill-api".into())
            }
        );
        let mixed =
            ClientCredentials::from_env(env(&[("RILL_TOKEN", "t"), ("RILL_CLIENT_ID", "ops")]))
                .unwrap_err()
                .to_string();
        assert!(mixed.contains("more than one kind"), "{mixed}");
        let half = ClientCredentials::from_env(env(&[("RILL_CLIENT_ID", "ops")]))
            .unwrap_err()
            .to_string();
        assert!(
            half.contains("RILL_CLIENT_SECRET and RILL_OAUTH_URL not set"),
            "{half}"
        );
        let url = ClientCredentials::from_env(env(&[
            ("RILL_CLIENT_ID", "ops"),
            ("RILL_CLIENT_SECRET", "s"),
            ("RILL_OAUTH_URL", "idp/token"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            url.contains("RILL_OAUTH_URL must be an http(s) URL"),
            "{url}"
        );
    }

    #[test]
    fn loopback_hosts() {
        for host in ["127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["0.0.0.0", "::", "10.0.0.1", "rill.example.com"] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
