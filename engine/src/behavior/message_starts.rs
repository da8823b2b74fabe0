//! `MESSAGE_START_EVENT_SUBSCRIPTION` records: what Zeebe writes for the message start
//! events of each process's latest version. The subscriptions themselves are kept in
//! state by the `PROCESS CREATED` applier (on every partition the deployment reaches);
//! these records tell exporters when they open, close and start an instance.

use rill_protocol::value::{MessageRecord, MessageStartEventSubscriptionRecord};
use rill_protocol::{Intent, JsonValue, Key};

use crate::context::Processing;
use crate::error::Result;
use crate::model::ElementKind;
use crate::model_cache::DeployedProcess;

/// Whether a resource can hold message start events (skips parsing the others).
fn mentions_messages(resource: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"messageEventDefinition";
    resource.windows(NEEDLE.len()).any(|w| w == NEEDLE)
}

/// A record for each message start event of a definition, not yet correlated.
fn subscriptions(process: &DeployedProcess) -> Vec<MessageStartEventSubscriptionRecord> {
    let model = &process.model;
    model
        .event_start_events()
        .filter_map(|start| {
            let element = model.element(start);
            let ElementKind::MessageStartEvent { message_name } = &element.kind else {
                return None;
            };
            Some(MessageStartEventSubscriptionRecord {
                process_definition_key: process.key.get(),
                bpmn_process_id: model.bpmn_process_id.clone(),
                message_name: message_name.clone(),
                start_event_id: element.id.clone(),
                process_instance_key: -1,
                message_key: -1,
                correlation_key: String::new(),
                variables: JsonValue::empty_object(),
                tenant_id: crate::commands::tenant(),
            })
        })
        .collect()
}

impl Processing<'_> {
    /// A new latest version of a process (`definition`) replaced `previous`: the
    /// previous version's message start subscriptions are `DELETED`, the new one's
    /// `CREATED`. The record key is the definition key.
    pub fn write_message_start_subscriptions(
        &mut self,
        definition: Key,
        previous: Option<Key>,
    ) -> Result<()> {
        if let Some(previous) = previous {
            self.close_message_start_subscriptions(previous)?;
        }
        let Some(record) = self.read().process(definition)? else {
            return Ok(());
        };
        if mentions_messages(&record.resource.0) {
            let new = self.model(definition)?;
            for subscription in subscriptions(&new) {
                self.event(definition, Intent::Created, subscription)?;
            }
        }
        Ok(())
    }

    /// The message start events of `definition` are no longer subscribed: `DELETED`
    /// for each.
    pub fn close_message_start_subscriptions(&mut self, definition: Key) -> Result<()> {
        if let Some(record) = self.read().process(definition)?
            && mentions_messages(&record.resource.0)
        {
            let old = self.model(definition)?;
            for subscription in subscriptions(&old) {
                self.event(definition, Intent::Deleted, subscription)?;
            }
        }
        Ok(())
    }

    /// A message started `instance` at a message start event: `CORRELATED`, with the
    /// message and its variables.
    pub fn message_start_correlated(
        &mut self,
        subscription: &crate::state::MessageStartSubscription,
        message_name: &str,
        message_key: Key,
        message: &MessageRecord,
        instance: Key,
    ) -> Result<()> {
        let record = MessageStartEventSubscriptionRecord {
            process_definition_key: subscription.process_definition_key.get(),
            bpmn_process_id: subscription.bpmn_process_id.clone(),
            message_name: message_name.to_owned(),
            start_event_id: subscription.start_event_id.clone(),
            process_instance_key: instance.get(),
            message_key: message_key.get(),
            correlation_key: message.correlation_key.clone(),
            variables: message.variables.clone(),
            tenant_id: message.tenant_id.clone(),
        };
        self.event(
            subscription.process_definition_key,
            Intent::Correlated,
            record,
        )
    }
}
