"""Rill itself accepts the configuration the chart (and docker-compose.yml) gives it.

Each pod's environment is resolved as the kubelet would (downward API, Secrets,
$(VAR) references), the broker start script runs with a stand-in `rill` that calls the
real binary's `rill config show`, and `rill config validate` checks the result with
Rill's own validation (node id in range, replication factor, contact points, ports…).

Needs the `rill` binary: $RILL_BIN, or target/debug/rill (tests/helm/run.sh finds it).
"""

import re
import subprocess
import tomllib

import pytest
import yaml

from conftest import ROOT, VALUES_FILES, load_values, rill_binary

RILL = rill_binary()
pytestmark = pytest.mark.skipif(RILL is None, reason="no rill binary: build it (cargo build -p rill) or set RILL_BIN")

SECRET_VALUE = "from-a-secret"


def resolve_env(container, pod_name, ordinal):
    """The environment the kubelet would give the container."""
    env = {}
    for entry in container.get("env", []):
        if "value" in entry:
            value = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                           lambda m: env.get(m.group(1), m.group(0)), entry["value"])
        else:
            source = entry["valueFrom"]
            if "secretKeyRef" in source:
                value = SECRET_VALUE
            else:
                path = source["fieldRef"]["fieldPath"]
                value = {"metadata.name": pod_name,
                         "metadata.labels['apps.kubernetes.io/pod-index']": str(ordinal)}[path]
        env[entry["name"]] = value
    return env


