//! The few REST calls the benchmark makes, with Camunda's client behaviour on
//! backpressure: a 503 whose problem title is `RESOURCE_EXHAUSTED` is retried after a
//! back-off.
//!
//! Back-off: 10 ms doubling per consecutive rejection, with jitter, capped by the
//! server's `Retry-After` (Rill sends 1 s). Honouring a full second on every rejection
//! would idle a starter far longer than the broker needs to drain; the cap still keeps
//! a client from retrying faster than the server asks when rejections persist.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use reqwest::StatusCode;
use reqwest::header::RETRY_AFTER;
use serde::Deserialize;

/// Counters shared by every caller.
#[derive(Default)]
pub struct ApiCounters {
    /// 503 RESOURCE_EXHAUSTED answers (each retried).
    pub backpressure: AtomicU64,
    /// Transport errors retried.
    pub retried_errors: AtomicU64,
}

/// A non-success answer other than backpressure.
#[derive(Debug)]
pub struct StatusError {
    pub what: String,
    pub status: u16,
    pub body: String,
}

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: HTTP {} {}", self.what, self.status, self.body)
    }
}

impl std::error::Error for StatusError {}

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
}

/// The fields of an activated job the worker needs; the rest (and big variables
/// other than `t0`) are skipped without being kept.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub job_key: String,
    pub element_id: String,
    pub process_instance_key: String,
    #[serde(default)]
    pub variables: JobVariables,
}

#[derive(Deserialize, Default)]
pub struct JobVariables {
    /// Microseconds since the run's epoch when the instance's create request was sent.
    pub t0: Option<u64>,
}

#[derive(Deserialize)]
struct Activated {
    jobs: Vec<Job>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceView {
    pub state: String,
}

/// What a client needs for a gateway with TLS and basic authentication (`--secure`).
#[derive(Clone, Debug)]
pub struct ClientSecurity {
    /// The CA that issued the gateway's certificate, PEM.
    pub ca_pem: String,
    pub username: String,
    pub password: String,
}

impl ClientSecurity {
    fn headers(&self) -> Result<reqwest::header::HeaderMap> {
        use base64::Engine;
        let credentials = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.username, self.password));
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Basic {credentials}"))?;
        value.set_sensitive(true);
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, value);
        Ok(headers)
    }
}

const BACKOFF_START: Duration = Duration::from_millis(10);
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
const MAX_TRANSPORT_RETRIES: u32 = 20;

impl Api {
    /// A client of the REST API at `base`; with `security`, over TLS trusting its CA and
    /// with its basic credentials on every request.
    pub fn new(base: &str, connections: usize, security: Option<&ClientSecurity>) -> Result<Api> {
        let mut builder = reqwest::Client::builder()
            .http1_only()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(connections)
            .timeout(Duration::from_secs(60));
        if let Some(security) = security {
            builder = builder
                .add_root_certificate(reqwest::Certificate::from_pem(security.ca_pem.as_bytes())?)
                .default_headers(security.headers()?);
        }
        let http = builder.build()?;
        Ok(Api {
            http,
            base: base.trim_end_matches('/').to_owned(),
        })
    }

