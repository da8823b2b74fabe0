//! `POST /v2/process-instances/search`: Camunda's process instance search, answered from
//! every partition's history store.
//!
//! ```text
//!  request ─► validate (400 naming the field) ─► protocol search (sort made total by the key)
//!          ─► every partition: its first `from + limit` matches after the cursor, and its count
//!          ─► merge by the sort values ─► page (`from`, `limit`), cursors = first/last item
//! ```
//! A cursor is the sort values of an item, opaque to clients (base64url of JSON). `after`
//! continues after its item; `before` asks every partition in the reversed order and
//! turns the merged page around. Totals are summed over partitions, each counting up to
//! `rill_history::COUNT_LIMIT` (more: `hasMoreTotalItems`).

use axum::Json;
use axum::extract::State;
use base64::Engine as _;
use rill_protocol::history::{
    Condition, FieldValue, HistoricProcessInstance, ProcessInstanceField as F,
    ProcessInstanceSearch, SortBy, compare_sorted,
};
use rill_protocol::{PartitionId, Query, QueryResult};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::process_instances::InstanceResult;
use super::{Body, SharedState};
use crate::json::parse_optional_body;
use crate::problem::Problem;

const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 10_000;
/// Matches each partition counts at most (Camunda's search backends stop at 10,000 too).
pub const COUNT_LIMIT: u32 = 10_000;

