//! MESSAGE PUBLISH and EXPIRE.

use rill_protocol::value::MessageRecord;
use rill_protocol::{Intent, PublishMessage, RejectionType};

use super::{tenant, variables_document};
use crate::error::Result;
use crate::processing::Processing;

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
    let problem = if command.name.is_empty() {
        Some("Expected to publish a message with a name, but the name is empty".to_owned())
    } else if command.time_to_live < 0 {
        Some(format!(
            "Expected the message's time to live to be 0 or more ms, but it was {}",
            command.time_to_live
        ))
    } else {
        variables_document(&command.variables, "the message's variables").err()
    };
    if let Some(reason) = problem {
        p.reject(
            -1,
            Intent::Publish,
            record,
            RejectionType::InvalidArgument,
            reason,
        );
        return Ok(());
    }
    if !command.message_id.is_empty()
        && p.read()
            .message_with_id(&command.name, &command.correlation_key, &command.message_id)?
            .is_some()
    {
        let reason = format!(
            "Expected to publish a new message with id '{}', but a message with that id was \
             already published",
            command.message_id
        );
        p.reject(
            -1,
            Intent::Publish,
            record,
            RejectionType::AlreadyExists,
            reason,
        );
        return Ok(());
    }
    p.command(-1, Intent::Publish, record.clone());
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
    if command.time_to_live == 0 {
        p.event(key, Intent::Expired, record)?;
    } else {
        p.wake_at(record.deadline);
    }
    Ok(())
}

pub(super) fn expire(p: &mut Processing<'_>, key: i64) -> Result<()> {
    let message = p.read().message(key)?;
    match message {
        Some(message) if message.record.deadline <= p.now() => {
            p.command(key, Intent::Expire, message.record.clone());
            p.event(key, Intent::Expired, message.record.clone())?;
            p.respond(key, Intent::Expired, message.record);
        }
        other => {
            let reason = match &other {
                Some(m) => format!(
                    "Expected to expire message with key '{key}', but its deadline {} has not \
                     passed",
                    m.record.deadline
                ),
                None => format!(
                    "Expected to expire message with key '{key}', but no such message was found"
                ),
            };
            let rejection_type = if other.is_some() {
                RejectionType::InvalidState
            } else {
                RejectionType::NotFound
            };
            let record = other.map(|m| m.record).unwrap_or_else(placeholder);
            p.reject(key, Intent::Expire, record, rejection_type, reason);
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
