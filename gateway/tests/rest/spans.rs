//! Every client request runs in one `client_request` span, opened by the operations
//! layer: the operation's name, the key the request names, and the partition it went to.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, create, deploy_one_task};

/// The fields of one closed `client_request` span.
#[derive(Clone, Debug, Default, PartialEq)]
struct RequestSpan {
    operation: String,
    key: Option<i64>,
    partition: Option<u64>,
}

impl Visit for RequestSpan {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "operation" {
            self.operation = value.to_owned();
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        match field.name() {
            "key" => self.key = Some(value),
            "partition" => self.partition = u64::try_from(value).ok(),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "key" => self.key = i64::try_from(value).ok(),
            "partition" => self.partition = Some(value),
            _ => {}
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

/// Keeps the fields of every `client_request` span that closes.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<RequestSpan>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "client_request" {
            return;
        }
        let mut fields = RequestSpan::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<RequestSpan>()
        {
            values.record(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && let Some(fields) = span.extensions().get::<RequestSpan>()
        {
            self.0.lock().unwrap().push(fields.clone());
        }
    }
}

// One thread: the gateway's tasks run where the test's subscriber is the default.
#[tokio::test(flavor = "current_thread")]
async fn each_request_has_a_span_with_its_operation_key_and_partition() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let gateway = TestGateway::start(EngineBackend::new(2)).await;
    deploy_one_task(&gateway, "traced", "never").await;
    let instance = create(&gateway, "traced", json!({})).await;
    let key: i64 = instance.parse().unwrap();
    let path = format!("/v2/process-instances/{instance}/cancellation");
    let cancelled = gateway.post(&path, json!({})).await;
    assert_eq!(cancelled.status, 204, "{:?}", cancelled.body);
    // A key of a partition the cluster does not have: a span, with no partition.
    let missing = gateway
        .post("/v2/jobs/9223372036854775807/failure", json!({}))
        .await;
    assert_eq!(missing.status, 404, "{:?}", missing.body);
    gateway.stop().await;

    let seen = spans.0.lock().unwrap().clone();
    let find = |operation: &str| {
        seen.iter()
            .find(|span| span.operation == operation)
            .unwrap_or_else(|| panic!("no {operation} span in {seen:?}"))
            .clone()
    };
    assert_eq!(find("DeployResource").partition, Some(1));
    let created = find("CreateProcessInstance");
    assert_eq!(created.key, None, "created by id");
    let instance_partition = u64::try_from(key >> 51).unwrap();
    assert_eq!(created.partition, Some(instance_partition));
    assert_eq!(
        find("CancelProcessInstance"),
        RequestSpan {
            operation: "CancelProcessInstance".to_owned(),
            key: Some(key),
            partition: Some(instance_partition),
        }
    );
    let failed = find("FailJob");
    assert_eq!(failed.key, Some(i64::MAX));
    assert_eq!(failed.partition, None);
}
