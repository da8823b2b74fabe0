//! Requests captured from pyzeebe 4.7 (unmodified, from PyPI; see
//! `tests/clients/pyzeebe/capture.py`), decoded with Rill's `gateway.proto`: every value
//! the client set is found in the field it meant, and encoding the decoded message gives
//! the captured bytes back, so no field went unrecognised.

use std::collections::BTreeMap;

use prost::Message;

use super::proto::*;

const CAPTURED: &str = include_str!("../../tests/fixtures/pyzeebe-requests.txt");

fn captured() -> BTreeMap<&'static str, Vec<u8>> {
    CAPTURED
        .lines()
        .map(|line| {
            let (method, hex) = line.split_once(' ').unwrap_or((line, ""));
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                .collect();
            (method, bytes)
        })
        .collect()
}

/// Decodes the captured request of `method` and checks that it encodes back the same.
fn decode<M: Message + Default>(method: &str) -> M {
    let all = captured();
    let bytes = all
        .get(method)
        .unwrap_or_else(|| panic!("no capture of {method}"));
    let message = M::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(
        &message.encode_to_vec(),
        bytes,
        "{method}: fields were dropped or misread"
    );
    message
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("JSON text")
}

#[test]
fn process_requests_decode_with_zeebe_field_numbers() {
    let create: CreateProcessInstanceRequest = decode("CreateProcessInstance");
    assert_eq!(create.bpmn_process_id, "order");
    assert_eq!(create.version, 3);
    assert_eq!(json(&create.variables), serde_json::json!({"amount": 5}));

    let with_result: CreateProcessInstanceWithResultRequest =
        decode("CreateProcessInstanceWithResult");
    let inner = with_result.request.expect("the nested request");
    assert_eq!(inner.bpmn_process_id, "order");
    assert_eq!(inner.version, -1);
    assert_eq!(json(&inner.variables), serde_json::json!({"a": 1}));
    assert_eq!(with_result.request_timeout, 2500);
    assert_eq!(with_result.fetch_variables, vec!["a", "b"]);

    let cancel: CancelProcessInstanceRequest = decode("CancelProcessInstance");
    assert_eq!(cancel.process_instance_key, 2251799813685257);

    let deploy: DeployResourceRequest = decode("DeployResource");
    assert_eq!(deploy.resources.len(), 1);
    assert_eq!(deploy.resources[0].name, "flow.bpmn");
    assert_eq!(deploy.resources[0].content, b"<definitions/>");

    let _: TopologyRequest = decode("Topology");
}

#[test]
fn message_requests_decode_with_zeebe_field_numbers() {
    let publish: PublishMessageRequest = decode("PublishMessage");
    assert_eq!(publish.name, "paid");
    assert_eq!(publish.correlation_key, "order-7");
    assert_eq!(publish.time_to_live, 60_000);
    assert_eq!(publish.message_id, "m-1");
    assert_eq!(json(&publish.variables), serde_json::json!({"x": true}));
}

#[test]
fn job_requests_decode_with_zeebe_field_numbers() {
    let activate: ActivateJobsRequest = decode("ActivateJobs");
    assert_eq!(activate.r#type, "pay");
    assert_eq!(activate.worker, "w1");
    assert_eq!(activate.timeout, 30_000);
    assert_eq!(activate.max_jobs_to_activate, 10);
    assert_eq!(activate.fetch_variable, vec!["a"]);
    assert_eq!(activate.request_timeout, 20_000);

    let stream: StreamActivatedJobsRequest = decode("StreamActivatedJobs");
    assert_eq!(stream.r#type, "pay");
    assert_eq!(stream.worker, "w2");
    assert_eq!(stream.timeout, 40_000);
    assert_eq!(stream.fetch_variable, vec!["b"]);

    let complete: CompleteJobRequest = decode("CompleteJob");
    assert_eq!(complete.job_key, 2251799813685253);
    assert_eq!(json(&complete.variables), serde_json::json!({"done": 1}));

    let fail: FailJobRequest = decode("FailJob");
    assert_eq!(fail.job_key, 2251799813685254);
    assert_eq!(fail.retries, 2);
    assert_eq!(fail.error_message, "boom");
    assert_eq!(fail.retry_back_off, 1500);
    assert_eq!(json(&fail.variables), serde_json::json!({"e": "x"}));

    let error: ThrowErrorRequest = decode("ThrowError");
    assert_eq!(error.job_key, 2251799813685255);
    assert_eq!(error.error_code, "CARD_DECLINED");
    assert_eq!(error.error_message, "declined");
    assert_eq!(json(&error.variables), serde_json::json!({"r": 1}));

    let timeout: UpdateJobTimeoutRequest = decode("UpdateJobTimeout");
    assert_eq!(timeout.job_key, 2251799813685256);
    assert_eq!(timeout.timeout, 90_000);
}
