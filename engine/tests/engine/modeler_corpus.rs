//! The Modeler corpus (`tests/fixtures/modeler/`): models written the way Camunda Modeler 5
//! writes them for Camunda 8.8. Every one deploys, except those `refused.txt` lists, which
//! are refused with the phrase listed beside them (what Zeebe 8.8 refuses too).

use std::collections::BTreeMap;
use std::path::PathBuf;

use rill_protocol::RejectionType;

use super::*;

pub const CORPUS: &str = "modeler";

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(CORPUS)
}

/// The resources of the corpus, by file name: every `.bpmn`, `.dmn` and `.form`.
fn corpus_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("the corpus folder")
        .map(|entry| {
            entry
                .expect("a folder entry")
                .file_name()
                .into_string()
                .expect("a UTF-8 name")
        })
        .filter(|name| name.ends_with(".bpmn") || name.ends_with(".dmn") || name.ends_with(".form"))
        .collect();
    names.sort();
    names
}

/// `refused.txt`: `<file>: <phrase its refusal contains>`, one a line; `#` starts a comment.
fn refused() -> BTreeMap<String, String> {
    let text = String::from_utf8(fixture(&format!("{CORPUS}/refused.txt"))).expect("UTF-8");
    let mut refused = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (file, phrase) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("refused.txt line {}: no ':' in {line:?}", number + 1));
        let (file, phrase) = (file.trim(), phrase.trim());
        assert!(
            !file.is_empty() && !phrase.is_empty(),
            "refused.txt line {}: a file and a phrase, got {line:?}",
            number + 1
        );
        let previous = refused.insert(file.to_owned(), phrase.to_owned());
        assert!(previous.is_none(), "refused.txt lists {file} twice");
    }
    refused
}

/// Deploys one file of the corpus alone, on a fresh engine; `Err` is the rejection.
fn deploy_alone(name: &str) -> Result<(), (RejectionType, String)> {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&[(name, fixture(&format!("{CORPUS}/{name}")))]);
    if outcome.is_rejected() {
        Err(rejection_of(&outcome))
    } else {
        Ok(())
    }
}

#[test]
fn the_corpus_is_large_and_lists_only_its_own_files() {
    let files = corpus_files();
    let models = files.iter().filter(|f| f.ends_with(".bpmn")).count();
    assert!(models >= 40, "{models} models in the corpus");
    for file in refused().keys() {
        assert!(
            files.contains(file),
            "refused.txt lists {file}, which is not in the corpus"
        );
    }
}

#[test]
fn every_corpus_model_deploys_unless_listed_and_listed_ones_are_refused_as_listed() {
    let refused = refused();
    let mut mismatches = Vec::new();
    for name in corpus_files() {
        match (deploy_alone(&name), refused.get(&name)) {
            (Ok(()), None) => {}
            (Ok(()), Some(phrase)) => {
                mismatches.push(format!(
                    "{name}: deployed, but must be refused ({phrase:?})"
                ));
            }
            (Err((kind, reason)), None) => {
                mismatches.push(format!("{name}: refused ({kind:?}): {reason}"));
            }
            (Err((kind, reason)), Some(phrase)) => {
                if kind != RejectionType::InvalidArgument || !reason.contains(phrase.as_str()) {
                    mismatches.push(format!(
                        "{name}: refused ({kind:?}) without {phrase:?}: {reason}"
                    ));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} corpus mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn the_corpus_deploys_as_one_deployment_as_the_modeler_deploys_a_project() {
    let refused = refused();
    let resources: Vec<(String, Vec<u8>)> = corpus_files()
        .into_iter()
        .filter(|name| !refused.contains_key(name))
        .map(|name| {
            let content = fixture(&format!("{CORPUS}/{name}"));
            (name, content)
        })
        .collect();
    let borrowed: Vec<(&str, Vec<u8>)> = resources
        .iter()
        .map(|(name, content)| (name.as_str(), content.clone()))
        .collect();
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&borrowed);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let rill_protocol::RecordValue::Deployment(deployment) = outcome.value() else {
        panic!("not a deployment: {:?}", outcome.response)
    };
    let processes = resources
        .iter()
        .filter(|(name, _)| name.ends_with(".bpmn"))
        .count();
    // A file may hold more than one process (a collaboration); each is one definition.
    assert!(
        deployment.processes_metadata.len() >= processes,
        "{} processes from {processes} files",
        deployment.processes_metadata.len()
    );
    let forms = resources
        .iter()
        .filter(|(name, _)| name.ends_with(".form"))
        .count();
    assert_eq!(deployment.form_metadata.len(), forms);
    rule.assert_replay_matches();
}
