//! Deleting deployed forms and decision requirements (with their decisions): the
//! previous version becomes the latest again, and the highest version ever deployed is
//! kept per id so that a later deployment never reuses a deleted version number.

use std::ops::ControlFlow;

use rill_protocol::Key;
use rill_protocol::value::{
    DecisionRecord, DecisionRequirementsRecord, FormRecord, ResourceDeletionRecord,
};

use super::{KeyBuf, Reader, Writer, keys, table};
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
