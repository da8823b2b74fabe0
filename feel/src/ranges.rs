//! The range functions (`before`, `meets`, `overlaps`, `during`, …): how two points, a
//! point and a range, or two ranges lie to each other, as the DMN text defines them.
//! Comparisons follow FEEL's three-valued logic: a comparison with `null` (a missing
//! variable, an open end) is `null`, and so is a relation that depends on one.

use crate::ast::CompareOp;
use crate::builtins::Builtin;
use crate::eval::{self, Outcome};
use crate::value::{Range, Value};

/// `Some(true)`, `Some(false)` or `None` for `null`.
type Truth = Option<bool>;

fn and(terms: &[Truth]) -> Truth {
    if terms.contains(&Some(false)) {
        Some(false)
    } else if terms.iter().all(|term| *term == Some(true)) {
        Some(true)
    } else {
        None
    }
}

fn or(terms: &[Truth]) -> Truth {
    if terms.contains(&Some(true)) {
        Some(true)
    } else if terms.iter().all(|term| *term == Some(false)) {
        Some(false)
    } else {
        None
    }
}

fn flag(value: bool) -> Truth {
    Some(value)
}

/// Compares two points; `null` on either side gives `null`.
fn cmp(op: CompareOp, left: &Value, right: &Value) -> Result<Truth, String> {
    if matches!(left, Value::Null) || matches!(right, Value::Null) {
        return Ok(None);
    }
    Ok(match eval::compare(op, left, right)? {
        Value::Bool(value) => Some(value),
        _ => None,
    })
}

fn lt(left: &Value, right: &Value) -> Result<Truth, String> {
    cmp(CompareOp::Less, left, right)
}

fn gt(left: &Value, right: &Value) -> Result<Truth, String> {
    cmp(CompareOp::Greater, left, right)
}

fn eq(left: &Value, right: &Value) -> Result<Truth, String> {
    cmp(CompareOp::Equal, left, right)
}

/// The two arguments: a point (any value but a range) or a range each.
enum Pair<'v> {
    Points(&'v Value, &'v Value),
    PointRange(&'v Value, &'v Range),
    RangePoint(&'v Range, &'v Value),
    Ranges(&'v Range, &'v Range),
}

pub(crate) fn call(builtin: Builtin, first: Value, second: Value) -> Outcome {
    if matches!(first, Value::Null) || matches!(second, Value::Null) {
        return Ok(Value::Null);
    }
    let name = builtin.name();
    let pair = match (&first, &second) {
        (Value::Range(a), Value::Range(b)) => Pair::Ranges(a, b),
        (Value::Range(a), b) => Pair::RangePoint(a, b),
        (a, Value::Range(b)) => Pair::PointRange(a, b),
        (a, b) => Pair::Points(a, b),
    };
    let unsupported = || {
        format!(
            "{name}() can't relate {} and {}: it takes {}",
            first.describe(),
            second.describe(),
            match builtin {
                Builtin::Meets
                | Builtin::MetBy
                | Builtin::Overlaps
                | Builtin::OverlapsBefore
                | Builtin::OverlapsAfter => "two ranges",
                Builtin::Finishes | Builtin::During | Builtin::Starts => {
                    "a point and a range, or two ranges"
                }
                Builtin::FinishedBy | Builtin::Includes | Builtin::StartedBy => {
                    "a range and a point, or two ranges"
                }
                Builtin::Coincides => "two points or two ranges",
                _ => "points and ranges",
            }
        )
    };
    let truth = relate(builtin, &pair)
        .map_err(|reason| format!("{name}(): {reason}"))?
        .ok_or_else(unsupported)?;
    Ok(truth.map_or(Value::Null, Value::Bool))
}

