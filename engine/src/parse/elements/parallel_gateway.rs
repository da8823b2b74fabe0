//! `bpmn:parallelGateway`: nothing to read.

use super::{ElementParser, FlowNode, GATEWAY_END_LISTENERS};
use crate::model::ElementKind;
use crate::parse::process::Builder;

pub(super) struct ParallelGateway;

impl ElementParser for ParallelGateway {
    fn parse<'a, 'input>(
        &self,
        _b: &mut Builder<'_, 'a, 'input>,
        _at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        ElementKind::ParallelGateway
    }

    fn listeners_refused(
        &self,
        _kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        (None, Some(GATEWAY_END_LISTENERS))
    }
}
