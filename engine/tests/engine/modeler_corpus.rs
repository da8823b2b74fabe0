//! The Modeler corpus (`tests/fixtures/modeler/`): models written the way Camunda Modeler 5
//! writes them for Camunda 8.8. Every one deploys (with the files `deployed-with.txt` names
//! for it), except those `refused.txt` lists, which are refused with the phrase listed
//! beside them (what Zeebe 8.8 refuses too).

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

/// The resources of the corpus, by file name: every `.bpmn`, `.dmn`, `.form` and `.rpa`.
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
        .filter(|name| {
            [".bpmn", ".dmn", ".form", ".rpa"]
                .iter()
                .any(|extension| name.ends_with(extension))
        })
        .collect();
    names.sort();
    names
}

/// The lines of a corpus list: `<file>: <value>`, one a line; `#` starts a comment.
fn corpus_list(list: &str) -> BTreeMap<String, String> {
    let text = String::from_utf8(fixture(&format!("{CORPUS}/{list}"))).expect("UTF-8");
    let mut entries = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (file, value) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("{list} line {}: no ':' in {line:?}", number + 1));
        let (file, value) = (file.trim(), value.trim());
        assert!(
            !file.is_empty() && !value.is_empty(),
            "{list} line {}: a file and a value, got {line:?}",
            number + 1
        );
        let previous = entries.insert(file.to_owned(), value.to_owned());
        assert!(previous.is_none(), "{list} lists {file} twice");
    }
    entries
}

/// `refused.txt`: each model Zeebe refuses, with a phrase its refusal must contain.
fn refused() -> BTreeMap<String, String> {
    corpus_list("refused.txt")
}

/// `deployed-with.txt`: the files a model is deployed with, because it binds to them at
/// deploy (`bindingType="deployment"`): Zeebe refuses such a model alone.
fn companions() -> BTreeMap<String, Vec<String>> {
    corpus_list("deployed-with.txt")
        .into_iter()
        .map(|(file, others)| {
            let others = others.split_whitespace().map(str::to_owned).collect();
            (file, others)
        })
        .collect()
}

/// Deploys one file of the corpus with its companions, on a fresh engine; `Err` is the
/// rejection.
fn deploy_with_companions(
    name: &str,
    companions: &[String],
) -> Result<(), (RejectionType, String)> {
    let mut rule = EngineRule::new();
    let mut resources = vec![(name, fixture(&format!("{CORPUS}/{name}")))];
    for companion in companions {
        resources.push((
            companion.as_str(),
            fixture(&format!("{CORPUS}/{companion}")),
        ));
    }
    let outcome = rule.deploy(&resources);
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
    for (file, others) in companions() {
        for name in std::iter::once(&file).chain(&others) {
            assert!(
                files.contains(name),
                "deployed-with.txt names {name}, which is not in the corpus"
            );
        }
    }
}

#[test]
fn every_corpus_model_deploys_unless_listed_and_listed_ones_are_refused_as_listed() {
    let refused = refused();
    let companions = companions();
    let mut mismatches = Vec::new();
    for name in corpus_files() {
        let with = companions.get(&name).map(Vec::as_slice).unwrap_or_default();
        match (deploy_with_companions(&name, with), refused.get(&name)) {
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
    let rpa_scripts = resources
        .iter()
        .filter(|(name, _)| name.ends_with(".rpa"))
        .count();
    assert_eq!(deployment.resource_metadata.len(), rpa_scripts);
    rule.assert_replay_matches();
}
