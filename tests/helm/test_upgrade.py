"""`helm upgrade` with a new clusterSize, partitionCount or replicationFactor scales the
running cluster through hook Jobs, and refuses what the brokers cannot do.

Helm's `lookup` asks the API server for the StatefulSet already deployed. A small fake
API server on 127.0.0.1 answers it (API discovery for apps/v1, then the StatefulSet an
earlier render produced), so the upgrade renders as it would in `helm upgrade`, offline.
"""

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from conftest import NAMESPACE, RELEASE, container_env, env_value, scale_jobs

BROKER = f"{RELEASE}-broker"


def management(*ordinals):
    return " ".join(f"http://{BROKER}-{i}.{BROKER}.{NAMESPACE}.svc.cluster.local:9600" for i in ordinals)


def broker(rendered):
    return rendered.one("StatefulSet", BROKER)["spec"]["template"]["spec"]["containers"][0]


def test_scale_up_grows_the_statefulset_and_adds_the_brokers_after_starting_the_change(release):
    deployed = release()
    before = deployed.api.statefulset
    up = deployed.upgrade({"clusterSize": 5, "partitionCount": 6})
    sts = up.one("StatefulSet", BROKER)
    assert sts["spec"]["replicas"] == 5
    assert sts["metadata"]["annotations"] == {
        "rill/cluster-size": "5", "rill/partition-count": "6", "rill/replication-factor": "3"}
    # The brokers keep the settings the cluster was created with: none restarts, and
    # brokers 3 and 4 start exactly like the others but for their node id.
    assert sts["spec"]["template"] == before["spec"]["template"]
    assert env_value(broker(up), "RILL_CLUSTER__SIZE") == "3"
    assert env_value(broker(up), "RILL_CLUSTER__PARTITIONS_COUNT") == "3"
    assert len(env_value(broker(up), "RILL_CLUSTER__INITIAL_CONTACT_POINTS").split(",")) == 3
    jobs = scale_jobs(up)
    assert set(jobs) == {"pre-upgrade", "post-upgrade"}
    for hook, mode in [("pre-upgrade", "start"), ("post-upgrade", "wait")]:
        found_mode, env, job = jobs[hook]
        assert found_mode == mode
        assert env["RILL_SCALE_BROKERS"] == "5"
        assert env["RILL_SCALE_PARTITIONS"] == "6"
        assert env["RILL_SCALE_REPLICATION_FACTOR"] == "3"
        assert env["RILL_SCALE_MANAGEMENT"] == management(0, 1, 2)
        assert job["spec"]["backoffLimit"] == 0
        assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "rill:0.1.0"
        assert "serviceAccountName" not in job["spec"]["template"]["spec"]
    assert jobs["pre-upgrade"][2]["metadata"]["name"] == f"{BROKER}-scale"
    assert jobs["post-upgrade"][2]["metadata"]["name"] == f"{BROKER}-scale-wait"


def test_scale_down_moves_the_replicas_off_before_the_statefulset_shrinks(release):
    deployed = release()
    deployed.deploy(deployed.upgrade({"clusterSize": 5, "partitionCount": 6}))
    down = deployed.upgrade({"clusterSize": 3, "partitionCount": 6})
    assert down.one("StatefulSet", BROKER)["spec"]["replicas"] == 3
    jobs = scale_jobs(down)
    assert set(jobs) == {"pre-upgrade"}
    mode, env, _ = jobs["pre-upgrade"]
    assert mode == "apply"
    assert (env["RILL_SCALE_BROKERS"], env["RILL_SCALE_PARTITIONS"]) == ("3", "6")
    # Only the brokers that stay are asked.
    assert env["RILL_SCALE_MANAGEMENT"] == management(0, 1, 2)
    assert env_value(broker(down), "RILL_CLUSTER__SIZE") == "3"


def test_scale_down_below_the_created_size_keeps_the_created_settings(release):
    deployed = release({"clusterSize": 5, "partitionCount": 5})
    down = deployed.upgrade({"clusterSize": 4, "partitionCount": 5})
    mode, env, _ = scale_jobs(down)["pre-upgrade"]
    assert (mode, env["RILL_SCALE_BROKERS"], env["RILL_SCALE_MANAGEMENT"]) == ("apply", "4", management(0, 1, 2, 3))
    assert env_value(broker(down), "RILL_CLUSTER__SIZE") == "5"
    assert len(env_value(broker(down), "RILL_CLUSTER__INITIAL_CONTACT_POINTS").split(",")) == 5


@pytest.mark.parametrize("values", [
    {"partitionCount": 6},
    {"clusterSize": 3, "replicationFactor": 2},
])
def test_a_change_without_new_brokers_runs_before_the_upgrade_and_waits(release, values):
    up = release().upgrade(values)
    jobs = scale_jobs(up)
    assert set(jobs) == {"pre-upgrade"}
    mode, env, _ = jobs["pre-upgrade"]
    assert mode == "apply"
    assert env["RILL_SCALE_PARTITIONS"] == str(values.get("partitionCount", 3))
    assert env["RILL_SCALE_REPLICATION_FACTOR"] == str(values.get("replicationFactor", 3))
    assert env_value(broker(up), "RILL_CLUSTER__REPLICATION_FACTOR") == "3"


def test_a_release_of_the_chart_before_scaling_is_read_from_its_settings(release):
    deployed = release({"clusterSize": 4})
    del deployed.api.statefulset["metadata"]["annotations"]
    mode, env, _ = scale_jobs(deployed.upgrade({"clusterSize": 6}))["pre-upgrade"]
    assert (mode, env["RILL_SCALE_MANAGEMENT"]) == ("start", management(0, 1, 2, 3))


