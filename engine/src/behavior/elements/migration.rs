//! What a process instance migration needs from the element behaviours
//! (`commands/migration.rs` decides what moves where): the catch events an element
//! instance holds triggers for, and the triggers a migrated element instance opens for
//! the catch events of its target element that no migrated subscription covers.

use super::triggers::{PreparedTriggers, held_catch_events};
use crate::context::{Active, Processing};
use crate::model::ElementIdx;
use crate::outcome::Evaluated;

/// The catch events (other than itself) whose triggers `active` holds: its boundary
/// events, its event subprocesses' start events, the events after an event-based
/// gateway.
pub(crate) fn held_catch_event_ids(active: &Active) -> Vec<(ElementIdx, String)> {
    let model = &active.process.model;
    held_catch_events(active)
        .into_iter()
        .map(|idx| (idx, model.element(idx).id.clone()))
        .collect()
}

impl Processing<'_> {
    /// Evaluates the triggers of the catch events `target` (an element instance as the
    /// migration leaves it) holds, except those in `covered` (kept from the source);
    /// nothing is opened yet.
    pub(crate) fn prepare_new_triggers(
        &mut self,
        target: &Active,
        covered: &[String],
    ) -> Evaluated<PreparedTriggers> {
        let process = target.process.clone();
        self.prepare_event_triggers(target, |idx| {
            !covered
                .iter()
                .any(|id| *id == process.model.element(idx).id)
        })
    }
}
