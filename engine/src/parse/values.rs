//! Attribute and text values: `=`-prefixed FEEL, static values, timers and mapping
//! targets. Each returns the message of a problem; the caller adds element and line.

use rill_feel::temporal::{parse_cycle, parse_date_time, parse_duration};
use rill_feel::{Expression, FeelError};

use crate::model::{TimerDefinition, ValueOrExpr};

/// Compiles the FEEL text after the `=` of a Modeler attribute.
pub(super) fn expression(field: &str, source: &str) -> Result<Expression, String> {
    if source.trim().is_empty() {
        return Err(format!("{field} is '=' with no expression after it"));
    }
    Expression::compile(source).map_err(|error| format!("{field}: {error}"))
}

/// A value that is FEEL when it starts with `=`, a static string otherwise.
pub(super) fn string_or_expr(field: &str, raw: &str) -> Result<ValueOrExpr<String>, String> {
    match raw.strip_prefix('=') {
        Some(source) => expression(field, source).map(ValueOrExpr::Expr),
        None => Ok(ValueOrExpr::Static(raw.to_owned())),
    }
}

/// `retries` of a task definition or listener: `=expr` or a non-negative integer. Any
/// other static text deploys, as in Zeebe 8.8, which reads it as a constant and fails
/// when it creates the job: it becomes the string constant, which the job's retries
/// then refuse with an incident.
pub(super) fn retries(raw: &str) -> Result<ValueOrExpr<i32>, String> {
    if let Some(source) = raw.strip_prefix('=') {
        return expression("retries", source).map(ValueOrExpr::Expr);
    }
    Ok(match raw.trim().parse::<i32>() {
        Ok(retries) if retries >= 0 => ValueOrExpr::Static(retries),
        _ => ValueOrExpr::Expr(Expression::string_literal(raw)),
    })
}

/// The three ways to write a timer, by element name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimerKind {
    Duration,
    Date,
    Cycle,
}

impl TimerKind {
    pub fn from_element_name(name: &str) -> Option<TimerKind> {
        match name {
            "timeDuration" => Some(TimerKind::Duration),
            "timeDate" => Some(TimerKind::Date),
            "timeCycle" => Some(TimerKind::Cycle),
            _ => None,
        }
    }

    pub fn element_name(self) -> &'static str {
        match self {
            TimerKind::Duration => "timeDuration",
            TimerKind::Date => "timeDate",
            TimerKind::Cycle => "timeCycle",
        }
    }
}

/// A timer value: FEEL after `=`, otherwise ISO 8601 parsed now, at deploy time.
pub(super) fn timer(kind: TimerKind, raw: &str) -> Result<TimerDefinition, String> {
    let field = kind.element_name();
    if raw.is_empty() {
        return Err(format!(
            "the timer's {field} is empty; write an ISO 8601 value or an expression starting with '='"
        ));
    }
    if let Some(source) = raw.strip_prefix('=') {
        let expr = expression(field, source)?;
        return Ok(match kind {
            TimerKind::Duration => TimerDefinition::Duration(ValueOrExpr::Expr(expr)),
            TimerKind::Date => TimerDefinition::Date(ValueOrExpr::Expr(expr)),
            TimerKind::Cycle => TimerDefinition::Cycle(ValueOrExpr::Expr(expr)),
        });
    }
    // The reason from rill-feel usually quotes the value already.
    let malformed = |error: FeelError| {
        let reason = feel_reason(&error);
        if reason.contains(raw) {
            format!("malformed {field}: {reason}")
        } else {
            format!("malformed {field} '{raw}': {reason}")
        }
    };
    match kind {
        TimerKind::Duration => parse_duration(raw)
            .map(|d| TimerDefinition::Duration(ValueOrExpr::Static(d)))
            .map_err(malformed),
        TimerKind::Date => parse_date_time(raw)
            .map(|d| TimerDefinition::Date(ValueOrExpr::Static(d)))
            .map_err(malformed),
        TimerKind::Cycle if !raw.trim_start().starts_with('R') => {
            crate::model::CronSchedule::parse(raw)
                .map(TimerDefinition::Cron)
                .map_err(|reason| {
                    format!(
                        "malformed {field} '{raw}': neither an ISO 8601 cycle (like 'R5/PT10S') \
                         nor a cron expression ({reason})"
                    )
                })
        }
        TimerKind::Cycle => parse_cycle(raw)
            .map(|c| TimerDefinition::Cycle(ValueOrExpr::Static(c)))
            .map_err(malformed),
    }
}

