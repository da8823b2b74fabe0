//! `bpmn:intermediateCatchEvent`: timer, message, signal and link catch events.

use rill_feel::temporal::IsoDuration;
use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{CatchEventDefinition, ElementIdx, ElementKind, TimerDefinition, ValueOrExpr};
use crate::parse::process::Builder;

pub(super) struct IntermediateCatchEvent;

impl ElementParser for IntermediateCatchEvent {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.intermediate_catch_event(at.idx, at.id, at.node)
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    fn intermediate_catch_event(
        &mut self,
        idx: ElementIdx,
        id: &str,
        node: Node<'a, 'input>,
    ) -> ElementKind {
        let placeholder = CatchEventDefinition::Timer(TimerDefinition::Duration(
            ValueOrExpr::Static(IsoDuration {
                months: 0,
                millis: 0,
            }),
        ));
        let Some(definition) = self.event_definition(id, node) else {
            self.problem(
                Some(id),
                node,
                "an intermediate catch event needs a timer, message, signal or link definition"
                    .to_owned(),
            );
            return ElementKind::IntermediateCatchEvent(placeholder);
        };
        let caught = match definition.tag_name().name() {
            "timerEventDefinition" => {
                CatchEventDefinition::Timer(self.timer(id, definition, false))
            }
            "messageEventDefinition" => {
                let message = self.message(id, definition, definition.attribute("messageRef"));
                CatchEventDefinition::Message(message)
            }
            "linkEventDefinition" => {
                let name = self.link_name(id, definition);
                self.link_catches.push((idx, name.clone()));
                CatchEventDefinition::Link { name }
            }
            "signalEventDefinition" => CatchEventDefinition::Signal(self.signal(id, definition)),
            other => {
                self.problem(
                    Some(id),
                    definition,
                    format!(
                        "an intermediate catch event with a {other} is not supported; use a \
                         timer, a message, a signal or a link"
                    ),
                );
                placeholder
            }
        };
        ElementKind::IntermediateCatchEvent(caught)
    }
}
