//! Indexing deployed definitions (processes with their element names, decisions) and
//! the decision instances of evaluations.

use super::*;

impl HistoryWriter<'_> {
    /// Every decision of an evaluation is a decision instance; under FAILED the last
    /// one is the decision that failed.
    pub(super) fn index_decision_instances(
        &mut self,
        record: &Record,
        value: &rill_protocol::value::DecisionEvaluationRecord,
    ) -> Result<()> {
        let count = value.evaluated_decisions.len();
        for (index, decision) in value.evaluated_decisions.iter().enumerate() {
            let Ok(key) = decision.decision_evaluation_instance_key.parse::<i64>() else {
                continue;
            };
            let failed = record.intent == Intent::Failed
                && index + 1 == count
                && decision.decision_id == value.failed_decision_id;
            let instance = HistoricDecisionInstance {
                key: Key(key),
                state: if failed { "FAILED" } else { "EVALUATED" }.to_owned(),
                evaluation_date: record.timestamp,
                evaluation_failure: if failed {
                    value.evaluation_failure_message.clone()
                } else {
                    String::new()
                },
                decision_id: decision.decision_id.clone(),
                decision_name: decision.decision_name.clone(),
                decision_version: decision.decision_version,
                decision_type: decision.decision_type.clone(),
                result: decision.decision_output.clone(),
                tenant_id: decision.tenant_id.clone(),
                evaluation_key: record.key,
                process_definition_key: value.process_definition_key,
                process_instance_key: value.process_instance_key,
                decision_key: decision.decision_key,
                element_instance_key: value.element_instance_key,
                root_decision_key: value.decision_key,
                evaluated_inputs: decision
                    .evaluated_inputs
                    .iter()
                    .map(|i| {
                        (
                            i.input_id.clone(),
                            i.input_name.clone(),
                            i.input_value.clone(),
                        )
                    })
                    .collect(),
                matched_rules: decision
                    .matched_rules
                    .iter()
                    .map(|rule| {
                        let outputs = rule
                            .evaluated_outputs
                            .iter()
                            .map(|o| {
                                (
                                    o.output_id.clone(),
                                    o.output_name.clone(),
                                    o.output_value.clone(),
                                )
                            })
                            .collect();
                        (rule.rule_id.clone(), rule.rule_index, outputs)
                    })
                    .collect(),
            };
            if self
                .get::<HistoricDecisionInstance>(instance.key)?
                .is_none()
            {
                self.create(&instance)?;
            }
        }
        Ok(())
    }

    /// A deployed process: its entry (with the model's name, read from the XML), its XML,
    /// and its elements' names (the XML is read here, once, for all of them). Every partition the deployment reaches writes the same. It is the latest
    /// version unless a higher one is kept; lower ones are the latest no more.
    pub(super) fn index_definition(&mut self, key: Key, value: &ProcessRecord) -> Result<()> {
        let mut latest = true;
        let versions = match keys::definitions_of(&value.bpmn_process_id) {
            Some(prefix) => self.keys_under(&prefix)?,
            None => Vec::new(),
        };
        for other in versions {
            if other == key {
                continue;
            }
            let Some(older) = self.get::<HistoricProcessDefinition>(other)? else {
                continue;
            };
            if older.version > value.version {
                latest = false;
            } else if older.latest {
                self.update(other, |d: &mut HistoricProcessDefinition| d.latest = false)?;
            }
        }
        let facts = ProcessFacts::read(&value.resource.0, &value.bpmn_process_id);
        let definition = HistoricProcessDefinition {
            key,
            bpmn_process_id: value.bpmn_process_id.clone(),
            name: facts.name,
            version: value.version,
            version_tag: (!value.version_tag.is_empty()).then(|| value.version_tag.clone()),
            resource_name: value.resource_name.clone(),
            tenant_id: value.tenant_id.clone(),
            latest,
            start_form_id: facts.start_form_id,
        };
        match self.get::<HistoricProcessDefinition>(key)? {
            Some(old) => self.replace(Some(&old), &definition)?,
            None => self.create(&definition)?,
        }
        self.put(
            keys::entry(keys::DEFINITION_XML, key),
            value.resource.0.clone(),
        );
        let names = codec::encode(&facts.element_names).map_err(|e| HistoryError::Corrupt {
            key: key.to_string(),
            reason: e.to_string(),
        })?;
        self.put(keys::entry(keys::DEFINITION_ELEMENT_NAMES, key), names);
        Ok(())
    }

    /// The drawn name of element `element_id` of the definition, from the table its
    /// deployment left (the definition may have come in this very batch).
    pub(super) fn element_name(&self, definition: Key, element_id: &str) -> Result<Option<String>> {
        let key = keys::entry(keys::DEFINITION_ELEMENT_NAMES, definition);
        let bytes = match self.writes.get(&key) {
            Some(pending) => pending.clone(),
            None => self.base.get(&key)?,
        };
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        let mut names: BTreeMap<String, String> =
            codec::decode(&bytes).map_err(|e| HistoryError::Corrupt {
                key: format!("{key:02x?}"),
                reason: e.to_string(),
            })?;
        Ok(names.remove(element_id))
    }
}
