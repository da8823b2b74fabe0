//! The history entries of deployed resources (process definitions, decisions and their
//! requirements, forms, RPA scripts) and of decision evaluations.

use super::*;

fields! {
    /// The fields of a process definition that searches filter and sort by.
    ProcessDefinitionField {
        ProcessDefinitionKey = "processDefinitionKey",
        Name = "name",
        ResourceName = "resourceName",
        Version = "version",
        VersionTag = "versionTag",
        ProcessDefinitionId = "processDefinitionId",
        TenantId = "tenantId",
        HasStartForm = "hasStartForm",
        IsLatestVersion = "isLatestVersion",
    }
}

/// A deployed process definition as the history store keeps it (its XML is kept apart,
/// so searches do not read it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricProcessDefinition {
    pub key: Key,
    pub bpmn_process_id: String,
    /// The model's `name`, if it has one.
    pub name: Option<String>,
    pub version: i32,
    /// `zeebe:versionTag`, if the model has one.
    pub version_tag: Option<String>,
    pub resource_name: String,
    pub tenant_id: String,
    /// No higher version of the process is deployed.
    pub latest: bool,
    /// The `formId` of the form linked on the process's none start event (its start
    /// form), if it has one.
    pub start_form_id: Option<String>,
}

impl Historic for HistoricProcessDefinition {
    type Field = ProcessDefinitionField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: ProcessDefinitionField) -> Option<FieldValue> {
        use ProcessDefinitionField as F;
        match field {
            F::ProcessDefinitionKey => int(self.key.get()),
            F::Name => self.name.as_deref().and_then(text),
            F::ResourceName => text(&self.resource_name),
            F::Version => int(i64::from(self.version)),
            F::VersionTag => self.version_tag.as_deref().and_then(text),
            F::ProcessDefinitionId => text(&self.bpmn_process_id),
            F::TenantId => text(&self.tenant_id),
            // Camunda's: a linked start form (an embedded one is not served).
            F::HasStartForm => Some(FieldValue::Bool(self.start_form_id.is_some())),
            F::IsLatestVersion => Some(FieldValue::Bool(self.latest)),
        }
    }
}

fields! {
    /// The fields of a decision definition that searches filter and sort by.
    DecisionDefinitionField {
        DecisionDefinitionKey = "decisionDefinitionKey",
        DecisionDefinitionId = "decisionDefinitionId",
        Name = "name",
        Version = "version",
        DecisionRequirementsId = "decisionRequirementsId",
        DecisionRequirementsKey = "decisionRequirementsKey",
        TenantId = "tenantId",
    }
}

/// A deployed DMN decision as the history store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricDecisionDefinition {
    pub key: Key,
    pub decision_id: String,
    pub name: String,
    pub version: i32,
    pub decision_requirements_id: String,
    pub decision_requirements_key: Key,
    pub tenant_id: String,
}

impl Historic for HistoricDecisionDefinition {
    type Field = DecisionDefinitionField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: DecisionDefinitionField) -> Option<FieldValue> {
        use DecisionDefinitionField as F;
        match field {
            F::DecisionDefinitionKey => int(self.key.get()),
            F::DecisionDefinitionId => text(&self.decision_id),
            F::Name => text(&self.name),
            F::Version => int(i64::from(self.version)),
            F::DecisionRequirementsId => text(&self.decision_requirements_id),
            F::DecisionRequirementsKey => int(self.decision_requirements_key.get()),
            F::TenantId => text(&self.tenant_id),
        }
    }
}

fields! {
    /// The fields of a decision requirements graph that searches filter and sort by.
    DecisionRequirementsField {
        DecisionRequirementsKey = "decisionRequirementsKey",
        DecisionRequirementsId = "decisionRequirementsId",
        DecisionRequirementsName = "decisionRequirementsName",
        Version = "version",
        ResourceName = "resourceName",
        TenantId = "tenantId",
    }
}

/// A deployed DMN resource (its decision requirements graph); its XML is kept apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricDecisionRequirements {
    pub key: Key,
    pub decision_requirements_id: String,
    pub name: String,
    pub version: i32,
    pub resource_name: String,
    pub tenant_id: String,
}

impl Historic for HistoricDecisionRequirements {
    type Field = DecisionRequirementsField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: DecisionRequirementsField) -> Option<FieldValue> {
        use DecisionRequirementsField as F;
        match field {
            F::DecisionRequirementsKey => int(self.key.get()),
            F::DecisionRequirementsId => text(&self.decision_requirements_id),
            F::DecisionRequirementsName => text(&self.name),
            F::Version => int(i64::from(self.version)),
            F::ResourceName => text(&self.resource_name),
            F::TenantId => text(&self.tenant_id),
        }
    }
}

fields! {
    /// The fields of a decision instance that searches filter and sort by.
    DecisionInstanceField {
        DecisionEvaluationInstanceKey = "decisionEvaluationInstanceKey",
        State = "state",
        EvaluationDate = "evaluationDate",
        EvaluationFailure = "evaluationFailure",
        DecisionDefinitionId = "decisionDefinitionId",
        DecisionDefinitionName = "decisionDefinitionName",
        DecisionDefinitionVersion = "decisionDefinitionVersion",
        DecisionDefinitionType = "decisionDefinitionType",
        TenantId = "tenantId",
        DecisionEvaluationKey = "decisionEvaluationKey",
        ProcessDefinitionKey = "processDefinitionKey",
        ProcessInstanceKey = "processInstanceKey",
        DecisionDefinitionKey = "decisionDefinitionKey",
        ElementInstanceKey = "elementInstanceKey",
        RootDecisionDefinitionKey = "rootDecisionDefinitionKey",
    }
}

