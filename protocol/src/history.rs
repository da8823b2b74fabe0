//! Searches over a partition's history store, as they cross the command API: filters of
//! field conditions, a sort, a cursor and a limit, and the pages answered.
//!
//! The conditions and the ordering live here, not in the store or the gateway, so that a
//! partition filtering and sorting its entries and the gateway merging the partitions'
//! pages agree on every comparison.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::ids::{Key, Timestamp};
use crate::query::ProcessInstanceState;

/// A field's value as searches compare it. Keys, versions and dates are `Int` (dates in
/// epoch milliseconds), states and ids `Text`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FieldValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

/// One condition on a field. A field without a value (`None`) matches only `Neq`,
/// `NotIn` and `Exists(false)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Condition {
    Eq(FieldValue),
    Neq(FieldValue),
    In(Vec<FieldValue>),
    NotIn(Vec<FieldValue>),
    Exists(bool),
    /// `*` any run of characters, `?` one character, `\` escapes the next one.
    Like(String),
    Gt(FieldValue),
    Gte(FieldValue),
    Lt(FieldValue),
    Lte(FieldValue),
}

impl Condition {
    pub fn matches(&self, actual: Option<&FieldValue>) -> bool {
        match (self, actual) {
            (Condition::Exists(should), actual) => actual.is_some() == *should,
            (Condition::Neq(v), actual) => actual != Some(v),
            (Condition::NotIn(list), actual) => actual.is_none_or(|a| !list.contains(a)),
            (_, None) => false,
            (Condition::Eq(v), Some(a)) => a == v,
            (Condition::In(list), Some(a)) => list.contains(a),
            (Condition::Like(pattern), Some(FieldValue::Text(text))) => like(pattern, text),
            (Condition::Like(_), Some(_)) => false,
            (Condition::Gt(v), Some(a)) => same_kind(a, v) && a > v,
            (Condition::Gte(v), Some(a)) => same_kind(a, v) && a >= v,
            (Condition::Lt(v), Some(a)) => same_kind(a, v) && a < v,
            (Condition::Lte(v), Some(a)) => same_kind(a, v) && a <= v,
        }
    }
}

fn same_kind(a: &FieldValue, b: &FieldValue) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// Camunda's `$like`: `*` matches any run of characters, `?` exactly one, and a
/// backslash makes the next character literal.
pub fn like(pattern: &str, text: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum Token {
        Any,
        One,
        Char(char),
    }
    let mut tokens = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '*' => Token::Any,
            '?' => Token::One,
            '\\' => Token::Char(chars.next().unwrap_or('\\')),
            c => Token::Char(c),
        });
    }
    let text: Vec<char> = text.chars().collect();
    // Greedy matching with one backtrack point (the last `*`): linear in practice.
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match tokens.get(p) {
            Some(Token::Char(c)) if *c == text[t] => {
                t += 1;
                p += 1;
            }
            Some(Token::One) => {
                t += 1;
                p += 1;
            }
            Some(Token::Any) => {
                star = Some((p, t));
                p += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    tokens[p..].iter().all(|t| *t == Token::Any)
}

/// Epoch milliseconds of an RFC 3339 date-time in UTC (`Z`) or with an offset
/// (`+02:00`): the spec's `date-time` format allows both, and clients send either.
pub fn date_millis(text: &str) -> Option<i64> {
    let mut local = text;
    let mut offset_minutes = 0;
    if let Some(at) = text.len().checked_sub(6)
        && let Some(tail) = text.get(at..)
        && let [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] = *tail.as_bytes()
    {
        let digits = [h1, h2, m1, m2];
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let [h1, h2, m1, m2] = digits.map(|d| i64::from(d - b'0'));
        let (hours, minutes) = (h1 * 10 + h2, m1 * 10 + m2);
        // RFC 3339 offsets are 00:00 to 23:59, after a time without its own zone.
        if hours > 23 || minutes > 59 || text[..at].ends_with(['Z', 'z']) {
            return None;
        }
        let minutes = hours * 60 + minutes;
        offset_minutes = if sign == b'-' { -minutes } else { minutes };
        local = &text[..at];
    }
    // humantime reads the date-time without a zone as UTC.
    let time = humantime::parse_rfc3339_weak(local).ok()?;
    let millis =
        i64::try_from(time.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis()).ok()?;
    Some(millis - offset_minutes * 60_000)
}

/// Orders two optional values: no value first, then by value.
pub fn compare_values(a: Option<&FieldValue>, b: Option<&FieldValue>) -> Ordering {
    a.cmp(&b)
}

/// The fields of one kind of history entry that searches filter and sort by, by
/// Camunda's names.
pub trait SearchField: Copy + Eq + std::fmt::Debug + Send + Sync + 'static {
    /// Every field, in Camunda's order.
    fn all() -> &'static [Self];

    /// Camunda's name of the field.
    fn name(self) -> &'static str;

    fn from_name(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|f| f.name() == name)
    }
}

