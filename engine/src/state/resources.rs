//! Deleting deployed process definitions, forms and decision requirements (with their
//! decisions): the previous version becomes the latest again, and the highest version
//! ever deployed is kept per id so that a later deployment never reuses a deleted
//! version number. A process definition with active instances is kept (marked as
//! deleting) until its last instance on the partition ends; the number of its active
//! instances is counted here by the appliers that start and end them.

use std::ops::ControlFlow;

use rill_protocol::Key;
use rill_protocol::value::{
    DecisionRecord, DecisionRequirementsRecord, FormRecord, ProcessRecord, ResourceDeletionRecord,
};

use super::{AsKey, KeyBuf, Reader, Writer, keys, table};
use crate::error::{Result, inconsistent};

impl Reader<'_> {
    /// The highest version of an id ever deployed in `highest_table`, deleted or not;
    /// `latest` covers state written before that table was kept.
    fn highest_version(
        &self,
        highest_table: u8,
        id: &str,
        latest: Option<(i32, Key)>,
    ) -> Result<Option<i32>> {
        let highest: Option<i32> = self.get(KeyBuf::new(highest_table).str(id))?;
        Ok(highest.max(latest.map(|(version, _)| version)))
    }

    pub fn highest_process_version(&self, bpmn_process_id: &str) -> Result<Option<i32>> {
        let latest = self.latest_process(bpmn_process_id)?;
        self.highest_version(table::PROCESS_HIGHEST, bpmn_process_id, latest)
    }

    /// How many instances of a process definition are active on this partition.
    pub fn running_instances(&self, definition_key: impl AsKey) -> Result<u64> {
        Ok(self
            .get(KeyBuf::new(table::PROCESS_RUNNING).key(definition_key))?
            .unwrap_or(0))
    }

    /// Whether a process definition is deleted and waits for its last instance to end:
    /// no new instance of it may start.
    pub fn is_process_deleting(&self, definition_key: impl AsKey) -> Result<bool> {
        self.exists(KeyBuf::new(table::PROCESS_DELETING).key(definition_key))
    }

    /// Whether new instances may start from a process definition: deployed and not
    /// deleted.
    pub fn is_process_startable(&self, definition_key: impl AsKey) -> Result<bool> {
        Ok(
            self.exists(KeyBuf::new(table::PROCESS).key(definition_key))?
                && !self.is_process_deleting(definition_key)?,
        )
    }

    pub fn highest_form_version(&self, form_id: &str) -> Result<Option<i32>> {
        let latest = self.latest_form(form_id)?;
        self.highest_version(table::FORM_HIGHEST, form_id, latest)
    }

    pub fn highest_decision_version(&self, decision_id: &str) -> Result<Option<i32>> {
        let latest = self.latest_decision(decision_id)?;
        self.highest_version(table::DECISION_HIGHEST, decision_id, latest)
    }

    pub fn highest_decision_requirements_version(&self, id: &str) -> Result<Option<i32>> {
        let latest = self.latest_decision_requirements(id)?;
        self.highest_version(table::DECISION_REQUIREMENTS_HIGHEST, id, latest)
    }

    /// The decisions a decision requirements graph holds, by key.
    pub fn decisions_of_requirements(&self, requirements_key: i64) -> Result<Vec<Key>> {
        let prefix = KeyBuf::new(table::DECISION_BY_REQUIREMENTS).i64(requirements_key);
        Ok(self
            .trailing_keys(&prefix, usize::MAX)?
            .into_iter()
            .map(Key)
            .collect())
    }

    /// The deployments and resource deletions made on partition `origin` (their keys
    /// name it), in the order they were made: what a partition added later must get.
    pub fn distributed_resources(&self, origin: u16) -> Result<Vec<(Key, bool)>> {
        let mut made = Vec::new();
        for (table, is_deployment) in [(table::DEPLOYMENT, true), (table::RESOURCE_DELETION, false)]
        {
            for key in self.trailing_keys(&KeyBuf::new(table), usize::MAX)? {
                let key = Key(key);
                if key.partition().get() == origin {
                    made.push((key, is_deployment));
                }
            }
        }
        made.sort_by_key(|(key, _)| key.get());
        Ok(made)
    }

    pub fn resource_deletion(&self, key: Key) -> Result<Option<ResourceDeletionRecord>> {
        self.get(KeyBuf::new(table::RESOURCE_DELETION).key(key))
    }

    /// The highest remaining `(version, key)` under a `(id, version) -> key` index.
    fn last_version(&self, prefix: &KeyBuf) -> Result<Option<(i32, i64)>> {
        let mut last = None;
        let id_end = prefix.bytes().len();
        self.scan(prefix, |k, v| {
            let raw: [u8; 4] = k
                .get(id_end..id_end + 4)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| inconsistent("bad version index key"))?;
            let version = (u32::from_be_bytes(raw) ^ (1 << 31)) as i32;
            let key = keys::decode_i64(v, 0).ok_or_else(|| inconsistent("bad version index"))?;
            last = Some((version, key));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(last)
    }
}

