//! Camunda's own Python SDK (`camunda-orchestration-sdk`, unmodified, pinned in
//! `tests/clients/python/requirements.txt`) drives this gateway over the real engine:
//! deploy, create, activate and complete jobs, see the instance finish, and more (see
//! `sdk_flow.py`). Needs `python3` and PyPI; the SDK is installed into a virtualenv
//! under cargo's target directory once.

use std::path::PathBuf;
use std::process::Command;

use crate::support::TestGateway;
use crate::support::engine_backend::EngineBackend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_camunda_python_sdk_runs_a_process_to_completion() {
    let gateway = TestGateway::start(EngineBackend::new(1)).await;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = root.join("tests/clients/python/run.sh");
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-clients");
    let base = gateway.base.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(&script)
            .env("RILL_REST_ADDRESS", base)
            .env("RILL_PY_VENV", venv)
            .output()
            .expect("run tests/clients/python/run.sh (needs bash and python3)")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the Python SDK flow failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    gateway.stop().await;
}
