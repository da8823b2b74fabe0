//! Input that is not a model at all, or too big, is rejected with a clear message and
//! never a panic.

use rill_engine::{MAX_PROBLEMS, MAX_RESOURCE_BYTES, MAX_SCOPE_DEPTH, MAX_XML_NODES};

use super::*;

const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D">
"#;

fn only_problem(xml: &[u8]) -> rill_engine::Problem {
    let error = parse_bpmn("input.bpmn", xml).expect_err("rejected");
    assert_eq!(error.problems.len(), 1, "{error}");
    error.problems[0].clone()
}

#[test]
fn not_a_model() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "not well-formed XML"),
        (b"hello", "not well-formed XML"),
        (b"<a><b></a>", "not well-formed XML"),
        (
            b"\xff\xfe<\x00",
            "not UTF-8 text (invalid byte at offset 0)",
        ),
        (
            b"<html><body/></html>",
            "root element is 'html' without a namespace",
        ),
        (
            b"<definitions xmlns=\"urn:other\"/>",
            "in namespace 'urn:other'",
        ),
        (
            b"<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x \"y\">]><d>&x;</d>",
            "a DTD (<!DOCTYPE ...>) is not allowed",
        ),
    ];
    for (input, fragment) in cases {
        let problem = only_problem(input);
        assert!(problem.message.contains(fragment), "{input:?}: {problem}");
        assert_eq!(problem.element_id, None);
    }
}

#[test]
fn malformed_xml_names_the_line() {
    let xml = format!("{HEAD}  <bpmn:process id=\"p\" isExecutable=\"true\">\n  </bpmn:proces>\n");
    let problem = only_problem(xml.as_bytes());
    assert!(problem.message.contains("not well-formed XML"), "{problem}");
    assert_eq!(problem.line, Some(4), "{problem}");
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let mut xml = "\u{feff}".as_bytes().to_vec();
    xml.extend_from_slice(&fixture("two-rest-calls.bpmn"));
    assert!(parse_bpmn("bom.bpmn", &xml).is_ok());
}

#[test]
fn resources_over_the_size_limit_are_rejected_before_parsing() {
    let mut xml = fixture("two-rest-calls.bpmn");
    xml.resize(MAX_RESOURCE_BYTES + 1, b' ');
    let problem = only_problem(&xml);
    assert!(
        problem
            .message
            .contains("more than the 4194304 bytes accepted"),
        "{problem}"
    );
}

#[test]
fn too_many_nodes_are_rejected() {
    let mut xml = HEAD.to_owned();
    for _ in 0..MAX_XML_NODES {
        xml.push_str("<x/>");
    }
    xml.push_str("</bpmn:definitions>");
    let problem = only_problem(xml.as_bytes());
    assert!(problem.message.contains("XML nodes"), "{problem}");
}

/// A process whose start event leads into `depth` nested subprocesses.
fn nested_subprocesses(depth: usize) -> String {
    let mut xml =
        format!("{HEAD}<bpmn:process id=\"p\" isExecutable=\"true\"><bpmn:startEvent id=\"s0\"/>");
    for level in 1..=depth {
        xml.push_str(&format!(
            "<bpmn:subProcess id=\"sub{level}\"><bpmn:startEvent id=\"s{level}\"/>"
        ));
    }
    for _ in 0..depth {
        xml.push_str("</bpmn:subProcess>");
    }
    xml.push_str("</bpmn:process></bpmn:definitions>");
    xml
}

#[test]
fn subprocess_nesting_is_limited() {
    assert!(parse_bpmn("ok.bpmn", nested_subprocesses(MAX_SCOPE_DEPTH).as_bytes()).is_ok());
    let error = parse_bpmn(
        "deep.bpmn",
        nested_subprocesses(MAX_SCOPE_DEPTH + 1).as_bytes(),
    )
    .expect_err("too deep");
    assert!(
        error.mentions("subprocesses are nested more than 32 deep"),
        "{error}"
    );
    // Far deeper input is cut off the same way, without exhausting the stack.
    let error = parse_bpmn("deeper.bpmn", nested_subprocesses(20_000).as_bytes())
        .expect_err("far too deep");
    assert!(error.mentions("nested more than"), "{error}");
}

#[test]
fn deep_foreign_nesting_is_read_past() {
    let depth = 50_000;
    let mut xml = fixture("two-rest-calls.bpmn");
    let end = b"</bpmn:definitions>";
    let at = xml.len() - end.len() - 1;
    let nested = format!(
        "{}{}",
        "<x:a xmlns:x=\"urn:x\">".repeat(depth),
        "</x:a>".repeat(depth)
    );
    xml.splice(at..at, nested.into_bytes());
    assert!(parse_bpmn("deep.bpmn", &xml).is_ok());
}

#[test]
fn problems_are_capped_and_counted() {
    let mut xml =
        format!("{HEAD}<bpmn:process id=\"p\" isExecutable=\"true\"><bpmn:startEvent id=\"s\"/>");
    let tasks = MAX_PROBLEMS + 50;
    for i in 0..tasks {
        xml.push_str(&format!("<bpmn:complexGateway id=\"u{i}\"/>"));
    }
    xml.push_str("</bpmn:process></bpmn:definitions>");
    let error = parse_bpmn("many.bpmn", xml.as_bytes()).expect_err("rejected");
    assert_eq!(error.problems.len(), MAX_PROBLEMS);
    assert_eq!(error.omitted, 50);
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("deployment rejected, {tasks} problems:")),
        "{text}"
    );
    assert!(text.ends_with("- ... and 50 more"), "{text}");
}

#[test]
fn a_process_without_id_is_rejected() {
    let xml = format!(
        "{HEAD}<bpmn:process isExecutable=\"true\"><bpmn:startEvent id=\"s\"/></bpmn:process></bpmn:definitions>"
    );
    let problem = only_problem(xml.as_bytes());
    assert!(
        problem.message.contains("an executable process has no id"),
        "{problem}"
    );
    assert_eq!(problem.line, Some(3));
}
