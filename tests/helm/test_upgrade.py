"""On upgrade the chart refuses to change the shape of a running cluster.

Helm's `lookup` asks the API server for the StatefulSet already deployed. A small fake
API server on 127.0.0.1 answers it (API discovery for apps/v1, then the StatefulSet a
first render produced), so the check runs as it would in `helm upgrade`, offline.
"""

import http.server
import json
import threading

import helm_python as helm
import pytest

from conftest import CHART, NAMESPACE, RELEASE

APPS_V1 = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
    "resources": [{"name": "statefulsets", "singularName": "statefulset", "namespaced": True,
                   "kind": "StatefulSet", "verbs": ["get", "list"]}],
}
NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}


class FakeApiServer:
    """Serves apps/v1 discovery and, when set, one StatefulSet; 404 for the rest."""

    def __init__(self):
        self.statefulset = None
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                server.requests.append(path)
                wanted = f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/{RELEASE}-broker"
                if path == "/apis/apps/v1":
                    self.answer(200, APPS_V1)
                elif path == wanted and server.statefulset is not None:
                    self.answer(200, server.statefulset)
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

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cluster(render):
    """(upgrade(values) -> manifests, api) with a release deployed from the defaults."""
    api = FakeApiServer()
    deployed = render({}).one("StatefulSet", f"{RELEASE}-broker")
    api.statefulset = deployed
    with helm.Config(kube_apiserver=api.url, kube_token="test", namespace=NAMESPACE) as config, \
            helm.Chart.load(str(CHART)) as chart:
        def upgrade(values):
            return config.render(chart, values, name=RELEASE, namespace=NAMESPACE, is_upgrade=True)
        yield upgrade, api
    api.close()


@pytest.mark.parametrize("values, message", [
    ({"clusterSize": 5}, "clusterSize is 3 in the running cluster and would become 5"),
    ({"partitionCount": 6}, "partitionCount is 3 in the running cluster and would become 6"),
    ({"clusterSize": 5, "replicationFactor": 5, "podDisruptionBudget": {"maxUnavailable": 1}},
     "in the running cluster and would become 5"),
])
def test_upgrade_refuses_a_new_cluster_shape(cluster, values, message):
    upgrade, api = cluster
    with pytest.raises(helm.HelmRenderError) as refused:
        upgrade(values)
    assert message in str(refused.value)
    assert "allowTopologyChange" in str(refused.value)
    assert f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/{RELEASE}-broker" in api.requests


def test_upgrade_with_the_same_shape_goes_through(cluster):
    upgrade, _ = cluster
    manifests = upgrade({"cpuThreadCount": 4, "image": {"tag": "0.2.0"}})
    assert "image: rill:0.2.0" in manifests["rill/templates/broker-statefulset.yaml"]


def test_allow_topology_change_lifts_the_check(cluster):
    upgrade, _ = cluster
    manifests = upgrade({"partitionCount": 6, "allowTopologyChange": True})
    assert 'value: "6"' in manifests["rill/templates/broker-statefulset.yaml"]


def test_first_install_has_nothing_to_compare(render):
    # No cluster: lookup finds nothing, as in `helm template` and a first install.
    assert render({"clusterSize": 5, "partitionCount": 12}).one("StatefulSet")["spec"]["replicas"] == 5
