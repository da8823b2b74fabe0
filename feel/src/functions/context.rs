//! Context functions: `get value`, `get entries`, `context put`, `context`,
//! `context merge` and `put all`.

use super::{Arguments, misrouted};
use crate::builtins::Builtin;
use crate::eval::Outcome;
use crate::value::{self, Value};

/// Calls `builtin`, one of this family's (see [`super::call`]).
pub(super) fn call(builtin: Builtin, mut args: Arguments) -> Outcome {
    let name = args.name;
    use Builtin as B;
    match builtin {
        B::GetValue => {
            let context = args.take(0);
            let key = args.take(1);
            match (context, key) {
                (Value::Null, _) | (_, Value::Null) => Ok(Value::Null),
                (Value::Context(entries), Value::String(key)) => Ok(entries
                    .into_iter()
                    .find(|(entry, _)| *entry == key)
                    .map_or(Value::Null, |(_, value)| value)),
                // Camunda's extension: a path of keys into nested contexts.
                (Value::Context(entries), Value::List(keys)) => {
                    let keys = args.keys(keys)?;
                    if keys.is_empty() {
                        return Ok(Value::Null);
                    }
                    let mut current = Value::Context(entries);
                    for key in keys {
                        let Value::Context(entries) = current else {
                            return Ok(Value::Null);
                        };
                        current = match entries.into_iter().find(|(entry, _)| *entry == key) {
                            Some((_, value)) => value,
                            None => return Ok(Value::Null),
                        };
                    }
                    Ok(current)
                }
                (Value::Context(_), other) => {
                    Err(args.wrong(&other, "a string key or a list of keys"))
                }
                (other, _) => Err(args.wrong(&other, "a context")),
            }
        }
        B::GetEntries => match args.take(0) {
            Value::Null => Ok(Value::Null),
            Value::Context(entries) => Ok(Value::List(
                entries
                    .into_iter()
                    .map(|(key, value)| {
                        Value::Context(vec![
                            ("key".to_owned(), Value::String(key)),
                            ("value".to_owned(), value),
                        ])
                    })
                    .collect(),
            )),
            other => Err(args.wrong(&other, "a context")),
        },
        B::ContextPut => {
            let (context, key, value) = (args.take(0), args.take(1), args.take(2));
            match (context, key) {
                (Value::Null, _) | (_, Value::Null) => Ok(Value::Null),
                (Value::Context(entries), Value::String(key)) => {
                    Ok(Value::Context(put_path(entries, &[key], value)))
                }
                // Camunda's extension: a path of keys; missing contexts on the way are
                // created, and an entry on the way that is not a context is replaced.
                (Value::Context(entries), Value::List(keys)) => {
                    let keys = args.keys(keys)?;
                    if keys.is_empty() {
                        return Ok(Value::Null);
                    }
                    if keys.len() > value::MAX_VALUE_NESTING {
                        return Err(format!(
                            "{name}(): the key path has more than {} keys",
                            value::MAX_VALUE_NESTING
                        ));
                    }
                    let result = Value::Context(put_path(entries, &keys, value));
                    if value::too_nested(&result) {
                        return Err(format!(
                            "{name}(): the result is nested more than {} levels deep",
                            value::MAX_VALUE_NESTING
                        ));
                    }
                    Ok(result)
                }
                (Value::Context(_), other) => {
                    Err(args.wrong(&other, "a string key or a list of keys"))
                }
                (other, _) => Err(args.wrong(&other, "a context")),
            }
        }
        // The inverse of `get entries`: a list of {key, value} contexts to a context.
        B::Context => {
            let Some(entries) = args.list_or_null(0)? else {
                return Ok(Value::Null);
            };
            let mut context: Vec<(String, Value)> = Vec::new();
            for entry in entries {
                let Value::Context(fields) = &entry else {
                    return Err(args.wrong(&entry, "a list of {key, value} contexts"));
                };
                let field = |name: &str| {
                    fields
                        .iter()
                        .find(|(key, _)| key == name)
                        .map(|(_, value)| value.clone())
                };
                let (Some(Value::String(key)), Some(value)) = (field("key"), field("value")) else {
                    return Err(args.wrong(&entry, "a list of {key, value} contexts"));
                };
                match context.iter_mut().find(|(existing, _)| *existing == key) {
                    Some(existing) => existing.1 = value,
                    None => context.push((key, value)),
                }
            }
            Ok(Value::Context(context))
        }
        B::ContextMerge | B::PutAll => {
            // `put all` is FEEL-Scala's older form: the contexts as separate arguments.
            let contexts = if builtin == B::PutAll {
                args.items()
            } else {
                let Some(contexts) = args.list_or_null(0)? else {
                    return Ok(Value::Null);
                };
                contexts
            };
            let mut merged: Vec<(String, Value)> = Vec::new();
            for context in contexts {
                let Value::Context(entries) = context else {
                    return Err(args.wrong(&context, "a list of contexts"));
                };
                for (key, value) in entries {
                    match merged.iter_mut().find(|(entry, _)| *entry == key) {
                        Some(entry) => entry.1 = value,
                        None => merged.push((key, value)),
                    }
                }
            }
            Ok(Value::Context(merged))
        }
        other => Err(misrouted(other)),
    }
}

/// Sets `value` at the key path `keys` (not empty) inside `entries`, keeping the order
/// of existing entries and appending new ones.
fn put_path(
    mut entries: Vec<(String, Value)>,
    keys: &[String],
    value: Value,
) -> Vec<(String, Value)> {
    let Some((key, rest)) = keys.split_first() else {
        return entries;
    };
    let position = entries.iter().position(|(entry, _)| entry == key);
    let value = if rest.is_empty() {
        value
    } else {
        let inner = match position.map(|index| std::mem::take(&mut entries[index].1)) {
            Some(Value::Context(inner)) => inner,
            _ => Vec::new(),
        };
        Value::Context(put_path(inner, rest, value))
    };
    match position {
        Some(index) => entries[index].1 = value,
        None => entries.push((key.clone(), value)),
    }
    entries
}
