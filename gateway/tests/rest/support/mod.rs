//! A gateway on a real socket (127.0.0.1, a free port) and a real HTTP client.

pub mod engine_backend;
pub mod schema;
pub mod scripted_backend;

use std::sync::Arc;
use std::time::Duration;

use rill_config::{ByteSize, GatewayConfig};
use rill_gateway::{Authenticator, GatewayBackend, GatewayError, GatewayMetrics, RestServer};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Small limits so tests of the limits stay fast.
pub fn test_config() -> GatewayConfig {
    GatewayConfig {
        host: "127.0.0.1".into(),
        rest_port: 0,
        max_message_size: ByteSize(64 * 1024),
        max_variable_document_size: ByteSize(64 * 1024),
        request_timeout: Duration::from_secs(2),
        long_polling_timeout: Duration::from_millis(800),
        ..GatewayConfig::default()
    }
}

pub struct TestGateway {
    pub base: String,
    pub client: reqwest::Client,
    pub registry: prometheus::Registry,
    shutdown: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<Result<(), GatewayError>>>,
}

/// An HTTP answer: status, headers, and the body parsed as JSON (`Null` when empty).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Asserts an RFC 9457 problem with this status and title, whose detail contains
    /// every fragment, and whose instance is `path`.
    #[track_caller]
    pub fn assert_problem(&self, status: u16, title: &str, path: &str, fragments: &[&str]) {
        assert_eq!(self.status, status, "status of {:?}", self.body);
        assert_eq!(
            self.content_type(),
            "application/problem+json",
            "{:?}",
            self.body
        );
        assert_eq!(self.body["type"], "about:blank", "{:?}", self.body);
        assert_eq!(self.body["title"], title, "{:?}", self.body);
        assert_eq!(self.body["status"], status, "{:?}", self.body);
        assert_eq!(self.body["instance"], path, "{:?}", self.body);
        let detail = self.body["detail"].as_str().unwrap_or_default();
        for fragment in fragments {
            assert!(
                detail.contains(fragment),
                "detail {detail:?} lacks {fragment:?}"
            );
        }
    }
}

impl TestGateway {
    pub async fn start(backend: Arc<dyn GatewayBackend>) -> TestGateway {
        TestGateway::start_with(backend, test_config()).await
    }

    pub async fn start_with(
        backend: Arc<dyn GatewayBackend>,
        config: GatewayConfig,
    ) -> TestGateway {
        TestGateway::start_secured(backend, config, Arc::new(Authenticator::none())).await
    }

    /// A gateway whose requests must pass `authenticator`.
    pub async fn start_secured(
        backend: Arc<dyn GatewayBackend>,
        config: GatewayConfig,
        authenticator: Arc<Authenticator>,
    ) -> TestGateway {
        let registry = prometheus::Registry::new();
        let metrics = GatewayMetrics::register(&registry).expect("metrics");
        let server = RestServer::bind(&config, authenticator, backend, metrics)
            .await
            .expect("bind");
        let address = server.local_addr().expect("address");
        let (shutdown, stop) = oneshot::channel::<()>();
        let handle = tokio::spawn(server.serve(async move {
            let _ = stop.await;
        }));
        TestGateway {
            base: format!("http://{address}"),
            client: reqwest::Client::new(),
            registry,
            shutdown: Some(shutdown),
            handle: Some(handle),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    async fn reply(response: reqwest::Response) -> Reply {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        let response = self
            .client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("request");
        Self::reply(response).await
    }

    /// Sends `body` as is, with a JSON content type.
    pub async fn send_raw(
        &self,
        method: reqwest::Method,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let response = self
            .client
            .request(method, self.url(path))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .expect("request");
        Self::reply(response).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Reply {
        let response = self
            .client
            .put(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("request");
        Self::reply(response).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Reply {
        let response = self
            .client
            .patch(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("request");
        Self::reply(response).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        let response = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("request");
        Self::reply(response).await
    }

    /// `POST /v2/deployments` with each file as a `resources` part.
    pub async fn deploy(&self, files: &[(&str, &[u8])]) -> Reply {
        let mut form = reqwest::multipart::Form::new();
        for (name, content) in files {
            let part = reqwest::multipart::Part::bytes(content.to_vec())
                .file_name((*name).to_owned())
                .mime_str("application/xml")
                .expect("mime");
            form = form.part("resources", part);
        }
        let response = self
            .client
            .post(self.url("/v2/deployments"))
            .multipart(form)
            .send()
            .await
            .expect("request");
        Self::reply(response).await
    }

    /// The metrics registry's text exposition.
    pub fn metrics_text(&self) -> String {
        use prometheus::Encoder;
        let mut out = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("encode");
        String::from_utf8(out).expect("utf8")
    }

    /// Signals shutdown and waits for the server to stop.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(Duration::from_secs(5), handle)
                .await
                .expect("server stops in time")
                .expect("server task")
                .expect("server result");
        }
    }

    /// Signals shutdown without waiting.
    pub fn begin_shutdown(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Deploys `one_task_process(process_id, job_type)`; answers the deployment.
pub async fn deploy_one_task(gateway: &TestGateway, process_id: &str, job_type: &str) -> Value {
    let xml = one_task_process(process_id, job_type);
    let reply = gateway
        .deploy(&[(&format!("{process_id}.bpmn"), xml.as_bytes())])
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body
}

/// Starts an instance of `process_id` with `variables`; answers its key.
pub async fn create(gateway: &TestGateway, process_id: &str, variables: Value) -> String {
    let reply = gateway
        .post(
            "/v2/process-instances",
            serde_json::json!({"processDefinitionId": process_id, "variables": variables}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.body["processInstanceKey"]
        .as_str()
        .expect("key is a string")
        .to_owned()
}

/// A process with one service task of type `job_type`.
pub fn one_task_process(process_id: &str, job_type: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="task">
      <bpmn:extensionElements><zeebe:taskDefinition type="{job_type}" retries="3" /></bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="task" />
    <bpmn:sequenceFlow id="f2" sourceRef="task" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>"#
    )
}

/// A process that waits for message `message_name` with a fixed correlation key.
pub fn message_process(process_id: &str, message_name: &str, correlation_key: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:intermediateCatchEvent id="wait">
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:messageEventDefinition messageRef="msg" />
    </bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="end" />
  </bpmn:process>
  <bpmn:message id="msg" name="{message_name}">
    <bpmn:extensionElements><zeebe:subscription correlationKey="{correlation_key}" /></bpmn:extensionElements>
  </bpmn:message>
</bpmn:definitions>"#
    )
}
