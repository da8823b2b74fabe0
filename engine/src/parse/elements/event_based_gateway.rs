//! `bpmn:eventBasedGateway`: exclusive, never instantiating; in the second pass, what
//! its outgoing flows may lead to.

use roxmltree::Node;

use super::{ElementParser, FlowNode, GATEWAY_END_LISTENERS};
use crate::model::{CatchEventDefinition, ElementKind, SequenceFlow};
use crate::parse::document::article;
use crate::parse::process::Builder;

pub(super) struct EventBasedGateway;

impl ElementParser for EventBasedGateway {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.event_based_gateway(at.id, at.node)
    }

    fn listeners_refused(
        &self,
        _kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        (None, Some(GATEWAY_END_LISTENERS))
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// An event-based gateway: exclusive (the BPMN default), never instantiating.
    fn event_based_gateway(&mut self, id: &str, node: Node<'a, 'input>) -> ElementKind {
        if node.attribute("instantiate").map(str::trim) == Some("true") {
            self.problem(
                Some(id),
                node,
                "an event-based gateway that starts a process (instantiate=\"true\") is not \
                 supported; use message or timer start events"
                    .to_owned(),
            );
        }
        if node.attribute("eventGatewayType").map(str::trim) == Some("Parallel") {
            self.problem(
                Some(id),
                node,
                "a parallel event-based gateway is not supported; remove \
                 eventGatewayType=\"Parallel\""
                    .to_owned(),
            );
        }
        ElementKind::EventBasedGateway
    }
}

/// An event-based gateway leads to at least two message, timer or signal intermediate catch
/// events, which nothing else enters (so entering one means the gateway chose it).
pub(in crate::parse) fn check_event_gateways(b: &mut Builder<'_, '_, '_>, flows: &[SequenceFlow]) {
    for idx in 0..b.elements.len() {
        if !matches!(b.elements[idx].kind, ElementKind::EventBasedGateway) {
            continue;
        }
        let id = b.elements[idx].id.clone();
        let outgoing = b.elements[idx].outgoing.clone();
        if outgoing.len() < 2 {
            b.problem(
                Some(&id),
                b.nodes[idx],
                "an event-based gateway needs at least two outgoing flows, each to a message, \
                 timer or signal intermediate catch event"
                    .to_owned(),
            );
        }
        for flow in outgoing {
            let target = flows[flow.0 as usize].target;
            let element = &b.elements[target.0 as usize];
            let target_id = element.id.clone();
            let catches = matches!(
                element.kind,
                ElementKind::IntermediateCatchEvent(
                    CatchEventDefinition::Timer(_)
                        | CatchEventDefinition::Message(_)
                        | CatchEventDefinition::Signal(_)
                )
            );
            if !catches {
                let kind = element.kind.bpmn_name();
                b.problem(
                    Some(&id),
                    b.nodes[idx],
                    format!(
                        "the event-based gateway leads to '{target_id}', {} {kind}; it can only \
                         lead to message, timer or signal intermediate catch events",
                        article(kind)
                    ),
                );
            } else if element.incoming.len() > 1 {
                b.problem(
                    Some(&target_id),
                    b.nodes[target.0 as usize],
                    "a catch event after an event-based gateway cannot have other incoming \
                     flows; the gateway decides when it is entered"
                        .to_owned(),
                );
            }
        }
    }
}
