//! The S3 backup store: S3-compatible object storage, with the filesystem store's layout
//! as keys (`<backup.s3.base-path>/<backupId>/partition-<p>/<file>`).
//!
//! A small client of its own over reqwest, signed with `sigv4` (the AWS SDK would cost
//! more to build than the whole broker). It uses PutObject (a multipart upload for a file
//! larger than one part), GetObject (streamed, and checked against the manifest by the
//! reader), ListObjectsV2 (paged) and DeleteObject. A custom endpoint is addressed
//! path-style (`http://host:port/bucket/key`), AWS virtual-hosted
//! (`https://bucket.s3.region.amazonaws.com/key`).
//!
//! The store's calls block (the [`BackupStore`] contract): each runs its request on a
//! small runtime of its own and waits for it, so that it can be called from the
//! backup's threads, from `spawn_blocking` and from inside the restore's runtime alike.

mod error;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use self::error::{Failure, S3Error, error_of};
use super::sigv4::{self, Credentials, SignedRequest, uri_encode};
use super::store::{
    BackupStore, FileSink, MANIFEST, PartitionBackupStatus, PartitionManifest, STATUS,
    parse_partition,
};

/// Files up to this size go up in one PutObject; larger ones in parts of this size.
/// S3 takes parts of 5 MiB and more (the last one aside) and at most 10,000 of them.
pub const DEFAULT_PART_SIZE: usize = 8 << 20;

/// Keys asked for per ListObjectsV2 page (S3's own maximum).
const LIST_PAGE: u32 = 1000;

/// Requests that fail in a way worth retrying (no answer, 500, 503) are tried this many
/// times in all.
const ATTEMPTS: u32 = 4;

/// The AWS variables the store reads when its settings leave them out.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    vars: HashMap<String, String>,
}

impl Environment {
    const NAMES: [&'static str; 5] = [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
    ];

    /// The process's AWS variables.
    pub fn process() -> Environment {
        Environment {
            vars: Self::NAMES
                .iter()
                .filter_map(|name| {
                    let value = std::env::var(name).ok()?;
                    (!value.is_empty()).then(|| (name.to_string(), value))
                })
                .collect(),
        }
    }

    /// Given variables (tests).
    pub fn of(vars: &[(&str, &str)]) -> Environment {
        Environment {
            vars: vars
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }
}

/// Backups in an S3 bucket.
#[derive(Clone)]
pub struct S3Store {
    inner: Arc<Inner>,
}

struct Inner {
    bucket: String,
    /// `""` or a prefix ending in `/`.
    prefix: String,
    /// The URL of the bucket, ending in `/`: keys are appended to it.
    bucket_url: Url,
    /// The `Host` header for `bucket_url`.
    host: String,
    region: String,
    credentials: Option<Credentials>,
    client: reqwest::Client,
    part_size: usize,
    list_page: u32,
}

impl std::fmt::Debug for S3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Store")
            .field("bucket", &self.inner.bucket)
            .field("prefix", &self.inner.prefix)
            .field("url", &self.inner.bucket_url.as_str())
            .field("region", &self.inner.region)
            .field("credentials", &self.inner.credentials)
            .finish()
    }
}

