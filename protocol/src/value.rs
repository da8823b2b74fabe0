//! Record values, one struct per value type, with Zeebe's field names (camelCase in
//! JSON) so the exporter can write Zeebe's document shape directly.
//!
//! Keys inside values are plain `i64`s where Zeebe uses `-1` for "none".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::json::{Blob, JsonValue};
use crate::record::ValueType;
use crate::value_types::TypedValue;

mod decision;
mod job;
mod user;

pub use decision::*;
pub use job::*;
pub use user::*;

/// The tenant every value carries while Rill is single-tenant (Zeebe's default).
pub const DEFAULT_TENANT: &str = "<default>";

/// The hidden process-scope variable of an instance a message started (which message,
/// and the correlation key the instance holds until it ends).
pub const MESSAGE_START_VARIABLE: &str = "~messageStart";

/// The hidden variable a multi-instance body keeps its input collection in.
pub const INPUT_COLLECTION_VARIABLE: &str = "~inputCollection";

/// True for the engine's own bookkeeping variables: their records replay the engine's
/// state, and every read leaves them out.
pub fn is_engine_variable(name: &str) -> bool {
    name == MESSAGE_START_VARIABLE || name == INPUT_COLLECTION_VARIABLE
}

fn default_tenant() -> String {
    DEFAULT_TENANT.to_owned()
}

fn no_key() -> i64 {
    -1
}

