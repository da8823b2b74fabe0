//! Which records count as business events in the node's metrics.

use rill_engine_api::EngineEvent;
use rill_protocol::value::BpmnElementType;
use rill_protocol::{Intent, RecordDraft, RecordType, RecordValue};

fn event(kind: &'static str, action: &'static str, count: u64) -> Option<EngineEvent> {
    Some(EngineEvent {
        kind,
        action,
        count,
    })
}

/// Instances created, completed and terminated; jobs created, activated, completed,
/// failed, timed out and erroring; incidents raised and resolved; messages published.
pub(crate) fn record_event(record: &RecordDraft) -> Option<EngineEvent> {
    if record.record_type != RecordType::Event {
        return None;
    }
    match (&record.value, record.intent) {
        (RecordValue::ProcessInstanceCreation(_), Intent::Created) => {
            event("process_instance", "created", 1)
        }
        (RecordValue::ProcessInstance(pi), intent)
            if pi.bpmn_element_type == BpmnElementType::Process =>
        {
            match intent {
                Intent::ElementCompleted => event("process_instance", "completed", 1),
                Intent::ElementTerminated => event("process_instance", "terminated", 1),
                _ => None,
            }
        }
        (RecordValue::JobBatch(batch), Intent::Activated) if !batch.job_keys.is_empty() => {
            event("job", "activated", batch.job_keys.len() as u64)
        }
        (RecordValue::Job(_), intent) => match intent {
            Intent::Created => event("job", "created", 1),
            Intent::Completed => event("job", "completed", 1),
            Intent::Failed => event("job", "failed", 1),
            Intent::TimedOut => event("job", "timed_out", 1),
            Intent::ErrorThrown => event("job", "error_thrown", 1),
            _ => None,
        },
        (RecordValue::Incident(_), Intent::Created) => event("incident", "created", 1),
        (RecordValue::Incident(_), Intent::Resolved) => event("incident", "resolved", 1),
        (RecordValue::Message(_), Intent::Published) => event("message", "published", 1),
        _ => None,
    }
}
