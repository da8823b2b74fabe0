//! Compensation subscriptions, by process instance: a compensation throw event looks
//! at those of its instance, oldest first (keys grow, so key order is completion order).

use std::ops::ControlFlow;

use rill_protocol::Key;
use rill_protocol::value::CompensationSubscriptionRecord;

use super::{AsKey, KeyBuf, Reader, Writer, decode, table};
use crate::error::Result;

fn subscription_key(process_instance: Key, key: Key) -> KeyBuf {
    KeyBuf::new(table::COMPENSATION_SUBSCRIPTION)
        .key(process_instance)
        .key(key)
}

impl Reader<'_> {
    /// The compensation subscriptions of a process instance, oldest first.
    pub fn compensation_subscriptions(
        &self,
        process_instance: impl AsKey,
    ) -> Result<Vec<(Key, CompensationSubscriptionRecord)>> {
        let mut out = Vec::new();
        self.scan(
            &KeyBuf::new(table::COMPENSATION_SUBSCRIPTION).key(process_instance),
            |_, v| {
                out.push(decode(v)?);
                Ok(ControlFlow::Continue(()))
            },
        )?;
        Ok(out)
    }
}

impl Writer<'_> {
    pub fn put_compensation_subscription(
        &mut self,
        key: Key,
        record: &CompensationSubscriptionRecord,
    ) -> Result<()> {
        let instance = Key(record.process_instance_key);
        self.put(subscription_key(instance, key), &(key, record))
    }

    pub fn delete_compensation_subscription(
        &mut self,
        key: Key,
        record: &CompensationSubscriptionRecord,
    ) {
        self.delete(subscription_key(Key(record.process_instance_key), key));
    }
}
