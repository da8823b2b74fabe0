//! Timers by key with their due index, and the triggers an element instance holds
//! (timers and subscriptions opened for its boundary events and event subprocesses).

use std::ops::ControlFlow;

use rill_protocol::Key;
use rill_protocol::value::TimerRecord;

use super::{
    AsKey, DueIndex, KeyBuf, PendingTrigger, Reader, Writer, decode, due_key, keys, table,
};
use crate::error::{Result, inconsistent};

impl Reader<'_> {
    pub fn timer(&self, key: impl AsKey) -> Result<Option<TimerRecord>> {
        self.get(KeyBuf::new(table::TIMER).key(key))
    }

    /// The event triggers kept for the holder `holder`, by process event key.
    pub fn pending_triggers(&self, holder: impl AsKey) -> Result<Vec<(Key, PendingTrigger)>> {
        let prefix = KeyBuf::new(table::PENDING_TRIGGER).key(holder);
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let key = keys::trailing_i64(k).ok_or_else(|| inconsistent("short trigger key"))?;
            out.push((Key(key), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn timers_of_element(&self, element_instance_key: impl AsKey) -> Result<Vec<Key>> {
        let keys = self.trailing_keys(
            &KeyBuf::new(table::TIMER_BY_ELEMENT).key(element_instance_key),
            usize::MAX,
        )?;
        Ok(keys.into_iter().map(Key).collect())
    }
}

impl Writer<'_> {
    pub fn put_pending_trigger(
        &mut self,
        holder: impl AsKey,
        key: impl AsKey,
        trigger: &PendingTrigger,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::PENDING_TRIGGER).key(holder).key(key),
            trigger,
        )
    }

    pub fn delete_pending_trigger(&mut self, holder: impl AsKey, key: impl AsKey) {
        self.delete(KeyBuf::new(table::PENDING_TRIGGER).key(holder).key(key));
    }

    pub fn delete_pending_triggers(&mut self, holder: impl AsKey) -> Result<()> {
        self.delete_prefix(KeyBuf::new(table::PENDING_TRIGGER).key(holder))
    }

    pub fn put_timer(&mut self, key: impl AsKey, timer: &TimerRecord) -> Result<()> {
        self.mark(due_key(DueIndex::Timers, timer.due_date, key));
        self.mark(
            KeyBuf::new(table::TIMER_BY_ELEMENT)
                .i64(timer.element_instance_key)
                .key(key),
        );
        self.put(KeyBuf::new(table::TIMER).key(key), timer)
    }

    pub fn delete_timer(&mut self, key: impl AsKey, timer: &TimerRecord) {
        self.delete(due_key(DueIndex::Timers, timer.due_date, key));
        self.delete(
            KeyBuf::new(table::TIMER_BY_ELEMENT)
                .i64(timer.element_instance_key)
                .key(key),
        );
        self.delete(KeyBuf::new(table::TIMER).key(key));
    }
}
