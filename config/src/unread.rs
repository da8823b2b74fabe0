//! Nothing is accepted and then ignored: every option of the schema must be read by the
//! code that runs, outside this crate.
//!
//! The check reads the sources. An option `section.leaf` counts as read where a file
//! outside `config/` (its tests and `#[cfg(test)]` modules left out) accesses the field
//! `leaf` through its section's field (`.section.leaf`, whatever the lines in between),
//! through a local bound to the section (`let tls = &config.cluster.tls;` …
//! `tls.private_key`), or in a file that names the section's type (`fn from(config:
//! &WriteLimitConfig)` … `config.limit`). The section types come from `model.rs`. It is
//! a heuristic that errs on the side of "read": a field of the same name in a section of
//! the same name elsewhere counts too (`gateway.tls` and `monitoring.tls`).
//!
//! One kind of option is read inside this crate on behalf of its users: the value-type
//! switches of the exporters' record filters, generated from the value-type table, are
//! all read by `RecordFilterConfig::value_type`; they count as read where that method is
//! called outside this crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::schema::{LIST_INDEX, OPTIONS};

/// Options accepted today and read by nothing but the validation, each with why and
/// until when. The test fails as soon as one of them is read, so the list only shrinks.
const NOT_READ_YET: &[(&str, &str)] = &[];

fn not_read_yet(path: &str) -> bool {
    NOT_READ_YET
        .iter()
        .any(|(prefix, _)| path.starts_with(prefix))
}

/// Every struct of `model.rs` with its fields and their (struct) types.
fn model_structs() -> BTreeMap<String, BTreeMap<String, String>> {
    let model = include_str!("model.rs");
    let mut structs = BTreeMap::new();
    let mut current: Option<(String, BTreeMap<String, String>)> = None;
    for line in model.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("pub struct ") {
            if let Some(name) = rest.strip_suffix(" {") {
                current = Some((name.to_owned(), BTreeMap::new()));
            }
            continue;
        }
        if line == "}" {
            if let Some((name, fields)) = current.take() {
                structs.insert(name, fields);
            }
            continue;
        }
        if let (Some((_, fields)), Some(rest)) = (&mut current, line.strip_prefix("pub "))
            && let Some((field, ty)) = rest.trim_end_matches(',').split_once(": ")
        {
            fields.insert(field.to_owned(), inner_type(ty).to_owned());
        }
    }
    structs
}

/// `Option<T>` and `Vec<T>` are read through `T`.
fn inner_type(ty: &str) -> &str {
    let mut ty = ty.trim();
    for wrapper in ["Option<", "Vec<"] {
        if let Some(inner) = ty.strip_prefix(wrapper) {
            ty = inner.strip_suffix('>').unwrap_or(inner);
        }
    }
    ty
}

/// How an option must be read to count as read.
#[derive(Debug)]
enum Reader {
    /// The field `leaf` of `section_type`, reached through the field `section`.
    Field {
        section: String,
        section_type: String,
        leaf: String,
    },
    /// A value-type switch of a record filter (see the module comment).
    ValueTypeSwitch,
}

fn reader_of(path: &str, structs: &BTreeMap<String, BTreeMap<String, String>>) -> Reader {
    let segments: Vec<String> = path
        .split('.')
        .filter(|segment| *segment != LIST_INDEX)
        .map(|segment| segment.replace('-', "_"))
        .collect();
    let (leaf, sections) = segments.split_last().expect("a path has a leaf");
    let mut ty = "RillConfig".to_owned();
    let mut section = String::new();
    for field in sections {
        let fields = structs
            .get(&ty)
            .unwrap_or_else(|| panic!("{path}: no struct {ty} in model.rs"));
        ty = fields
            .get(field)
            .unwrap_or_else(|| panic!("{path}: {ty} has no field {field}"))
            .clone();
        section = field.clone();
    }
    let fields = &structs[&ty];
    if ty == "RecordFilterConfig" && !fields.contains_key(leaf) {
        return Reader::ValueTypeSwitch;
    }
    assert!(
        fields.contains_key(leaf),
        "{path}: {ty} has no field {leaf}"
    );
    Reader::Field {
        section,
        section_type: ty,
        leaf: leaf.clone(),
    }
}

/// The Rust sources outside this crate that run in a product: no tests, no fuzzing.
fn product_sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf();
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable workspace") {
            let path = entry.expect("readable entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                let skipped = name.starts_with('.')
                    || [
                        "target",
                        "tests",
                        "benches",
                        "fuzz",
                        "config",
                        "node_modules",
                    ]
                    .contains(&name);
                if !skipped {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).expect("readable source");
                // Test modules sit at the end of a file.
                let product = text.split("#[cfg(test)]").next().unwrap_or("");
                files.push((path, joined_chains(product)));
            }
        }
    }
    files
}

