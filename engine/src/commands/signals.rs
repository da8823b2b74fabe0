//! SIGNAL BROADCAST: a signal for every signal subscription of its name, here and, by
//! the outbox, on every other partition.

use rill_protocol::value::SignalRecord;
use rill_protocol::{BroadcastSignal, Intent, JsonValue, Key, ValueType};
use serde_json::Value;

use super::{tenant, variables_map};
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

pub(super) fn broadcast(p: &mut Processing<'_>, command: &BroadcastSignal) -> Result<()> {
    let mut record = placeholder();
    record.signal_name = command.signal_name.clone();
    if command.signal_name.trim().is_empty() {
        let rejection = Rejection::invalid_argument(
            "Expected a signal name to broadcast, but the signal name is empty",
        );
        p.reject(Key::NONE, Intent::Broadcast, record, rejection);
        return Ok(());
    }
    let variables = match variables_map(&command.variables, "the signal's variables") {
        Ok(variables) => variables,
        Err(rejection) => {
            p.reject(Key::NONE, Intent::Broadcast, record, rejection);
            return Ok(());
        }
    };
    record.variables = JsonValue::from(Value::Object(variables));
    p.command(Key::NONE, Intent::Broadcast, record.clone());
    let key = p.next_key()?;
    p.event(key, Intent::Broadcasted, record.clone())?;
    p.respond(key, Intent::Broadcasted, record.clone());
    p.catch_signal(&record, true)?;
    super::distribution::distribute(p, key, ValueType::Signal, Intent::Broadcast)
}

pub(super) fn placeholder() -> SignalRecord {
    SignalRecord {
        signal_name: String::new(),
        variables: JsonValue::empty_object(),
        tenant_id: tenant(),
    }
}
