//! FEEL values, and their conversion from and to JSON.

use std::fmt::Write as _;
use std::sync::Arc;

use rust_decimal::Decimal;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use serde_json::{Map, Number, Value as Json};

use crate::ast::Lambda;
use crate::calendar::{
    self, MILLIS_PER_DAY, MILLIS_PER_HOUR, MILLIS_PER_MINUTE, MILLIS_PER_SECOND,
};
use crate::zone;

/// How deeply lists, contexts and ranges may nest inside one another. Checked where a
/// value can grow without the parser's limits seeing it (a context entry wrapping the
/// previous one, a function calling itself, a key path): walking a value (copying,
/// comparing, dropping, writing JSON) recurses once per level.
pub(crate) const MAX_VALUE_NESTING: usize = 256;

/// Whether `value` nests deeper than [`MAX_VALUE_NESTING`] levels.
pub(crate) fn too_nested(value: &Value) -> bool {
    fn deeper_than(value: &Value, limit: usize) -> bool {
        let Some(limit) = limit.checked_sub(1) else {
            return matches!(value, Value::List(_) | Value::Context(_) | Value::Range(_));
        };
        match value {
            Value::List(items) => items.iter().any(|item| deeper_than(item, limit)),
            Value::Context(entries) => entries.iter().any(|(_, value)| deeper_than(value, limit)),
            Value::Range(range) => {
                deeper_than(&range.start, limit) || deeper_than(&range.end, limit)
            }
            _ => false,
        }
    }
    deeper_than(value, MAX_VALUE_NESTING)
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Decimal),
    String(String),
    /// Days since 1970-01-01.
    Date(i64),
    Time(Time),
    DateTime(DateTime),
    /// Days and time duration, in milliseconds.
    DayTime(i64),
    /// Years and months duration, in months.
    YearMonth(i64),
    List(Vec<Value>),
    /// Entries in the order they were written or inserted.
    Context(Vec<(String, Value)>),
    Range(Box<Range>),
    /// A function value made by a function literal.
    Function(Arc<Function>),
}

/// A function literal together with the values of the enclosing bindings its body
/// reads (a closure).
pub(crate) struct Function {
    pub(crate) lambda: Arc<Lambda>,
    pub(crate) captured: Vec<(String, Value)>,
}

/// A function equals only itself: comparing bodies and captured values would walk
/// chains of closures of any length.
impl PartialEq for Function {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let params: Vec<&str> = self
            .lambda
            .params
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        write!(f, "function({})", params.join(", "))
    }
}

