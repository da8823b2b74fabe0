//! Message subscriptions on the message's partition (by name and correlation key) and
//! process message subscriptions on the instance's partition (by element instance).

use std::ops::ControlFlow;

use super::{
    AsKey, KeyBuf, Reader, StoredMessageSubscription, StoredProcessMessageSubscription, Writer,
    decode, table,
};
use crate::error::Result;

fn message_subscription_key(
    name: &str,
    correlation_key: &str,
    element_instance_key: impl AsKey,
) -> KeyBuf {
    KeyBuf::new(table::MESSAGE_SUBSCRIPTION)
        .str(name)
        .str(correlation_key)
        .key(element_instance_key)
}

impl Reader<'_> {
    /// Subscriptions waiting for `(name, correlation key)`, by element instance key.
    pub fn message_subscriptions(
        &self,
        name: &str,
        correlation_key: &str,
    ) -> Result<Vec<StoredMessageSubscription>> {
        let prefix = KeyBuf::new(table::MESSAGE_SUBSCRIPTION)
            .str(name)
            .str(correlation_key);
        let mut out = Vec::new();
        self.scan(&prefix, |_, v| {
            out.push(decode(v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn message_subscription(
        &self,
        name: &str,
        correlation_key: &str,
        element_instance_key: impl AsKey,
    ) -> Result<Option<StoredMessageSubscription>> {
        self.get(message_subscription_key(
            name,
            correlation_key,
            element_instance_key,
        ))
    }

    pub fn process_message_subscriptions(
        &self,
        element_instance_key: impl AsKey,
    ) -> Result<Vec<StoredProcessMessageSubscription>> {
        let prefix = KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION).key(element_instance_key);
        let mut out = Vec::new();
        self.scan(&prefix, |_, v| {
            out.push(decode(v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn process_message_subscription(
        &self,
        element_instance_key: impl AsKey,
        message_name: &str,
    ) -> Result<Option<StoredProcessMessageSubscription>> {
        self.get(
            KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION)
                .key(element_instance_key)
                .str(message_name),
        )
    }
}

impl Writer<'_> {
    pub fn put_message_subscription(
        &mut self,
        subscription: &StoredMessageSubscription,
    ) -> Result<()> {
        let r = &subscription.record;
        self.put(
            message_subscription_key(&r.message_name, &r.correlation_key, r.element_instance_key),
            subscription,
        )
    }

    pub fn delete_message_subscription(
        &mut self,
        name: &str,
        correlation_key: &str,
        element_instance_key: impl AsKey,
    ) {
        self.delete(message_subscription_key(
            name,
            correlation_key,
            element_instance_key,
        ));
    }

    pub fn put_process_message_subscription(
        &mut self,
        subscription: &StoredProcessMessageSubscription,
    ) -> Result<()> {
        let r = &subscription.record;
        self.put(
            KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION)
                .i64(r.element_instance_key)
                .str(&r.message_name),
            subscription,
        )
    }

    pub fn delete_process_message_subscription(
        &mut self,
        element_instance_key: impl AsKey,
        message_name: &str,
    ) {
        self.delete(
            KeyBuf::new(table::PROCESS_MESSAGE_SUBSCRIPTION)
                .key(element_instance_key)
                .str(message_name),
        );
    }
}
