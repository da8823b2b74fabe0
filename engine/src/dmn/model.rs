//! Executable DMN decisions: what a `.dmn` resource compiles to at deploy time. Every
//! FEEL text is compiled; a model that exists has no syntax errors left.

use rill_feel::{Expression, UnaryTests};
use serde_json::Value as Json;

/// One `definitions` element: a decision requirements graph (DRG) and its decisions.
#[derive(Debug)]
pub struct DecisionRequirements {
    /// `definitions/@id`.
    pub id: String,
    /// `definitions/@name` (the id when absent).
    pub name: String,
    pub namespace: String,
    /// In document order.
    pub decisions: Vec<Decision>,
}

impl DecisionRequirements {
    /// The decision with this id.
    pub fn decision(&self, id: &str) -> Option<&Decision> {
        self.decisions.iter().find(|decision| decision.id == id)
    }
}

#[derive(Debug)]
pub struct Decision {
    pub id: String,
    /// `@name` (the id when absent).
    pub name: String,
    /// `zeebe:versionTag`, when given.
    pub version_tag: Option<String>,
    /// Decisions whose results this one reads, as indexes into the DRG's decisions;
    /// acyclic (checked at deploy).
    pub required: Vec<usize>,
    pub logic: DecisionLogic,
    /// The `typeRef` of the decision's `variable`, which its result must have (as
    /// Zeebe's DMN engine checks it); `None` without one or for a type it ignores.
    pub result_type: Option<ResultType>,
}

/// A result type Rill checks: the FEEL types a JSON value tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultType {
    String,
    Number,
    Boolean,
}

impl ResultType {
    pub fn name(self) -> &'static str {
        match self {
            ResultType::String => "string",
            ResultType::Number => "number",
            ResultType::Boolean => "boolean",
        }
    }

    /// Whether `value` has this type (`null` has every type, as in Zeebe).
    pub fn admits(self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        matches!(
            (self, value),
            (_, Value::Null)
                | (ResultType::String, Value::String(_))
                | (ResultType::Number, Value::Number(_))
                | (ResultType::Boolean, Value::Bool(_))
        )
    }
}

#[derive(Debug)]
pub enum DecisionLogic {
    Table(DecisionTable),
    /// A literal expression; its result is the decision's output.
    Literal {
        expression: Expression,
    },
}

impl DecisionLogic {
    /// Zeebe's `decisionType` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            DecisionLogic::Table(_) => "DECISION_TABLE",
            DecisionLogic::Literal { .. } => "LITERAL_EXPRESSION",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitPolicy {
    Unique,
    First,
    Priority,
    Any,
    RuleOrder,
    OutputOrder,
    Collect(Option<Aggregation>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    Sum,
    Min,
    Max,
    Count,
}

#[derive(Debug)]
pub struct DecisionTable {
    pub hit_policy: HitPolicy,
    pub inputs: Vec<TableInput>,
    pub outputs: Vec<TableOutput>,
    pub rules: Vec<Rule>,
    /// For SUM/MIN/MAX: the FEEL built-in applied to the matched values (as `values`).
    pub aggregate: Option<Expression>,
}

#[derive(Debug)]
pub struct TableInput {
    pub id: String,
    /// The label, else the expression text (what Zeebe records as `inputName`).
    pub name: String,
    pub expression: Expression,
}

#[derive(Debug)]
pub struct TableOutput {
    pub id: String,
    /// The `name` attribute: the key of the output in a multi-output result.
    pub name: String,
    /// `outputValues`, in order: the priority of values for PRIORITY and OUTPUT ORDER.
    pub values: Vec<Json>,
}

#[derive(Debug)]
pub struct Rule {
    pub id: String,
    /// 1-based, in table order.
    pub index: usize,
    /// One per input, in input order.
    pub input_entries: Vec<UnaryTests>,
    /// One per output; `None` for an empty cell (the output is `null`).
    pub output_entries: Vec<Option<Expression>>,
}
