//! Camunda's v2 searches over every partition's history store, for any kind of entry
//! ([`SearchEntity`]): the request checked (400s naming the field), one search per
//! partition, their pages merged by the sort values and paged.
//!
//! ```text
//!  request ─► validate (400 naming the field) ─► protocol search (sort made total by the key)
//!          ─► every partition: its first `from + limit` matches after the cursor, and its count
//!          ─► merge by the sort values ─► page (`from`, `limit`), cursors = first/last item
//! ```
//! A cursor is the sort values of an item, opaque to clients (base64 of JSON, padded, as the SDKs' cursor pattern wants). `after`
//! continues after its item; `before` asks every partition in the reversed order and
//! turns the merged page around. Totals are summed over partitions, each counting up to
//! `COUNT_LIMIT` (more: `hasMoreTotalItems`).

use base64::Engine as _;
use rill_protocol::history::{
    Condition, FieldValue, Page, Search, SearchField, SortBy, compare_sorted, date_millis,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::SharedState;
use super::json::parse_optional_body;
use crate::ops::{self, ClientError, Searchable};

/// A kind of history entry as the REST API searches it: what `crate::ops` searches,
/// with the shape of Camunda's filters and results.
pub trait SearchEntity: Searchable {
    /// Filter fields of Camunda's spec that Rill cannot answer yet: a 400 naming them,
    /// never silently dropped.
    const NOT_YET: &'static [&'static str] = &[];
    /// The field that holds the entry's key (the sort's last criterion).
    const KEY_FIELD: Self::Field;
    /// A creation date in key order, if the entry has one: a sort by it alone is made
    /// total by the key in the same direction (the order the store's indexes keep).
    const TIME_FIELD: Option<Self::Field> = None;
    /// The response item.
    type Item: Serialize + From<Self>;

    /// What values the field takes in a filter.
    fn kind(field: Self::Field) -> Kind;
}

/// Runs a search request body across all partitions.
pub async fn run<E: SearchEntity>(
    state: &SharedState,
    body: &[u8],
    extra: impl IntoIterator<Item = (E::Field, Condition)>,
) -> Result<SearchResult<E::Item>, ClientError> {
    let body: SearchBody = parse_optional_body(body)?;
    let mut plan = plan::<E>(body)?;
    plan.filter.extend(extra);
    let pages = ops::search::<E>(state, plan.partition_search()).await?;
    Ok(plan.merge(pages))
}

