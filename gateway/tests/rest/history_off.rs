//! A broker with `history.enabled = false` answers reads with its typed error: the
//! history store answers every read, and the engine none. The gateway answers them 403,
//! as Camunda's engine-only mode (no secondary storage) does, naming the setting;
//! commands go on.

use serde_json::json;

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, create, deploy_one_task};

#[tokio::test]
async fn without_history_every_read_fails_naming_the_setting() {
    let backend = EngineBackend::new(1);
    let gateway = TestGateway::start(backend.clone()).await;
    deploy_one_task(&gateway, "quiet", "never").await;
    let instance = create(&gateway, "quiet", json!({})).await;
    let read = gateway
        .get(&format!("/v2/process-instances/{instance}"))
        .await;
    assert_eq!(read.status, 200, "with history on: {:?}", read.body);
    backend.turn_history_off();

    let setting = "history.enabled = false";
    // A live instance: the engine does not answer for the history store.
    let path = format!("/v2/process-instances/{instance}");
    gateway
        .get(&path)
        .await
        .assert_problem(403, "FORBIDDEN", &path, &[setting]);
    let incident = format!("/v2/incidents/{instance}");
    gateway
        .get(&incident)
        .await
        .assert_problem(403, "FORBIDDEN", &incident, &[setting]);
    for search in [
        "/v2/process-instances/search".to_owned(),
        "/v2/incidents/search".to_owned(),
        format!("/v2/process-instances/{instance}/incidents/search"),
    ] {
        gateway.post(&search, json!({})).await.assert_problem(
            403,
            "FORBIDDEN",
            &search,
            &[setting],
        );
    }

    // Commands do not need the history store.
    let second = create(&gateway, "quiet", json!({})).await;
    assert_ne!(second, instance);
    gateway.stop().await;
}
