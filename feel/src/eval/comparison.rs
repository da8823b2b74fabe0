//! Equality and ordering of values, and whether a range holds a value.

use std::cmp::Ordering;

use super::Outcome;
use crate::ast::CompareOp;
use crate::calendar::MILLIS_PER_SECOND;
use crate::value::{Range, Time, Value};

pub(super) fn range_contains(range: &Range, value: &Value) -> Outcome {
    let start_op = if range.start_closed {
        CompareOp::GreaterEqual
    } else {
        CompareOp::Greater
    };
    let end_op = if range.end_closed {
        CompareOp::LessEqual
    } else {
        CompareOp::Less
    };
    let after_start = compare(start_op, value, &range.start)?;
    let before_end = compare(end_op, value, &range.end)?;
    Ok(match (after_start, before_end) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
        (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
        _ => Value::Null,
    })
}

/// `=` and `!=` are defined for every pair (`null = null` is true); ordering
/// comparisons with `null` give `null`; ordering different types is an error.
pub(crate) fn compare(op: CompareOp, left: &Value, right: &Value) -> Outcome {
    match op {
        CompareOp::Equal | CompareOp::NotEqual => {
            let equal = equals(left, right)?;
            Ok(match equal {
                Some(equal) => Value::Bool(equal == (op == CompareOp::Equal)),
                None => Value::Null,
            })
        }
        _ => {
            if matches!(left, Value::Null) || matches!(right, Value::Null) {
                return Ok(Value::Null);
            }
            let ordering = order(left, right)?;
            Ok(Value::Bool(match op {
                CompareOp::Less => ordering == Ordering::Less,
                CompareOp::LessEqual => ordering != Ordering::Greater,
                CompareOp::Greater => ordering == Ordering::Greater,
                _ => ordering != Ordering::Less,
            }))
        }
    }
}

/// Equality; `Ok(None)` where FEEL has no answer (`null` inside a list comparison).
pub(crate) fn equals(left: &Value, right: &Value) -> Result<Option<bool>, String> {
    use Value::*;
    Ok(Some(match (left, right) {
        (Null, Null) => true,
        (Null, _) | (_, Null) => false,
        (Bool(a), Bool(b)) => a == b,
        (Number(a), Number(b)) => a == b,
        (String(a), String(b)) => a == b,
        (List(a), List(b)) => {
            if a.len() != b.len() {
                return Ok(Some(false));
            }
            for (a, b) in a.iter().zip(b) {
                match equals(a, b)? {
                    Some(true) => {}
                    other => return Ok(other),
                }
            }
            true
        }
        (Context(a), Context(b)) => {
            if a.len() != b.len() {
                return Ok(Some(false));
            }
            for (key, a) in a {
                let Some((_, b)) = b.iter().find(|(other, _)| other == key) else {
                    return Ok(Some(false));
                };
                match equals(a, b)? {
                    Some(true) => {}
                    other => return Ok(other),
                }
            }
            true
        }
        (Range(a), Range(b)) => {
            a.start_closed == b.start_closed
                && a.end_closed == b.end_closed
                && equals(&a.start, &b.start)? == Some(true)
                && equals(&a.end, &b.end)? == Some(true)
        }
        (Date(_), Date(_))
        | (Time(_), Time(_))
        | (DateTime(_), DateTime(_))
        | (DayTime(_), DayTime(_))
        | (YearMonth(_), YearMonth(_)) => order(left, right)? == Ordering::Equal,
        _ => {
            return Err(format!(
                "can't compare {} with {}",
                left.describe(),
                right.describe()
            ));
        }
    }))
}

pub(crate) fn order(left: &Value, right: &Value) -> Result<Ordering, String> {
    use Value::*;
    match (left, right) {
        (Number(a), Number(b)) => Ok(a.cmp(b)),
        (String(a), String(b)) => Ok(a.cmp(b)),
        (Date(a), Date(b)) => Ok(a.cmp(b)),
        (DayTime(a), DayTime(b)) => Ok(a.cmp(b)),
        (YearMonth(a), YearMonth(b)) => Ok(a.cmp(b)),
        (Time(a), Time(b)) => time_order(a, b),
        (DateTime(a), DateTime(b)) => match (a.instant(), b.instant()) {
            (Some(a), Some(b)) => Ok(a.cmp(&b)),
            (None, None) => Ok(a.local.cmp(&b.local)),
            _ => Err(format!(
                "can't compare {} with {}: one has a zone and the other has none",
                left.describe(),
                right.describe()
            )),
        },
        _ => Err(format!(
            "can't compare {} with {}",
            left.describe(),
            right.describe()
        )),
    }
}

fn time_order(a: &Time, b: &Time) -> Result<Ordering, String> {
    match (a.offset, b.offset) {
        (Some(offset_a), Some(offset_b)) => {
            let a = a.millis - i64::from(offset_a) * MILLIS_PER_SECOND;
            let b = b.millis - i64::from(offset_b) * MILLIS_PER_SECOND;
            Ok(a.cmp(&b))
        }
        (None, None) => Ok(a.millis.cmp(&b.millis)),
        _ => Err("can't compare a time with an offset and one without".to_owned()),
    }
}