@pytest.mark.parametrize("values, message", [
    ({"partitionCount": 2},
     "partitionCount is 3 in the running cluster and would become 2: partitions can only be added"),
    ({"clusterSize": 2}, "replicationFactor (3) is greater than clusterSize (2)"),
])
def test_upgrade_refuses_what_the_brokers_cannot_do(release, values, message):
    deployed = release()
    with pytest.raises(helm.HelmRenderError) as refused:
        deployed.upgrade(values)
    assert message in str(refused.value)


def test_partitions_are_counted_from_the_last_upgrade_not_the_creation(release):
    deployed = release()
    deployed.deploy(deployed.upgrade({"partitionCount": 6}))
    with pytest.raises(helm.HelmRenderError) as refused:
        deployed.upgrade({"partitionCount": 4})
    assert "partitionCount is 6 in the running cluster and would become 4" in str(refused.value)
    assert f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/{BROKER}" in deployed.api.requests


def test_a_single_broker_cluster_cannot_be_scaled(release):
    deployed = release({"clusterSize": 1, "replicationFactor": 1})
    with pytest.raises(helm.HelmRenderError) as refused:
        deployed.upgrade({"clusterSize": 3, "replicationFactor": 1})
    assert "created with clusterSize 1" in str(refused.value)


def test_upgrade_with_the_same_shape_runs_no_job(release):
    up = release().upgrade({"cpuThreadCount": 4, "image": {"tag": "0.2.0"}})
    assert "image: rill:0.2.0" in yaml.safe_dump(up.one("StatefulSet", BROKER))
    assert up.all("Job") == []


def test_separate_gateways_follow_the_brokers(release):
    values = {"gateway": {"embedded": False, "replicas": 2}}
    up = release(values).upgrade({**values, "clusterSize": 5})
    gateway = up.one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    points = container_env(gateway)["RILL_GATEWAY__CONTACT_POINTS"]["value"].split(",")
    assert points == [f"{BROKER}-{i}.{BROKER}.{NAMESPACE}.svc.cluster.local:26501" for i in range(5)]
    assert env_value(gateway, "RILL_CLUSTER__SIZE") == "3"


def test_allow_topology_change_treats_the_upgrade_as_a_new_cluster(release):
    up = release().upgrade({"partitionCount": 6, "allowTopologyChange": True})
    assert env_value(broker(up), "RILL_CLUSTER__PARTITIONS_COUNT") == "6"
    assert up.all("Job") == []


def test_first_install_runs_no_scale_job(render):
    # No cluster: lookup finds nothing, as in `helm template` and a first install.
    rendered = render({"clusterSize": 5, "partitionCount": 12})
    assert rendered.one("StatefulSet")["spec"]["replicas"] == 5
    assert env_value(broker(rendered), "RILL_CLUSTER__SIZE") == "5"
    assert rendered.all("Job") == []


@pytest.mark.parametrize("kube_version", ["1.25.0", kubernetes_validate.latest_version()])
def test_scale_jobs_match_the_kubernetes_schemas(release, kube_version):
    up = release().upgrade({"clusterSize": 5, "partitionCount": 6})
    for doc in up.all("Job") + up.all("StatefulSet"):
        kubernetes_validate.validate(doc, kube_version, strict=True)
    assert len(up.all("Job")) == 2


def test_initial_cluster_pins_the_brokers_settings_where_lookup_sees_nothing(render):
    # helm template, Argo CD: no cluster to read; the values say what it was created with.
    rendered = render({"clusterSize": 5, "partitionCount": 6,
                       "initialCluster": {"clusterSize": 3, "partitionCount": 3, "replicationFactor": 3}})
    assert rendered.one("StatefulSet")["spec"]["replicas"] == 5
    assert env_value(broker(rendered), "RILL_CLUSTER__SIZE") == "3"
    assert env_value(broker(rendered), "RILL_CLUSTER__PARTITIONS_COUNT") == "3"
    assert len(env_value(broker(rendered), "RILL_CLUSTER__INITIAL_CONTACT_POINTS").split(",")) == 3


def test_initial_cluster_must_match_the_running_brokers(release):
    deployed = release()
    pinned = {"clusterSize": 4, "partitionCount": 3, "replicationFactor": 3}
    with pytest.raises(helm.HelmRenderError) as refused:
        deployed.upgrade({"clusterSize": 5, "initialCluster": pinned})
    assert "initialCluster.clusterSize is 4, but the running brokers were created with clusterSize=3" \
        in str(refused.value)
    up = deployed.upgrade({"clusterSize": 5, "initialCluster": {**pinned, "clusterSize": 3}})
    assert scale_jobs(up)["pre-upgrade"][0] == "start"


def test_notes_say_how_to_follow_the_change(release):
    deployed = release()
    manifests = deployed.config.render(deployed.chart, {"clusterSize": 5}, name=RELEASE, namespace=NAMESPACE,
                                       is_upgrade=True)
    notes = manifests["rill/templates/NOTES.txt"]
    assert "Scaled from 3 broker(s), 3 partition(s), replication factor 3." in notes
    assert "rill cluster status --management http://localhost:9600" in notes
    same = deployed.config.render(deployed.chart, {}, name=RELEASE, namespace=NAMESPACE, is_upgrade=True)
    assert "Scaled from" not in same["rill/templates/NOTES.txt"]
