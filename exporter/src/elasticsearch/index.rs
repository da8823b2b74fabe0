//! Where a record goes: Zeebe's index, alias and template names.
//!
//! * index: `<prefix>_<value-type>_<version>_<yyyy-mm-dd>`, e.g.
//!   `zeebe-record_process-instance_8.7.0_2026-11-30` (the date of the record's timestamp,
//!   UTC; the version is the record's broker version);
//! * alias: `<prefix>-<value-type>`, e.g. `zeebe-record-process-instance`;
//! * index template: `<prefix>_<value-type>_<version>`, matching
//!   `<prefix>_<value-type>_<version>_*`; component template: `<prefix>`;
//! * document id `<partitionId>-<position>`, routing `<partitionId>`.

use rill_protocol::{Record, ValueType, civil_from_days};

#[derive(Clone, Debug)]
pub struct IndexRouter {
    prefix: String,
}

impl IndexRouter {
    pub fn new(prefix: impl Into<String>) -> IndexRouter {
        IndexRouter {
            prefix: prefix.into(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn index_for(&self, record: &Record) -> String {
        format!(
            "{}_{}",
            self.index_prefix_for(record.value_type, &record.broker_version),
            utc_date(record.timestamp.millis())
        )
    }

    pub fn id_for(record: &Record) -> String {
        format!("{}-{}", record.partition_id, record.position)
    }

    pub fn alias_for(&self, value_type: ValueType) -> String {
        format!("{}-{}", self.prefix, value_type.kebab_name())
    }

    /// The index name without its date; also the index template's name.
    pub fn index_prefix_for(&self, value_type: ValueType, version: &str) -> String {
        format!(
            "{}_{}_{}",
            self.prefix,
            value_type.kebab_name(),
            version.to_lowercase()
        )
    }

    /// The index template's pattern: every day's index of this value type and version.
    pub fn index_pattern_for(&self, value_type: ValueType, version: &str) -> String {
        format!("{}_*", self.index_prefix_for(value_type, version))
    }
}

const MILLIS_PER_DAY: i64 = 86_400_000;

/// Writes the `index` action line of each record's bulk entry. The part up to the
/// document id (index name, per value type, version and day) is built once and reused:
/// building it per record was a quarter of the exporter's CPU.
#[derive(Debug, Default)]
pub struct ActionLines {
    heads: Vec<ActionHead>,
}

#[derive(Debug)]
struct ActionHead {
    value_type: ValueType,
    day: i64,
    version: String,
    /// `{"index":{"_index":"<name>","_id":"`
    bytes: Vec<u8>,
}

impl ActionLines {
    /// Appends `{"index":{"_index":…,"_id":"P-POS","routing":"P"}}` and a newline.
    pub fn write(&mut self, router: &IndexRouter, record: &Record, out: &mut Vec<u8>) {
        use std::io::Write;
        let day = record.timestamp.millis().div_euclid(MILLIS_PER_DAY);
        let found = self.heads.iter().position(|h| {
            h.value_type == record.value_type && h.day == day && h.version == record.broker_version
        });
        let head = match found {
            Some(i) => &self.heads[i],
            None => {
                let mut bytes = b"{\"index\":{\"_index\":".to_vec();
                // A string into a Vec cannot fail; the name is escaped like any JSON string.
                let _ = serde_json::to_writer(&mut bytes, &router.index_for(record));
                bytes.extend_from_slice(b",\"_id\":\"");
                // One head per value type: the day or version it replaces is over.
                self.heads.retain(|h| h.value_type != record.value_type);
                self.heads.push(ActionHead {
                    value_type: record.value_type,
                    day,
                    version: record.broker_version.clone(),
                    bytes,
                });
                self.heads.last().expect("just pushed")
            }
        };
        out.extend_from_slice(&head.bytes);
        // Ids and routing are digits and a dash: nothing to escape.
        let partition = record.partition_id;
        let _ = writeln!(
            out,
            "{partition}-{}\",\"routing\":\"{partition}\"}}}}",
            record.position
        );
    }
}

/// `yyyy-mm-dd` of a Unix timestamp in milliseconds, in UTC (proleptic Gregorian).
pub fn utc_date(millis: i64) -> String {
    let days = millis.div_euclid(MILLIS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_utc() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(86_399_999), "1970-01-01");
        assert_eq!(utc_date(86_400_000), "1970-01-02");
        assert_eq!(utc_date(-1), "1969-12-31");
        // 2000-02-29T12:00:00Z, a leap day of a year divisible by 400.
        assert_eq!(utc_date(951_825_600_000), "2000-02-29");
        // 2026-11-30T23:59:59.999Z and the millisecond after it.
        assert_eq!(utc_date(1_796_083_199_999), "2026-11-30");
        assert_eq!(utc_date(1_796_083_200_000), "2026-12-01");
        // 2100 is not a leap year: Feb 28 is followed by Mar 1.
        assert_eq!(utc_date(4_107_456_000_000), "2100-02-28");
        assert_eq!(utc_date(4_107_542_400_000), "2100-03-01");
    }

    #[test]
    fn names_follow_zeebe() {
        let router = IndexRouter::new("zeebe-record");
        assert_eq!(
            router.alias_for(ValueType::ProcessInstance),
            "zeebe-record-process-instance"
        );
        assert_eq!(
            router.index_prefix_for(ValueType::ProcessMessageSubscription, "8.7.0-SNAPSHOT"),
            "zeebe-record_process-message-subscription_8.7.0-snapshot"
        );
        assert_eq!(
            router.index_pattern_for(ValueType::Job, "0.1.0"),
            "zeebe-record_job_0.1.0_*"
        );
    }

    #[test]
    fn action_lines_are_the_json_of_the_action() {
        use rill_protocol::value::VariableRecord;
        use rill_protocol::{Intent, Key, PartitionId, Position, RecordDraft, Timestamp};

        let record = |partition: u16, position: u64, value_type, millis: i64, version: &str| {
            let value = VariableRecord {
                name: "x".into(),
                value: "1".into(),
                scope_key: 1,
                process_instance_key: 1,
                process_definition_key: 1,
                bpmn_process_id: "p".into(),
                tenant_id: "<default>".into(),
                root_process_instance_key: 1,
            };
            let mut record = RecordDraft::event(Key(1), Intent::Created, value).into_record(
                Position(position),
                None,
                Timestamp(millis),
                PartitionId(partition),
                version,
            );
            record.value_type = value_type;
            record
        };
        let router = IndexRouter::new("zeebe-record");
        let mut lines = ActionLines::default();
        let day = 1_796_083_199_999; // the last millisecond of 2026-11-30
        for record in [
            record(1, 5, ValueType::Variable, day, "0.1.0"),
            record(2, 6, ValueType::Variable, day, "0.1.0"),
            record(1, 7, ValueType::Job, day, "0.1.0"),
            record(1, 8, ValueType::Variable, day + 1, "0.1.0"),
            record(1, 9, ValueType::Variable, day + 1, "0.2.0-RC1"),
            record(1, 10, ValueType::Job, day, "0.1.0"),
        ] {
            let mut written = Vec::new();
            lines.write(&router, &record, &mut written);
            let expected = serde_json::json!({"index": {
                "_index": router.index_for(&record),
                "_id": IndexRouter::id_for(&record),
                "routing": record.partition_id.to_string(),
            }});
            let text = String::from_utf8(written).unwrap();
            assert_eq!(text, format!("{expected}\n"), "{record:?}");
        }
    }
}
