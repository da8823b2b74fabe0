//! Jobs by key, with the indexes kept from their state: activatable jobs by type, and
//! the deadlines and back-offs the leader polls.

use rill_protocol::Key;

use super::{AsKey, DueIndex, JobState, KeyBuf, Reader, StoredJob, Writer, due_key, table};
use crate::error::Result;

impl Reader<'_> {
    pub fn job(&self, key: impl AsKey) -> Result<Option<StoredJob>> {
        let mut job: Option<StoredJob> = self.get(KeyBuf::new(table::JOB).key(key))?;
        if let Some(job) = &mut job {
            job.record.variables = rill_protocol::JsonValue::empty_object();
        }
        Ok(job)
    }

    /// Activatable jobs of a type, oldest first.
    pub fn activatable_jobs(&self, job_type: &str, limit: usize) -> Result<Vec<Key>> {
        let keys = self.trailing_keys_from(
            &KeyBuf::new(table::JOB_ACTIVATABLE).str(job_type),
            limit,
            true,
        )?;
        Ok(keys.into_iter().map(Key).collect())
    }
}

impl Writer<'_> {
    /// Stores a job and keeps its indexes in line with its state.
    /// Stores a job (without its variables) and keeps its indexes in line with its
    /// state; `previous` is what was stored before, if anything.
    pub fn put_job(
        &mut self,
        key: impl AsKey,
        state: JobState,
        record: &rill_protocol::value::JobRecord,
        previous: Option<&StoredJob>,
    ) -> Result<()> {
        if let Some(previous) = previous {
            self.unindex_job(key, previous);
        }
        self.index_job(key, state, record);
        self.put(
            KeyBuf::new(table::JOB).key(key),
            &super::types::StoredJobRef::new(state, record),
        )
    }

    /// Removes every index entry a job with this record can have, without reading
    /// its stored state (the record carries the type, deadline and back-off time).
    pub fn unindex_job_record(
        &mut self,
        key: impl AsKey,
        record: &rill_protocol::value::JobRecord,
    ) {
        // An activated job (it has a deadline) is never in the activatable index.
        if record.deadline >= 0 {
            self.delete(due_key(DueIndex::JobDeadlines, record.deadline, key));
        } else {
            self.delete(
                KeyBuf::new(table::JOB_ACTIVATABLE)
                    .str(&record.job_type)
                    .key(key),
            );
        }
        if record.recurring_time >= 0 {
            self.delete(due_key(DueIndex::JobBackoffs, record.recurring_time, key));
        }
    }

    pub fn remove_activatable(&mut self, key: impl AsKey, job_type: &str) {
        self.delete(KeyBuf::new(table::JOB_ACTIVATABLE).str(job_type).key(key));
    }

    pub fn delete_job_record(&mut self, key: impl AsKey, record: &rill_protocol::value::JobRecord) {
        self.unindex_job_record(key, record);
        self.delete(KeyBuf::new(table::JOB).key(key));
    }

    fn index_job(
        &mut self,
        key: impl AsKey,
        state: JobState,
        record: &rill_protocol::value::JobRecord,
    ) {
        match state {
            JobState::Activatable => self.mark(
                KeyBuf::new(table::JOB_ACTIVATABLE)
                    .str(&record.job_type)
                    .key(key),
            ),
            JobState::Activated => self.mark(due_key(DueIndex::JobDeadlines, record.deadline, key)),
            JobState::Failed if record.retries > 0 && record.recurring_time >= 0 => {
                self.mark(due_key(DueIndex::JobBackoffs, record.recurring_time, key))
            }
            JobState::Failed | JobState::ErrorThrown => {}
        }
    }

    fn unindex_job(&mut self, key: impl AsKey, job: &StoredJob) {
        match job.state {
            JobState::Activatable => self.delete(
                KeyBuf::new(table::JOB_ACTIVATABLE)
                    .str(&job.record.job_type)
                    .key(key),
            ),
            JobState::Activated => {
                self.delete(due_key(DueIndex::JobDeadlines, job.record.deadline, key))
            }
            JobState::Failed if job.record.retries > 0 && job.record.recurring_time >= 0 => self
                .delete(due_key(
                    DueIndex::JobBackoffs,
                    job.record.recurring_time,
                    key,
                )),
            JobState::Failed | JobState::ErrorThrown => {}
        }
    }
}
