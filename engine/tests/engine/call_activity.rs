//! Call activities: the child instance, its parent keys, variable propagation, version
//! binding, errors reaching the parent, cancellation and incidents.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{BpmnElementType, IncidentErrorType, ProcessInstanceRecord};
use rill_protocol::{Command, FailJob, Intent, JsonValue, Key, RecordValue};
use rill_protocol::{ThrowError, ValueType};
use serde_json::{Value, json};

use super::elements::{flow, model, task};
use super::*;

/// The process-instance events of the process element of `process_id` (child or parent).
fn process_events(
    rule: &EngineRule,
    process_id: &str,
) -> Vec<(Key, Intent, ProcessInstanceRecord)> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v)
                if v.bpmn_element_type == BpmnElementType::Process
                    && v.bpmn_process_id == process_id =>
            {
                Some((r.key, r.intent, v.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The key of the one instance of `process_id` that was started.
fn child_of(rule: &EngineRule, process_id: &str) -> Key {
    let started: Vec<Key> = process_events(rule, process_id)
        .into_iter()
        .filter(|(_, intent, _)| *intent == Intent::ElementActivating)
        .map(|(key, _, _)| key)
        .collect();
    assert_eq!(
        started.len(),
        1,
        "one instance of {process_id}: {started:?}"
    );
    started[0]
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

/// `p`: start → Call → end, with extra XML inside the call activity's extensions.
fn caller(attributes: &str, mappings: &str) -> String {
    let call = format!(
        r#"<bpmn:callActivity id="Call"><bpmn:extensionElements><zeebe:calledElement {attributes} />{mappings}</bpmn:extensionElements></bpmn:callActivity>"#
    );
    model(&format!(
        r#"<bpmn:startEvent id="s" />{call}<bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Call"),
        flow("f2", "Call", "e")
    ))
}

/// A child process `id` with one service task of type `job`, and a version tag.
fn child(id: &str, job: &str, tag: &str) -> String {
    let body = format!(
        r#"<bpmn:startEvent id="cs" />{}<bpmn:endEvent id="ce" />{}{}"#,
        task("Work", job),
        flow("c1", "cs", "Work"),
        flow("c2", "Work", "ce")
    );
    model(&body)
        .replace(r#"<bpmn:process id="p""#, &format!(r#"<bpmn:process id="{id}""#))
        .replace(
            r#"isExecutable="true">"#,
            &format!(
                r#"isExecutable="true"><bpmn:extensionElements><zeebe:versionTag value="{tag}" /></bpmn:extensionElements>"#
            ),
        )
}

#[test]
fn the_child_runs_with_the_parents_variables_and_hands_its_own_back() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/call-activity-child.bpmn");
    rule.deploy_fixture("elements/call-activity.bpmn");
    let parent = rule.create("order", json!({"orderId": 7}));
    let child = child_of(&rule, "shipping");

    // The child's records carry the parent's keys; it starts on this partition.
    let call_key = rule
        .records()
        .events()
        .element("Ship")
        .with_intent(Intent::ElementActivating)
        .records[0]
        .key;
    let (_, _, record) = process_events(&rule, "shipping").remove(0);
    assert_eq!(record.parent_process_instance_key, parent.get());
    assert_eq!(record.parent_element_instance_key, call_key.get());
    assert_eq!(record.process_instance_key, child.get());
    assert_eq!(record.flow_scope_key, -1);
    assert_eq!(child.partition(), parent.partition());
    assert_eq!(rule.variables(child), json!({"orderId": 7}));

    // The call activity waits, activated, while the child runs.
    let (job_key, job) = rule.job("pack");
    assert_eq!(job.process_instance_key, child.get());
    assert_eq!(job.bpmn_process_id, "shipping");
    rule.complete(job_key, json!({"tracking": "T-1"}));

    assert_eq!(state(&mut rule, child), ProcessInstanceState::Completed);
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(parent),
        json!({"orderId": 7, "tracking": "T-1"})
    );
    let call_events: Vec<(Intent, BpmnElementType)> = rule
        .records()
        .events()
        .element("Ship")
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some((r.intent, v.bpmn_element_type)),
            _ => None,
        })
        .collect();
    assert_eq!(
        call_events,
        [
            Intent::ElementActivating,
            Intent::ElementActivated,
            Intent::ElementCompleting,
            Intent::ElementCompleted,
        ]
        .into_iter()
        .map(|i| (i, BpmnElementType::CallActivity))
        .collect::<Vec<_>>()
    );
    // The child completes before its call activity does.
    let order: Vec<(String, Intent)> = rule.records().events().lifecycle();
    let child_done = order
        .iter()
        .position(|e| *e == ("shipping".to_owned(), Intent::ElementCompleted))
        .expect("child completed");
    let call_completing = order
        .iter()
        .position(|e| *e == ("Ship".to_owned(), Intent::ElementCompleting))
        .expect("call activity completing");
    assert!(child_done < call_completing, "{order:?}");
    rule.assert_replay_matches();
}

#[test]
fn propagation_flags_and_mappings_decide_what_crosses() {
    // propagateAllParentVariables=false: only the input mappings reach the child.
    // propagateAllChildVariables=false without outputs: nothing comes back.
    let mut rule = EngineRule::new();
    rule.deploy_xml(&child("c", "work", "v1"));
    rule.deploy_xml(&caller(
        r#"processId="c" propagateAllParentVariables="false" propagateAllChildVariables="false""#,
        r#"<zeebe:ioMapping><zeebe:input source="=a + 1" target="b" /></zeebe:ioMapping>"#,
    ));
    let parent = rule.create("p", json!({"a": 1, "secret": "x"}));
    let kid = child_of(&rule, "c");
    assert_eq!(rule.variables(kid), json!({"b": 2}));
    let (job, _) = rule.job("work");
    rule.complete(job, json!({"result": 42}));
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(parent), json!({"a": 1, "secret": "x"}));
    rule.assert_replay_matches();

    // With output mappings they read the child's variables, and only they propagate,
    // whatever propagateAllChildVariables says.
    let mut rule = EngineRule::new();
    rule.deploy_xml(&child("c", "work", "v1"));
    rule.deploy_xml(&caller(
        r#"processId="c" propagateAllChildVariables="false""#,
        r#"<zeebe:ioMapping><zeebe:output source="=result * 2" target="doubled" /></zeebe:ioMapping>"#,
    ));
    let parent = rule.create("p", json!({"a": 1}));
    let kid = child_of(&rule, "c");
    assert_eq!(rule.variables(kid), json!({"a": 1}));
    let (job, _) = rule.job("work");
    rule.complete(job, json!({"result": 21, "noise": true}));
    assert_eq!(rule.variables(parent), json!({"a": 1, "doubled": 42}));
    rule.assert_replay_matches();
}