impl S3Store {
    /// The store `backup.s3.*` describes, credentials and region from `environment` when
    /// the settings leave them out. Whether the bucket can be reached is
    /// [`BackupStore::check`]'s question.
    pub fn from_config(
        config: &rill_config::S3BackupConfig,
        environment: &Environment,
    ) -> Result<S3Store, String> {
        let bucket = config
            .bucket
            .clone()
            .filter(|b| !b.is_empty())
            .ok_or("backup.s3.bucket: is not set, but backup.store is s3")?;
        let region = config
            .region
            .clone()
            .or_else(|| environment.get("AWS_REGION").map(str::to_owned))
            .or_else(|| environment.get("AWS_DEFAULT_REGION").map(str::to_owned))
            .unwrap_or_else(|| "us-east-1".to_owned());
        let credentials = match (&config.access_key, &config.secret_key) {
            (Some(access_key), Some(secret_key)) => Some(Credentials {
                access_key: access_key.clone(),
                secret_key: secret_key.clone(),
                session_token: None,
            }),
            _ => match (
                environment.get("AWS_ACCESS_KEY_ID"),
                environment.get("AWS_SECRET_ACCESS_KEY"),
            ) {
                (Some(access_key), Some(secret_key)) => Some(Credentials {
                    access_key: access_key.to_owned(),
                    secret_key: secret_key.to_owned(),
                    session_token: environment.get("AWS_SESSION_TOKEN").map(str::to_owned),
                }),
                _ => None,
            },
        };
        let bucket_url = match &config.endpoint {
            Some(endpoint) => {
                let mut url = Url::parse(endpoint)
                    .map_err(|e| format!("backup.s3.endpoint: `{endpoint}` is not a URL ({e})"))?;
                if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                    return Err(format!(
                        "backup.s3.endpoint: `{endpoint}` is not an http:// or https:// URL"
                    ));
                }
                // Path-style: the bucket is the path's first segment.
                let path = format!(
                    "{}/{}/",
                    url.path().trim_end_matches('/'),
                    uri_encode(&bucket, false)
                );
                url.set_path(&path);
                url.set_query(None);
                url
            }
            None if bucket.contains('.') => {
                // A dotted bucket does not match AWS's wildcard certificate as a host.
                Url::parse(&format!(
                    "https://s3.{region}.amazonaws.com/{}/",
                    uri_encode(&bucket, false)
                ))
                .map_err(|e| format!("backup.s3.region: `{region}` makes no URL ({e})"))?
            }
            None => Url::parse(&format!("https://{bucket}.s3.{region}.amazonaws.com/")).map_err(
                |e| format!("backup.s3.bucket or backup.s3.region: they make no URL ({e})"),
            )?,
        };
        let host = match (bucket_url.host_str(), bucket_url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => return Err("backup.s3.endpoint: the URL has no host".to_owned()),
        };
        let prefix = config
            .base_path
            .as_deref()
            .map(|p| p.trim_matches('/'))
            .filter(|p| !p.is_empty())
            .map(|p| format!("{p}/"))
            .unwrap_or_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // A part of 8 MiB goes up well within this on any link a backup can use.
            .timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| format!("cannot build the S3 client: {e}"))?;
        Ok(S3Store {
            inner: Arc::new(Inner {
                bucket,
                prefix,
                bucket_url,
                host,
                region,
                credentials,
                client,
                part_size: DEFAULT_PART_SIZE,
                list_page: LIST_PAGE,
            }),
        })
    }

    /// The same store with parts (and the single-upload limit) of `bytes`, and list
    /// pages of `keys` (tests: multipart and paging with little data).
    pub fn with_sizes(self, part_size: usize, list_page: u32) -> S3Store {
        let inner = Inner {
            bucket: self.inner.bucket.clone(),
            prefix: self.inner.prefix.clone(),
            bucket_url: self.inner.bucket_url.clone(),
            host: self.inner.host.clone(),
            region: self.inner.region.clone(),
            credentials: self.inner.credentials.clone(),
            client: self.inner.client.clone(),
            part_size: part_size.max(1),
            list_page: list_page.max(1),
        };
        S3Store {
            inner: Arc::new(inner),
        }
    }

    fn part_key(&self, backup_id: u64, partition: u16, name: &str) -> String {
        format!(
            "{}{backup_id}/partition-{partition}/{name}",
            self.inner.prefix
        )
    }

    fn get_json<T: DeserializeOwned + Send + 'static>(
        &self,
        key: String,
    ) -> Result<Option<T>, String> {
        let inner = self.inner.clone();
        run(async move {
            let Some(bytes) = inner.get_whole(&key).await? else {
                return Ok(None);
            };
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{} is not readable: {e}", inner.describe(&key)))
        })
    }

    fn put_json<T: Serialize>(&self, key: String, value: &T) -> Result<(), String> {
        let body = serde_json::to_vec_pretty(value).map_err(|e| format!("encode {key}: {e}"))?;
        let inner = self.inner.clone();
        run(async move { inner.put(&key, Bytes::from(body)).await })
    }
}

impl BackupStore for S3Store {
    fn location(&self) -> String {
        format!("s3://{}/{}", self.inner.bucket, self.inner.prefix)
    }

