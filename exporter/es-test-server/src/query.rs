//! The query DSL subset the tests and the history docs use, evaluated on `_source`.

use std::cmp::Ordering;

use serde_json::Value;

/// A query that could not be understood: Elasticsearch's `parsing_exception`.
#[derive(Debug)]
pub struct QueryError(pub String);

/// The value at a dotted path (`value.processInstanceKey`); arrays yield every element.
fn values_at<'a>(source: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut current = vec![source];
    for segment in path.split('.') {
        let mut next = Vec::new();
        for value in current {
            match value.get(segment) {
                Some(Value::Array(items)) => next.extend(items.iter()),
                Some(found) => next.push(found),
                None => {}
            }
        }
        current = next;
    }
    current
}

/// Equality as a term query sees it: `"5"` matches `5` (the field is coerced).
fn term_equals(field: &Value, wanted: &Value) -> bool {
    if field == wanted {
        return true;
    }
    match (field, wanted) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(_), _) | (Value::Object(_), _) => false,
        (a, b) => scalar_text(a) == scalar_text(b),
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn compare(field: &Value, bound: &Value) -> Option<Ordering> {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok(),
        _ => None,
    };
    match (number(field), number(bound)) {
        (Some(a), Some(b)) => a.partial_cmp(&b),
        _ => Some(scalar_text(field).cmp(&scalar_text(bound))),
    }
}

/// The single `{field: spec}` pair of a leaf query.
fn single_field<'a>(kind: &str, body: &'a Value) -> Result<(&'a str, &'a Value), QueryError> {
    let object = body
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| QueryError(format!("[{kind}] query must name exactly one field")))?;
    let (field, spec) = object
        .iter()
        .next()
        .ok_or_else(|| QueryError(format!("[{kind}] query is empty")))?;
    Ok((field.as_str(), spec))
}

/// Checks that the query can be evaluated, so a bad query answers 400 even on an empty index.
pub fn validate(query: &Value) -> Result<(), QueryError> {
    matches(query, &Value::Null).map(|_| ())
}

pub fn matches(query: &Value, source: &Value) -> Result<bool, QueryError> {
    let object = query
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| QueryError("a query is an object with one key, the query type".into()))?;
    let Some((kind, body)) = object.iter().next() else {
        return Err(QueryError("empty query".into()));
    };
    match kind.as_str() {
        "match_all" => Ok(true),
        "match_none" => Ok(false),
        "term" => {
            let (field, spec) = single_field(kind, body)?;
            let wanted = spec.get("value").unwrap_or(spec);
            Ok(values_at(source, field)
                .iter()
                .any(|v| term_equals(v, wanted)))
        }
        "terms" => {
            let (field, spec) = single_field(kind, body)?;
            let wanted = spec
                .as_array()
                .ok_or_else(|| QueryError("[terms] needs an array of values".into()))?;
            Ok(values_at(source, field)
                .iter()
                .any(|v| wanted.iter().any(|w| term_equals(v, w))))
        }
        "range" => {
            let (field, spec) = single_field(kind, body)?;
            let bounds = spec
                .as_object()
                .ok_or_else(|| QueryError("[range] needs an object of bounds".into()))?;
            for key in bounds.keys() {
                if !matches!(key.as_str(), "gt" | "gte" | "lt" | "lte" | "format") {
                    return Err(QueryError(format!(
                        "[range] query does not support [{key}]"
                    )));
                }
            }
            Ok(values_at(source, field).iter().any(|value| {
                bounds.iter().all(|(op, bound)| {
                    let ordering = compare(value, bound);
                    match op.as_str() {
                        "gt" => ordering == Some(Ordering::Greater),
                        "gte" => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
                        "lt" => ordering == Some(Ordering::Less),
                        "lte" => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
                        _ => true,
                    }
                })
            }))
        }
        "exists" => {
            let field = body
                .get("field")
                .and_then(Value::as_str)
                .ok_or_else(|| QueryError("[exists] needs a field".into()))?;
            Ok(values_at(source, field).iter().any(|v| !v.is_null()))
        }
        "bool" => {
            let clauses = |name: &str| -> Vec<&Value> {
                match body.get(name) {
                    Some(Value::Array(items)) => items.iter().collect(),
                    Some(single) => vec![single],
                    None => Vec::new(),
                }
            };
            let mut result = true;
            for clause in clauses("must").into_iter().chain(clauses("filter")) {
                result &= matches(clause, source)?;
            }
            for clause in clauses("must_not") {
                result &= !matches(clause, source)?;
            }
            let should = clauses("should");
            if !should.is_empty() {
                let mut any = false;
                for clause in &should {
                    any |= matches(clause, source)?;
                }
                let required = body.get("minimum_should_match").is_some()
                    || (clauses("must").is_empty() && clauses("filter").is_empty());
                if required {
                    result &= any;
                }
            }
            Ok(result)
        }
        other => Err(QueryError(format!("unknown query [{other}]"))),
    }
}