#[test]
fn the_called_process_id_can_be_an_expression() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&child("ship-eu", "eu", "v1"));
    rule.deploy_xml(&caller(r#"processId="=&quot;ship-&quot; + region""#, ""));
    let parent = rule.create("p", json!({"region": "eu"}));
    let (job, _) = rule.job("eu");
    rule.complete(job, json!({}));
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_the_parent_cancels_the_child_and_the_child_cannot_be_cancelled_alone() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/call-activity-child.bpmn");
    rule.deploy_fixture("elements/call-activity.bpmn");
    let parent = rule.create("order", json!({}));
    let child = child_of(&rule, "shipping");
    let (job_key, _) = rule.job("pack");

    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: child,
    });
    let (_, reason) = rejection_of(&outcome);
    assert!(
        reason.contains(&format!("cancel the root process instance '{parent}'")),
        "{reason}"
    );

    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: parent,
    });
    assert!(!outcome.is_rejected());
    assert_eq!(state(&mut rule, child), ProcessInstanceState::Terminated);
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Terminated);
    assert!(
        rule.records()
            .events()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .records
            .iter()
            .any(|r| r.key == job_key)
    );
    // The call activity's TERMINATING comes first, the child ends, then the call
    // activity's TERMINATED.
    let order = rule.records().events().lifecycle();
    let at = |e: (&str, Intent)| {
        order
            .iter()
            .position(|x| *x == (e.0.to_owned(), e.1))
            .unwrap_or_else(|| panic!("{e:?} in {order:?}"))
    };
    assert!(at(("Ship", Intent::ElementTerminating)) < at(("shipping", Intent::ElementTerminated)));
    assert!(at(("shipping", Intent::ElementTerminated)) < at(("Ship", Intent::ElementTerminated)));
    rule.assert_replay_matches();
}

