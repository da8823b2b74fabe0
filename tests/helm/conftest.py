"""Shared helpers for the chart tests: render the chart offline and look objects up."""

import base64
import dataclasses
import http.server
import json
import os
import pathlib
import re
import threading

import helm_python as helm
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "rill"
VALUES_DIR = pathlib.Path(__file__).resolve().parent / "values"
VALUES_FILES = sorted(p.stem for p in VALUES_DIR.glob("*.yaml"))
RELEASE = "rill"
NAMESPACE = "workflows"


def load_values(name):
    return yaml.safe_load((VALUES_DIR / f"{name}.yaml").read_text()) or {}


class Rendered:
    """The objects of one rendering, by kind and name."""

    def __init__(self, manifests, values, merged):
        self.values = values
        self.merged = merged
        self.docs = []
        for path, text in sorted(manifests.items()):
            if path.endswith("NOTES.txt"):
                continue
            for doc in yaml.safe_load_all(text):
                if doc:
                    self.docs.append(doc)

    def all(self, kind):
        return [d for d in self.docs if d["kind"] == kind]

    def one(self, kind, name=None):
        found = [d for d in self.all(kind) if name is None or d["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
        return found[0]

    def maybe(self, kind, name):
        found = [d for d in self.all(kind) if d["metadata"]["name"] == name]
        return found[0] if found else None


@pytest.fixture(scope="session")
def chart():
    with helm.Chart.load(str(CHART)) as loaded:
        yield loaded


@pytest.fixture(scope="session")
def render(chart):
    """render(values, name=…, namespace=…) -> Rendered; raises Helm's errors."""

    def _render(values=None, name=RELEASE, namespace=NAMESPACE):
        values = values or {}
        manifests = chart.render(values, name=name, namespace=namespace, is_install=True)
        return Rendered(manifests, values, chart.merge_values(values))

    return _render


def container_env(container):
    """The container's environment as {name: entry} (entry has value or valueFrom)."""
    return {e["name"]: e for e in container.get("env", [])}


def env_value(container, name):
    entry = container_env(container)[name]
    assert "value" in entry, f"{name} is not a literal value: {entry}"
    return entry["value"]


def known_rill_options():
    """Every RILL_… environment variable Rill's configuration reference lists."""
    reference = (ROOT / "docs" / "configuration.md").read_text()
    return set(re.findall(r"`(RILL_[A-Z0-9_]+)`", reference))


def binary_problem(path):
    """Why `path` cannot be the `rill` binary the tests hand to other processes, or None."""
    if not os.path.isabs(path):
        return (f"RILL_BIN={path!r} is a relative path: the tests hand it to processes that run "
                "in other directories (a Job's PATH, a symlink in a temporary bin/), where it "
                "would not resolve; give an absolute path (scripts/test does)")
    if not os.path.isfile(path):
        return f"RILL_BIN={path} does not exist: build it (cargo build -p rill) or point RILL_BIN at a built binary"
    if not os.access(path, os.X_OK):
        return f"RILL_BIN={path} is not executable"
    return None


def rill_binary():
    """The `rill` binary under test from $RILL_BIN; None when unset. A set but unusable
    RILL_BIN fails the tests that need it, instead of leaving them to wait for a timeout."""
    path = os.environ.get("RILL_BIN")
    if not path:
        return None
    problem = binary_problem(path)
    if problem:
        pytest.fail(problem, pytrace=False)
    return pathlib.Path(path)


# --- Upgrades: Helm's `lookup` answered by a fake API server ------------------------

APPS_V1 = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
    "resources": [{"name": "statefulsets", "singularName": "statefulset", "namespaced": True,
                   "kind": "StatefulSet", "verbs": ["get", "list"]}],
}
CORE_V1 = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1",
    "resources": [{"name": "secrets", "singularName": "secret", "namespaced": True,
                   "kind": "Secret", "verbs": ["get", "list"]}],
}
NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}


