"""Shared helpers for the chart tests: render the chart offline and look objects up."""

import os
import pathlib
import re

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


def rill_binary():
    path = os.environ.get("RILL_BIN")
    return pathlib.Path(path) if path and os.access(path, os.X_OK) else None