/// Filter fields of Camunda's spec that Rill cannot answer yet: a 400 naming them, never
/// silently dropped.
const NOT_YET: &[&str] = &[
    "variables",
    "batchOperationId",
    "errorMessage",
    "hasRetriesLeft",
    "elementInstanceState",
    "elementId",
    "hasElementInstanceIncident",
    "incidentErrorHashCode",
    "tags",
    "$or",
];

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SearchBody {
    #[serde(default)]
    filter: Map<String, Value>,
    #[serde(default)]
    sort: Vec<SortRequest>,
    page: Option<PageRequest>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SortRequest {
    field: String,
    order: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PageRequest {
    from: Option<i64>,
    limit: Option<i64>,
    after: Option<String>,
    before: Option<String>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    items: Vec<InstanceResult>,
    page: PageResult,
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct PageResult {
    total_items: u64,
    has_more_total_items: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_cursor: Option<String>,
}

/// Where a page starts.
#[derive(Debug, Clone, PartialEq)]
enum Window {
    Offset { from: u32 },
    After(Vec<Option<FieldValue>>),
    Before(Vec<Option<FieldValue>>),
}

/// A validated search.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    filter: Vec<(F, Condition)>,
    sort: Vec<SortBy<F>>,
    window: Window,
    limit: u32,
}

pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult>, Problem> {
    let body: SearchBody = parse_optional_body(&body)?;
    let plan = plan(body)?;
    let query = plan.partition_search();
    let count = state.dispatch.partition_count();
    let dispatch = &state.dispatch;
    let timeout = state.settings.request_timeout;
    let asks = (1..=count).map(|p| {
        let query = Query::SearchProcessInstances(query.clone());
        async move { dispatch.query(PartitionId(p), query, timeout).await }
    });
    let mut pages = Vec::with_capacity(usize::from(count));
    for answer in futures::future::join_all(asks).await {
        match answer? {
            QueryResult::ProcessInstancePage(page) => pages.push(page),
            _ => {
                return Err(Problem::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL",
                    "The broker answered a process instance search with another kind of result",
                ));
            }
        }
    }
    Ok(Json(plan.merge(pages)))
}

impl Plan {
    /// What each partition is asked.
    fn partition_search(&self) -> ProcessInstanceSearch {
        let (sort, after, limit) = match &self.window {
            Window::Offset { from } => (self.sort.clone(), None, from.saturating_add(self.limit)),
            Window::After(values) => (self.sort.clone(), Some(values.clone()), self.limit),
            Window::Before(values) => (reversed(&self.sort), Some(values.clone()), self.limit),
        };
        ProcessInstanceSearch {
            filter: self.filter.clone(),
            sort,
            after,
            limit,
            count_limit: COUNT_LIMIT,
        }
    }

    /// Merges the partitions' pages into the client's.
    fn merge(&self, pages: Vec<rill_protocol::history::ProcessInstancePage>) -> SearchResult {
        let total_items = pages.iter().map(|p| p.total).sum();
        let has_more_total_items = pages.iter().any(|p| p.more);
        let order = match self.window {
            Window::Before(_) => reversed(&self.sort),
            _ => self.sort.clone(),
        };
        let mut items: Vec<(Vec<Option<FieldValue>>, HistoricProcessInstance)> = pages
            .into_iter()
            .flat_map(|p| p.items)
            .map(|i| (i.sort_values(&order), i))
            .collect();
        items.sort_by(|a, b| compare_sorted(&order, &a.0, &b.0));
        let skip = match self.window {
            Window::Offset { from } => from as usize,
            _ => 0,
        };
        let mut page: Vec<_> = items
            .into_iter()
            .skip(skip)
            .take(self.limit as usize)
            .collect();
        if matches!(self.window, Window::Before(_)) {
            page.reverse();
        }
        let cursor = |values: &Vec<Option<FieldValue>>| {
            // The cursor holds the values in the client's sort, not the reversed one (the
            // same fields, so the values are the same).
            encode_cursor(values)
        };
        SearchResult {
            page: PageResult {
                total_items,
                has_more_total_items,
                start_cursor: page.first().map(|(v, _)| cursor(v)),
                end_cursor: page.last().map(|(v, _)| cursor(v)),
            },
            items: page.into_iter().map(|(_, i)| i.into()).collect(),
        }
    }
}

fn reversed(sort: &[SortBy<F>]) -> Vec<SortBy<F>> {
    sort.iter()
        .map(|s| SortBy {
            field: s.field,
            descending: !s.descending,
        })
        .collect()
}

fn encode_cursor(values: &[Option<FieldValue>]) -> String {
    let json = serde_json::to_vec(values).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_cursor(
    field: &str,
    text: &str,
    sort_len: usize,
) -> Result<Vec<Option<FieldValue>>, Problem> {
    let bad = || {
        Problem::invalid_argument(format!(
            "Invalid value for '{field}': '{text}' is not a cursor of this search (use the \
             startCursor or endCursor of a page answered for the same sort)"
        ))
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| bad())?;
    let values: Vec<Option<FieldValue>> = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if values.len() != sort_len {
        return Err(bad());
    }
    Ok(values)
}

/// Checks the request and turns it into a plan (every problem names its field).
fn plan(body: SearchBody) -> Result<Plan, Problem> {
    let mut filter = Vec::new();
    for (name, value) in &body.filter {
        if NOT_YET.contains(&name.as_str()) {
            return Err(Problem::invalid_argument(format!(
                "The filter field 'filter.{name}' is not supported by Rill's process instance \
                 search yet"
            )));
        }
        let Some(field) = F::from_name(name) else {
            let known: Vec<&str> = F::ALL.iter().map(|f| f.name()).collect();
            return Err(Problem::invalid_argument(format!(
                "Unknown filter field 'filter.{name}'; expected one of: {}",
                known.join(", ")
            )));
        };
        for condition in conditions(field, value)? {
            filter.push((field, condition));
        }
    }
    let mut sort = Vec::new();
    for (i, by) in body.sort.iter().enumerate() {
        let field = F::from_name(&by.field).ok_or_else(|| {
            let known: Vec<&str> = F::ALL.iter().map(|f| f.name()).collect();
            Problem::invalid_argument(format!(
                "Invalid value for 'sort[{i}].field': unknown field '{}'; expected one of: {}",
                by.field,
                known.join(", ")
            ))
        })?;
        let descending = match by.order.as_deref() {
            None => false,
            Some(o) if o.eq_ignore_ascii_case("asc") => false,
            Some(o) if o.eq_ignore_ascii_case("desc") => true,
            Some(other) => {
                return Err(Problem::invalid_argument(format!(
                    "Invalid value for 'sort[{i}].order': '{other}'; expected ASC or DESC"
                )));
            }
        };
        sort.push(SortBy { field, descending });
    }
    // The key makes the order total (cursors need that). After a start date alone it
    // follows its direction, which is also the order the indexes keep.
    if !sort.iter().any(|s| s.field == F::ProcessInstanceKey) {
        let descending = match sort.as_slice() {
            [only] if only.field == F::StartDate => only.descending,
            _ => false,
        };
        sort.push(SortBy {
            field: F::ProcessInstanceKey,
            descending,
        });
    }
    let page = body.page.unwrap_or_default();
    let limit = match page.limit {
        None => DEFAULT_LIMIT,
        Some(l) if (1..=i64::from(MAX_LIMIT)).contains(&l) => l as u32,
        Some(l) => {
            return Err(Problem::invalid_argument(format!(
                "Invalid value for 'page.limit': {l}; expected 1 to {MAX_LIMIT}"
            )));
        }
    };
    let window = match (page.from, page.after, page.before) {
        (_, Some(_), Some(_)) => {
            return Err(Problem::invalid_argument(
                "Invalid page: 'page.after' and 'page.before' cannot be used together",
            ));
        }
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(Problem::invalid_argument(
                "Invalid page: 'page.from' cannot be used with a cursor ('page.after' or \
                 'page.before')",
            ));
        }
        (from, None, None) => match from {
            None => Window::Offset { from: 0 },
            Some(f) if (0..=i64::from(MAX_LIMIT)).contains(&f) => Window::Offset { from: f as u32 },
            Some(f) => {
                return Err(Problem::invalid_argument(format!(
                    "Invalid value for 'page.from': {f}; expected 0 to {MAX_LIMIT} (use the \
                     cursors to page further)"
                )));
            }
        },
        (None, Some(after), None) => {
            Window::After(decode_cursor("page.after", &after, sort.len())?)
        }
        (None, None, Some(before)) => {
            Window::Before(decode_cursor("page.before", &before, sort.len())?)
        }
    };
    Ok(Plan {
        filter,
        sort,
        window,
        limit,
    })
}

/// What values a field takes in a filter.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Key,
    Text,
    Int,
    Date,
    State,
    Bool,
}

