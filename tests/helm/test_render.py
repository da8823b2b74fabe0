"""The chart renders valid Kubernetes objects whose settings follow the values."""

import hashlib

import kubernetes_validate
import pytest

from conftest import (
    CHART,
    NAMESPACE,
    RELEASE,
    VALUES_FILES,
    container_env,
    env_value,
    known_rill_options,
    load_values,
)

# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion), the first with the
# pod-index label, and the newest kubernetes-validate knows.
KUBE_VERSIONS = ["1.25.0", "1.28.0", kubernetes_validate.latest_version()]
# Prometheus Operator resources have no schema there; test_observability checks them.
CUSTOM_KINDS = {"ServiceMonitor", "PrometheusRule"}

BROKER = f"{RELEASE}-broker"
GATEWAY = f"{RELEASE}-gateway"


def brokers(rendered):
    return rendered.one("StatefulSet", BROKER)


def broker_container(rendered):
    (container,) = brokers(rendered)["spec"]["template"]["spec"]["containers"]
    return container


def expected_hosts(size, release=RELEASE, namespace=NAMESPACE):
    return [f"{release}-broker-{i}.{release}-broker.{namespace}.svc.cluster.local" for i in range(size)]


def setting(rendered, *path):
    value = rendered.merged
    for key in path:
        value = value[key]
    return value


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_manifests_match_the_kubernetes_schemas(render, values_file, kube_version):
    rendered = render(load_values(values_file))
    checked = 0
    for doc in rendered.docs:
        if doc["kind"] in CUSTOM_KINDS:
            continue
        # strict: unknown fields are errors too (a misspelt key would be dropped silently).
        kubernetes_validate.validate(doc, kube_version, strict=True)
        checked += 1
    kinds = {d["kind"] for d in rendered.docs}
    assert {"StatefulSet", "Service", "ConfigMap", "PodDisruptionBudget"} <= kinds
    assert checked >= 5


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_brokers_follow_the_values(render, values_file):
    rendered = render(load_values(values_file))
    size = setting(rendered, "clusterSize")
    sts = brokers(rendered)
    container = broker_container(rendered)

    assert sts["spec"]["replicas"] == size
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert sts["spec"]["serviceName"] == BROKER
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate"}

    assert env_value(container, "RILL_CLUSTER__SIZE") == str(size)
    assert env_value(container, "RILL_CLUSTER__PARTITIONS_COUNT") == str(setting(rendered, "partitionCount"))
    assert env_value(container, "RILL_CLUSTER__REPLICATION_FACTOR") == str(setting(rendered, "replicationFactor"))
    assert env_value(container, "RILL_THREADS__CPU_THREAD_COUNT") == str(setting(rendered, "cpuThreadCount"))
    assert env_value(container, "RILL_THREADS__IO_THREAD_COUNT") == str(setting(rendered, "ioThreadCount"))
    assert env_value(container, "RILL_DATA__SNAPSHOT_PERIOD") == setting(rendered, "snapshotPeriod")

    internal = setting(rendered, "service", "internalPort")
    points = env_value(container, "RILL_CLUSTER__INITIAL_CONTACT_POINTS").split(",")
    assert points == [f"{h}:{internal}" for h in expected_hosts(size)]
    assert env_value(container, "RILL_CLUSTER__ADVERTISED_HOST") == (
        f"$(K8S_POD_NAME).{BROKER}.{NAMESPACE}.svc.cluster.local"
    )
    # The node id comes from the ordinal: the pod-index label, read by the start script.
    env = container_env(container)
    assert env["K8S_POD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['apps.kubernetes.io/pod-index']"
    )
    assert env["K8S_POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "RILL_CLUSTER__NODE_ID" not in env
    assert container["command"] == ["/bin/sh", "/usr/local/rill/bin/startup.sh"]
    names = list(env)
    assert names.index("K8S_POD_NAME") < names.index("RILL_CLUSTER__ADVERTISED_HOST"), (
        "$(K8S_POD_NAME) expands only when defined earlier"
    )


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_every_rill_variable_is_a_known_option(render, values_file):
    rendered = render(load_values(values_file))
    known = known_rill_options() | {"RILL_LOG", "RILL_LOG_FORMAT"}
    for kind in ("StatefulSet", "Deployment"):
        for workload in rendered.all(kind):
            for container in workload["spec"]["template"]["spec"]["containers"]:
                unknown = {n for n in container_env(container) if n.startswith("RILL_")} - known
                assert not unknown, f"{workload['metadata']['name']}: not Rill options: {unknown}"


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_probes_and_ports_use_the_monitoring_port(render, values_file):
    rendered = render(load_values(values_file))
    http_port = setting(rendered, "service", "httpPort")
    container = broker_container(rendered)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["monitoring"] == http_port
    assert ports["command"] == setting(rendered, "service", "commandPort")
    assert ports["internal"] == setting(rendered, "service", "internalPort")
    assert env_value(container, "RILL_MONITORING__PORT") == str(http_port)
    scheme = "HTTPS" if setting(rendered, "tls", "monitoring", "enabled") else "HTTP"
    probe = {"port": "monitoring", "scheme": scheme}
    assert container["startupProbe"]["httpGet"] == {"path": "/startup", **probe}
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", **probe}
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", **probe}


def test_headless_service_publishes_every_broker(render):
    rendered = render()
    svc = rendered.one("Service", BROKER)
    assert svc["spec"]["clusterIP"] == "None"
    # Brokers must resolve each other before they are ready (ready = partitions have leaders).
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {
        "command": 26501, "internal": 26502, "monitoring": 9600,
    }


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_services_and_budgets_select_pods_that_exist(render, values_file):
    rendered = render(load_values(values_file))
    pods = []
    for kind in ("StatefulSet", "Deployment"):
        for workload in rendered.all(kind):
            template = workload["spec"]["template"]
            labels = template["metadata"]["labels"]
            # A workload's own selector must match its pods, or Kubernetes refuses it.
            assert workload["spec"]["selector"]["matchLabels"].items() <= labels.items()
            ports = {p["name"] for c in template["spec"]["containers"] for p in c["ports"]}
            pods.append((labels, ports))
    for svc in rendered.all("Service"):
        selector = svc["spec"]["selector"]
        matching = [ports for labels, ports in pods if selector.items() <= labels.items()]
        assert matching, f"Service {svc['metadata']['name']} selects no pods"
        for port in svc["spec"]["ports"]:
            assert all(port["targetPort"] in ports for ports in matching), (
                f"Service {svc['metadata']['name']} port {port['name']} targets a port the pods lack"
            )
    for pdb in rendered.all("PodDisruptionBudget"):
        selector = pdb["spec"]["selector"]["matchLabels"]
        assert any(selector.items() <= labels.items() for labels, _ in pods)
        assert pdb["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_volumes_follow_the_persistence_values(render, values_file):
    rendered = render(load_values(values_file))
    (claim,) = brokers(rendered)["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data"
    assert claim["spec"]["resources"]["requests"]["storage"] == setting(rendered, "pvcSize")
    assert claim["spec"]["accessModes"] == setting(rendered, "pvcAccessModes")
    storage_class = setting(rendered, "pvcStorageClassName")
    if storage_class:
        assert claim["spec"]["storageClassName"] == storage_class
    else:
        assert "storageClassName" not in claim["spec"]
    mounts = {m["name"]: m["mountPath"] for m in broker_container(rendered)["volumeMounts"]}
    assert mounts["data"] == env_value(broker_container(rendered), "RILL_DATA__DIRECTORY")


def test_local_persistence_uses_an_empty_dir(render):
    rendered = render({"persistenceType": "local"})
    spec = brokers(rendered)["spec"]
    assert "volumeClaimTemplates" not in spec
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}


def test_embedded_gateway_runs_in_the_brokers(render):
    rendered = render()
    assert not rendered.all("Deployment")
    container = broker_container(rendered)
    assert env_value(container, "RILL_GATEWAY__ENABLED") == "true"
    assert env_value(container, "RILL_GATEWAY__REST_PORT") == "8080"
    svc = rendered.one("Service", GATEWAY)
    assert svc["spec"]["selector"]["app.kubernetes.io/component"] == "broker"
    assert [p["name"] for p in svc["spec"]["ports"]] == ["rest", "grpc"]


def test_separate_gateway_reaches_every_broker(render):
    rendered = render(load_values("gateway-elasticsearch"))
    deployment = rendered.one("Deployment", GATEWAY)
    assert deployment["spec"]["replicas"] == 3
    (gateway,) = deployment["spec"]["template"]["spec"]["containers"]
    assert gateway["args"][0] == "gateway"
    assert env_value(gateway, "RILL_GATEWAY__ENABLED") == "true"
    points = env_value(gateway, "RILL_GATEWAY__CONTACT_POINTS").split(",")
    assert points == [f"{h}:26501" for h in expected_hosts(3)]
    assert env_value(gateway, "RILL_GATEWAY__REQUEST_TIMEOUT") == "30s"
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/ready"
    # The brokers no longer host one.
    assert env_value(broker_container(rendered), "RILL_GATEWAY__ENABLED") == "false"
    assert "rest" not in {p["name"] for p in broker_container(rendered)["ports"]}
    svc = rendered.one("Service", GATEWAY)
    assert svc["spec"]["selector"]["app.kubernetes.io/component"] == "gateway"
    assert rendered.one("PodDisruptionBudget", GATEWAY)["spec"]["maxUnavailable"] == 1


def test_ingress_serves_the_rest_port(render):
    rendered = render(load_values("gateway-elasticsearch"))
    ingress = rendered.one("Ingress", GATEWAY)
    assert ingress["spec"]["ingressClassName"] == "nginx"
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "rill.example.com"
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": GATEWAY, "port": {"name": "rest"}}
    assert ingress["spec"]["tls"] == [{"hosts": ["rill.example.com"], "secretName": "rill-example-tls"}]
    assert "rest" in {p["name"] for p in rendered.one("Service", GATEWAY)["spec"]["ports"]}


@pytest.mark.parametrize("embedded", [True, False])
def test_the_gateway_service_exposes_the_grpc_port(render, embedded):
    rendered = render({"gateway": {"embedded": embedded}})
    ports = {p["name"]: p for p in rendered.one("Service", GATEWAY)["spec"]["ports"]}
    assert ports["grpc"]["port"] == 26500
    assert ports["grpc"]["targetPort"] == "grpc"
    kind, name = ("StatefulSet", BROKER) if embedded else ("Deployment", GATEWAY)
    (container,) = rendered.one(kind, name)["spec"]["template"]["spec"]["containers"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]}["grpc"] == 26500
    assert env_value(container, "RILL_GATEWAY__GRPC_PORT") == "26500"
    # Switched off, the port is gone from the Service.
    off = render({"gateway": {"embedded": embedded, "grpc": {"enabled": False}}})
    assert "grpc" not in {p["name"] for p in off.one("Service", GATEWAY)["spec"]["ports"]}


def test_elasticsearch_exporter_takes_credentials_from_the_secret(render):
    rendered = render(load_values("gateway-elasticsearch"))
    container = broker_container(rendered)
    env = container_env(container)
    assert env_value(container, "RILL_EXPORTERS__ELASTICSEARCH__URL") == (
        "https://elasticsearch-master.search.svc:9200"
    )
    assert env_value(container, "RILL_EXPORTERS__ELASTICSEARCH__INDEX_PREFIX") == "rill-record"
    for name, key in [("USERNAME", "user"), ("PASSWORD", "pass")]:
        entry = env[f"RILL_EXPORTERS__ELASTICSEARCH__{name}"]
        assert "value" not in entry
        assert entry["valueFrom"]["secretKeyRef"] == {"name": "elasticsearch-credentials", "key": key}
    # Options pass through with Rill's names; nested sections become nested names.
    assert env_value(container, "RILL_EXPORTERS__ELASTICSEARCH__BULK_SIZE") == "500"
    assert env_value(container, "RILL_EXPORTERS__ELASTICSEARCH__BULK_MEMORY_LIMIT") == "20MB"
    assert env_value(container, "RILL_EXPORTERS__ELASTICSEARCH__RETENTION") == "30d"
    assert env_value(container, "RILL_EXPORTERS__ELASTICSEARCH__FILTER__JOB_BATCH") == "true"
    # The CA certificate is mounted where the option points.
    ca_path = env_value(container, "RILL_EXPORTERS__ELASTICSEARCH__TLS__CA_CERTIFICATE")
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert ca_path == f"{mounts['elasticsearch-ca']}/ca.pem"
    volumes = {v["name"]: v for v in brokers(rendered)["spec"]["template"]["spec"]["volumes"]}
    assert volumes["elasticsearch-ca"]["secret"]["secretName"] == "elasticsearch-ca"


@pytest.mark.parametrize("auth_type, variable, key", [
    ("apiKey", "RILL_EXPORTERS__ELASTICSEARCH__API_KEY", "api-key"),
    ("bearer", "RILL_EXPORTERS__ELASTICSEARCH__BEARER_TOKEN", "token"),
])
def test_other_elasticsearch_credentials(render, auth_type, variable, key):
    values = {"exporters": {"elasticsearch": {
        "enabled": True, "url": "http://es:9200",
        "auth": {"existingSecret": "es", "type": auth_type}}}}
    env = container_env(broker_container(render(values)))
    assert env[variable]["valueFrom"]["secretKeyRef"] == {"name": "es", "key": key}
    assert "RILL_EXPORTERS__ELASTICSEARCH__PASSWORD" not in env


def test_exporter_is_off_by_default(render):
    env = container_env(broker_container(render()))
    assert not [n for n in env if n.startswith("RILL_EXPORTERS__")]


def test_flow_control_options_reach_the_brokers(render):
    container = broker_container(render(load_values("five-brokers")))
    assert env_value(container, "RILL_FLOW_CONTROL__REQUEST__ALGORITHM") == "vegas"
    assert env_value(container, "RILL_FLOW_CONTROL__REQUEST__VEGAS__ALPHA") == "4"
    assert env_value(container, "RILL_FLOW_CONTROL__REQUEST__VEGAS__BETA") == "8"
    assert env_value(container, "RILL_FLOW_CONTROL__REQUEST__VEGAS__INITIAL_LIMIT") == "50"
    # YAML numbers reach templates as floats: no 1e+06 for Rill to choke on.
    assert env_value(container, "RILL_FLOW_CONTROL__REQUEST__GRADIENT2__LONG_WINDOW") == "1000000"
    assert env_value(container, "RILL_FLOW_CONTROL__WRITE__LIMIT") == "20000"
    assert env_value(container, "RILL_FLOW_CONTROL__WRITE__RAMP_UP") == "30s"
    assert env_value(container, "RILL_FLOW_CONTROL__WRITE__THROTTLING__ACCEPTABLE_BACKLOG") == "250000"
    # Options not set keep Rill's defaults: nothing is sent for them.
    assert "RILL_FLOW_CONTROL__REQUEST__AIMD__INITIAL_LIMIT" not in container_env(container)
    # The user's own variables come last, so they can override.
    assert list(container_env(container))[-1] == "RILL_RAFT__ELECTION_TIMEOUT"


def test_scheduling_values_reach_the_pods(render):
    rendered = render(load_values("five-brokers"))
    pod = brokers(rendered)["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "rill", "effect": "NoSchedule"}]
    assert pod["nodeSelector"] == {"workload": "rill"}
    required = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required[0]["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "broker"
    assert broker_container(rendered)["resources"]["requests"] == {"cpu": "2", "memory": "4Gi"}
    # An explicit affinity replaces the preset.
    custom = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    pod = brokers(render({"affinity": custom}))["spec"]["template"]["spec"]
    assert pod["affinity"] == custom


def test_names_follow_the_release(render):
    rendered = render(name="orders", namespace="prod")
    sts = rendered.one("StatefulSet", "orders-rill-broker")
    (container,) = sts["spec"]["template"]["spec"]["containers"]
    points = env_value(container, "RILL_CLUSTER__INITIAL_CONTACT_POINTS").split(",")
    assert points[0] == "orders-rill-broker-0.orders-rill-broker.prod.svc.cluster.local:26502"
    rendered = render({"fullnameOverride": "wf", "clusterDomain": "k8s.internal"})
    (container,) = rendered.one("StatefulSet", "wf-broker")["spec"]["template"]["spec"]["containers"]
    assert env_value(container, "RILL_CLUSTER__INITIAL_CONTACT_POINTS").startswith(
        f"wf-broker-0.wf-broker.{NAMESPACE}.svc.k8s.internal:26502,"
    )


def test_startup_script_change_rolls_the_brokers(render):
    script = (CHART / "files" / "startup.sh").read_bytes()
    annotations = brokers(render())["spec"]["template"]["metadata"]["annotations"]
    assert annotations["checksum/startup-script"] == hashlib.sha256(script).hexdigest()


def test_a_chart_upgrade_alone_restarts_no_broker(render):
    """Pod templates carry no chart version: a new chart with the same settings rolls nothing."""
    for kind in ("StatefulSet", "Deployment"):
        for workload in render(load_values("gateway-elasticsearch")).all(kind):
            labels = workload["spec"]["template"]["metadata"]["labels"]
            assert "helm.sh/chart" not in labels
            assert "app.kubernetes.io/version" not in labels
            assert labels["app.kubernetes.io/part-of"] == "rill"