macro_rules! define_record_value {
    ($($(#[$doc:meta])* $variant:ident($record:ident): $zeebe:tt, $kebab:tt, $field:ident;)*) => {
        /// A record's value, tagged by its value type. Generated from the one table of
        /// value types, [`value_types!`](crate::value_types).
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub enum RecordValue {
            $($variant($record),)*
        }

        impl RecordValue {
            pub fn value_type(&self) -> ValueType {
                match self {
                    $(RecordValue::$variant(_) => ValueType::$variant,)*
                }
            }

            /// Serializes the value struct alone, without the enum's tag: Zeebe's `value`
            /// object.
            pub fn serialize_untagged<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                match self {
                    $(RecordValue::$variant(v) => v.serialize(serializer),)*
                }
            }
        }

        $(
            impl From<$record> for RecordValue {
                fn from(value: $record) -> Self {
                    RecordValue::$variant(value)
                }
            }

            impl TypedValue for $record {
                const VALUE_TYPE: ValueType = ValueType::$variant;

                fn from_value(value: &RecordValue) -> Option<&Self> {
                    match value {
                        RecordValue::$variant(v) => Some(v),
                        _ => None,
                    }
                }
            }
        )*
    };
}

crate::value_types!(define_record_value);

impl RecordValue {
    /// The value as Zeebe's JSON object (the `value` field of an exported record).
    pub fn to_json(&self) -> serde_json::Value {
        // Serializing plain structs of strings and numbers into a Value cannot fail.
        self.serialize_untagged(serde_json::value::Serializer)
            .unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentResource {
    pub resource_name: String,
    pub resource: Blob,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessMetadata {
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: i64,
    pub resource_name: String,
    pub checksum: Blob,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// `zeebe:versionTag` of the process, empty without one (as in Zeebe).
    #[serde(default)]
    pub version_tag: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRecord {
    pub resources: Vec<DeploymentResource>,
    pub processes_metadata: Vec<ProcessMetadata>,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// The forms (`.form` resources) of the deployment (Zeebe's `formMetadata`).
    #[serde(default)]
    pub form_metadata: Vec<FormMetadata>,
    /// The deployed decisions (Zeebe's `decisionsMetadata`: DECISION records without
    /// their resource).
    #[serde(default)]
    pub decisions_metadata: Vec<DecisionRecord>,
    #[serde(default)]
    pub decision_requirements_metadata: Vec<DecisionRequirementsMetadata>,
    /// The other resources of the deployment: RPA scripts (`.rpa`) (Zeebe's
    /// `resourceMetadata`).
    #[serde(default)]
    pub resource_metadata: Vec<ResourceMetadata>,
}

impl DeploymentRecord {
    /// The resource of this deployment named `name` (a file name is unique in one).
    pub fn resource_named(&self, name: &str) -> Option<&DeploymentResource> {
        self.resources.iter().find(|r| r.resource_name == name)
    }
}

/// A resource of a deployment that is neither a process, a decision nor a form: an RPA
/// script (`.rpa`) (Zeebe's `ResourceMetadataRecord`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMetadata {
    /// The `id` in the resource's JSON, which `zeebe:linkedResource` links it by.
    pub resource_id: String,
    pub version: i32,
    /// The `versionTag` in the resource's JSON, empty without one.
    #[serde(default)]
    pub version_tag: String,
    pub resource_key: i64,
    pub checksum: Blob,
    pub resource_name: String,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    pub deployment_key: i64,
}

/// A deployed resource (Zeebe's `ResourceRecord`): its metadata and its content, as
/// text (`resourceProp`, the JSON of an RPA script as deployed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRecord {
    pub resource_id: String,
    pub version: i32,
    #[serde(default)]
    pub version_tag: String,
    pub resource_key: i64,
    pub checksum: Blob,
    pub resource_name: String,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    pub deployment_key: i64,
    pub resource_prop: String,
}

/// A form of a deployment (Zeebe's `FormMetadataRecord`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FormMetadata {
    pub form_id: String,
    pub version: i32,
    pub form_key: i64,
    pub resource_name: String,
    pub checksum: Blob,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    pub deployment_key: i64,
    /// The form's `versionTag`, empty without one.
    #[serde(default)]
    pub version_tag: String,
}

/// A deployed form (Zeebe's `FormRecord`): a Camunda Forms JSON document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FormRecord {
    pub form_id: String,
    pub version: i32,
    pub form_key: i64,
    pub resource_name: String,
    pub checksum: Blob,
    pub resource: Blob,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    pub deployment_key: i64,
    #[serde(default)]
    pub version_tag: String,
}

/// A Camunda user task (Zeebe's `UserTaskRecord`, the fields of 8.8 that Rill fills).
/// Dates are ISO 8601 texts as the model or the client gave them, empty when unset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserTaskRecord {
    pub user_task_key: i64,
    pub assignee: String,
    pub candidate_groups_list: Vec<String>,
    pub candidate_users_list: Vec<String>,
    pub due_date: String,
    pub follow_up_date: String,
    /// The linked form's key, or -1.
    pub form_key: i64,
    pub external_form_reference: String,
    pub variables: JsonValue,
    pub custom_headers: BTreeMap<String, String>,
    pub bpmn_process_id: String,
    pub process_definition_version: i32,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub element_id: String,
    pub element_instance_key: i64,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// The attributes an assignment, update or correction changed (Zeebe's names:
    /// `assignee`, `candidateGroupsList`, `candidateUsersList`, `dueDate`,
    /// `followUpDate`, `priority`).
    pub changed_attributes: Vec<String>,
    /// What the client did: `assign`, `claim`, `unassign`, `update`, `complete`, or
    /// its own action name.
    pub action: String,
    /// When the task was created (ms since the epoch), or -1.
    pub creation_timestamp: i64,
    /// 0 to 100, default 50.
    pub priority: i32,
    /// The top-level instance of its call hierarchy: its own process instance's key
    /// unless a call activity created that instance (as Zeebe writes it since 8.9; -1
    /// in records written before Rill filled it).
    #[serde(default = "no_key")]
    pub root_process_instance_key: i64,
    /// The process instance's tags (Camunda 8.8), empty without any.
    #[serde(default)]
    pub tags: Vec<String>,
}

