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

/// Credentials the `rill` client commands send (`rill cluster ...`, `rill deploy ...`):
/// `RILL_USERNAME` and `RILL_PASSWORD` from the environment (both or neither), or
/// `RILL_TOKEN` (an OIDC access token), as an `Authorization` header sent with every
/// request.
pub fn client_headers() -> Result<reqwest::header::HeaderMap> {
    use base64::Engine;

    let mut headers = reqwest::header::HeaderMap::new();
    let username = std::env::var("RILL_USERNAME").ok();
    let password = std::env::var("RILL_PASSWORD").ok();
    if let Ok(token) = std::env::var("RILL_TOKEN") {
        if username.is_some() || password.is_some() {
            anyhow::bail!(
                "RILL_TOKEN and RILL_USERNAME/RILL_PASSWORD are both set: use one kind of \
                 credentials"
            );
        }
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| anyhow::anyhow!("RILL_TOKEN makes no header: it is not a token"))?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
        return Ok(headers);
    }
    match (username, password) {
        (None, None) => {}
        (Some(username), Some(password)) => {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Basic {encoded}"))
                .map_err(|_| anyhow::anyhow!("RILL_USERNAME and RILL_PASSWORD make no header"))?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        (Some(_), None) => anyhow::bail!("RILL_USERNAME is set but RILL_PASSWORD is not"),
        (None, Some(_)) => anyhow::bail!("RILL_PASSWORD is set but RILL_USERNAME is not"),
    }
    Ok(headers)
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
