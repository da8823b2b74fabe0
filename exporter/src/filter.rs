//! Which records an exporter ships, by record type and value type.

use rill_config::RecordFilterConfig;
use rill_protocol::{Record, RecordType, ValueType};

/// A filter built from [`RecordFilterConfig`] (Zeebe's defaults: events only, every value
/// type but job batches and process instance results).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordFilter {
    config: RecordFilterConfig,
}

impl RecordFilter {
    pub fn new(config: RecordFilterConfig) -> RecordFilter {
        RecordFilter { config }
    }

    pub fn accepts(&self, record: &Record) -> bool {
        self.accepts_record_type(record.record_type) && self.accepts_value_type(record.value_type)
    }

    pub fn accepts_record_type(&self, record_type: RecordType) -> bool {
        match record_type {
            RecordType::Command => self.config.command,
            RecordType::Event => self.config.event,
            RecordType::CommandRejection => self.config.rejection,
        }
    }

    pub fn accepts_value_type(&self, value_type: ValueType) -> bool {
        let c = &self.config;
        match value_type {
            ValueType::Deployment => c.deployment,
            ValueType::Process => c.process,
            ValueType::ProcessInstance => c.process_instance,
            ValueType::ProcessInstanceCreation => c.process_instance_creation,
            ValueType::ProcessInstanceResult => c.process_instance_result,
            ValueType::Job => c.job,
            ValueType::JobBatch => c.job_batch,
            ValueType::Variable => c.variable,
            ValueType::VariableDocument => c.variable_document,
            ValueType::Incident => c.incident,
            ValueType::Message => c.message,
            ValueType::MessageSubscription => c.message_subscription,
            ValueType::ProcessMessageSubscription => c.process_message_subscription,
            ValueType::Timer => c.timer,
            ValueType::Error => c.error,
            ValueType::CommandDistribution => c.command_distribution,
            ValueType::Signal => c.signal,
            ValueType::SignalSubscription => c.signal_subscription,
            ValueType::Escalation => c.escalation,
            ValueType::MessageStartEventSubscription => c.message_start_event_subscription,
            ValueType::UserTask => c.user_task,
            ValueType::Form => c.form,
            ValueType::Decision => c.decision,
            ValueType::DecisionRequirements => c.decision_requirements,
            ValueType::DecisionEvaluation => c.decision_evaluation,
            ValueType::CompensationSubscription => c.compensation_subscription,
            ValueType::ProcessInstanceModification => c.process_instance_modification,
            ValueType::ResourceDeletion => c.resource_deletion,
            ValueType::ProcessEvent => c.process_event,
            ValueType::ProcessInstanceMigration => c.process_instance_migration,
            ValueType::AdHocSubProcessInstruction => c.ad_hoc_sub_process_instruction,
        }
    }

    /// The value types this filter lets through, in `ValueType::ALL` order.
    pub fn value_types(&self) -> impl Iterator<Item = ValueType> + '_ {
        ValueType::ALL
            .into_iter()
            .filter(|vt| self.accepts_value_type(*vt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_zeebes() {
        let filter = RecordFilter::new(RecordFilterConfig::default());
        assert!(filter.accepts_record_type(RecordType::Event));
        assert!(!filter.accepts_record_type(RecordType::Command));
        assert!(!filter.accepts_record_type(RecordType::CommandRejection));
        let excluded: Vec<_> = ValueType::ALL
            .into_iter()
            .filter(|vt| !filter.accepts_value_type(*vt))
            .collect();
        assert_eq!(
            excluded,
            vec![ValueType::ProcessInstanceResult, ValueType::JobBatch]
        );
        assert_eq!(filter.value_types().count(), ValueType::ALL.len() - 2);
    }

    #[test]
    fn all_accepts_everything() {
        let filter = RecordFilter::new(RecordFilterConfig::all());
        assert!(
            ValueType::ALL
                .iter()
                .all(|vt| filter.accepts_value_type(*vt))
        );
        assert!(filter.accepts_record_type(RecordType::Command));
        assert!(filter.accepts_record_type(RecordType::CommandRejection));
    }
}