impl UserTaskRecord {
    /// Zeebe's attribute names, as `changedAttributes` lists them.
    pub const ASSIGNEE: &'static str = "assignee";
    pub const CANDIDATE_GROUPS: &'static str = "candidateGroupsList";
    pub const CANDIDATE_USERS: &'static str = "candidateUsersList";
    pub const DUE_DATE: &'static str = "dueDate";
    pub const FOLLOW_UP_DATE: &'static str = "followUpDate";
    pub const PRIORITY: &'static str = "priority";
    /// The priority of a task whose model sets none.
    pub const DEFAULT_PRIORITY: i32 = 50;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRecord {
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: i64,
    pub resource_name: String,
    pub checksum: Blob,
    pub resource: Blob,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// `zeebe:versionTag` of the process, empty without one (as in Zeebe).
    #[serde(default)]
    pub version_tag: String,
}

/// Zeebe's `BpmnElementType` names. Encoded by variant index: add new ones at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BpmnElementType {
    Unspecified,
    Process,
    SubProcess,
    StartEvent,
    IntermediateCatchEvent,
    BoundaryEvent,
    EndEvent,
    ServiceTask,
    ReceiveTask,
    ExclusiveGateway,
    ParallelGateway,
    SequenceFlow,
    Task,
    ManualTask,
    ScriptTask,
    SendTask,
    IntermediateThrowEvent,
    InclusiveGateway,
    /// The container of a multi-instance activity's inner instances (same element id).
    MultiInstanceBody,
    /// Creates an instance of another process and waits for it to end.
    CallActivity,
    /// A subprocess started by an event of its enclosing scope (`triggeredByEvent`).
    EventSubProcess,
    /// Waits for the first of the catch events after it.
    EventBasedGateway,
    UserTask,
    /// Evaluates a DMN decision (or is a job, with a task definition).
    BusinessRuleTask,
    /// A subprocess whose inner elements run when activated (on entry by its
    /// `activeElementsCollection`, or on request), in any order, any number of times.
    AdHocSubProcess,
    /// One activation inside an ad-hoc subprocess: the flow scope of the activated
    /// element (element id `<ad-hoc subprocess id>#innerInstance`).
    AdHocSubProcessInnerInstance,
}

/// Zeebe's `BpmnEventType` names. Encoded by variant index: add new ones at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BpmnEventType {
    Unspecified,
    None,
    Timer,
    Message,
    Error,
    Terminate,
    Link,
    Escalation,
    Signal,
    /// A compensation boundary event, throw or end event, and a compensation handler
    /// while it runs.
    Compensation,
}

/// Serialized with its tree path as Zeebe's three flat fields (empty lists without one),
/// in this order; see `ProcessInstanceWire` for reading.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "ProcessInstanceWire")]
pub struct ProcessInstanceRecord {
    pub bpmn_element_type: BpmnElementType,
    pub element_id: String,
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub flow_scope_key: i64,
    pub bpmn_event_type: BpmnEventType,
    pub parent_process_instance_key: i64,
    pub parent_element_instance_key: i64,
    pub tenant_id: String,
    /// The top-level instance of its call hierarchy: its own process instance's key
    /// unless a call activity created that instance (as Zeebe writes it since 8.9; -1
    /// in records written before Rill filled it).
    pub root_process_instance_key: i64,
    /// The process instance's tags (Camunda 8.8), empty without any.
    pub tags: Vec<String>,
    /// Zeebe 8.8's tree path, only on `ELEMENT_ACTIVATING` (as Zeebe writes it). Boxed:
    /// the other records, and the copies the engine keeps and moves, stay small.
    pub tree_path: Option<Box<TreePath>>,
}

/// Where an element instance sits in its call hierarchy (Zeebe 8.8).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreePath {
    /// One list per process instance of the call hierarchy, the root first, each from
    /// that instance's key down through its flow scopes to the call activity that
    /// created the next one, or to the element instance itself.
    pub element_instance_path: Vec<Vec<i64>>,
    /// The process definition keys of the same process instances, the root first.
    pub process_definition_path: Vec<i64>,
    /// For each call activity of the path, the root's first: its index among the call
    /// activity ids of its BPMN resource, sorted (Zeebe's "lexicographic index").
    pub calling_element_path: Vec<i32>,
}

