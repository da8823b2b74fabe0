//! Layered loading: defaults in code → TOML file → `RILL_…` environment variables →
//! `key.path=value` overrides. Later layers win.
//!
//! The file is deserialized straight into the typed tree, so unknown keys and wrong types
//! are reported with their line. Environment variables and overrides are parsed against
//! the option schema (so `RILL_CLUSTER__NODE_ID=2` is an integer and `…__ALGORITHM=vegas`
//! a name), applied to the tree as TOML values, and the result deserialized again.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::bytesize::ByteSize;
use crate::model::RillConfig;
use crate::schema::{self, ENV_PREFIX, Kind, OptionSpec};
use crate::{ConfigError, Result, SourceProblem};

/// Collects the layers, then [`load`](ConfigLoader::load)s them.
///
/// ```
/// let config = rill_config::ConfigLoader::new()
///     .env([("RILL_CLUSTER__SIZE", "3")])
///     .overrides(["cluster.replication-factor=3"])
///     .load()
///     .expect("valid layers");
/// assert_eq!(config.cluster.size, 3);
/// assert_eq!(config.cluster.replication_factor, 3);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ConfigLoader {
    file: Option<FileSource>,
    env: Vec<(OsString, OsString)>,
    overrides: Vec<String>,
}

#[derive(Clone, Debug)]
enum FileSource {
    Path(PathBuf),
    Text { origin: String, text: String },
}

/// One value to set, from the environment or an override.
struct Assignment {
    /// The option's path as given, with its list indexes.
    path: String,
    /// `None` unsets an optional value.
    value: Option<toml::Value>,
}

impl ConfigLoader {
    pub fn new() -> ConfigLoader {
        ConfigLoader::default()
    }

    /// Reads this TOML file (it must exist).
    pub fn file(mut self, path: impl Into<PathBuf>) -> ConfigLoader {
        self.file = Some(FileSource::Path(path.into()));
        self
    }

    /// Uses this TOML text as the file layer; `origin` names it in errors.
    pub fn toml(mut self, origin: impl Into<String>, text: impl Into<String>) -> ConfigLoader {
        self.file = Some(FileSource::Text {
            origin: origin.into(),
            text: text.into(),
        });
        self
    }

    /// Uses these variables as the environment. Only names starting with `RILL_` and
    /// containing `__` are configuration; the rest are ignored (e.g. `RILL_ADDRESS`), except
    /// a name that is an option's variable with single underscores, a likely typo.
    pub fn env<I, K, V>(mut self, vars: I) -> ConfigLoader
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env = vars
            .into_iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect();
        self
    }

    /// Uses this process's environment.
    pub fn process_env(self) -> ConfigLoader {
        self.env(std::env::vars_os())
    }

    /// `key.path=value` pairs, e.g. `cluster.partitions-count=4`; applied last, in order.
    pub fn overrides<I, S>(mut self, overrides: I) -> ConfigLoader
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.overrides = overrides.into_iter().map(Into::into).collect();
        self
    }

    /// Merges the layers. Does not [`validate`](RillConfig::validate): `rill config show`
    /// wants to print a configuration even when it is not valid.
    pub fn load(&self) -> Result<RillConfig> {
        let config = match &self.file {
            None => RillConfig::default(),
            Some(FileSource::Path(path)) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
                        path: path.clone(),
                        source,
                    })?;
                parse_file(&path.display().to_string(), &text)?
            }
            Some(FileSource::Text { origin, text }) => parse_file(origin, text)?,
        };

        let mut problems = Vec::new();
        let mut assignments = Vec::new();
        let mut env: Vec<&(OsString, OsString)> = self.env.iter().collect();
        env.sort(); // the environment has no order; make errors and conflicts deterministic
        for (name, value) in env {
            match env_assignment(name, value) {
                Ok(Some(assignment)) => assignments.push(assignment),
                Ok(None) => {}
                Err(problem) => problems.push(problem),
            }
        }
        for text in &self.overrides {
            match override_assignment(text) {
                Ok(assignment) => assignments.push(assignment),
                Err(problem) => problems.push(problem),
            }
        }
        if !problems.is_empty() {
            return Err(ConfigError::Sources { problems });
        }
        if assignments.is_empty() {
            return Ok(config);
        }

        let mut tree = toml::Value::try_from(&config)
            .map_err(|error| ConfigError::Render(error.to_string()))?;
        for assignment in assignments {
            set(&mut tree, &assignment.path, assignment.value);
        }
        tree.try_into()
            .map_err(|error: toml::de::Error| ConfigError::Sources {
                problems: vec![SourceProblem {
                    origin: "environment and overrides".to_owned(),
                    message: error.message().to_owned(),
                }],
            })
    }
}

