//! The Modeler corpus (`engine/tests/fixtures/modeler/`) deployed over REST to the real
//! `rill standalone`, one deployment per file as a team deploys them: each is answered 200,
//! or 400 with the phrase `refused.txt` lists for it; never a 5xx, and the broker keeps
//! answering. Then the whole folder in one deployment.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use support::{Api, Standalone};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/modeler")
}

/// `<file>: <value>` lines of a corpus list (`#` starts a comment).
fn list(name: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(corpus().join(name)).expect("the list");
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (file, value) = line.split_once(':').expect("<file>: <value>");
            (file.trim().to_owned(), value.trim().to_owned())
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn every_corpus_model_is_deployed_or_refused_as_zeebe_does_and_none_is_a_server_error() {
    let refused = list("refused.txt");
    let companions = list("deployed-with.txt");
    let mut files: Vec<String> = std::fs::read_dir(corpus())
        .expect("the corpus")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .into_string()
                .expect("UTF-8")
        })
        .filter(|name| {
            [".bpmn", ".dmn", ".form", ".rpa"]
                .iter()
                .any(|e| name.ends_with(e))
        })
        .collect();
    files.sort();
    assert!(files.len() > 50, "{} files", files.len());
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &[]);
        rill.wait_ready(Duration::from_secs(30)).await;
        let api = Api::new(rill.rest());
        let mut mismatches = Vec::new();
        for file in &files {
            let mut paths = vec![corpus().join(file)];
            if let Some(others) = companions.get(file) {
                paths.extend(others.split_whitespace().map(|other| corpus().join(other)));
            }
            let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
            let (status, body) = api.deploy(&refs).await.expect("an answer");
            let detail = body["detail"].as_str().unwrap_or_default();
            match refused.get(file) {
                None if status == 200 => {}
                Some(phrase) if status == 400 && detail.contains(phrase.as_str()) => {}
                expected => mismatches.push(format!(
                    "{file}: expected {}, got {status} {body}",
                    expected.map_or("200".to_owned(), |phrase| format!("400 with {phrase:?}"))
                )),
            }
            assert!(status < 500, "{file}: a server error {status} {body}");
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));

        // Everything Zeebe deploys, in one deployment.
        let deployable: Vec<PathBuf> = files
            .iter()
            .filter(|file| !refused.contains_key(*file))
            .map(|file| corpus().join(file))
            .collect();
        let refs: Vec<&Path> = deployable.iter().map(PathBuf::as_path).collect();
        let (status, body) = api.deploy(&refs).await.expect("an answer");
        assert_eq!(status, 200, "{body}");
        let (status, _) = api.get("/v2/topology").await.expect("topology");
        assert_eq!(status, 200);
        assert!(rill.is_running(), "{}", rill.log_text());
    });
}
