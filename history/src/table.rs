//! What the store knows of each kind of entry: its primary table, its indexes, and which
//! field orders entries like their keys do. The writer and the searches are written once
//! over [`Table`].

use rill_protocol::history::{
    DecisionDefinitionField, DecisionInstanceField, DecisionRequirementsField,
    ElementInstanceField, FieldValue, FormField, Historic, HistoricDecisionDefinition,
    HistoricDecisionInstance, HistoricDecisionRequirements, HistoricElementInstance, HistoricForm,
    HistoricIncident, HistoricJob, HistoricMessageSubscription, HistoricProcessDefinition,
    HistoricProcessInstance, HistoricResource, HistoricUser, HistoricUserTask, HistoricVariable,
    IncidentField, JobField, MessageSubscriptionField, ProcessDefinitionField,
    ProcessInstanceField, ResourceField, UserField, UserTaskField, VariableField,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::keys;

/// A secondary index: its table byte and the fields it holds values of, in order.
pub struct Index<F: 'static> {
    pub table: u8,
    pub fields: &'static [F],
}

/// A kind of entry in the store.
pub trait Table: Historic + Serialize + DeserializeOwned {
    /// The table byte of the entries themselves (entry key -> encoded entry).
    const PRIMARY: u8;
    /// The field that holds the entry's own key.
    const KEY_FIELD: Self::Field;
    /// A date whose order within a partition is the key order (set once, when the entry
    /// is created from a record, and keys come from a counter), if the entry has one.
    const TIME_FIELD: Option<Self::Field>;

    /// The field (the entry's state) that each index not keyed by it carries as its
    /// value: a search filters on it while reading the index, without the entries, and a
    /// change of it rewrites those values in place instead of moving index keys.
    const VALUE_FIELD: Option<Self::Field> = None;

    /// The secondary indexes, the most specific first: a search reads the first whose
    /// every field its filter names with one value.
    fn indexes() -> &'static [Index<Self::Field>];

    /// Index keys beyond [`Table::indexes`] (the end-date index of instances).
    fn extra_keys(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }

    /// Every index key of the entry in its current state, with its value.
    fn index_entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let carried = Self::VALUE_FIELD.map(|field| keys::index_value(self.field(field).as_ref()));
        let mut out: Vec<_> = self
            .extra_keys()
            .into_iter()
            .map(|key| (key, Vec::new()))
            .collect();
        'index: for index in Self::indexes() {
            let mut key = vec![index.table];
            for field in index.fields {
                let Some(value) = self.field(*field) else {
                    continue 'index;
                };
                if keys::value(&mut key, &value).is_none() {
                    continue 'index;
                }
            }
            let value = match (&carried, Self::VALUE_FIELD) {
                (Some(carried), Some(field)) if !index.fields.contains(&field) => carried.clone(),
                _ => Vec::new(),
            };
            out.push((keys::with_key(key, self.key()), value));
        }
        out
    }
}

impl Table for HistoricProcessInstance {
    const PRIMARY: u8 = keys::INSTANCE;
    const KEY_FIELD: ProcessInstanceField = ProcessInstanceField::ProcessInstanceKey;
    const TIME_FIELD: Option<ProcessInstanceField> = Some(ProcessInstanceField::StartDate);
    const VALUE_FIELD: Option<ProcessInstanceField> = Some(ProcessInstanceField::State);

    fn indexes() -> &'static [Index<ProcessInstanceField>] {
        use ProcessInstanceField as F;
        &[
            Index {
                table: keys::INSTANCE_BY_DEFINITION,
                fields: &[F::ProcessDefinitionKey],
            },
            Index {
                table: 0x12,
                fields: &[F::ProcessDefinitionId],
            },
            Index {
                table: 0x11,
                fields: &[F::State],
            },
        ]
    }

    fn extra_keys(&self) -> Vec<Vec<u8>> {
        self.end_date
            .map(|end| keys::by_end(end, self.key))
            .into_iter()
            .collect()
    }
}