fn feel_reason(error: &FeelError) -> &str {
    match error {
        FeelError::Syntax { reason, .. } | FeelError::Evaluation { reason, .. } => reason,
    }
}

/// Characters that end a FEEL name or start an operator, so cannot be in a variable
/// name that a mapping writes.
const NOT_IN_NAME: &[char] = &[
    '+', '-', '*', '/', '=', '<', '>', '!', '?', ',', ';', ':', '(', ')', '[', ']', '{', '}', '"',
    '\'', '`', '@', '#', '%', '&', '|', '\\', '^', '~',
];

/// A mapping target: a variable name or a dotted path into a context.
pub(super) fn target_path(raw: &str) -> Result<Vec<String>, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err("the mapping has no target; name the variable to write".to_owned());
    }
    let mut path = Vec::new();
    for segment in raw.split('.') {
        let valid = !segment.is_empty()
            && !segment.starts_with(|c: char| c.is_ascii_digit())
            && !segment.contains(|c: char| c.is_whitespace() || NOT_IN_NAME.contains(&c));
        if !valid {
            return Err(format!(
                "the mapping target '{raw}' is not a variable name or a dotted path of names \
                 (e.g. 'amount' or 'payment.transactionId')"
            ));
        }
        path.push(segment.to_owned());
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_retries_are_whole_numbers_or_a_text_that_fails_later() {
        assert!(matches!(retries("5"), Ok(ValueOrExpr::Static(5))));
        assert!(matches!(retries(" 0 "), Ok(ValueOrExpr::Static(0))));
        for text in ["-1", "three", "2.5", "", "99999999999"] {
            match retries(text) {
                Ok(ValueOrExpr::Expr(constant)) => {
                    let value = constant.evaluate(&serde_json::Map::new(), 0).ok();
                    assert_eq!(value, Some(serde_json::Value::from(text)), "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(retries("= ").is_err());
    }

    #[test]
    fn target_paths_split_on_dots() {
        assert_eq!(target_path("amount").ok(), Some(vec!["amount".to_owned()]));
        assert_eq!(
            target_path("payment.transactionId").ok(),
            Some(vec!["payment".to_owned(), "transactionId".to_owned()])
        );
        for bad in [
            "",
            "a..b",
            ".a",
            "a.",
            "1st",
            "order total",
            "a-b",
            "=x",
            "a.b[1]",
        ] {
            assert!(target_path(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn string_or_expr_keeps_static_text() {
        assert!(
            matches!(string_or_expr("type", "charge-card"), Ok(ValueOrExpr::Static(s)) if s == "charge-card")
        );
        let empty = string_or_expr("type", "= ").err().unwrap_or_default();
        assert!(empty.contains("no expression after it"), "{empty}");
    }

    #[test]
    fn timer_kinds_come_from_element_names() {
        for kind in [TimerKind::Duration, TimerKind::Date, TimerKind::Cycle] {
            assert_eq!(
                TimerKind::from_element_name(kind.element_name()),
                Some(kind)
            );
        }
        assert_eq!(TimerKind::from_element_name("timeZone"), None);
        let empty = timer(TimerKind::Duration, "").err().unwrap_or_default();
        assert!(empty.contains("timeDuration is empty"), "{empty}");
    }
}