fn kind(field: F) -> Kind {
    match field {
        F::ProcessInstanceKey
        | F::ProcessDefinitionKey
        | F::ParentProcessInstanceKey
        | F::ParentElementInstanceKey => Kind::Key,
        F::ProcessDefinitionId
        | F::ProcessDefinitionName
        | F::ProcessDefinitionVersionTag
        | F::TenantId => Kind::Text,
        F::ProcessDefinitionVersion => Kind::Int,
        F::StartDate | F::EndDate => Kind::Date,
        F::State => Kind::State,
        F::HasIncident => Kind::Bool,
    }
}

/// The conditions of one filter field: a plain value (equality) or an object of
/// operators, all of which must hold.
fn conditions(field: F, value: &Value) -> Result<Vec<Condition>, Problem> {
    let path = format!("filter.{}", field.name());
    let kind = kind(field);
    let Value::Object(ops) = value else {
        return Ok(vec![Condition::Eq(scalar(&path, kind, value)?)]);
    };
    if kind == Kind::Bool {
        return Err(Problem::invalid_argument(format!(
            "Invalid value for '{path}': expected true or false"
        )));
    }
    if ops.is_empty() {
        return Err(Problem::invalid_argument(format!(
            "Invalid value for '{path}': expected a value or an object of operators, got {{}}"
        )));
    }
    let mut out = Vec::new();
    for (op, operand) in ops {
        let at = format!("{path}.{op}");
        let ranged = matches!(kind, Kind::Key | Kind::Int | Kind::Date);
        let condition = match op.as_str() {
            "$eq" => Condition::Eq(scalar(&at, kind, operand)?),
            "$neq" => Condition::Neq(scalar(&at, kind, operand)?),
            "$in" => Condition::In(list(&at, kind, operand)?),
            "$notIn" => Condition::NotIn(list(&at, kind, operand)?),
            "$exists" => match operand {
                Value::Bool(b) => Condition::Exists(*b),
                other => {
                    return Err(Problem::invalid_argument(format!(
                        "Invalid value for '{at}': expected true or false, got {other}"
                    )));
                }
            },
            "$like" if matches!(kind, Kind::Text | Kind::State) => match operand {
                Value::String(s) => Condition::Like(s.clone()),
                other => {
                    return Err(Problem::invalid_argument(format!(
                        "Invalid value for '{at}': expected a string pattern, got {other}"
                    )));
                }
            },
            "$gt" if ranged => Condition::Gt(scalar(&at, kind, operand)?),
            "$gte" if ranged => Condition::Gte(scalar(&at, kind, operand)?),
            "$lt" if ranged => Condition::Lt(scalar(&at, kind, operand)?),
            "$lte" if ranged => Condition::Lte(scalar(&at, kind, operand)?),
            other => {
                return Err(Problem::invalid_argument(format!(
                    "Invalid filter '{at}': the operator '{other}' is not supported on \
                     '{}'",
                    field.name()
                )));
            }
        };
        out.push(condition);
    }
    Ok(out)
}

