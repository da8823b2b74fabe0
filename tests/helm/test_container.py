"""The Dockerfile, .dockerignore and docker-compose.yml agree with the chart and the code.

No image is built here (that needs a Docker daemon and registries). The Dockerfile is
parsed with Docker's own parser (PyPI `dockerfile`) and linted with hadolint; the compose
files are checked against the Compose specification (PyPI `compose-spec`). The rest
catches what drifts: the toolchain version, the non-root user the chart runs as, paths,
ports, and the compose cluster's ids and contact points.
"""

import fnmatch
import json
import pathlib
import re
import subprocess
import sys
import tomllib

import dockerfile
import yaml
from compose_spec import PyCompose

from conftest import ROOT, known_rill_options

COMPOSE_FILES = [ROOT / "docker-compose.yml", *sorted((ROOT / "deploy/compose").glob("*.yml"))]
COMPOSE_FILES = [p for p in COMPOSE_FILES if "services" in yaml.safe_load(p.read_text())]


def dockerfile_stages():
    """Instructions per stage, each as its original line ("FROM … AS build", "USER 1000:1000")."""
    stages = []
    for command in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        line = command.original.strip()
        if command.cmd == "FROM":
            stages.append([line])
        elif stages:
            stages[-1].append(line)
    return stages


def test_dockerfile_passes_hadolint():
    hadolint = pathlib.Path(sys.executable).parent / "hadolint"
    done = subprocess.run([str(hadolint), "--no-color", str(ROOT / "Dockerfile")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def compose_with_defaults(path):
    """The file as Compose reads it: ${VAR:-default} interpolated, YAML merge keys applied."""
    text = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), path.read_text())
    return yaml.safe_load(text)


def test_compose_files_follow_the_compose_specification():
    for path in COMPOSE_FILES:
        parsed = PyCompose.from_json(json.dumps(compose_with_defaults(path)))
        assert parsed.service_names(), path


def test_build_and_runtime_are_separate_stages():
    stages = dockerfile_stages()
    assert len(stages) >= 2
    build, runtime = stages[0], stages[-1]
    assert "rust:" in build[0] and " AS build" in build[0]
    assert "rust" not in runtime[0] and "-slim" in runtime[0]
    runtime_text = "\n".join(runtime)
    # Only the binary comes over from the build stage; no compiler in the final image.
    assert re.search(r"COPY --from=build \S*rill /usr/local/bin/rill", runtime_text), runtime_text
    for tool in ("cargo", "clang", "g++"):
        assert tool not in runtime_text


def test_runtime_runs_as_the_user_the_chart_expects():
    runtime = "\n".join(dockerfile_stages()[-1])
    (user,) = re.findall(r"^USER (\S+)$", runtime, re.M)
    uid, gid = user.split(":")
    assert uid != "0" and uid.isdigit()
    values = yaml.safe_load((ROOT / "charts/rill/values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(uid)
    assert values["podSecurityContext"]["runAsGroup"] == int(gid)
    assert values["podSecurityContext"]["runAsNonRoot"] is True
    assert 'ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/rill"]' in runtime
    assert "RILL_DATA__DIRECTORY=/usr/local/rill/data" in runtime


def test_toolchain_matches_rust_toolchain_toml():
    pinned = tomllib.loads((ROOT / "rust-toolchain.toml").read_text())["toolchain"]["channel"]
    assert f"ARG RUST_VERSION={pinned}" in (ROOT / "Dockerfile").read_text()


def test_image_exposes_zeebes_ports():
    runtime = "\n".join(dockerfile_stages()[-1])
    (exposed,) = re.findall(r"^EXPOSE (.+)$", runtime, re.M)
    assert set(exposed.split()) == {"8080", "26500", "26501", "26502", "9600"}


def test_build_context_keeps_every_workspace_member():
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]
    needed = workspace["members"] + ["Cargo.toml", "Cargo.lock", "rust-toolchain.toml"]
    for member in needed:
        for pattern in ignored:
            assert not fnmatch.fnmatch(member, pattern.lstrip("/")), f"{pattern} drops {member}"
            assert not member.startswith(pattern.rstrip("/") + "/"), f"{pattern} drops {member}"
    assert "target" in ignored and ".git" in ignored


def compose_brokers():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return {name: svc for name, svc in compose["services"].items() if name.startswith("broker-")}


def test_compose_is_a_three_broker_cluster():
    brokers = compose_brokers()
    assert sorted(brokers) == ["broker-0", "broker-1", "broker-2"]
    ids, host_ports = set(), []
    for name, svc in brokers.items():
        env = svc["environment"]
        assert env["RILL_CLUSTER__SIZE"] == str(len(brokers))
        assert int(env["RILL_CLUSTER__REPLICATION_FACTOR"]) <= len(brokers)
        assert env["RILL_CLUSTER__NODE_ID"] == name.removeprefix("broker-")
        assert env["RILL_CLUSTER__ADVERTISED_HOST"] == name == svc["hostname"]
        assert env["RILL_CLUSTER__INITIAL_CONTACT_POINTS"].split(",") == [f"{b}:26502" for b in sorted(brokers)]
        assert svc["command"] == ["broker"]
        assert svc["volumes"] == [f"{name}:/usr/local/rill/data"]
        ids.add(env["RILL_CLUSTER__NODE_ID"])
        host_ports += [p.split(":")[0] for p in svc["ports"]]
    assert len(ids) == 3
    assert len(host_ports) == len(set(host_ports))


def test_compose_files_set_only_rill_options():
    known = known_rill_options() | {"RILL_LOG", "RILL_LOG_FORMAT"}
    for path in COMPOSE_FILES:
        for name, svc in compose_with_defaults(path)["services"].items():
            for variable in svc.get("environment") or {}:
                if variable.startswith("RILL_"):
                    assert variable in known, f"{path.name}: {name} sets {variable}, not a Rill option"


def test_compose_monitoring_mounts_files_that_exist():
    monitoring = yaml.safe_load((ROOT / "deploy/compose/monitoring.yml").read_text())
    for svc in monitoring["services"].values():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            # Paths resolve from the first compose file's directory, the repository root.
            assert (ROOT / source).is_file(), source
    scrape = yaml.safe_load((ROOT / "deploy/compose/prometheus.yml").read_text())
    (job,) = scrape["scrape_configs"]
    targets = [t for c in job["static_configs"] for t in c["targets"]]
    assert targets == [f"{b}:9600" for b in sorted(compose_brokers())]
    # The dashboard selects services named <release>-broker, as a ServiceMonitor names them.
    assert job["job_name"].endswith("-broker")
