"""Invalid values are refused at install time, with a message naming the value at fault.

`chart.render` does what `helm install` and `helm template` do before anything reaches a
cluster: values.schema.json first, then the templates' own checks (`fail`), for what a
schema cannot say (one field compared with another).
"""

import helm_python as helm
import pytest

from conftest import CHART

ES = {"enabled": True, "url": "http://elasticsearch:9200"}

# (id, values, words the error must contain)
REFUSED = [
    ("replication above cluster size", {"clusterSize": 3, "replicationFactor": 5},
     ["replicationFactor (5) is greater than clusterSize (3)", "at most 3"]),
    ("replication above default size", {"replicationFactor": 4}, ["replicationFactor (4)"]),
    ("partition count not a number", {"partitionCount": "twelve"}, ["/partitionCount", "integer"]),
    ("partition count a numeric string", {"partitionCount": "12"}, ["/partitionCount"]),
    ("partition count zero", {"partitionCount": 0}, ["/partitionCount", "minimum"]),
    ("partition count above 4095", {"partitionCount": 4096}, ["/partitionCount", "maximum"]),
    ("partition count fractional", {"partitionCount": 2.5}, ["/partitionCount"]),
    ("cluster size zero", {"clusterSize": 0}, ["/clusterSize"]),
    ("threads zero", {"cpuThreadCount": 0}, ["/cpuThreadCount"]),
    ("exporter without url", {"exporters": {"elasticsearch": {"enabled": True}}},
     ["/exporters/elasticsearch/url"]),
    ("exporter url without scheme", {"exporters": {"elasticsearch": ES | {"url": "elasticsearch:9200"}}},
     ["/exporters/elasticsearch/url"]),
    ("exporter index prefix uppercase", {"exporters": {"elasticsearch": ES | {"indexPrefix": "Zeebe"}}},
     ["/exporters/elasticsearch/indexPrefix"]),
    ("exporter unknown option", {"exporters": {"elasticsearch": ES | {"options": {"bulksize": 5}}}},
     ["bulksize"]),
    ("exporter url in options", {"exporters": {"elasticsearch": ES | {"options": {"url": "http://x:9200"}}}},
     ["/exporters/elasticsearch/options", "url"]),
    ("exporter auth type unknown",
     {"exporters": {"elasticsearch": ES | {"auth": {"existingSecret": "s", "type": "kerberos"}}}},
     ["/exporters/elasticsearch/auth/type"]),
    ("exporter username without secret",
     {"exporters": {"elasticsearch": ES | {"auth": {"existingSecret": "", "type": "basic", "username": "u"}}}},
     ["auth.existingSecret is empty"]),
    ("flow control algorithm unknown", {"flowControl": {"request": {"algorithm": "magic"}}},
     ["/flowControl/request/algorithm"]),
    ("flow control ratio out of range", {"flowControl": {"request": {"aimd": {"backoffRatio": 1.5}}}},
     ["/flowControl/request/aimd/backoffRatio"]),
    ("flow control misspelt option", {"flowControl": {"request": {"aimd": {"initalLimit": 5}}}},
     ["initalLimit"]),
    ("misspelt top-level value", {"clustersize": 5}, ["clustersize"]),
    ("snapshot period not a duration", {"snapshotPeriod": "often"}, ["/snapshotPeriod"]),
    ("persistence type unknown", {"persistenceType": "ssd"}, ["/persistenceType"]),
    ("pvc size not a quantity", {"pvcSize": "ten gigs"}, ["/pvcSize"]),
    ("budget above quorum margin", {"podDisruptionBudget": {"enabled": True, "maxUnavailable": 2}},
     ["podDisruptionBudget.maxUnavailable (2)", "use at most 1"]),
    ("ingress without host", {"gateway": {"ingress": {"enabled": True, "host": ""}}},
     ["/gateway/ingress/host"]),
    ("separate gateway without replicas", {"gateway": {"embedded": False, "replicas": 0}},
     ["/gateway/replicas"]),
    ("port clash", {"service": {"httpPort": 26501}},
     ["service.commandPort and service.httpPort share port 26501"]),
    ("port clash with embedded gateway", {"gateway": {"service": {"restPort": 9600}}},
     ["gateway.service.restPort and service.httpPort share port 9600"]),
    ("port out of range", {"service": {"commandPort": 70000}}, ["/service/commandPort"]),
]


@pytest.mark.parametrize("values, words", [pytest.param(v, w, id=i) for i, v, w in REFUSED])
def test_invalid_values_are_refused(render, values, words):
    with pytest.raises(helm.HelmError) as refused:
        render(values)
    message = str(refused.value)
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("values", [
    {"clusterSize": 5, "replicationFactor": 5, "podDisruptionBudget": {"enabled": True, "maxUnavailable": 2}},
    {"clusterSize": 1, "replicationFactor": 1, "partitionCount": 1},
    {"partitionCount": 4095},
    {"exporters": {"elasticsearch": ES | {"url": "http://a:9200,http://b:9200"}}},
    {"gateway": {"embedded": False, "service": {"restPort": 9600}}},
    {"snapshotPeriod": "1h 30m"},
], ids=["rf5-budget2", "single-broker", "max-partitions", "two-es-urls", "separate-gateway-ports", "compound-duration"])
def test_valid_edge_values_are_accepted(render, values):
    rendered = render(values)
    assert rendered.one("StatefulSet")


def test_schema_is_checked_on_its_own(chart):
    """The schema alone (what `helm lint` and `helm install` check first) refuses a string."""
    with pytest.raises(helm.HelmValuesError, match="partitionCount"):
        chart.validate_schema({"partitionCount": "many"})
    chart.validate_schema({"partitionCount": 12})


def test_lint_reports_invalid_values():
    report = helm.lint(str(CHART), {"partitionCount": "many"}, strict=True)
    assert any("partitionCount" in e for e in report["errors"]), report