fn list(path: &str, kind: Kind, value: &Value) -> Result<Vec<FieldValue>, Problem> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| scalar(&format!("{path}[{i}]"), kind, v))
            .collect(),
        other => Err(Problem::invalid_argument(format!(
            "Invalid value for '{path}': expected an array, got {other}"
        ))),
    }
}

fn scalar(path: &str, kind: Kind, value: &Value) -> Result<FieldValue, Problem> {
    let wrong = |expected: &str| {
        Problem::invalid_argument(format!(
            "Invalid value for '{path}': expected {expected}, got {value}"
        ))
    };
    match (kind, value) {
        (Kind::Key, Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|k| *k > 0)
            .map(FieldValue::Int)
            .ok_or_else(|| wrong("a key as a string of digits")),
        (Kind::Key, _) => Err(wrong("a key as a string of digits")),
        (Kind::Text, Value::String(s)) => Ok(FieldValue::Text(s.clone())),
        (Kind::Text, _) => Err(wrong("a string")),
        (Kind::Int, Value::Number(n)) => n
            .as_i64()
            .filter(|v| i32::try_from(*v).is_ok())
            .map(FieldValue::Int)
            .ok_or_else(|| wrong("a 32-bit integer")),
        (Kind::Int, _) => Err(wrong("a 32-bit integer")),
        (Kind::Date, Value::String(s)) => humantime::parse_rfc3339_weak(s)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok())
            .map(FieldValue::Int)
            .ok_or_else(|| wrong("an RFC 3339 date-time in UTC, e.g. 2025-06-07T13:14:15.000Z")),
        (Kind::Date, _) => Err(wrong("an RFC 3339 date-time in UTC")),
        (Kind::State, Value::String(s))
            if ["ACTIVE", "COMPLETED", "TERMINATED"].contains(&s.as_str()) =>
        {
            Ok(FieldValue::Text(s.clone()))
        }
        (Kind::State, _) => Err(wrong("one of ACTIVE, COMPLETED, TERMINATED")),
        (Kind::Bool, Value::Bool(b)) => Ok(FieldValue::Bool(*b)),
        (Kind::Bool, _) => Err(wrong("true or false")),
    }
}

#[cfg(test)]
mod tests;
