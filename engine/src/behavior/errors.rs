//! BPMN errors: thrown by a job worker or an error end event, caught by the nearest
//! matching error event subprocess or error boundary event (a specific code wins over
//! a catch-all), else an incident. Escalations (`escalations.rs`) are caught by the
//! same walk.

use rill_protocol::Intent;
use rill_protocol::Key;
use rill_protocol::value::IncidentErrorType;
use serde_json::{Map, Value};

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{ElementIdx, ProcessModel};

impl Processing<'_> {
    /// Finds the catch event for `code`, starting at `from` and walking up the scopes:
    /// at each element instance, the error event subprocesses inside it (unless an
    /// interrupting one already runs there), then its error boundary events; a
    /// specific code wins over a catch-all among each. Returns the instance that holds
    /// the catch event and the catch event.
    pub(crate) fn find_catcher(
        &mut self,
        from: Key,
        thrown: Thrown,
        code: &str,
    ) -> Result<Option<(Active, ElementIdx)>> {
        let mut current = from;
        while let Some(active) = self.active(current)? {
            let model = &active.process.model;
            let mut inside: Vec<ElementIdx> = Vec::new();
            if !active.is_multi_instance_body() {
                inside.extend(model.event_subprocess_starts(active.idx));
                if !inside.is_empty() && self.interrupted_by_event_subprocess(&active)? {
                    inside.clear();
                }
            }
            // An inner instance's boundary events are its body's, found next.
            let boundaries: &[ElementIdx] = if active.is_multi_instance_inner() {
                &[]
            } else {
                &active.element().boundary_events
            };
            let catch = matching(model, &inside, thrown, code)
                .or_else(|| matching(model, boundaries, thrown, code));
            if let Some(catch) = catch {
                return Ok(Some((active, catch)));
            }
            let record = active.record();
            current = if record.flow_scope_key < 0 && record.parent_element_instance_key > 0 {
                // Not caught in a called instance: on to its call activity in the parent.
                Key(record.parent_element_instance_key)
            } else {
                Key(record.flow_scope_key)
            };
            if current.is_none() {
                break;
            }
        }
        Ok(None)
    }

    /// A job's worker threw an error (the job is already ERROR_THROWN).
    pub fn throw_error_from_job(
        &mut self,
        task: Active,
        job_key: Key,
        code: &str,
        message: &str,
        variables: Option<Map<String, Value>>,
    ) -> Result<()> {
        match self.find_catcher(task.key(), Thrown::Error, code)? {
            Some((holder, catch)) => self.fire_catch_event(&holder, catch, variables, None),
            None => self.raise_incident(
                task.record(),
                task.key(),
                IncidentErrorType::UnhandledErrorEvent,
                unhandled(code, message),
                job_key,
            ),
        }
    }

    /// An error end event was entered (still ELEMENT_ACTIVATING).
    pub fn throw_error_from_element(
        &mut self,
        end_event: &Active,
        code: &str,
        message: &str,
        variables: Option<Map<String, Value>>,
    ) -> Result<()> {
        let scope = end_event.record().flow_scope_key;
        match self.find_catcher(Key(scope), Thrown::Error, code)? {
            Some((holder, catch)) => {
                self.mark(end_event, Intent::ElementActivated)?;
                self.fire_catch_event(&holder, catch, variables, None)
            }
            None => self.raise_incident(
                end_event.record(),
                end_event.key(),
                IncidentErrorType::UnhandledErrorEvent,
                unhandled(code, message),
                Key::NONE,
            ),
        }
    }
}

/// What is thrown up the scopes.
#[derive(Clone, Copy)]
pub(crate) enum Thrown {
    Error,
    Escalation,
}

/// The catch event among `candidates` that catches `code`: one with that code, else a
/// catch-all.
fn matching(
    model: &ProcessModel,
    candidates: &[ElementIdx],
    thrown: Thrown,
    code: &str,
) -> Option<ElementIdx> {
    let mut catch_all = None;
    for candidate in candidates {
        let caught = match (thrown, model.element(*candidate).kind.trigger()) {
            (Thrown::Error, Some((definition, _))) => definition.error_code(),
            (Thrown::Escalation, Some((definition, _))) => definition.escalation_code(),
            (_, None) => None,
        };
        match caught {
            Some(Some(c)) if c == code => return Some(*candidate),
            Some(None) => catch_all = catch_all.or(Some(*candidate)),
            _ => {}
        }
    }
    catch_all
}

fn unhandled(code: &str, message: &str) -> String {
    let mut text = format!("Expected to throw an error event with the code '{code}'");
    if !message.is_empty() {
        text.push_str(&format!(" with message '{message}'"));
    }
    text.push_str(", but it was not caught. No error events are available in the scope.");
    text
}
