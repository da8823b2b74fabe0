//! The exporter's few calls to Elasticsearch, on the official client, with the answers
//! sorted into "done", "retry" and "refused".

use std::time::Duration;

use bytes::Bytes;
use elasticsearch::Elasticsearch;
use elasticsearch::auth::Credentials;
use elasticsearch::cert::{Certificate, CertificateValidation};
use elasticsearch::cluster::ClusterPutComponentTemplateParts;
use elasticsearch::http::Method;
use elasticsearch::http::Url;
use elasticsearch::http::headers::{CONTENT_TYPE, HeaderMap, HeaderValue};
use elasticsearch::http::response::Response;
use elasticsearch::http::transport::{
    MultiNodeConnectionPool, SingleNodeConnectionPool, Transport, TransportBuilder,
};
use elasticsearch::ilm::IlmPutLifecycleParts;
use elasticsearch::indices::IndicesPutIndexTemplateParts;
use rill_config::ElasticsearchExporterConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// The bulk response fields the exporter reads; the rest is left out by `filter_path`.
const BULK_FILTER_PATH: &str = "items.*._id,items.*.status,items.*.error";

#[derive(Serialize)]
struct BulkQuery {
    filter_path: &'static str,
}

/// Longest piece of a response body kept in logs and errors.
const BODY_EXCERPT: usize = 512;

/// A request that did not get a usable answer. Every one of these is retried.
#[derive(Debug)]
pub(crate) struct RequestFailure {
    /// Metric label: `connect`, `timeout`, `http-429`, `http-5xx`, `http-4xx`, `bad-response`.
    pub reason: &'static str,
    pub message: String,
    /// HTTP 413: the request body is larger than the cluster accepts.
    pub too_large: bool,
}

/// The answer to a setup request (template, policy).
pub(crate) enum SetupOutcome {
    Done,
    Retry(RequestFailure),
    Refused { status: u16, body: String },
}

/// Elasticsearch's bulk response: one item per action, in request order. (Its `errors`
/// flag is not needed: every item's status is read.)
#[derive(Debug, Deserialize)]
pub(crate) struct BulkResponse {
    #[serde(default)]
    pub items: Vec<BulkItem>,
}

/// An item is an object with one key, the action (`index` for the exporter).
#[derive(Debug, Deserialize)]
pub(crate) struct BulkItem {
    #[serde(alias = "create", alias = "update", alias = "delete")]
    pub index: Option<BulkItemResult>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BulkItemResult {
    #[serde(rename = "_id")]
    pub id: Option<DocumentId>,
    pub status: u16,
    pub error: Option<BulkItemError>,
}

/// A document id from a bulk answer: the exporter's own `{partitionId}-{position}` read
/// as numbers (no allocation per item, compared without formatting), anything else as
/// text for the error that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DocumentId {
    Record { partition: u16, position: u64 },
    Other(String),
}

impl DocumentId {
    fn parse(text: &str) -> DocumentId {
        // Only the canonical spelling (what the exporter writes) counts as a record's id.
        let number = |digits: &str| {
            let canonical = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'));
            canonical.then(|| digits.parse::<u64>().ok()).flatten()
        };
        text.split_once('-')
            .and_then(|(partition, position)| {
                Some(DocumentId::Record {
                    partition: u16::try_from(number(partition)?).ok()?,
                    position: number(position)?,
                })
            })
            .unwrap_or_else(|| DocumentId::Other(text.to_owned()))
    }
}

impl std::fmt::Display for DocumentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocumentId::Record {
                partition,
                position,
            } => write!(f, "{partition}-{position}"),
            DocumentId::Other(text) => f.write_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for DocumentId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Id;
        impl serde::de::Visitor<'_> for Id {
            type Value = DocumentId;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a document id")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<DocumentId, E> {
                Ok(DocumentId::parse(text))
            }
        }
        deserializer.deserialize_str(Id)
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum BulkItemError {
    Detailed {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        reason: Option<String>,
    },
    Text(String),
    Other(Value),
}

impl BulkItemError {
    pub fn kind(&self) -> &str {
        match self {
            BulkItemError::Detailed { kind, .. } => kind,
            BulkItemError::Text(_) | BulkItemError::Other(_) => "unknown",
        }
    }

    pub fn reason(&self) -> String {
        match self {
            BulkItemError::Detailed { reason, .. } => reason.clone().unwrap_or_default(),
            BulkItemError::Text(text) => text.clone(),
            BulkItemError::Other(value) => value.to_string(),
        }
    }
}

