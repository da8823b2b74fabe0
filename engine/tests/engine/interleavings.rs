//! Job completions on parallel branches, in random (seeded) orders, give the same final
//! variables and the same records, up to the order BPMN leaves open, as a reference
//! order. Every run also replays to the same state.

use std::collections::BTreeMap;

use rill_engine::ProcessInstanceState;
use rill_protocol::{Intent, RecordValue, ValueType};
use serde_json::{Value, json};

use super::elements::{flow, model, task};
use super::*;

const BRANCHES: usize = 5;

/// A small deterministic generator (SplitMix64), so failures reproduce by seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

fn fork_join_model() -> String {
    let mut body = vec![
        r#"<bpmn:startEvent id="s" />"#.to_owned(),
        r#"<bpmn:parallelGateway id="fork" />"#.to_owned(),
        r#"<bpmn:parallelGateway id="join" />"#.to_owned(),
        r#"<bpmn:endEvent id="e" />"#.to_owned(),
        flow("f0", "s", "fork"),
        flow("fe", "join", "e"),
    ];
    for i in 0..BRANCHES {
        body.push(task(&format!("t{i}"), "branch"));
        body.push(flow(&format!("in{i}"), "fork", &format!("t{i}")));
        body.push(flow(&format!("out{i}"), &format!("t{i}"), "join"));
    }
    model(&body.concat())
}

/// What must not depend on the order: final variables, and per element the multiset of
/// record intents (value type, element, intent) with their counts.
struct RunSummary {
    variables: Value,
    records: BTreeMap<(String, String, String), usize>,
}

fn run(order: &[usize]) -> RunSummary {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&fork_join_model());
    let instance = rule.create("p", json!({"shared": 0}));
    let jobs = rule.activate("branch", BRANCHES as i32);
    assert_eq!(jobs.len(), BRANCHES);
    // Jobs by branch element id.
    let by_branch: BTreeMap<String, rill_protocol::Key> = jobs
        .iter()
        .map(|(k, j)| (j.element_id.clone(), *k))
        .collect();
    for branch in order {
        let element = format!("t{branch}");
        let job = by_branch[&element];
        let outcome = rule.complete(job, json!({ format!("r{branch}"): branch * 10 }));
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    }
    assert_eq!(
        rule.instance_state(instance).unwrap().state,
        ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();

    let mut records = BTreeMap::new();
    for record in rule.records().records {
        let element = match &record.value {
            RecordValue::ProcessInstance(v) => v.element_id.clone(),
            RecordValue::Job(v) => v.element_id.clone(),
            RecordValue::Variable(v) => v.name.clone(),
            _ => String::new(),
        };
        let key = (
            format!("{:?}", record.value_type()),
            element,
            format!("{:?}/{:?}", record.record_type, record.intent),
        );
        *records.entry(key).or_insert(0) += 1;
    }
    let variables = rule.variables(instance);
    RunSummary { variables, records }
}

#[test]
fn completion_order_on_parallel_branches_does_not_change_the_outcome() {
    let reference: Vec<usize> = (0..BRANCHES).collect();
    let expected = run(&reference);
    assert_eq!(
        expected.variables,
        json!({"shared": 0, "r0": 0, "r1": 10, "r2": 20, "r3": 30, "r4": 40})
    );
    let joins = expected.records.get(&(
        "ProcessInstance".into(),
        "join".into(),
        "Event/ElementActivated".into(),
    ));
    assert_eq!(joins, Some(&1), "the join fires exactly once");

    let mut rng = SplitMix(0x5EED_0001);
    for round in 0..25 {
        let mut order = reference.clone();
        rng.shuffle(&mut order);
        let actual = run(&order);
        assert_eq!(
            actual.variables, expected.variables,
            "round {round}, order {order:?}"
        );
        assert_eq!(
            actual.records, expected.records,
            "round {round}, order {order:?}"
        );
    }
    // The log has the job and variable records one would expect from five branches.
    let created = expected
        .records
        .iter()
        .filter(|((vt, _, intent), _)| {
            vt == &format!("{:?}", ValueType::Variable)
                && intent.ends_with(&format!("{:?}", Intent::Created))
        })
        .map(|(_, n)| n)
        .sum::<usize>();
    assert_eq!(created, BRANCHES + 1);
}
