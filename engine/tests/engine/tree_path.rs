//! Zeebe 8.8's tree path (`elementInstancePath`, `processDefinitionPath`,
//! `callingElementPath`): of the PROCESS_INSTANCE records only ELEMENT_ACTIVATING carries
//! it; INCIDENT records carry their element's.

use rill_protocol::value::{BpmnElementType, IncidentRecord, ProcessInstanceRecord};
use rill_protocol::{Command, FailJob, Intent, JsonValue, RecordValue, UpdateJob, ValueType};
use serde_json::json;

use super::elements::{cond_flow, flow, model, task};
use super::*;

/// The ELEMENT_ACTIVATING records of `element_id`, in order: `(key, value)`.
fn activating(rule: &EngineRule, element_id: &str) -> Vec<(i64, ProcessInstanceRecord)> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .with_intent(Intent::ElementActivating)
        .element(element_id)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some((r.key.get(), v.clone())),
            _ => None,
        })
        .collect()
}

/// The one ELEMENT_ACTIVATING record of `element_id`.
fn activating_one(rule: &EngineRule, element_id: &str) -> (i64, ProcessInstanceRecord) {
    let mut found = activating(rule, element_id);
    assert_eq!(found.len(), 1, "one activation of {element_id}");
    found.remove(0)
}

fn path(record: &ProcessInstanceRecord) -> (Vec<Vec<i64>>, Vec<i64>, Vec<i32>) {
    (
        record.element_instance_path().to_vec(),
        record.process_definition_path().to_vec(),
        record.calling_element_path().to_vec(),
    )
}

/// What holds for every PROCESS_INSTANCE record: ELEMENT_ACTIVATING carries a path that
/// ends at its own instance in its own definition; every other record carries none.
fn check_every_record(rule: &EngineRule) {
    let records = rule.records().of_type(ValueType::ProcessInstance);
    assert!(records.count() > 0);
    for record in &records.records {
        let RecordValue::ProcessInstance(v) = &record.value else {
            unreachable!("filtered to process instance records")
        };
        if record.intent == Intent::ElementActivating {
            let own = v.element_instance_path().last().expect("a path");
            assert_eq!(own.first(), Some(&v.process_instance_key), "{v:?}");
            assert_eq!(own.last(), Some(&record.key.get()), "{v:?}");
            assert_eq!(
                v.process_definition_path().last(),
                Some(&v.process_definition_key)
            );
            assert_eq!(
                v.element_instance_path().len(),
                v.process_definition_path().len()
            );
            assert_eq!(
                v.calling_element_path().len() + 1,
                v.process_definition_path().len()
            );
        } else {
            assert!(
                v.element_instance_path().is_empty()
                    && v.process_definition_path().is_empty()
                    && v.calling_element_path().is_empty(),
                "{:?} {} carries a tree path: {v:?}",
                record.intent,
                v.element_id
            );
        }
    }
}

#[test]
fn a_root_instance_has_one_level() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&format!(
        r#"<bpmn:startEvent id="s" />{}<bpmn:endEvent id="e" />{}{}"#,
        task("Work", "work"),
        flow("f1", "s", "Work"),
        flow("f2", "Work", "e")
    )));
    let instance = rule.create("p", empty()).get();
    let (job_key, _) = rule.job("work");
    rule.complete(job_key, json!({}));

    let (key, process) = activating_one(&rule, "p");
    assert_eq!(key, instance);
    let definition = process.process_definition_key;
    assert_eq!(
        path(&process),
        (vec![vec![instance]], vec![definition], vec![])
    );
    for id in ["s", "Work", "e"] {
        let (key, record) = activating_one(&rule, id);
        assert_eq!(
            path(&record),
            (vec![vec![instance, key]], vec![definition], vec![]),
            "{id}"
        );
    }
    check_every_record(&rule);
    rule.assert_replay_matches();
}