#[test]
fn an_error_not_caught_in_the_child_reaches_the_call_activitys_boundary() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/call-activity-child.bpmn");
    rule.deploy_fixture("elements/call-activity.bpmn");
    let parent = rule.create("order", json!({}));
    let child = child_of(&rule, "shipping");
    let (job_key, _) = rule.job("pack");
    let outcome = rule.process(Command::ThrowError(ThrowError {
        job_key,
        error_code: "NO_STOCK".to_owned(),
        error_message: "sold out".to_owned(),
        variables: JsonValue::from(json!({"missing": 3})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(state(&mut rule, child), ProcessInstanceState::Terminated);
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Completed);
    assert!(
        rule.records()
            .events()
            .element("Backordered")
            .with_intent(Intent::ElementCompleted)
            .exists()
    );
    assert!(!rule.records().events().element("Shipped").exists());
    assert_eq!(rule.variables(parent)["missing"], json!(3));

    // An error nobody catches, in the child or above, is an incident on the job.
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/call-activity-child.bpmn");
    rule.deploy_fixture("elements/call-activity.bpmn");
    rule.create("order", json!({}));
    let child = child_of(&rule, "shipping");
    let (job_key, _) = rule.job("pack");
    rule.process(Command::ThrowError(ThrowError {
        job_key,
        error_code: "OTHER".to_owned(),
        error_message: String::new(),
        variables: JsonValue::null(),
    }));
    let incidents = rule.incidents(child);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::UnhandledErrorEvent
    );
    rule.assert_replay_matches();
}

#[test]
fn a_missing_called_process_is_an_incident_resolved_by_deploying_it() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/call-activity.bpmn");
    let parent = rule.create("order", json!({"orderId": 1}));
    let incidents = rule.incidents(parent);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::CalledElementError
    );
    assert_eq!(incidents[0].record.element_id, "Ship");
    assert!(
        incidents[0].record.error_message.contains("'shipping'"),
        "{}",
        incidents[0].record.error_message
    );
    // Resolving without deploying raises it again.
    rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    let incidents = rule.incidents(parent);
    assert_eq!(incidents.len(), 1);

    rule.deploy_fixture("elements/call-activity-child.bpmn");
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected());
    let child = child_of(&rule, "shipping");
    assert_eq!(rule.variables(child), json!({"orderId": 1}));
    let (job, _) = rule.job("pack");
    rule.complete(job, json!({}));
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_incident_in_the_child_shows_on_the_call_activity() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/call-activity-child.bpmn");
    rule.deploy_fixture("elements/call-activity.bpmn");
    let parent = rule.create("order", json!({}));
    let (job_key, _) = rule.job("pack");
    rule.process(Command::FailJob(FailJob {
        job_key,
        retries: 0,
        error_message: "printer on fire".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::null(),
    }));
    let flags = rule.element_instances(parent);
    assert_eq!(
        flags,
        vec![("order".to_owned(), false), ("Ship".to_owned(), true)]
    );
    rule.assert_replay_matches();
}

fn called_version(rule: &EngineRule, process_id: &str) -> i32 {
    process_events(rule, process_id)
        .last()
        .map(|(_, _, r)| r.version)
        .expect("a child")
}

