//! Exclusive gateway: takes the first outgoing flow whose condition is true, else the
//! default flow; with neither, a condition incident.

use rill_protocol::Intent;

use super::{ElementBehavior, Outgoing, Trigger, wrong_kind};
use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::ElementKind;
use crate::outcome::Evaluated;

pub(super) struct ExclusiveGateway;

impl ElementBehavior for ExclusiveGateway {
    fn activate(&self, p: &mut Processing<'_>, active: &Active, _trigger: Trigger) -> Evaluated {
        let ElementKind::ExclusiveGateway { default_flow } = &active.element().kind else {
            return Err(wrong_kind(active, "exclusiveGateway").into());
        };
        let flow = p.choose_flow(active, *default_flow)?;
        p.mark(active, Intent::ElementActivated)?;
        p.complete(active, None, Outgoing::One(flow))?;
        Ok(())
    }

    fn complete(&self, _p: &mut Processing<'_>, _active: &Active) -> Result<()> {
        Ok(())
    }

    fn terminate(&self, p: &mut Processing<'_>, active: &Active) -> Result<()> {
        p.resolve_element_incident(active.key())
    }
}
