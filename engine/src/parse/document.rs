//! The resource as a whole: size and encoding limits, XML parsing, the `definitions`
//! root, document-wide ids, and the root-level `message` and `error` elements that
//! events reference.

use std::collections::HashMap;

use roxmltree::{Node, ParsingOptions};

use super::error::Problems;
use super::extensions::{Owner, Verdict, verdict};
use super::{MAX_RESOURCE_BYTES, MAX_XML_NODES, loops, process};
use crate::model::ProcessModel;

pub(super) const BPMN_NS: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";
pub(super) const ZEEBE_NS: &str = "http://camunda.org/schema/zeebe/1.0";

/// What every process of the document may refer to.
pub(super) struct Context<'a, 'input> {
    pub lines: LineIndex,
    /// `bpmn:message` by id.
    pub messages: HashMap<&'a str, Node<'a, 'input>>,
    /// `bpmn:error` by id.
    pub errors: HashMap<&'a str, Node<'a, 'input>>,
    /// `bpmn:escalation` by id.
    pub escalations: HashMap<&'a str, Node<'a, 'input>>,
    /// `bpmn:signal` by id.
    pub signals: HashMap<&'a str, Node<'a, 'input>>,
}

impl Context<'_, '_> {
    pub fn line(&self, node: Node<'_, '_>) -> Option<u32> {
        Some(self.lines.line(node.range().start))
    }
}

/// Byte offset to 1-based line number, without rescanning the text for each problem.
pub(super) struct LineIndex {
    newlines: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let newlines = text
            .bytes()
            .enumerate()
            .filter_map(|(offset, byte)| (byte == b'\n').then_some(offset))
            .collect();
        LineIndex { newlines }
    }

    pub fn line(&self, offset: usize) -> u32 {
        let line = self.newlines.partition_point(|&newline| newline < offset) + 1;
        u32::try_from(line).unwrap_or(u32::MAX)
    }
}

/// Whether `node` is the BPMN element `name`.
pub(super) fn is_bpmn(node: Node<'_, '_>, name: &str) -> bool {
    node.is_element()
        && node.tag_name().namespace() == Some(BPMN_NS)
        && node.tag_name().name() == name
}

/// The BPMN element children of `node`.
pub(super) fn bpmn_children<'a, 'input>(
    node: Node<'a, 'input>,
) -> impl Iterator<Item = Node<'a, 'input>> {
    node.children()
        .filter(|child| child.is_element() && child.tag_name().namespace() == Some(BPMN_NS))
}

/// "a" or "an" before an element name: "an exclusiveGateway", "a serviceTask".
pub(super) fn article(name: &str) -> &'static str {
    if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// All text inside `node` (text and CDATA, across comments), trimmed.
pub(super) fn text_of(node: Node<'_, '_>) -> String {
    let text: String = node
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect();
    text.trim().to_owned()
}

pub(super) fn parse(xml: &[u8], problems: &mut Problems) -> Vec<ProcessModel> {
    if xml.len() > MAX_RESOURCE_BYTES {
        problems.add(
            None,
            None,
            format!(
                "the resource is {} bytes, more than the {MAX_RESOURCE_BYTES} bytes accepted; \
                 split it into several files",
                xml.len()
            ),
        );
        return Vec::new();
    }
    let text = match std::str::from_utf8(xml) {
        Ok(text) => text,
        Err(error) => {
            let valid = &xml[..error.valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            problems.add(
                None,
                Some(u32::try_from(line).unwrap_or(u32::MAX)),
                format!(
                    "the resource is not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
                    error.valid_up_to()
                ),
            );
            return Vec::new();
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);

    let options = ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_XML_NODES,
        ..ParsingOptions::default()
    };
    let document = match roxmltree::Document::parse_with_options(text, options) {
        Ok(document) => document,
        Err(error) => {
            let message = match &error {
                roxmltree::Error::DtdDetected => {
                    "a DTD (<!DOCTYPE ...>) is not allowed in a BPMN resource; remove it".to_owned()
                }
                roxmltree::Error::NodesLimitReached => format!(
                    "the resource has more than {MAX_XML_NODES} XML nodes; split it into several files"
                ),
                other => format!("not well-formed XML: {other}"),
            };
            let line = match error {
                roxmltree::Error::DtdDetected | roxmltree::Error::NodesLimitReached => None,
                other => Some(other.pos().row),
            };
            problems.add(None, line, message);
            return Vec::new();
        }
    };

    let root = document.root_element();
    if !is_bpmn(root, "definitions") {
        let found = match root.tag_name().namespace() {
            Some(namespace) => format!("'{}' in namespace '{namespace}'", root.tag_name().name()),
            None => format!("'{}' without a namespace", root.tag_name().name()),
        };
        problems.add(
            None,
            Some(LineIndex::new(text).line(root.range().start)),
            format!(
                "not a BPMN 2.0 model: the root element is {found}; expected 'definitions' in \
                 namespace '{BPMN_NS}'"
            ),
        );
        return Vec::new();
    }

    let lines = LineIndex::new(text);
    check_unique_ids(root, &lines, problems);
    check_root_extensions(root, &lines, problems);
    let context = Context {
        lines,
        messages: root_elements_by_id(root, "message"),
        errors: root_elements_by_id(root, "error"),
        escalations: root_elements_by_id(root, "escalation"),
        signals: root_elements_by_id(root, "signal"),
    };

    let mut built = Vec::new();
    let mut executable = 0;
    for process_node in bpmn_children(root).filter(|n| n.tag_name().name() == "process") {
        if !is_executable(process_node) {
            continue;
        }
        executable += 1;
        built.extend(process::build(&context, process_node, problems));
    }
    // Loops are looked for in every process, those with other problems too, so that
    // they are listed with the rest.
    let (models, complete): (Vec<ProcessModel>, Vec<bool>) =
        built.into_iter().map(|b| (b.model, b.complete)).unzip();
    // Lines by id, collected once when a loop is found.
    let mut lines_by_id: Option<HashMap<&str, u32>> = None;
    let line_of = |id: &str| {
        lines_by_id
            .get_or_insert_with(|| element_lines(root, &context.lines))
            .get(id)
            .copied()
    };
    loops::check(&models, line_of, problems);
    let models = models
        .into_iter()
        .zip(complete)
        .filter_map(|(model, complete)| complete.then_some(model))
        .collect();
    if executable == 0 {
        problems.add(
            None,
            None,
            "the resource contains no executable process; set isExecutable=\"true\" on the \
             process to deploy"
                .to_owned(),
        );
    }
    models
}

/// The line of each BPMN element by its id (for problems found after the models are
/// built, when only ids are left); the first element wins a duplicate id.
fn element_lines<'a>(root: Node<'a, '_>, lines: &LineIndex) -> HashMap<&'a str, u32> {
    let mut by_id = HashMap::new();
    for node in root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().namespace() == Some(BPMN_NS))
    {
        if let Some(id) = node.attribute("id") {
            by_id
                .entry(id)
                .or_insert_with(|| lines.line(node.range().start));
        }
    }
    by_id
}

