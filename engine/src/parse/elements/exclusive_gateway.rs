//! `bpmn:exclusiveGateway`: its `default` flow, resolved in the second pass.

use super::{ElementParser, FlowNode, GATEWAY_END_LISTENERS};
use crate::model::ElementKind;
use crate::parse::process::Builder;

pub(super) struct ExclusiveGateway;

impl ElementParser for ExclusiveGateway {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        if let Some(default) = at.node.attribute("default") {
            b.raw_defaults.push((at.idx, default));
        }
        ElementKind::ExclusiveGateway { default_flow: None }
    }

    fn listeners_refused(
        &self,
        _kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        (None, Some(GATEWAY_END_LISTENERS))
    }
}