#[test]
fn an_embedded_subprocess_adds_its_instance_to_the_path() {
    let mut rule = EngineRule::new();
    let sub = format!(
        r#"<bpmn:subProcess id="Sub"><bpmn:startEvent id="ss" />{}<bpmn:endEvent id="se" />{}{}</bpmn:subProcess>"#,
        task("Inner", "inner"),
        flow("g1", "ss", "Inner"),
        flow("g2", "Inner", "se")
    );
    rule.deploy_xml(&model(&format!(
        r#"<bpmn:startEvent id="s" />{sub}<bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Sub"),
        flow("f2", "Sub", "e")
    )));
    let instance = rule.create("p", empty()).get();
    let (job_key, _) = rule.job("inner");
    rule.complete(job_key, json!({}));

    let (sub_key, sub) = activating_one(&rule, "Sub");
    let definition = sub.process_definition_key;
    assert_eq!(sub.element_instance_path(), vec![vec![instance, sub_key]]);
    for id in ["ss", "Inner", "se"] {
        let (key, record) = activating_one(&rule, id);
        assert_eq!(
            path(&record),
            (vec![vec![instance, sub_key, key]], vec![definition], vec![]),
            "{id}"
        );
    }
    let (end_key, end) = activating_one(&rule, "e");
    assert_eq!(end.element_instance_path(), vec![vec![instance, end_key]]);
    check_every_record(&rule);
    rule.assert_replay_matches();
}

/// A resource with two executable processes: `p` calls `b` from `Call_b`; `other`
/// holds two more call activities, so that `Call_b`'s index counts across the resource
/// (`Aa`, `Call_b`, `Zz`: 1).
fn root_resource() -> String {
    let call = |id: &str, process: &str| {
        format!(
            r#"<bpmn:callActivity id="{id}"><bpmn:extensionElements><zeebe:calledElement processId="{process}" /></bpmn:extensionElements></bpmn:callActivity>"#
        )
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="R" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="other" isExecutable="true">
    <bpmn:startEvent id="os" />{zz}{aa}<bpmn:endEvent id="oe" />{}{}{}
  </bpmn:process>
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s" />{call_b}<bpmn:endEvent id="e" />{}{}
  </bpmn:process>
</bpmn:definitions>"#,
        flow("o1", "os", "Zz"),
        flow("o2", "Zz", "Aa"),
        flow("o3", "Aa", "oe"),
        flow("f1", "s", "Call_b"),
        flow("f2", "Call_b", "e"),
        zz = call("Zz", "c"),
        aa = call("Aa", "c"),
        call_b = call("Call_b", "b"),
    )
}

/// `b`: its call activity `Call_c` sits in the subprocess `SubB`.
fn middle_process() -> String {
    let sub = format!(
        r#"<bpmn:subProcess id="SubB"><bpmn:startEvent id="bss" /><bpmn:callActivity id="Call_c"><bpmn:extensionElements><zeebe:calledElement processId="c" /></bpmn:extensionElements></bpmn:callActivity><bpmn:endEvent id="bse" />{}{}</bpmn:subProcess>"#,
        flow("g1", "bss", "Call_c"),
        flow("g2", "Call_c", "bse")
    );
    model(&format!(
        r#"<bpmn:startEvent id="bs" />{sub}<bpmn:endEvent id="be" />{}{}"#,
        flow("b1", "bs", "SubB"),
        flow("b2", "SubB", "be")
    ))
    .replace(r#"<bpmn:process id="p""#, r#"<bpmn:process id="b""#)
}

/// `c`: start → Work → end.
fn leaf_process() -> String {
    model(&format!(
        r#"<bpmn:startEvent id="cs" />{}<bpmn:endEvent id="ce" />{}{}"#,
        task("Work", "work"),
        flow("c1", "cs", "Work"),
        flow("c2", "Work", "ce")
    ))
    .replace(r#"<bpmn:process id="p""#, r#"<bpmn:process id="c""#)
}

#[test]
fn called_instances_two_levels_deep_carry_the_whole_hierarchy() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&leaf_process());
    rule.deploy_xml(&middle_process());
    rule.deploy_xml(&root_resource());
    let root = rule.create("p", empty()).get();

    let (_, root_record) = activating_one(&rule, "p");
    let (call_b, _) = activating_one(&rule, "Call_b");
    let (b, b_record) = activating_one(&rule, "b");
    let (sub_b, _) = activating_one(&rule, "SubB");
    let (call_c, _) = activating_one(&rule, "Call_c");
    let (c, c_record) = activating_one(&rule, "c");
    let (work, work_record) = activating_one(&rule, "Work");
    let definitions = vec![
        root_record.process_definition_key,
        b_record.process_definition_key,
        c_record.process_definition_key,
    ];

    // The called processes: their own instance under the call activities above.
    assert_eq!(
        path(&b_record),
        (
            vec![vec![root, call_b], vec![b]],
            definitions[..2].to_vec(),
            vec![1]
        )
    );
    assert_eq!(
        path(&c_record),
        (
            vec![vec![root, call_b], vec![b, sub_b, call_c], vec![c]],
            definitions.clone(),
            vec![1, 0]
        )
    );
    // The task in the deepest instance; `Call_c` is the only call activity of `b`'s
    // resource (index 0).
    assert_eq!(
        path(&work_record),
        (
            vec![vec![root, call_b], vec![b, sub_b, call_c], vec![c, work]],
            definitions.clone(),
            vec![1, 0]
        )
    );

    // The rest of the hierarchy completes; nothing but ELEMENT_ACTIVATING had a path.
    let (job_key, _) = rule.job("work");
    rule.complete(job_key, json!({}));
    assert_eq!(activating(&rule, "e").len(), 1, "the root instance ended");
    let (_, end) = activating_one(&rule, "be");
    assert_eq!(end.calling_element_path(), vec![1]);
    check_every_record(&rule);
    rule.assert_replay_matches();
}

