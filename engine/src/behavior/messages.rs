//! Message subscriptions and correlation.
//!
//! Zeebe splits a subscription in two: the instance's side (PROCESS_MESSAGE_SUBSCRIPTION)
//! and the side on the message's partition (MESSAGE_SUBSCRIPTION), talking through
//! commands. When both sides are on this partition they run in-line in one command;
//! otherwise the commands between them go through the outbox
//! (`commands::distribution`), with the same records on each side.
//!
//! ```text
//! enter catch event: PMS CREATING ─► MS CREATED ─► PMS CREATED ─► (buffered message?)
//! correlate:         MS CORRELATING ─► PMS CORRELATED + complete element ─► MS CORRELATED
//! leave element:     PMS DELETING ─► MS DELETED ─► PMS DELETED
//! ```

use rill_protocol::Key;
use rill_protocol::value::{
    MessageRecord, MessageSubscriptionRecord, ProcessMessageSubscriptionRecord,
};
use rill_protocol::{Intent, JsonValue, message_partition};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::{Active, Processing, Step};
use crate::error::Result;
use crate::model::{MessageDefinition, ValueOrExpr};
use crate::outcome::{Evaluated, Failure};
use crate::state::{StoredMessageSubscription, StoredProcessMessageSubscription};

/// The hidden process-scope variable of an instance that a message started: which
/// message, and the correlation key the instance holds until it ends (Zeebe keeps this
/// in its state). Left out of every variable read.
pub(crate) const MESSAGE_START_VARIABLE: &str = rill_protocol::value::MESSAGE_START_VARIABLE;

/// The value of [`MESSAGE_START_VARIABLE`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageStart {
    pub message_name: String,
    pub correlation_key: String,
    pub message_key: i64,
}

/// A subscription's message name and correlation key, evaluated.
pub(crate) struct NewSubscription {
    pub message_name: String,
    correlation_key: String,
    /// The catch event it is for when that is not the element instance itself (a
    /// boundary event, an event subprocess's start event, an event after an
    /// event-based gateway), and whether that event interrupts.
    catch_event: Option<(String, bool)>,
}

impl NewSubscription {
    /// The subscription is for `catch_event`, held by the element instance it is
    /// opened on.
    pub fn for_catch_event(mut self, catch_event: &str, interrupting: bool) -> NewSubscription {
        self.catch_event = Some((catch_event.to_owned(), interrupting));
        self
    }
}

