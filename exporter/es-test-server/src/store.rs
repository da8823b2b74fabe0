//! Indices, documents and templates, as Elasticsearch keeps them (minus everything the
//! exporter does not need).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::mapping::{self, DocumentError, Mapping};

#[derive(Debug)]
pub struct Document {
    /// The document as it was sent: JSON text (checked against the mapping), a slice of
    /// the bulk body it came in, which is kept instead of copied.
    text: Bytes,
    /// The text parsed, on the first search that reads it.
    parsed: OnceLock<Value>,
    pub version: u64,
    /// Order of first indexing, for results without a sort.
    pub sequence: u64,
}

impl Document {
    fn new(text: Bytes, sequence: u64) -> Document {
        Document {
            text,
            parsed: OnceLock::new(),
            version: 1,
            sequence,
        }
    }

    /// The document's `_source`.
    pub fn source(&self) -> &Value {
        // The text was read once when it was indexed, so it parses.
        self.parsed
            .get_or_init(|| serde_json::from_slice(&self.text).unwrap_or(Value::Null))
    }
}

/// Documents stored in chunks that never move once allocated: a benchmark indexes
/// hundreds of thousands, and growing one table by doubling copied (and, on a fresh
/// machine, page-faulted) all of them again and again.
const CHUNK: usize = 4096;

#[derive(Debug, Default)]
pub struct Index {
    /// The index's mappings, compiled for checking documents (`None`: dynamic).
    checker: Option<Mapping>,
    pub settings: Value,
    pub aliases: BTreeSet<String>,
    /// Where each id's document is in `chunks`. (A hash map: a B-tree's string
    /// comparisons were a tenth of a bulk's cost.)
    slots: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    chunks: Vec<Vec<(Box<str>, Document)>>,
}

impl Index {
    /// Every document with its id, in the order they were first indexed.
    pub fn documents(&self) -> impl Iterator<Item = (&str, &Document)> {
        self.chunks
            .iter()
            .flatten()
            .map(|(id, document)| (id.as_ref(), document))
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Document> {
        let slot = *self.slots.get(id)? as usize;
        Some(&mut self.chunks[slot / CHUNK][slot % CHUNK].1)
    }

    fn insert(&mut self, id: &str, document: Document) {
        if self.chunks.last().is_none_or(|chunk| chunk.len() == CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let slot = self.slots.len() as u32;
        self.slots.insert(id.into(), slot);
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.push((id.into(), document));
        }
    }
}

#[derive(Debug, Default)]
pub struct Store {
    pub indices: BTreeMap<String, Index>,
    pub index_templates: BTreeMap<String, Value>,
    pub component_templates: BTreeMap<String, Value>,
    pub ilm_policies: BTreeMap<String, Value>,
    next_sequence: u64,
}

/// Result of indexing one document.
pub enum Indexed {
    Created(u64),
    Updated(u64),
}

/// `*` matches any run of characters; nothing else is special.
pub fn wildcard_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(stripped) = rest.strip_prefix(part) else {
                return false;
            };
            rest = stripped;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

impl Store {
    /// The names of the indices a search target (comma-separated index names, aliases or
    /// patterns) covers.
    pub fn resolve(&self, target: &str) -> Vec<String> {
        let mut names = BTreeSet::new();
        for part in target.split(',').map(str::trim) {
            let part = if part == "_all" { "*" } else { part };
            for (name, index) in &self.indices {
                if wildcard_matches(part, name)
                    || index
                        .aliases
                        .iter()
                        .any(|alias| wildcard_matches(part, alias))
                {
                    names.insert(name.clone());
                }
            }
        }
        names.into_iter().collect()
    }

    pub fn is_alias(&self, name: &str) -> bool {
        self.indices
            .values()
            .any(|index| index.aliases.contains(name))
    }