impl Table for HistoricJob {
    const PRIMARY: u8 = keys::JOB;
    const KEY_FIELD: JobField = JobField::JobKey;
    const TIME_FIELD: Option<JobField> = None;
    const VALUE_FIELD: Option<JobField> = Some(JobField::State);

    fn indexes() -> &'static [Index<JobField>] {
        use JobField as F;
        &[
            Index {
                table: 0x22,
                fields: &[F::Type],
            },
            Index {
                table: keys::JOB_BY_INSTANCE,
                fields: &[F::ProcessInstanceKey],
            },
            Index {
                table: 0x23,
                fields: &[F::State],
            },
        ]
    }
}

impl Table for HistoricIncident {
    const PRIMARY: u8 = keys::INCIDENT;
    const KEY_FIELD: IncidentField = IncidentField::IncidentKey;
    const TIME_FIELD: Option<IncidentField> = Some(IncidentField::CreationTime);
    const VALUE_FIELD: Option<IncidentField> = Some(IncidentField::State);

    fn indexes() -> &'static [Index<IncidentField>] {
        use IncidentField as F;
        &[
            Index {
                table: keys::INCIDENT_BY_INSTANCE,
                fields: &[F::ProcessInstanceKey],
            },
            Index {
                table: 0x33,
                fields: &[F::State],
            },
        ]
    }
}

impl Table for HistoricVariable {
    const PRIMARY: u8 = keys::VARIABLE;
    const KEY_FIELD: VariableField = VariableField::VariableKey;
    const TIME_FIELD: Option<VariableField> = None;

    fn indexes() -> &'static [Index<VariableField>] {
        use VariableField as F;
        &[
            Index {
                table: 0x41,
                fields: &[F::ProcessInstanceKey, F::Name],
            },
            Index {
                table: keys::VARIABLE_BY_INSTANCE,
                fields: &[F::ProcessInstanceKey],
            },
            Index {
                table: 0x43,
                fields: &[F::ScopeKey],
            },
            Index {
                table: 0x44,
                fields: &[F::Name],
            },
        ]
    }
}

impl Table for HistoricElementInstance {
    const PRIMARY: u8 = keys::ELEMENT;
    const KEY_FIELD: ElementInstanceField = ElementInstanceField::ElementInstanceKey;
    const TIME_FIELD: Option<ElementInstanceField> = Some(ElementInstanceField::StartDate);
    const VALUE_FIELD: Option<ElementInstanceField> = Some(ElementInstanceField::State);

    fn indexes() -> &'static [Index<ElementInstanceField>] {
        use ElementInstanceField as F;
        &[
            Index {
                table: keys::ELEMENT_BY_INSTANCE,
                fields: &[F::ProcessInstanceKey],
            },
            Index {
                table: 0x53,
                fields: &[F::ElementInstanceScopeKey],
            },
        ]
    }
}

impl Table for HistoricProcessDefinition {
    const PRIMARY: u8 = keys::DEFINITION;
    const KEY_FIELD: ProcessDefinitionField = ProcessDefinitionField::ProcessDefinitionKey;
    const TIME_FIELD: Option<ProcessDefinitionField> = None;

    fn indexes() -> &'static [Index<ProcessDefinitionField>] {
        &[Index {
            table: keys::DEFINITION_BY_PROCESS,
            fields: &[ProcessDefinitionField::ProcessDefinitionId],
        }]
    }
}

impl Table for HistoricMessageSubscription {
    const PRIMARY: u8 = keys::SUBSCRIPTION;
    const KEY_FIELD: MessageSubscriptionField = MessageSubscriptionField::MessageSubscriptionKey;
    const TIME_FIELD: Option<MessageSubscriptionField> = None;
    const VALUE_FIELD: Option<MessageSubscriptionField> =
        Some(MessageSubscriptionField::MessageSubscriptionState);

