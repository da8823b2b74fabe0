//! `bpmn:inclusiveGateway`: its `default` flow (resolved in the second pass) and, for a
//! join, the elements of its scope from which a token can still reach it.

use super::{ElementParser, FlowNode, GATEWAY_END_LISTENERS};
use crate::model::{ElementIdx, ElementKind, ProcessModel, SequenceFlow, ThrowEventDefinition};
use crate::parse::process::Builder;

pub(super) struct InclusiveGateway;

impl ElementParser for InclusiveGateway {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        if let Some(default) = at.node.attribute("default") {
            b.raw_defaults.push((at.idx, default));
        }
        ElementKind::InclusiveGateway {
            default_flow: None,
            upstream: Vec::new(),
        }
    }

    fn listeners_refused(
        &self,
        _kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        (None, Some(GATEWAY_END_LISTENERS))
    }
}

/// For each joining inclusive gateway (several incoming flows): the elements of its scope
/// from which a token can still reach it without passing through it. A token moves over
/// sequence flows, from an activity to its boundary events, and from a link throw event
/// to its catch event; the walk goes backwards from the gateway and stops at it. The
/// runtime then only looks up live elements in this sorted list.
pub(in crate::parse) fn link_inclusive_joins(b: &mut Builder<'_, '_, '_>, flows: &[SequenceFlow]) {
    let count = b.elements.len();
    let mut predecessors: Vec<Vec<ElementIdx>> = vec![Vec::new(); count];
    for flow in flows {
        predecessors[flow.target.0 as usize].push(flow.source);
    }
    for (idx, element) in b.elements.iter().enumerate() {
        let here = ElementIdx(u32::try_from(idx).unwrap_or(u32::MAX));
        match &element.kind {
            ElementKind::BoundaryEvent { attached_to, .. } if *attached_to != here => {
                predecessors[idx].push(*attached_to);
            }
            ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Link {
                catch_event, ..
            }) if *catch_event != here => {
                predecessors[catch_event.0 as usize].push(here);
            }
            _ => {}
        }
    }
    let joins: Vec<usize> = (0..count)
        .filter(|&i| {
            matches!(b.elements[i].kind, ElementKind::InclusiveGateway { .. })
                && b.elements[i].incoming.len() > 1
        })
        .collect();
    for join in joins {
        let mut seen = vec![false; count];
        seen[join] = true;
        let mut stack = predecessors[join].clone();
        let mut upstream = Vec::new();
        while let Some(element) = stack.pop() {
            if std::mem::replace(&mut seen[element.0 as usize], true) {
                continue;
            }
            upstream.push(element);
            stack.extend(predecessors[element.0 as usize].iter().copied());
        }
        upstream.sort_unstable();
        if let ElementKind::InclusiveGateway { upstream: slot, .. } = &mut b.elements[join].kind {
            *slot = upstream;
        }
        let scope = b.elements[join].flow_scope.unwrap_or(ProcessModel::ROOT);
        if let ElementKind::Process {
            inclusive_joins, ..
        }
        | ElementKind::SubProcess {
            inclusive_joins, ..
        }
        | ElementKind::AdHocInnerInstance {
            inclusive_joins, ..
        } = &mut b.elements[scope.0 as usize].kind
        {
            inclusive_joins.push(ElementIdx(u32::try_from(join).unwrap_or(u32::MAX)));
        }
    }
}
