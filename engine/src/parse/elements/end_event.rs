//! `bpmn:endEvent`: none, terminate, error, escalation, signal, compensation and message
//! (a job, as in Zeebe) end events.

use roxmltree::Node;

use super::{ESCALATION_END_LISTENERS, ElementParser, FlowNode};
use crate::model::{ElementIdx, ElementKind, ThrowEventDefinition};
use crate::parse::events::CodeKind;
use crate::parse::extensions::Extensions;
use crate::parse::process::Builder;

pub(super) struct EndEvent;

impl ElementParser for EndEvent {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.end_event(at.idx, at.id, at.node, &at.extensions)
    }

    fn inputs_refused(&self, kind: &ElementKind) -> Option<&'static str> {
        match kind {
            ElementKind::EndEvent(
                ThrowEventDefinition::None
                | ThrowEventDefinition::Terminate
                | ThrowEventDefinition::Error { .. }
                | ThrowEventDefinition::Escalation { .. }
                | ThrowEventDefinition::Compensation { .. },
            ) => Some(
                "only message end events (a job) and signal end events (the signal's variables) \
                 can have input mappings; on this end event nothing would read them",
            ),
            _ => None,
        }
    }

    fn outputs_refused(&self, kind: &ElementKind) -> Option<&'static str> {
        match kind {
            ElementKind::EndEvent(ThrowEventDefinition::Error { .. }) => Some(
                "an error end event cannot have output mappings: it never completes, the error \
                 it throws ends its scope",
            ),
            _ => None,
        }
    }

    fn listeners_refused(
        &self,
        kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        match kind {
            ElementKind::EndEvent(ThrowEventDefinition::Error { .. }) => (
                None,
                Some(
                    "an error end event cannot have end listeners in zeebe:executionListeners: \
                     it never completes; put them on the element that catches the error",
                ),
            ),
            ElementKind::EndEvent(ThrowEventDefinition::Escalation { .. }) => {
                (None, Some(ESCALATION_END_LISTENERS))
            }
            _ => (None, None),
        }
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    fn end_event(
        &mut self,
        idx: ElementIdx,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let Some(definition) = self.event_definition(id, node) else {
            return ElementKind::EndEvent(ThrowEventDefinition::None);
        };
        match definition.tag_name().name() {
            "terminateEventDefinition" => ElementKind::EndEvent(ThrowEventDefinition::Terminate),
            "messageEventDefinition" => {
                let missing = "a message end event needs a job type; add zeebe:taskDefinition \
                               with a type (as in Zeebe, a message end event is a job for a \
                               worker that sends the message)";
                ElementKind::EndEvent(ThrowEventDefinition::Message(self.job(
                    id,
                    node,
                    extensions,
                    Some(missing),
                )))
            }
            "errorEventDefinition" => {
                let error_code = self.thrown_code(id, definition, CodeKind::Error, "end event");
                ElementKind::EndEvent(ThrowEventDefinition::Error { error_code })
            }
            "escalationEventDefinition" => {
                let escalation_code =
                    self.thrown_code(id, definition, CodeKind::Escalation, "end event");
                ElementKind::EndEvent(ThrowEventDefinition::Escalation { escalation_code })
            }
            "signalEventDefinition" => {
                ElementKind::EndEvent(ThrowEventDefinition::Signal(self.signal(id, definition)))
            }
            "compensateEventDefinition" => {
                self.check_wait_for_completion(id, definition);
                // Its activityRef is resolved once every element is known.
                self.compensation_throws.push((idx, definition));
                ElementKind::EndEvent(ThrowEventDefinition::Compensation { activity: None })
            }
            other => {
                self.problem(
                    Some(id),
                    definition,
                    format!(
                        "an end event with a {other} is not supported; Rill runs none, \
                         terminate, error, escalation, signal, compensation and message end \
                         events"
                    ),
                );
                ElementKind::EndEvent(ThrowEventDefinition::None)
            }
        }
    }
}
