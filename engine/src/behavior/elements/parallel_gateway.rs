//! Parallel gateway: a fork takes every outgoing flow; a join (several incoming flows)
//! is entered once a token waits on each of them. The tokens are counted by the
//! appliers of `SEQUENCE_FLOW_TAKEN` and consumed by that of `ELEMENT_ACTIVATING`.

use rill_protocol::Intent;
use rill_protocol::Key;

use super::{ElementBehavior, Outgoing, Trigger};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{Element, ProcessModel};
use crate::outcome::Evaluated;

pub(super) struct ParallelGateway;

impl ElementBehavior for ParallelGateway {
    fn may_enter(
        &self,
        p: &Processing<'_>,
        scope_key: Key,
        model: &ProcessModel,
        element: &Element,
    ) -> Result<bool> {
        if element.incoming.len() <= 1 {
            return Ok(true);
        }
        let waiting = p.read().join_tokens(scope_key, &element.id)?;
        Ok(element.incoming.iter().all(|flow| {
            let id = &model.flow(*flow).id;
            waiting.iter().any(|(f, n)| f == id && *n > 0)
        }))
    }

    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        p.mark(active, Intent::ElementActivated)?;
        p.complete(active, None, Outgoing::All)?;
        Ok(())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.resolve_element_incident(active.key())
    }
}
