//! What the store reads from a deployed model: the process's `name`, the form its start
//! event links, and the drawn name of every element. Records carry none of them, and the
//! engine's parsed model is not a dependency of the store; the XML is read once, when the
//! process definition's record is indexed, and every replica reads the same.

use std::collections::BTreeMap;

const ZEEBE_NS: &str = "http://camunda.org/schema/zeebe/1.0";

/// What one process of a deployed model tells the store.
#[derive(Debug, Default, PartialEq)]
pub struct ProcessFacts {
    /// The process's `name`.
    pub name: Option<String>,
    /// The `formId` of the `zeebe:formDefinition` on the none start event (its start
    /// form, which the engine checked at deploy), if it links one.
    pub start_form_id: Option<String>,
    /// Element id -> drawn name, for every element of the process that has a name.
    pub element_names: BTreeMap<String, String>,
}

impl ProcessFacts {
    /// Reads the process `process_id` of `xml` (a model that does not parse, or lacks the
    /// process, gives nothing: the engine accepted it, so that does not happen).
    pub fn read(xml: &[u8], process_id: &str) -> ProcessFacts {
        let Ok(text) = std::str::from_utf8(xml) else {
            return ProcessFacts::default();
        };
        let Ok(document) = roxmltree::Document::parse(text) else {
            return ProcessFacts::default();
        };
        let Some(process) = document.descendants().find(|node| {
            node.is_element()
                && node.tag_name().name() == "process"
                && node.attribute("id") == Some(process_id)
        }) else {
            return ProcessFacts::default();
        };
        let element_names = process
            .descendants()
            .filter(|node| node.is_element() && *node != process)
            .filter_map(|node| Some((node.attribute("id")?.to_owned(), name_of(node)?)))
            .collect();
        ProcessFacts {
            name: name_of(process),
            start_form_id: start_form_id(process),
            element_names,
        }
    }
}

/// A node's `name`, trimmed; a blank name is no name.
fn name_of(node: roxmltree::Node<'_, '_>) -> Option<String> {
    node.attribute("name")
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

fn start_form_id(process: roxmltree::Node<'_, '_>) -> Option<String> {
    let none_start = elements(process).into_iter().find(|node| {
        node.tag_name().name() == "startEvent"
            && !elements(*node)
                .iter()
                .any(|child| child.tag_name().name().ends_with("EventDefinition"))
    })?;
    elements(none_start)
        .into_iter()
        .filter(|child| child.tag_name().name() == "extensionElements")
        .flat_map(elements)
        .find(|ext| {
            ext.tag_name().name() == "formDefinition"
                && ext.tag_name().namespace() == Some(ZEEBE_NS)
        })
        .and_then(|form| form.attribute("formId"))
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// The element children of `node`.
fn elements<'a, 'input>(node: roxmltree::Node<'a, 'input>) -> Vec<roxmltree::Node<'a, 'input>> {
    node.children()
        .filter(roxmltree::Node::is_element)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ProcessFacts;

    #[test]
    fn the_none_start_event_gives_its_linked_form() {
        let xml = br#"<d xmlns:z="http://camunda.org/schema/zeebe/1.0"><process id="p">
            <startEvent id="timer"><extensionElements><z:formDefinition formId="other" /></extensionElements><timerEventDefinition /></startEvent>
            <startEvent id="s"><extensionElements><z:formDefinition formId=" sign-up " /></extensionElements></startEvent>
          </process><process id="q"><startEvent id="k"><extensionElements><z:formDefinition formKey="camunda-forms:bpmn:f" /></extensionElements></startEvent></process></d>"#;
        assert_eq!(
            ProcessFacts::read(xml, "p").start_form_id.as_deref(),
            Some("sign-up")
        );
        assert_eq!(
            ProcessFacts::read(xml, "q").start_form_id,
            None,
            "an embedded form is not linked"
        );
        assert_eq!(ProcessFacts::read(xml, "missing").start_form_id, None);
    }

    #[test]
    fn the_elements_of_the_process_give_their_names() {
        let xml = br#"<d><process id="p"><userTask id="t" name="Review" /><task id="u" />
            <subProcess id="sub" name=" Nested "><task id="inner" name="Inner step" /></subProcess>
            <task id="blank" name="  " /></process>
            <process id="other"><task id="o" name="Elsewhere" /></process></d>"#;
        let names = ProcessFacts::read(xml, "p").element_names;
        assert_eq!(names.get("t").map(String::as_str), Some("Review"));
        assert_eq!(names.get("sub").map(String::as_str), Some("Nested"));
        assert_eq!(names.get("inner").map(String::as_str), Some("Inner step"));
        assert_eq!(names.get("u"), None, "an element without a name has none");
        assert_eq!(names.get("blank"), None, "a blank name is no name");
        assert_eq!(
            names.get("o"),
            None,
            "another process's element is not this one's"
        );
    }

    const TWO_PROCESSES: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:process id="first" name="First process" isExecutable="true"/>
  <bpmn:process id="second" isExecutable="true"/>
  <bpmn:process id="third" name="  " isExecutable="true"/>
</bpmn:definitions>"#;

    #[test]
    fn the_named_process_gives_its_name() {
        let xml = TWO_PROCESSES.as_bytes();
        let name = |id| ProcessFacts::read(xml, id).name;
        assert_eq!(name("first").as_deref(), Some("First process"));
        assert_eq!(name("second"), None);
        assert_eq!(name("third"), None, "a blank name is no name");
        assert_eq!(name("missing"), None);
        assert_eq!(
            ProcessFacts::read(b"not xml", "first"),
            ProcessFacts::default()
        );
    }
}
