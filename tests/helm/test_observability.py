"""The Grafana dashboard and the alert rules query metrics Rill really exports.

Every PromQL expression is parsed, and every metric it names must be one of the names in
Rill's metrics.rs files (or a Kubernetes metric the rules state they rely on), so a
renamed metric fails here instead of leaving an empty panel or a silent alert.
"""

import importlib.util
import json
import re

import promql_parser
import pytest
import yaml

from conftest import CHART, ROOT

DASHBOARD = ROOT / "deploy" / "grafana" / "rill-dashboard.json"
ALERTS = ROOT / "deploy" / "prometheus" / "rill-alerts.yaml"
# Not Rill's: the scrape status, and the kubelet's volume statistics (kube-prometheus).
EXTERNAL_METRICS = {
    "up",
    "kubelet_volume_stats_used_bytes",
    "kubelet_volume_stats_capacity_bytes",
    "kubelet_volume_stats_available_bytes",
}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def rill_metric_names():
    names = set()
    for source in ROOT.glob("*/src/metrics.rs"):
        names |= set(re.findall(r'"(rill_[a-z0-9_]+)"', source.read_text()))
    assert len(names) > 20, names
    return names


def metric_names(expr):
    # Grafana's variables are not PromQL: give them values PromQL accepts.
    expr = expr.replace("$__rate_interval", "5m")
    expr = re.sub(r"\$\{?(\w+)\}?", r"\1", expr)
    found = []
    promql_parser.walk(promql_parser.parse(expr),
                       lambda node: found.append(node.name) if isinstance(node, promql_parser.VectorSelector) else None)
    assert found, expr
    return found


def exported(name, known):
    if name in known or name in EXTERNAL_METRICS:
        return True
    return any(name.endswith(s) and name.removesuffix(s) in known for s in HISTOGRAM_SUFFIXES)


def dashboard_exprs(dashboard):
    for panel in dashboard["panels"]:
        for t in panel.get("targets", []):
            yield panel["title"], t["expr"]


def alert_rules():
    return [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]


def test_dashboard_is_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "deploy/grafana/generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    assert DASHBOARD.read_text() == generate.render(), (
        "rill-dashboard.json is stale: run python3 deploy/grafana/generate.py"
    )


def test_dashboard_queries_existing_metrics():
    known = rill_metric_names()
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = list(dashboard_exprs(dashboard))
    assert len(exprs) > 25
    for title, expr in exprs:
        for name in metric_names(expr):
            assert exported(name, known), f"panel {title!r} queries {name}, which Rill does not export"


def test_dashboard_covers_the_operators_questions():
    dashboard = json.loads(DASHBOARD.read_text())
    rows = {p["title"] for p in dashboard["panels"] if p["type"] == "row"}
    assert {"Throughput", "Latency", "Flow control", "Raft", "Exporters", "Storage"} <= rows
    queried = " ".join(e for _, e in dashboard_exprs(dashboard))
    for metric in ["rill_stream_processor_commands_processed_total", "rill_raft_commit_latency_seconds_bucket",
                   "rill_backpressure_requests_limit", "rill_raft_role", "rill_exporter_lag_records",
                   "rill_gateway_rest_requests_total"]:
        assert metric in queried


def test_dashboard_layout_is_sound():
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for panel in dashboard["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"panel {panel['title']!r} overlaps another"
                cells.add((x, y))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    used = set(re.findall(r"\$\{?(\w+)\}?", json.dumps(dashboard))) - {"__rate_interval", "__all"}
    assert used <= variables, used - variables


def test_alert_rules_query_existing_metrics():
    known = rill_metric_names()
    for rule in alert_rules():
        for name in metric_names(rule["expr"]):
            assert exported(name, known), f"alert {rule['alert']} queries {name}, which Rill does not export"


@pytest.mark.parametrize("alert", ["RillPartitionWithoutLeader", "RillExporterLagGrowing", "RillDiskNearlyFull"])
def test_required_alerts_exist(alert):
    rules = {r["alert"]: r for r in alert_rules()}
    rule = rules[alert]
    assert rule["labels"]["severity"] in {"warning", "critical"}
    assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    assert re.fullmatch(r"\d+[smh]", rule["for"])


def test_every_alert_is_complete():
    rules = alert_rules()
    assert len({r["alert"] for r in rules}) == len(rules)
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        # Label references in the text must be labels the expression keeps.
        text = rule["annotations"]["summary"] + rule["annotations"]["description"]
        for label in re.findall(r"\$labels\.(\w+)", text):
            assert label in rule["expr"] or label in {"pod", "namespace", "job", "persistentvolumeclaim"}, (
                rule["alert"], label)


def test_chart_ships_the_same_files(render):
    assert (CHART / "files" / "rill-dashboard.json").read_text() == DASHBOARD.read_text()
    assert (CHART / "files" / "rill-alerts.yaml").read_text() == ALERTS.read_text()
    rendered = render({"prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True},
                       "prometheusServiceMonitor": {"enabled": True, "labels": {"release": "kp"}},
                       "networkPolicy": {"enabled": False}})
    rule = rendered.one("PrometheusRule")
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
    dashboard = rendered.one("ConfigMap", "rill-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["rill-dashboard.json"]) == json.loads(DASHBOARD.read_text())
    monitor = rendered.one("ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kp"
    assert monitor["spec"]["endpoints"] == [{"port": "monitoring", "path": "/metrics", "interval": "10s"}]


@pytest.mark.parametrize("embedded, components", [(True, {"broker"}), (False, {"broker", "gateway"})])
def test_service_monitor_scrapes_every_rill_process_once(render, embedded, components):
    rendered = render({"prometheusServiceMonitor": {"enabled": True}, "gateway": {"embedded": embedded},
                       "networkPolicy": {"enabled": False}})
    monitor = rendered.one("ServiceMonitor")
    selector = monitor["spec"]["selector"]
    (expression,) = selector["matchExpressions"]
    scraped = []
    for svc in rendered.all("Service"):
        labels = svc["metadata"]["labels"]
        if (selector["matchLabels"].items() <= labels.items()
                and labels.get(expression["key"]) in expression["values"]
                and "monitoring" in {p["name"] for p in svc["spec"]["ports"]}):
            scraped.append(svc["spec"]["selector"]["app.kubernetes.io/component"])
    # Each kind of pod is scraped through exactly one Service.
    assert sorted(scraped) == sorted(components)