    /// Sends a request built by `build`, retrying on backpressure and on transport
    /// errors; any other non-success status is an error with the problem text.
    async fn send(
        &self,
        counters: &ApiCounters,
        what: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let mut backoff = BACKOFF_START;
        let mut transport_failures = 0;
        loop {
            match build().send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) if response.status() == StatusCode::SERVICE_UNAVAILABLE => {
                    let cap = retry_after(&response).unwrap_or(DEFAULT_RETRY_AFTER);
                    let body = response.text().await.unwrap_or_default();
                    if !body.contains("RESOURCE_EXHAUSTED") {
                        bail!("{what}: 503 {body}");
                    }
                    counters.backpressure.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(jitter(backoff.min(cap))).await;
                    backoff = (backoff * 2).min(cap);
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body = response.text().await.unwrap_or_default();
                    return Err(StatusError {
                        what: what.to_owned(),
                        status,
                        body,
                    }
                    .into());
                }
                Err(error) if transport_failures < MAX_TRANSPORT_RETRIES => {
                    transport_failures += 1;
                    counters.retried_errors.fetch_add(1, Ordering::Relaxed);
                    tracing_warn(what, &error);
                    tokio::time::sleep(jitter(backoff)).await;
                    backoff = (backoff * 2).min(DEFAULT_RETRY_AFTER);
                }
                Err(error) => return Err(error).context(what.to_owned()),
            }
        }
    }

    pub async fn deploy(&self, name: &str, bpmn: &'static [u8]) -> Result<String> {
        let url = format!("{}/v2/deployments", self.base);
        let counters = ApiCounters::default();
        let response = self
            .send(&counters, "deploying the process", || {
                let part = reqwest::multipart::Part::bytes(bpmn).file_name(name.to_owned());
                self.http
                    .post(&url)
                    .multipart(reqwest::multipart::Form::new().part("resources", part))
            })
            .await?;
        Ok(response.text().await?)
    }

    /// `POST /v2/process-instances` with a pre-serialised body.
    pub async fn create(&self, counters: &ApiCounters, body: String) -> Result<()> {
        let url = format!("{}/v2/process-instances", self.base);
        let response = self
            .send(counters, "creating an instance", || {
                self.http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
            })
            .await?;
        // The key is not needed: the workers see it with each job.
        response.bytes().await?;
        Ok(())
    }

    /// Long-polls for up to `max_jobs` jobs of `job_type`.
    pub async fn activate(
        &self,
        counters: &ApiCounters,
        job_type: &str,
        worker: &str,
        max_jobs: u32,
        long_poll: Duration,
    ) -> Result<Vec<Job>> {
        let url = format!("{}/v2/jobs/activation", self.base);
        let body = serde_json::json!({
            "type": job_type,
            "worker": worker,
            "timeout": 60_000,
            "maxJobsToActivate": max_jobs,
            "requestTimeout": long_poll.as_millis() as u64,
        })
        .to_string();
        let response = self
            .send(counters, "activating jobs", || {
                self.http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
            })
            .await?;
        let activated: Activated = response.json().await?;
        Ok(activated.jobs)
    }

    pub async fn complete(&self, counters: &ApiCounters, job_key: &str) -> Result<()> {
        let url = format!("{}/v2/jobs/{job_key}/completion", self.base);
        self.send(counters, "completing a job", || {
            self.http
                .post(&url)
                .header("content-type", "application/json")
                .body("{}")
        })
        .await?;
        Ok(())
    }

    pub async fn instance(&self, key: &str) -> Result<InstanceView> {
        let url = format!("{}/v2/process-instances/{key}", self.base);
        let counters = ApiCounters::default();
        let response = self
            .send(&counters, "reading an instance", || self.http.get(&url))
            .await?;
        Ok(response.json().await?)
    }

    /// The service call of a task: GET the stub with a random `v` to defeat caching.
    pub async fn call_stub(&self, stub_url: &str) -> Result<()> {
        let response = self
            .http
            .get(stub_url)
            .query(&[("v", fastrand::u64(..))])
            .send()
            .await
            .context("calling the HTTP stub")?;
        if !response.status().is_success() {
            bail!("the HTTP stub answered {}", response.status());
        }
        // Read the body, as a real worker would.
        response.bytes().await?;
        Ok(())
    }

    /// True once `url` answers 2xx.
    pub async fn is_up(&self, url: &str) -> bool {
        matches!(self.http.get(url).send().await, Ok(r) if r.status().is_success())
    }
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: u64 = response
        .headers()
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// 50–100% of `d`, so retrying clients do not come back in lockstep.
fn jitter(d: Duration) -> Duration {
    d.mul_f64(0.5 + fastrand::f64() * 0.5)
}

fn tracing_warn(what: &str, error: &reqwest::Error) {
    eprintln!("warning: {what}: {error} (retrying)");
}
