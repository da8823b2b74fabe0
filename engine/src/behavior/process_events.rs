//! PROCESS_EVENT records: a timer, message or signal that starts an instance at a start
//! event or reaches a catch event of a running instance is written as `TRIGGERING` (with
//! the event's variables) and, once the triggered event runs, `TRIGGERED` under the same
//! key, as Zeebe writes them. They change no state: the trigger itself is carried out in
//! the same command.

use rill_protocol::value::ProcessEventRecord;
use rill_protocol::{Intent, JsonValue, Key};
use serde_json::{Map, Value};

use crate::context::Processing;
use crate::error::Result;

/// Who the event is for: the process definition and instance, and what holds the trigger
/// (see [`ProcessEventRecord::scope_key`]).
pub(crate) struct EventTarget<'a> {
    pub scope_key: i64,
    pub element_id: &'a str,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub tenant_id: &'a str,
}

impl EventTarget<'_> {
    fn record(&self, variables: JsonValue) -> ProcessEventRecord {
        ProcessEventRecord {
            scope_key: self.scope_key,
            target_element_id: self.element_id.to_owned(),
            variables,
            process_definition_key: self.process_definition_key,
            process_instance_key: self.process_instance_key,
            tenant_id: self.tenant_id.to_owned(),
        }
    }
}

impl Processing<'_> {
    /// Writes `TRIGGERING` for an event with `variables`; returns the event's key.
    pub(crate) fn process_event_triggering(
        &mut self,
        target: &EventTarget<'_>,
        variables: Option<&Map<String, Value>>,
    ) -> Result<Key> {
        let key = self.next_key()?;
        let variables = match variables {
            Some(map) => JsonValue::from(Value::Object(map.clone())),
            None => JsonValue::empty_object(),
        };
        self.event(key, Intent::Triggering, target.record(variables))?;
        Ok(key)
    }

    /// Writes `TRIGGERED` for the event `key` (its variables are not repeated).
    pub(crate) fn process_event_triggered(
        &mut self,
        key: Key,
        target: &EventTarget<'_>,
    ) -> Result<()> {
        self.event(
            key,
            Intent::Triggered,
            target.record(JsonValue::empty_object()),
        )
    }
}