    /// Creates `name` from the highest-priority matching index template (with its
    /// component templates), as auto-create does.
    fn create_index(&mut self, name: &str) -> &mut Index {
        if !self.indices.contains_key(name) {
            let mut combined = json!({});
            let template = self
                .index_templates
                .values()
                .filter(|template| {
                    template["index_patterns"]
                        .as_array()
                        .is_some_and(|patterns| {
                            patterns
                                .iter()
                                .filter_map(Value::as_str)
                                .any(|p| wildcard_matches(p, name))
                        })
                })
                .max_by_key(|template| template["priority"].as_i64().unwrap_or(0));
            if let Some(template) = template {
                for component in template["composed_of"].as_array().into_iter().flatten() {
                    if let Some(body) = component
                        .as_str()
                        .and_then(|c| self.component_templates.get(c))
                    {
                        mapping::merge(&mut combined, &body["template"]);
                    }
                }
                mapping::merge(&mut combined, &template["template"]);
            }
            let aliases = combined["aliases"]
                .as_object()
                .map(|a| a.keys().cloned().collect())
                .unwrap_or_default();
            self.indices.insert(
                name.to_owned(),
                Index {
                    checker: Mapping::compile(&combined["mappings"]),
                    settings: combined["settings"].clone(),
                    aliases,
                    ..Index::default()
                },
            );
        }
        // (Looked up by &str: an entry() would allocate the name for every document.)
        self.indices.get_mut(name).expect("the index exists now")
    }

    /// Indexes the JSON text `source` as document `id` of `index_name` (created from
    /// the templates if need be), after checking it against the index's mapping.
    pub fn index_document(
        &mut self,
        index_name: &str,
        id: &str,
        source: Bytes,
    ) -> Result<Indexed, DocumentError> {
        let sequence = self.next_sequence;
        let index = self.create_index(index_name);
        let text = std::str::from_utf8(&source)
            .map_err(|e| DocumentError::Syntax(format!("the document is not UTF-8: {e}")))?;
        mapping::check_document(text, index.checker.as_ref())?;
        let outcome = match index.get_mut(id) {
            Some(existing) => {
                existing.text = source;
                existing.parsed = OnceLock::new();
                existing.version += 1;
                Indexed::Updated(existing.version)
            }
            None => {
                index.insert(id, Document::new(source, sequence));
                Indexed::Created(1)
            }
        };
        self.next_sequence += 1;
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_matches(
            "zeebe-record_job_*",
            "zeebe-record_job_0.1.0_2026-11-30"
        ));
        assert!(!wildcard_matches(
            "zeebe-record_job_*",
            "zeebe-record_job-batch_0.1.0_x"
        ));
        assert!(wildcard_matches("*", "anything"));
        assert!(wildcard_matches("a*c*e", "abcde"));
        assert!(!wildcard_matches("a*c*e", "abcd"));
        assert!(wildcard_matches("exact", "exact"));
    }

    #[test]
    fn index_created_from_template_gets_alias_and_strict_mapping() {
        let mut store = Store::default();
        store.component_templates.insert(
            "rec".into(),
            json!({"template": {"mappings": {"dynamic": "strict", "properties": {"key": {"type": "long"}}}}}),
        );
        store.index_templates.insert(
            "rec_job".into(),
            json!({"index_patterns": ["rec_job_*"], "composed_of": ["rec"], "priority": 20,
                   "template": {"aliases": {"rec-job": {}}}}),
        );
        assert!(
            store
                .index_document(
                    "rec_job_1",
                    "1-1",
                    Bytes::from(json!({"key": 1}).to_string())
                )
                .is_ok()
        );
        assert!(
            store
                .index_document(
                    "rec_job_1",
                    "1-2",
                    Bytes::from(json!({"nope": 1}).to_string())
                )
                .is_err()
        );
        assert_eq!(store.resolve("rec-job"), vec!["rec_job_1".to_owned()]);
        assert!(store.is_alias("rec-job"));
        assert!(matches!(
            store.index_document(
                "rec_job_1",
                "1-1",
                Bytes::from(json!({"key": 2}).to_string())
            ),
            Ok(Indexed::Updated(2))
        ));
        // No template: dynamic index, anything goes.
        assert!(
            store
                .index_document("other", "x", Bytes::from(json!({"nope": 1}).to_string()))
                .is_ok()
        );
    }
}
