//! What the store reads from a deployed model: the process's `name`. Records carry no
//! names, and the engine's parsed model is not a dependency of the store; reading the
//! XML once per deployed process costs little and gives every replica the same answer.

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
    use super::{element_name, process_name};

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
