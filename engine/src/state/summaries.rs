//! Instance summaries (kept for reads until their retention ends, by end date) and the
//! clients awaiting an instance's result.

use super::{
    AsKey, AwaitRegistration, DueIndex, InstanceSummary, KeyBuf, Reader, Writer, due_key, table,
};
use crate::error::Result;

impl Reader<'_> {
    pub fn summary(&self, process_instance_key: impl AsKey) -> Result<Option<InstanceSummary>> {
        self.get(KeyBuf::new(table::INSTANCE_SUMMARY).key(process_instance_key))
    }

    pub fn await_registration(
        &self,
        process_instance_key: impl AsKey,
    ) -> Result<Option<AwaitRegistration>> {
        self.get(KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key))
    }
}

impl Writer<'_> {
    pub fn put_summary(&mut self, summary: &InstanceSummary) -> Result<()> {
        if summary.end_date >= 0 {
            self.mark(due_key(
                DueIndex::FinishedInstances,
                summary.end_date,
                summary.process_instance_key,
            ));
        }
        self.put(
            KeyBuf::new(table::INSTANCE_SUMMARY).i64(summary.process_instance_key.get()),
            summary,
        )
    }

    pub fn delete_summary(&mut self, summary: &InstanceSummary) {
        if summary.end_date >= 0 {
            self.delete(due_key(
                DueIndex::FinishedInstances,
                summary.end_date,
                summary.process_instance_key,
            ));
        }
        self.delete(KeyBuf::new(table::INSTANCE_SUMMARY).i64(summary.process_instance_key.get()));
    }

    pub fn put_await_registration(
        &mut self,
        process_instance_key: impl AsKey,
        registration: &AwaitRegistration,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key),
            registration,
        )
    }

    pub fn delete_await_registration(&mut self, process_instance_key: impl AsKey) {
        self.delete(KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key));
    }
}
