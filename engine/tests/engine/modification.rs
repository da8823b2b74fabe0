//! Process instance modification (`commands/modification.rs`): activate and terminate
//! instructions, flow scopes created on the way, ancestor selection, variables, and
//! Zeebe's rejections (each leaves the instance as it was).

use rill_engine::ProcessInstanceState;
use rill_protocol::value::ProcessInstanceModificationRecord;
use rill_protocol::{
    ActivateInstruction, Command, Intent, JsonValue, Key, ModifyProcessInstance, RecordValue,
    RejectionType, ValueType, VariableInstruction,
};
use serde_json::json;

use super::elements::{flow, model, task};
use super::*;

fn activate(element_id: &str) -> ActivateInstruction {
    ActivateInstruction {
        element_id: element_id.into(),
        ancestor_element_instance_key: Key::NONE,
        variable_instructions: Vec::new(),
    }
}

fn modify(
    rule: &mut EngineRule,
    instance: Key,
    activations: Vec<ActivateInstruction>,
    terminations: Vec<Key>,
) -> Outcome {
    rule.process(Command::ModifyProcessInstance(ModifyProcessInstance {
        process_instance_key: instance,
        activate_instructions: activations,
        terminate_instructions: terminations,
    }))
}

/// The key of the live instance of an element (its last ELEMENT_ACTIVATING).
fn instance_of(rule: &EngineRule, element_id: &str) -> Key {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element_id)
        .with_intent(Intent::ElementActivating)
        .records
        .last()
        .map(|r| r.key)
        .unwrap_or_else(|| panic!("{element_id} was never entered"))
}

/// The records written since the log had `before` of them.
fn written_since(rule: &EngineRule, before: usize) -> Records<'_> {
    Records {
        records: rule.log[before..].iter().map(|(_, r)| r).collect(),
    }
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

/// A -> message catch B -> C -> end.
fn waiting_at_message(rule: &mut EngineRule) -> Key {
    rule.deploy_xml(&model(&[
        r#"<bpmn:startEvent id="s" />"#.to_owned(),
        task("A", "a"),
        r#"<bpmn:intermediateCatchEvent id="B"><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>"#.to_owned(),
        task("C", "c"),
        r#"<bpmn:endEvent id="e" />"#.to_owned(),
        flow("f1", "s", "A"),
        flow("f2", "A", "B"),
        flow("f3", "B", "C"),
        flow("f4", "C", "e"),
    ]
    .concat()));
    let instance = rule.create("p", json!({"key": "k-1"}));
    let (job, _) = rule.job("a");
    assert!(!rule.complete(job, json!({})).is_rejected());
    instance
}

