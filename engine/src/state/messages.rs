//! Published messages (by key, by name and correlation key, by message id, with their
//! deadlines), the message start events waiting for them, and which instances of a
//! process a message already started or correlated to.

use std::ops::ControlFlow;

use rill_protocol::Key;

use super::{
    AsKey, DueIndex, KeyBuf, MessageStartSubscription, Reader, StoredMessage, Writer, decode,
    due_key, table,
};
use crate::error::Result;

impl Reader<'_> {
    pub fn message(&self, key: impl AsKey) -> Result<Option<StoredMessage>> {
        self.get(KeyBuf::new(table::MESSAGE).key(key))
    }

    /// Buffered messages for a name and correlation key, oldest first.
    pub fn messages_for(&self, name: &str, correlation_key: &str) -> Result<Vec<Key>> {
        let keys = self.trailing_keys(
            &KeyBuf::new(table::MESSAGE_BY_NAME)
                .str(name)
                .str(correlation_key),
            usize::MAX,
        )?;
        Ok(keys.into_iter().map(Key).collect())
    }

    pub fn message_with_id(
        &self,
        name: &str,
        correlation_key: &str,
        id: &str,
    ) -> Result<Option<i64>> {
        self.get_i64(
            KeyBuf::new(table::MESSAGE_ID)
                .str(name)
                .str(correlation_key)
                .str(id),
        )
    }

    /// Whether the message was already correlated to an instance of this process.
    /// The message start events a message of this name starts, by process id.
    pub fn message_start_subscriptions(&self, name: &str) -> Result<Vec<MessageStartSubscription>> {
        let mut out = Vec::new();
        self.scan(&KeyBuf::new(table::MESSAGE_START).str(name), |_, v| {
            out.push(decode(v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// The message names whose start events a process's latest version has.
    pub fn message_start_names(&self, bpmn_process_id: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        self.scan(
            &KeyBuf::new(table::MESSAGE_START_BY_PROCESS).str(bpmn_process_id),
            |_, v| {
                out.push(decode(v)?);
                Ok(ControlFlow::Continue(()))
            },
        )?;
        Ok(out)
    }

    /// The active instance of a process that a message with this correlation key started.
    pub fn message_start_lock(
        &self,
        bpmn_process_id: &str,
        correlation_key: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::MESSAGE_START_LOCK)
                    .str(bpmn_process_id)
                    .str(correlation_key),
            )?
            .map(Key))
    }

    pub fn message_correlated(
        &self,
        message_key: impl AsKey,
        bpmn_process_id: &str,
    ) -> Result<bool> {
        self.exists(
            KeyBuf::new(table::MESSAGE_CORRELATED)
                .key(message_key)
                .str(bpmn_process_id),
        )
    }
}

impl Writer<'_> {
    pub fn put_message(&mut self, message: &StoredMessage) -> Result<()> {
        let r = &message.record;
        self.mark(
            KeyBuf::new(table::MESSAGE_BY_NAME)
                .str(&r.name)
                .str(&r.correlation_key)
                .key(message.key),
        );
        self.mark(due_key(DueIndex::MessageDeadlines, r.deadline, message.key));
        if !r.message_id.is_empty() {
            self.put_i64(
                KeyBuf::new(table::MESSAGE_ID)
                    .str(&r.name)
                    .str(&r.correlation_key)
                    .str(&r.message_id),
                message.key.get(),
            );
        }
        self.put(KeyBuf::new(table::MESSAGE).key(message.key), message)
    }

    pub fn delete_message(&mut self, message: &StoredMessage) -> Result<()> {
        let r = &message.record;
        self.delete(
            KeyBuf::new(table::MESSAGE_BY_NAME)
                .str(&r.name)
                .str(&r.correlation_key)
                .key(message.key),
        );
        self.delete(due_key(DueIndex::MessageDeadlines, r.deadline, message.key));
        if !r.message_id.is_empty() {
            self.delete(
                KeyBuf::new(table::MESSAGE_ID)
                    .str(&r.name)
                    .str(&r.correlation_key)
                    .str(&r.message_id),
            );
        }
        self.delete_prefix(KeyBuf::new(table::MESSAGE_CORRELATED).key(message.key))?;
        self.delete(KeyBuf::new(table::MESSAGE).key(message.key));
        Ok(())
    }

    /// The message start events of a process's new latest version replace the previous
    /// version's.
    pub fn replace_message_starts(
        &mut self,
        bpmn_process_id: &str,
        starts: &[MessageStartSubscription],
        names: &[String],
    ) -> Result<()> {
        for old in self.read().message_start_names(bpmn_process_id)? {
            self.delete(
                KeyBuf::new(table::MESSAGE_START)
                    .str(&old)
                    .str(bpmn_process_id),
            );
            self.delete(
                KeyBuf::new(table::MESSAGE_START_BY_PROCESS)
                    .str(bpmn_process_id)
                    .str(&old),
            );
        }
        for (start, name) in starts.iter().zip(names) {
            self.put(
                KeyBuf::new(table::MESSAGE_START)
                    .str(name)
                    .str(bpmn_process_id),
                start,
            )?;
            self.put(
                KeyBuf::new(table::MESSAGE_START_BY_PROCESS)
                    .str(bpmn_process_id)
                    .str(name),
                name,
            )?;
        }
        Ok(())
    }

    pub fn put_message_start_lock(
        &mut self,
        bpmn_process_id: &str,
        correlation_key: &str,
        instance: impl AsKey,
    ) {
        self.put_i64(
            KeyBuf::new(table::MESSAGE_START_LOCK)
                .str(bpmn_process_id)
                .str(correlation_key),
            instance.as_key().get(),
        );
    }

    pub fn delete_message_start_lock(&mut self, bpmn_process_id: &str, correlation_key: &str) {
        self.delete(
            KeyBuf::new(table::MESSAGE_START_LOCK)
                .str(bpmn_process_id)
                .str(correlation_key),
        );
    }

    pub fn mark_message_correlated(&mut self, message_key: impl AsKey, bpmn_process_id: &str) {
        self.mark(
            KeyBuf::new(table::MESSAGE_CORRELATED)
                .key(message_key)
                .str(bpmn_process_id),
        );
    }

    pub fn unmark_message_correlated(&mut self, message_key: impl AsKey, bpmn_process_id: &str) {
        self.delete(
            KeyBuf::new(table::MESSAGE_CORRELATED)
                .key(message_key)
                .str(bpmn_process_id),
        );
    }
}
