//! The outbox and inbox of commands between partitions: what this partition sent and
//! waits to have acknowledged, and the last sequence it took from each other partition.

use std::ops::ControlFlow;

use super::{KeyBuf, OutboxEntry, Reader, Writer, decode, keys, table};
use crate::error::{Result, inconsistent};

impl Reader<'_> {
    /// Pending sends in order: `(target partition, sequence, entry)`.
    pub fn outbox(&self, limit: usize) -> Result<Vec<(u16, u64, OutboxEntry)>> {
        let mut out = Vec::new();
        self.scan(&KeyBuf::new(table::OUTBOX), |k, v| {
            if out.len() >= limit {
                return Ok(ControlFlow::Break(()));
            }
            let target = keys::decode_i64(k, 1).ok_or_else(|| inconsistent("bad outbox key"))?;
            let sequence = keys::decode_i64(k, 9).ok_or_else(|| inconsistent("bad outbox key"))?;
            out.push((target as u16, sequence as u64, decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    pub fn outbox_entry(&self, target: u16, sequence: u64) -> Result<Option<OutboxEntry>> {
        self.get(
            KeyBuf::new(table::OUTBOX)
                .i64(i64::from(target))
                .i64(sequence as i64),
        )
    }

    /// The last sequence number used for sends to `target`.
    pub fn outbox_sequence(&self, target: u16) -> Result<u64> {
        Ok(self
            .get::<u64>(KeyBuf::new(table::OUTBOX_SEQUENCE).i64(i64::from(target)))?
            .unwrap_or(0))
    }

    /// The last sequence number applied from `source`.
    pub fn inbox_sequence(&self, source: u16) -> Result<u64> {
        Ok(self
            .get::<u64>(KeyBuf::new(table::INBOX).i64(i64::from(source)))?
            .unwrap_or(0))
    }
}

impl Writer<'_> {
    /// Queues a command for `target` under the next sequence number.
    pub fn push_outbox(&mut self, target: u16, entry: &OutboxEntry) -> Result<u64> {
        let sequence = self.read().outbox_sequence(target)? + 1;
        self.put(
            KeyBuf::new(table::OUTBOX_SEQUENCE).i64(i64::from(target)),
            &sequence,
        )?;
        self.put(
            KeyBuf::new(table::OUTBOX)
                .i64(i64::from(target))
                .i64(sequence as i64),
            entry,
        )?;
        Ok(sequence)
    }

    pub fn remove_outbox(&mut self, target: u16, sequence: u64) {
        self.delete(
            KeyBuf::new(table::OUTBOX)
                .i64(i64::from(target))
                .i64(sequence as i64),
        );
    }

    pub fn set_inbox_sequence(&mut self, source: u16, sequence: u64) -> Result<()> {
        self.put(KeyBuf::new(table::INBOX).i64(i64::from(source)), &sequence)
    }
}
