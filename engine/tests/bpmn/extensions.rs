//! The guard of issue 23, item 5: every `zeebe:` extension element, on every kind of
//! element that can hold one, is either accepted and run (or kept as documented
//! metadata) or rejected at deploy with a problem naming the element and the extension.
//! Nothing is accepted and ignored: a pair that deploys must be in `RUNS` or `METADATA`,
//! and what it means must show in the model.

use rill_engine::model::{ElementKind, ProcessModel, ScriptDefinition};
use rill_engine::parse_bpmn;

use super::*;

/// Every extension element of Zeebe 8.8's moddle, with content that is valid where it
/// is supported (so that a rejection is about the place, not the content), plus one
/// Zeebe does not have.
const EXTENSIONS: &[(&str, &str)] = &[
    ("taskDefinition", r#"<zeebe:taskDefinition type="extra" />"#),
    (
        "taskHeaders",
        r#"<zeebe:taskHeaders><zeebe:header key="k" value="v" /></zeebe:taskHeaders>"#,
    ),
    (
        "ioMapping",
        r#"<zeebe:ioMapping><zeebe:output source="=1" target="mapped" /></zeebe:ioMapping>"#,
    ),
    (
        "script",
        r#"<zeebe:script expression="=1 + 1" resultVariable="two" />"#,
    ),
    (
        "subscription",
        r#"<zeebe:subscription correlationKey="=key" />"#,
    ),
    (
        "properties",
        r#"<zeebe:properties><zeebe:property name="team" value="billing" /></zeebe:properties>"#,
    ),
    ("versionTag", r#"<zeebe:versionTag value="v1.0" />"#),
    (
        "userTaskForm",
        r#"<zeebe:userTaskForm id="form1">{}</zeebe:userTaskForm>"#,
    ),
    (
        "executionListeners",
        r#"<zeebe:executionListeners><zeebe:executionListener eventType="start" type="audit" /></zeebe:executionListeners>"#,
    ),
    (
        "taskListeners",
        r#"<zeebe:taskListeners><zeebe:taskListener eventType="creating" type="audit" /></zeebe:taskListeners>"#,
    ),
    ("userTask", r#"<zeebe:userTask />"#),
    (
        "assignmentDefinition",
        r#"<zeebe:assignmentDefinition assignee="demo" />"#,
    ),
    ("formDefinition", r#"<zeebe:formDefinition formId="f" />"#),
    ("taskSchedule", r#"<zeebe:taskSchedule dueDate="=now()" />"#),
    (
        "priorityDefinition",
        r#"<zeebe:priorityDefinition priority="50" />"#,
    ),
    (
        "calledElement",
        r#"<zeebe:calledElement processId="child" propagateAllChildVariables="false" />"#,
    ),
    (
        "calledDecision",
        r#"<zeebe:calledDecision decisionId="d" resultVariable="r" />"#,
    ),
    (
        "loopCharacteristics",
        r#"<zeebe:loopCharacteristics inputCollection="=items" inputElement="item" />"#,
    ),
    (
        "linkedResources",
        r#"<zeebe:linkedResources><zeebe:linkedResource resourceId="r" linkName="l" resourceType="RPA" /></zeebe:linkedResources>"#,
    ),
    (
        "adHoc",
        r#"<zeebe:adHoc activeElementsCollection="=items" />"#,
    ),
    ("frobnicate", r#"<zeebe:frobnicate />"#),
];

/// Every place the parser meets an `extensionElements`, as `(host, model body)`: the
/// element `Host` holds `{ext}` and is valid without it.
fn hosts() -> Vec<(&'static str, String)> {
    let job = r#"<zeebe:taskDefinition type="base" />"#;
    vec![
        ("process", String::new()),
        (
            "serviceTask",
            format!(r#"<bpmn:serviceTask id="Host"><bpmn:extensionElements>{job}{{ext}}</bpmn:extensionElements></bpmn:serviceTask>"#),
        ),
        (
            "sendTask",
            format!(r#"<bpmn:sendTask id="Host"><bpmn:extensionElements>{job}{{ext}}</bpmn:extensionElements></bpmn:sendTask>"#),
        ),
        (
            "scriptTask",
            r#"<bpmn:scriptTask id="Host"><bpmn:extensionElements><zeebe:script expression="=0" resultVariable="zero" />{ext}</bpmn:extensionElements></bpmn:scriptTask>"#.to_owned(),
        ),
        (
            "messageThrowEvent",
            format!(r#"<bpmn:intermediateThrowEvent id="Host"><bpmn:extensionElements>{job}{{ext}}</bpmn:extensionElements><bpmn:messageEventDefinition /></bpmn:intermediateThrowEvent>"#),
        ),
        (
            "messageEndEvent",
            format!(r#"<bpmn:endEvent id="Host"><bpmn:extensionElements>{job}{{ext}}</bpmn:extensionElements><bpmn:messageEventDefinition /></bpmn:endEvent>"#),
        ),
        (
            "task",
            r#"<bpmn:task id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:task>"#.to_owned(),
        ),
        (
            "manualTask",
            r#"<bpmn:manualTask id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:manualTask>"#.to_owned(),
        ),
        (
            "receiveTask",
            r#"<bpmn:receiveTask id="Host" messageRef="M"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:receiveTask>"#.to_owned(),
        ),
        (
            "subProcess",
            r#"<bpmn:subProcess id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements><bpmn:startEvent id="Inner" /></bpmn:subProcess>"#.to_owned(),
        ),
        (
            "adHocSubProcess",
            r#"<bpmn:adHocSubProcess id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements><bpmn:task id="Inner" /></bpmn:adHocSubProcess>"#.to_owned(),
        ),
        (
            "callActivity",
            r#"<bpmn:callActivity id="Host"><bpmn:extensionElements><zeebe:calledElement processId="child" />{ext}</bpmn:extensionElements></bpmn:callActivity>"#.to_owned(),
        ),
        (
            "startEvent",
            r#"<bpmn:startEvent id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:startEvent>"#.to_owned(),
        ),
        (
            "endEvent",
            r#"<bpmn:endEvent id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:endEvent>"#.to_owned(),
        ),
        (
            "intermediateThrowEvent",
            r#"<bpmn:intermediateThrowEvent id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:intermediateThrowEvent>"#.to_owned(),
        ),
        (
            "intermediateCatchEvent",
            r#"<bpmn:intermediateCatchEvent id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"#.to_owned(),
        ),
        (
            "boundaryEvent",
            format!(r#"<bpmn:serviceTask id="Work"><bpmn:extensionElements>{job}</bpmn:extensionElements></bpmn:serviceTask><bpmn:boundaryEvent id="Host" attachedToRef="Work"><bpmn:extensionElements>{{ext}}</bpmn:extensionElements><bpmn:outgoing>Out</bpmn:outgoing><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent><bpmn:endEvent id="After" /><bpmn:sequenceFlow id="Out" sourceRef="Host" targetRef="After" />"#),
        ),
        (
            "exclusiveGateway",
            r#"<bpmn:exclusiveGateway id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:exclusiveGateway><bpmn:endEvent id="After" /><bpmn:sequenceFlow id="Out" sourceRef="Host" targetRef="After" />"#.to_owned(),
        ),
        (
            "parallelGateway",
            r#"<bpmn:parallelGateway id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:parallelGateway><bpmn:endEvent id="After" /><bpmn:sequenceFlow id="Out" sourceRef="Host" targetRef="After" />"#.to_owned(),
        ),
        (
            "multiInstanceLoopCharacteristics",
            r#"<bpmn:task id="Host"><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1]" />{ext}</bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics></bpmn:task>"#.to_owned(),
        ),
        (
            "inclusiveGateway",
            r#"<bpmn:inclusiveGateway id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:inclusiveGateway><bpmn:endEvent id="After" /><bpmn:sequenceFlow id="Out" sourceRef="Host" targetRef="After" />"#.to_owned(),
        ),
        (
            "eventBasedGateway",
            r#"<bpmn:eventBasedGateway id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:eventBasedGateway><bpmn:intermediateCatchEvent id="Later"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent><bpmn:intermediateCatchEvent id="Told"><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent><bpmn:sequenceFlow id="Out" sourceRef="Host" targetRef="Later" /><bpmn:sequenceFlow id="Out2" sourceRef="Host" targetRef="Told" />"#.to_owned(),
        ),
        (
            "eventSubProcess",
            r#"<bpmn:subProcess id="Host" triggeredByEvent="true"><bpmn:extensionElements>{ext}</bpmn:extensionElements><bpmn:startEvent id="Inner"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:startEvent></bpmn:subProcess>"#.to_owned(),
        ),
        (
            "eventSubProcessStartEvent",
            r#"<bpmn:subProcess id="Events" triggeredByEvent="true"><bpmn:startEvent id="Host" isInterrupting="false"><bpmn:extensionElements>{ext}</bpmn:extensionElements><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent></bpmn:subProcess>"#.to_owned(),
        ),
        (
            "messageBoundaryEvent",
            format!(r#"<bpmn:serviceTask id="Work"><bpmn:extensionElements>{job}</bpmn:extensionElements></bpmn:serviceTask><bpmn:boundaryEvent id="Host" attachedToRef="Work"><bpmn:extensionElements>{{ext}}</bpmn:extensionElements><bpmn:outgoing>Out</bpmn:outgoing><bpmn:messageEventDefinition messageRef="M" /></bpmn:boundaryEvent><bpmn:endEvent id="After" /><bpmn:sequenceFlow id="Out" sourceRef="Host" targetRef="After" />"#),
        ),
        (
            "sequenceFlow",
            r#"<bpmn:endEvent id="After" /><bpmn:sequenceFlow id="Host" sourceRef="Start" targetRef="After"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:sequenceFlow>"#.to_owned(),
        ),
        (
            "message",
            r#"<bpmn:receiveTask id="Wait" messageRef="Host" />"#.to_owned(),
        ),
    ]
}

/// `(extension, host)` pairs Rill runs; each is checked in the model by `runs_in`.
const RUNS: &[(&str, &[&str])] = &[
    // Zeebe 8.8 links resources to service task jobs only.
    ("linkedResources", &["serviceTask"]),
    (
        "taskDefinition",
        &[
            "serviceTask",
            "sendTask",
            "messageThrowEvent",
            "messageEndEvent",
            "adHocSubProcess",
        ],
    ),
    (
        "taskHeaders",
        &[
            "serviceTask",
            "sendTask",
            "messageThrowEvent",
            "messageEndEvent",
        ],
    ),
    (
        "ioMapping",
        &[
            "serviceTask",
            "sendTask",
            "scriptTask",
            "messageThrowEvent",
            "messageEndEvent",
            "task",
            "manualTask",
            "receiveTask",
            "subProcess",
            "adHocSubProcess",
            "callActivity",
            "startEvent",
            "endEvent",
            "intermediateThrowEvent",
            "intermediateCatchEvent",
            "boundaryEvent",
            "eventSubProcess",
            "eventSubProcessStartEvent",
            "messageBoundaryEvent",
        ],
    ),
    ("subscription", &["message"]),
    ("versionTag", &["process"]),
    // A start form, on the process's none start event.
    ("formDefinition", &["startEvent"]),
    ("adHoc", &["adHocSubProcess"]),
    // A start listener (the snippet's): start and boundary events refuse those.
    (
        "executionListeners",
        &[
            "process",
            "serviceTask",
            "sendTask",
            "scriptTask",
            "messageThrowEvent",
            "messageEndEvent",
            "task",
            "manualTask",
            "receiveTask",
            "subProcess",
            "adHocSubProcess",
            "callActivity",
            "endEvent",
            "intermediateThrowEvent",
            "intermediateCatchEvent",
            "exclusiveGateway",
            "parallelGateway",
            "inclusiveGateway",
            "eventBasedGateway",
            "eventSubProcess",
        ],
    ),
];

/// `(extension, hosts)` accepted with no runtime meaning (docs/decisions/bpmn-parsing.md).
const METADATA: &[(&str, &[&str])] = &[
    (
        "properties",
        &[
            "process",
            "serviceTask",
            "sendTask",
            "scriptTask",
            "messageThrowEvent",
            "messageEndEvent",
            "task",
            "manualTask",
            "receiveTask",
            "subProcess",
            "adHocSubProcess",
            "callActivity",
            "startEvent",
            "endEvent",
            "intermediateThrowEvent",
            "intermediateCatchEvent",
            "boundaryEvent",
            "exclusiveGateway",
            "parallelGateway",
            "inclusiveGateway",
            "eventBasedGateway",
            "eventSubProcess",
            "eventSubProcessStartEvent",
            "messageBoundaryEvent",
            "multiInstanceLoopCharacteristics",
            "sequenceFlow",
            "message",
        ],
    ),
    ("userTaskForm", &["process"]),
    // Zeebe 8.8 ignores a task definition on a user task.
    ("taskDefinition", &["userTask"]),
];

fn listed(table: &[(&str, &[&str])], extension: &str, host: &str) -> bool {
    table
        .iter()
        .any(|(e, hosts)| *e == extension && hosts.contains(&host))
}

fn model_with(host: &str, body: &str, snippet: &str) -> String {
    let (process_ext, message_ext, body) = match host {
        "process" => (snippet.to_owned(), String::new(), body.to_owned()),
        "message" => (String::new(), snippet.to_owned(), body.to_owned()),
        _ => (String::new(), String::new(), body.replace("{ext}", snippet)),
    };
    let message_id = if host == "message" { "Host" } else { "M" };
    // The host is the process's start event itself there.
    let start = if host == "startEvent" {
        ""
    } else {
        r#"<bpmn:startEvent id="Start" />"#
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:extensionElements>{process_ext}</bpmn:extensionElements>
    {start}
    {body}
  </bpmn:process>
  <bpmn:message id="{message_id}" name="msg"><bpmn:extensionElements><zeebe:subscription correlationKey="=key" />{message_ext}</bpmn:extensionElements></bpmn:message>
</bpmn:definitions>"#
    )
}

/// The element id a host's problems are reported on.
fn host_id(host: &str) -> &str {
    if host == "process" { "p" } else { "Host" }
}

/// What an accepted, running extension must have put into the model.
fn runs_in(model: &ProcessModel, extension: &str, host: &str) -> bool {
    if host == "message" {
        // The subscription is the correlation key of the element waiting for it.
        return matches!(
            &el(model, "Wait").kind,
            ElementKind::ReceiveTask(m) if expr_source(&m.correlation_key) == "key"
        );
    }
    let runs_listener = |element: &rill_engine::model::Element| {
        element.listeners.end.is_empty()
            && matches!(element.listeners.start.as_slice(), [job] if static_value(&job.job_type) == "audit")
    };
    if host == "process" {
        return match extension {
            "versionTag" => model.version_tag.as_deref() == Some("v1.0"),
            "executionListeners" => runs_listener(model.element(ProcessModel::ROOT)),
            _ => false,
        };
    }
    let element = el(model, "Host");
    // An ad-hoc subprocess's job (the job-worker implementation) is in its definition.
    let job = element.kind.job_definition().or(match &element.kind {
        ElementKind::AdHocSubProcess(definition) => definition.job.as_ref(),
        _ => None,
    });
    match extension {
        "executionListeners" => runs_listener(element),
        "taskDefinition" => job.is_some_and(|job| static_value(&job.job_type) == "extra"),
        "taskHeaders" => element
            .kind
            .job_definition()
            .is_some_and(|job| job.headers == vec![("k".to_owned(), "v".to_owned())]),
        "ioMapping" => element.outputs.len() == 1 && element.outputs[0].target == vec!["mapped"],
        "formDefinition" => matches!(
            &model.start_form,
            Some(rill_engine::model::StartForm::Linked { form_id, .. }) if form_id == "f"
        ),
        "adHoc" => matches!(
            &element.kind,
            ElementKind::AdHocSubProcess(definition)
                if definition.active_elements.as_ref().is_some_and(|e| e.source() == "items")
        ),
        "linkedResources" => element.kind.job_definition().is_some_and(|job| {
            job.linked_resources
                == vec![rill_engine::model::LinkedResource {
                    resource_id: "r".to_owned(),
                    resource_type: "RPA".to_owned(),
                    link_name: "l".to_owned(),
                    binding: rill_engine::model::CalledBinding::Latest,
                }]
        }),
        "script" => matches!(
            &element.kind,
            ElementKind::ScriptTask(ScriptDefinition::Expression { result_variable, .. })
                if result_variable == "two"
        ),
        _ => false,
    }
}

#[test]
fn every_zeebe_extension_is_run_kept_as_metadata_or_rejected_naming_the_element() {
    let mut checked = 0;
    for (host, body) in hosts() {
        for (extension, snippet) in EXTENSIONS {
            let xml = model_with(host, &body, snippet);
            let place = format!("zeebe:{extension} on {host}");
            match parse_bpmn("extensions.bpmn", xml.as_bytes()) {
                Ok(mut models) => {
                    let model = models.remove(0);
                    if listed(RUNS, extension, host) {
                        assert!(
                            runs_in(&model, extension, host),
                            "{place} deployed but is not in the model"
                        );
                    } else {
                        assert!(
                            listed(METADATA, extension, host),
                            "{place} was accepted but is neither run nor documented metadata"
                        );
                    }
                }
                Err(error) => {
                    assert!(
                        !listed(METADATA, extension, host),
                        "{place} is metadata but was rejected:\n{error}"
                    );
                    let named = error.problems.iter().any(|p| {
                        p.element_id.as_deref() == Some(host_id(host))
                            && p.message.contains(&format!("zeebe:{extension}"))
                    });
                    assert!(
                        named,
                        "{place} must be rejected on '{}' with a reason naming \
                         zeebe:{extension}:\n{error}",
                        host_id(host)
                    );
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, hosts().len() * EXTENSIONS.len());
}

#[test]
fn a_job_worker_script_task_runs_its_task_definition_and_headers() {
    // On a script task the job extensions replace zeebe:script, so they are checked
    // apart from the table above (where the host already has a script).
    let body = r#"<bpmn:scriptTask id="Host"><bpmn:extensionElements><zeebe:taskDefinition type="extra" /><zeebe:taskHeaders><zeebe:header key="k" value="v" /></zeebe:taskHeaders></bpmn:extensionElements></bpmn:scriptTask>"#;
    let xml = model_with("scriptTask", body, "");
    let model = parse_bpmn("script.bpmn", xml.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    assert!(runs_in(&model, "taskDefinition", "scriptTask"));
    assert!(runs_in(&model, "taskHeaders", "scriptTask"));
    let scripted = model_with(
        "task",
        r#"<bpmn:scriptTask id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:scriptTask>"#,
        r#"<zeebe:script expression="=1 + 1" resultVariable="two" />"#,
    );
    let model = parse_bpmn("script.bpmn", scripted.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    assert!(runs_in(&model, "script", "scriptTask"));
}

#[test]
fn other_vendors_extensions_are_not_zeebes_and_are_read_past() {
    let body = r#"<bpmn:task id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:task>"#;
    let xml = model_with(
        "task",
        body,
        r#"<camunda:inputOutput xmlns:camunda="http://camunda.org/schema/1.0/bpmn" />"#,
    );
    assert!(parse_bpmn("vendor.bpmn", xml.as_bytes()).is_ok());
}

#[test]
fn loop_characteristics_run_inside_multi_instance_loop_characteristics_only() {
    // The table above has loopCharacteristics on every host's own extensionElements,
    // where it is rejected; inside bpmn:multiInstanceLoopCharacteristics it runs.
    let body = r#"<bpmn:serviceTask id="Host"><bpmn:extensionElements><zeebe:taskDefinition type="t" /></bpmn:extensionElements><bpmn:multiInstanceLoopCharacteristics isSequential="true"><bpmn:extensionElements>{ext}</bpmn:extensionElements><bpmn:completionCondition>=numberOfCompletedInstances = 2</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>"#;
    let xml = model_with(
        "task",
        body,
        r#"<zeebe:loopCharacteristics inputCollection="=items" inputElement="item" outputCollection="results" outputElement="=result" />"#,
    );
    let model = parse_bpmn("mi.bpmn", xml.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    let mi = el(&model, "Host")
        .multi_instance
        .as_ref()
        .expect("multi-instance");
    assert!(mi.sequential);
    assert_eq!(mi.input_collection.source(), "items");
    assert_eq!(mi.input_element.as_deref(), Some("item"));
    assert_eq!(mi.output_collection.as_deref(), Some("results"));
    assert_eq!(
        mi.output_element.as_ref().map(|e| e.source()),
        Some("result")
    );
    assert_eq!(mi.output_element_variable(), Some("result"));
    assert_eq!(
        mi.completion_condition.as_ref().map(|e| e.source()),
        Some("numberOfCompletedInstances = 2")
    );
}

#[test]
fn a_call_activity_runs_its_called_element() {
    let body = r#"<bpmn:callActivity id="Host"><bpmn:extensionElements>{ext}</bpmn:extensionElements></bpmn:callActivity>"#;
    let xml = model_with(
        "task",
        body,
        r#"<zeebe:calledElement processId="=&quot;ship-&quot; + region" propagateAllChildVariables="false" propagateAllParentVariables="false" bindingType="versionTag" versionTag="v2" />"#,
    );
    let model = parse_bpmn("call.bpmn", xml.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    let ElementKind::CallActivity(called) = &el(&model, "Host").kind else {
        panic!("not a call activity");
    };
    assert_eq!(expr_source(&called.process_id), "\"ship-\" + region");
    assert!(!called.propagate_all_child_variables);
    assert!(!called.propagate_all_parent_variables);
    assert_eq!(
        called.binding,
        rill_engine::model::CalledBinding::VersionTag("v2".to_owned())
    );
    // Defaults: latest, both propagations on.
    let xml = model_with("task", body, r#"<zeebe:calledElement processId="child" />"#);
    let model = parse_bpmn("call.bpmn", xml.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0);
    let ElementKind::CallActivity(called) = &el(&model, "Host").kind else {
        panic!("not a call activity");
    };
    assert_eq!(static_value(&called.process_id), "child");
    assert!(called.propagate_all_child_variables && called.propagate_all_parent_variables);
    assert_eq!(called.binding, rill_engine::model::CalledBinding::Latest);
}