fn is_executable(process: Node<'_, '_>) -> bool {
    matches!(
        process.attribute("isExecutable").map(str::trim),
        Some("true" | "1")
    )
}

fn check_unique_ids(root: Node<'_, '_>, lines: &LineIndex, problems: &mut Problems) {
    let mut first_line: HashMap<&str, u32> = HashMap::new();
    let with_ids = root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().namespace() == Some(BPMN_NS));
    for node in with_ids {
        let Some(id) = node.attribute("id") else {
            continue;
        };
        let line = lines.line(node.range().start);
        if let Some(first) = first_line.get(id) {
            problems.add(
                Some(id),
                Some(line),
                format!(
                    "the id '{id}' is already used on line {first}; ids must be unique in a file"
                ),
            );
        } else {
            first_line.insert(id, line);
        }
    }
}

/// The `zeebe:` extensions of the root elements that processes refer to (messages,
/// errors, signals, escalations): `zeebe:subscription` on a message, metadata, or a
/// problem.
fn check_root_extensions(root: Node<'_, '_>, lines: &LineIndex, problems: &mut Problems) {
    let owners = bpmn_children(root).filter(|n| {
        matches!(
            n.tag_name().name(),
            "message" | "error" | "signal" | "escalation"
        )
    });
    for node in owners {
        let owner = Owner {
            element: node.tag_name().name(),
            message_throw: false,
        };
        let extensions = bpmn_children(node)
            .filter(|n| n.tag_name().name() == "extensionElements")
            .flat_map(|container| container.children())
            .filter(|n| n.is_element() && n.tag_name().namespace() == Some(ZEEBE_NS));
        for extension in extensions {
            if let Verdict::Rejected(reason) = verdict(extension.tag_name().name(), owner) {
                let line = lines.line(extension.range().start);
                problems.add(node.attribute("id"), Some(line), reason);
            }
        }
    }
}

fn root_elements_by_id<'a, 'input>(
    root: Node<'a, 'input>,
    name: &str,
) -> HashMap<&'a str, Node<'a, 'input>> {
    let mut by_id = HashMap::new();
    for node in bpmn_children(root).filter(|n| n.tag_name().name() == name) {
        if let Some(id) = node.attribute("id") {
            // The first wins; a duplicate is reported by `check_unique_ids`.
            by_id.entry(id).or_insert(node);
        }
    }
    by_id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_counts_lines_from_one() {
        let lines = LineIndex::new("a\nbc\n\nd");
        let expected = [(0, 1), (1, 1), (2, 2), (4, 2), (5, 3), (6, 4), (7, 4)];
        for (offset, line) in expected {
            assert_eq!(lines.line(offset), line, "offset {offset}");
        }
    }

    #[test]
    fn articles_follow_the_first_letter() {
        assert_eq!(article("exclusiveGateway"), "an");
        assert_eq!(article("intermediateCatchEvent"), "an");
        assert_eq!(article("serviceTask"), "a");
    }
}