/// The text with the whitespace before each `.` removed, so that a chain of field
/// accesses that rustfmt spread over lines reads as one.
fn joined_chains(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            pending.push(c);
        } else {
            if c != '.' {
                out.push_str(&pending);
            }
            pending.clear();
            out.push(c);
        }
    }
    out
}

/// `.name` as a field access: not a longer name, not a method call.
fn accesses_field(text: &str, chain: &str) -> bool {
    text.match_indices(chain).any(|(at, _)| {
        let next = text[at + chain.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '(')
    })
}

fn names_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// The names of locals bound to a field `section`: `let NAME = &a.b.section;`.
fn locals_bound_to(text: &str, section: &str) -> Vec<String> {
    text.match_indices("let ")
        .filter_map(|(at, _)| {
            let statement = text[at + 4..].split(';').next()?;
            let (name, value) = statement.split_once('=')?;
            let name = name.trim();
            let value = value.trim().trim_start_matches('&');
            let bound = value.ends_with(&format!(".{section}"))
                && value
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
            let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
            (bound && plain).then(|| name.to_owned())
        })
        .collect()
}

fn is_read(reader: &Reader, sources: &[(PathBuf, String)]) -> bool {
    match reader {
        Reader::Field {
            section,
            section_type,
            leaf,
        } => sources.iter().any(|(_, text)| {
            accesses_field(text, &format!(".{section}.{leaf}"))
                || (names_word(text, section_type) && accesses_field(text, &format!(".{leaf}")))
                || locals_bound_to(text, section)
                    .iter()
                    .any(|local| accesses_field(text, &format!("{local}.{leaf}")))
        }),
        Reader::ValueTypeSwitch => sources.iter().any(|(_, text)| {
            names_word(text, "RecordFilterConfig") && text.contains(".value_type(")
        }),
    }
}

#[test]
fn every_option_is_read_by_the_code_that_runs() {
    let structs = model_structs();
    let sources = product_sources();
    assert!(
        sources.len() > 50,
        "found only {} source files",
        sources.len()
    );
    let mut unread = Vec::new();
    let mut read_now = Vec::new();
    for option in OPTIONS.iter() {
        let read = is_read(&reader_of(option.path, &structs), &sources);
        match (read, not_read_yet(option.path)) {
            (false, false) => unread.push(format!(
                "{} ({:?})",
                option.path,
                reader_of(option.path, &structs)
            )),
            (true, true) => read_now.push(option.path),
            _ => {}
        }
    }
    assert!(
        unread.is_empty(),
        "options that no code outside rill-config reads: implement them, or remove them \
         (schema.rs, model.rs, the REMOVED table, the chart):\n  {}",
        unread.join("\n  ")
    );
    assert!(
        read_now.is_empty(),
        "read now, so take them out of NOT_READ_YET: {read_now:?}"
    );
}

#[test]
fn the_check_sees_a_read_and_misses_an_unread_field() {
    let structs = model_structs();
    let reader = reader_of("flow-control.write.ramp-up", &structs);
    let through_section = vec![(
        PathBuf::from("a.rs"),
        joined_chains("let r = config\n    .flow_control\n    .write\n    .ramp_up;"),
    )];
    assert!(is_read(&reader, &through_section));
    let through_type = vec![(
        PathBuf::from("b.rs"),
        joined_chains("fn f(c: &WriteLimitConfig) -> Duration { c.ramp_up }"),
    )];
    assert!(is_read(&reader, &through_type));
    let through_local = vec![(
        PathBuf::from("d.rs"),
        joined_chains("let write = &config.flow_control.write;\nlet r = write.ramp_up;"),
    )];
    assert!(is_read(&reader, &through_local));
    let elsewhere = vec![(
        PathBuf::from("c.rs"),
        joined_chains("let r = other.ramp_up_time; let w = config.write.ramp_up();"),
    )];
    assert!(!is_read(&reader, &elsewhere));
    assert!(matches!(
        reader_of("exporters.jsonl.filter.process-instance", &structs),
        Reader::ValueTypeSwitch
    ));
    assert!(matches!(
        reader_of("security.initialization.users.0.username", &structs),
        Reader::Field { ref section_type, .. } if section_type == "InitialUser"
    ));
}
