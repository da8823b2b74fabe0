//! The bound on one command's work (docs/decisions/command-limits.md).
//!
//! A command runs every in-line step it causes before the next command starts, so a
//! process that loops without waiting (through script tasks, or gateways whose
//! conditions stay true) would otherwise run forever inside one command, holding up
//! its partition and growing its output without end. Two bounds, both deterministic
//! (records and their encoded bytes, never time):
//!
//! - past the limits, the next element to be entered stops there with an incident
//!   (`MESSAGE_SIZE_EXCEEDED`, as Zeebe raises for an oversized batch); the command's
//!   work so far stays, and resolving the incident goes on in a new command;
//! - at twice the limits (work that enters no element, such as a huge fan-out of
//!   incidents), the command fails as a whole and is rolled back.

use rill_engine_api::CommandLimits;
use rill_protocol::{RecordDraft, codec};

use crate::error::{Error, Result};

/// How much of its limits the command being processed has used.
pub(crate) struct Budget {
    limits: CommandLimits,
    /// The command's first record in the output.
    first: usize,
    /// Records before this index (from `first`) are counted in `bytes`.
    sized_upto: usize,
    bytes: u64,
}

impl Budget {
    pub fn new(limits: CommandLimits, first: usize) -> Budget {
        Budget {
            limits,
            first,
            sized_upto: first,
            bytes: 0,
        }
    }

    /// Fails the command once it has written twice its record limit. Cheap: checked at
    /// every record.
    pub fn check_records(&self, records: &[RecordDraft]) -> Result<()> {
        let written = records.len().saturating_sub(self.first) as u64;
        let hard = u64::from(self.limits.max_records).saturating_mul(2);
        if written > hard {
            return Err(Error::CommandTooLarge(format!(
                "the command wrote more than {hard} records, twice \
                 engine.max-records-per-command ({}), and was rolled back",
                self.limits.max_records
            )));
        }
        Ok(())
    }

    /// Why the command may enter no further element, if it has used up its limits; an
    /// error once it has written twice its byte limit.
    pub fn exhausted(&mut self, records: &[RecordDraft]) -> Result<Option<String>> {
        let start = self.sized_upto.max(self.first);
        for record in records.get(start..).unwrap_or_default() {
            self.bytes = self
                .bytes
                .saturating_add(codec::encoded_len(record)? as u64);
        }
        self.sized_upto = records.len();
        let written = records.len().saturating_sub(self.first);
        if self.bytes > self.limits.max_bytes.saturating_mul(2) {
            return Err(Error::CommandTooLarge(format!(
                "the command wrote {} bytes of records, more than twice \
                 engine.max-bytes-per-command ({}), and was rolled back",
                self.bytes, self.limits.max_bytes
            )));
        }
        if written > self.limits.max_records as usize {
            return Ok(Some(format!(
                "{written} records, more than engine.max-records-per-command ({})",
                self.limits.max_records
            )));
        }
        if self.bytes > self.limits.max_bytes {
            return Ok(Some(format!(
                "{} bytes of records, more than engine.max-bytes-per-command ({})",
                self.bytes, self.limits.max_bytes
            )));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use rill_protocol::value::VariableRecord;
    use rill_protocol::{Intent, Key};

    use super::*;

    fn record(text_len: usize) -> RecordDraft {
        let value = VariableRecord {
            name: "x".into(),
            value: format!("\"{}\"", "a".repeat(text_len)),
            scope_key: 1,
            process_instance_key: 1,
            process_definition_key: 2,
            bpmn_process_id: "p".into(),
            tenant_id: "<default>".into(),
            root_process_instance_key: 1,
        };
        RecordDraft::event(Key(1), Intent::Created, value)
    }

    #[test]
    fn counts_the_records_from_the_commands_own() {
        let limits = CommandLimits {
            max_records: 3,
            max_bytes: 1 << 20,
        };
        // A record of an earlier command, then this command's own.
        let mut records = vec![record(1), record(1)];
        let mut budget = Budget::new(limits, 1);
        records.push(record(1));
        records.push(record(1));
        // Three written by this command: at the limit, not past it.
        assert_eq!(budget.exhausted(&records).unwrap(), None);
        records.push(record(1));
        let reason = budget.exhausted(&records).unwrap().expect("exhausted");
        assert!(
            reason.contains("engine.max-records-per-command (3)"),
            "{reason}"
        );
        budget.check_records(&records).unwrap();
        for _ in 0..3 {
            records.push(record(1));
        }
        let error = budget.check_records(&records).unwrap_err();
        assert!(error.to_string().contains("rolled back"), "{error}");
    }

    #[test]
    fn counts_each_records_bytes_once() {
        let limits = CommandLimits {
            max_records: 1000,
            max_bytes: 10_000,
        };
        let mut budget = Budget::new(limits, 0);
        let mut records = vec![record(3_000)];
        assert_eq!(budget.exhausted(&records).unwrap(), None);
        // Asked again with nothing new: the first record is not counted twice.
        assert_eq!(budget.exhausted(&records).unwrap(), None);
        records.push(record(3_000));
        records.push(record(3_000));
        assert_eq!(budget.exhausted(&records).unwrap(), None);
        records.push(record(3_000));
        let reason = budget.exhausted(&records).unwrap().expect("exhausted");
        assert!(
            reason.contains("engine.max-bytes-per-command (10000)"),
            "{reason}"
        );
        for _ in 0..4 {
            records.push(record(3_000));
        }
        let error = budget.exhausted(&records).unwrap_err();
        assert!(error.to_string().contains("twice"), "{error}");
    }
}