#[test]
fn moving_the_token_terminates_the_catch_event_and_enters_the_next_task() {
    let mut rule = EngineRule::new();
    let instance = waiting_at_message(&mut rule);
    let b = instance_of(&rule, "B");
    let before = rule.log.len();

    let outcome = modify(&mut rule, instance, vec![activate("C")], vec![b]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let RecordValue::ProcessInstanceModification(answer) = outcome.value() else {
        panic!("answered with {:?}", outcome.value());
    };
    assert_eq!(answer.process_instance_key, instance.get());
    assert_eq!(
        answer.activate_instructions[0].ancestor_scope_keys,
        vec![instance.get()]
    );

    // The command, B's termination (closing its subscription), MODIFIED, then C.
    let shape: Vec<(ValueType, Intent)> = written_since(&rule, before)
        .shape()
        .into_iter()
        .filter(|(t, _)| {
            matches!(
                t,
                ValueType::ProcessInstance
                    | ValueType::ProcessInstanceModification
                    | ValueType::Job
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (ValueType::ProcessInstanceModification, Intent::Modify),
            (ValueType::ProcessInstance, Intent::ElementTerminating),
            (ValueType::ProcessInstance, Intent::ElementTerminated),
            (ValueType::ProcessInstanceModification, Intent::Modified),
            (ValueType::ProcessInstance, Intent::ElementActivating),
            (ValueType::Job, Intent::Created),
            (ValueType::ProcessInstance, Intent::ElementActivated),
        ]
    );
    assert!(
        written_since(&rule, before)
            .of_type(ValueType::ProcessMessageSubscription)
            .with_intent(Intent::Deleted)
            .exists(),
        "B's subscription stays open"
    );
    // No sequence flow was taken: the token was placed, not moved along f3.
    assert!(
        !written_since(&rule, before)
            .with_intent(Intent::SequenceFlowTaken)
            .exists()
    );

    let (job, _) = rule.job("c");
    assert!(!rule.complete(job, json!({})).is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

/// s -> sub [ s2 -> X -> Y -> e2 ] (with a timer boundary event) -> end
fn with_subprocess(rule: &mut EngineRule) -> Key {
    rule.deploy_xml(&model(&[
        r#"<bpmn:startEvent id="s" />"#.to_owned(),
        task("A", "a"),
        r#"<bpmn:subProcess id="sub"><bpmn:extensionElements><zeebe:ioMapping><zeebe:input source="=1" target="fromInput" /></zeebe:ioMapping></bpmn:extensionElements><bpmn:startEvent id="s2" />"#.to_owned(),
        task("X", "x"),
        task("Y", "y"),
        r#"<bpmn:endEvent id="e2" />"#.to_owned(),
        flow("g1", "s2", "X"),
        flow("g2", "X", "Y"),
        flow("g3", "Y", "e2"),
        r#"</bpmn:subProcess>"#.to_owned(),
        r#"<bpmn:boundaryEvent id="late" attachedToRef="sub"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>"#.to_owned(),
        r#"<bpmn:endEvent id="e" /><bpmn:endEvent id="timedOut" />"#.to_owned(),
        flow("f1", "s", "A"),
        flow("f2", "A", "sub"),
        flow("f3", "sub", "e"),
        flow("f4", "late", "timedOut"),
    ]
    .concat()));
    rule.create("p", json!({}))
}

#[test]
fn activating_inside_an_inactive_subprocess_creates_it_with_its_triggers_and_variables() {
    let mut rule = EngineRule::new();
    let instance = with_subprocess(&mut rule);
    let a = instance_of(&rule, "A");
    let before = rule.log.len();

    let mut instruction = activate("Y");
    instruction.variable_instructions = vec![
        VariableInstruction {
            variables: JsonValue::from(json!({"local": 1})),
            scope_id: "sub".into(),
        },
        VariableInstruction {
            variables: JsonValue::from(json!({"global": 2})),
            scope_id: String::new(),
        },
    ];
    let outcome = modify(&mut rule, instance, vec![instruction], vec![a]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);

    assert_eq!(
        written_since(&rule, before).lifecycle(),
        lc(&[
            ("sub", Intent::ElementActivating),
            ("sub", Intent::ElementActivated),
            ("A", Intent::ElementTerminating),
            ("A", Intent::ElementTerminated),
            ("Y", Intent::ElementActivating),
            ("Y", Intent::ElementActivated),
        ]),
        "no start event, no X"
    );
    // The subprocess's boundary timer is armed; its input mappings are not applied.
    assert!(
        written_since(&rule, before)
            .of_type(ValueType::Timer)
            .with_intent(Intent::Created)
            .exists()
    );
    let sub = instance_of(&rule, "sub");
    let modified = written_since(&rule, before)
        .of_type(ValueType::ProcessInstanceModification)
        .with_intent(Intent::Modified)
        .records[0]
        .value
        .clone();
    let RecordValue::ProcessInstanceModification(ProcessInstanceModificationRecord {
        activate_instructions,
        ancestor_scope_keys,
        ..
    }) = modified
    else {
        panic!()
    };
    assert_eq!(
        activate_instructions[0].ancestor_scope_keys,
        vec![instance.get(), sub.get()]
    );
    assert_eq!(ancestor_scope_keys, vec![instance.get(), sub.get()]);
    let variables: Vec<(String, i64)> = written_since(&rule, before)
        .of_type(ValueType::Variable)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Variable(v) => Some((v.name.clone(), v.scope_key)),
            _ => None,
        })
        .collect();
    assert_eq!(
        variables,
        vec![
            ("local".to_owned(), sub.get()),
            ("global".to_owned(), instance.get())
        ]
    );

    let (job, _) = rule.job("y");
    assert!(!rule.complete(job, json!({})).is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(
        rule.records()
            .of_type(ValueType::Timer)
            .with_intent(Intent::Canceled)
            .exists(),
        "the boundary timer closes with the subprocess"
    );
    rule.assert_replay_matches();
}

#[test]
fn an_ancestor_above_the_flow_scope_gets_a_new_flow_scope_instance_and_then_two_are_ambiguous() {
    let mut rule = EngineRule::new();
    let instance = with_subprocess(&mut rule);
    let (job, _) = rule.job("a");
    assert!(!rule.complete(job, json!({})).is_rejected());
    let first_sub = instance_of(&rule, "sub");

    // The process instance selected: a second instance of the subprocess.
    let mut instruction = activate("Y");
    instruction.ancestor_element_instance_key = instance;
    let outcome = modify(&mut rule, instance, vec![instruction], vec![]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let second_sub = instance_of(&rule, "sub");
    assert_ne!(first_sub, second_sub);

    // Now the flow scope of X has two instances: the engine cannot choose.
    let before = rule.log.len();
    let outcome = modify(&mut rule, instance, vec![activate("X")], vec![]);
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(reason.contains("more than one active instance"), "{reason}");
    assert!(reason.contains("'X'"), "{reason}");
    assert_eq!(rule.log.len(), before + 1, "only the rejection");

    // Selecting the first subprocess instance enters X there.
    let mut instruction = activate("X");
    instruction.ancestor_element_instance_key = first_sub;
    assert!(!modify(&mut rule, instance, vec![instruction], vec![]).is_rejected());
    let x = rule
        .records()
        .element("X")
        .with_intent(Intent::ElementActivating)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some(v.flow_scope_key),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(x.last(), Some(&first_sub.get()));
    rule.assert_replay_matches();
}

#[test]
fn terminating_the_last_element_instances_ends_their_scopes_and_the_instance() {
    let mut rule = EngineRule::new();
    let instance = with_subprocess(&mut rule);
    let (job, _) = rule.job("a");
    assert!(!rule.complete(job, json!({})).is_rejected());
    let x = instance_of(&rule, "X");

    let outcome = modify(&mut rule, instance, vec![], vec![x]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(
        outcome
            .records
            .iter()
            .filter(|r| r.intent == Intent::ElementTerminated)
            .count(),
        3,
        "X, the subprocess, the process"
    );
    assert!(
        outcome
            .records
            .iter()
            .any(|r| r.value.value_type() == ValueType::Timer && r.intent == Intent::Canceled),
        "the boundary timer is cancelled with the subprocess"
    );
    rule.assert_replay_matches();
}

#[test]
fn activations_come_before_terminations_so_the_scope_stays() {
    let mut rule = EngineRule::new();
    let instance = with_subprocess(&mut rule);
    let (job, _) = rule.job("a");
    assert!(!rule.complete(job, json!({})).is_rejected());
    let x = instance_of(&rule, "X");
    let sub = instance_of(&rule, "sub");

    // Replace X by Y inside the same subprocess instance.
    let outcome = modify(&mut rule, instance, vec![activate("Y")], vec![x]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert!(rule.instance_state(instance).is_some());
    let y_scope = rule
        .records()
        .element("Y")
        .with_intent(Intent::ElementActivating)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some(v.flow_scope_key),
            _ => None,
        });
    assert_eq!(y_scope, Some(sub.get()));
    assert!(
        !rule
            .records()
            .element("sub")
            .with_intent(Intent::ElementTerminating)
            .exists()
    );
    let (job, _) = rule.job("y");
    assert!(!rule.complete(job, json!({})).is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

fn assert_rejected(outcome: &Outcome, kind: RejectionType, needle: &str) {
    let (actual, reason) = rejection_of(outcome);
    assert_eq!(actual, kind, "{reason}");
    assert!(reason.contains(needle), "'{needle}' not in: {reason}");
    assert_eq!(outcome.records.len(), 1, "a rejection writes nothing else");
}

#[test]
fn bad_instructions_are_rejected_whole_with_a_reason() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&[
        r#"<bpmn:startEvent id="s" />"#.to_owned(),
        task("A", "a"),
        r#"<bpmn:boundaryEvent id="b" attachedToRef="A"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>"#.to_owned(),
        r#"<bpmn:subProcess id="many"><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1,2]" inputElement="i" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics><bpmn:startEvent id="ms" />"#.to_owned(),
        task("inner", "inner"),
        flow("m1", "ms", "inner"),
        r#"</bpmn:subProcess>"#.to_owned(),
        r#"<bpmn:eventBasedGateway id="g" /><bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent><bpmn:intermediateCatchEvent id="wait2"><bpmn:timerEventDefinition><bpmn:timeDuration>PT2M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"#.to_owned(),
        r#"<bpmn:endEvent id="e" /><bpmn:endEvent id="e3" />"#.to_owned(),
        flow("f7", "g", "wait2"),
        flow("f8", "wait2", "e"),
        flow("f1", "s", "A"),
        flow("f2", "A", "many"),
        flow("f3", "many", "g"),
        flow("f4", "g", "wait"),
        flow("f5", "wait", "e"),
        flow("f6", "b", "e3"),
    ]
    .concat()));
    let instance = rule.create("p", json!({}));
    let a = instance_of(&rule, "A");
    let unknown = Key(instance.get() + 10_000);
    let unknown_instance = format!("element instance that could not be found: '{unknown}'");

    let cases: Vec<(Vec<ActivateInstruction>, Vec<Key>, RejectionType, &str)> = vec![
        (
            vec![activate("nope")],
            vec![],
            RejectionType::InvalidArgument,
            "could not be found: 'nope'",
        ),
        (
            vec![activate("s")],
            vec![],
            RejectionType::InvalidArgument,
            "'START_EVENT' is not supported",
        ),
        (
            vec![activate("b")],
            vec![],
            RejectionType::InvalidArgument,
            "'BOUNDARY_EVENT' is not supported",
        ),
        (
            vec![activate("f1")],
            vec![],
            RejectionType::InvalidArgument,
            "could not be found: 'f1'",
        ),
        (
            vec![activate("inner")],
            vec![],
            RejectionType::InvalidArgument,
            "inside a multi-instance subprocess ('many')",
        ),
        (
            vec![activate("wait")],
            vec![],
            RejectionType::InvalidArgument,
            "event-based gateway",
        ),
        (
            vec![activate("e")],
            vec![unknown],
            RejectionType::InvalidArgument,
            &unknown_instance,
        ),
        (
            vec![],
            vec![instance],
            RejectionType::InvalidArgument,
            "cancel it",
        ),
    ];
    for (activations, terminations, kind, needle) in cases {
        let outcome = modify(&mut rule, instance, activations, terminations);
        assert_rejected(&outcome, kind, needle);
    }

    let mut scoped = activate("e");
    scoped.variable_instructions = vec![VariableInstruction {
        variables: JsonValue::from(json!({"x": 1})),
        scope_id: "many".into(),
    }];
    assert_rejected(
        &modify(&mut rule, instance, vec![scoped], vec![]),
        RejectionType::InvalidArgument,
        "doesn't belong to the activating element's flow scope",
    );
    let mut not_object = activate("e");
    not_object.variable_instructions = vec![VariableInstruction {
        variables: JsonValue::from(json!([1])),
        scope_id: String::new(),
    }];
    assert_rejected(
        &modify(&mut rule, instance, vec![not_object], vec![]),
        RejectionType::InvalidArgument,
        "JSON object",
    );
    let mut foreign = activate("e");
    foreign.ancestor_element_instance_key = a;
    assert_rejected(
        &modify(&mut rule, instance, vec![foreign], vec![]),
        RejectionType::InvalidArgument,
        "not an ancestor of the element to activate",
    );
    assert_rejected(
        &modify(&mut rule, unknown, vec![activate("e")], vec![]),
        RejectionType::NotFound,
        &format!("no process instance found with key '{unknown}'"),
    );

    // Nothing changed: A still waits with its job, the instance is active.
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    assert!(
        !rule
            .records()
            .element("e")
            .with_intent(Intent::ElementActivating)
            .exists()
    );
    let (job, _) = rule.job("a");
    assert!(job.get() > 0);
    rule.assert_replay_matches();
}

#[test]
fn a_called_instance_cannot_lose_its_last_element_instance() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(
        &model(&[
            r#"<bpmn:startEvent id="s" /><bpmn:callActivity id="Call"><bpmn:extensionElements><zeebe:calledElement processId="child" /></bpmn:extensionElements></bpmn:callActivity><bpmn:endEvent id="e" />"#.to_owned(),
            flow("f1", "s", "Call"),
            flow("f2", "Call", "e"),
        ]
        .concat())
        .replace(
            "</bpmn:definitions>",
            &format!(
                r#"<bpmn:process id="child" isExecutable="true"><bpmn:startEvent id="cs" />{}<bpmn:endEvent id="ce" />{}{}</bpmn:process></bpmn:definitions>"#,
                task("work", "work"),
                flow("c1", "cs", "work"),
                flow("c2", "work", "ce")
            ),
        ),
    );
    let parent = rule.create("p", json!({}));
    let work = instance_of(&rule, "work");
    let child = Key(rule
        .records()
        .element("child")
        .with_intent(Intent::ElementActivating)
        .records[0]
        .key
        .get());
    assert_rejected(
        &modify(&mut rule, child, vec![], vec![work]),
        RejectionType::InvalidArgument,
        "terminate the call activity",
    );
    // Replacing the element is fine: the child keeps a live element instance.
    let outcome = modify(&mut rule, child, vec![activate("ce")], vec![work]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_activated_join_does_not_wait_for_tokens() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&[
        r#"<bpmn:startEvent id="s" /><bpmn:parallelGateway id="fork" /><bpmn:parallelGateway id="join" /><bpmn:endEvent id="e" />"#.to_owned(),
        task("A", "a"),
        task("B", "b"),
        flow("f1", "s", "fork"),
        flow("f2", "fork", "A"),
        flow("f3", "fork", "B"),
        flow("f4", "A", "join"),
        flow("f5", "B", "join"),
        flow("f6", "join", "e"),
    ]
    .concat()));
    let instance = rule.create("p", json!({}));
    let a = instance_of(&rule, "A");
    let b = instance_of(&rule, "B");
    let outcome = modify(&mut rule, instance, vec![activate("join")], vec![a, b]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_activated_event_subprocess_runs_beside_the_other_elements_without_interrupting() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&[
        r#"<bpmn:startEvent id="s" />"#.to_owned(),
        task("A", "a"),
        r#"<bpmn:endEvent id="e" />"#.to_owned(),
        flow("f1", "s", "A"),
        flow("f2", "A", "e"),
        r#"<bpmn:subProcess id="esp" triggeredByEvent="true"><bpmn:startEvent id="es"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>"#.to_owned(),
        task("handle", "handle"),
        task("later", "later"),
        flow("h1", "es", "handle"),
        flow("h2", "handle", "later"),
        r#"</bpmn:subProcess>"#.to_owned(),
    ]
    .concat()));
    let instance = rule.create("p", json!({"key": "k-2"}));

    // The event subprocess itself: it enters its start event and goes on.
    let outcome = modify(&mut rule, instance, vec![activate("esp")], vec![]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert!(
        !rule
            .records()
            .element("A")
            .with_intent(Intent::ElementTerminating)
            .exists(),
        "an interrupting event subprocess activated by a modification interrupts nothing"
    );
    assert!(
        rule.records()
            .element("es")
            .with_intent(Intent::ElementCompleted)
            .exists()
    );
    let (handle, _) = rule.job("handle");

    // An element inside it, with no instance of it yet selected: a second, new one
    // is not made, the running one is used.
    let before = rule.log.len();
    let outcome = modify(&mut rule, instance, vec![activate("later")], vec![]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert!(
        !written_since(&rule, before)
            .element("esp")
            .with_intent(Intent::ElementActivating)
            .exists()
    );
    assert!(!rule.complete(handle, json!({})).is_rejected());
    assert_eq!(
        rule.activate("later", 10).len(),
        2,
        "the modification's and the flow's"
    );
    rule.assert_replay_matches();
}

#[test]
fn a_multi_instance_element_is_activated_as_its_body() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&[
        r#"<bpmn:startEvent id="s" />"#.to_owned(),
        task("A", "a"),
        r#"<bpmn:serviceTask id="each"><bpmn:extensionElements><zeebe:taskDefinition type="each" /></bpmn:extensionElements><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="item" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>"#.to_owned(),
        r#"<bpmn:endEvent id="e" />"#.to_owned(),
        flow("f1", "s", "A"),
        flow("f2", "A", "each"),
        flow("f3", "each", "e"),
    ]
    .concat()));
    let instance = rule.create("p", json!({}));
    let a = instance_of(&rule, "A");
    let mut instruction = activate("each");
    instruction.variable_instructions = vec![VariableInstruction {
        variables: JsonValue::from(json!({"items": [1, 2, 3]})),
        scope_id: "p".into(),
    }];
    let outcome = modify(&mut rule, instance, vec![instruction], vec![a]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let jobs = rule.activate("each", 10);
    assert_eq!(jobs.len(), 3);
    for (key, _) in jobs {
        assert!(!rule.complete(key, json!({})).is_rejected());
    }
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}
