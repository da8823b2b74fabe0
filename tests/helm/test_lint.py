"""`helm lint --strict` (Helm's own linter, through the Go SDK) passes for every values file.

Strict turns warnings into failures. Helm 4's linter does not stop at a template's `fail`
(it logs it), so the chart's own checks are tested by rendering in test_schema.py.
"""

import helm_python as helm
import pytest

from conftest import CHART, VALUES_FILES, load_values

WARNING = 2


@pytest.mark.parametrize("kube_version", ["v1.25.0", "v1.28.0", "v1.33.0"])
@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_chart_lints_clean_in_strict_mode(values_file, kube_version):
    report = helm.lint(str(CHART), load_values(values_file), strict=True,
                       namespace="workflows", kube_version=kube_version)
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    problems = [m for m in report["messages"] if m["severity"] >= WARNING]
    assert problems == []


def test_chart_metadata():
    with helm.Chart.load(str(CHART)) as chart:
        assert chart.name == "rill"
        assert chart.values["clusterSize"] == 3
        assert chart.values["gateway"]["embedded"] is True