    fn check(&self) -> Result<(), String> {
        if self.inner.credentials.is_none() {
            return Err(
                "backup.s3.access-key and backup.s3.secret-key: neither they nor \
                        AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set, so the S3 \
                        bucket cannot be reached: set one pair"
                    .to_owned(),
            );
        }
        let inner = self.inner.clone();
        let checked = run_typed(async move {
            let prefix = inner.prefix.clone();
            inner
                .send(S3Call {
                    method: Method::GET,
                    key: "",
                    query: vec![
                        ("list-type", "2".to_owned()),
                        ("max-keys", "1".to_owned()),
                        ("prefix", prefix),
                    ],
                    body: Bytes::new(),
                })
                .await
                .map(|_| ())
        });
        checked.map_err(|e| {
            let setting = match e.code() {
                "NoSuchBucket" => "backup.s3.bucket",
                "InvalidAccessKeyId"
                | "SignatureDoesNotMatch"
                | "AccessDenied"
                | "InvalidClientTokenId"
                | "ExpiredToken"
                | "Forbidden" => {
                    "backup.s3.access-key and backup.s3.secret-key (or AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY)"
                }
                "AuthorizationHeaderMalformed"
                | "PermanentRedirect"
                | "IllegalLocationConstraintException" => "backup.s3.region",
                "Unreachable" => "backup.s3.endpoint",
                _ => "backup.s3.*",
            };
            format!(
                "{setting}: the backup store {} cannot be used: {e}",
                self.location()
            )
        })
    }

    fn write_status(&self, status: &PartitionBackupStatus, _sync: bool) -> Result<(), String> {
        // An object is durable once PutObject answers.
        self.put_json(
            self.part_key(status.backup_id, status.partition_id, STATUS),
            status,
        )
    }

    fn write_manifest(&self, manifest: &PartitionManifest) -> Result<(), String> {
        self.put_json(
            self.part_key(manifest.backup_id, manifest.partition_id, MANIFEST),
            manifest,
        )
    }

    fn status(
        &self,
        backup_id: u64,
        partition: u16,
    ) -> Result<Option<PartitionBackupStatus>, String> {
        self.get_json(self.part_key(backup_id, partition, STATUS))
    }

    fn manifest(
        &self,
        backup_id: u64,
        partition: u16,
    ) -> Result<Option<PartitionManifest>, String> {
        self.get_json(self.part_key(backup_id, partition, MANIFEST))
    }