impl Processing<'_> {
    pub fn evaluate_subscription(
        &self,
        definition: &MessageDefinition,
        active: &Active,
    ) -> Evaluated<NewSubscription> {
        let message_name = self.evaluate_string(&definition.message_name, active)?;
        let correlation_key = match &definition.correlation_key {
            ValueOrExpr::Static(key) => key.clone(),
            ValueOrExpr::Expr(expression) => {
                let context = self.context_at(expression, active)?;
                expression
                    .evaluate_correlation_key(&context, self.feel_env())
                    .map_err(|e| {
                        Failure::extract_value(format!(
                            "Failed to extract the correlation key for '{}': {e}",
                            expression.source()
                        ))
                    })?
            }
        };
        Ok(NewSubscription {
            message_name,
            correlation_key,
            catch_event: None,
        })
    }

    pub fn create_process_message_subscription(
        &mut self,
        active: &Active,
        subscription: NewSubscription,
    ) -> Result<()> {
        let record = active.record();
        let partition = message_partition(
            &subscription.correlation_key,
            self.ctx.message_partition_count,
        );
        let (element_id, is_interrupting) = subscription
            .catch_event
            .unwrap_or_else(|| (record.element_id.clone(), true));
        let value = ProcessMessageSubscriptionRecord {
            subscription_partition_id: i32::from(partition.get()),
            process_instance_key: record.process_instance_key,
            element_instance_key: active.key().get(),
            bpmn_process_id: record.bpmn_process_id.clone(),
            element_id,
            message_name: subscription.message_name.clone(),
            correlation_key: subscription.correlation_key,
            message_key: -1,
            variables: JsonValue::empty_object(),
            is_interrupting,
            tenant_id: record.tenant_id.clone(),
        };
        let key = self.next_key()?;
        let target = value.subscription_partition_id as u16;
        let remote = partition != rill_protocol::Key(value.process_instance_key).partition();
        self.event(key, Intent::Creating, value)?;
        if remote {
            // The applier queued the command for the message's partition.
            return crate::commands::send_latest(self, target);
        }
        self.push_step(Step::OpenMessageSubscription {
            process_message_subscription_key: key,
            element_instance_key: active.key(),
            message_name: subscription.message_name,
        });
        Ok(())
    }

    /// The message side opens the subscription, confirms it, and correlates the
    /// oldest buffered message this process has not received yet.
    pub fn open_message_subscription(
        &mut self,
        process_subscription_key: Key,
        element_instance_key: Key,
        message_name: &str,
    ) -> Result<()> {
        let Some(process_subscription) = self
            .read()
            .process_message_subscription(element_instance_key, message_name)?
        else {
            return Ok(());
        };
        if process_subscription.closing {
            return Ok(());
        }
        let p = &process_subscription.record;
        let value = MessageSubscriptionRecord {
            process_instance_key: p.process_instance_key,
            element_instance_key: element_instance_key.get(),
            bpmn_process_id: p.bpmn_process_id.clone(),
            message_name: p.message_name.clone(),
            correlation_key: p.correlation_key.clone(),
            message_key: -1,
            variables: JsonValue::empty_object(),
            is_interrupting: p.is_interrupting,
            tenant_id: p.tenant_id.clone(),
        };
        let key = self.next_key()?;
        self.event(key, Intent::Created, value.clone())?;
        self.event(process_subscription_key, Intent::Created, p.clone())?;
        self.correlate_buffered(StoredMessageSubscription {
            key,
            record: value,
            correlating: false,
        })
    }

    /// Correlates the oldest buffered message this process has not received yet.
    fn correlate_buffered(&mut self, subscription: StoredMessageSubscription) -> Result<()> {
        let now = self.now();
        let record = &subscription.record;
        let candidates = self
            .read()
            .messages_for(&record.message_name, &record.correlation_key)?;
        for message_key in candidates {
            let Some(message) = self.read().message(message_key)? else {
                continue;
            };
            if message.record.deadline < now
                || self
                    .read()
                    .message_correlated(message_key, &subscription.record.bpmn_process_id)?
            {
                continue;
            }
            return self.correlate(subscription, message_key, message.record.variables);
        }
        Ok(())
    }

    /// The message side of a subscription whose instance lives on another partition.
    pub fn open_remote_subscription(&mut self, value: &MessageSubscriptionRecord) -> Result<()> {
        let existing = self.read().message_subscription(
            &value.message_name,
            &value.correlation_key,
            value.element_instance_key,
        )?;
        if existing.is_some() {
            return Ok(());
        }
        let key = self.next_key()?;
        self.event(key, Intent::Created, value.clone())?;
        self.correlate_buffered(StoredMessageSubscription {
            key,
            record: value.clone(),
            correlating: false,
        })
    }

    /// The instance's partition closed a subscription held here.
    pub fn delete_message_subscription(&mut self, value: &MessageSubscriptionRecord) -> Result<()> {
        if let Some(subscription) = self.read().message_subscription(
            &value.message_name,
            &value.correlation_key,
            value.element_instance_key,
        )? {
            self.event(subscription.key, Intent::Deleted, subscription.record)?;
        }
        Ok(())
    }

    /// A message correlated on another partition reaches its instance here.
    pub fn correlate_here(&mut self, value: &MessageSubscriptionRecord) -> Result<()> {
        let element_key = value.element_instance_key;
        let Some(process_subscription) = self
            .read()
            .process_message_subscription(element_key, &value.message_name)?
        else {
            return Ok(());
        };
        if process_subscription.closing {
            return Ok(());
        }
        let correlated = ProcessMessageSubscriptionRecord {
            message_key: value.message_key,
            variables: value.variables.clone(),
            ..process_subscription.record
        };
        let catch_event = correlated.element_id.clone();
        self.event(process_subscription.key, Intent::Correlated, correlated)?;
        let trigger = value.variables.to_object();
        self.trigger_catch_event(Key(element_key), &catch_event, trigger)
    }

    /// The instance's partition applied a correlation sent from here.
    pub fn finish_remote_correlation(&mut self, sent: &MessageSubscriptionRecord) -> Result<()> {
        if let Some(subscription) = self.read().message_subscription(
            &sent.message_name,
            &sent.correlation_key,
            sent.element_instance_key,
        )? {
            let value = MessageSubscriptionRecord {
                message_key: sent.message_key,
                variables: sent.variables.clone(),
                ..subscription.record
            };
            self.event(subscription.key, Intent::Correlated, value)?;
        }
        Ok(())
    }

    /// Delivers a message to a waiting subscription and completes its element.
    pub fn correlate(
        &mut self,
        subscription: StoredMessageSubscription,
        message_key: Key,
        variables: JsonValue,
    ) -> Result<()> {
        let value = MessageSubscriptionRecord {
            message_key: message_key.get(),
            variables: variables.clone(),
            ..subscription.record
        };
        self.event(subscription.key, Intent::Correlating, value.clone())?;
        let instance_partition = rill_protocol::Key(value.process_instance_key).partition();
        if instance_partition != self.ctx.partition_id {
            // The applier queued the correlation for the instance's partition; the
            // subscription is done once that partition has applied it.
            return crate::commands::send_latest(self, instance_partition.get());
        }

        // The instance's side.
        let element_key = value.element_instance_key;
        if let Some(process_subscription) = self
            .read()
            .process_message_subscription(element_key, &value.message_name)?
        {
            let correlated = ProcessMessageSubscriptionRecord {
                message_key: message_key.get(),
                variables: variables.clone(),
                ..process_subscription.record
            };
            let catch_event = correlated.element_id.clone();
            self.event(process_subscription.key, Intent::Correlated, correlated)?;
            let trigger = variables.to_object();
            self.trigger_catch_event(Key(element_key), &catch_event, trigger)?;
        }

        self.event(subscription.key, Intent::Correlated, value)
    }

    /// A published message starts an instance of every process whose latest version has
    /// a message start event for its name, unless the message already reached that
    /// process or (for a non-empty correlation key) an instance it started with that key
    /// is still active.
    pub fn start_by_message(&mut self, message_key: Key, message: &MessageRecord) -> Result<()> {
        for subscription in self.read().message_start_subscriptions(&message.name)? {
            self.try_message_start(&subscription, message_key, message)?;
        }
        Ok(())
    }

    /// Starts an instance at a message start event; `false` when the message may not.
    fn try_message_start(
        &mut self,
        subscription: &crate::state::MessageStartSubscription,
        message_key: Key,
        message: &MessageRecord,
    ) -> Result<bool> {
        let process_id = &subscription.bpmn_process_id;
        if self.read().message_correlated(message_key, process_id)? {
            return Ok(false);
        }
        if !message.correlation_key.is_empty()
            && self
                .read()
                .message_start_lock(process_id, &message.correlation_key)?
                .is_some()
        {
            return Ok(false);
        }
        let process = self.model(subscription.process_definition_key)?;
        let Some(start) = process.model.element_by_id(&subscription.start_event_id) else {
            return Ok(false);
        };
        let mut variables = message.variables.to_object().unwrap_or_default();
        let marker = MessageStart {
            message_name: message.name.clone(),
            correlation_key: message.correlation_key.clone(),
            message_key: message_key.get(),
        };
        variables.insert(
            MESSAGE_START_VARIABLE.to_owned(),
            serde_json::to_value(&marker).unwrap_or(Value::Null),
        );
        let instance = self.start_instance_at(&process, start, variables)?;
        self.message_start_correlated(subscription, &message.name, message_key, message, instance)?;
        Ok(true)
    }

    /// An instance ended. If a message started it with a correlation key, the oldest
    /// buffered message with that key that this process has not received starts the
    /// next instance (as in Zeebe).
    pub fn message_started_instance_ended(
        &mut self,
        started_by: Option<&MessageStart>,
        process_id: &str,
    ) -> Result<()> {
        let Some(ended) = started_by else {
            return Ok(());
        };
        if ended.correlation_key.is_empty() {
            return Ok(());
        }
        let now = self.now();
        for name in self.read().message_start_names(process_id)? {
            let Some(subscription) = self
                .read()
                .message_start_subscriptions(&name)?
                .into_iter()
                .find(|s| s.bpmn_process_id == process_id)
            else {
                continue;
            };
            for message_key in self.read().messages_for(&name, &ended.correlation_key)? {
                let Some(message) = self.read().message(message_key)? else {
                    continue;
                };
                if message.record.deadline < now {
                    continue;
                }
                if self.try_message_start(&subscription, message_key, &message.record)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Closes the subscriptions of an element instance that is left.
    pub fn close_message_subscriptions(&mut self, element_instance_key: Key) -> Result<()> {
        for subscription in self
            .read()
            .process_message_subscriptions(element_instance_key)?
        {
            self.close_subscription(element_instance_key, subscription)?;
        }
        Ok(())
    }

    /// Closes one subscription of an element instance, by message name.
    pub fn close_message_subscription(
        &mut self,
        element_instance_key: Key,
        message_name: &str,
    ) -> Result<()> {
        match self
            .read()
            .process_message_subscription(element_instance_key, message_name)?
        {
            Some(subscription) => self.close_subscription(element_instance_key, subscription),
            None => Ok(()),
        }
    }

    fn close_subscription(
        &mut self,
        element_instance_key: Key,
        subscription: StoredProcessMessageSubscription,
    ) -> Result<()> {
        let record = subscription.record;
        self.event(subscription.key, Intent::Deleting, record.clone())?;
        let target = record.subscription_partition_id as u16;
        if rill_protocol::Key(record.process_instance_key)
            .partition()
            .get()
            != target
        {
            // The applier queued the close for the message's partition.
            crate::commands::send_latest(self, target)?;
            return self.event(subscription.key, Intent::Deleted, record);
        }
        if let Some(message_side) = self.read().message_subscription(
            &record.message_name,
            &record.correlation_key,
            element_instance_key,
        )? {
            self.event(message_side.key, Intent::Deleted, message_side.record)?;
        }
        self.event(subscription.key, Intent::Deleted, record)
    }
}
