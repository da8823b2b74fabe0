//! Camunda's search request shape (`filter`, `sort`, `page`) applied to a small list of
//! results that a partition returned from its state. Rill has no search index, so a
//! search must name the process instance (or entity key) it is about; the filter, sort
//! and page are then applied here, on the response items.

use std::cmp::Ordering;

use rill_protocol::Key;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::problem::Problem;

const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 10_000;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchRequest {
    #[serde(default)]
    sort: Vec<SortField>,
    #[serde(default)]
    pub filter: Map<String, Value>,
    page: Option<Page>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SortField {
    field: String,
    order: Option<SortOrder>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
enum SortOrder {
    Asc,
    Desc,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    from: Option<i64>,
    limit: Option<i64>,
    after: Option<String>,
    before: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    items: Vec<Value>,
    page: PageResult,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageResult {
    total_items: usize,
    has_more_total_items: bool,
    start_cursor: Option<String>,
    end_cursor: Option<String>,
}

impl SearchRequest {
    /// Checks the filter names only known fields and uses supported operators, and the
    /// sort and page are usable, before anything is asked of a partition.
    pub fn validate(&self, fields: &[&str]) -> Result<(), Problem> {
        for (name, condition) in &self.filter {
            if !fields.contains(&name.as_str()) {
                return Err(Problem::invalid_argument(format!(
                    "Unknown filter field '{name}'; expected one of: {}",
                    fields.join(", ")
                )));
            }
            Condition::parse(name, condition)?;
        }
        for sort in &self.sort {
            if !fields.contains(&sort.field.as_str()) {
                return Err(Problem::invalid_argument(format!(
                    "Unknown sort field '{}'; expected one of: {}",
                    sort.field,
                    fields.join(", ")
                )));
            }
        }
        self.window().map(|_| ())
    }

    /// The key an equality filter on `field` names, if any: `"123"` or `{"$eq": "123"}`.
    pub fn filter_key(&self, field: &str) -> Result<Option<Key>, Problem> {
        let value = match self.filter.get(field) {
            None => return Ok(None),
            Some(Value::Object(ops)) => match ops.get("$eq") {
                Some(v) => v,
                None => return Ok(None),
            },
            Some(v) => v,
        };
        match value {
            Value::String(text) => crate::json::path_key(field, text).map(Some),
            other => Err(Problem::invalid_argument(format!(
                "Invalid value for 'filter.{field}': expected a key as a string of digits, \
                 but got {other}"
            ))),
        }
    }

    /// Filters, sorts and pages the items.
    pub fn apply(&self, mut items: Vec<Value>) -> Result<SearchResult, Problem> {
        let conditions = self
            .filter
            .iter()
            .map(|(name, condition)| Ok((name.as_str(), Condition::parse(name, condition)?)))
            .collect::<Result<Vec<_>, Problem>>()?;
        items.retain(|item| {
            conditions
                .iter()
                .all(|(name, condition)| condition.matches(item.get(*name)))
        });
        for sort in self.sort.iter().rev() {
            let descending = sort.order == Some(SortOrder::Desc);
            // Stable sorts applied from the last key to the first give a multi-key order.
            items.sort_by(|a, b| {
                let order = compare(a.get(&sort.field), b.get(&sort.field));
                if descending { order.reverse() } else { order }
            });
        }
        let total_items = items.len();
        let (from, limit) = self.window()?;
        let items = items.into_iter().skip(from).take(limit).collect();
        Ok(SearchResult {
            items,
            page: PageResult {
                total_items,
                has_more_total_items: false,
                start_cursor: None,
                end_cursor: None,
            },
        })
    }

    fn window(&self) -> Result<(usize, usize), Problem> {
        let Some(page) = &self.page else {
            return Ok((0, DEFAULT_LIMIT));
        };
        if page.after.is_some() || page.before.is_some() {
            return Err(Problem::invalid_argument(
                "Cursor pagination (page.after, page.before) is not supported by Rill; use \
                 page.from and page.limit",
            ));
        }
        let from = match page.from {
            None => 0,
            Some(f) if f >= 0 => f as usize,
            Some(f) => {
                return Err(Problem::invalid_argument(format!(
                    "The value for page.from is '{f}' but must be 0 or greater"
                )));
            }
        };
        let limit = match page.limit {
            None => DEFAULT_LIMIT,
            Some(l) if l >= 1 && l as usize <= MAX_LIMIT => l as usize,
            Some(l) => {
                return Err(Problem::invalid_argument(format!(
                    "The value for page.limit is '{l}' but must be between 1 and {MAX_LIMIT}"
                )));
            }
        };
        Ok((from, limit))
    }
}

/// One filter condition on a field.
enum Condition<'a> {
    Eq(&'a Value),
    Neq(&'a Value),
    In(&'a [Value]),
    NotIn(&'a [Value]),
    Exists(bool),
    All(Vec<Condition<'a>>),
}

impl<'a> Condition<'a> {
    fn parse(field: &str, value: &'a Value) -> Result<Condition<'a>, Problem> {
        let Value::Object(ops) = value else {
            return Ok(Condition::Eq(value));
        };
        let mut all = Vec::new();
        for (op, operand) in ops {
            let condition = match (op.as_str(), operand) {
                ("$eq", v) => Condition::Eq(v),
                ("$neq", v) => Condition::Neq(v),
                ("$in", Value::Array(list)) => Condition::In(list),
                ("$notIn", Value::Array(list)) => Condition::NotIn(list),
                ("$exists", Value::Bool(b)) => Condition::Exists(*b),
                ("$in" | "$notIn", other) => {
                    return Err(Problem::invalid_argument(format!(
                        "Invalid value for 'filter.{field}.{op}': expected an array, got {other}"
                    )));
                }
                ("$exists", other) => {
                    return Err(Problem::invalid_argument(format!(
                        "Invalid value for 'filter.{field}.$exists': expected a boolean, got \
                         {other}"
                    )));
                }
                (other, _) => {
                    return Err(Problem::invalid_argument(format!(
                        "Filter operator '{other}' on '{field}' is not supported by Rill; use \
                         $eq, $neq, $in, $notIn or $exists"
                    )));
                }
            };
            all.push(condition);
        }
        Ok(Condition::All(all))
    }

    fn matches(&self, actual: Option<&Value>) -> bool {
        let present = actual.filter(|v| !v.is_null());
        match self {
            Condition::Eq(expected) => present == Some(*expected),
            Condition::Neq(expected) => present != Some(*expected),
            Condition::In(list) => present.is_some_and(|v| list.contains(v)),
            Condition::NotIn(list) => !present.is_some_and(|v| list.contains(v)),
            Condition::Exists(should) => present.is_some() == *should,
            Condition::All(conditions) => conditions.iter().all(|c| c.matches(actual)),
        }
    }
}

/// Orders JSON values: numbers numerically, keys (strings of digits) numerically,
/// other strings lexically, missing and null first.
fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    fn rank(v: Option<&Value>) -> u8 {
        match v {
            None | Some(Value::Null) => 0,
            Some(Value::Bool(_)) => 1,
            Some(Value::Number(_)) => 2,
            Some(Value::String(_)) => 3,
            Some(_) => 4,
        }
    }
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x
            .as_f64()
            .partial_cmp(&y.as_f64())
            .unwrap_or(Ordering::Equal),
        (Some(Value::String(x)), Some(Value::String(y))) => {
            match (x.parse::<i64>(), y.parse::<i64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => x.cmp(y),
            }
        }
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(value: Value) -> SearchRequest {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn filters_sorts_and_pages() {
        let items = vec![
            json!({"incidentKey": "10", "state": "ACTIVE", "elementId": "b"}),
            json!({"incidentKey": "9", "state": "RESOLVED", "elementId": "a"}),
            json!({"incidentKey": "11", "state": "ACTIVE", "elementId": "c"}),
        ];
        let search = request(json!({
            "filter": {"state": {"$in": ["ACTIVE"]}},
            "sort": [{"field": "incidentKey", "order": "DESC"}],
            "page": {"from": 0, "limit": 1}
        }));
        search
            .validate(&["incidentKey", "state", "elementId"])
            .unwrap();
        let result = serde_json::to_value(search.apply(items).unwrap()).unwrap();
        assert_eq!(result["page"]["totalItems"], 2);
        assert_eq!(result["items"].as_array().unwrap().len(), 1);
        // "11" sorts above "10" numerically (lexically too here), and "9" was filtered.
        assert_eq!(result["items"][0]["incidentKey"], "11");
    }

    #[test]
    fn keys_sort_numerically() {
        let items = vec![json!({"k": "100"}), json!({"k": "99"})];
        let search = request(json!({"sort": [{"field": "k"}]}));
        let result = serde_json::to_value(search.apply(items).unwrap()).unwrap();
        assert_eq!(result["items"][0]["k"], "99");
    }

    #[test]
    fn unknown_fields_and_operators_are_rejected() {
        let search = request(json!({"filter": {"nope": "1"}}));
        let err = search.validate(&["state"]).unwrap_err();
        assert!(err.detail.contains("'nope'"), "{}", err.detail);

        let search = request(json!({"filter": {"state": {"$like": "A*"}}}));
        let err = search.validate(&["state"]).unwrap_err();
        assert!(err.detail.contains("$like"), "{}", err.detail);

        let search = request(json!({"page": {"after": "abc"}}));
        assert!(search.validate(&["state"]).is_err());
        let search = request(json!({"page": {"limit": 0}}));
        assert!(search.validate(&["state"]).is_err());
    }

    #[test]
    fn filter_key_reads_plain_and_eq_forms() {
        let search = request(json!({"filter": {"processInstanceKey": "2251799813685251"}}));
        assert_eq!(
            search.filter_key("processInstanceKey").unwrap(),
            Some(Key(2251799813685251))
        );
        let search =
            request(json!({"filter": {"processInstanceKey": {"$eq": "2251799813685251"}}}));
        assert_eq!(
            search.filter_key("processInstanceKey").unwrap(),
            Some(Key(2251799813685251))
        );
        let search = request(json!({"filter": {"processInstanceKey": "abc"}}));
        assert!(search.filter_key("processInstanceKey").is_err());
        let search = request(json!({}));
        assert_eq!(search.filter_key("processInstanceKey").unwrap(), None);
    }
}