    fn backup_ids(&self) -> Result<Vec<u64>, String> {
        let inner = self.inner.clone();
        let prefix = inner.prefix.clone();
        let listed = run(async move { inner.list(&prefix, true).await })?;
        let mut ids: Vec<u64> = listed
            .prefixes
            .iter()
            .filter_map(|p| {
                p.strip_prefix(&self.inner.prefix)?
                    .strip_suffix('/')?
                    .parse()
                    .ok()
            })
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn partitions(&self, backup_id: u64) -> Result<Vec<u16>, String> {
        let inner = self.inner.clone();
        let prefix = format!("{}{backup_id}/", inner.prefix);
        let listed = {
            let prefix = prefix.clone();
            run(async move { inner.list(&prefix, true).await })?
        };
        let mut partitions: Vec<u16> = listed
            .prefixes
            .iter()
            .filter_map(|p| parse_partition(p.strip_prefix(&prefix)?.strip_suffix('/')?))
            .collect();
        partitions.sort_unstable();
        Ok(partitions)
    }

    fn delete(&self, backup_id: u64) -> Result<bool, String> {
        let inner = self.inner.clone();
        let prefix = format!("{}{backup_id}/", inner.prefix);
        run(async move {
            let mut keys = inner.list(&prefix, false).await?.keys;
            if keys.is_empty() {
                return Ok(false);
            }
            // Statuses first, then manifests: a delete that stops half-way leaves a
            // backup that no longer reads as complete.
            keys.sort_by_key(|key| delete_stage(key));
            for stage in 0..3 {
                let mut deletes = Vec::new();
                for key in &keys {
                    if delete_stage(key) == stage {
                        let (inner, key) = (inner.clone(), key.clone());
                        deletes.push(async move { inner.delete_object(&key).await });
                    }
                }
                let results: Vec<Result<(), String>> = futures::stream::iter(deletes)
                    .buffer_unordered(8)
                    .collect()
                    .await;
                results.into_iter().collect::<Result<Vec<()>, String>>()?;
            }
            Ok(true)
        })
    }

    fn create_file(
        &self,
        backup_id: u64,
        partition: u16,
        name: &str,
    ) -> Result<Box<dyn FileSink>, String> {
        Ok(Box::new(Upload {
            inner: self.inner.clone(),
            key: self.part_key(backup_id, partition, name),
            buffer: Vec::new(),
            upload_id: None,
            parts: Vec::new(),
        }))
    }

    fn open_file(
        &self,
        backup_id: u64,
        partition: u16,
        name: &str,
    ) -> Result<(Box<dyn std::io::Read + Send>, String), String> {
        let key = self.part_key(backup_id, partition, name);
        let what = self.inner.describe(&key);
        let inner = self.inner.clone();
        let response = run(async move {
            Ok(inner
                .send(S3Call {
                    method: Method::GET,
                    key: &key,
                    query: Vec::new(),
                    body: Bytes::new(),
                })
                .await?)
        })?;
        Ok((
            Box::new(ObjectReader {
                response: Some(response),
                chunk: Bytes::new(),
                what: what.clone(),
            }),
            what,
        ))
    }
}

/// One request: a key under the bucket (`""`: the bucket) and its query, unencoded.
struct S3Call<'a> {
    method: Method,
    key: &'a str,
    query: Vec<(&'static str, String)>,
    body: Bytes,
}

/// What a ListObjectsV2 walk found.
#[derive(Default)]
struct Listing {
    keys: Vec<String>,
    prefixes: Vec<String>,
}

impl Inner {
    fn describe(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// Sends a signed request; an answer other than 2xx is an error naming the bucket,
    /// the key and S3's error code. Retried when S3 or the network failed on its side.
    async fn send(&self, call: S3Call<'_>) -> Result<reqwest::Response, S3Error> {
        let mut attempt = 1;
        loop {
            match self.send_once(&call).await {
                Err(error) if error.retry && attempt < ATTEMPTS => {
                    tracing::debug!(%error, attempt, "S3 request failed; retrying");
                    tokio::time::sleep(Duration::from_millis(200 << (2 * (attempt - 1)))).await;
                    attempt += 1;
                }
                Err(error) => return Err(error),
                Ok(response) => return Ok(response),
            }
        }
    }

    async fn send_once(&self, call: &S3Call<'_>) -> Result<reqwest::Response, S3Error> {
        let what = format!("S3 {} {}", call.method, self.describe(call.key));
        let Some(credentials) = self.credentials.as_ref() else {
            return Err(S3Error {
                what,
                failure: Failure::NoCredentials,
                retry: false,
            });
        };
        let path = format!("{}{}", self.bucket_url.path(), uri_encode(call.key, true));
        let query: Vec<(String, String)> = call
            .query
            .iter()
            .map(|(name, value)| (uri_encode(name, false), uri_encode(value, false)))
            .collect();
        let query_text = sigv4::canonical_query(&query);
        let mut url = self.bucket_url.clone();
        url.set_path(&path);
        url.set_query((!query_text.is_empty()).then_some(query_text.as_str()));
        let payload_sha256 = sigv4::sha256_hex(&call.body);
        let headers = sigv4::sign(
            credentials,
            &self.region,
            &sigv4::amz_date(crate::clock::now().millis()),
            &SignedRequest {
                method: call.method.as_str(),
                host: &self.host,
                path: url.path(),
                query: &query,
                headers: &[],
                payload_sha256: &payload_sha256,
            },
        );
        let mut request = self
            .client
            .request(call.method.clone(), url)
            .body(call.body.clone());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| S3Error {
            what: what.clone(),
            failure: if e.is_connect() || e.is_timeout() {
                Failure::Unreachable(format!("cannot reach {}: {e}", self.bucket_url))
            } else {
                Failure::Transport(e.to_string())
            },
            retry: true,
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.bytes().await.unwrap_or_default();
        let (code, message) = error_of(&body);
        let retry = matches!(
            status,
            StatusCode::INTERNAL_SERVER_ERROR | StatusCode::SERVICE_UNAVAILABLE
        ) || code == "SlowDown";
        let code = if code.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("error")
                .replace(' ', "")
        } else {
            code
        };
        Err(S3Error {
            what,
            failure: Failure::Answer {
                status: status.as_u16(),
                code,
                message,
            },
            retry,
        })
    }

    async fn put(&self, key: &str, body: Bytes) -> Result<(), String> {
        self.send(S3Call {
            method: Method::PUT,
            key,
            query: Vec::new(),
            body,
        })
        .await?;
        Ok(())
    }

    /// An object whole, or `None` if there is none.
    async fn get_whole(&self, key: &str) -> Result<Option<Bytes>, String> {
        let response = match self
            .send(S3Call {
                method: Method::GET,
                key,
                query: Vec::new(),
                body: Bytes::new(),
            })
            .await
        {
            Ok(response) => response,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        response
            .bytes()
            .await
            .map(Some)
            .map_err(|e| format!("cannot read {}: {e}", self.describe(key)))
    }

    async fn delete_object(&self, key: &str) -> Result<(), String> {
        self.send(S3Call {
            method: Method::DELETE,
            key,
            query: Vec::new(),
            body: Bytes::new(),
        })
        .await?;
        Ok(())
    }

    /// Every key under `prefix` (with `grouped`, the next level's prefixes instead of
    /// the keys below them), page by page.
    async fn list(&self, prefix: &str, grouped: bool) -> Result<Listing, String> {
        let mut listing = Listing::default();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![
                ("list-type", "2".to_owned()),
                ("max-keys", self.list_page.to_string()),
                ("prefix", prefix.to_owned()),
            ];
            if grouped {
                query.push(("delimiter", "/".to_owned()));
            }
            if let Some(token) = &token {
                query.push(("continuation-token", token.clone()));
            }
            let response = self
                .send(S3Call {
                    method: Method::GET,
                    key: "",
                    query,
                    body: Bytes::new(),
                })
                .await?;
            let what = format!("the listing of {}", self.describe(prefix));
            let body = response
                .text()
                .await
                .map_err(|e| format!("cannot read {what}: {e}"))?;
            let document =
                roxmltree::Document::parse(&body).map_err(|e| format!("{what} is not XML: {e}"))?;
            let root = document.root_element();
            for node in root.children().filter(|n| n.is_element()) {
                match node.tag_name().name() {
                    "Contents" => listing.keys.extend(child_text(node, "Key")),
                    "CommonPrefixes" => listing.prefixes.extend(child_text(node, "Prefix")),
                    _ => {}
                }
            }
            let truncated = child_text(root, "IsTruncated").as_deref() == Some("true");
            token = child_text(root, "NextContinuationToken");
            if !truncated {
                return Ok(listing);
            }
            if token.is_none() {
                return Err(format!(
                    "{what} is truncated but names no continuation token"
                ));
            }
        }
    }

    async fn create_multipart(&self, key: &str) -> Result<String, String> {
        let response = self
            .send(S3Call {
                method: Method::POST,
                key,
                query: vec![("uploads", String::new())],
                body: Bytes::new(),
            })
            .await?;
        let body = response.text().await.unwrap_or_default();
        roxmltree::Document::parse(&body)
            .ok()
            .and_then(|d| child_text(d.root_element(), "UploadId"))
            .ok_or_else(|| {
                format!(
                    "S3 CreateMultipartUpload {}: the answer names no UploadId",
                    self.describe(key)
                )
            })
    }

    async fn upload_part(
        &self,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Bytes,
    ) -> Result<String, String> {
        let response = self
            .send(S3Call {
                method: Method::PUT,
                key,
                query: vec![
                    ("partNumber", number.to_string()),
                    ("uploadId", upload_id.to_owned()),
                ],
                body,
            })
            .await?;
        response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "S3 UploadPart {} part {number}: the answer has no ETag",
                    self.describe(key)
                )
            })
    }

    async fn complete_multipart(
        &self,
        key: &str,
        upload_id: &str,
        parts: &[(u32, String)],
    ) -> Result<(), String> {
        let mut body = String::from("<CompleteMultipartUpload>");
        for (number, etag) in parts {
            body.push_str(&format!(
                "<Part><PartNumber>{number}</PartNumber><ETag>{}</ETag></Part>",
                xml_escape(etag)
            ));
        }
        body.push_str("</CompleteMultipartUpload>");
        let response = self
            .send(S3Call {
                method: Method::POST,
                key,
                query: vec![("uploadId", upload_id.to_owned())],
                body: Bytes::from(body),
            })
            .await?;
        // S3 may answer 200 and still have failed: the error is then the body.
        let text = response.text().await.unwrap_or_default();
        let (code, message) = error_of(text.as_bytes());
        if !code.is_empty() {
            return Err(format!(
                "S3 CompleteMultipartUpload {}: {code}: {message}",
                self.describe(key)
            ));
        }
        Ok(())
    }

    async fn abort_multipart(&self, key: &str, upload_id: &str) {
        let aborted = self
            .send(S3Call {
                method: Method::DELETE,
                key,
                query: vec![("uploadId", upload_id.to_owned())],
                body: Bytes::new(),
            })
            .await;
        if let Err(e) = aborted {
            tracing::warn!(error = %e, "cannot abort an S3 multipart upload; the bucket's lifecycle rules remove it");
        }
    }
}