/// [`ProcessInstanceRecord`] as encoded: the tree path as three fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProcessInstanceWire {
    bpmn_element_type: BpmnElementType,
    element_id: String,
    bpmn_process_id: String,
    version: i32,
    process_definition_key: i64,
    process_instance_key: i64,
    flow_scope_key: i64,
    bpmn_event_type: BpmnEventType,
    parent_process_instance_key: i64,
    parent_element_instance_key: i64,
    #[serde(default = "default_tenant")]
    tenant_id: String,
    #[serde(default = "no_key")]
    root_process_instance_key: i64,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    element_instance_path: Vec<Vec<i64>>,
    #[serde(default)]
    process_definition_path: Vec<i64>,
    #[serde(default)]
    calling_element_path: Vec<i32>,
}

impl From<ProcessInstanceWire> for ProcessInstanceRecord {
    fn from(w: ProcessInstanceWire) -> Self {
        let tree_path = (!(w.element_instance_path.is_empty()
            && w.process_definition_path.is_empty()
            && w.calling_element_path.is_empty()))
        .then(|| {
            Box::new(TreePath {
                element_instance_path: w.element_instance_path,
                process_definition_path: w.process_definition_path,
                calling_element_path: w.calling_element_path,
            })
        });
        ProcessInstanceRecord {
            bpmn_element_type: w.bpmn_element_type,
            element_id: w.element_id,
            bpmn_process_id: w.bpmn_process_id,
            version: w.version,
            process_definition_key: w.process_definition_key,
            process_instance_key: w.process_instance_key,
            flow_scope_key: w.flow_scope_key,
            bpmn_event_type: w.bpmn_event_type,
            parent_process_instance_key: w.parent_process_instance_key,
            parent_element_instance_key: w.parent_element_instance_key,
            tenant_id: w.tenant_id,
            root_process_instance_key: w.root_process_instance_key,
            tags: w.tags,
            tree_path,
        }
    }
}

impl Serialize for ProcessInstanceRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let path = self.tree_path.as_deref();
        let mut s = serializer.serialize_struct("ProcessInstanceRecord", 16)?;
        s.serialize_field("bpmnElementType", &self.bpmn_element_type)?;
        s.serialize_field("elementId", &self.element_id)?;
        s.serialize_field("bpmnProcessId", &self.bpmn_process_id)?;
        s.serialize_field("version", &self.version)?;
        s.serialize_field("processDefinitionKey", &self.process_definition_key)?;
        s.serialize_field("processInstanceKey", &self.process_instance_key)?;
        s.serialize_field("flowScopeKey", &self.flow_scope_key)?;
        s.serialize_field("bpmnEventType", &self.bpmn_event_type)?;
        s.serialize_field(
            "parentProcessInstanceKey",
            &self.parent_process_instance_key,
        )?;
        s.serialize_field(
            "parentElementInstanceKey",
            &self.parent_element_instance_key,
        )?;
        s.serialize_field("tenantId", &self.tenant_id)?;
        s.serialize_field("rootProcessInstanceKey", &self.root_process_instance_key)?;
        s.serialize_field("tags", &self.tags)?;
        s.serialize_field("elementInstancePath", self.element_instance_path())?;
        s.serialize_field(
            "processDefinitionPath",
            path.map_or(&[][..], |p| &p.process_definition_path),
        )?;
        s.serialize_field(
            "callingElementPath",
            path.map_or(&[][..], |p| &p.calling_element_path),
        )?;
        s.end()
    }
}

impl ProcessInstanceRecord {
    /// Zeebe's `elementInstancePath`: empty without a tree path.
    pub fn element_instance_path(&self) -> &[Vec<i64>] {
        self.tree_path
            .as_deref()
            .map_or(&[], |p| &p.element_instance_path)
    }

    /// Zeebe's `processDefinitionPath`: empty without a tree path.
    pub fn process_definition_path(&self) -> &[i64] {
        self.tree_path
            .as_deref()
            .map_or(&[], |p| &p.process_definition_path)
    }