#[test]
fn a_multi_instance_body_is_the_flow_scope_of_its_inner_instances() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&format!(
        r#"<bpmn:startEvent id="s" /><bpmn:serviceTask id="Each"><bpmn:extensionElements><zeebe:taskDefinition type="each" /></bpmn:extensionElements><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1, 2]" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask><bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Each"),
        flow("f2", "Each", "e")
    )));
    let instance = rule.create("p", empty()).get();
    let jobs = rule.activate("each", 10);
    assert_eq!(jobs.len(), 2);
    for (job_key, _) in jobs {
        rule.complete(job_key, json!({}));
    }

    let records = activating(&rule, "Each");
    assert_eq!(records.len(), 3, "the body and two inner instances");
    let (body, body_record) = &records[0];
    assert_eq!(
        body_record.bpmn_element_type,
        BpmnElementType::MultiInstanceBody
    );
    assert_eq!(
        body_record.element_instance_path(),
        vec![vec![instance, *body]]
    );
    for (inner, record) in &records[1..] {
        assert_eq!(record.bpmn_element_type, BpmnElementType::ServiceTask);
        assert_eq!(
            path(record),
            (
                vec![vec![instance, *body, *inner]],
                vec![record.process_definition_key],
                vec![]
            )
        );
    }
    check_every_record(&rule);
    rule.assert_replay_matches();
}

#[test]
fn an_instance_started_by_a_message_has_a_path_too() {
    // Not every instance starts by a command: a message start enters the process
    // through another path of the engine.
    let mut rule = EngineRule::new();
    rule.deploy_xml(&model(&format!(
        r#"<bpmn:startEvent id="ms"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>{}<bpmn:endEvent id="e" />{}{}"#,
        task("Work", "work"),
        flow("f1", "ms", "Work"),
        flow("f2", "Work", "e")
    )));
    rule.publish("msg", "", 0, json!({}));
    let (instance, process) = activating_one(&rule, "p");
    assert_eq!(process.element_instance_path(), vec![vec![instance]]);
    let (work, record) = activating_one(&rule, "Work");
    assert_eq!(record.element_instance_path(), vec![vec![instance, work]]);
    check_every_record(&rule);
    rule.assert_replay_matches();
}

#[test]
fn a_compensation_boundary_event_carries_the_path_on_all_its_records() {
    // Zeebe writes the boundary event's four records from one value, path included.
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/compensation-travel.bpmn");
    let instance = rule.create("travel-booking", json!({"trip": 7})).get();
    for job_type in ["book-hotel", "book-flight"] {
        let (job_key, _) = rule.job(job_type);
        rule.complete(job_key, json!({}));
    }
    let records = rule
        .records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .element("HotelBooked");
    let intents: Vec<Intent> = records.records.iter().map(|r| r.intent).collect();
    assert_eq!(
        intents,
        [
            Intent::ElementActivating,
            Intent::ElementActivated,
            Intent::ElementCompleting,
            Intent::ElementCompleted,
        ]
    );
    let key = records.records[0].key.get();
    for record in &records.records {
        let RecordValue::ProcessInstance(v) = &record.value else {
            unreachable!("filtered to process instance records")
        };
        assert_eq!(
            path(v),
            (
                vec![vec![instance, key]],
                vec![v.process_definition_key],
                vec![]
            ),
            "{:?}",
            record.intent
        );
    }
    rule.assert_replay_matches();
}

