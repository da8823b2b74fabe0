//! String functions, the regular-expression ones (`matches`, `replace`, `split`,
//! `extract`) with bounded patterns, and `uuid`.

use regex::{Regex, RegexBuilder};

use super::{Arguments, misrouted};
use crate::builtins::Builtin;
use crate::eval::{Evaluator, Outcome, number};
use crate::value::Value;

/// Calls `builtin`, one of this family's (see [`super::call`]).
pub(super) fn call(
    evaluator: &mut Evaluator<'_>,
    builtin: Builtin,
    mut args: Arguments,
) -> Outcome {
    let name = args.name;
    use Builtin as B;
    match builtin {
        B::Substring => substring(&mut args),
        B::StringLength => args.with_string(0, |text| number(text.chars().count() as i64)),
        B::UpperCase => args.with_string(0, |text| Value::String(text.to_uppercase())),
        B::LowerCase => args.with_string(0, |text| Value::String(text.to_lowercase())),
        B::Trim => args.with_string(0, |text| Value::String(text.trim().to_owned())),
        B::IsBlank => args.with_string(0, |text| Value::Bool(text.trim().is_empty())),
        B::ToBase64 => args.with_string(0, |text| Value::String(base64(text.as_bytes()))),
        // Random, but drawn from the environment's seed: the same on every replica.
        B::Uuid => {
            let (high, low) = (evaluator.draw(), evaluator.draw());
            Ok(Value::String(uuid_v4(high, low)))
        }
        B::SubstringBefore => args.with_two_strings(|text, pattern| {
            Value::String(
                text.find(pattern)
                    .map_or(String::new(), |index| text[..index].to_owned()),
            )
        }),
        B::SubstringAfter => args.with_two_strings(|text, pattern| {
            Value::String(text.find(pattern).map_or(String::new(), |index| {
                text[index + pattern.len()..].to_owned()
            }))
        }),
        B::Contains => args.with_two_strings(|text, pattern| Value::Bool(text.contains(pattern))),
        B::StartsWith => {
            args.with_two_strings(|text, pattern| Value::Bool(text.starts_with(pattern)))
        }
        B::EndsWith => args.with_two_strings(|text, pattern| Value::Bool(text.ends_with(pattern))),
        B::Matches => {
            let (Some(text), Some(pattern)) = (args.string_or_null(0)?, args.string_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            let flags = args.optional_string(2)?;
            let regex = compile_regex(name, &pattern, flags.as_deref())?;
            Ok(Value::Bool(regex.is_match(&text)))
        }
        B::Replace => {
            let (Some(text), Some(pattern), Some(replacement)) = (
                args.string_or_null(0)?,
                args.string_or_null(1)?,
                args.string_or_null(2)?,
            ) else {
                return Ok(Value::Null);
            };
            let flags = args.optional_string(3)?;
            let regex = compile_regex(name, &pattern, flags.as_deref())?;
            // Bound the result before building it: each match may add the replacement.
            let mut matches = 0usize;
            for _ in regex.find_iter(&text) {
                evaluator.step()?;
                matches += 1;
            }
            evaluator.charge(
                text.len()
                    .saturating_add(matches.saturating_mul(replacement.len())),
            )?;
            Ok(Value::String(
                regex.replace_all(&text, replacement.as_str()).into_owned(),
            ))
        }
        B::Split => {
            let (Some(text), Some(delimiter)) = (args.string_or_null(0)?, args.string_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            let regex = compile_regex(name, &delimiter, None)?;
            let mut parts = Vec::new();
            for part in regex.split(&text) {
                evaluator.step()?;
                parts.push(Value::String(part.to_owned()));
            }
            Ok(Value::List(parts))
        }
        B::Extract => {
            let (Some(text), Some(pattern)) = (args.string_or_null(0)?, args.string_or_null(1)?)
            else {
                return Ok(Value::Null);
            };
            let regex = compile_regex(name, &pattern, None)?;
            let mut found = Vec::new();
            for matched in regex.find_iter(&text) {
                evaluator.step()?;
                found.push(Value::String(matched.as_str().to_owned()));
            }
            Ok(Value::List(found))
        }
        B::StringJoin => {
            let Some(items) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let delimiter = args.optional_string(1)?.unwrap_or_default();
            let prefix = args.optional_string(2)?.unwrap_or_default();
            let suffix = args.optional_string(3)?.unwrap_or_default();
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Null => {}
                    Value::String(text) => parts.push(text),
                    other => return Err(args.wrong(&other, "a list of strings")),
                }
            }
            let size = parts.iter().map(String::len).sum::<usize>()
                + parts.len().saturating_mul(delimiter.len())
                + prefix.len()
                + suffix.len();
            evaluator.charge(size)?;
            Ok(Value::String(format!(
                "{prefix}{}{suffix}",
                parts.join(&delimiter)
            )))
        }
        other => Err(misrouted(other)),
    }
}

/// Compiled regular expressions are bounded so a pattern from a model cannot take
/// unbounded memory; the regex crate matches in linear time.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

fn substring(args: &mut Arguments) -> Outcome {
    let name = args.name;
    let Some(text) = args.string_or_null(0)? else {
        return Ok(Value::Null);
    };
    let start = args.integer(1)?;
    let length = match args.args.get(2) {
        Some(Value::Null) | None => None,
        Some(_) => Some(args.integer(2)?),
    };
    let chars: Vec<char> = text.chars().collect();
    let count = chars.len() as i64;
    let begin = if start > 0 {
        start - 1
    } else if start < 0 {
        (count + start).max(0)
    } else {
        return Err(format!("{name}(): positions start at 1, not 0"));
    };
    let begin = begin.min(count) as usize;
    let end = match length {
        None => chars.len(),
        Some(length) if length < 0 => {
            return Err(format!("{name}(): the length {length} is negative"));
        }
        Some(length) => (begin as i64).saturating_add(length).min(count) as usize,
    };
    Ok(Value::String(chars[begin..end].iter().collect()))
}

/// Standard Base64 (RFC 4648, with padding).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let group = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (index, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if index <= chunk.len() {
                text.push(char::from(ALPHABET[(group >> shift) as usize & 63]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// A version-4 (random) UUID from 128 random bits: `xxxxxxxx-xxxx-4xxx-Yxxx-xxxxxxxxxxxx`.
fn uuid_v4(high: u64, low: u64) -> String {
    let high = (high & !0xf000) | 0x4000;
    let low = (low & !(0xc000 << 48)) | (0x8000 << 48);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

fn compile_regex(name: &str, pattern: &str, flags: Option<&str>) -> Result<Regex, String> {
    let mut builder = RegexBuilder::new(pattern);
    builder
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT);
    for flag in flags.unwrap_or_default().chars() {
        match flag {
            'i' => builder.case_insensitive(true),
            's' => builder.dot_matches_new_line(true),
            'm' => builder.multi_line(true),
            'x' => builder.ignore_whitespace(true),
            other => {
                return Err(format!(
                    "{name}(): unknown regular expression flag '{other}'"
                ));
            }
        };
    }
    builder
        .build()
        .map_err(|error| format!("{name}(): invalid regular expression \"{pattern}\": {error}"))
}