/// An entry of the history store as searches see it: a key, and field values.
pub trait Historic: Clone + std::fmt::Debug + Send + Sync + 'static {
    type Field: SearchField;

    /// The entry's own key (unique within the cluster).
    fn key(&self) -> Key;

    /// The value of `field`, as searches compare it.
    fn field(&self, field: Self::Field) -> Option<FieldValue>;

    fn matches(&self, filter: &[(Self::Field, Condition)]) -> bool {
        filter
            .iter()
            .all(|(field, condition)| condition.matches(self.field(*field).as_ref()))
    }

    /// The values the item sorts by, one per criterion.
    fn sort_values(&self, sort: &[SortBy<Self::Field>]) -> Vec<Option<FieldValue>> {
        sort.iter().map(|s| self.field(s.field)).collect()
    }
}

/// The fields of a process instance that searches filter and sort by (Camunda's names in
/// [`ProcessInstanceField::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProcessInstanceField {
    ProcessInstanceKey,
    ProcessDefinitionId,
    ProcessDefinitionName,
    ProcessDefinitionVersion,
    ProcessDefinitionVersionTag,
    ProcessDefinitionKey,
    ParentProcessInstanceKey,
    ParentElementInstanceKey,
    StartDate,
    EndDate,
    State,
    HasIncident,
    TenantId,
    /// One of the instance's tags: a condition holds when it holds for one of them.
    Tags,
}

impl ProcessInstanceField {
    pub const ALL: [ProcessInstanceField; 14] = [
        ProcessInstanceField::ProcessInstanceKey,
        ProcessInstanceField::ProcessDefinitionId,
        ProcessInstanceField::ProcessDefinitionName,
        ProcessInstanceField::ProcessDefinitionVersion,
        ProcessInstanceField::ProcessDefinitionVersionTag,
        ProcessInstanceField::ProcessDefinitionKey,
        ProcessInstanceField::ParentProcessInstanceKey,
        ProcessInstanceField::ParentElementInstanceKey,
        ProcessInstanceField::StartDate,
        ProcessInstanceField::EndDate,
        ProcessInstanceField::State,
        ProcessInstanceField::HasIncident,
        ProcessInstanceField::TenantId,
        ProcessInstanceField::Tags,
    ];

    /// Camunda's name of the field.
    pub fn name(self) -> &'static str {
        match self {
            ProcessInstanceField::ProcessInstanceKey => "processInstanceKey",
            ProcessInstanceField::ProcessDefinitionId => "processDefinitionId",
            ProcessInstanceField::ProcessDefinitionName => "processDefinitionName",
            ProcessInstanceField::ProcessDefinitionVersion => "processDefinitionVersion",
            ProcessInstanceField::ProcessDefinitionVersionTag => "processDefinitionVersionTag",
            ProcessInstanceField::ProcessDefinitionKey => "processDefinitionKey",
            ProcessInstanceField::ParentProcessInstanceKey => "parentProcessInstanceKey",
            ProcessInstanceField::ParentElementInstanceKey => "parentElementInstanceKey",
            ProcessInstanceField::StartDate => "startDate",
            ProcessInstanceField::EndDate => "endDate",
            ProcessInstanceField::State => "state",
            ProcessInstanceField::HasIncident => "hasIncident",
            ProcessInstanceField::TenantId => "tenantId",
            ProcessInstanceField::Tags => "tags",
        }
    }

    pub fn from_name(name: &str) -> Option<ProcessInstanceField> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl SearchField for ProcessInstanceField {
    fn all() -> &'static [Self] {
        &Self::ALL
    }

    fn name(self) -> &'static str {
        ProcessInstanceField::name(self)
    }
}

