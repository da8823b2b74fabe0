//! MESSAGE PUBLISH and EXPIRE.

use rill_protocol::Key;
use rill_protocol::value::MessageRecord;
use rill_protocol::{Intent, PublishMessage};

use super::{tenant, variables_map};
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

/// Refuses a message without a name or with a negative time to live, a variables
/// document that is not an object, and a message id already buffered (`duplicate`).
fn check_publish(command: &PublishMessage, duplicate: bool) -> std::result::Result<(), Rejection> {
    if command.name.is_empty() {
        return Err(Rejection::invalid_argument(
            "Expected to publish a message with a name, but the name is empty",
        ));
    }
    if command.time_to_live < 0 {
        return Err(Rejection::invalid_argument(format!(
            "Expected the message's time to live to be 0 or more ms, but it was {}",
            command.time_to_live
        )));
    }
    variables_map(&command.variables, "the message's variables")?;
    if duplicate {
        return Err(Rejection::already_exists(format!(
            "Expected to publish a new message with id '{}', but a message with that id was \
             already published",
            command.message_id
        )));
    }
    Ok(())
}

pub(super) fn publish(p: &mut Processing<'_>, command: &PublishMessage) -> Result<()> {
    let mut record = MessageRecord {
        name: command.name.clone(),
        correlation_key: command.correlation_key.clone(),
        message_id: command.message_id.clone(),
        time_to_live: command.time_to_live,
        deadline: -1,
        variables: command.variables.clone(),
        tenant_id: tenant(),
    };
    let duplicate = !command.message_id.is_empty()
        && p.read()
            .message_with_id(&command.name, &command.correlation_key, &command.message_id)?
            .is_some();
    if let Err(rejection) = check_publish(command, duplicate) {
        p.reject(Key::NONE, Intent::Publish, record, rejection);
        return Ok(());
    }
    p.command(Key::NONE, Intent::Publish, record.clone());
    let key = p.next_key()?;
    record.deadline = p.now().saturating_add(command.time_to_live);
    p.event(key, Intent::Published, record.clone())?;
    p.respond(key, Intent::Published, record.clone());

    // At most one instance of each process receives the message.
    let mut reached: Vec<String> = Vec::new();
    for subscription in p
        .read()
        .message_subscriptions(&command.name, &command.correlation_key)?
    {
        let process_id = &subscription.record.bpmn_process_id;
        if subscription.correlating
            || reached.contains(process_id)
            || p.read().message_correlated(key, process_id)?
        {
            continue;
        }
        reached.push(process_id.clone());
        p.correlate(subscription, key, record.variables.clone())?;
    }
    p.start_by_message(key, &record)?;
    if command.time_to_live == 0 {
        p.event(key, Intent::Expired, record)?;
    } else {
        p.wake_at(record.deadline);
    }
    Ok(())
}

pub(super) fn expire(p: &mut Processing<'_>, key: Key) -> Result<()> {
    let message = p.read().message(key)?;
    match message {
        Some(message) if message.record.deadline <= p.now() => {
            p.command(key, Intent::Expire, message.record.clone());
            p.event(key, Intent::Expired, message.record.clone())?;
            p.respond(key, Intent::Expired, message.record);
        }
        Some(message) => {
            let rejection = Rejection::invalid_state(format!(
                "Expected to expire message with key '{key}', but its deadline {} has not passed",
                message.record.deadline
            ));
            p.reject(key, Intent::Expire, message.record, rejection);
        }
        None => {
            let rejection = Rejection::not_found(format!(
                "Expected to expire message with key '{key}', but no such message was found"
            ));
            p.reject(key, Intent::Expire, placeholder(), rejection);
        }
    }
    Ok(())
}

pub(super) fn placeholder() -> MessageRecord {
    MessageRecord {
        name: String::new(),
        correlation_key: String::new(),
        message_id: String::new(),
        time_to_live: 0,
        deadline: -1,
        variables: rill_protocol::JsonValue::empty_object(),
        tenant_id: tenant(),
    }
}