#[test]
fn binding_types_pick_latest_deployment_or_version_tag() {
    let mut rule = EngineRule::new();
    // Parent bound to its deployment, deployed with child v1 (tag v1).
    let bound = caller(r#"processId="c" bindingType="deployment""#, "")
        .replace(r#"id="p""#, r#"id="bound""#);
    let outcome = rule.deploy(&[
        ("bound.bpmn", bound.into_bytes()),
        ("c.bpmn", child("c", "work", "v1").into_bytes()),
    ]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    // Child v2 (tag v2) alone, then v3 tagged v1 again.
    rule.deploy_xml(&child("c", "work", "v2").replace("cs", "cs2"));
    rule.deploy_xml(&child("c", "work", "v1").replace("cs", "cs3"));
    let latest = caller(r#"processId="c""#, "").replace(r#"id="p""#, r#"id="latest""#);
    let tagged = caller(
        r#"processId="c" bindingType="versionTag" versionTag="v2""#,
        "",
    )
    .replace(r#"id="p""#, r#"id="tagged""#);
    let tagged_v1 = caller(
        r#"processId="c" bindingType="versionTag" versionTag="v1""#,
        "",
    )
    .replace(r#"id="p""#, r#"id="tagged1""#);
    rule.deploy_xml(&latest);
    rule.deploy_xml(&tagged);
    rule.deploy_xml(&tagged_v1);

    for (process, expected) in [("bound", 1), ("latest", 3), ("tagged", 2), ("tagged1", 3)] {
        rule.create(process, json!({}));
        assert_eq!(called_version(&rule, "c"), expected, "{process}");
    }
    let missing = caller(
        r#"processId="c" bindingType="versionTag" versionTag="v9""#,
        "",
    )
    .replace(r#"id="p""#, r#"id="missing""#);
    rule.deploy_xml(&missing);
    let instance = rule.create("missing", json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("version tag 'v9'"),
        "{}",
        incidents[0].record.error_message
    );
    rule.assert_replay_matches();
}

#[test]
fn a_multi_instance_call_activity_starts_one_child_per_item() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&child("c", "work", "v1"));
    let body = format!(
        r#"<bpmn:startEvent id="s" /><bpmn:callActivity id="Call"><bpmn:extensionElements><zeebe:calledElement processId="c" propagateAllChildVariables="false" /><zeebe:ioMapping><zeebe:output source="=result" target="result" /></zeebe:ioMapping></bpmn:extensionElements><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="item" outputCollection="results" outputElement="=result" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics></bpmn:callActivity><bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Call"),
        flow("f2", "Call", "e")
    );
    rule.deploy_xml(&model(&body));
    let parent = rule.create("p", json!({"items": [1, 2, 3]}));
    let jobs = rule.activate("work", 10);
    assert_eq!(jobs.len(), 3);
    for (key, job) in jobs {
        let item = match rule.variables(Key(job.process_instance_key))["item"].clone() {
            Value::Number(n) => n.as_i64().expect("int"),
            other => panic!("{other:?}"),
        };
        rule.complete(key, json!({"result": item * 10}));
    }
    assert_eq!(state(&mut rule, parent), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(parent)["results"], json!([10, 20, 30]));
    rule.assert_replay_matches();
}

#[test]
fn a_process_calling_itself_stops_at_the_depth_limit_with_an_incident() {
    let mut rule = EngineRule::new();
    // A thousand nested instances in one command write more than the default
    // engine.max-bytes-per-command (every record carries its instance's whole tree
    // path): this test is about the depth limit, so it lifts the byte limit.
    rule.limits.max_bytes = u64::MAX / 4;
    // Named by an expression, the call is not seen by the deploy-time loop check (as
    // in Zeebe; a static `processId="p"` is refused as a straight-through loop).
    rule.deploy_xml(&caller(r#"processId="=&quot;p&quot;""#, ""));
    let root = rule.create("p", json!({}));
    let started = process_events(&rule, "p")
        .into_iter()
        .filter(|(_, intent, _)| *intent == Intent::ElementActivating)
        .count();
    assert_eq!(started, 1000);
    let incidents: Vec<_> = rule
        .records()
        .events()
        .of_type(ValueType::Incident)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Incident(i) => Some(i.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].error_type,
        IncidentErrorType::CalledElementError
    );
    assert!(
        incidents[0]
            .error_message
            .contains("1000 process instances are already nested")
    );
    // Cancelling the root takes the whole chain down.
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: root,
    });
    assert!(!outcome.is_rejected());
    let terminated = process_events(&rule, "p")
        .into_iter()
        .filter(|(_, intent, _)| *intent == Intent::ElementTerminated)
        .count();
    assert_eq!(terminated, 1000);
    rule.assert_replay_matches();
}

#[test]
fn the_version_tag_is_recorded_in_the_process_and_deployment_records() {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy_fixture("elements/call-activity-child.bpmn");
    match outcome.value() {
        RecordValue::Deployment(d) => assert_eq!(d.processes_metadata[0].version_tag, "v1"),
        other => panic!("{other:?}"),
    }
    let process = rule
        .records()
        .events()
        .of_type(ValueType::Process)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::Process(p) => Some(p.clone()),
            _ => None,
        })
        .expect("PROCESS CREATED");
    assert_eq!(process.version_tag, "v1");
    // Without a tag it is empty, as in Zeebe.
    rule.deploy_fixture("elements/call-activity.bpmn");
    let tags: Vec<String> = rule
        .records()
        .events()
        .of_type(ValueType::Process)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Process(p) => Some(p.version_tag.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(tags, vec!["v1".to_owned(), String::new()]);
}

/// The instance key a record belongs to and the root it names, for the value types
/// that carry `rootProcessInstanceKey`.
fn instance_and_root(value: &RecordValue) -> Option<(i64, i64)> {
    match value {
        RecordValue::ProcessInstance(v) => {
            Some((v.process_instance_key, v.root_process_instance_key))
        }
        RecordValue::Job(v) => Some((v.process_instance_key, v.root_process_instance_key)),
        RecordValue::Variable(v) => Some((v.process_instance_key, v.root_process_instance_key)),
        RecordValue::Incident(v) => Some((v.process_instance_key, v.root_process_instance_key)),
        _ => None,
    }
}

#[test]
fn every_instance_of_a_call_hierarchy_names_the_top_instance_as_its_root() {
    let mut rule = EngineRule::new();
    // p calls middle, which calls leaf, whose task fails into an incident.
    rule.deploy_xml(&child("leaf", "leaf-work", "v1"));
    rule.deploy_xml(
        &caller(r#"processId="leaf""#, "")
            .replace(r#"<bpmn:process id="p""#, r#"<bpmn:process id="middle""#),
    );
    rule.deploy_xml(&caller(r#"processId="middle""#, ""));
    let top = rule.create("p", json!({"order": 1}));
    let other_top = rule.create("p", json!({"order": 2}));
    let middle = child_of_top(&rule, "middle", top);
    let leaf = child_of_top(&rule, "leaf", top);
    let (job_key, job) = rule
        .activate("leaf-work", 10)
        .into_iter()
        .find(|(_, job)| job.process_instance_key == leaf.get())
        .expect("the leaf's job");
    assert_eq!(job.root_process_instance_key, top.get());
    rule.process(Command::FailJob(FailJob {
        job_key,
        retries: 0,
        error_message: "no stock".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::null(),
    }));

    let mut seen = std::collections::BTreeSet::new();
    for record in &rule.records().events().records {
        let Some((instance, root)) = instance_and_root(&record.value) else {
            continue;
        };
        let expected = if [top, middle, leaf].contains(&Key(instance)) {
            top
        } else {
            other_top
        };
        assert_eq!(
            root,
            expected.get(),
            "{:?} {:?} of instance {instance}",
            record.value.value_type(),
            record.intent
        );
        seen.insert((record.value.value_type().name(), instance == leaf.get()));
    }
    // The leaf's own job, variables and incident were among them.
    for value_type in ["PROCESS_INSTANCE", "JOB", "VARIABLE", "INCIDENT"] {
        assert!(seen.contains(&(value_type, true)), "{value_type}: {seen:?}");
    }
    rule.assert_replay_matches();
}

/// The one instance of `process_id` below the top instance `top`.
fn child_of_top(rule: &EngineRule, process_id: &str, top: Key) -> Key {
    let started: Vec<Key> = process_events(rule, process_id)
        .into_iter()
        .filter(|(_, intent, record)| {
            *intent == Intent::ElementActivating && record.root_process_instance_key == top.get()
        })
        .map(|(key, _, _)| key)
        .collect();
    assert_eq!(started.len(), 1, "{process_id} below {top:?}: {started:?}");
    started[0]
}