/// One sort criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SortBy<F> {
    pub field: F,
    pub descending: bool,
}

/// A search of one partition's history entries of one kind (fields `F`).
///
/// `sort` is complete: its last criterion is unique (the gateway appends the key), so the
/// order is total and `after` (the sort values of the last item already seen, one per
/// criterion) says exactly where to continue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Search<F> {
    pub filter: Vec<(F, Condition)>,
    pub sort: Vec<SortBy<F>>,
    pub after: Option<Vec<Option<FieldValue>>>,
    /// Items wanted (after `after`).
    pub limit: u32,
    /// Matches counted at most (`total` stops there, with `more` set).
    pub count_limit: u32,
}

pub type ProcessInstanceSearch = Search<ProcessInstanceField>;
pub type ProcessInstancePage = Page<HistoricProcessInstance>;

/// A process instance as the history store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoricProcessInstance {
    pub key: Key,
    pub bpmn_process_id: String,
    pub version: i32,
    pub process_definition_key: Key,
    pub state: ProcessInstanceState,
    /// Open incidents.
    pub incidents: u32,
    pub start_date: Timestamp,
    pub end_date: Option<Timestamp>,
    pub parent_process_instance_key: Option<Key>,
    pub parent_element_instance_key: Option<Key>,
    pub tenant_id: String,
    /// The model's `name` of the definition, looked up when the instance starts.
    pub process_definition_name: Option<String>,
    /// The definition's `zeebe:versionTag`, if it has one.
    pub process_definition_version_tag: Option<String>,
    /// The top instance of its call hierarchy (its own key for an instance no call
    /// activity created).
    pub root_process_instance_key: Key,
    /// The instance's tags.
    pub tags: Vec<String>,
}

impl HistoricProcessInstance {
    /// The name the API shows: the model's `name`, or the process id for a model
    /// without one (the API's field is required).
    pub fn display_name(&self) -> &str {
        self.process_definition_name
            .as_deref()
            .unwrap_or(&self.bpmn_process_id)
    }
}

/// Camunda's name of a process instance state.
pub fn process_instance_state_name(state: ProcessInstanceState) -> &'static str {
    match state {
        ProcessInstanceState::Active => "ACTIVE",
        ProcessInstanceState::Completed => "COMPLETED",
        ProcessInstanceState::Terminated => "TERMINATED",
    }
}

impl Historic for HistoricProcessInstance {
    type Field = ProcessInstanceField;

    fn key(&self) -> Key {
        self.key
    }

    fn field(&self, field: ProcessInstanceField) -> Option<FieldValue> {
        use ProcessInstanceField as F;
        match field {
            F::ProcessInstanceKey => Some(FieldValue::Int(self.key.get())),
            F::ProcessDefinitionId => Some(FieldValue::Text(self.bpmn_process_id.clone())),
            F::ProcessDefinitionName => Some(FieldValue::Text(self.display_name().to_owned())),
            F::ProcessDefinitionVersionTag => self
                .process_definition_version_tag
                .clone()
                .map(FieldValue::Text),
            F::ProcessDefinitionVersion => Some(FieldValue::Int(i64::from(self.version))),
            F::ProcessDefinitionKey => Some(FieldValue::Int(self.process_definition_key.get())),
            F::ParentProcessInstanceKey => self
                .parent_process_instance_key
                .map(|k| FieldValue::Int(k.get())),
            F::ParentElementInstanceKey => self
                .parent_element_instance_key
                .map(|k| FieldValue::Int(k.get())),
            F::StartDate => Some(FieldValue::Int(self.start_date.millis())),
            F::EndDate => self.end_date.map(|d| FieldValue::Int(d.millis())),
            F::State => Some(FieldValue::Text(
                process_instance_state_name(self.state).to_owned(),
            )),
            F::HasIncident => Some(FieldValue::Bool(self.incidents > 0)),
            F::TenantId => Some(FieldValue::Text(self.tenant_id.clone())),
            // A list: one value here (the first); `matches` looks at every one.
            F::Tags => self.tags.first().map(|t| FieldValue::Text(t.clone())),
        }
    }