impl RillConfig {
    /// Defaults, then the file if given, then this process's environment, then overrides.
    pub fn load(file: Option<PathBuf>, overrides: &[String]) -> Result<RillConfig> {
        let mut loader = ConfigLoader::new()
            .process_env()
            .overrides(overrides.iter().cloned());
        if let Some(file) = file {
            loader = loader.file(file);
        }
        loader.load()
    }
}

fn parse_file(origin: &str, text: &str) -> Result<RillConfig> {
    toml::from_str(text).map_err(|error: toml::de::Error| {
        let offset = error.span().map(|span| span.start);
        let key = offset.and_then(|offset| key_at(text, offset));
        // A removed option is an unknown field to the model: say what to do instead.
        let message = key
            .as_deref()
            .and_then(schema::removed)
            .unwrap_or_else(|| error.message().trim().to_owned());
        ConfigError::File {
            origin: origin.to_owned(),
            line: offset.map(|offset| line_of(text, offset)),
            key,
            message,
        }
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|byte| **byte == b'\n')
        .count()
        + 1
}

/// The dotted key of the line holding `offset` (`raft.heartbeat-interval` for
/// `heartbeat-interval = "fast"` under `[raft]`), or the section for a header line.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text
        .get(line_start..)?
        .lines()
        .next()
        .unwrap_or_default()
        .trim();
    let section = text.get(..line_start)?.lines().rev().find_map(section_name);
    if let Some(header) = section_name(line) {
        return Some(header);
    }
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    Some(match section {
        Some(section) => format!("{section}.{key}"),
        None => key.to_owned(),
    })
}

/// `cluster` for a `[cluster]` (or `[[cluster]]`) header line.
fn section_name(line: &str) -> Option<String> {
    let name = line.trim().strip_prefix('[')?.trim_start_matches('[');
    Some(name.split(']').next()?.trim().to_owned())
}

fn env_assignment(
    name: &OsString,
    value: &OsString,
) -> std::result::Result<Option<Assignment>, SourceProblem> {
    let Some(name) = name.to_str() else {
        return Ok(None); // not ours: our names are ASCII
    };
    let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
        return Ok(None);
    };
    let origin = format!("environment variable {name}");
    if !rest.contains("__") {
        // `RILL_CLUSTER_NODE_ID` instead of `RILL_CLUSTER__NODE_ID`?
        return match schema::OPTIONS
            .iter()
            .find(|spec| spec.env_var().replace("__", "_") == name)
        {
            Some(spec) => Err(SourceProblem {
                origin,
                message: format!(
                    "sections are separated by a double underscore: did you mean {}?",
                    spec.env_var()
                ),
            }),
            None => Ok(None),
        };
    }
    let path = rest
        .split("__")
        .map(|segment| segment.to_ascii_lowercase().replace('_', "-"))
        .collect::<Vec<_>>()
        .join(".");
    let spec = lookup(&path).map_err(|message| SourceProblem {
        origin: origin.clone(),
        message,
    })?;
    let Some(value) = value.to_str() else {
        return Err(SourceProblem {
            origin,
            message: format!("the value of `{}` is not valid UTF-8", spec.path),
        });
    };
    let value = parse_value(spec, value).map_err(|message| SourceProblem { origin, message })?;
    Ok(Some(Assignment { path, value }))
}

