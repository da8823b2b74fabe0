"""NetworkPolicies keep the internal, command and monitoring ports inside the release,
leave the client APIs open (or to the peers given), and let Prometheus in only where
the values say so."""

import pytest

from conftest import RELEASE

BROKER = f"{RELEASE}-broker"
GATEWAY = f"{RELEASE}-gateway"
MEMBERS = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "rill",
                                            "app.kubernetes.io/instance": RELEASE}}}
PROMETHEUS = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}


def rules_by_port(policy):
    """{port: [from peers]} of a policy's ingress rules; None for 'from anyone'."""
    found = {}
    for rule in policy["spec"]["ingress"]:
        for port in rule["ports"]:
            assert port["protocol"] == "TCP"
            found[port["port"]] = rule.get("from")
    return found


def test_by_default_only_members_reach_raft_the_command_api_and_monitoring(render):
    rendered = render({})
    policy = rendered.one("NetworkPolicy", BROKER)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "broker"
    ports = rules_by_port(policy)
    assert ports == {26501: [MEMBERS], 26502: [MEMBERS], 9600: [MEMBERS], 8080: None, 26500: None}
    # The members' selector matches the labels the chart puts on its own pods.
    pod_labels = rendered.one("StatefulSet", BROKER)["spec"]["template"]["metadata"]["labels"]
    assert MEMBERS["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert rendered.maybe("NetworkPolicy", GATEWAY) is None


def test_a_separate_gateway_gets_its_own_policy(render):
    rendered = render({"gateway": {"embedded": False, "grpc": {"enabled": False}}})
    assert set(rules_by_port(rendered.one("NetworkPolicy", BROKER))) == {26501, 26502, 9600}
    gateway = rendered.one("NetworkPolicy", GATEWAY)
    assert gateway["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "gateway"
    assert rules_by_port(gateway) == {9600: [MEMBERS], 8080: None}
    pod_labels = rendered.one("Deployment", GATEWAY)["spec"]["template"]["metadata"]["labels"]
    assert gateway["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()


def test_prometheus_and_clients_are_let_in_as_the_values_say(render):
    clients = [{"ipBlock": {"cidr": "10.0.0.0/8"}}]
    rendered = render({"prometheusServiceMonitor": {"enabled": True},
                       "networkPolicy": {"monitoringFrom": [PROMETHEUS], "clientsFrom": clients}})
    ports = rules_by_port(rendered.one("NetworkPolicy", BROKER))
    assert ports[9600] == [MEMBERS, PROMETHEUS]
    assert ports[26501] == [MEMBERS]
    assert ports[8080] == clients and ports[26500] == clients


def test_a_service_monitor_without_a_way_in_fails_the_render(render):
    with pytest.raises(Exception, match="networkPolicy.monitoringFrom"):
        render({"prometheusServiceMonitor": {"enabled": True}})
    rendered = render({"prometheusServiceMonitor": {"enabled": True}, "networkPolicy": {"enabled": False}})
    assert rendered.all("NetworkPolicy") == []