#[test]
fn an_ad_hoc_inner_instance_carries_the_path_on_activating_and_activated() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/ad-hoc-subprocess.bpmn");
    let instance = rule
        .create("adhoc-basic", json!({"toActivate": ["Research"]}))
        .get();
    let (ad_hoc, _) = activating_one(&rule, "Prepare");
    let inner_records = rule
        .records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .element("Prepare#innerInstance");
    let inner = inner_records.records[0].key.get();
    for record in &inner_records.records {
        let RecordValue::ProcessInstance(v) = &record.value else {
            unreachable!("filtered to process instance records")
        };
        let expected = match record.intent {
            Intent::ElementActivating | Intent::ElementActivated => {
                vec![vec![instance, ad_hoc, inner]]
            }
            _ => Vec::new(),
        };
        assert_eq!(v.element_instance_path(), expected, "{:?}", record.intent);
    }
    let (research, record) = activating_one(&rule, "Research");
    assert_eq!(
        record.element_instance_path(),
        vec![vec![instance, ad_hoc, inner, research]]
    );
    rule.assert_replay_matches();
}

/// The INCIDENT records of the rule, in order: `(intent, value)`.
fn incidents(rule: &EngineRule) -> Vec<(Intent, IncidentRecord)> {
    rule.records()
        .events()
        .of_type(ValueType::Incident)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Incident(v) => Some((r.intent, v.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn an_incident_carries_the_tree_path_of_its_element_on_creation_and_resolution() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&leaf_process());
    rule.deploy_xml(&middle_process());
    rule.deploy_xml(&root_resource());
    rule.create("p", empty());
    let (work, work_record) = activating_one(&rule, "Work");

    let (job_key, _) = rule.job("work");
    let outcome = rule.process(Command::FailJob(FailJob {
        job_key,
        retries: 0,
        error_message: "no stock service".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let created = incidents(&rule);
    assert_eq!(created.len(), 1, "{created:?}");
    let (intent, incident) = &created[0];
    assert_eq!(*intent, Intent::Created);
    assert_eq!(incident.element_instance_key, work);
    // Three process instances deep: the whole hierarchy, as on the task's activation.
    let expected = path(&work_record);
    assert_eq!(expected.0.len(), 3);
    assert_eq!(
        (
            incident.element_instance_path.clone(),
            incident.process_definition_path.clone(),
            incident.calling_element_path.clone()
        ),
        expected
    );

    let incident_key = rule.records().events().of_type(ValueType::Incident).records[0].key;
    let outcome = rule.process(Command::UpdateJob(UpdateJob {
        job_key,
        retries: Some(1),
        timeout: None,
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let outcome = rule.process(Command::ResolveIncident { incident_key });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let all = incidents(&rule);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[1].0, Intent::Resolved);
    assert_eq!(all[1].1, all[0].1, "RESOLVED repeats the created incident");
    rule.assert_replay_matches();
}

#[test]
fn an_incident_on_an_element_in_a_subprocess_names_the_subprocess_in_its_path() {
    let mut rule = EngineRule::new();
    // The gateway's only flow has a condition that is false: a condition incident.
    let sub = format!(
        r#"<bpmn:subProcess id="Sub"><bpmn:startEvent id="ss" /><bpmn:exclusiveGateway id="Gw" /><bpmn:endEvent id="se" />{}{}</bpmn:subProcess>"#,
        flow("g1", "ss", "Gw"),
        cond_flow("g2", "Gw", "se", "=false")
    );
    rule.deploy_xml(&model(&format!(
        r#"<bpmn:startEvent id="s" />{sub}<bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Sub"),
        flow("f2", "Sub", "e")
    )));
    let instance = rule.create("p", empty()).get();

    let (sub_key, sub) = activating_one(&rule, "Sub");
    let (gateway_key, _) = activating_one(&rule, "Gw");
    let created = incidents(&rule);
    assert_eq!(created.len(), 1, "{created:?}");
    let incident = &created[0].1;
    assert_eq!(incident.element_id, "Gw");
    assert_eq!(
        incident.element_instance_path,
        vec![vec![instance, sub_key, gateway_key]]
    );
    assert_eq!(
        incident.process_definition_path,
        vec![sub.process_definition_key]
    );
    assert!(incident.calling_element_path.is_empty());
    rule.assert_replay_matches();
}