fn override_assignment(text: &str) -> std::result::Result<Assignment, SourceProblem> {
    let origin = format!("override \"{text}\"");
    let Some((key, value)) = text.split_once('=') else {
        return Err(SourceProblem {
            origin,
            message: "expected key.path=value, e.g. cluster.partitions-count=4".to_owned(),
        });
    };
    let path = key.trim().replace('_', "-");
    let spec = lookup(&path).map_err(|message| SourceProblem {
        origin: origin.clone(),
        message,
    })?;
    let value = parse_value(spec, value).map_err(|message| SourceProblem { origin, message })?;
    Ok(Assignment { path, value })
}

fn lookup(path: &str) -> std::result::Result<&'static OptionSpec, String> {
    if let Some(spec) = schema::find(path) {
        let (_, indexes) = schema::schema_path(path);
        if let Some(index) = indexes.iter().find(|i| **i >= schema::MAX_LIST_INDEX) {
            return Err(format!(
                "`{path}` has the list index {index}; at most {} entries can be set this way",
                schema::MAX_LIST_INDEX
            ));
        }
        return Ok(spec);
    }
    if let Some(removed) = schema::removed(path) {
        return Err(removed);
    }
    let prefix = format!("{path}.");
    if let Some(inner) = schema::OPTIONS
        .iter()
        .find(|spec| spec.path.starts_with(&prefix))
    {
        return Err(format!(
            "`{path}` is a section, not an option; set one of its options, e.g. `{}`",
            inner.path
        ));
    }
    Err(match schema::suggest(path) {
        Some(close) => format!("unknown option `{path}`; did you mean `{close}`?"),
        None => format!("unknown option `{path}` (see docs/configuration.md for the list)"),
    })
}

/// Reads a text value as the option's type. `Ok(None)` unsets an optional value.
fn parse_value(spec: &OptionSpec, raw: &str) -> std::result::Result<Option<toml::Value>, String> {
    let text = raw.trim();
    let invalid = || {
        format!(
            "`{}` expects {}, got `{raw}`",
            spec.path,
            spec.kind.expected()
        )
    };
    let integer = |max: i64| -> std::result::Result<Option<toml::Value>, String> {
        match text.parse::<i64>() {
            Ok(n) if (0..=max).contains(&n) => Ok(Some(toml::Value::Integer(n))),
            _ => Err(invalid()),
        }
    };
    match spec.kind {
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            "true" => Ok(Some(toml::Value::Boolean(true))),
            "false" => Ok(Some(toml::Value::Boolean(false))),
            _ => Err(invalid()),
        },
        Kind::U16 => integer(i64::from(u16::MAX)),
        Kind::U32 => integer(i64::from(u32::MAX)),
        Kind::U64 | Kind::Usize => integer(i64::MAX),
        Kind::Float => match text.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(Some(toml::Value::Float(n))),
            _ => Err(invalid()),
        },
        Kind::Text | Kind::Path => Ok(Some(toml::Value::String(raw.to_owned()))),
        Kind::OptionalText if text.is_empty() => Ok(None),
        Kind::OptionalText => Ok(Some(toml::Value::String(raw.to_owned()))),
        Kind::OptionalDuration if text.is_empty() => Ok(None),
        Kind::Duration | Kind::OptionalDuration => match humantime::parse_duration(text) {
            Ok(_) => Ok(Some(toml::Value::String(text.to_owned()))),
            Err(error) => Err(format!("{} ({error})", invalid())),
        },
        Kind::Size => match ByteSize::parse(text) {
            Ok(_) => Ok(Some(toml::Value::String(text.to_owned()))),
            Err(error) => Err(format!("`{}`: {error}", spec.path)),
        },
        Kind::List => Ok(Some(toml::Value::Array(
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| toml::Value::String(item.to_owned()))
                .collect(),
        ))),
        Kind::Choice(choices) => {
            let lower = text.to_ascii_lowercase();
            if choices.contains(&lower.as_str()) {
                Ok(Some(toml::Value::String(lower)))
            } else {
                Err(invalid())
            }
        }
    }
}

