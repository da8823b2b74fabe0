//! A broker with `history.enabled = false` fails history queries. Reads the engine can
//! answer too (a process instance, an incident) fall back to it on exactly that failure;
//! reads only the history store answers fail, naming the setting.

use serde_json::json;

use crate::support::engine_backend::EngineBackend;
use crate::support::{TestGateway, create, deploy_one_task};

#[tokio::test]
async fn without_history_a_live_instance_is_read_from_the_engine() {
    let backend = EngineBackend::new(1);
    let gateway = TestGateway::start(backend.clone()).await;
    deploy_one_task(&gateway, "quiet", "never").await;
    let instance = create(&gateway, "quiet", json!({})).await;
    backend.turn_history_off();

    let path = format!("/v2/process-instances/{instance}");
    let read = gateway.get(&path).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(read.body["processInstanceKey"], instance);
    assert_eq!(read.body["state"], "ACTIVE");
    // The engine's summary has no name: the process id stands in.
    assert_eq!(read.body["processDefinitionName"], "quiet");

    // An incident key of the cluster that names none: not found, from the engine.
    let incident = format!("/v2/incidents/{instance}");
    gateway.get(&incident).await.assert_problem(
        404,
        "NOT_FOUND",
        &incident,
        &["Incident", &instance],
    );

    // A search has nothing to fall back to: it fails, naming the setting.
    let search = "/v2/process-instances/search";
    gateway.post(search, json!({})).await.assert_problem(
        500,
        "INTERNAL",
        search,
        &["history.enabled = false"],
    );
    gateway.stop().await;
}