def show_and_validate(tmp_path, env, argv):
    """Runs argv (which ends in `rill config show`), then `rill config validate` on its output."""
    shown = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0, shown.stderr
    config_file = tmp_path / "shown.toml"
    config_file.write_text(shown.stdout)
    checked = subprocess.run([str(RILL), "config", "validate", str(config_file)],
                             env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, f"{checked.stderr}\n--- configuration ---\n{shown.stdout}"
    return tomllib.loads(shown.stdout)


@pytest.fixture
def shim(tmp_path):
    """A `rill` for the start script: checks the role, then shows the configuration."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "rill"
    fake.write_text(f'#!/bin/sh\n[ "$1" = broker ] || exit 90\nexec "{RILL}" config show\n')
    fake.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_rill_accepts_every_brokers_configuration(render, tmp_path, shim, values_file):
    rendered = render(load_values(values_file))
    sts = rendered.one("StatefulSet", "rill-broker")
    script = tmp_path / "startup.sh"
    script.write_text(rendered.one("ConfigMap", "rill-broker")["data"]["startup.sh"])
    (container,) = sts["spec"]["template"]["spec"]["containers"]
    size = sts["spec"]["replicas"]
    for ordinal in range(size):
        pod = f"rill-broker-{ordinal}"
        env = resolve_env(container, pod, ordinal) | {"PATH": f"{shim}:/usr/bin:/bin"}
        config = show_and_validate(tmp_path, env, ["/bin/sh", str(script)])
        cluster = config["cluster"]
        assert cluster["node-id"] == ordinal
        assert cluster["size"] == size
        assert cluster["advertised-host"] == f"{pod}.rill-broker.workflows.svc.cluster.local"
        assert len(cluster["initial-contact-points"]) == size
        assert config["data"]["directory"] == "/usr/local/rill/data"


def test_rill_accepts_the_gateways_configuration(render, tmp_path):
    rendered = render(load_values("gateway-elasticsearch"))
    (container,) = rendered.one("Deployment", "rill-gateway")["spec"]["template"]["spec"]["containers"]
    env = resolve_env(container, "rill-gateway-abc", 0) | {"PATH": "/usr/bin:/bin"}
    config = show_and_validate(tmp_path, env, [str(RILL), "config", "show"])
    assert config["gateway"]["enabled"] is True
    assert len(config["gateway"]["contact-points"]) == 3


def test_rill_reads_the_exporter_settings(render, tmp_path, shim):
    rendered = render(load_values("gateway-elasticsearch"))
    script = tmp_path / "startup.sh"
    script.write_text(rendered.one("ConfigMap", "rill-broker")["data"]["startup.sh"])
    (container,) = rendered.one("StatefulSet", "rill-broker")["spec"]["template"]["spec"]["containers"]
    env = resolve_env(container, "rill-broker-1", 1) | {"PATH": f"{shim}:/usr/bin:/bin"}
    config = show_and_validate(tmp_path, env, ["/bin/sh", str(script)])
    es = config["exporters"]["elasticsearch"]
    assert es["url"] == "https://elasticsearch-master.search.svc:9200"
    assert es["index-prefix"] == "rill-record"
    assert es["username"] == SECRET_VALUE
    assert es["bulk-size"] == 500
    assert es["filter"]["job-batch"] is True


def test_rill_refuses_what_the_chart_refuses(tmp_path):
    """The chart's replicationFactor check matches Rill's own: both refuse 5 over 3."""
    env = {"PATH": "/usr/bin:/bin", "RILL_CLUSTER__SIZE": "3", "RILL_CLUSTER__REPLICATION_FACTOR": "5"}
    shown = subprocess.run([str(RILL), "config", "show"], env=env, capture_output=True, text=True, timeout=30)
    config_file = tmp_path / "bad.toml"
    config_file.write_text(shown.stdout)
    checked = subprocess.run([str(RILL), "config", "validate", str(config_file)],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode != 0
    assert "cluster.replication-factor" in checked.stderr


def test_rill_accepts_the_compose_brokers(tmp_path):
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    brokers = {n: s for n, s in compose["services"].items() if n.startswith("broker-")}
    assert len(brokers) == 3
    for name, service in sorted(brokers.items()):
        env = {k: str(v) for k, v in service["environment"].items()} | {"PATH": "/usr/bin:/bin"}
        config = show_and_validate(tmp_path, env, [str(RILL), "config", "show"])
        assert config["cluster"]["node-id"] == int(name.removeprefix("broker-"))


def test_rill_accepts_the_brokers_a_scale_up_adds(release, tmp_path, shim):
    """Pods 3 and 4 of a release scaled from 3 to 5 brokers: the settings of the others,
    their own node id beyond cluster.size, and the running brokers as contact points."""
    up = release().upgrade({"clusterSize": 5, "partitionCount": 6})
    sts = up.one("StatefulSet", "rill-broker")
    script = tmp_path / "startup.sh"
    script.write_text(up.one("ConfigMap", "rill-broker")["data"]["startup.sh"])
    (container,) = sts["spec"]["template"]["spec"]["containers"]
    assert sts["spec"]["replicas"] == 5
    for ordinal in (3, 4):
        pod = f"rill-broker-{ordinal}"
        env = resolve_env(container, pod, ordinal) | {"PATH": f"{shim}:/usr/bin:/bin"}
        cluster = show_and_validate(tmp_path, env, ["/bin/sh", str(script)])["cluster"]
        assert (cluster["node-id"], cluster["size"], cluster["partitions-count"]) == (ordinal, 3, 3)
        assert cluster["advertised-host"] == f"{pod}.rill-broker.workflows.svc.cluster.local"
        assert cluster["initial-contact-points"] == [
            f"rill-broker-{i}.rill-broker.workflows.svc.cluster.local:26502" for i in range(3)]


@pytest.mark.parametrize("values, method, username", [
    ({}, "basic", "admin"),
    ({"gateway": {"embedded": False}, "authentication": {"username": "ops", "existingSecret": "team-rill"}},
     "basic", "ops"),
    ({"gateway": {"embedded": False}, "authentication": {"method": "none"}}, "none", None),
], ids=["default", "existing-secret-separate-gateway", "none"])
def test_rill_reads_the_authentication_settings(render, tmp_path, shim, values, method, username):
    """Brokers and separate gateways alike: the method, and the admin user with the
    password from its Secret (shown as *** by `rill config show`)."""
    rendered = render(values)
    script = tmp_path / "startup.sh"
    script.write_text(rendered.one("ConfigMap", "rill-broker")["data"]["startup.sh"])
    (broker,) = rendered.one("StatefulSet", "rill-broker")["spec"]["template"]["spec"]["containers"]
    env = resolve_env(broker, "rill-broker-0", 0) | {"PATH": f"{shim}:/usr/bin:/bin"}
    configs = [show_and_validate(tmp_path, env, ["/bin/sh", str(script)])]
    if rendered.maybe("Deployment", "rill-gateway"):
        (gateway,) = rendered.one("Deployment", "rill-gateway")["spec"]["template"]["spec"]["containers"]
        env = resolve_env(gateway, "rill-gateway-abc", 0) | {"PATH": "/usr/bin:/bin"}
        configs.append(show_and_validate(tmp_path, env, [str(RILL), "config", "show"]))
    for config in configs:
        security = config["security"]
        assert security["authentication"]["method"] == method
        users = security.get("initialization", {}).get("users", [])
        if username is None:
            assert users == []
        else:
            assert users == [{"username": username, "password": "***"}]
