//! The time-ordered indexes the leader polls for due work: `(due, key)` under one table
//! per kind of work.

use std::ops::ControlFlow;

use super::{AsKey, KeyBuf, Reader, keys, table};
use crate::error::{Result, inconsistent};

pub(super) fn due_key(index: DueIndex, due: i64, key: impl AsKey) -> KeyBuf {
    KeyBuf::new(index.table()).i64(due).key(key)
}

/// The time-ordered indexes the leader polls for due work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DueIndex {
    Timers,
    JobDeadlines,
    JobBackoffs,
    MessageDeadlines,
}

impl DueIndex {
    fn table(self) -> u8 {
        match self {
            DueIndex::Timers => table::TIMER_DUE,
            DueIndex::JobDeadlines => table::JOB_DEADLINE,
            DueIndex::JobBackoffs => table::JOB_BACKOFF,
            DueIndex::MessageDeadlines => table::MESSAGE_DEADLINE,
        }
    }
}

impl Reader<'_> {
    /// Visits `(due, key)` of a time index in due order until `visit` returns false.
    pub fn scan_due(&self, index: DueIndex, mut visit: impl FnMut(i64, i64) -> bool) -> Result<()> {
        self.scan_floored(&KeyBuf::new(index.table()), |k, _| {
            let due = keys::decode_i64(k, 1).ok_or_else(|| inconsistent("bad due index key"))?;
            let key = keys::decode_i64(k, 9).ok_or_else(|| inconsistent("bad due index key"))?;
            Ok(if visit(due, key) {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            })
        })
    }
}
