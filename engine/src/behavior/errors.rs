//! BPMN errors: thrown by a job worker or an error end event, caught by the nearest
//! matching error boundary event (a specific code wins over a catch-all), else an
//! incident.

use rill_protocol::Intent;
use rill_protocol::Key;
use rill_protocol::value::IncidentErrorType;
use serde_json::{Map, Value};

use crate::context::{Active, Processing};
use crate::error::Result;
use crate::model::{BoundaryDefinition, ElementIdx, ElementKind};

impl Processing<'_> {
    /// Finds the boundary event that catches `code`, starting at `from` and walking
    /// up the scopes: the instance it is attached to and the boundary element.
    fn find_catcher(&mut self, from: Key, code: &str) -> Result<Option<(Active, ElementIdx)>> {
        let mut current = from;
        while let Some(active) = self.active(current)? {
            let mut catch_all = None;
            let mut exact = None;
            // An inner instance's boundary events are its body's, found next.
            let boundaries: &[ElementIdx] = if active.is_multi_instance_inner() {
                &[]
            } else {
                &active.element().boundary_events
            };
            for boundary in boundaries {
                if let ElementKind::BoundaryEvent {
                    definition: BoundaryDefinition::Error { error_code },
                    ..
                } = &active.process.model.element(*boundary).kind
                {
                    match error_code {
                        Some(c) if c == code => exact = exact.or(Some(*boundary)),
                        None => catch_all = catch_all.or(Some(*boundary)),
                        Some(_) => {}
                    }
                }
            }
            if let Some(boundary) = exact.or(catch_all) {
                return Ok(Some((active, boundary)));
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
        match self.find_catcher(task.key(), code)? {
            Some((attached, boundary)) => {
                self.interrupt_and_activate_boundary(&attached, boundary, variables)
            }
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
        match self.find_catcher(Key(scope), code)? {
            Some((attached, boundary)) => {
                self.mark(end_event, Intent::ElementActivated)?;
                self.interrupt_and_activate_boundary(&attached, boundary, variables)
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

fn unhandled(code: &str, message: &str) -> String {
    let mut text = format!("Expected to throw an error event with the code '{code}'");
    if !message.is_empty() {
        text.push_str(&format!(" with message '{message}'"));
    }
    text.push_str(", but it was not caught. No error events are available in the scope.");
    text
}