const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 10_000;
/// Matches each partition counts at most (Camunda's search backends stop at 10,000 too).
pub const COUNT_LIMIT: u32 = 10_000;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchBody {
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
pub struct SearchResult<I> {
    pub items: Vec<I>,
    pub page: PageResult,
}

impl<I> SearchResult<I> {
    /// Whether the page holds every match.
    pub fn is_complete(&self) -> bool {
        !self.page.has_more_total_items && self.items.len() as u64 >= self.page.total_items
    }
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PageResult {
    total_items: u64,
    has_more_total_items: bool,
    /// The sort values of the first and last item; an empty page has neither (Camunda
    /// 8.8's `SearchQueryPageResponse`: optional, not nullable). A cursor naming a place
    /// instead would be exclusive: `before` the one of the empty page past the end
    /// skipped the last item.
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
pub struct Plan<E: SearchEntity> {
    pub filter: Vec<(E::Field, Condition)>,
    sort: Vec<SortBy<E::Field>>,
    window: Window,
    limit: u32,
}

impl<E: SearchEntity> Plan<E> {
    /// What each partition is asked.
    pub fn partition_search(&self) -> Search<E::Field> {
        let (sort, after, limit) = match &self.window {
            Window::Offset { from } => (self.sort.clone(), None, from.saturating_add(self.limit)),
            Window::After(values) => (self.sort.clone(), Some(values.clone()), self.limit),
            Window::Before(values) => (reversed(&self.sort), Some(values.clone()), self.limit),
        };
        Search {
            filter: self.filter.clone(),
            sort,
            after,
            limit,
            count_limit: COUNT_LIMIT,
        }
    }

    /// Merges the partitions' pages into the client's.
    pub fn merge(&self, pages: Vec<Page<E>>) -> SearchResult<E::Item> {
        let total_items = pages.iter().map(|p| p.total).sum();
        let has_more_total_items = pages.iter().any(|p| p.more);
        let order = match self.window {
            Window::Before(_) => reversed(&self.sort),
            _ => self.sort.clone(),
        };
        let mut items: Vec<(Vec<Option<FieldValue>>, E)> = pages
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

fn reversed<F: Copy>(sort: &[SortBy<F>]) -> Vec<SortBy<F>> {
    sort.iter()
        .map(|s| SortBy {
            field: s.field,
            descending: !s.descending,
        })
        .collect()
}

fn encode_cursor(values: &[Option<FieldValue>]) -> String {
    let json = serde_json::to_vec(values).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(json)
}

fn decode_cursor(
    field: &str,
    text: &str,
    sort_len: usize,
) -> Result<Vec<Option<FieldValue>>, ClientError> {
    let bad = || {
        ClientError::invalid_field(
            field.to_owned(),
            format!(
                "Invalid value for '{field}': '{text}' is not a cursor of this search (use the \
             startCursor or endCursor of a page answered for the same sort)"
            ),
        )
    };
    // Standard base64 with padding (the SDKs check cursors against that pattern); the
    // URL-safe form of the first slice is still read.
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
        .map_err(|_| bad())?;
    let values: Vec<Option<FieldValue>> = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if values.len() != sort_len {
        return Err(bad());
    }
    Ok(values)
}

/// The conditions of a request's filter object (every problem names its field).
pub fn filter<E: SearchEntity>(
    body: &Map<String, Value>,
) -> Result<Vec<(E::Field, Condition)>, ClientError> {
    let mut filter = Vec::new();
    for (name, value) in body {
        if E::NOT_YET.contains(&name.as_str()) {
            return Err(ClientError::invalid_argument(format!(
                "The filter field 'filter.{name}' is not supported by Rill's {} search yet",
                E::WHAT
            )));
        }
        let Some(field) = E::Field::from_name(name) else {
            let known: Vec<&str> = E::Field::all().iter().map(|f| f.name()).collect();
            return Err(ClientError::invalid_field(
                format!("filter.{name}"),
                format!(
                    "Unknown filter field 'filter.{name}'; expected one of: {}",
                    known.join(", ")
                ),
            ));
        };
        for condition in conditions(field.name(), E::kind(field), value)? {
            filter.push((field, condition));
        }
    }
    Ok(filter)
}

/// Checks the request and turns it into a plan (every problem names its field).
pub fn plan<E: SearchEntity>(body: SearchBody) -> Result<Plan<E>, ClientError> {
    let filter = filter::<E>(&body.filter)?;
    let mut sort = Vec::new();
    for (i, by) in body.sort.iter().enumerate() {
        let field = E::Field::from_name(&by.field).ok_or_else(|| {
            let known: Vec<&str> = E::Field::all().iter().map(|f| f.name()).collect();
            ClientError::invalid_argument(format!(
                "Invalid value for 'sort[{i}].field': unknown field '{}'; expected one of: {}",
                by.field,
                known.join(", ")
            ))
        })?;
        if E::kind(field) == Kind::Tags {
            return Err(ClientError::invalid_argument(format!(
                "Invalid value for 'sort[{i}].field': '{}' is not a sort field",
                by.field
            )));
        }
        let descending = match by.order.as_deref() {
            None => false,
            Some(o) if o.eq_ignore_ascii_case("asc") => false,
            Some(o) if o.eq_ignore_ascii_case("desc") => true,
            Some(other) => {
                return Err(ClientError::invalid_argument(format!(
                    "Invalid value for 'sort[{i}].order': '{other}'; expected ASC or DESC"
                )));
            }
        };
        sort.push(SortBy { field, descending });
    }
    // The key makes the order total (cursors need that). After a creation date alone
    // it follows its direction, which is also the order the indexes keep.
    if !sort.iter().any(|s| s.field == E::KEY_FIELD) {
        let descending = match sort.as_slice() {
            [only] if Some(only.field) == E::TIME_FIELD => only.descending,
            _ => false,
        };
        sort.push(SortBy {
            field: E::KEY_FIELD,
            descending,
        });
    }
    let page = body.page.unwrap_or_default();
    let limit = match page.limit {
        None => DEFAULT_LIMIT,
        Some(l) if (1..=i64::from(MAX_LIMIT)).contains(&l) => l as u32,
        Some(l) => {
            return Err(ClientError::invalid_field(
                "page.limit",
                format!("Invalid value for 'page.limit': {l}; expected 1 to {MAX_LIMIT}"),
            ));
        }
    };
    let window = match (page.from, page.after, page.before) {
        (_, Some(_), Some(_)) => {
            return Err(ClientError::invalid_argument(
                "Invalid page: 'page.after' and 'page.before' cannot be used together",
            ));
        }
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ClientError::invalid_argument(
                "Invalid page: 'page.from' cannot be used with a cursor ('page.after' or \
                 'page.before')",
            ));
        }
        (from, None, None) => match from {
            None => Window::Offset { from: 0 },
            Some(f) if (0..=i64::from(MAX_LIMIT)).contains(&f) => Window::Offset { from: f as u32 },
            Some(f) => {
                return Err(ClientError::invalid_field(
                    "page.from",
                    format!(
                        "Invalid value for 'page.from': {f}; expected 0 to {MAX_LIMIT} (use the \
                     cursors to page further)"
                    ),
                ));
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
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    /// A key, as a string of digits.
    Key,
    Text,
    /// A 32-bit integer.
    Int,
    /// An RFC 3339 date-time (compared in epoch milliseconds).
    Date,
    /// One of the given names.
    Enum(&'static [&'static str]),
    Bool,
    /// Camunda's `TagSet`: an array of tags, all of which the entry must carry. Not a
    /// sort field.
    Tags,
}

/// A `TagSet` filter: one condition per tag (an entry matches when it has them all).
fn tag_conditions(path: &str, value: &Value) -> Result<Vec<Condition>, ClientError> {
    let wrong = || {
        ClientError::invalid_field(
            path.to_owned(),
            format!("Invalid value for '{path}': expected an array of tags, got {value}"),
        )
    };
    let Value::Array(items) = value else {
        return Err(wrong());
    };
    let tags = items
        .iter()
        .map(|t| t.as_str().map(str::to_owned).ok_or_else(wrong))
        .collect::<Result<Vec<String>, ClientError>>()?;
    let tags = rill_protocol::tags::validate_tags(&tags).map_err(|reason| {
        ClientError::invalid_field(
            path.to_owned(),
            format!("Invalid value for '{path}': {reason}"),
        )
    })?;
    Ok(tags
        .into_iter()
        .map(|t| Condition::Eq(FieldValue::Text(t)))
        .collect())
}

/// The conditions of one filter field: a plain value (equality) or an object of
/// operators, all of which must hold.
fn conditions(name: &str, kind: Kind, value: &Value) -> Result<Vec<Condition>, ClientError> {
    let path = format!("filter.{name}");
    if kind == Kind::Tags {
        return tag_conditions(&path, value);
    }
    let Value::Object(ops) = value else {
        return Ok(vec![Condition::Eq(scalar(&path, kind, value)?)]);
    };
    if kind == Kind::Bool {
        return Err(ClientError::invalid_field(
            path.to_owned(),
            format!("Invalid value for '{path}': expected true or false"),
        ));
    }
    if ops.is_empty() {
        return Err(ClientError::invalid_field(
            path.to_owned(),
            format!(
                "Invalid value for '{path}': expected a value or an object of operators, got {{}}"
            ),
        ));
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
                    return Err(ClientError::invalid_field(
                        at.to_owned(),
                        format!("Invalid value for '{at}': expected true or false, got {other}"),
                    ));
                }
            },
            "$like" if matches!(kind, Kind::Text | Kind::Enum(_)) => match operand {
                Value::String(s) => Condition::Like(s.clone()),
                other => {
                    return Err(ClientError::invalid_field(
                        at.to_owned(),
                        format!("Invalid value for '{at}': expected a string pattern, got {other}"),
                    ));
                }
            },
            "$gt" if ranged => Condition::Gt(scalar(&at, kind, operand)?),
            "$gte" if ranged => Condition::Gte(scalar(&at, kind, operand)?),
            "$lt" if ranged => Condition::Lt(scalar(&at, kind, operand)?),
            "$lte" if ranged => Condition::Lte(scalar(&at, kind, operand)?),
            other => {
                return Err(ClientError::invalid_field(
                    at.to_owned(),
                    format!(
                        "Invalid filter '{at}': the operator '{other}' is not supported on \
                     '{name}'"
                    ),
                ));
            }
        };
        out.push(condition);
    }
    Ok(out)
}

fn list(path: &str, kind: Kind, value: &Value) -> Result<Vec<FieldValue>, ClientError> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| scalar(&format!("{path}[{i}]"), kind, v))
            .collect(),
        other => Err(ClientError::invalid_field(
            path.to_owned(),
            format!("Invalid value for '{path}': expected an array, got {other}"),
        )),
    }
}

fn scalar(path: &str, kind: Kind, value: &Value) -> Result<FieldValue, ClientError> {
    let wrong = |expected: &str| {
        ClientError::invalid_field(
            path.to_owned(),
            format!("Invalid value for '{path}': expected {expected}, got {value}"),
        )
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
        (Kind::Date, Value::String(s)) => date_millis(s)
            .map(FieldValue::Int)
            .ok_or_else(|| wrong("an RFC 3339 date-time, e.g. 2025-06-07T13:14:15.000Z")),
        (Kind::Date, _) => Err(wrong("an RFC 3339 date-time")),
        (Kind::Enum(names), Value::String(s)) if names.contains(&s.as_str()) => {
            Ok(FieldValue::Text(s.clone()))
        }
        (Kind::Enum(names), _) => Err(wrong(&format!("one of {}", names.join(", ")))),
        (Kind::Bool, Value::Bool(b)) => Ok(FieldValue::Bool(*b)),
        (Kind::Bool, _) => Err(wrong("true or false")),
        // Tag sets are read by `tag_conditions`, never as one value.
        (Kind::Tags, _) => Err(wrong("an array of tags")),
    }
}