/// Sort keys from `sort`: `["f"]`, `[{"f": "desc"}]`, `[{"f": {"order": "desc"}}]`.
pub fn sort_keys(sort: Option<&Value>) -> Result<Vec<(String, bool)>, QueryError> {
    let Some(sort) = sort else {
        return Ok(Vec::new());
    };
    let items: Vec<&Value> = match sort {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::String(field) => Ok((field.clone(), false)),
            Value::Object(map) if map.len() == 1 => {
                let (field, spec) = map
                    .iter()
                    .next()
                    .ok_or_else(|| QueryError("empty sort".into()))?;
                let order = spec.get("order").unwrap_or(spec).as_str().unwrap_or("asc");
                Ok((field.clone(), order == "desc"))
            }
            _ => Err(QueryError(format!("cannot sort by {item}"))),
        })
        .collect()
}

/// Orders two sources by the sort keys (missing values last).
pub fn compare_sources(a: &Value, b: &Value, keys: &[(String, bool)]) -> Ordering {
    for (field, descending) in keys {
        let left = values_at(a, field).first().copied().cloned();
        let right = values_at(b, field).first().copied().cloned();
        let ordering = match (&left, &right) {
            (Some(l), Some(r)) => compare(l, r).unwrap_or(Ordering::Equal),
            (Some(_), None) => return Ordering::Less,
            (None, Some(_)) => return Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let ordering = if *descending {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn term_range_and_bool() {
        let doc = json!({"position": 7, "intent": "ELEMENT_ACTIVATED",
                         "value": {"processInstanceKey": 2251799813685249_i64, "tags": ["a", "b"]}});
        let q = |q: Value| matches(&q, &doc).unwrap();
        assert!(q(
            json!({"term": {"value.processInstanceKey": 2251799813685249_i64}})
        ));
        assert!(q(
            json!({"term": {"value.processInstanceKey": "2251799813685249"}})
        ));
        assert!(!q(json!({"term": {"intent": "ELEMENT_COMPLETED"}})));
        assert!(q(json!({"terms": {"value.tags": ["x", "b"]}})));
        assert!(q(json!({"range": {"position": {"gte": 7, "lt": 8}}})));
        assert!(!q(json!({"range": {"position": {"gt": 7}}})));
        assert!(q(
            json!({"bool": {"filter": [{"term": {"intent": "ELEMENT_ACTIVATED"}}],
                                   "must_not": {"term": {"position": 8}}}})
        ));
        assert!(!q(
            json!({"bool": {"should": [{"term": {"position": 1}}, {"term": {"position": 2}}]}})
        ));
        assert!(q(json!({"exists": {"field": "value.tags"}})));
        assert!(matches(&json!({"fuzzy": {}}), &doc).is_err());
        assert!(matches(&json!({"range": {"position": {"near": 3}}}), &doc).is_err());
    }

    #[test]
    fn sorting() {
        let keys = sort_keys(Some(&json!([{"position": {"order": "desc"}}]))).unwrap();
        let a = json!({"position": 1});
        let b = json!({"position": 2});
        assert_eq!(compare_sources(&a, &b, &keys), Ordering::Greater);
        let keys = sort_keys(Some(&json!(["position"]))).unwrap();
        assert_eq!(compare_sources(&a, &b, &keys), Ordering::Less);
    }
}