/// One decision evaluated within a DECISION_EVALUATION (Camunda's decision instance).
/// Keys without a value (no process instance) are -1. Inputs are (id, name, value as
/// JSON text); matched rules (id, index, outputs as (id, name, value as JSON text)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricDecisionInstance {
    pub key: Key,
    /// `EVALUATED` or `FAILED`.
    pub state: String,
    pub evaluation_date: Timestamp,
    pub evaluation_failure: String,
    pub decision_id: String,
    pub decision_name: String,
    pub decision_version: i32,
    /// `DECISION_TABLE` or `LITERAL_EXPRESSION`.
    pub decision_type: String,
    /// The output as JSON text.
    pub result: String,
    pub tenant_id: String,
    pub evaluation_key: Key,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub decision_key: i64,
    pub element_instance_key: i64,
    pub root_decision_key: i64,
    pub evaluated_inputs: Vec<NamedValue>,
    pub matched_rules: Vec<(String, i32, Vec<NamedValue>)>,
}

/// An input or output of a decision instance: (id, name, value as JSON text).
pub type NamedValue = (String, String, String);

impl HistoricDecisionInstance {
    pub const STATES: &'static [&'static str] = &["EVALUATED", "FAILED"];
    pub const TYPES: &'static [&'static str] = &["DECISION_TABLE", "LITERAL_EXPRESSION"];
}

fn known_key(key: i64) -> Option<FieldValue> {
    if key < 0 { None } else { int(key) }
}

impl Historic for HistoricDecisionInstance {
    type Field = DecisionInstanceField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: DecisionInstanceField) -> Option<FieldValue> {
        use DecisionInstanceField as F;
        match field {
            F::DecisionEvaluationInstanceKey => int(self.key.get()),
            F::State => text(&self.state),
            F::EvaluationDate => int(self.evaluation_date.millis()),
            F::EvaluationFailure => text(&self.evaluation_failure),
            F::DecisionDefinitionId => text(&self.decision_id),
            F::DecisionDefinitionName => text(&self.decision_name),
            F::DecisionDefinitionVersion => int(i64::from(self.decision_version)),
            F::DecisionDefinitionType => text(&self.decision_type),
            F::TenantId => text(&self.tenant_id),
            F::DecisionEvaluationKey => int(self.evaluation_key.get()),
            F::ProcessDefinitionKey => known_key(self.process_definition_key),
            F::ProcessInstanceKey => known_key(self.process_instance_key),
            F::DecisionDefinitionKey => known_key(self.decision_key),
            F::ElementInstanceKey => known_key(self.element_instance_key),
            F::RootDecisionDefinitionKey => known_key(self.root_decision_key),
        }
    }
}

fields! {
    /// The fields of a deployed form.
    FormField {
        FormKey = "formKey",
        FormId = "formId",
        Version = "version",
        TenantId = "tenantId",
    }
}

/// A deployed form (on every partition: forms come with deployments).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricForm {
    pub key: Key,
    pub form_id: String,
    pub version: i32,
    /// The Camunda Forms JSON as deployed.
    pub schema: String,
    pub version_tag: String,
    pub tenant_id: String,
}

impl Historic for HistoricForm {
    type Field = FormField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: FormField) -> Option<FieldValue> {
        match field {
            FormField::FormKey => int(self.key.get()),
            FormField::FormId => text(&self.form_id),
            FormField::Version => int(i64::from(self.version)),
            FormField::TenantId => text(&self.tenant_id),
        }
    }
}

fields! {
    /// The fields of a deployed resource (an RPA script).
    ResourceField {
        ResourceKey = "resourceKey",
        ResourceId = "resourceId",
        Version = "version",
        TenantId = "tenantId",
    }
}

/// A deployed resource other than a process, decision or form: an RPA script (on every
/// partition: resources come with deployments). Camunda's `ResourceResult`, with the
/// content its `/content` endpoint serves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricResource {
    pub key: Key,
    pub resource_id: String,
    pub resource_name: String,
    pub version: i32,
    /// Empty without one.
    pub version_tag: String,
    pub tenant_id: String,
    /// The resource as deployed (the JSON of an RPA script).
    pub content: String,
}

impl Historic for HistoricResource {
    type Field = ResourceField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: ResourceField) -> Option<FieldValue> {
        match field {
            ResourceField::ResourceKey => int(self.key.get()),
            ResourceField::ResourceId => text(&self.resource_id),
            ResourceField::Version => int(i64::from(self.version)),
            ResourceField::TenantId => text(&self.tenant_id),
        }
    }
}

fields! {
    /// The fields of a user that searches filter and sort by (Camunda's `UserFilter`,
    /// and the user's key, which makes a sort total).
    UserField {
        UserKey = "userKey",
        Username = "username",
        Name = "name",
        Email = "email",
    }
}

/// A user of basic authentication (on every partition: users are distributed like
/// deployments). Camunda's `UserResult`; never the password or its hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricUser {
    pub key: Key,
    pub username: String,
    pub name: String,
    pub email: String,
}

impl Historic for HistoricUser {
    type Field = UserField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: UserField) -> Option<FieldValue> {
        match field {
            UserField::UserKey => int(self.key.get()),
            UserField::Username => text(&self.username),
            UserField::Name => text(&self.name),
            UserField::Email => text(&self.email),
        }
    }
}