/// The relation, or `Ok(None)` when the function has no signature for these kinds.
fn relate(builtin: Builtin, pair: &Pair<'_>) -> Result<Option<Truth>, String> {
    use Builtin as B;
    use Pair::*;
    let truth = match (builtin, pair) {
        (B::Before, Points(a, b)) => lt(a, b)?,
        (B::Before, PointRange(p, r)) => or(&[
            lt(p, &r.start)?,
            and(&[eq(p, &r.start)?, flag(!r.start_closed)]),
        ]),
        (B::Before, RangePoint(r, p)) => {
            or(&[lt(&r.end, p)?, and(&[eq(&r.end, p)?, flag(!r.end_closed)])])
        }
        (B::Before, Ranges(r1, r2)) => or(&[
            lt(&r1.end, &r2.start)?,
            and(&[
                flag(!r1.end_closed || !r2.start_closed),
                eq(&r1.end, &r2.start)?,
            ]),
        ]),
        (B::After, Points(a, b)) => gt(a, b)?,
        (B::After, PointRange(p, r)) => {
            or(&[gt(p, &r.end)?, and(&[eq(p, &r.end)?, flag(!r.end_closed)])])
        }
        (B::After, RangePoint(r, p)) => or(&[
            gt(&r.start, p)?,
            and(&[eq(&r.start, p)?, flag(!r.start_closed)]),
        ]),
        (B::After, Ranges(r1, r2)) => or(&[
            gt(&r1.start, &r2.end)?,
            and(&[
                flag(!r1.start_closed || !r2.end_closed),
                eq(&r1.start, &r2.end)?,
            ]),
        ]),
        (B::Meets, Ranges(r1, r2)) => and(&[
            flag(r1.end_closed && r2.start_closed),
            eq(&r1.end, &r2.start)?,
        ]),
        (B::MetBy, Ranges(r1, r2)) => and(&[
            flag(r1.start_closed && r2.end_closed),
            eq(&r1.start, &r2.end)?,
        ]),
        (B::Overlaps, Ranges(r1, r2)) => and(&[
            or(&[
                gt(&r1.end, &r2.start)?,
                and(&[
                    eq(&r1.end, &r2.start)?,
                    flag(r1.end_closed && r2.start_closed),
                ]),
            ]),
            or(&[
                lt(&r1.start, &r2.end)?,
                and(&[
                    eq(&r1.start, &r2.end)?,
                    flag(r1.start_closed && r2.end_closed),
                ]),
            ]),
        ]),
        (B::OverlapsBefore, Ranges(r1, r2)) => overlaps_before(r1, r2)?,
        (B::OverlapsAfter, Ranges(r1, r2)) => overlaps_before(r2, r1)?,
        (B::Finishes, PointRange(p, r)) | (B::FinishedBy, RangePoint(r, p)) => {
            and(&[flag(r.end_closed), eq(&r.end, p)?])
        }
        (B::Finishes, Ranges(r1, r2)) => finishes(r1, r2)?,
        (B::FinishedBy, Ranges(r1, r2)) => finishes(r2, r1)?,
        (B::Includes, RangePoint(r, p)) | (B::During, PointRange(p, r)) => or(&[
            and(&[lt(&r.start, p)?, gt(&r.end, p)?]),
            and(&[eq(&r.start, p)?, flag(r.start_closed)]),
            and(&[eq(&r.end, p)?, flag(r.end_closed)]),
        ]),
        (B::Includes, Ranges(r1, r2)) => includes(r1, r2)?,
        (B::During, Ranges(r1, r2)) => includes(r2, r1)?,
        (B::Starts, PointRange(p, r)) | (B::StartedBy, RangePoint(r, p)) => {
            and(&[eq(&r.start, p)?, flag(r.start_closed)])
        }
        (B::Starts, Ranges(r1, r2)) => starts(r1, r2)?,
        (B::StartedBy, Ranges(r1, r2)) => starts(r2, r1)?,
        (B::Coincides, Points(a, b)) => eq(a, b)?,
        (B::Coincides, Ranges(r1, r2)) => and(&[
            eq(&r1.start, &r2.start)?,
            flag(r1.start_closed == r2.start_closed),
            eq(&r1.end, &r2.end)?,
            flag(r1.end_closed == r2.end_closed),
        ]),
        _ => return Ok(None),
    };
    Ok(Some(truth))
}

/// `r1` starts before `r2` and ends inside it.
fn overlaps_before(r1: &Range, r2: &Range) -> Result<Truth, String> {
    Ok(and(&[
        or(&[
            lt(&r1.start, &r2.start)?,
            and(&[
                eq(&r1.start, &r2.start)?,
                flag(r1.start_closed && !r2.start_closed),
            ]),
        ]),
        or(&[
            gt(&r1.end, &r2.start)?,
            and(&[
                eq(&r1.end, &r2.start)?,
                flag(r1.end_closed && r2.start_closed),
            ]),
        ]),
        or(&[
            lt(&r1.end, &r2.end)?,
            and(&[eq(&r1.end, &r2.end)?, flag(!r1.end_closed || r2.end_closed)]),
        ]),
    ]))
}

/// `r1` ends where `r2` ends and starts inside it.
fn finishes(r1: &Range, r2: &Range) -> Result<Truth, String> {
    Ok(and(&[
        flag(r1.end_closed == r2.end_closed),
        eq(&r1.end, &r2.end)?,
        or(&[
            gt(&r1.start, &r2.start)?,
            and(&[
                eq(&r1.start, &r2.start)?,
                flag(!r1.start_closed || r2.start_closed),
            ]),
        ]),
    ]))
}

/// `r2` lies within `r1`.
fn includes(r1: &Range, r2: &Range) -> Result<Truth, String> {
    Ok(and(&[
        or(&[
            lt(&r1.start, &r2.start)?,
            and(&[
                eq(&r1.start, &r2.start)?,
                flag(r1.start_closed || !r2.start_closed),
            ]),
        ]),
        or(&[
            gt(&r1.end, &r2.end)?,
            and(&[eq(&r1.end, &r2.end)?, flag(r1.end_closed || !r2.end_closed)]),
        ]),
    ]))
}

/// `r1` starts where `r2` starts and ends inside it.
fn starts(r1: &Range, r2: &Range) -> Result<Truth, String> {
    Ok(and(&[
        eq(&r1.start, &r2.start)?,
        flag(r1.start_closed == r2.start_closed),
        or(&[
            gt(&r2.end, &r1.end)?,
            and(&[eq(&r2.end, &r1.end)?, flag(!r1.end_closed || r2.end_closed)]),
        ]),
    ]))
}
