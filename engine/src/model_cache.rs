//! Parsed process definitions, cached by definition key.
//!
//! The cache is derived state: state keeps the deployed XML, and a miss parses it
//! again. Lookups only (no iteration), so the map's order never matters.

use std::collections::HashMap;
use std::sync::Arc;

use rill_protocol::Key;

use crate::dmn::DecisionRequirements;
use crate::error::{Error, Result};
use crate::model::{ElementKind, ProcessModel};
use crate::state::{AsKey, Reader};

/// A deployed process: its model plus the identity records need.
#[derive(Debug)]
pub struct DeployedProcess {
    pub key: Key,
    pub version: i32,
    pub model: ProcessModel,
    /// Zeebe's "lexicographic index" of each call activity of this process, by element
    /// id (the `callingElementPath` of the instances it calls).
    call_activity_indexes: HashMap<String, i32>,
}

impl DeployedProcess {
    /// `resource_call_activities`: [`call_activity_ids`] of the resource that defines
    /// `model`.
    pub fn new(
        key: Key,
        version: i32,
        model: ProcessModel,
        resource_call_activities: &[String],
    ) -> DeployedProcess {
        let call_activity_indexes = model
            .elements
            .iter()
            .filter(|e| matches!(e.kind, ElementKind::CallActivity(_)))
            .filter_map(|e| {
                let index = resource_call_activities
                    .binary_search_by(|id| java_order(id, &e.id))
                    .ok()?;
                Some((e.id.clone(), i32::try_from(index).ok()?))
            })
            .collect();
        DeployedProcess {
            key,
            version,
            model,
            call_activity_indexes,
        }
    }

    /// The lexicographic index of the call activity `element_id`; -1 for an element
    /// that is none (Zeebe's default for an index it never set).
    pub fn call_activity_index(&self, element_id: &str) -> i32 {
        self.call_activity_indexes
            .get(element_id)
            .copied()
            .unwrap_or(-1)
    }
}

/// The ids of the call activities of all processes of one BPMN resource (subprocesses
/// included), sorted as Zeebe sorts them: a call activity's index in this list is its
/// "lexicographic index".
pub fn call_activity_ids(models: &[ProcessModel]) -> Vec<String> {
    let mut ids: Vec<String> = models
        .iter()
        .flat_map(|m| &m.elements)
        .filter(|e| matches!(e.kind, ElementKind::CallActivity(_)))
        .map(|e| e.id.clone())
        .collect();
    ids.sort_by(|a, b| java_order(a, b));
    ids
}

/// Java's `String.compareTo`: by UTF-16 code units, which differs from Rust's byte order
/// for characters beyond the Basic Multilingual Plane.
fn java_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

#[derive(Default)]
pub(crate) struct ModelCache {
    models: HashMap<Key, Arc<DeployedProcess>>,
    /// Latest `(version, key)` per process id, as read from state.
    latest: HashMap<String, (i32, Key)>,
    /// Parsed DMN resources by decision requirements key.
    decision_requirements: HashMap<Key, Arc<DecisionRequirements>>,
}

impl ModelCache {
    pub fn get(&mut self, state: Reader<'_>, key: impl AsKey) -> Result<Arc<DeployedProcess>> {
        let key = key.as_key();
        if let Some(found) = self.models.get(&key) {
            return Ok(found.clone());
        }
        let record = state.process(key)?.ok_or_else(|| Error::Definition {
            key,
            reason: "no such process definition in state".to_owned(),
        })?;
        let models = crate::parse_bpmn(&record.resource_name, &record.resource.0)
            .map_err(|source| Error::Unparsable { key, source })?;
        let call_activities = call_activity_ids(&models);
        let model = models
            .into_iter()
            .find(|m| m.bpmn_process_id == record.bpmn_process_id)
            .ok_or_else(|| Error::Definition {
                key,
                reason: format!(
                    "the resource no longer defines '{}'",
                    record.bpmn_process_id
                ),
            })?;
        let deployed = Arc::new(DeployedProcess::new(
            key,
            record.version,
            model,
            &call_activities,
        ));
        self.models.insert(key, deployed.clone());
        Ok(deployed)
    }

