//! Which records an exporter ships, by record type and value type.

use rill_config::RecordFilterConfig;
use rill_protocol::value::is_engine_variable;
use rill_protocol::{Record, RecordType, RecordValue, ValueType};

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

    /// Whether the exporter ships `record`. The engine's own bookkeeping variables
    /// (`~messageStart`, `~inputCollection`) never leave the broker: their records exist
    /// to replay the engine's state, and Zeebe has no such variables.
    pub fn accepts(&self, record: &Record) -> bool {
        self.accepts_record_type(record.record_type)
            && self.accepts_value_type(record.value_type)
            && !matches!(&record.value, RecordValue::Variable(v) if is_engine_variable(&v.name))
    }

    pub fn accepts_record_type(&self, record_type: RecordType) -> bool {
        match record_type {
            RecordType::Command => self.config.command,
            RecordType::Event => self.config.event,
            RecordType::CommandRejection => self.config.rejection,
        }
    }

    pub fn accepts_value_type(&self, value_type: ValueType) -> bool {
        self.config.value_type(value_type)
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
