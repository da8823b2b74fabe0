//! Seeded random command sequences over the sample models: whatever clients send, in
//! whatever order, the engine answers (accepts or rejects), never fails or panics, and
//! replaying its events rebuilds its state.

use rill_protocol::{
    ActivateJobs, Command, CreateProcessInstance, FailJob, JsonValue, Key, PartitionId,
    ProcessSelector, PublishMessage, RecordValue, SetVariables, ThrowError, UpdateJob,
};
use serde_json::json;

use super::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            Some(&items[self.below(items.len() as u64) as usize])
        }
    }
}

const PROCESSES: [&str; 4] = [
    "two-rest-calls",
    "order-fulfilment",
    "payment-retry",
    "wait-timer",
];
const JOB_TYPES: [&str; 8] = [
    "restCall",
    "charge-card",
    "review",
    "pack",
    "invoice",
    "take-payment",
    "notify",
    "work",
];

#[test]
fn random_command_sequences_never_break_the_engine() {
    for seed in 1..=6u64 {
        let mut rng = Rng(seed * 7919);
        let mut rule = EngineRule::new();
        for name in [
            "two-rest-calls.bpmn",
            "order-fulfilment.bpmn",
            "payment-retry.bpmn",
            "wait-timer.bpmn",
        ] {
            rule.deploy_fixture(name);
        }
        // Keys seen in responses, to aim commands at real (and stale) entities.
        let mut keys: Vec<Key> = vec![Key::new(PartitionId(1), 999_999)];
        let mut job_keys: Vec<Key> = Vec::new();
        let mut answers_from_state = 0;
        for _ in 0..400 {
            let key = *rng.pick(&keys).expect("never empty");
            // Job commands mostly aim at jobs that were handed out.
            let job_key = match rng.pick(&job_keys) {
                Some(job) if rng.below(5) > 0 => *job,
                _ => key,
            };
            let variables = match rng.below(4) {
                0 => JsonValue::null(),
                1 => JsonValue::from(json!({"order": {"id": "o-1", "total": rng.below(2000)}})),
                2 => JsonValue::from(json!([1, 2])),
                _ => JsonValue::from(json!({"x": rng.below(5)})),
            };
            let command = match rng.below(14) {
                0 | 1 => Command::CreateProcessInstance(CreateProcessInstance {
                    process: ProcessSelector::ById {
                        bpmn_process_id: (*rng.pick(&PROCESSES).unwrap()).to_owned(),
                        version: None,
                    },
                    variables,
                    await_result: rng.below(3) == 0,
                    fetch_variables: vec![],
                    tags: Vec::new(),
                }),
                2 | 3 => Command::ActivateJobs(ActivateJobs {
                    job_type: (*rng.pick(&JOB_TYPES).unwrap()).to_owned(),
                    worker: "w".into(),
                    timeout: rng.below(60_000) as i64 - 10,
                    max_jobs: rng.below(5) as i32,
                    fetch_variables: vec![],
                }),
                4 | 5 => Command::CompleteJob {
                    job_key,
                    variables,
                    result: Default::default(),
                },
                6 => Command::FailJob(FailJob {
                    job_key,
                    retries: rng.below(3) as i32 - 1,
                    error_message: "x".into(),
                    retry_backoff: rng.below(3) as i64 * 500,
                    variables,
                }),
                7 => Command::ThrowError(ThrowError {
                    job_key,
                    error_code: ["CARD_DECLINED", "OTHER", ""][rng.below(3) as usize].into(),
                    error_message: String::new(),
                    variables,
                }),
                8 => Command::PublishMessage(PublishMessage {
                    name: "shipment-confirmed".into(),
                    correlation_key: "o-1".into(),
                    time_to_live: rng.below(3) as i64 * 1_000,
                    message_id: if rng.below(2) == 0 {
                        "m".into()
                    } else {
                        String::new()
                    },
                    variables,
                }),
                9 => Command::CancelProcessInstance {
                    process_instance_key: key,
                },
                10 => Command::ResolveIncident { incident_key: key },
                11 => Command::SetVariables(SetVariables {
                    element_instance_key: key,
                    variables,
                    local: rng.below(2) == 0,
                }),
                12 => Command::UpdateJob(UpdateJob {
                    job_key,
                    retries: Some(rng.below(3) as i32),
                    timeout: None,
                }),
                _ => {
                    rule.advance(rng.below(40_000) as i64);
                    for outcome in rule.fire_due() {
                        if let Some(rill_protocol::CommandResponse::Accepted { key, .. }) =
                            outcome.response
                        {
                            keys.push(key);
                        }
                    }
                    continue;
                }
            };
            // An answer from state (no log entry) must be what processing would answer.
            let shortcut = rule.answer_from_state(&command);
            let outcome = rule.process(command);
            if let Some(shortcut) = shortcut {
                answers_from_state += 1;
                assert_same_answer(&shortcut, outcome.response.as_ref());
            }
            match &outcome.response {
                Some(rill_protocol::CommandResponse::Accepted { key, value, .. }) => {
                    keys.push(*key);
                    if let RecordValue::JobBatch(batch) = value {
                        job_keys.extend(batch.job_keys.iter().map(|k| Key(*k)));
                    }
                }
                Some(rill_protocol::CommandResponse::Rejected(rejection)) => {
                    assert!(!rejection.reason.is_empty());
                }
                None => {}
            }
            // Incidents, too, are things to aim at.
            for record in &outcome.records {
                if let RecordValue::Incident(_) = record.value {
                    keys.push(record.key);
                }
            }
        }
        // The sequences did real work, not only rejections.
        let completed_jobs = rule
            .records()
            .of_type(rill_protocol::ValueType::Job)
            .events()
            .with_intent(rill_protocol::Intent::Completed)
            .count();
        let rejections = rule.records().rejections().count();
        assert!(
            completed_jobs >= 3,
            "seed {seed}: {completed_jobs} jobs completed"
        );
        assert!(rejections > 20, "seed {seed}: {rejections} rejections");
        assert!(
            answers_from_state > 5,
            "seed {seed}: {answers_from_state} answers from state"
        );
        rule.assert_replay_matches();
    }
}

/// The same answer but for the key (an answer from state writes nothing, so it has none).
fn assert_same_answer(
    shortcut: &rill_protocol::CommandResponse,
    processed: Option<&rill_protocol::CommandResponse>,
) {
    use rill_protocol::CommandResponse::Accepted;
    match (shortcut, processed) {
        (
            Accepted { key, intent, value },
            Some(Accepted {
                intent: processed_intent,
                value: processed_value,
                ..
            }),
        ) => {
            assert_eq!(*key, Key::NONE);
            assert_eq!(intent, processed_intent);
            assert_eq!(value, processed_value);
        }
        other => panic!("answered from state with {shortcut:?}, processed: {other:?}"),
    }
}
