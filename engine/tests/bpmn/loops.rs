//! Straight-through processing loops are refused at deploy, as Zeebe refuses them
//! (`tests/fixtures/loops/`, written as Camunda Modeler writes them), naming the
//! elements of the loop in order; a loop with a wait state in it deploys.

use super::*;

/// The one problem of a fixture that must be rejected for a loop.
fn loop_problem(path: &str) -> rill_engine::Problem {
    let error = parse_err(path);
    assert_eq!(error.problems.len(), 1, "{error}");
    error.problems[0].clone()
}

/// The loop a problem names, e.g. `task1 > task2 > task1`.
fn named_loop(problem: &rill_engine::Problem) -> &str {
    let message = &problem.message;
    let start = message
        .find("straight-through processing loop: ")
        .unwrap_or_else(|| panic!("not a loop problem: {message}"))
        + "straight-through processing loop: ".len();
    let end = message[start..]
        .find(". ")
        .map_or(message.len(), |e| start + e);
    &message[start..end]
}

/// The 1-based line of the element `id` in a fixture.
fn line_of(path: &str, id: &str) -> u32 {
    let text = String::from_utf8(fixture(path)).expect("UTF-8");
    let needle = format!("id=\"{id}\"");
    let offset = text.find(&needle).expect("the element is in the file");
    u32::try_from(text[..offset].matches('\n').count() + 1).expect("a line number")
}

#[test]
fn two_tasks_in_a_loop_are_refused_naming_the_loop() {
    let path = "loops/two-task-loop.bpmn";
    let problem = loop_problem(path);
    assert_eq!(named_loop(&problem), "task1 > task2 > task1");
    assert_eq!(problem.element_id.as_deref(), Some("task1"));
    assert_eq!(problem.line, Some(line_of(path, "task1")));
    assert!(
        problem
            .message
            .starts_with("processes are not allowed to contain a straight-through processing loop"),
        "{}",
        problem.message
    );
    assert!(
        problem.message.contains("add a wait state"),
        "says what to change"
    );
}

#[test]
fn a_loop_back_over_an_exclusive_gateways_default_flow_is_refused() {
    // It has a way out (the conditional flow), but nothing in it waits: Zeebe refuses it.
    let problem = loop_problem("loops/exclusive-gateway-default-loop.bpmn");
    assert_eq!(named_loop(&problem), "Prepare > Ready > Merge > Prepare");
}

#[test]
fn a_service_task_in_the_loop_breaks_it() {
    let model = parse_one("loops/loop-with-service-task.bpmn");
    assert_eq!(
        ids(&model, &[idx(&model, "Merge"), idx(&model, "Prepare")]),
        ["Merge", "Prepare"]
    );
}

#[test]
fn a_loop_inside_an_embedded_subprocess_is_refused() {
    let problem = loop_problem("loops/sub-process-loop.bpmn");
    // A FEEL script task waits for nothing either.
    assert_eq!(
        named_loop(&problem),
        "PackItem > CountItems > AllPacked > PackItem"
    );
    assert_eq!(problem.element_id.as_deref(), Some("PackItem"));
}

#[test]
fn a_loop_through_an_embedded_subprocess_is_refused() {
    // The subprocess starts and ends at once; its end leads on over its flows.
    let problem = loop_problem("loops/through-sub-process.bpmn");
    assert_eq!(
        named_loop(&problem),
        "Inspect > Relabel > RelabelStart > RelabelEnd > Inspect"
    );
}

#[test]
fn a_loop_over_link_events_is_refused() {
    let problem = loop_problem("loops/link-loop.bpmn");
    assert_eq!(named_loop(&problem), "Work > GoAgain > Again > Work");
}

/// A minimal process around `body` (start event `S` leads to `A`).
fn process(id: &str, body: &str) -> String {
    format!(
        r#"<bpmn:process id="{id}" isExecutable="true">
             <bpmn:startEvent id="{id}_S" />
             <bpmn:sequenceFlow id="{id}_f0" sourceRef="{id}_S" targetRef="A" />
             {body}
           </bpmn:process>"#
    )
}

fn definitions(processes: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
        <bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
            xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
          {processes}
        </bpmn:definitions>"#
    )
}

fn parse_text(xml: &str) -> Result<Vec<ProcessModel>, DeployError> {
    parse_bpmn("inline.bpmn", xml.as_bytes())
}