/// The order a backup's objects are deleted in: statuses, manifests, data.
fn delete_stage(key: &str) -> u8 {
    if key.ends_with(STATUS) {
        0
    } else if key.ends_with(MANIFEST) {
        1
    } else {
        2
    }
}

fn child_text(node: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
    node.children()
        .find(|n| n.is_element() && n.tag_name().name() == name)
        .map(|n| n.text().unwrap_or("").to_owned())
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The runtime the S3 requests run on: built once, never dropped (a runtime must not be
/// dropped inside another's task, and the store's clones live anywhere).
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("rill-s3")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the S3 client's runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs `work` on the S3 runtime and waits for it, from any thread that may block.
fn run<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
) -> Result<T, String> {
    let task = runtime()?.spawn(work);
    futures::executor::block_on(task).map_err(|e| format!("an S3 request stopped: {e}"))?
}

/// [`run`], keeping the request's typed error.
fn run_typed<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, S3Error>> + Send + 'static,
) -> Result<T, S3Error> {
    let stopped = |detail: String| S3Error {
        what: "an S3 request".to_owned(),
        failure: Failure::Transport(detail),
        retry: false,
    };
    let task = runtime().map_err(stopped)?.spawn(work);
    futures::executor::block_on(task).map_err(|e| stopped(format!("it stopped: {e}")))?
}

