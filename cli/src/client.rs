//! The CLI's client commands: thin calls to the REST API, printing what comes back.
//!
//! Everything here goes through the public API, exactly as any other client would, so a
//! user can try Rill from a terminal without writing code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use rill_protocol::history::{IncidentState, JobState};
use serde_json::{Map, Value, json};

use crate::search::{
    INCIDENT_COLUMNS, INSTANCE_COLUMNS, JOB_COLUMNS, ListArgs, Listing, put, table,
};

const INSTANCE_STATES: [&str; 3] = ["ACTIVE", "COMPLETED", "TERMINATED"];

/// Client commands against a running gateway.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Deploy one or more BPMN files.
    Deploy {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Create a process instance.
    Create {
        /// The BPMN process id (the `id` of the `bpmn:process`).
        process_id: String,
        /// A specific version (default: the latest).
        #[arg(long)]
        version: Option<i32>,
        /// Variables as a JSON object, e.g. '{"orderId": "o-1"}'.
        #[arg(long)]
        variables: Option<String>,
        /// Wait until the instance completes and print its variables.
        #[arg(long = "await")]
        await_completion: bool,
        /// With --await: only these variables (comma-separated).
        #[arg(long, value_delimiter = ',')]
        fetch_variables: Vec<String>,
    },
    /// Cancel a process instance.
    Cancel { key: String },
    /// Publish a message.
    Publish {
        name: String,
        #[arg(long)]
        correlation_key: String,
        #[arg(long)]
        variables: Option<String>,
        /// Time to live, e.g. 30s, 1h (default: 0, correlate now or never).
        #[arg(long, value_parser = humantime::parse_duration)]
        ttl: Option<Duration>,
        #[arg(long)]
        message_id: Option<String>,
    },
    /// Work with jobs.
    Jobs {
        #[command(subcommand)]
        command: JobsCommand,
    },
    /// Resolve an incident (after fixing its cause).
    Resolve { incident_key: String },
    /// Show the cluster topology: brokers, partitions, leaders.
    Status,
    /// Show a process instance: its state and incidents.
    Instance { key: String },
    /// List process instances, newest last (finished ones too, while history keeps them).
    Instances {
        #[arg(long, ignore_case = true, value_parser = INSTANCE_STATES)]
        state: Option<String>,
        /// Only instances of this BPMN process id.
        #[arg(long)]
        process: Option<String>,
        #[command(flatten)]
        list: ListArgs,
    },
    /// List incidents.
    Incidents {
        #[arg(long, ignore_case = true, value_parser = IncidentState::NAMES.to_vec())]
        state: Option<String>,
        /// Only the incidents of this process instance.
        #[arg(long)]
        process_instance: Option<String>,
        #[command(flatten)]
        list: ListArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Activate jobs of a type and print them.
    Activate {
        job_type: String,
        #[arg(long, default_value_t = 10)]
        max: u32,
        #[arg(long, default_value = "rill-cli")]
        worker: String,
        /// How long the jobs stay locked to this worker.
        #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
        timeout: Duration,
    },
    /// Complete a job.
    Complete {
        key: String,
        #[arg(long)]
        variables: Option<String>,
    },
    /// Fail a job (it is retried while retries remain; at 0 an incident is raised).
    Fail {
        key: String,
        #[arg(long)]
        retries: i32,
        #[arg(long, default_value = "")]
        message: String,
        /// Wait this long before the job can be activated again.
        #[arg(long, value_parser = humantime::parse_duration)]
        backoff: Option<Duration>,
    },
    /// Throw a BPMN error from a job.
    Error {
        key: String,
        #[arg(long)]
        code: String,
        #[arg(long, default_value = "")]
        message: String,
    },
    /// Change a job's retries.
    Retries { key: String, retries: i32 },
    /// List jobs (Camunda's job states: an activated job keeps its state and shows its
    /// worker).
    List {
        #[arg(long = "type")]
        job_type: Option<String>,
        #[arg(long, ignore_case = true, value_parser = JobState::NAMES.to_vec())]
        state: Option<String>,
        /// Only the jobs of this process instance.
        #[arg(long)]
        process_instance: Option<String>,
        #[command(flatten)]
        list: ListArgs,
    },
}

/// What a client command prints.
pub enum Output {
    /// An answer, printed as pretty JSON.
    Value(Value),
    /// A listing's table, printed as it is.
    Text(String),
}

/// A listing command's search and arguments.
fn listing(command: ClientCommand) -> Result<(Listing, ListArgs), ClientCommand> {
    let upper = |s: Option<String>| s.map(|s| s.to_ascii_uppercase());
    let mut filter = Map::new();
    match command {
        ClientCommand::Instances {
            state,
            process,
            list,
        } => {
            put(&mut filter, "state", upper(state));
            put(&mut filter, "processDefinitionId", process);
            let listing = Listing {
                path: "/v2/process-instances/search",
                what: "process instances",
                filter,
                columns: INSTANCE_COLUMNS,
            };
            Ok((listing, list))
        }
        ClientCommand::Incidents {
            state,
            process_instance,
            list,
        } => {
            put(&mut filter, "state", upper(state));
            put(&mut filter, "processInstanceKey", process_instance);
            let listing = Listing {
                path: "/v2/incidents/search",
                what: "incidents",
                filter,
                columns: INCIDENT_COLUMNS,
            };
            Ok((listing, list))
        }
        ClientCommand::Jobs {
            command:
                JobsCommand::List {
                    job_type,
                    state,
                    process_instance,
                    list,
                },
        } => {
            put(&mut filter, "type", job_type);
            put(&mut filter, "state", upper(state));
            put(&mut filter, "processInstanceKey", process_instance);
            let listing = Listing {
                path: "/v2/jobs/search",
                what: "jobs",
                filter,
                columns: JOB_COLUMNS,
            };
            Ok((listing, list))
        }
        other => Err(other),
    }
}

/// An HTTP client that also trusts the CA certificates in `ca_certificate` (a PEM file),
/// for a gateway or management port whose certificate a private CA issued.
/// It sends the credentials in the environment (`security::client_headers`) with every
/// request; OAuth client credentials are exchanged for a token first, through a client
/// that trusts the same certificates.
pub async fn http_client(ca_certificate: Option<&Path>) -> Result<reqwest::Client> {
    let builder = trusting(ca_certificate)?;
    let token_client = builder.build().context("building the HTTP client")?;
    let headers = crate::security::client_headers(&token_client).await?;
    trusting(ca_certificate)?
        .default_headers(headers)
        .build()
        .context("building the HTTP client")
}

fn trusting(ca_certificate: Option<&Path>) -> Result<reqwest::ClientBuilder> {
    let mut builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(5));
    if let Some(path) = ca_certificate {
        let pem = std::fs::read(path)
            .with_context(|| format!("--ca-certificate: cannot read {}", path.display()))?;
        let certificates = reqwest::Certificate::from_pem_bundle(&pem).with_context(|| {
            format!(
                "--ca-certificate: {} is not a PEM certificate file",
                path.display()
            )
        })?;
        if certificates.is_empty() {
            bail!(
                "--ca-certificate: {} holds no PEM certificate",
                path.display()
            );
        }
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    Ok(builder)
}

/// Talks to one gateway's REST API.
pub struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    pub async fn new(address: &str, ca_certificate: Option<&Path>) -> Result<Client> {
        let base = address.trim_end_matches('/').to_owned();
        if !base.starts_with("http://") && !base.starts_with("https://") {
            bail!("the gateway address must start with http:// or https://, got '{address}'");
        }
        let http = http_client(ca_certificate).await?;
        Ok(Client { http, base })
    }

    pub async fn run(&self, command: ClientCommand) -> Result<Output> {
        match listing(command) {
            Ok((listing, args)) => {
                let found = self.list(&listing, &args).await?;
                if args.json {
                    Ok(Output::Value(Value::Array(found.items)))
                } else {
                    Ok(Output::Text(table(&listing, &found)))
                }
            }
            Err(command) => self.call(command).await.map(Output::Value),
        }
    }

    async fn call(&self, command: ClientCommand) -> Result<Value> {
        match command {
            ClientCommand::Deploy { files } => self.deploy(&files).await,
            ClientCommand::Create {
                process_id,
                version,
                variables,
                await_completion,
                fetch_variables,
            } => {
                let mut body = json!({
                    "processDefinitionId": process_id,
                    "variables": parse_variables(variables.as_deref())?,
                });
                if let Some(version) = version {
                    body["processDefinitionVersion"] = json!(version);
                }
                if await_completion {
                    body["awaitCompletion"] = json!(true);
                    if !fetch_variables.is_empty() {
                        body["fetchVariables"] = json!(fetch_variables);
                    }
                }
                self.post("/v2/process-instances", body).await
            }
            ClientCommand::Cancel { key } => {
                self.post(
                    &format!("/v2/process-instances/{key}/cancellation"),
                    json!({}),
                )
                .await
            }
            ClientCommand::Publish {
                name,
                correlation_key,
                variables,
                ttl,
                message_id,
            } => {
                let mut body = json!({
                    "name": name,
                    "correlationKey": correlation_key,
                    "variables": parse_variables(variables.as_deref())?,
                });
                if let Some(ttl) = ttl {
                    body["timeToLive"] = json!(ttl.as_millis() as u64);
                }
                if let Some(id) = message_id {
                    body["messageId"] = json!(id);
                }
                self.post("/v2/messages/publication", body).await
            }
            ClientCommand::Jobs { command } => self.jobs(command).await,
            ClientCommand::Resolve { incident_key } => {
                self.post(
                    &format!("/v2/incidents/{incident_key}/resolution"),
                    json!({}),
                )
                .await
            }
            ClientCommand::Status => self.get("/v2/topology").await,
            ClientCommand::Instance { key } => {
                let instance = self.get(&format!("/v2/process-instances/{key}")).await?;
                let incidents = self
                    .post(
                        "/v2/incidents/search",
                        json!({"filter": {"processInstanceKey": key}}),
                    )
                    .await?;
                Ok(json!({"processInstance": instance, "incidents": incidents["items"]}))
            }
            ClientCommand::Instances { .. } | ClientCommand::Incidents { .. } => {
                bail!("a listing reached the single-call path")
            }
        }
    }

    async fn jobs(&self, command: JobsCommand) -> Result<Value> {
        match command {
            JobsCommand::Activate {
                job_type,
                max,
                worker,
                timeout,
            } => {
                self.post(
                    "/v2/jobs/activation",
                    json!({
                        "type": job_type,
                        "worker": worker,
                        "timeout": timeout.as_millis() as u64,
                        "maxJobsToActivate": max,
                    }),
                )
                .await
            }
            JobsCommand::Complete { key, variables } => {
                self.post(
                    &format!("/v2/jobs/{key}/completion"),
                    json!({"variables": parse_variables(variables.as_deref())?}),
                )
                .await
            }
            JobsCommand::Fail {
                key,
                retries,
                message,
                backoff,
            } => {
                let mut body = json!({"retries": retries, "errorMessage": message});
                if let Some(backoff) = backoff {
                    body["retryBackOff"] = json!(backoff.as_millis() as u64);
                }
                self.post(&format!("/v2/jobs/{key}/failure"), body).await
            }
            JobsCommand::Error { key, code, message } => {
                self.post(
                    &format!("/v2/jobs/{key}/error"),
                    json!({"errorCode": code, "errorMessage": message}),
                )
                .await
            }
            JobsCommand::Retries { key, retries } => {
                let response = self
                    .http
                    .patch(format!("{}/v2/jobs/{key}", self.base))
                    .json(&json!({"changeset": {"retries": retries}}))
                    .send()
                    .await;
                self.read(response).await
            }
            JobsCommand::List { .. } => bail!("a listing reached the single-call path"),
        }
    }

    async fn deploy(&self, files: &[PathBuf]) -> Result<Value> {
        let mut form = reqwest::multipart::Form::new();
        for path in files {
            let content =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "process.bpmn".to_owned());
            let part = reqwest::multipart::Part::bytes(content)
                .file_name(name)
                .mime_str("application/xml")?;
            form = form.part("resources", part);
        }
        let response = self
            .http
            .post(format!("{}/v2/deployments", self.base))
            .multipart(form)
            .send()
            .await;
        self.read(response).await
    }

    async fn get(&self, path: &str) -> Result<Value> {
        let response = self.http.get(format!("{}{path}", self.base)).send().await;
        self.read(response).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> Result<Value> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await;
        self.read(response).await
    }

    async fn read(&self, response: reqwest::Result<reqwest::Response>) -> Result<Value> {
        let response = response.with_context(|| {
            format!(
                "cannot reach the gateway at {} (is `rill standalone` running?)",
                self.base
            )
        })?;
        let status = response.status();
        let text = response.text().await.context("reading the response")?;
        let body: Value = if text.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if !status.is_success() {
            let detail = body
                .get("detail")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| body.to_string());
            let title = body
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("request failed");
            bail!("{status} {title}: {detail}");
        }
        Ok(body)
    }
}

fn parse_variables(text: Option<&str>) -> Result<Value> {
    let Some(text) = text else {
        return Ok(json!({}));
    };
    let value: Value = serde_json::from_str(text)
        .with_context(|| format!("--variables is not valid JSON: {text}"))?;
    if !value.is_object() {
        bail!("--variables must be a JSON object like '{{\"a\": 1}}', got: {text}");
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_must_be_a_json_object() {
        assert_eq!(parse_variables(None).unwrap(), json!({}));
        assert_eq!(
            parse_variables(Some(r#"{"a":1}"#)).unwrap(),
            json!({"a": 1})
        );
        let err = parse_variables(Some("[1]")).unwrap_err().to_string();
        assert!(err.contains("must be a JSON object"), "{err}");
        let err = parse_variables(Some("{oops")).unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }

    #[tokio::test]
    async fn address_needs_a_scheme() {
        assert!(Client::new("localhost:8080", None).await.is_err());
        assert!(Client::new("http://localhost:8080/", None).await.is_ok());
    }
}
