//! RPA scripts through the REST API: a deployment answers each script as a `resource`
//! entry, and `GET /v2/resources/{key}` and its `/content` serve it.

use serde_json::Value;

use crate::support::TestGateway;
use crate::support::engine_backend::EngineBackend;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/tests/fixtures/modeler")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[tokio::test]
async fn a_deployed_rpa_script_is_answered_and_served() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let script = fixture("book-invoice.rpa");
    let model = fixture("rpa-invoice-booking.bpmn");
    let reply = gateway
        .deploy(&[
            ("book-invoice.rpa", script.as_slice()),
            ("rpa-invoice-booking.bpmn", model.as_slice()),
        ])
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let entries = reply.body["deployments"].as_array().expect("deployments");
    let resources: Vec<&Value> = entries
        .iter()
        .filter_map(|entry| entry.get("resource"))
        .collect();
    assert_eq!(resources.len(), 1, "{entries:?}");
    let resource = resources[0];
    assert_eq!(resource["resourceId"], "book-invoice");
    assert_eq!(resource["resourceName"], "book-invoice.rpa");
    assert_eq!(resource["version"], 1);
    assert_eq!(resource["tenantId"], "<default>");
    let key = resource["resourceKey"].as_str().expect("a key as text");
    assert!(key.parse::<i64>().is_ok(), "{key}");
    // Each entry is one thing: the script's has nothing else.
    let entry = entries
        .iter()
        .find(|entry| entry.get("resource").is_some())
        .expect("the script's entry");
    assert_eq!(entry.as_object().map(|o| o.len()), Some(1), "{entry}");

    let reply = gateway.get(&format!("/v2/resources/{key}")).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["resourceKey"], key);
    assert_eq!(reply.body["resourceId"], "book-invoice");
    assert_eq!(reply.body["resourceName"], "book-invoice.rpa");
    assert_eq!(reply.body["version"], 1);
    assert_eq!(reply.body["tenantId"], "<default>");
    assert!(reply.body.get("versionTag").is_some(), "{:?}", reply.body);

    let reply = gateway.get(&format!("/v2/resources/{key}/content")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type(), "application/octet-stream");
    let deployed: Value = serde_json::from_slice(&script).expect("the script is JSON");
    assert_eq!(reply.body, deployed);

    for path in [
        "/v2/resources/2251799813685999",
        "/v2/resources/2251799813685999/content",
    ] {
        let reply = gateway.get(path).await;
        assert_eq!(reply.status, 404, "{path}: {:?}", reply.body);
        assert_eq!(reply.body["title"], "NOT_FOUND", "{path}");
        let detail = reply.body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("2251799813685999"), "{detail}");
    }
    gateway.stop().await;
}
