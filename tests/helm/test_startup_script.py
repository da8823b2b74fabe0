"""The broker start script derives the node id from the pod ordinal, under a POSIX sh.

It runs the script from the rendered ConfigMap with /bin/sh (dash on Debian, as in the
image) and a stand-in `rill` on PATH that prints what it was started with.
"""

import os
import pathlib
import subprocess

import pytest

from conftest import load_values

FAKE_RILL = """#!/bin/sh
echo "node-id=$RILL_CLUSTER__NODE_ID args=$*"
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory, render):
    rendered = render(load_values("defaults"))
    configmap = rendered.one("ConfigMap", "rill-broker")
    directory = tmp_path_factory.mktemp("startup")
    path = directory / "startup.sh"
    path.write_text(configmap["data"]["startup.sh"])
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "rill"
    fake.write_text(FAKE_RILL)
    fake.chmod(0o755)
    return path, bin_dir


def run(script, env, *args):
    path, bin_dir = script
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", **env}
    return subprocess.run(["/bin/sh", str(path), *args], env=environment,
                          capture_output=True, text=True, timeout=10)


@pytest.mark.parametrize("env, node_id", [
    ({"K8S_POD_INDEX": "2", "K8S_POD_NAME": "rill-broker-2"}, "2"),
    # Kubernetes before 1.28: the label is missing and the variable empty.
    ({"K8S_POD_INDEX": "", "K8S_POD_NAME": "orders-rill-broker-11"}, "11"),
    ({"HOSTNAME": "rill-broker-4"}, "4"),
    ({"K8S_POD_INDEX": "007"}, "7"),
    ({"K8S_POD_INDEX": "0"}, "0"),
])
def test_node_id_comes_from_the_ordinal(script, env, node_id):
    done = run(script, env, "--extra")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"node-id={node_id} args=broker --extra"
    assert f"node id {node_id}" in done.stderr


@pytest.mark.parametrize("env", [
    {"K8S_POD_NAME": "rill-broker"},
    {"K8S_POD_INDEX": "", "K8S_POD_NAME": ""},
    {"K8S_POD_INDEX": "two"},
    {},
])
def test_no_ordinal_stops_with_a_clear_message(script, env):
    done = run(script, env)
    assert done.returncode == 64
    assert "cannot derive the node id" in done.stderr
    assert done.stdout == ""


def test_script_is_plain_posix_sh():
    source = (pathlib.Path(__file__).resolve().parents[2] / "charts/rill/files/startup.sh").read_text()
    assert source.startswith("#!/bin/sh\n")
    dash = pathlib.Path("/bin/dash")
    if dash.exists():
        check = subprocess.run([str(dash), "-n", "-c", source], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
    for bashism in ("[[", "$((10#", "function ", "<<<", "${index,,}"):
        assert bashism not in source


def test_script_file_is_executable_in_the_pod(render):
    sts = render().one("StatefulSet", "rill-broker")
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["startup"]["configMap"]["defaultMode"] == 0o555
    assert os.path.basename(sts["spec"]["template"]["spec"]["containers"][0]["command"][1]) == "startup.sh"