/// Sets (or with `None` removes) the value at a dotted path, creating tables on the way
/// (so setting `exporters.jsonl.path` turns that exporter on). A numeric segment is an
/// index into a list of tables, which grows to hold it.
fn set(tree: &mut toml::Value, path: &str, value: Option<toml::Value>) {
    let segments: Vec<&str> = path.split('.').collect();
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut node = tree;
    for (i, segment) in parents.iter().enumerate() {
        let next_is_index = segments[i + 1].parse::<usize>().is_ok();
        let empty = || {
            if next_is_index {
                toml::Value::Array(Vec::new())
            } else {
                toml::Value::Table(toml::Table::new())
            }
        };
        node = match node {
            toml::Value::Table(table) => table.entry(segment.to_string()).or_insert_with(empty),
            toml::Value::Array(items) => {
                let Ok(index) = segment.parse::<usize>() else {
                    return;
                };
                if items.len() <= index {
                    items.resize_with(index + 1, empty);
                }
                &mut items[index]
            }
            _ => return, // the schema only names paths under tables and lists of tables
        };
    }
    let toml::Value::Table(table) = node else {
        return;
    };
    match value {
        Some(value) => {
            table.insert(last.to_string(), value);
        }
        None => {
            table.remove(*last);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{as_text, everything_set, nothing_default};

    #[test]
    fn the_fixture_changes_every_option_so_the_round_trips_cover_them_all() {
        let changed = nothing_default();
        let defaults = everything_set();
        for spec in schema::OPTIONS.iter() {
            if matches!(spec.kind, Kind::OptionalText | Kind::OptionalDuration) {
                continue; // unset by default; everything_set already gives them a value
            }
            assert_ne!(
                as_text(&changed, spec.path),
                as_text(&defaults, spec.path),
                "{}",
                spec.path
            );
        }
    }

    #[test]
    fn every_option_can_be_set_from_the_environment() {
        let expected = nothing_default();
        let env: Vec<(String, String)> = schema::OPTIONS
            .iter()
            .map(|spec| (spec.env_var(), as_text(&expected, spec.path)))
            .collect();
        let loaded = ConfigLoader::new()
            .env(env)
            .load()
            .expect("every variable parses");
        assert_eq!(loaded, expected);
    }

    #[test]
    fn every_option_can_be_set_by_an_override() {
        let expected = nothing_default();
        let overrides: Vec<String> = schema::OPTIONS
            .iter()
            .map(|spec| format!("{}={}", spec.path, as_text(&expected, spec.path)))
            .collect();
        let loaded = ConfigLoader::new()
            .overrides(overrides)
            .load()
            .expect("every override parses");
        assert_eq!(loaded, expected);
    }

    #[test]
    fn every_option_keeps_its_value_through_show_and_load() {
        // Secrets are masked by to_toml, so compare without them.
        let mut expected = nothing_default();
        if let Some(elastic) = &mut expected.exporters.elasticsearch {
            elastic.password = None;
            elastic.api_key = None;
            elastic.bearer_token = None;
            elastic.username = None;
        }
        for user in &mut expected.security.initialization.users {
            user.password = "***".to_owned();
        }
        expected.backup.s3.secret_key = Some("***".to_owned());
        let shown = expected.to_toml().expect("renders");
        let loaded = ConfigLoader::new()
            .toml("shown", shown)
            .load()
            .expect("shown config loads");
        assert_eq!(loaded, expected);
        let defaults = RillConfig::default().to_toml().expect("renders");
        let loaded = ConfigLoader::new()
            .toml("defaults", defaults)
            .load()
            .expect("loads");
        assert_eq!(loaded, RillConfig::default());
        assert_ne!(everything_set(), RillConfig::default());
    }

    #[test]
    fn file_errors_name_the_line_and_the_key() {
        let text = "[cluster]\nsize = 3\n\n[raft]\nheartbeat-interval = \"fast\"\n";
        assert_eq!(
            key_at(text, text.find("heartbeat").expect("present")).as_deref(),
            Some("raft.heartbeat-interval")
        );
        assert_eq!(key_at(text, 1).as_deref(), Some("cluster"));
        assert_eq!(key_at("a = 1", 0).as_deref(), Some("a"));
        assert_eq!(line_of(text, text.find("heartbeat").expect("present")), 5);
    }
}
