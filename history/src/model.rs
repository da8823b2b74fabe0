//! What the store reads from a deployed model: the process's `name` and the form its
//! start event links. Records carry neither, and the engine's parsed model is not a
//! dependency of the store; reading the XML once per deployed process costs little and
//! gives every replica the same answer.

const ZEEBE_NS: &str = "http://camunda.org/schema/zeebe/1.0";

/// The `name` of the `<process>` with id `process_id`, if the XML has one (a model that
/// does not parse has none here: the engine accepted it, so that does not happen).
pub fn process_name(xml: &[u8], process_id: &str) -> Option<String> {
    let text = std::str::from_utf8(xml).ok()?;
    let document = roxmltree::Document::parse(text).ok()?;
    document
        .descendants()
        .find(|node| {
            node.is_element()
                && node.tag_name().name() == "process"
                && node.attribute("id") == Some(process_id)
        })
        .and_then(|process| process.attribute("name"))
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

/// The `formId` of the `zeebe:formDefinition` on the none start event of the process
/// `process_id` (its start form, which the engine checked at deploy), if it links one.
pub fn start_form_id(xml: &[u8], process_id: &str) -> Option<String> {
    let text = std::str::from_utf8(xml).ok()?;
    let document = roxmltree::Document::parse(text).ok()?;
    let process = document.descendants().find(|node| {
        node.is_element()
            && node.tag_name().name() == "process"
            && node.attribute("id") == Some(process_id)
    })?;
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

/// The `name` of the flow element with id `element_id` (a user task's name), if it has
/// one.
pub fn element_name(xml: &[u8], element_id: &str) -> Option<String> {
    let text = std::str::from_utf8(xml).ok()?;
    let document = roxmltree::Document::parse(text).ok()?;
    document
        .descendants()
        .find(|node| node.is_element() && node.attribute("id") == Some(element_id))
        .and_then(|element| element.attribute("name"))
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::{element_name, process_name, start_form_id};

    #[test]
    fn the_none_start_event_gives_its_linked_form() {
        let xml = br#"<d xmlns:z="http://camunda.org/schema/zeebe/1.0"><process id="p">
            <startEvent id="timer"><extensionElements><z:formDefinition formId="other" /></extensionElements><timerEventDefinition /></startEvent>
            <startEvent id="s"><extensionElements><z:formDefinition formId=" sign-up " /></extensionElements></startEvent>
          </process><process id="q"><startEvent id="k"><extensionElements><z:formDefinition formKey="camunda-forms:bpmn:f" /></extensionElements></startEvent></process></d>"#;
        assert_eq!(start_form_id(xml, "p").as_deref(), Some("sign-up"));
        assert_eq!(
            start_form_id(xml, "q"),
            None,
            "an embedded form is not linked"
        );
        assert_eq!(start_form_id(xml, "missing"), None);
    }

    #[test]
    fn an_element_gives_its_name() {
        let xml =
            br#"<d><process id="p"><userTask id="t" name="Review" /><task id="u" /></process></d>"#;
        assert_eq!(element_name(xml, "t").as_deref(), Some("Review"));
        assert_eq!(element_name(xml, "u"), None);
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
        assert_eq!(process_name(xml, "first").as_deref(), Some("First process"));
        assert_eq!(process_name(xml, "second"), None);
        assert_eq!(process_name(xml, "third"), None, "a blank name is no name");
        assert_eq!(process_name(xml, "missing"), None);
        assert_eq!(process_name(b"not xml", "first"), None);
    }
}
