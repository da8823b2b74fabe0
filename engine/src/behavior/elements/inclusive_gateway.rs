//! Inclusive gateway. As a fork it takes every outgoing flow whose condition is true
//! (else the default flow; with neither, a condition incident). As a join (several
//! incoming flows) it waits for every token that can still arrive: it is entered when a
//! token waits on at least one incoming flow and no other token of its scope can reach
//! it. Which elements can reach it is computed at deploy (`upstream`); here only the live
//! element instances, the tokens waiting at other joins and the tokens travelling in
//! this command are looked up in that list. The tokens are counted and consumed as for
//! the parallel join; a join that waits is looked at again whenever something in its
//! scope ends (`Step::RecheckJoins`).

use rill_protocol::{Intent, Key};

use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{Element, ElementIdx, ElementKind, ProcessModel};
use crate::outcome::Evaluated;

pub(super) struct InclusiveGateway;

impl ElementBehavior for InclusiveGateway {
    fn may_enter(
        &self,
        p: &Processing<'_>,
        scope_key: Key,
        model: &ProcessModel,
        element: &Element,
    ) -> Result<bool> {
        let ElementKind::InclusiveGateway { upstream, .. } = &element.kind else {
            return Ok(true);
        };
        if element.incoming.len() <= 1 {
            return Ok(true);
        }
        if p.read().join_tokens(scope_key, &element.id)?.is_empty() {
            // Its tokens were consumed by an earlier entry in this command.
            return Ok(false);
        }
        let can_reach = |idx: ElementIdx| upstream.binary_search(&idx).is_ok();
        if p.pending_activations(scope_key).any(can_reach) {
            return Ok(false);
        }
        for gateway in p.read().gateways_with_tokens(scope_key)? {
            if gateway != element.id
                && let Some(idx) = model.element_by_id(&gateway)
                && can_reach(idx)
            {
                return Ok(false);
            }
        }
        for child in p.read().children(scope_key)? {
            let reaches = p.read().peek_element_instance(child, |instance| {
                model
                    .element_by_id(&instance.record.element_id)
                    .is_some_and(can_reach)
            })?;
            if reaches == Some(true) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::InclusiveGateway { default_flow, .. } = &active.element().kind else {
            return Err(wrong_kind(active, "inclusiveGateway").into());
        };
        let flows = p.choose_flows(active, *default_flow)?;
        p.mark(active, Intent::ElementActivated)?;
        p.complete(active, None, Outgoing::Many(flows))?;
        Ok(())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.resolve_element_incident(active.key())
    }
}

impl Processing<'_> {
    /// Enters the joining inclusive gateways of a scope that have waiting tokens, if no
    /// other token can reach them any more (`may_enter` decides).
    pub fn recheck_joins(&mut self, scope_key: Key) -> Result<()> {
        let Some(scope) = self.active(scope_key)? else {
            return Ok(());
        };
        if scope.instance.state != crate::state::ElementState::Activated {
            return Ok(());
        }
        let model = &scope.process.model;
        for &join in model.inclusive_joins(scope.idx) {
            let id = &model.element(join).id;
            if !self.read().join_tokens(scope_key, id)?.is_empty() {
                self.activate(scope_key, &scope.process, join, None)?;
            }
        }
        Ok(())
    }
}
