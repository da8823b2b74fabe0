//! Every kind of bad input is rejected with the element id, the line and a reason.

use super::*;

/// (fixture in `invalid/`, element the problem names, fragment of its message).
const INVALID: &[(&str, Option<&str>, &str)] = &[
    (
        "ad-hoc-start-event",
        Some("InnerStart"),
        "the ad-hoc subprocess 'Tools' cannot contain a start event",
    ),
    (
        "ad-hoc-end-event",
        Some("InnerEnd"),
        "the ad-hoc subprocess 'Tools' cannot contain an end event",
    ),
    (
        "ad-hoc-without-activity",
        Some("Tools"),
        "an ad-hoc subprocess needs at least one activity",
    ),
    (
        "ad-hoc-job-headers-alone",
        Some("Tools"),
        "zeebe:taskHeaders on an ad-hoc subprocess belong to its job-worker implementation, \
         which needs a zeebe:taskDefinition",
    ),
    (
        "ad-hoc-job-without-type",
        Some("Tools"),
        "zeebe:taskDefinition has no type",
    ),
    (
        "ad-hoc-output-collection-alone",
        Some("Tools"),
        "outputCollection and outputElement must both be set, or neither",
    ),
    (
        "ad-hoc-active-elements-not-feel",
        Some("Tools"),
        "the activeElementsCollection 'Search' must be a FEEL expression starting with '='",
    ),
    (
        "ad-hoc-sequential-ordering",
        Some("Tools"),
        "an ad-hoc subprocess with ordering 'Sequential' is not supported",
    ),
    (
        "message-start-same-message-twice",
        Some("AlsoPlaced"),
        "the message 'order-placed' already starts the process at 'OrderPlaced'",
    ),
    (
        "call-activity-without-called-element",
        Some("Ship"),
        "a call activity needs the process to call; add zeebe:calledElement with a processId",
    ),
    (
        "call-activity-version-tag-binding-without-tag",
        Some("Ship"),
        "bindingType is versionTag but zeebe:calledElement has no versionTag",
    ),
    (
        "inclusive-without-condition",
        Some("B"),
        "the flow leaves inclusiveGateway 'Split', which has several outgoing flows, and has \
         no condition",
    ),
    (
        "inclusive-without-outgoing",
        Some("Merge"),
        "the inclusiveGateway has no outgoing sequence flow",
    ),
    (
        "complex-gateway",
        Some("Approve"),
        "complexGateway is not supported (Rill runs: startEvent",
    ),
    (
        "intermediate-throw-signal",
        Some("Notify"),
        "the referenced signal 'Signal_Ghost' does not exist in this file",
    ),
    (
        "link-throw-without-catch",
        Some("GoA"),
        "no link catch event named 'A' in 'Sub'",
    ),
    (
        "link-catch-duplicate-name",
        Some("SecondA"),
        "the link name 'A' is already used by link catch event 'FirstA'",
    ),
    (
        "link-catch-with-incoming",
        Some("CatchA"),
        "a link catch event cannot have an incoming flow",
    ),
    (
        "link-without-name",
        Some("GoNowhere"),
        "the link event has no link name",
    ),
    (
        "service-task-without-definition",
        Some("Work"),
        "a service task needs a job type",
    ),
    (
        "service-task-empty-type",
        Some("Work"),
        "zeebe:taskDefinition has no type",
    ),
    (
        "service-task-bad-retries",
        Some("Work"),
        "retries: invalid FEEL expression 'many +'",
    ),
    (
        "service-task-invalid-feel-type",
        Some("Work"),
        "job type: invalid FEEL expression '1 +'",
    ),
    (
        "task-header-without-key",
        Some("Work"),
        "a task header has no key",
    ),
    (
        "flow-to-nowhere",
        Some("Lost"),
        "targetRef 'Nowhere' is not an element of process",
    ),
    (
        "flow-without-source",
        Some("NoSource"),
        "the sequence flow has no sourceRef",
    ),
    (
        "duplicate-ids",
        Some("Work"),
        "the id 'Work' is already used on line",
    ),
    (
        "condition-invalid-feel",
        Some("Cond"),
        "condition: invalid FEEL expression 'amount >'",
    ),
    (
        "condition-not-feel",
        Some("Cond"),
        "must be a FEEL expression starting with '='",
    ),
    (
        "condition-on-task-flow",
        Some("Cond"),
        "only flows leaving an exclusive or inclusive gateway can have conditions",
    ),
    (
        "condition-missing",
        Some("NoCond"),
        "has no condition; add a condition or make it the gateway's default flow",
    ),
    (
        "default-not-outgoing",
        Some("Split"),
        "the default flow 'F1' is not one of the gateway's outgoing flows",
    ),
    (
        "default-with-static-condition",
        Some("Cond"),
        "the condition 'x' must be a FEEL expression starting with '='",
    ),
    (
        "default-unknown",
        Some("Split"),
        "the default flow 'Ghost' does not exist",
    ),
    (
        "gateway-without-outgoing",
        Some("DeadEnd"),
        "the parallelGateway has no outgoing sequence flow",
    ),
    (
        "timer-malformed",
        Some("Wait"),
        "malformed timeDuration: 'PT3X': unexpected 'X'",
    ),
    (
        "timer-date-malformed",
        Some("Wait"),
        "malformed timeDate: 'next tuesday' is not an ISO 8601 date-time",
    ),
    (
        "timer-without-value",
        Some("Wait"),
        "the timer has no value; set one of timeDuration or timeDate",
    ),
    (
        "timer-cycle-on-catch-event",
        Some("Wait"),
        "timeCycle is only supported on non-interrupting boundary events",
    ),
    (
        "timer-cycle-on-interrupting-boundary",
        Some("Every"),
        "timeCycle is only supported on non-interrupting boundary events",
    ),
    (
        "catch-event-without-definition",
        Some("Wait"),
        "needs a timer, message, signal or link definition",
    ),
    (
        "catch-event-signal",
        Some("Wait"),
        "no signal is referenced; select a signal (signalRef) with a name",
    ),
    (
        "message-without-name",
        Some("Await"),
        "the message 'Msg_1' has no name",
    ),
    (
        "message-without-correlation-key",
        Some("Await"),
        "the message 'Msg_1' has no correlation key",
    ),
    (
        "message-not-referenced",
        Some("Await"),
        "no message is referenced",
    ),
    (
        "message-unknown",
        Some("Await"),
        "the referenced message 'Msg_Ghost' does not exist",
    ),
    (
        "boundary-on-gateway",
        Some("OnGateway"),
        "attached to 'Split', an exclusiveGateway; boundary events can only be attached to tasks, call activities and subprocesses",
    ),
    (
        "boundary-unattached",
        Some("Floating"),
        "is not attached to anything",
    ),
    (
        "boundary-attached-to-unknown",
        Some("Lost"),
        "attached to 'Ghost', which is not an element of this process",
    ),
    (
        "boundary-without-outgoing",
        Some("Stuck"),
        "the boundaryEvent has no outgoing sequence flow",
    ),
    (
        "boundary-signal",
        Some("AlsoOnSignal"),
        "'OnSignal' already waits for the signal 's' in the same scope",
    ),
    (
        "boundary-on-event-subprocess",
        Some("OnTimeout"),
        "boundary events can only be attached to tasks, call activities and subprocesses (not \
         event subprocesses)",
    ),
    (
        "message-boundary-same-message",
        Some("Second"),
        "'First' already waits for the message 'ping' in the same scope",
    ),
    (
        "event-gateway-to-task",
        Some("Decide"),
        "the event-based gateway leads to 'Chase', a serviceTask; it can only lead to message, \
         timer or signal intermediate catch events",
    ),
    (
        "event-gateway-one-flow",
        Some("Decide"),
        "an event-based gateway needs at least two outgoing flows",
    ),
    (
        "event-gateway-target-entered-elsewhere",
        Some("Paid"),
        "a catch event after an event-based gateway cannot have other incoming flows",
    ),
    (
        "boundary-incoming-flow",
        Some("Entered"),
        "a boundary event cannot have an incoming flow",
    ),
    (
        "error-boundary-non-interrupting",
        Some("Soft"),
        "an error boundary event must be interrupting",
    ),
    (
        "error-boundary-duplicate-code",
        Some("Second"),
        "'First' on 'Work' already catches the error code 'BOOM'",
    ),
    (
        "error-end-without-error",
        Some("Fail"),
        "an error end event needs an error to throw",
    ),
    (
        "error-end-without-code",
        Some("Fail"),
        "the error 'Err_1' has no error code",
    ),
    (
        "end-event-message",
        Some("Notify"),
        "a message end event needs a job type; add zeebe:taskDefinition",
    ),
    (
        "end-event-signal",
        Some("Broadcast"),
        "no signal is referenced; select a signal (signalRef) with a name",
    ),
    (
        "script-task-without-implementation",
        Some("Calc"),
        "a script task needs zeebe:script (a FEEL expression and a result variable) or \
         zeebe:taskDefinition",
    ),
    (
        "script-task-with-both",
        Some("Calc"),
        "a script task has both zeebe:script and zeebe:taskDefinition; keep one",
    ),
    (
        "script-task-without-result-variable",
        Some("Calc"),
        "zeebe:script has no result variable",
    ),
    (
        "script-task-invalid-feel",
        Some("Calc"),
        "script expression: invalid FEEL expression 'a +'",
    ),
    (
        "send-task-without-definition",
        Some("Notify"),
        "a send task needs a job type; add zeebe:taskDefinition",
    ),
    (
        "message-throw-without-definition",
        Some("Shipped"),
        "a message intermediate throw event needs a job type",
    ),
    (
        "end-event-with-outgoing",
        Some("Early"),
        "an end event cannot have an outgoing flow",
    ),
    (
        "flow-into-start-event",
        Some("Start"),
        "a start event cannot have an incoming flow ('Back')",
    ),
    (
        "no-start-event",
        Some("no-start-event"),
        "the process has no none start event",
    ),
    (
        "two-start-events",
        Some("SecondStart"),
        "has several none start events ('Start', 'SecondStart')",
    ),
    (
        "timer-start-duration",
        Some("Start"),
        "a timer start event cannot have a timeDuration",
    ),
    (
        "timer-start-bad-cron",
        Some("Start"),
        "neither an ISO 8601 cycle (like 'R5/PT10S') nor a cron expression (the hour '25' is not a value from 0 to 23)",
    ),
    (
        "signal-start-event",
        Some("Start"),
        "the signal of a signal start event has the name expression '=signalName'; a signal start event needs a static name",
    ),
    (
        "timer-start-in-subprocess",
        Some("SubTimer"),
        "inside a subprocess needs an event subprocess (triggeredByEvent=\"true\")",
    ),
    (
        "subprocess-without-start",
        Some("Sub"),
        "the subProcess has no none start event",
    ),
    (
        "flow-crosses-subprocess",
        Some("Sneak"),
        "crosses a subprocess boundary",
    ),
    (
        "join-lists-foreign-flow",
        Some("Join"),
        "lists the incoming flow 'F5', but that flow's targetRef is 'End2'",
    ),
    (
        "multi-instance",
        Some("Work"),
        "a multi-instance activity needs zeebe:loopCharacteristics with an inputCollection",
    ),
    (
        "multi-instance-on-gateway",
        Some("Split"),
        "a parallelGateway cannot be multi-instance; only tasks, call activities and subprocesses can",
    ),
    (
        "multi-instance-output-without-element",
        Some("Work"),
        "outputCollection and outputElement go together",
    ),
    (
        "multi-instance-static-collection",
        Some("Work"),
        "the inputCollection 'items' must be a FEEL expression starting with '='",
    ),
    (
        "multi-instance-loop-cardinality",
        Some("Work"),
        "loopCardinality is not supported (as in Zeebe)",
    ),
    (
        "standard-loop",
        Some("Work"),
        "a standard loop is not supported",
    ),
    (
        "escalation-throw-without-escalation",
        Some("Raise"),
        "an escalation intermediate throw event needs an escalation to throw",
    ),
    (
        "escalation-boundary-duplicate-code",
        Some("Second"),
        "'First' already catches the escalation code 'LATE' here",
    ),
    (
        "event-subprocess-signal-start",
        Some("SigStart"),
        "the signal 'Sig_1' has no name; name the signal to broadcast",
    ),
    (
        "event-subprocess-none-start",
        Some("PlainStart"),
        "the event subprocess 'OnEvent' cannot start at a none start event",
    ),
    (
        "event-subprocess-with-incoming",
        Some("OnCancel"),
        "an event subprocess cannot have an incoming flow",
    ),
    (
        "event-subprocess-error-non-interrupting",
        Some("ErrorStart"),
        "an error start event of an event subprocess must be interrupting",
    ),
    (
        "extension-on-wrong-element",
        Some("Await"),
        "zeebe:taskDefinition is not supported on a receiveTask",
    ),
    (
        "execution-listener-on-start-event",
        Some("Start"),
        "a start event cannot have start listeners in zeebe:executionListeners; put them on \
         the process",
    ),
    (
        "execution-listener-end-on-gateway",
        Some("Fork"),
        "a gateway cannot have end listeners in zeebe:executionListeners; use start listeners \
         on the element after it",
    ),
    (
        "execution-listener-duplicate-type",
        Some("Work"),
        "two start execution listeners have the type 'audit'",
    ),
    (
        "execution-listener-process-timer-start",
        Some("execution-listener-process-timer-start"),
        "start listeners on a process with timer, message or signal start events are not \
         supported",
    ),
    (
        "input-on-start-event",
        Some("Start"),
        "a start event cannot have input mappings",
    ),
    (
        "input-on-none-end-event",
        Some("End"),
        "only message end events (a job) and signal end events (the signal's variables) can have \
         input mappings",
    ),
    (
        "input-on-none-throw-event",
        Some("Milestone"),
        "a none, link or escalation intermediate throw event cannot have input mappings",
    ),
    (
        "output-on-error-end-event",
        Some("Fail"),
        "an error end event cannot have output mappings",
    ),
    (
        "input-on-boundary",
        Some("Late"),
        "a boundaryEvent cannot have input mappings",
    ),
    (
        "mapping-bad-target",
        Some("Work"),
        "the mapping target 'order total' is not a variable name",
    ),
    (
        "mapping-static-source",
        Some("Work"),
        "the output mapping source 'result' must be a FEEL expression starting with '='",
    ),
    (
        "mapping-on-gateway",
        Some("Split"),
        "zeebe:ioMapping is not supported on an exclusiveGateway",
    ),
    (
        "only-non-executable",
        None,
        "the resource contains no executable process",
    ),
    (
        // Zeebe 8.8 gives only a service task's job the resources it links.
        "linked-resources-on-send-task",
        Some("SendInvoice"),
        "zeebe:linkedResources belongs on a service task (Zeebe 8.8 gives only a service task's \
         job the resources it links), not on a sendTask",
    ),
    (
        "linked-resource-without-type",
        Some("BookInvoice"),
        "a zeebe:linkedResource needs a resourceId (the id of the deployed resource) and a \
         resourceType (e.g. RPA), as in Zeebe",
    ),
    (
        "lists-unknown-flow",
        Some("Work"),
        "lists the outgoing flow 'Phantom', which does not exist",
    ),
];