    /// Zeebe's `callingElementPath`: empty without a tree path.
    pub fn calling_element_path(&self) -> &[i32] {
        self.tree_path
            .as_deref()
            .map_or(&[], |p| &p.calling_element_path)
    }

    /// A copy without the tree path, without copying the path first (the engine keeps
    /// an element instance's record this way).
    pub fn without_tree_path(&self) -> ProcessInstanceRecord {
        // Destructured, so that a new field cannot be forgotten here.
        let ProcessInstanceRecord {
            bpmn_element_type,
            element_id,
            bpmn_process_id,
            version,
            process_definition_key,
            process_instance_key,
            flow_scope_key,
            bpmn_event_type,
            parent_process_instance_key,
            parent_element_instance_key,
            tenant_id,
            root_process_instance_key,
            tags,
            tree_path: _,
        } = self;
        ProcessInstanceRecord {
            bpmn_element_type: *bpmn_element_type,
            element_id: element_id.clone(),
            bpmn_process_id: bpmn_process_id.clone(),
            version: *version,
            process_definition_key: *process_definition_key,
            process_instance_key: *process_instance_key,
            flow_scope_key: *flow_scope_key,
            bpmn_event_type: *bpmn_event_type,
            parent_process_instance_key: *parent_process_instance_key,
            parent_element_instance_key: *parent_element_instance_key,
            tenant_id: tenant_id.clone(),
            root_process_instance_key: *root_process_instance_key,
            tags: tags.clone(),
            tree_path: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInstanceCreationRecord {
    pub bpmn_process_id: String,
    /// `-1` for "the latest version".
    pub version: i32,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub variables: JsonValue,
    pub fetch_variables: Vec<String>,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// (Rill) For create-and-await: the request waiting on the leader that proposed the
    /// command, so the engine can answer it when the instance completes.
    #[serde(default)]
    pub await_request_id: Option<u64>,
    /// The process instance's tags (Camunda 8.8), empty without any.
    #[serde(default)]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInstanceResultRecord {
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub variables: JsonValue,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariableRecord {
    pub name: String,
    /// The value as JSON text, as Zeebe exports it.
    pub value: String,
    pub scope_key: i64,
    pub process_instance_key: i64,
    pub process_definition_key: i64,
    pub bpmn_process_id: String,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// The top-level instance of its call hierarchy: its own process instance's key
    /// unless a call activity created that instance (as Zeebe writes it since 8.9; -1
    /// in records written before Rill filled it).
    #[serde(default = "no_key")]
    pub root_process_instance_key: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VariableUpdateSemantics {
    Local,
    Propagate,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariableDocumentRecord {
    pub scope_key: i64,
    pub update_semantics: VariableUpdateSemantics,
    pub variables: JsonValue,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

/// Zeebe's `ErrorType` names for incidents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IncidentErrorType {
    Unknown,
    IoMappingError,
    JobNoRetries,
    ConditionError,
    ExtractValueError,
    UnhandledErrorEvent,
    MessageSizeExceeded,
    /// A call activity could not create its child instance (no such process, version
    /// or version tag).
    CalledElementError,
    /// An execution listener's job failed with no retries left.
    ExecutionListenerNoRetries,
    /// A user task links a form that is not deployed.
    FormNotFound,
    /// A business rule task's decision could not be evaluated.
    DecisionEvaluationError,
    /// A business rule task's decision id did not resolve to a deployed decision.
    CalledDecisionError,
    /// A user task listener's job failed with no retries left.
    TaskListenerNoRetries,
    /// The job of an ad-hoc subprocess (job-worker implementation) failed with no
    /// retries left.
    AdHocSubProcessNoRetries,
    /// A resource a service task links (`zeebe:linkedResource`) is not deployed.
    ResourceNotFound,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IncidentRecord {
    pub error_type: IncidentErrorType,
    pub error_message: String,
    pub bpmn_process_id: String,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub element_id: String,
    pub element_instance_key: i64,
    pub job_key: i64,
    pub variable_scope_key: i64,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// The incident's element instance's tree path (Zeebe 8.8, see [`TreePath`]), flat
    /// as Zeebe writes it; empty lists where the incident has no element instance.
    #[serde(default)]
    pub element_instance_path: Vec<Vec<i64>>,
    #[serde(default)]
    pub process_definition_path: Vec<i64>,
    #[serde(default)]
    pub calling_element_path: Vec<i32>,
    /// The top-level instance of its call hierarchy: its own process instance's key
    /// unless a call activity created that instance (as Zeebe writes it since 8.9; -1
    /// in records written before Rill filled it).
    #[serde(default = "no_key")]
    pub root_process_instance_key: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRecord {
    pub name: String,
    pub correlation_key: String,
    pub message_id: String,
    /// Time to live in ms.
    pub time_to_live: i64,
    /// When the message expires (ms since epoch), or -1.
    pub deadline: i64,
    pub variables: JsonValue,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSubscriptionRecord {
    pub process_instance_key: i64,
    pub element_instance_key: i64,
    pub bpmn_process_id: String,
    pub message_name: String,
    pub correlation_key: String,
    pub message_key: i64,
    pub variables: JsonValue,
    pub is_interrupting: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessMessageSubscriptionRecord {
    pub subscription_partition_id: i32,
    pub process_instance_key: i64,
    pub element_instance_key: i64,
    pub bpmn_process_id: String,
    pub element_id: String,
    pub message_name: String,
    pub correlation_key: String,
    pub message_key: i64,
    pub variables: JsonValue,
    pub is_interrupting: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerRecord {
    pub element_instance_key: i64,
    pub process_instance_key: i64,
    pub process_definition_key: i64,
    /// When the timer fires (ms since epoch).
    pub due_date: i64,
    pub target_element_id: String,
    pub repetitions: i32,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorRecord {
    pub exception_message: String,
    pub stacktrace: String,
    pub error_event_position: i64,
    pub process_instance_key: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandDistributionRecord {
    pub partition_id: i32,
    pub value_type: ValueType,
    pub intent: crate::record::Intent,
}

/// A signal: broadcast by a client or a signal throw event, caught by every signal
/// subscription of its name on every partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalRecord {
    pub signal_name: String,
    pub variables: JsonValue,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

/// A catch event (or a signal start event) waiting for a signal of a name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalSubscriptionRecord {
    pub process_definition_key: i64,
    pub bpmn_process_id: String,
    /// The catch event (a boundary event, an event subprocess's start event, a signal
    /// start event or an intermediate catch event).
    pub catch_event_id: String,
    /// The element instance that holds the subscription; -1 for a signal start event.
    pub catch_event_instance_key: i64,
    pub signal_name: String,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

/// An escalation thrown by an escalation throw or end event: `ESCALATED` when a catch
/// event took it (`catchElementId`), `NOT_ESCALATED` (empty `catchElementId`) when none did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EscalationRecord {
    pub process_instance_key: i64,
    pub escalation_code: String,
    pub throw_element_id: String,
    pub catch_element_id: String,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

/// A completed activity that can be compensated: `CREATED` when it completes (with its
/// handler, or with none for a subprocess or multi-instance body that holds compensable
/// activities), `TRIGGERED` by a compensation throw or end event (with the thrower),
/// `COMPLETED` when its handler (or everything inside) is done, `DELETED` when its scope
/// ends without compensating it. Zeebe 8.8's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompensationSubscriptionRecord {
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    pub process_instance_key: i64,
    pub process_definition_key: i64,
    /// The completed activity (a multi-instance activity's element id for its body).
    pub compensable_activity_id: String,
    /// The thrower that triggered it: empty and -1 until triggered.
    pub throw_event_id: String,
    pub throw_event_instance_key: i64,
    /// The handler its compensation boundary event is associated with; empty for a
    /// subprocess without one (its inner subscriptions are compensated instead).
    pub compensation_handler_id: String,
    /// -1, as Zeebe 8.8 writes it.
    pub compensation_handler_instance_key: i64,
    /// The flow scope instance the activity completed in.
    pub compensable_activity_scope_key: i64,
    pub compensable_activity_instance_key: i64,
    pub variables: JsonValue,
}

/// A message start event of a process's latest version: `CREATED` when the version is
/// deployed, `DELETED` when a newer one replaces it, `CORRELATED` when a message starts
/// an instance (then with the instance, the message and its variables).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageStartEventSubscriptionRecord {
    pub process_definition_key: i64,
    pub bpmn_process_id: String,
    pub message_name: String,
    pub start_event_id: String,
    pub process_instance_key: i64,
    pub message_key: i64,
    pub correlation_key: String,
    pub variables: JsonValue,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}
/// PROCESS_INSTANCE_MODIFICATION: the instructions of a modification (`MODIFY`), and
/// once applied (`MODIFIED`) with the scopes each activated element was entered in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInstanceModificationRecord {
    pub process_instance_key: i64,
    pub terminate_instructions: Vec<ModificationTerminateInstruction>,
    pub activate_instructions: Vec<ModificationActivateInstruction>,
    /// Every instruction's `ancestorScopeKeys`, each key once.
    pub ancestor_scope_keys: Vec<i64>,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModificationTerminateInstruction {
    pub element_instance_key: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModificationActivateInstruction {
    pub element_id: String,
    /// The selected ancestor element instance, or -1.
    pub ancestor_scope_key: i64,
    pub variable_instructions: Vec<ModificationVariableInstruction>,
    /// The element instances of the element's flow scopes, from the process instance
    /// down (set in `MODIFIED`).
    pub ancestor_scope_keys: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModificationVariableInstruction {
    pub variables: JsonValue,
    /// The scope's element id, or empty for the process instance's scope.
    pub element_id: String,
}

/// RESOURCE_DELETION: a deployed resource (form, decision requirements) deleted by key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDeletionRecord {
    pub resource_key: i64,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

/// PROCESS_EVENT: a timer, message or signal that starts an instance at a start event or
/// reaches a catch event of a running instance. `TRIGGERING` carries the event's
/// variables, `TRIGGERED` (same key) follows when the triggered event runs. Zeebe 8.8's
/// fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessEventRecord {
    /// What holds the trigger: the process definition's key for a start event, else the
    /// element instance that waits (the catch event, the activity of a boundary event,
    /// the event-based gateway, the scope of an event subprocess).
    pub scope_key: i64,
    /// The catch or start event triggered.
    pub target_element_id: String,
    pub variables: JsonValue,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}
/// PROCESS_INSTANCE_MIGRATION: a running instance moved to another process definition,
/// each active element to the element its mapping instruction names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInstanceMigrationRecord {
    pub process_instance_key: i64,
    pub target_process_definition_key: i64,
    pub mapping_instructions: Vec<MigrationMappingInstruction>,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationMappingInstruction {
    pub source_element_id: String,
    pub target_element_id: String,
}

/// AD_HOC_SUB_PROCESS_INSTRUCTION: activate elements of an active ad-hoc subprocess
/// (`ACTIVATE`, done: `ACTIVATED`), or complete it as its job worker decided
/// (`COMPLETE`, done: `COMPLETED`). Zeebe 8.8's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdHocSubProcessInstructionRecord {
    pub ad_hoc_sub_process_instance_key: i64,
    pub activate_elements: Vec<AdHocSubProcessActivateElement>,
    /// Terminate the inner instances active before this instruction first.
    pub cancel_remaining_instances: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// Set from the job result of the job-worker implementation; `false` for the
    /// activation API.
    pub completion_condition_fulfilled: bool,
}

/// One element to activate in an ad-hoc subprocess, with the local variables of its
/// inner instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdHocSubProcessActivateElement {
    pub element_id: String,
    pub variables: JsonValue,
}

#[cfg(test)]
mod tests;
