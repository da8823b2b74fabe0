//! Incidents by key, by process instance, by element instance and by job.

use rill_protocol::Key;
use rill_protocol::value::IncidentRecord;

use super::{AsKey, KeyBuf, Reader, StoredIncident, Writer, table};
use crate::error::{Result, inconsistent};

impl Reader<'_> {
    pub fn incident(&self, key: impl AsKey) -> Result<Option<StoredIncident>> {
        self.get(KeyBuf::new(table::INCIDENT).key(key))
    }

    pub fn incidents_of_instance(
        &self,
        process_instance_key: impl AsKey,
    ) -> Result<Vec<StoredIncident>> {
        let keys = self.trailing_keys(
            &KeyBuf::new(table::INCIDENT_BY_INSTANCE).key(process_instance_key),
            usize::MAX,
        )?;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            out.push(
                self.incident(key)?
                    .ok_or_else(|| inconsistent(format!("indexed incident {key} is missing")))?,
            );
        }
        Ok(out)
    }

    pub fn incident_of_element(&self, element_instance_key: impl AsKey) -> Result<Option<Key>> {
        let key =
            self.get_i64(KeyBuf::new(table::INCIDENT_BY_ELEMENT).key(element_instance_key))?;
        Ok(key.map(Key))
    }

    pub fn incident_of_job(&self, job_key: impl AsKey) -> Result<Option<Key>> {
        Ok(self
            .get_i64(KeyBuf::new(table::INCIDENT_BY_JOB).key(job_key))?
            .map(Key))
    }
}

impl Writer<'_> {
    pub fn put_incident(&mut self, key: impl AsKey, record: &IncidentRecord) -> Result<()> {
        let key = key.as_key().get();
        self.mark(
            KeyBuf::new(table::INCIDENT_BY_INSTANCE)
                .i64(record.process_instance_key)
                .key(key),
        );
        if record.job_key > 0 {
            self.put_i64(KeyBuf::new(table::INCIDENT_BY_JOB).i64(record.job_key), key);
        } else {
            self.put_i64(
                KeyBuf::new(table::INCIDENT_BY_ELEMENT).i64(record.element_instance_key),
                key,
            );
        }
        self.put(
            KeyBuf::new(table::INCIDENT).key(key),
            &StoredIncident {
                key: Key(key),
                record: record.clone(),
            },
        )
    }

    pub fn delete_incident(&mut self, incident: &StoredIncident) {
        let record = &incident.record;
        self.delete(
            KeyBuf::new(table::INCIDENT_BY_INSTANCE)
                .i64(record.process_instance_key)
                .key(incident.key),
        );
        if record.job_key > 0 {
            self.delete(KeyBuf::new(table::INCIDENT_BY_JOB).i64(record.job_key));
        } else {
            self.delete(KeyBuf::new(table::INCIDENT_BY_ELEMENT).i64(record.element_instance_key));
        }
        self.delete(KeyBuf::new(table::INCIDENT).key(incident.key));
    }
}