/// The loops named in a rejection, in the order reported.
fn loops_of(xml: &str) -> Vec<String> {
    match parse_text(xml) {
        Ok(_) => Vec::new(),
        Err(error) => error
            .problems
            .iter()
            .filter(|p| p.message.contains("straight-through processing loop"))
            .map(|p| named_loop(p).to_owned())
            .collect(),
    }
}

const FLOWS_A_B_A: &str = r#"
    <bpmn:sequenceFlow id="ab" sourceRef="A" targetRef="B" />
    <bpmn:sequenceFlow id="ba" sourceRef="B" targetRef="A" />"#;

#[test]
fn what_waits_breaks_a_loop_and_what_passes_on_does_not() {
    let counted = [
        r#"<bpmn:task id="B" />"#,
        r#"<bpmn:manualTask id="B" />"#,
        r#"<bpmn:scriptTask id="B"><bpmn:extensionElements>
             <zeebe:script expression="=1" resultVariable="r" />
           </bpmn:extensionElements></bpmn:scriptTask>"#,
        r#"<bpmn:businessRuleTask id="B"><bpmn:extensionElements>
             <zeebe:calledDecision decisionId="d" resultVariable="r" />
           </bpmn:extensionElements></bpmn:businessRuleTask>"#,
        r#"<bpmn:intermediateThrowEvent id="B" />"#,
        r#"<bpmn:intermediateThrowEvent id="B"><bpmn:signalEventDefinition signalRef="sig" />
           </bpmn:intermediateThrowEvent>"#,
        r#"<bpmn:parallelGateway id="B" />"#,
        r#"<bpmn:inclusiveGateway id="B" />"#,
    ];
    for element in counted {
        let xml = definitions(&format!(
            r#"{}<bpmn:signal id="sig" name="s" />"#,
            process(
                "p",
                &format!(r#"<bpmn:task id="A" />{element}{FLOWS_A_B_A}"#)
            )
        ));
        assert_eq!(loops_of(&xml), ["A > B > A"], "{element}");
    }
    let waiting = [
        r#"<bpmn:serviceTask id="B"><bpmn:extensionElements>
             <zeebe:taskDefinition type="t" />
           </bpmn:extensionElements></bpmn:serviceTask>"#,
        r#"<bpmn:scriptTask id="B"><bpmn:extensionElements>
             <zeebe:taskDefinition type="t" />
           </bpmn:extensionElements></bpmn:scriptTask>"#,
        r#"<bpmn:businessRuleTask id="B"><bpmn:extensionElements>
             <zeebe:taskDefinition type="t" />
           </bpmn:extensionElements></bpmn:businessRuleTask>"#,
        r#"<bpmn:userTask id="B" />"#,
        r#"<bpmn:receiveTask id="B" messageRef="m" />"#,
        r#"<bpmn:intermediateCatchEvent id="B"><bpmn:timerEventDefinition>
             <bpmn:timeDuration>PT1M</bpmn:timeDuration>
           </bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"#,
    ];
    for element in waiting {
        let xml = definitions(&format!(
            r#"<bpmn:message id="m" name="m"><bpmn:extensionElements>
                 <zeebe:subscription correlationKey="=k" />
               </bpmn:extensionElements></bpmn:message>{}"#,
            process(
                "p",
                &format!(r#"<bpmn:task id="A" />{element}{FLOWS_A_B_A}"#)
            )
        ));
        parse_text(&xml).unwrap_or_else(|e| panic!("{element} waits, the loop deploys:\n{e}"));
    }
}

#[test]
fn a_call_activity_calling_its_own_process_in_the_resource_is_refused() {
    let call = |process_id: &str| {
        format!(
            r#"<bpmn:callActivity id="A"><bpmn:extensionElements>
                 <zeebe:calledElement processId="{process_id}" />
               </bpmn:extensionElements></bpmn:callActivity>"#
        )
    };
    let xml = definitions(&process("p", &call("p")));
    assert_eq!(loops_of(&xml), ["A > p_S > A"]);
    // Through a second process of the same resource: the loop names both.
    let xml = definitions(&format!(
        "{}{}",
        process("p", &call("q")),
        process("q", &call("p"))
            .replace("id=\"A\"", "id=\"B\"")
            .replace("targetRef=\"A\"", "targetRef=\"B\"")
    ));
    assert_eq!(loops_of(&xml), ["p/A > q/q_S > q/B > p/p_S > p/A"]);
    // A called process outside the resource, or named by an expression, is not checked
    // (as in Zeebe): the runtime bound on a command's work stops such a loop.
    parse_text(&definitions(&process("p", &call("elsewhere")))).expect("deploys");
    parse_text(&definitions(&process("p", &call("=&quot;p&quot;")))).expect("deploys");
}

#[test]
fn a_cycle_of_gateways_counts_only_when_a_task_leads_into_it() {
    let gateways = r#"
        <bpmn:exclusiveGateway id="G1" />
        <bpmn:exclusiveGateway id="G2" />
        <bpmn:sequenceFlow id="g12" sourceRef="G1" targetRef="G2" />
        <bpmn:sequenceFlow id="g21" sourceRef="G2" targetRef="G1" />"#;
    let from_start =
        definitions(&process("p", gateways).replace("targetRef=\"A\"", "targetRef=\"G1\""));
    parse_text(&from_start).expect("gateways alone deploy, as in Zeebe");
    let after_task = definitions(&process(
        "p",
        &format!(
            r#"<bpmn:task id="A" />{gateways}
               <bpmn:sequenceFlow id="ag" sourceRef="A" targetRef="G1" />"#
        ),
    ));
    assert_eq!(loops_of(&after_task), ["G1 > G2 > G1"]);
}

#[test]
fn every_loop_is_listed_with_the_other_problems() {
    let xml = definitions(&process(
        "p",
        r#"<bpmn:task id="A" />
           <bpmn:task id="B" />
           <bpmn:sequenceFlow id="ab" sourceRef="A" targetRef="B" />
           <bpmn:sequenceFlow id="ba" sourceRef="B" targetRef="A" />
           <bpmn:task id="C" />
           <bpmn:sequenceFlow id="ac" sourceRef="A" targetRef="C" />
           <bpmn:sequenceFlow id="cc" sourceRef="C" targetRef="C" />
           <bpmn:serviceTask id="NoType" />"#,
    ));
    let error = parse_text(&xml).expect_err("refused");
    assert_eq!(loops_of(&xml), ["A > B > A", "C > C"]);
    assert!(
        error
            .problems
            .iter()
            .any(|p| p.element_id.as_deref() == Some("NoType")),
        "{error}"
    );
}

#[test]
fn a_long_chain_and_many_branches_are_checked_in_linear_time() {
    // 2,000 diamonds in a row, then back to the first task: Zeebe's walk of every path
    // would take 2^2000 steps.
    let mut body = String::from(r#"<bpmn:task id="A" />"#);
    let mut previous = "A".to_owned();
    for i in 0..2000 {
        body.push_str(&format!(
            r#"<bpmn:parallelGateway id="s{i}" /><bpmn:task id="l{i}" /><bpmn:task id="r{i}" />
               <bpmn:parallelGateway id="j{i}" />
               <bpmn:sequenceFlow id="a{i}" sourceRef="{previous}" targetRef="s{i}" />
               <bpmn:sequenceFlow id="b{i}" sourceRef="s{i}" targetRef="l{i}" />
               <bpmn:sequenceFlow id="c{i}" sourceRef="s{i}" targetRef="r{i}" />
               <bpmn:sequenceFlow id="d{i}" sourceRef="l{i}" targetRef="j{i}" />
               <bpmn:sequenceFlow id="e{i}" sourceRef="r{i}" targetRef="j{i}" />"#
        ));
        previous = format!("j{i}");
    }
    body.push_str(&format!(
        r#"<bpmn:sequenceFlow id="back" sourceRef="{previous}" targetRef="A" />"#
    ));
    let started = std::time::Instant::now();
    let loops = loops_of(&definitions(&process("p", &body)));
    assert_eq!(loops.len(), 1);
    assert!(
        loops[0].starts_with("A > s0 > l0 > j0 > s1"),
        "{}",
        loops[0]
    );
    assert!(loops[0].ends_with("j1999 > A"), "{}", loops[0]);
    assert!(
        loops[0].contains(" > (5962 more) > "),
        "a long loop is shortened: {}",
        loops[0]
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn many_loops_are_each_reported_in_linear_time() {
    // 20,000 tasks, each looping on itself: 100 problems are listed, the rest counted.
    let mut body = String::from(r#"<bpmn:task id="A" />"#);
    for i in 0..20_000 {
        body.push_str(&format!(
            r#"<bpmn:task id="t{i}" /><bpmn:sequenceFlow id="s{i}" sourceRef="t{i}" targetRef="t{i}" />"#
        ));
    }
    let started = std::time::Instant::now();
    let error = parse_text(&definitions(&process("p", &body))).expect_err("refused");
    assert_eq!(error.problems.len() + error.omitted, 20_000);
    assert_eq!(named_loop(&error.problems[0]), "t0 > t0");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}
