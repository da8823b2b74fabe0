//! The gateway's layering, checked on its sources: `rest/` and `grpc/` import `ops/`,
//! never each other, and `ops/` imports neither; and no code decides what happened by
//! a problem's title or an HTTP status code (errors are typed: `ops::ClientError`).

use std::path::{Path, PathBuf};

fn sources(dir: &str) -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let mut found = Vec::new();
    let mut pending = vec![root];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                found.push((path, text));
            }
        }
    }
    assert!(!found.is_empty(), "no sources under src/{dir}");
    found
}

/// The lines of `dir`'s sources that contain one of `needles` (comments left out).
fn offending(dir: &str, needles: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, text) in sources(dir) {
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if needles.iter().any(|needle| code.contains(needle)) {
                lines.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    lines
}

#[test]
fn grpc_does_not_import_rest() {
    let found = offending(
        "grpc",
        &["crate::rest", "super::rest", "super::super::rest"],
    );
    assert!(
        found.is_empty(),
        "grpc/ imports rest/:\n{}",
        found.join("\n")
    );
}

#[test]
fn rest_does_not_import_grpc() {
    let found = offending(
        "rest",
        &["crate::grpc", "super::grpc", "super::super::grpc"],
    );
    assert!(
        found.is_empty(),
        "rest/ imports grpc/:\n{}",
        found.join("\n")
    );
}

#[test]
fn ops_imports_neither_api() {
    let found = offending(
        "ops",
        &[
            "crate::rest",
            "crate::grpc",
            "super::rest",
            "super::grpc",
            "axum",
            "tonic",
        ],
    );
    assert!(
        found.is_empty(),
        "ops/ depends on an API:\n{}",
        found.join("\n")
    );
}

#[test]
fn nothing_decides_by_a_title_or_an_http_status() {
    let needles = [
        ".title.as_str()",
        ".title ==",
        "title ==",
        "status == StatusCode",
        "status() == StatusCode",
        ".as_u16() ==",
        "from_problem",
    ];
    let found: Vec<String> = ["ops", "rest", "grpc"]
        .into_iter()
        .flat_map(|dir| offending(dir, &needles))
        .collect();
    assert!(
        found.is_empty(),
        "code that decides by a title or an HTTP status:\n{}",
        found.join("\n")
    );
}