    pub fn insert(&mut self, deployed: DeployedProcess) {
        let id = deployed.model.bpmn_process_id.clone();
        // A new version is the latest one: forget the cached answer.
        self.latest.remove(&id);
        self.models.insert(deployed.key, Arc::new(deployed));
    }

    /// The latest version of a process id and its key.
    pub fn latest(
        &mut self,
        state: Reader<'_>,
        bpmn_process_id: &str,
    ) -> Result<Option<(i32, Key)>> {
        if let Some(found) = self.latest.get(bpmn_process_id) {
            return Ok(Some(*found));
        }
        let found = state.latest_process(bpmn_process_id)?;
        if let Some(found) = found {
            self.latest.insert(bpmn_process_id.to_owned(), found);
        }
        Ok(found)
    }

    /// The parsed decision requirements graph deployed under `key`.
    pub fn decision_requirements(
        &mut self,
        state: Reader<'_>,
        key: Key,
    ) -> Result<Arc<DecisionRequirements>> {
        if let Some(found) = self.decision_requirements.get(&key) {
            return Ok(found.clone());
        }
        let record = state
            .decision_requirements(key)?
            .ok_or_else(|| Error::Definition {
                key,
                reason: "no such decision requirements in state".to_owned(),
            })?;
        let parsed = crate::dmn::parse_dmn(&record.resource_name, &record.resource.0)
            .map_err(|source| Error::Unparsable { key, source })?;
        let parsed = Arc::new(parsed);
        self.decision_requirements.insert(key, parsed.clone());
        Ok(parsed)
    }

    pub fn insert_decision_requirements(&mut self, key: Key, parsed: DecisionRequirements) {
        self.decision_requirements.insert(key, Arc::new(parsed));
    }

    /// Forgets the cached latest version of a process id (a version was deleted).
    pub fn forget_latest(&mut self, bpmn_process_id: &str) {
        self.latest.remove(bpmn_process_id);
    }

    /// Forgets a deleted process definition.
    pub fn remove(&mut self, key: Key) {
        self.models.remove(&key);
    }

    /// Forgets a deleted decision requirements graph.
    pub fn remove_decision_requirements(&mut self, key: Key) {
        self.decision_requirements.remove(&key);
    }

    pub fn clear(&mut self) {
        self.decision_requirements.clear();
        self.models.clear();
        self.latest.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(id: &str, call_activities: &[&str]) -> String {
        let calls: String = call_activities
            .iter()
            .map(|c| {
                format!(
                    r#"<bpmn:callActivity id="{c}"><bpmn:extensionElements><zeebe:calledElement processId="x" /></bpmn:extensionElements></bpmn:callActivity>"#
                )
            })
            .collect();
        format!(
            r#"<bpmn:process id="{id}" isExecutable="true"><bpmn:startEvent id="{id}_s" /><bpmn:subProcess id="{id}_sub"><bpmn:startEvent id="{id}_ss" />{calls}</bpmn:subProcess></bpmn:process>"#
        )
    }

    #[test]
    fn call_activities_are_numbered_across_the_resource_in_javas_string_order() {
        // U+FF61 sorts after U+1F600 in UTF-16 (a surrogate pair starts with 0xD83D),
        // before it in UTF-8.
        let xml = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="t">{}{}</bpmn:definitions>"#,
            process("one", &["b", "\u{FF61}"]),
            process("two", &["a", "\u{1F600}", "c"]),
        );
        let models = crate::parse_bpmn("r.bpmn", xml.as_bytes()).expect("parses");
        let ids = call_activity_ids(&models);
        assert_eq!(ids, ["a", "b", "c", "\u{1F600}", "\u{FF61}"]);
        let mut models = models.into_iter();
        let one = DeployedProcess::new(Key(1), 1, models.next().expect("one"), &ids);
        let two = DeployedProcess::new(Key(2), 1, models.next().expect("two"), &ids);
        assert_eq!(one.call_activity_index("b"), 1);
        assert_eq!(one.call_activity_index("\u{FF61}"), 4);
        assert_eq!(two.call_activity_index("a"), 0);
        assert_eq!(two.call_activity_index("\u{1F600}"), 3);
        assert_eq!(two.call_activity_index("c"), 2);
        assert_eq!(
            one.call_activity_index("one_sub"),
            -1,
            "not a call activity"
        );
    }
}
