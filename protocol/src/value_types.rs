//! The one table of value types. Everything that lists them is generated from it:
//! [`ValueType`](crate::ValueType) with its names and `ALL`, [`RecordValue`] with its
//! conversions (in this crate), the exporters' filter settings (`rill-config`), and
//! the appliers' typed values (`rill-engine`, through [`TypedValue`]). Adding a value
//! type is one row here and its record struct in `value.rs`.
//!
//! Both enums are encoded by variant index (bincode): rows are never reordered, and new
//! ones go at the end.

use crate::record::ValueType;
use crate::value::RecordValue;

/// Calls `$callback!` with every row of the value-type table, in encoding order:
///
/// ```text
/// $(#[doc])* Variant(RecordStruct): "ZEEBE_NAME", "kebab-name", snake_name;
/// ```
///
/// - `ZEEBE_NAME`: Zeebe's name, the JSON (wire) name of the value type;
/// - `kebab-name`: the exporters' index and alias part and the name of the exporter
///   filter setting (`exporters.*.filter.<kebab-name>`);
/// - `snake_name`: the field of that setting in the config struct.
#[macro_export]
macro_rules! value_types {
    ($callback:ident) => {
        $callback! {
            Deployment(DeploymentRecord): "DEPLOYMENT", "deployment", deployment;
            Process(ProcessRecord): "PROCESS", "process", process;
            ProcessInstance(ProcessInstanceRecord):
                "PROCESS_INSTANCE", "process-instance", process_instance;
            ProcessInstanceCreation(ProcessInstanceCreationRecord):
                "PROCESS_INSTANCE_CREATION", "process-instance-creation", process_instance_creation;
            ProcessInstanceResult(ProcessInstanceResultRecord):
                "PROCESS_INSTANCE_RESULT", "process-instance-result", process_instance_result;
            Job(JobRecord): "JOB", "job", job;
            JobBatch(JobBatchRecord): "JOB_BATCH", "job-batch", job_batch;
            Variable(VariableRecord): "VARIABLE", "variable", variable;
            VariableDocument(VariableDocumentRecord):
                "VARIABLE_DOCUMENT", "variable-document", variable_document;
            Incident(IncidentRecord): "INCIDENT", "incident", incident;
            Message(MessageRecord): "MESSAGE", "message", message;
            MessageSubscription(MessageSubscriptionRecord):
                "MESSAGE_SUBSCRIPTION", "message-subscription", message_subscription;
            ProcessMessageSubscription(ProcessMessageSubscriptionRecord):
                "PROCESS_MESSAGE_SUBSCRIPTION", "process-message-subscription",
                process_message_subscription;
            Timer(TimerRecord): "TIMER", "timer", timer;
            Error(ErrorRecord): "ERROR", "error", error;
            CommandDistribution(CommandDistributionRecord):
                "COMMAND_DISTRIBUTION", "command-distribution", command_distribution;
            /// A signal broadcast to every partition.
            Signal(SignalRecord): "SIGNAL", "signal", signal;
            /// A catch or start event waiting for a signal.
            SignalSubscription(SignalSubscriptionRecord):
                "SIGNAL_SUBSCRIPTION", "signal-subscription", signal_subscription;
            /// An escalation thrown, caught or not.
            Escalation(EscalationRecord): "ESCALATION", "escalation", escalation;
            /// A message start event of a process's latest version, waiting for its message.
            MessageStartEventSubscription(MessageStartEventSubscriptionRecord):
                "MESSAGE_START_EVENT_SUBSCRIPTION", "message-start-event-subscription",
                message_start_event_subscription;
            /// A Camunda user task (`zeebe:userTask`).
            UserTask(UserTaskRecord): "USER_TASK", "user-task", user_task;
            /// A deployed Camunda form (`.form`).
            Form(FormRecord): "FORM", "form", form;
            Decision(DecisionRecord): "DECISION", "decision", decision;
            DecisionRequirements(DecisionRequirementsRecord):
                "DECISION_REQUIREMENTS", "decision-requirements", decision_requirements;
            DecisionEvaluation(DecisionEvaluationRecord):
                "DECISION_EVALUATION", "decision-evaluation", decision_evaluation;
            /// A completed activity that can be compensated (its compensation boundary
            /// event's handler, or the compensable activities of a completed subprocess).
            CompensationSubscription(CompensationSubscriptionRecord):
                "COMPENSATION_SUBSCRIPTION", "compensation-subscription", compensation_subscription;
            /// A running instance's elements activated and terminated on request.
            ProcessInstanceModification(ProcessInstanceModificationRecord):
                "PROCESS_INSTANCE_MODIFICATION", "process-instance-modification",
                process_instance_modification;
            /// A deployed resource deleted on request.
            ResourceDeletion(ResourceDeletionRecord):
                "RESOURCE_DELETION", "resource-deletion", resource_deletion;
            /// A timer, message or signal that starts an instance or reaches a catch event
            /// (`TRIGGERING`, then `TRIGGERED` when the event it triggers runs).
            ProcessEvent(ProcessEventRecord): "PROCESS_EVENT", "process-event", process_event;
            /// A running instance moved to another process definition on request.
            ProcessInstanceMigration(ProcessInstanceMigrationRecord):
                "PROCESS_INSTANCE_MIGRATION", "process-instance-migration",
                process_instance_migration;
            /// Elements of an ad-hoc subprocess activated on request (`ACTIVATE`,
            /// `ACTIVATED`).
            AdHocSubProcessInstruction(AdHocSubProcessInstructionRecord):
                "AD_HOC_SUB_PROCESS_INSTRUCTION", "ad-hoc-sub-process-instruction",
                ad_hoc_sub_process_instruction;
            /// A deployed resource other than a process, decision or form: an RPA
            /// script (`.rpa`).
            Resource(ResourceRecord): "RESOURCE", "resource", resource;
            /// A user of basic authentication (`CREATE`/`CREATED`, `UPDATE`/`UPDATED`,
            /// `DELETE`/`DELETED`), made on the deployment partition and distributed to
            /// every partition. Its records never carry the password hash.
            User(UserRecord): "USER", "user", user;
        }
    };
}

/// A record value struct of one value type: its type, and how it is found in a
/// [`RecordValue`]. Lets code that handles one type take the struct itself (the
/// engine's appliers) without a match over every type.
pub trait TypedValue: Into<RecordValue> {
    const VALUE_TYPE: ValueType;

    /// The value, when `value` holds one of this type.
    fn from_value(value: &RecordValue) -> Option<&Self>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    #[test]
    fn the_names_are_derived_from_each_other() {
        for value_type in ValueType::ALL {
            let zeebe = value_type.name();
            assert_eq!(
                value_type.kebab_name(),
                zeebe.to_lowercase().replace('_', "-"),
                "{zeebe}"
            );
            assert_eq!(
                serde_json::to_string(&value_type).unwrap(),
                format!("\"{zeebe}\"")
            );
        }
    }

    #[test]
    fn every_value_type_keeps_its_encoding_index() {
        // The format byte, then the variant index: ALL is in encoding order.
        for (index, value_type) in ValueType::ALL.into_iter().enumerate() {
            let bytes = codec::encode(&value_type).unwrap();
            assert_eq!(usize::from(bytes[1]), index, "{}", value_type.name());
        }
        assert_eq!(ValueType::ALL[0], ValueType::Deployment);
        assert_eq!(ValueType::ALL[30], ValueType::AdHocSubProcessInstruction);
    }
}