impl Writer<'_> {
    /// Raises the highest version kept for `id` in `highest_table` to `version`.
    pub(super) fn note_highest(&mut self, highest_table: u8, id: &str, version: i32) -> Result<()> {
        let highest: Option<i32> = self.read().get(KeyBuf::new(highest_table).str(id))?;
        if highest.is_none_or(|h| h < version) {
            self.put(KeyBuf::new(highest_table).str(id), &version)?;
        }
        Ok(())
    }

    /// Removes one version from a `(id, version) -> key` index and points `latest_table`
    /// at the highest remaining version, or at nothing.
    fn remove_version(
        &mut self,
        version_table: u8,
        latest_table: u8,
        highest_table: u8,
        id: &str,
        version: i32,
    ) -> Result<()> {
        self.note_highest(highest_table, id, version)?;
        self.delete(KeyBuf::new(version_table).str(id).i32(version));
        let remaining = self
            .read()
            .last_version(&KeyBuf::new(version_table).str(id))?;
        match remaining {
            Some(latest) => self.put(KeyBuf::new(latest_table).str(id), &latest)?,
            None => self.delete(KeyBuf::new(latest_table).str(id)),
        }
        Ok(())
    }

    /// One more instance of a definition is active (kept in the same write batch as
    /// the instance itself).
    pub fn count_instance_started(&mut self, definition_key: impl AsKey) -> Result<()> {
        let running = self.read().running_instances(definition_key)?;
        self.put(
            KeyBuf::new(table::PROCESS_RUNNING).key(definition_key),
            &(running + 1),
        )
    }

    pub fn count_instance_ended(&mut self, definition_key: impl AsKey) -> Result<()> {
        let running = self.read().running_instances(definition_key)?;
        let key = KeyBuf::new(table::PROCESS_RUNNING).key(definition_key);
        if running <= 1 {
            self.delete(key);
            Ok(())
        } else {
            self.put(key, &(running - 1))
        }
    }

    /// `PROCESS DELETING`: the definition leaves its version index (the previous
    /// version becomes the latest) and starts no more instances; its record stays for
    /// the instances still active.
    pub fn mark_process_deleting(&mut self, record: &ProcessRecord) -> Result<()> {
        self.mark(KeyBuf::new(table::PROCESS_DELETING).i64(record.process_definition_key));
        self.remove_version(
            table::PROCESS_VERSION,
            table::PROCESS_LATEST,
            table::PROCESS_HIGHEST,
            &record.bpmn_process_id,
            record.version,
        )
    }

    /// `PROCESS DELETED`: the definition is gone from this partition.
    pub fn delete_process(&mut self, record: &ProcessRecord) -> Result<()> {
        let key = record.process_definition_key;
        self.delete(KeyBuf::new(table::PROCESS_DELETING).i64(key));
        self.delete(KeyBuf::new(table::PROCESS_RUNNING).i64(key));
        self.delete(KeyBuf::new(table::PROCESS).i64(key));
        self.delete(KeyBuf::new(table::PROCESS_DEPLOYMENT).i64(key));
        Ok(())
    }

    pub fn delete_form(&mut self, record: &FormRecord) -> Result<()> {
        self.delete(KeyBuf::new(table::FORM).i64(record.form_key));
        self.remove_version(
            table::FORM_VERSION,
            table::FORM_LATEST,
            table::FORM_HIGHEST,
            &record.form_id,
            record.version,
        )
    }

    pub fn delete_decision(&mut self, record: &DecisionRecord) -> Result<()> {
        self.delete(KeyBuf::new(table::DECISION).i64(record.decision_key));
        self.delete(
            KeyBuf::new(table::DECISION_BY_REQUIREMENTS)
                .i64(record.decision_requirements_key)
                .i64(record.decision_key),
        );
        self.remove_version(
            table::DECISION_VERSION,
            table::DECISION_LATEST,
            table::DECISION_HIGHEST,
            &record.decision_id,
            record.version,
        )
    }

    pub fn delete_decision_requirements(
        &mut self,
        record: &DecisionRequirementsRecord,
    ) -> Result<()> {
        self.delete(
            KeyBuf::new(table::DECISION_REQUIREMENTS).i64(record.decision_requirements_key),
        );
        self.remove_version(
            table::DECISION_REQUIREMENTS_VERSION,
            table::DECISION_REQUIREMENTS_LATEST,
            table::DECISION_REQUIREMENTS_HIGHEST,
            &record.decision_requirements_id,
            record.decision_requirements_version,
        )
    }

    pub fn put_resource_deletion(
        &mut self,
        key: Key,
        record: &ResourceDeletionRecord,
    ) -> Result<()> {
        self.put(KeyBuf::new(table::RESOURCE_DELETION).key(key), record)
    }
}