    fn matches(&self, filter: &[(ProcessInstanceField, Condition)]) -> bool {
        filter.iter().all(|(field, condition)| match field {
            ProcessInstanceField::Tags => list_matches(&self.tags, condition),
            _ => condition.matches(self.field(*field).as_ref()),
        })
    }
}

/// A condition on a list of texts (candidate groups, tags): it holds when it holds for
/// one of them (`$neq`/`$notIn`: for none of them; `$exists`: the list is not empty).
pub fn list_matches(list: &[String], condition: &Condition) -> bool {
    let mut values = list.iter().map(|v| FieldValue::Text(v.clone()));
    match condition {
        Condition::Exists(should) => list.is_empty() != *should,
        Condition::Neq(_) | Condition::NotIn(_) => values.all(|v| condition.matches(Some(&v))),
        _ => values.any(|v| condition.matches(Some(&v))),
    }
}

/// Compares two items' sort values under `sort` (each criterion in its direction).
pub fn compare_sorted<F>(
    sort: &[SortBy<F>],
    a: &[Option<FieldValue>],
    b: &[Option<FieldValue>],
) -> Ordering {
    for (i, by) in sort.iter().enumerate() {
        let order = compare_values(
            a.get(i).and_then(Option::as_ref),
            b.get(i).and_then(Option::as_ref),
        );
        let order = if by.descending {
            order.reverse()
        } else {
            order
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

/// One partition's answer to a [`Search`]: the first `limit` matches after the cursor in
/// the sort order, and how many match in all (cursor or not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: u64,
    /// More matches than `total` (counting stopped at the search's `count_limit`).
    pub more: bool,
}

mod entities;
pub use entities::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_handles_wildcards_and_escapes() {
        assert!(like("order*", "order-process"));
        assert!(like("*process", "order-process"));
        assert!(like("o?der*s", "order-process"));
        assert!(like("*", ""));
        assert!(!like("order?", "order"));
        assert!(like("a\\*b", "a*b"));
        assert!(!like("a\\*b", "axxb"));
        assert!(like("*a*b*", "xxaxxbxx"));
        assert!(!like("*a*b", "xxbxxa"));
    }

    #[test]
    fn conditions_treat_a_missing_value_as_absent() {
        let one = FieldValue::Int(1);
        assert!(Condition::Neq(one.clone()).matches(None));
        assert!(Condition::NotIn(vec![one.clone()]).matches(None));
        assert!(Condition::Exists(false).matches(None));
        assert!(!Condition::Eq(one.clone()).matches(None));
        assert!(!Condition::Gt(FieldValue::Int(0)).matches(None));
        assert!(Condition::Gte(one.clone()).matches(Some(&one)));
        assert!(!Condition::Gt(one.clone()).matches(Some(&one)));
        // Ranges compare values of the same kind only.
        assert!(!Condition::Lt(FieldValue::Int(5)).matches(Some(&FieldValue::Bool(false))));
    }

    #[test]
    fn sorting_puts_missing_values_first_and_honours_directions() {
        let sort = [
            SortBy {
                field: ProcessInstanceField::EndDate,
                descending: false,
            },
            SortBy {
                field: ProcessInstanceField::ProcessInstanceKey,
                descending: true,
            },
        ];
        let a = vec![None, Some(FieldValue::Int(5))];
        let b = vec![Some(FieldValue::Int(1)), Some(FieldValue::Int(9))];
        let c = vec![None, Some(FieldValue::Int(7))];
        assert_eq!(compare_sorted(&sort, &a, &b), Ordering::Less);
        assert_eq!(compare_sorted(&sort, &c, &a), Ordering::Less);
    }
}
