"""The `rill` binary handed to the tests is one that other processes can run.

The scale Job tests put it on a Job's PATH through a symlink in a temporary directory,
and the config tests call it from a stand-in script: a relative path resolves there to
nothing, and the Job then waits for its whole timeout. These tests fail at once instead.
"""

import os
import subprocess

import pytest

from conftest import binary_problem, rill_binary


def test_a_relative_path_is_refused_with_the_reason(tmp_path):
    problem = binary_problem("target/debug/rill")
    assert problem is not None and "relative path" in problem and "target/debug/rill" in problem


def test_a_missing_binary_is_refused_naming_it(tmp_path):
    missing = tmp_path / "debug" / "rill"
    problem = binary_problem(str(missing))
    assert problem is not None and "does not exist" in problem and str(missing) in problem


def test_a_file_that_cannot_run_is_refused(tmp_path):
    plain = tmp_path / "rill"
    plain.write_text("not a program")
    plain.chmod(0o644)
    problem = binary_problem(str(plain))
    assert problem is not None and "not executable" in problem


def test_the_binary_under_test_runs_from_another_directory(tmp_path):
    if os.environ.get("RILL_BIN") is None:
        pytest.skip("no rill binary: set RILL_BIN (scripts/test does)")
    binary = rill_binary()
    done = subprocess.run([str(binary), "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "rill" in done.stdout, done.stdout + done.stderr
