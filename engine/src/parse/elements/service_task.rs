//! `bpmn:serviceTask` and `bpmn:sendTask`: a job for a worker (a send task too, as in
//! Zeebe), from `zeebe:taskDefinition` and `zeebe:taskHeaders`.

use super::{ElementParser, FlowNode};
use crate::model::ElementKind;
use crate::parse::process::Builder;

pub(super) struct ServiceTask;

impl ElementParser for ServiceTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        let missing = "a service task needs a job type; add zeebe:taskDefinition with a type";
        ElementKind::ServiceTask(b.job(at.id, at.node, &at.extensions, Some(missing)))
    }

    fn is_activity(&self) -> bool {
        true
    }
}

pub(super) struct SendTask;

impl ElementParser for SendTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        let missing = "a send task needs a job type; add zeebe:taskDefinition with a type (as \
                       in Zeebe, a send task is a job for a worker that sends the message)";
        ElementKind::SendTask(b.job(at.id, at.node, &at.extensions, Some(missing)))
    }

    fn is_activity(&self) -> bool {
        true
    }
}