/// Each fixture has one mistake, and one mistake gives one problem (no follow-on noise).
#[test]
fn every_kind_of_bad_model_is_rejected_with_element_line_and_reason() {
    let mut failures = Vec::new();
    for &(name, element_id, fragment) in INVALID {
        let path = format!("invalid/{name}.bpmn");
        let error = match parse_bpmn(&path, &fixture(&path)) {
            Ok(_) => {
                failures.push(format!("{name}: parsed, expected a problem"));
                continue;
            }
            Err(error) => error,
        };
        let found = error
            .problems
            .iter()
            .find(|p| p.element_id.as_deref() == element_id && p.message.contains(fragment));
        match found {
            None => failures.push(format!(
                "{name}: no problem on {element_id:?} containing {fragment:?}; got:\n{error}"
            )),
            Some(_) if error.problems.len() != 1 => {
                failures.push(format!("{name}: expected one problem, got:\n{error}"));
            }
            Some(problem) => {
                assert_eq!(problem.resource_name, path);
                if element_id.is_some() && problem.line.is_none() {
                    failures.push(format!("{name}: the problem has no line: {problem}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_invalid_fixture_is_in_the_table() {
    let dir = format!("{}/tests/fixtures/invalid", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures/invalid exists")
        .map(|entry| {
            entry
                .expect("readable entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    for file in files {
        let name = file.trim_end_matches(".bpmn");
        if name == "several-problems" {
            continue;
        }
        assert!(
            INVALID.iter().any(|(n, _, _)| *n == name),
            "{file} has no expectation"
        );
    }
}

#[test]
fn all_problems_are_reported_at_once_in_line_order() {
    let error = parse_err("invalid/several-problems.bpmn");
    let expected = [
        ("NoType", "a service task needs a job type"),
        ("Human", "complexGateway is not supported"),
        (
            "BadTimer",
            "malformed timeDuration: 'soon' is not an ISO 8601 duration",
        ),
    ];
    assert_eq!(error.problems.len(), expected.len(), "{error}");
    for (problem, (id, fragment)) in error.problems.iter().zip(expected) {
        assert_eq!(problem.element_id.as_deref(), Some(id), "{error}");
        assert!(problem.message.contains(fragment), "{error}");
    }
    let lines: Vec<u32> = error.problems.iter().filter_map(|p| p.line).collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines.windows(2).all(|w| w[0] < w[1]),
        "sorted by line: {lines:?}"
    );

    // The message lists every problem with resource, line and element.
    let text = error.to_string();
    assert!(
        text.starts_with("deployment rejected, 3 problems:"),
        "{text}"
    );
    for problem in &error.problems {
        assert!(text.contains(&problem.to_string()), "{text}");
    }
    let first = &error.problems[0];
    assert_eq!(
        first.to_string(),
        format!(
            "'invalid/several-problems.bpmn' line {} element 'NoType': {}",
            first.line.unwrap_or_default(),
            first.message
        )
    );
}

#[test]
fn an_unsupported_element_raises_no_follow_on_flow_problems() {
    // Flows into and out of the complexGateway point at an element that was not built; only
    // the unsupported element itself is reported.
    let error = parse_err("invalid/complex-gateway.bpmn");
    assert_eq!(error.problems.len(), 1, "{error}");
}

#[test]
fn the_line_points_at_the_element() {
    let path = "invalid/service-task-without-definition.bpmn";
    let text = String::from_utf8(fixture(path)).expect("utf-8");
    let expected_line = text
        .lines()
        .position(|line| line.contains("id=\"Work\""))
        .expect("Work is in the file") as u32
        + 1;
    let error = parse_err(path);
    assert_eq!(error.problems[0].line, Some(expected_line), "{error}");
}
