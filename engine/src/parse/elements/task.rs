//! `bpmn:task` (undefined) and `bpmn:manualTask`: nothing to read; they pass the token
//! on.

use super::{ElementParser, FlowNode};
use crate::model::ElementKind;
use crate::parse::process::Builder;

pub(super) struct Task;

impl ElementParser for Task {
    fn parse<'a, 'input>(
        &self,
        _b: &mut Builder<'_, 'a, 'input>,
        _at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        ElementKind::Task
    }

    fn is_activity(&self) -> bool {
        true
    }
}

pub(super) struct ManualTask;

impl ElementParser for ManualTask {
    fn parse<'a, 'input>(
        &self,
        _b: &mut Builder<'_, 'a, 'input>,
        _at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        ElementKind::ManualTask
    }

    fn is_activity(&self) -> bool {
        true
    }
}
