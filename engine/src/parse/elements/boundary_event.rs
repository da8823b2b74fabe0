//! `bpmn:boundaryEvent`: timer, message, signal, error, escalation and compensation
//! boundary events, interrupting or not (the attachment is resolved in the second pass).

use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{ElementIdx, ElementKind, TriggerDefinition};
use crate::parse::process::Builder;

pub(super) struct BoundaryEvent;

/// Why a compensation boundary event has no execution listeners.
const COMPENSATION_LISTENERS: &str = "a compensation boundary event cannot have execution \
                                      listeners; put them on its compensation handler";

impl ElementParser for BoundaryEvent {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.boundary_event(at.idx, at.id, at.node)
    }

    fn inputs_refused(&self, _kind: &ElementKind) -> Option<&'static str> {
        Some("a boundaryEvent cannot have input mappings; use output mappings")
    }

    fn outputs_refused(&self, kind: &ElementKind) -> Option<&'static str> {
        compensation(kind).then_some(
            "a compensation boundary event cannot have output mappings: it carries no \
             variables; put mappings on its compensation handler",
        )
    }

    fn listeners_refused(
        &self,
        kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        if compensation(kind) {
            return (Some(COMPENSATION_LISTENERS), Some(COMPENSATION_LISTENERS));
        }
        (
            Some(
                "a boundary event cannot have start listeners in zeebe:executionListeners; \
                 put them on the activity it is attached to",
            ),
            None,
        )
    }
}

fn compensation(kind: &ElementKind) -> bool {
    matches!(
        kind,
        ElementKind::BoundaryEvent {
            definition: TriggerDefinition::Compensation { .. },
            ..
        }
    )
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    fn boundary_event(&mut self, idx: ElementIdx, id: &str, node: Node<'a, 'input>) -> ElementKind {
        let interrupting = node.attribute("cancelActivity").map(str::trim) != Some("false");
        self.raw_attachments
            .push((idx, node.attribute("attachedToRef")));
        let placeholder = TriggerDefinition::Error { error_code: None };
        let definition = match self.event_definition(id, node) {
            None => {
                self.problem(
                    Some(id),
                    node,
                    "a boundary event needs a timer, message, signal, error, escalation or \
                     compensation definition"
                        .to_owned(),
                );
                placeholder
            }
            Some(definition) if definition.tag_name().name() == "compensateEventDefinition" => {
                // The handler is found through the association, once every element is known.
                self.compensation_boundaries.push(idx);
                TriggerDefinition::Compensation { handler: idx }
            }
            Some(definition) => {
                let fix = "an error boundary event must be interrupting; remove \
                           cancelActivity=\"false\"";
                match self.trigger(id, node, definition, interrupting, fix) {
                    Some(trigger) => trigger,
                    None => {
                        let other = definition.tag_name().name();
                        self.problem(
                            Some(id),
                            definition,
                            format!(
                                "a boundary event with a {other} is not supported; use a timer, \
                                 message, signal, error, escalation or compensation boundary event"
                            ),
                        );
                        placeholder
                    }
                }
            }
        };
        ElementKind::BoundaryEvent {
            attached_to: idx,
            interrupting,
            definition,
        }
    }
}