    fn indexes() -> &'static [Index<MessageSubscriptionField>] {
        use MessageSubscriptionField as F;
        &[
            Index {
                table: keys::SUBSCRIPTION_BY_INSTANCE,
                fields: &[F::ProcessInstanceKey],
            },
            Index {
                table: 0x72,
                fields: &[F::MessageName],
            },
            Index {
                table: 0x73,
                fields: &[F::MessageSubscriptionState],
            },
        ]
    }
}

impl Table for HistoricUserTask {
    const PRIMARY: u8 = keys::USER_TASK;
    const KEY_FIELD: UserTaskField = UserTaskField::UserTaskKey;
    const TIME_FIELD: Option<UserTaskField> = Some(UserTaskField::CreationDate);

    fn indexes() -> &'static [Index<UserTaskField>] {
        use UserTaskField as F;
        &[
            Index {
                table: keys::USER_TASK_BY_INSTANCE,
                fields: &[F::ProcessInstanceKey],
            },
            Index {
                table: 0xA4,
                fields: &[F::ElementInstanceKey],
            },
            Index {
                table: 0xA3,
                fields: &[F::Assignee],
            },
            Index {
                table: 0xA2,
                fields: &[F::State],
            },
        ]
    }
}

impl Table for HistoricForm {
    const PRIMARY: u8 = keys::FORM;
    const KEY_FIELD: FormField = FormField::FormKey;
    const TIME_FIELD: Option<FormField> = None;

    fn indexes() -> &'static [Index<FormField>] {
        &[]
    }
}

impl Table for HistoricResource {
    const PRIMARY: u8 = keys::RESOURCE;
    const KEY_FIELD: ResourceField = ResourceField::ResourceKey;
    const TIME_FIELD: Option<ResourceField> = None;

    fn indexes() -> &'static [Index<ResourceField>] {
        &[]
    }
}

impl Table for HistoricUser {
    const PRIMARY: u8 = keys::USER;
    const KEY_FIELD: UserField = UserField::UserKey;
    const TIME_FIELD: Option<UserField> = None;

    fn indexes() -> &'static [Index<UserField>] {
        &[Index {
            table: keys::USER_BY_USERNAME,
            fields: &[UserField::Username],
        }]
    }
}

impl Table for HistoricDecisionDefinition {
    const PRIMARY: u8 = keys::DECISION;
    const KEY_FIELD: DecisionDefinitionField = DecisionDefinitionField::DecisionDefinitionKey;
    const TIME_FIELD: Option<DecisionDefinitionField> = None;

    fn indexes() -> &'static [Index<DecisionDefinitionField>] {
        &[Index {
            table: keys::DECISION_BY_ID,
            fields: &[DecisionDefinitionField::DecisionDefinitionId],
        }]
    }
}

impl Table for HistoricDecisionRequirements {
    const PRIMARY: u8 = keys::DECISION_REQUIREMENTS;
    const KEY_FIELD: DecisionRequirementsField = DecisionRequirementsField::DecisionRequirementsKey;
    const TIME_FIELD: Option<DecisionRequirementsField> = None;

    fn indexes() -> &'static [Index<DecisionRequirementsField>] {
        &[]
    }
}

impl Table for HistoricDecisionInstance {
    const PRIMARY: u8 = keys::DECISION_INSTANCE;
    const KEY_FIELD: DecisionInstanceField = DecisionInstanceField::DecisionEvaluationInstanceKey;
    const TIME_FIELD: Option<DecisionInstanceField> = Some(DecisionInstanceField::EvaluationDate);

    fn indexes() -> &'static [Index<DecisionInstanceField>] {
        &[Index {
            table: keys::DECISION_INSTANCE_BY_INSTANCE,
            fields: &[DecisionInstanceField::ProcessInstanceKey],
        }]
    }
}

/// The single value a condition names (`$eq`, or `$in` with one value).
pub(crate) fn single(condition: &rill_protocol::history::Condition) -> Option<&FieldValue> {
    use rill_protocol::history::Condition;
    match condition {
        Condition::Eq(v) => Some(v),
        Condition::In(list) if list.len() == 1 => Some(&list[0]),
        _ => None,
    }
}
