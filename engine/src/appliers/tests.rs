use rill_engine_api::{Engine, MemoryState, ProcessingContext, ProcessingOutput, StateTxn, keys};
use rill_protocol::value::VariableRecord;
use rill_protocol::{
    ActivateJobs, Blob, Command, CreateProcessInstance, JsonValue, PartitionId, Position,
    ProcessSelector, Resource, Timestamp,
};
use serde_json::json;

use super::*;
use crate::BpmnEngine;

fn version_in_force(versions: Versions, engine_version: u32) -> Option<u32> {
    in_force(versions, engine_version).map(|(version, _)| *version)
}

#[test]
fn the_newest_applier_not_above_the_engine_version_is_in_force() {
    let versions: Versions = &[
        (1, applier!(variable::written)),
        (3, applier!(variable_created_v2)),
    ];
    assert_eq!(
        version_in_force(versions, 0),
        Some(1),
        "version 1 is in force from the start"
    );
    assert_eq!(version_in_force(versions, 1), Some(1));
    assert_eq!(version_in_force(versions, 2), Some(1));
    assert_eq!(version_in_force(versions, 3), Some(3));
    assert_eq!(version_in_force(versions, 7), Some(3));
    let later_only: Versions = &[(2, applier!(variable_created_v2))];
    assert_eq!(version_in_force(later_only, 1), None);
    let unregistered = registered(ValueType::VariableDocument, Intent::Updated);
    assert_eq!(version_in_force(unregistered, 1), None);
}

/// A later behaviour of VARIABLE CREATED, registered as version 2 (here: it stores the
/// value inside an array, so that the test can tell which version ran).
fn variable_created_v2(ctx: &mut Apply<'_, '_>, key: Key, value: &VariableRecord) -> Result<()> {
    let value = VariableRecord {
        value: format!("[{}]", value.value),
        ..value.clone()
    };
    variable::written(ctx, key, &value)
}

/// The registered table plus version 2 of VARIABLE CREATED.
fn with_variable_created_v2(value_type: ValueType, intent: Intent) -> Versions {
    match (value_type, intent) {
        (ValueType::Variable, Intent::Created) => &[
            (1, applier!(variable::written)),
            (2, applier!(variable_created_v2)),
        ],
        _ => registered(value_type, intent),
    }
}

const TWO_TASKS: &str = include_str!("../../tests/fixtures/two-rest-calls.bpmn");

type Log = Vec<(Timestamp, RecordDraft)>;

/// Processes `command` at `at` under engine version 1, logging its records.
fn run(engine: &mut BpmnEngine, state: &mut MemoryState, log: &mut Log, command: Command, at: i64) {
    let ctx = ProcessingContext {
        partition_id: PartitionId(1),
        partition_count: 1,
        position: Position(log.len() as u64 + 1),
        timestamp: Timestamp(at),
        engine_version: 1,
        request: None,
        message_partition_count: 1,
        limits: Default::default(),
    };
    let mut out = ProcessingOutput::default();
    engine
        .process(&ctx, state, &command, &mut out)
        .expect("process");
    log.extend(out.records.into_iter().map(|r| (Timestamp(at), r)));
}

/// Processes a small scenario under engine version 1 and returns the state and the
/// log.
fn version_1_log() -> (MemoryState, Log) {
    let mut engine = BpmnEngine::default();
    let mut state = MemoryState::new();
    let mut log = Vec::new();
    let deploy = Command::Deploy {
        resources: vec![Resource {
            name: "two-rest-calls.bpmn".to_owned(),
            content: Blob(TWO_TASKS.as_bytes().to_vec()),
        }],
    };
    run(&mut engine, &mut state, &mut log, deploy, 1_000);
    let create = Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ById {
            bpmn_process_id: "two-rest-calls".to_owned(),
            version: None,
        },
        variables: JsonValue::from(json!({"order": "o-1", "total": 12})),
        await_result: false,
        fetch_variables: Vec::new(),
        tags: Vec::new(),
    });
    run(&mut engine, &mut state, &mut log, create, 2_000);
    let activate = Command::ActivateJobs(ActivateJobs {
        job_type: "restCall".to_owned(),
        worker: "w".to_owned(),
        timeout: 30_000,
        max_jobs: 1,
        fetch_variables: Vec::new(),
    });
    run(&mut engine, &mut state, &mut log, activate, 3_000);
    let job_key = log
        .iter()
        .find_map(|(_, r)| match &r.value {
            RecordValue::JobBatch(batch) if r.intent == Intent::Activated => {
                batch.job_keys.first().copied()
            }
            _ => None,
        })
        .expect("a job was activated");
    let complete = Command::CompleteJob {
        job_key: rill_protocol::Key(job_key),
        variables: JsonValue::from(json!({"status": 200})),
        result: Default::default(),
    };
    run(&mut engine, &mut state, &mut log, complete, 4_000);
    assert!(
        log.iter().any(
            |(_, r)| matches!(r.value, RecordValue::Variable(_)) && r.intent == Intent::Created
        ),
        "the scenario creates variables"
    );
    (state, log)
}

fn replay(engine: &mut BpmnEngine, log: &Log, version: u32) -> MemoryState {
    let mut state = MemoryState::new();
    for (_, record) in log {
        engine
            .apply_record(&mut state, record, version)
            .expect("replay");
    }
    state
}

fn without_key_counter(mut state: MemoryState) -> MemoryState {
    state.delete(keys::KEY_COUNTER);
    state
}

#[test]
fn a_version_1_log_replays_the_same_after_a_version_2_applier_is_added() {
    let (live, log) = version_1_log();
    let live = without_key_counter(live);
    let with_v2 = Appliers::with_table(with_variable_created_v2);

    // The log was written under version 1: replayed under version 1 with the v2
    // applier registered, it gives the state processing gave.
    let replayed = replay(&mut BpmnEngine::with_appliers(with_v2), &log, 1);
    assert_eq!(live, replayed);
    let registered_only = replay(&mut BpmnEngine::default(), &log, 1);
    assert_eq!(live, registered_only);

    // Under version 2 the new applier is in force, and the state shows it.
    let under_v2 = replay(&mut BpmnEngine::with_appliers(with_v2), &log, 2);
    assert_ne!(live, under_v2);
}
