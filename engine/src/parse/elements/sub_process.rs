//! `bpmn:subProcess`, embedded or an event subprocess (`triggeredByEvent="true"`): its
//! flow nodes are read into it as their scope.

use super::{ElementParser, FlowNode};
use crate::model::ElementKind;
use crate::parse::process::Builder;

pub(super) struct SubProcess;

impl ElementParser for SubProcess {
    fn parse<'a, 'input>(
        &self,
        _b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        ElementKind::SubProcess {
            start_event: at.idx,
            children: Vec::new(),
            inclusive_joins: Vec::new(),
            triggered_by_event: at.node.attribute("triggeredByEvent").map(str::trim)
                == Some("true"),
        }
    }

    fn read_content<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
        depth: usize,
    ) {
        b.walk_content(at.id, at.idx, at.node, depth);
    }

    fn is_activity(&self) -> bool {
        true
    }
}
