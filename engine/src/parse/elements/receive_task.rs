//! `bpmn:receiveTask`: waits for the message its `messageRef` names.

use super::{ElementParser, FlowNode};
use crate::model::ElementKind;
use crate::parse::process::Builder;

pub(super) struct ReceiveTask;

impl ElementParser for ReceiveTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        let message = b.message(at.id, at.node, at.node.attribute("messageRef"));
        ElementKind::ReceiveTask(message)
    }

    fn is_activity(&self) -> bool {
        true
    }
}
