//! The Modeler samples from `shared/bpmn` parse into what their README describes.

use rill_engine::model::{CatchEventDefinition, ElementKind, TimerDefinition, TriggerDefinition};
use rill_engine::{Checksum, parse_deployment};
use rill_feel::temporal::IsoDuration;

use super::*;

const SAMPLES: [&str; 4] = [
    "two-rest-calls.bpmn",
    "order-fulfilment.bpmn",
    "payment-retry.bpmn",
    "wait-timer.bpmn",
];

fn job_type(model: &ProcessModel, id: &str) -> (String, i32) {
    match &el(model, id).kind {
        ElementKind::ServiceTask(job) => (static_value(&job.job_type), static_value(&job.retries)),
        other => panic!("{id} is {other:?}"),
    }
}

#[test]
fn two_rest_calls() {
    let model = parse_one("two-rest-calls.bpmn");
    assert_eq!(model.bpmn_process_id, "two-rest-calls");
    assert_eq!(job_type(&model, "Rest1"), ("restCall".to_owned(), 3));
    assert_eq!(job_type(&model, "Rest2"), ("restCall".to_owned(), 3));
    assert_eq!(outgoing(&model, "Rest1"), vec!["Flow_2"]);
    assert_eq!(model.elements.len(), 5);
    assert_eq!(model.flows.len(), 3);
}

#[test]
fn order_fulfilment() {
    let model = parse_one("order-fulfilment.bpmn");
    assert_eq!(
        job_type(&model, "ChargeCard"),
        ("charge-card".to_owned(), 5)
    );
    let charge = el(&model, "ChargeCard");
    let ElementKind::ServiceTask(job) = &charge.kind else {
        unreachable!()
    };
    assert_eq!(
        job.headers,
        vec![("provider".to_owned(), "acme-pay".to_owned())]
    );
    let inputs: Vec<(&str, Vec<String>)> = charge
        .inputs
        .iter()
        .map(|m| (m.source.source(), m.target.clone()))
        .collect();
    assert_eq!(
        inputs,
        vec![
            ("order.total", vec!["amount".to_owned()]),
            ("order.customer.id", vec!["customerId".to_owned()])
        ]
    );
    assert_eq!(charge.outputs[0].target, vec!["payment", "transactionId"]);

    let ElementKind::ExclusiveGateway { default_flow } = el(&model, "AmountCheck").kind else {
        panic!("AmountCheck is an exclusive gateway")
    };
    assert_eq!(default_flow, model.flow_by_id("F4"));
    let f3 = flow(&model, "F3")
        .condition
        .as_ref()
        .map(|c| c.source().to_owned());
    assert_eq!(f3.as_deref(), Some("order.total > 1000"));
    assert_eq!(job_type(&model, "ManualReview").0, "review");
    assert_eq!(outgoing(&model, "Fork"), vec!["F7", "F8"]);
    assert_eq!(incoming(&model, "Join"), vec!["F9", "F10"]);

    let ElementKind::IntermediateCatchEvent(CatchEventDefinition::Message(message)) =
        &el(&model, "AwaitShipment").kind
    else {
        panic!("AwaitShipment is a message catch event")
    };
    assert_eq!(static_value(&message.message_name), "shipment-confirmed");
    assert_eq!(expr_source(&message.correlation_key), "order.id");
}

#[test]
fn payment_retry() {
    let model = parse_one("payment-retry.bpmn");
    assert_eq!(job_type(&model, "Pay"), ("take-payment".to_owned(), 2));
    assert_eq!(
        ids(&model, &el(&model, "Pay").boundary_events),
        vec!["PayTimeout", "PayDeclined"]
    );
    assert!(matches!(&el(&model, "PayTimeout").kind,
        ElementKind::BoundaryEvent {
            interrupting: true,
            definition: TriggerDefinition::Timer(TimerDefinition::Duration(d)),
            ..
        } if static_value(d) == IsoDuration { months: 0, millis: 30_000 }));
    assert!(matches!(&el(&model, "PayDeclined").kind,
        ElementKind::BoundaryEvent {
            interrupting: true,
            definition: TriggerDefinition::Error { error_code: Some(code) },
            ..
        } if code == "CARD_DECLINED"));
    assert_eq!(outgoing(&model, "PayDeclined"), vec!["F3"]);
}

#[test]
fn wait_timer() {
    let model = parse_one("wait-timer.bpmn");
    assert!(matches!(&el(&model, "Wait").kind,
        ElementKind::IntermediateCatchEvent(CatchEventDefinition::Timer(TimerDefinition::Duration(d)))
            if static_value(d) == IsoDuration { months: 0, millis: 2_000 }));
    assert_eq!(job_type(&model, "Work").0, "work");
}

#[test]
fn the_examples_directory_holds_the_same_samples() {
    for sample in SAMPLES {
        let example = format!("{}/../examples/{sample}", env!("CARGO_MANIFEST_DIR"));
        let example = std::fs::read(&example).unwrap_or_else(|e| panic!("{example}: {e}"));
        assert_eq!(example, fixture(sample), "{sample}");
    }
}

#[test]
fn a_deployment_parses_all_resources_with_checksums() {
    let files: Vec<(String, Vec<u8>)> = SAMPLES
        .iter()
        .map(|s| (s.to_string(), fixture(s)))
        .collect();
    let parsed = parse_deployment(files.iter().map(|(n, x)| (n.as_str(), x.as_slice())))
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = parsed.iter().map(|r| r.resource_name.as_str()).collect();
    assert_eq!(names, SAMPLES);
    for (resource, (_, xml)) in parsed.iter().zip(&files) {
        assert_eq!(resource.checksum, Checksum::of(xml));
        assert_eq!(resource.processes.len(), 1);
    }
    // The same bytes give the same checksum; one changed byte does not.
    let mut changed = files[0].1.clone();
    let last = changed.len() - 2;
    changed[last] ^= 1;
    assert_ne!(Checksum::of(&changed), parsed[0].checksum);
    assert_eq!(parsed[0].checksum.to_string().len(), 32);
}

#[test]
fn a_deployment_rejects_a_process_id_defined_twice() {
    let xml = fixture("two-rest-calls.bpmn");
    let error = parse_deployment([("a.bpmn", xml.as_slice()), ("b.bpmn", xml.as_slice())])
        .expect_err("the same process id twice");
    assert_eq!(error.problems.len(), 1, "{error}");
    let problem = &error.problems[0];
    assert_eq!(problem.resource_name, "b.bpmn");
    assert_eq!(problem.element_id.as_deref(), Some("two-rest-calls"));
    assert!(problem.message.contains("also in 'a.bpmn'"), "{error}");
}

#[test]
fn a_deployment_reports_the_problems_of_every_resource() {
    let bad = fixture("invalid/complex-gateway.bpmn");
    let worse = fixture("invalid/flow-to-nowhere.bpmn");
    let good = fixture("two-rest-calls.bpmn");
    let error = parse_deployment([
        ("bad.bpmn", bad.as_slice()),
        ("good.bpmn", good.as_slice()),
        ("worse.bpmn", worse.as_slice()),
    ])
    .expect_err("two bad resources");
    let resources: Vec<&str> = error
        .problems
        .iter()
        .map(|p| p.resource_name.as_str())
        .collect();
    assert_eq!(resources, vec!["bad.bpmn", "worse.bpmn"], "{error}");
    assert!(
        parse_deployment(std::iter::empty()).is_err(),
        "an empty deployment"
    );
}