class FakeApiServer:
    """Serves apps/v1 and v1 discovery, and when set, one StatefulSet and the Secrets in
    `secrets` (by name); 404 for the rest."""

    def __init__(self):
        self.statefulset = None
        self.secrets = {}
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                server.requests.append(path)
                wanted = f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/{RELEASE}-broker"
                secrets = f"/api/v1/namespaces/{NAMESPACE}/secrets/"
                if path == "/apis/apps/v1":
                    self.answer(200, APPS_V1)
                elif path == "/api/v1":
                    self.answer(200, CORE_V1)
                elif path == wanted and server.statefulset is not None:
                    self.answer(200, server.statefulset)
                elif path.startswith(secrets) and path.removeprefix(secrets) in server.secrets:
                    self.answer(200, server.secrets[path.removeprefix(secrets)])
                else:
                    self.answer(404, NOT_FOUND)

            def answer(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def apply(self, rendered):
        """What installing or upgrading leaves in the cluster: the StatefulSet, and the
        Secrets the release renders (one it no longer renders is kept, as
        helm.sh/resource-policy: keep keeps the admin Secret)."""
        self.statefulset = rendered.one("StatefulSet", f"{RELEASE}-broker")
        for secret in rendered.all("Secret"):
            self.secrets[secret["metadata"]["name"]] = secret

    def secret_values(self):
        """{(Secret name, key): decoded value} of the Secrets in the cluster, as a pod's
        secretKeyRef reads them."""
        return {(name, key): base64.b64decode(value).decode()
                for name, secret in self.secrets.items()
                for key, value in (secret.get("data") or {}).items()}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Release:
    """A release deployed into the fake cluster; upgrade(values) renders the next one."""

    def __init__(self, config, chart, api):
        self.config, self.chart, self.api = config, chart, api

    def upgrade(self, values):
        manifests = self.config.render(self.chart, values, name=RELEASE, namespace=NAMESPACE, is_upgrade=True)
        return Rendered(manifests, values, self.chart.merge_values(values))

    def deploy(self, rendered):
        """What `helm upgrade` leaves in the cluster: the new StatefulSet and Secrets."""
        self.api.apply(rendered)
        return rendered

    def secrets(self):
        """{(Secret name, key): value} of the Secrets in the cluster now."""
        return self.api.secret_values()


@pytest.fixture
def release():
    """A release installed with `values` (the defaults: 3 brokers, 3 partitions, 3 replicas).
    `secrets` ({name: {key: value}}) are in the namespace before the install, as an
    existingSecret, or the admin Secret of an earlier install, would be."""
    api = FakeApiServer()
    with helm.Config(kube_apiserver=api.url, kube_token="test", namespace=NAMESPACE) as config, \
            helm.Chart.load(str(CHART)) as chart:
        def install(values=None, secrets=None):
            for name, data in (secrets or {}).items():
                api.secrets[name] = {
                    "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                    "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
                }
            values = values or {}
            manifests = config.render(chart, values, name=RELEASE, namespace=NAMESPACE, is_install=True)
            api.apply(Rendered(manifests, values, chart.merge_values(values)))
            return Release(config, chart, api)
        yield install
    api.close()


@dataclasses.dataclass(frozen=True)
class SecretKeyRef:
    """A variable a Job's pod reads from a Secret."""
    name: str
    key: str


def scale_jobs(rendered):
    """{hook: (mode, env, job)} of the scale Jobs. env maps each variable to its value, or
    to a SecretKeyRef for one read from a Secret."""
    jobs = {}
    for job in rendered.all("Job"):
        container = job["spec"]["template"]["spec"]["containers"][0]
        command = container["command"]
        assert command[:2] == ["/bin/sh", "-c"] and command[3] == "scale.sh"
        env = {}
        for entry in container["env"]:
            if "value" in entry:
                env[entry["name"]] = entry["value"]
            else:
                ref = entry["valueFrom"]["secretKeyRef"]
                env[entry["name"]] = SecretKeyRef(ref["name"], ref["key"])
        jobs[job["metadata"]["annotations"]["helm.sh/hook"]] = (command[4], env, job)
    return jobs
