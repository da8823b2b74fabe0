//! Signal subscriptions, found by signal name (a broadcast) and by holder (closing
//! them when the holder is left), and the last broadcast signal (the payload its
//! distribution to other partitions carries).

use std::ops::ControlFlow;

use rill_protocol::Key;
use rill_protocol::value::SignalRecord;

use super::{AsKey, KeyBuf, Reader, StoredSignalSubscription, Writer, decode, table};
use crate::error::Result;

fn subscription_key(name: &str, key: Key) -> KeyBuf {
    KeyBuf::new(table::SIGNAL_SUBSCRIPTION).str(name).key(key)
}

fn holder_key(holder: Key, key: Key) -> KeyBuf {
    KeyBuf::new(table::SIGNAL_SUBSCRIPTION_BY_HOLDER)
        .key(holder)
        .key(key)
}

impl Reader<'_> {
    /// The subscriptions to a signal name, oldest first.
    pub fn signal_subscriptions(&self, name: &str) -> Result<Vec<StoredSignalSubscription>> {
        let mut out = Vec::new();
        self.scan(
            &KeyBuf::new(table::SIGNAL_SUBSCRIPTION).str(name),
            |_, v| {
                out.push(decode(v)?);
                Ok(ControlFlow::Continue(()))
            },
        )?;
        Ok(out)
    }

    pub fn signal_subscription(
        &self,
        name: &str,
        key: impl AsKey,
    ) -> Result<Option<StoredSignalSubscription>> {
        self.get(subscription_key(name, key.as_key()))
    }

    /// The subscriptions a holder holds, oldest first.
    pub fn signal_subscriptions_of(
        &self,
        holder: impl AsKey,
    ) -> Result<Vec<StoredSignalSubscription>> {
        let mut names: Vec<(Key, String)> = Vec::new();
        let prefix = KeyBuf::new(table::SIGNAL_SUBSCRIPTION_BY_HOLDER).key(holder);
        let prefix_len = prefix.bytes().len();
        self.scan(&prefix, |k, v| {
            let key = super::keys::decode_i64(k, prefix_len)
                .ok_or_else(|| crate::error::inconsistent("bad signal subscription key"))?;
            names.push((Key(key), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        let mut out = Vec::with_capacity(names.len());
        for (key, name) in names {
            if let Some(subscription) = self.signal_subscription(&name, key)? {
                out.push(subscription);
            }
        }
        Ok(out)
    }

    /// The signal broadcast last on this partition, with its key.
    pub fn last_broadcast_signal(&self) -> Result<Option<(Key, SignalRecord)>> {
        self.get(KeyBuf::new(table::SIGNAL_LAST_BROADCAST))
    }
}

impl Writer<'_> {
    pub fn put_signal_subscription(
        &mut self,
        subscription: &StoredSignalSubscription,
    ) -> Result<()> {
        let name = &subscription.record.signal_name;
        self.put(subscription_key(name, subscription.key), subscription)?;
        self.put(holder_key(subscription.holder(), subscription.key), name)
    }

    pub fn delete_signal_subscription(&mut self, subscription: &StoredSignalSubscription) {
        self.delete(subscription_key(
            &subscription.record.signal_name,
            subscription.key,
        ));
        self.delete(holder_key(subscription.holder(), subscription.key));
    }

    pub fn set_last_broadcast_signal(&mut self, key: Key, signal: &SignalRecord) -> Result<()> {
        self.put(KeyBuf::new(table::SIGNAL_LAST_BROADCAST), &(key, signal))
    }
}