/// Closures can capture closures without a bound on the chain (`{f0: function() 1,
/// f1: function() f0(), f2: function() f1(), …}`), so dropping one must not recurse once
/// per link: what it captured is taken apart here, with a work list.
impl Drop for Function {
    fn drop(&mut self) {
        let mut pending: Vec<Value> = std::mem::take(&mut self.captured)
            .into_iter()
            .map(|(_, value)| value)
            .collect();
        while let Some(value) = pending.pop() {
            match value {
                Value::Function(function) => {
                    // Only the last holder takes it apart; the rest just let go.
                    if let Ok(mut function) = Arc::try_unwrap(function) {
                        pending.extend(
                            std::mem::take(&mut function.captured)
                                .into_iter()
                                .map(|(_, value)| value),
                        );
                    }
                }
                Value::List(items) => pending.extend(items),
                Value::Context(entries) => pending.extend(entries.into_iter().map(|(_, v)| v)),
                Value::Range(range) => {
                    let Range { start, end, .. } = *range;
                    pending.push(start);
                    pending.push(end);
                }
                _ => {}
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Time {
    /// Milliseconds since midnight, `0..MILLIS_PER_DAY`.
    pub(crate) millis: i64,
    /// Seconds east of UTC, if the time has an offset.
    pub(crate) offset: Option<i32>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Zone {
    /// No zone: a local date-time, comparable only with other local ones.
    Local,
    Offset(i32),
    /// A zone id and its offset at this date-time.
    Named(String, i32),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DateTime {
    /// Wall-clock milliseconds since 1970-01-01T00:00, as if in UTC.
    pub(crate) local: i64,
    pub(crate) zone: Zone,
}

impl DateTime {
    pub(crate) fn offset(&self) -> Option<i32> {
        match &self.zone {
            Zone::Local => None,
            Zone::Offset(offset) | Zone::Named(_, offset) => Some(*offset),
        }
    }

    /// Milliseconds since the epoch, if the date-time has a zone.
    pub(crate) fn instant(&self) -> Option<i64> {
        self.offset()
            .map(|offset| self.local - i64::from(offset) * MILLIS_PER_SECOND)
    }

    /// Builds a date-time at a UTC instant, keeping `zone`'s kind (ids get their
    /// offset at that instant).
    pub(crate) fn at_instant(instant: i64, zone: &Zone) -> Result<DateTime, String> {
        let zone = match zone {
            Zone::Named(id, _) => Zone::Named(id.clone(), zone::offset_at_instant(id, instant)?),
            other => other.clone(),
        };
        let offset = match zone {
            Zone::Local => 0,
            Zone::Offset(offset) | Zone::Named(_, offset) => offset,
        };
        let local = instant
            .checked_add(i64::from(offset) * MILLIS_PER_SECOND)
            .ok_or_else(|| "the date-time is out of range".to_owned())?;
        checked_date_time(DateTime { local, zone })
    }

    /// Builds a date-time from wall-clock fields, resolving a zone id's offset there.
    pub(crate) fn at_local(local: i64, zone: &Zone) -> Result<DateTime, String> {
        let zone = match zone {
            Zone::Named(id, _) => Zone::Named(id.clone(), zone::offset_for_local(id, local)?),
            other => other.clone(),
        };
        match zone {
            // A wall-clock time in a gap moves forward by the gap's length.
            Zone::Named(ref id, offset) => {
                let instant = local - i64::from(offset) * MILLIS_PER_SECOND;
                DateTime::at_instant(instant, &Zone::Named(id.clone(), offset))
            }
            other => checked_date_time(DateTime { local, zone: other }),
        }
    }

    pub(crate) fn date(&self) -> i64 {
        self.local.div_euclid(MILLIS_PER_DAY)
    }

    pub(crate) fn time_millis(&self) -> i64 {
        self.local.rem_euclid(MILLIS_PER_DAY)
    }
}

fn checked_date_time(value: DateTime) -> Result<DateTime, String> {
    let (year, ..) = calendar::civil_from_days(value.date());
    if (calendar::MIN_YEAR..=calendar::MAX_YEAR).contains(&year) {
        Ok(value)
    } else {
        Err("the date-time is out of range".to_owned())
    }
}

pub(crate) fn checked_date(days: i64) -> Result<Value, String> {
    let (year, ..) = calendar::civil_from_days(days);
    if (calendar::MIN_YEAR..=calendar::MAX_YEAR).contains(&year) {
        Ok(Value::Date(days))
    } else {
        Err("the date is out of range".to_owned())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Range {
    pub(crate) start: Value,
    pub(crate) start_closed: bool,
    pub(crate) end: Value,
    pub(crate) end_closed: bool,
}

impl Value {
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Date(_) => "date",
            Value::Time(_) => "time",
            Value::DateTime(_) => "date and time",
            Value::DayTime(_) => "days and time duration",
            Value::YearMonth(_) => "years and months duration",
            Value::List(_) => "list",
            Value::Context(_) => "context",
            Value::Range(_) => "range",
            Value::Function(_) => "function",
        }
    }

    /// A short rendering for error messages: the type and, for scalars, the value.
    pub(crate) fn describe(&self) -> String {
        match self {
            Value::Null => "null".to_owned(),
            Value::List(_) | Value::Context(_) | Value::Range(_) | Value::Function(_) => {
                self.type_name().to_owned()
            }
            Value::String(text) => {
                let shown: String = text.chars().take(40).collect();
                let ellipsis = if text.chars().count() > 40 { "…" } else { "" };
                format!("string \"{shown}{ellipsis}\"")
            }
            other => format!("{} {}", other.type_name(), other.to_feel_string()),
        }
    }

    /// The text FEEL's `string()` gives, and the form temporal values take in JSON.
    pub(crate) fn to_feel_string(&self) -> String {
        match self {
            Value::Null => "null".to_owned(),
            Value::Bool(value) => value.to_string(),
            Value::Number(number) => number.normalize().to_string(),
            Value::String(text) => text.clone(),
            Value::Date(days) => format_date(*days),
            Value::Time(time) => {
                let mut text = format_time_of_day(time.millis);
                if let Some(offset) = time.offset {
                    text.push_str(&format_offset(offset));
                }
                text
            }
            Value::DateTime(value) => format_date_time(value),
            Value::DayTime(millis) => format_day_time(*millis),
            Value::YearMonth(months) => format_year_month(*months),
            Value::List(items) => {
                let parts: Vec<String> = items.iter().map(Value::to_feel_literal).collect();
                format!("[{}]", parts.join(", "))
            }
            Value::Context(entries) => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|(key, value)| format!("{key}:{}", value.to_feel_literal()))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
            Value::Range(range) => format!(
                "{}{}..{}{}",
                if range.start_closed { "[" } else { "(" },
                range.start.to_feel_literal(),
                range.end.to_feel_literal(),
                if range.end_closed { "]" } else { ")" },
            ),
            Value::Function(function) => {
                let params: Vec<&str> = function
                    .lambda
                    .params
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect();
                format!("function({})", params.join(", "))
            }
        }
    }

    /// Like [`Value::to_feel_string`], but strings are quoted (inside lists/contexts).
    fn to_feel_literal(&self) -> String {
        match self {
            Value::String(text) => format!("\"{text}\""),
            other => other.to_feel_string(),
        }
    }
}

pub(crate) fn format_date(days: i64) -> String {
    let (year, month, day) = calendar::civil_from_days(days);
    if (0..=9999).contains(&year) {
        format!("{year:04}-{month:02}-{day:02}")
    } else {
        // ISO 8601 expanded years carry a sign.
        let sign = if year < 0 { '-' } else { '+' };
        format!("{sign}{:04}-{month:02}-{day:02}", year.abs())
    }
}

pub(crate) fn format_time_of_day(millis: i64) -> String {
    let hours = millis / MILLIS_PER_HOUR;
    let minutes = millis % MILLIS_PER_HOUR / MILLIS_PER_MINUTE;
    let seconds = millis % MILLIS_PER_MINUTE / MILLIS_PER_SECOND;
    let fraction = millis % MILLIS_PER_SECOND;
    let mut text = format!("{hours:02}:{minutes:02}:{seconds:02}");
    if fraction != 0 {
        let _ = write!(text, ".{fraction:03}");
    }
    text
}

pub(crate) fn format_offset(offset_seconds: i32) -> String {
    if offset_seconds == 0 {
        return "Z".to_owned();
    }
    let sign = if offset_seconds < 0 { '-' } else { '+' };
    let total = offset_seconds.abs();
    let mut text = format!("{sign}{:02}:{:02}", total / 3600, total % 3600 / 60);
    if total % 60 != 0 {
        let _ = write!(text, ":{:02}", total % 60);
    }
    text
}

fn format_date_time(value: &DateTime) -> String {
    let mut text = format!(
        "{}T{}",
        format_date(value.date()),
        format_time_of_day(value.time_millis())
    );
    match &value.zone {
        Zone::Local => {}
        Zone::Offset(offset) => text.push_str(&format_offset(*offset)),
        Zone::Named(id, offset) => {
            text.push_str(&format_offset(*offset));
            let _ = write!(text, "[{id}]");
        }
    }
    text
}

pub(crate) fn format_day_time(millis: i64) -> String {
    if millis == 0 {
        return "PT0S".to_owned();
    }
    let sign = if millis < 0 { "-" } else { "" };
    let total = millis.unsigned_abs();
    let day = MILLIS_PER_DAY.unsigned_abs();
    let hour = MILLIS_PER_HOUR.unsigned_abs();
    let minute = MILLIS_PER_MINUTE.unsigned_abs();
    let second = MILLIS_PER_SECOND.unsigned_abs();
    let (days, hours, minutes) = (total / day, total % day / hour, total % hour / minute);
    let (seconds, fraction) = (total % minute / second, total % second);
    let mut text = format!("{sign}P");
    if days > 0 {
        let _ = write!(text, "{days}D");
    }
    if hours > 0 || minutes > 0 || seconds > 0 || fraction > 0 {
        text.push('T');
        if hours > 0 {
            let _ = write!(text, "{hours}H");
        }
        if minutes > 0 {
            let _ = write!(text, "{minutes}M");
        }
        if fraction > 0 {
            let fraction = format!("{fraction:03}");
            let _ = write!(text, "{seconds}.{}S", fraction.trim_end_matches('0'));
        } else if seconds > 0 {
            let _ = write!(text, "{seconds}S");
        }
    }
    text
}

pub(crate) fn format_year_month(months: i64) -> String {
    if months == 0 {
        return "P0M".to_owned();
    }
    let sign = if months < 0 { "-" } else { "" };
    let total = months.unsigned_abs();
    let (years, rest) = (total / 12, total % 12);
    let mut text = format!("{sign}P");
    if years > 0 {
        let _ = write!(text, "{years}Y");
    }
    if rest > 0 {
        let _ = write!(text, "{rest}M");
    }
    text
}

/// JSON to FEEL. Numbers that do not fit a 28-digit decimal are an error.
pub(crate) fn from_json(json: &Json) -> Result<Value, String> {
    Ok(match json {
        Json::Null => Value::Null,
        Json::Bool(value) => Value::Bool(*value),
        Json::Number(number) => Value::Number(number_from_json(number)?),
        Json::String(text) => Value::String(text.clone()),
        Json::Array(items) => Value::List(items.iter().map(from_json).collect::<Result<_, _>>()?),
        Json::Object(entries) => Value::Context(
            entries
                .iter()
                .map(|(key, value)| Ok((key.clone(), from_json(value)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

fn number_from_json(number: &Number) -> Result<Decimal, String> {
    if let Some(integer) = number.as_i64() {
        return Ok(Decimal::from(integer));
    }
    if let Some(integer) = number.as_u64() {
        return Ok(Decimal::from(integer));
    }
    let float = number.as_f64().unwrap_or(f64::NAN);
    decimal_from_f64(float).ok_or_else(|| format!("the number {number} is too large for FEEL"))
}

/// The decimal a double prints as: its shortest round-trip text, so 0.1 stays 0.1 and
/// `sqrt(2)` keeps the double's 17 digits (formatted on the stack: this runs for every
/// non-integer variable read). `None` for NaN, infinities and numbers out of range.
pub(crate) fn decimal_from_f64(float: f64) -> Option<Decimal> {
    let mut buffer = StackText::default();
    let _ = write!(buffer, "{float:e}");
    Decimal::from_scientific(buffer.as_str())
        .ok()
        .or_else(|| Decimal::from_f64(float))
}

/// FEEL to JSON. Integral numbers become JSON integers; temporal values become ISO
/// strings; ranges have no JSON form.
pub(crate) fn to_json(value: &Value) -> Result<Json, String> {
    Ok(match value {
        Value::Null => Json::Null,
        Value::Bool(value) => Json::Bool(*value),
        Value::Number(number) => number_to_json(*number),
        Value::String(text) => Json::String(text.clone()),
        Value::Date(_)
        | Value::Time(_)
        | Value::DateTime(_)
        | Value::DayTime(_)
        | Value::YearMonth(_) => Json::String(value.to_feel_string()),
        Value::List(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Context(entries) => {
            let mut map = Map::new();
            for (key, value) in entries {
                map.insert(key.clone(), to_json(value)?);
            }
            Json::Object(map)
        }
        Value::Range(_) => {
            return Err(format!(
                "the result is a range ({}), which has no JSON form",
                value.to_feel_string()
            ));
        }
        Value::Function(_) => {
            return Err(format!(
                "the result is a function ({}), which has no JSON form",
                value.to_feel_string()
            ));
        }
    })
}

pub(crate) fn number_to_json(number: Decimal) -> Json {
    let normalized = number.normalize();
    if normalized.scale() == 0 {
        if let Some(integer) = normalized.to_i64() {
            return Json::Number(Number::from(integer));
        }
        if let Some(integer) = normalized.to_u64() {
            return Json::Number(Number::from(integer));
        }
    }
    let Some(float) = normalized.to_f64() else {
        return Json::Null;
    };
    // 1/3*3 is 0.999…9 in 28 digits and 1.0 as a double: print it as the integer.
    if float.fract() == 0.0 && float.abs() < 9.0e15 {
        return Json::Number(Number::from(float as i64));
    }
    Number::from_f64(float).map_or(Json::Null, Json::Number)
}

/// A small text buffer on the stack; writes past its end are dropped (and then fail
/// to parse, which falls back to the slower path).
struct StackText {
    bytes: [u8; 40],
    length: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            bytes: [0; 40],
            length: 0,
        }
    }
}

impl StackText {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.length]).unwrap_or("")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let end = self.length + text.len();
        if end > self.bytes.len() {
            return Err(std::fmt::Error);
        }
        self.bytes[self.length..end].copy_from_slice(text.as_bytes());
        self.length = end;
        Ok(())
    }
}
