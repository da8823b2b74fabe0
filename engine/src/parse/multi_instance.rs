//! `bpmn:multiInstanceLoopCharacteristics` with its `zeebe:loopCharacteristics`, on the
//! activities that can have it (a standard loop is not supported).

use roxmltree::Node;

use super::document::{article, bpmn_children, text_of};
use super::extensions::Owner;
use super::process::Builder;
use super::values;
use crate::model::MultiInstance;

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// A `zeebe:loopCharacteristics` attribute that must be a FEEL expression (`=…`),
    /// compiled; `None` after reporting why it is not one.
    pub(in crate::parse) fn loop_expression(
        &mut self,
        id: &str,
        extension: Node<'_, '_>,
        attribute: &str,
        what: &str,
        raw: &str,
    ) -> Option<rill_feel::Expression> {
        let Some(source) = raw.strip_prefix('=') else {
            self.problem(
                Some(id),
                extension,
                format!(
                    "the {attribute} '{raw}' must be a FEEL expression starting with '=' \
                     (e.g. '={raw}')"
                ),
            );
            return None;
        };
        match values::expression(what, source) {
            Ok(expression) => Some(expression),
            Err(message) => {
                self.problem(Some(id), extension, message);
                None
            }
        }
    }

    /// Reads `bpmn:multiInstanceLoopCharacteristics` with its `zeebe:loopCharacteristics`
    /// (an `activity` only: tasks, call activities and subprocesses); a standard loop is
    /// not supported.
    pub(in crate::parse) fn loop_characteristics(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        element_name: &str,
        activity: bool,
    ) -> Option<MultiInstance> {
        let mut found = None;
        for child in bpmn_children(node) {
            match child.tag_name().name() {
                "standardLoopCharacteristics" => self.problem(
                    Some(id),
                    child,
                    "a standard loop is not supported (Zeebe does not run it either); use \
                     multi-instance with an inputCollection"
                        .to_owned(),
                ),
                "multiInstanceLoopCharacteristics" => {
                    if found.is_some() {
                        self.problem(
                            Some(id),
                            child,
                            "multiInstanceLoopCharacteristics appears more than once; keep one"
                                .to_owned(),
                        );
                        continue;
                    }
                    if element_name == "subProcess"
                        && node.attribute("triggeredByEvent").map(str::trim) == Some("true")
                    {
                        self.problem(
                            Some(id),
                            child,
                            "an event subprocess cannot be multi-instance; its start event \
                             decides when it runs"
                                .to_owned(),
                        );
                        continue;
                    }
                    if !activity {
                        self.problem(
                            Some(id),
                            child,
                            format!(
                                "{} {element_name} cannot be multi-instance; only tasks, call \
                                 activities and subprocesses can",
                                article(element_name)
                            ),
                        );
                        continue;
                    }
                    // On a problem the whole resource is rejected; the element is built
                    // without its loop so that nothing else is reported about it.
                    found = self.multi_instance(id, child);
                }
                _ => {}
            }
        }
        found
    }

    fn multi_instance(&mut self, id: &str, node: Node<'a, 'input>) -> Option<MultiInstance> {
        let sequential = node.attribute("isSequential").map(str::trim) == Some("true");
        let owner = Owner {
            element: "multiInstanceLoopCharacteristics",
            message_throw: false,
        };
        let runs = self.checked_extensions(id, node, owner);
        let mut characteristics = None;
        for extension in runs {
            if extension.tag_name().name() != "loopCharacteristics" {
                continue;
            }
            if characteristics.is_some() {
                self.problem(
                    Some(id),
                    extension,
                    "zeebe:loopCharacteristics appears more than once; merge them into one"
                        .to_owned(),
                );
            } else {
                characteristics = Some(extension);
            }
        }
        let mut completion_condition = None;
        for child in bpmn_children(node) {
            match child.tag_name().name() {
                "completionCondition" => {
                    let text = text_of(child);
                    match text.strip_prefix('=') {
                        Some(source) => match values::expression("completion condition", source) {
                            Ok(expression) => completion_condition = Some(expression),
                            Err(message) => self.problem(Some(id), child, message),
                        },
                        None if text.is_empty() => {}
                        None => self.problem(
                            Some(id),
                            child,
                            format!(
                                "the completion condition '{text}' must be a FEEL expression \
                                 starting with '=' (e.g. '=numberOfCompletedInstances >= 2')"
                            ),
                        ),
                    }
                }
                "loopCardinality"
                | "loopDataInputRef"
                | "loopDataOutputRef"
                | "inputDataItem"
                | "outputDataItem"
                | "complexBehaviorDefinition" => {
                    let name = child.tag_name().name();
                    self.problem(
                        Some(id),
                        child,
                        format!(
                            "{name} is not supported (as in Zeebe); set the collection with \
                             zeebe:loopCharacteristics inputCollection (for a count n: '=for i \
                             in 1..n return i')"
                        ),
                    );
                }
                _ => {}
            }
        }
        let Some(extension) = characteristics else {
            self.problem(
                Some(id),
                node,
                "a multi-instance activity needs zeebe:loopCharacteristics with an \
                 inputCollection (e.g. '=items')"
                    .to_owned(),
            );
            return None;
        };
        let input_collection = match extension.attribute("inputCollection").map(str::trim) {
            None | Some("") => {
                self.problem(
                    Some(id),
                    extension,
                    "zeebe:loopCharacteristics needs an inputCollection, the list to iterate \
                 over (e.g. '=items')"
                        .to_owned(),
                );
                None
            }
            Some(raw) => {
                self.loop_expression(id, extension, "inputCollection", "input collection", raw)
            }
        };
        let name = |attribute: &str, this: &mut Self| -> Option<String> {
            let raw = extension.attribute(attribute)?.trim();
            if raw.is_empty() {
                return None;
            }
            if raw.starts_with('=') || raw.contains(char::is_whitespace) {
                this.problem(
                    Some(id),
                    extension,
                    format!("the {attribute} '{raw}' must be a variable name, not an expression"),
                );
                return None;
            }
            Some(raw.to_owned())
        };
        let input_element = name("inputElement", self);
        let output_collection = name("outputCollection", self);
        let output_element = match extension
            .attribute("outputElement")
            .map(str::trim)
            .filter(|raw| !raw.is_empty())
        {
            None => None,
            Some(raw) => {
                self.loop_expression(id, extension, "outputElement", "output element", raw)
            }
        };
        let has_collection = extension
            .attribute("outputCollection")
            .is_some_and(|v| !v.trim().is_empty());
        let has_element = extension
            .attribute("outputElement")
            .is_some_and(|v| !v.trim().is_empty());
        if has_collection != has_element {
            self.problem(
                Some(id),
                extension,
                "outputCollection and outputElement go together: set both (the collection \
                 to fill and what each instance adds to it) or neither"
                    .to_owned(),
            );
        }
        Some(MultiInstance {
            sequential,
            input_collection: input_collection?,
            input_element,
            output_collection,
            output_element,
            completion_condition,
        })
    }
}