/// What to do with one bulk item's status.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ItemVerdict {
    Indexed,
    /// Worth sending again: overload, server trouble, or a cluster that is not ready
    /// (missing index with auto-create off, missing privileges) that an operator can fix.
    Retry,
    /// Refused for good (mapping conflict, unparsable document): log, count, skip.
    Refused,
}

pub(crate) fn item_verdict(status: u16) -> ItemVerdict {
    match status {
        200..=299 => ItemVerdict::Indexed,
        401 | 403 | 404 | 408 | 429 => ItemVerdict::Retry,
        400..=499 => ItemVerdict::Refused,
        _ => ItemVerdict::Retry,
    }
}

pub(crate) struct EsClient {
    client: Elasticsearch,
    timeout: Duration,
}

impl EsClient {
    /// Builds the client; no I/O happens here.
    pub fn new(config: &ElasticsearchExporterConfig) -> Result<EsClient> {
        let urls = parse_urls(&config.url).map_err(|problem| Error::Config {
            exporter: "elasticsearch",
            problems: vec![problem],
        })?;
        let mut builder = match urls.as_slice() {
            [single] => TransportBuilder::new(SingleNodeConnectionPool::new(single.clone())),
            _ => TransportBuilder::new(MultiNodeConnectionPool::round_robin(urls, None)),
        };
        builder = builder.timeout(config.request_timeout).disable_proxy();
        if let Some(credentials) = credentials(config) {
            builder = builder.auth(credentials);
        }
        if !config.tls.verify_certificates {
            builder = builder.cert_validation(CertificateValidation::None);
        } else if let Some(path) = &config.tls.ca_certificate {
            let pem = std::fs::read(path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let certificate = Certificate::from_pem(&pem).map_err(|e| {
                Error::Client(format!("tls.ca-certificate {}: {e}", path.display()))
            })?;
            builder = builder.cert_validation(CertificateValidation::Full(certificate));
        }
        let transport: Transport = builder.build().map_err(|e| Error::Client(e.to_string()))?;
        Ok(EsClient {
            client: Elasticsearch::new(transport),
            timeout: config.request_timeout,
        })
    }

    pub async fn put_component_template(&self, name: &str, body: &Value) -> SetupOutcome {
        let sent = self
            .client
            .cluster()
            .put_component_template(ClusterPutComponentTemplateParts::Name(name))
            .request_timeout(self.timeout)
            .body(body)
            .send()
            .await;
        setup_outcome(sent).await
    }

    pub async fn put_index_template(&self, name: &str, body: &Value) -> SetupOutcome {
        let sent = self
            .client
            .indices()
            .put_index_template(IndicesPutIndexTemplateParts::Name(name))
            .request_timeout(self.timeout)
            .body(body)
            .send()
            .await;
        setup_outcome(sent).await
    }

    pub async fn put_lifecycle_policy(&self, name: &str, body: &Value) -> SetupOutcome {
        let sent = self
            .client
            .ilm()
            .put_lifecycle(IlmPutLifecycleParts::Policy(name))
            .request_timeout(self.timeout)
            .body(body)
            .send()
            .await;
        setup_outcome(sent).await
    }

    /// Sends one bulk request (`body` is NDJSON) and parses the per-item results.
    pub async fn bulk(&self, body: Bytes) -> Result<BulkResponse, RequestFailure> {
        // Through the client's generic `send` rather than its `bulk` builder: that one
        // copies the body into a buffer grown from 1 KiB (a tenth of the exporter's CPU
        // with megabyte bulks); `Bytes` is sent as it is.
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        let response = self
            .client
            .send(
                Method::Post,
                "/_bulk",
                headers,
                Some(&BulkQuery {
                    filter_path: BULK_FILTER_PATH,
                }),
                Some(body),
                Some(self.timeout),
            )
            .await
            .map_err(transport_failure)?;
        let status = response.status_code().as_u16();
        if !(200..300).contains(&status) {
            let body = excerpt(&response.text().await.unwrap_or_default());
            return Err(RequestFailure {
                reason: status_reason(status),
                message: format!("bulk request answered HTTP {status}: {body}"),
                too_large: status == 413,
            });
        }
        let bytes = response.bytes().await.map_err(transport_failure)?;
        serde_json::from_slice(&bytes).map_err(|e| RequestFailure {
            reason: "bad-response",
            message: format!(
                "unreadable bulk response ({e}): {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ),
            too_large: false,
        })
    }
}

async fn setup_outcome(sent: Result<Response, elasticsearch::Error>) -> SetupOutcome {
    let response = match sent {
        Ok(response) => response,
        Err(e) => return SetupOutcome::Retry(transport_failure(e)),
    };
    let status = response.status_code().as_u16();
    if (200..300).contains(&status) {
        return SetupOutcome::Done;
    }
    let body = excerpt(&response.text().await.unwrap_or_default());
    match status {
        408 | 429 | 500..=599 => SetupOutcome::Retry(RequestFailure {
            reason: status_reason(status),
            message: format!("HTTP {status}: {body}"),
            too_large: false,
        }),
        _ => SetupOutcome::Refused { status, body },
    }
}

fn transport_failure(error: elasticsearch::Error) -> RequestFailure {
    RequestFailure {
        reason: if error.is_timeout() {
            "timeout"
        } else {
            "connect"
        },
        message: error.to_string(),
        too_large: false,
    }
}

fn status_reason(status: u16) -> &'static str {
    match status {
        429 => "http-429",
        500..=599 => "http-5xx",
        _ => "http-4xx",
    }
}

fn excerpt(text: &str) -> String {
    match text.char_indices().nth(BODY_EXCERPT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// One URL or several separated by commas (round robin), each `http://` or `https://`.
pub(crate) fn parse_urls(text: &str) -> Result<Vec<Url>, String> {
    let mut urls = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let url = Url::parse(part).map_err(|e| format!("url: '{part}' is not a URL ({e})"))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(format!("url: '{part}' must start with http:// or https://"));
        }
        urls.push(url);
    }
    if urls.is_empty() {
        return Err("url: no Elasticsearch URL given".to_owned());
    }
    Ok(urls)
}

fn credentials(config: &ElasticsearchExporterConfig) -> Option<Credentials> {
    if let Some(key) = &config.api_key {
        return Some(Credentials::EncodedApiKey(key.clone()));
    }
    if let Some(token) = &config.bearer_token {
        return Some(Credentials::Bearer(token.clone()));
    }
    match (&config.username, &config.password) {
        (Some(user), Some(password)) => Some(Credentials::Basic(user.clone(), password.clone())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_statuses_sort_into_retry_and_refused() {
        assert_eq!(item_verdict(201), ItemVerdict::Indexed);
        assert_eq!(item_verdict(200), ItemVerdict::Indexed);
        assert_eq!(item_verdict(429), ItemVerdict::Retry);
        assert_eq!(item_verdict(503), ItemVerdict::Retry);
        assert_eq!(item_verdict(404), ItemVerdict::Retry);
        assert_eq!(item_verdict(400), ItemVerdict::Refused);
        assert_eq!(item_verdict(409), ItemVerdict::Refused);
    }

    #[test]
    fn bulk_response_parses_items_and_errors() {
        let body = r#"{"errors":true,"items":[
            {"index":{"_id":"1-1","status":201}},
            {"index":{"_id":"1-2","status":400,"error":{"type":"document_parsing_exception","reason":"bad"}}},
            {"create":{"_id":"1-3","status":429,"error":"rejected"}}]}"#;
        let response: BulkResponse = serde_json::from_str(body).unwrap();
        let results: Vec<_> = response
            .items
            .iter()
            .map(|i| i.index.as_ref().unwrap())
            .collect();
        assert_eq!(
            results[0].id,
            Some(DocumentId::Record {
                partition: 1,
                position: 1
            })
        );
        assert_eq!(
            results[1].error.as_ref().unwrap().kind(),
            "document_parsing_exception"
        );
        assert_eq!(results[2].error.as_ref().unwrap().reason(), "rejected");
        assert_eq!(results[2].status, 429);
    }

    #[test]
    fn document_ids_are_read_as_numbers_only_when_canonical() {
        let record = |partition, position| DocumentId::Record {
            partition,
            position,
        };
        assert_eq!(DocumentId::parse("3-42"), record(3, 42));
        assert_eq!(DocumentId::parse("1-0"), record(1, 0));
        for other in [
            "1-042", "01-2", "1-", "-2", "1-2-3", "70000-1", "a-1", "1-+2", "x",
        ] {
            assert_eq!(
                DocumentId::parse(other),
                DocumentId::Other(other.into()),
                "{other}"
            );
            assert_eq!(DocumentId::parse(other).to_string(), other);
        }
        assert_eq!(record(2, 7).to_string(), "2-7");
    }

    #[test]
    fn urls_are_checked() {
        assert_eq!(
            parse_urls("http://a:9200, https://b:9200").unwrap().len(),
            2
        );
        assert!(parse_urls("ftp://a").unwrap_err().contains("http://"));
        assert!(parse_urls(" ").is_err());
        assert!(parse_urls("not a url").is_err());
    }
}
