//! Deployed process definitions, decisions and decision requirements by key, by id and
//! version (the latest version too), and the deployments that hold them.

use rill_protocol::Key;
use rill_protocol::value::{DecisionRecord, DecisionRequirementsRecord, ProcessRecord};

use super::{AsKey, KeyBuf, Reader, Writer, table};
use crate::error::Result;

impl Reader<'_> {
    pub fn process(&self, key: impl AsKey) -> Result<Option<ProcessRecord>> {
        self.get(KeyBuf::new(table::PROCESS).key(key))
    }

    pub fn process_key_by_version(
        &self,
        bpmn_process_id: &str,
        version: i32,
    ) -> Result<Option<Key>> {
        let key = self.get_i64(
            KeyBuf::new(table::PROCESS_VERSION)
                .str(bpmn_process_id)
                .i32(version),
        )?;
        Ok(key.map(Key))
    }

    /// The latest version of a process id and its definition key.
    pub fn latest_process(&self, bpmn_process_id: &str) -> Result<Option<(i32, Key)>> {
        self.get(KeyBuf::new(table::PROCESS_LATEST).str(bpmn_process_id))
    }

    /// The deployment that created a process definition.
    pub fn deployment_of_process(&self, definition_key: impl AsKey) -> Result<Option<Key>> {
        Ok(self
            .get_i64(KeyBuf::new(table::PROCESS_DEPLOYMENT).key(definition_key))?
            .map(Key))
    }

    /// The definition of `bpmn_process_id` that a deployment deployed, if any.
    pub fn process_in_deployment(
        &self,
        deployment_key: impl AsKey,
        bpmn_process_id: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::DEPLOYMENT_PROCESS)
                    .key(deployment_key)
                    .str(bpmn_process_id),
            )?
            .map(Key))
    }

    pub fn deployment(
        &self,
        key: impl AsKey,
    ) -> Result<Option<rill_protocol::value::DeploymentRecord>> {
        self.get(KeyBuf::new(table::DEPLOYMENT).key(key))
    }

    pub fn decision(&self, key: impl AsKey) -> Result<Option<DecisionRecord>> {
        self.get(KeyBuf::new(table::DECISION).key(key))
    }

    pub fn decision_key_by_version(&self, decision_id: &str, version: i32) -> Result<Option<Key>> {
        let key = self.get_i64(
            KeyBuf::new(table::DECISION_VERSION)
                .str(decision_id)
                .i32(version),
        )?;
        Ok(key.map(Key))
    }

    /// The latest version of a decision id and its key.
    pub fn latest_decision(&self, decision_id: &str) -> Result<Option<(i32, Key)>> {
        self.get(KeyBuf::new(table::DECISION_LATEST).str(decision_id))
    }

    pub fn decision_requirements(
        &self,
        key: impl AsKey,
    ) -> Result<Option<DecisionRequirementsRecord>> {
        self.get(KeyBuf::new(table::DECISION_REQUIREMENTS).key(key))
    }

    /// The latest version of a decision requirements id and its key.
    pub fn latest_decision_requirements(&self, id: &str) -> Result<Option<(i32, Key)>> {
        self.get(KeyBuf::new(table::DECISION_REQUIREMENTS_LATEST).str(id))
    }

    /// The decision with this id that a deployment deployed, if any.
    pub fn decision_in_deployment(
        &self,
        deployment_key: impl AsKey,
        decision_id: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::DEPLOYMENT_DECISION)
                    .key(deployment_key)
                    .str(decision_id),
            )?
            .map(Key))
    }
}

impl Writer<'_> {
    pub fn put_process(&mut self, record: &ProcessRecord) -> Result<()> {
        let key = record.process_definition_key;
        self.put(KeyBuf::new(table::PROCESS).key(key), record)?;
        self.put_i64(
            KeyBuf::new(table::PROCESS_VERSION)
                .str(&record.bpmn_process_id)
                .i32(record.version),
            key,
        );
        let newer = match self.read().latest_process(&record.bpmn_process_id)? {
            Some((version, _)) => record.version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::PROCESS_LATEST).str(&record.bpmn_process_id),
                &(record.version, key),
            )?;
        }
        Ok(())
    }

    pub fn put_decision(&mut self, record: &DecisionRecord) -> Result<()> {
        let key = record.decision_key;
        self.put(KeyBuf::new(table::DECISION).key(key), record)?;
        self.put_i64(
            KeyBuf::new(table::DECISION_VERSION)
                .str(&record.decision_id)
                .i32(record.version),
            key,
        );
        self.note_highest(table::DECISION_HIGHEST, &record.decision_id, record.version)?;
        self.mark(
            KeyBuf::new(table::DECISION_BY_REQUIREMENTS)
                .i64(record.decision_requirements_key)
                .i64(key),
        );
        let newer = match self.read().latest_decision(&record.decision_id)? {
            Some((version, _)) => record.version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::DECISION_LATEST).str(&record.decision_id),
                &(record.version, key),
            )?;
        }
        Ok(())
    }

    pub fn put_decision_requirements(&mut self, record: &DecisionRequirementsRecord) -> Result<()> {
        let key = record.decision_requirements_key;
        self.put(KeyBuf::new(table::DECISION_REQUIREMENTS).key(key), record)?;
        let id = &record.decision_requirements_id;
        let version = record.decision_requirements_version;
        self.put_i64(
            KeyBuf::new(table::DECISION_REQUIREMENTS_VERSION)
                .str(id)
                .i32(version),
            key,
        );
        self.note_highest(table::DECISION_REQUIREMENTS_HIGHEST, id, version)?;
        let newer = match self.read().latest_decision_requirements(id)? {
            Some((version, _)) => record.decision_requirements_version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::DECISION_REQUIREMENTS_LATEST).str(id),
                &(record.decision_requirements_version, key),
            )?;
        }
        Ok(())
    }

    pub fn put_deployment(
        &mut self,
        key: impl AsKey,
        record: &rill_protocol::value::DeploymentRecord,
    ) -> Result<()> {
        self.put(KeyBuf::new(table::DEPLOYMENT).key(key), record)?;
        for form in &record.form_metadata {
            self.put_deployment_form(key, &form.form_id, form.form_key);
        }
        for resource in &record.resource_metadata {
            self.put_deployment_resource(key, &resource.resource_id, resource.resource_key);
        }
        for process in &record.processes_metadata {
            self.put_i64(
                KeyBuf::new(table::DEPLOYMENT_PROCESS)
                    .key(key)
                    .str(&process.bpmn_process_id),
                process.process_definition_key,
            );
            if !process.is_duplicate {
                self.put_i64(
                    KeyBuf::new(table::PROCESS_DEPLOYMENT).i64(process.process_definition_key),
                    key.as_key().get(),
                );
            }
        }
        for decision in &record.decisions_metadata {
            self.put_i64(
                KeyBuf::new(table::DEPLOYMENT_DECISION)
                    .key(key)
                    .str(&decision.decision_id),
                decision.decision_key,
            );
        }
        Ok(())
    }
}