/// A data file going up: one PutObject if it fits in a part, else a multipart upload
/// whose parts go up as they fill.
struct Upload {
    inner: Arc<Inner>,
    key: String,
    buffer: Vec<u8>,
    upload_id: Option<String>,
    parts: Vec<(u32, String)>,
}

impl Upload {
    fn send_part(&mut self, body: Vec<u8>) -> Result<(), String> {
        let inner = self.inner.clone();
        let key = self.key.clone();
        let upload_id = match &self.upload_id {
            Some(id) => id.clone(),
            None => {
                let (inner, key) = (inner.clone(), key.clone());
                let id = run(async move { inner.create_multipart(&key).await })?;
                self.upload_id = Some(id.clone());
                id
            }
        };
        let number = self.parts.len() as u32 + 1;
        let etag = run(async move {
            inner
                .upload_part(&key, &upload_id, number, Bytes::from(body))
                .await
        })?;
        self.parts.push((number, etag));
        Ok(())
    }
}

impl FileSink for Upload {
    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.buffer.extend_from_slice(bytes);
        let part_size = self.inner.part_size;
        // A part leaves only once more follows: the last part may be small, no other.
        while self.buffer.len() > part_size {
            let rest = self.buffer.split_off(part_size);
            let part = std::mem::replace(&mut self.buffer, rest);
            self.send_part(part)?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
        let last = std::mem::take(&mut self.buffer);
        if self.upload_id.is_none() {
            let (inner, key) = (self.inner.clone(), self.key.clone());
            return run(async move { inner.put(&key, Bytes::from(last)).await });
        }
        self.send_part(last)?;
        let inner = self.inner.clone();
        let key = self.key.clone();
        let upload_id = self.upload_id.take().expect("checked above");
        let parts = std::mem::take(&mut self.parts);
        let completed = {
            let (inner, key, upload_id) = (inner.clone(), key.clone(), upload_id.clone());
            run(async move { inner.complete_multipart(&key, &upload_id, &parts).await })
        };
        if completed.is_err() {
            let _ = run(async move {
                inner.abort_multipart(&key, &upload_id).await;
                Ok(())
            });
        }
        completed
    }
}

impl Drop for Upload {
    /// An upload given up (the backup failed) leaves no parts behind.
    fn drop(&mut self) {
        if let Some(upload_id) = self.upload_id.take() {
            let (inner, key) = (self.inner.clone(), self.key.clone());
            let _ = run(async move {
                inner.abort_multipart(&key, &upload_id).await;
                Ok(())
            });
        }
    }
}

/// An object's body, read as it arrives.
struct ObjectReader {
    response: Option<reqwest::Response>,
    chunk: Bytes,
    what: String,
}

impl std::io::Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            let Some(mut response) = self.response.take() else {
                return Ok(0);
            };
            let what = self.what.clone();
            let (response, chunk) = run(async move {
                let chunk = response
                    .chunk()
                    .await
                    .map_err(|e| format!("cannot read {what}: {e}"))?;
                Ok((response, chunk))
            })
            .map_err(std::io::Error::other)?;
            match chunk {
                Some(chunk) => {
                    self.chunk = chunk;
                    self.response = Some(response);
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        let _ = self.chunk.split_to(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
