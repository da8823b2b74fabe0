"""Backups in the chart: the backup volume as the filesystem store, and the restore init
container that lays out a backup before the brokers start (docs/operations.md)."""

import kubernetes_validate
import pytest

from conftest import RELEASE, container_env, env_value

BROKER = f"{RELEASE}-broker"


def pod_spec(rendered):
    return rendered.one("StatefulSet", BROKER)["spec"]["template"]["spec"]


def test_without_a_backup_volume_there_is_no_store_and_no_restore(render):
    spec = pod_spec(render({}))
    (broker,) = spec["containers"]
    assert "RILL_BACKUP__STORE" not in container_env(broker)
    assert "initContainers" not in spec
    assert all(v["name"] != "backups" for v in spec["volumes"])


def test_a_backup_volume_is_every_brokers_filesystem_store(render):
    rendered = render({"backup": {"existingClaim": "rill-backups"}})
    spec = pod_spec(rendered)
    (broker,) = spec["containers"]
    assert env_value(broker, "RILL_BACKUP__STORE") == "filesystem"
    assert env_value(broker, "RILL_BACKUP__FILESYSTEM__BASE_PATH") == "/usr/local/rill/backups"
    mounts = {m["name"]: m["mountPath"] for m in broker["volumeMounts"]}
    assert mounts["backups"] == "/usr/local/rill/backups"
    (volume,) = [v for v in spec["volumes"] if v["name"] == "backups"]
    assert volume["persistentVolumeClaim"]["claimName"] == "rill-backups"
    assert "initContainers" not in spec


def test_a_restore_runs_before_the_broker_as_its_node_with_its_settings(render):
    values = {"backup": {"existingClaim": "rill-backups", "restoreBackupId": 1733500000}}
    rendered = render(values)
    spec = pod_spec(rendered)
    (restore,) = spec["initContainers"]
    (broker,) = spec["containers"]
    assert restore["command"] == [
        "/bin/sh", "/usr/local/rill/bin/startup.sh", "restore", "--backup-id", "1733500000",
    ]
    restore_env = container_env(restore)
    broker_env = container_env(broker)
    for name in [
        "K8S_POD_INDEX", "RILL_CLUSTER__SIZE", "RILL_CLUSTER__PARTITIONS_COUNT",
        "RILL_CLUSTER__REPLICATION_FACTOR", "RILL_DATA__DIRECTORY", "RILL_BACKUP__STORE",
        "RILL_BACKUP__FILESYSTEM__BASE_PATH",
    ]:
        assert restore_env[name] == broker_env[name], name
    mounts = {m["name"]: m["mountPath"] for m in restore["volumeMounts"]}
    assert mounts["data"] == "/usr/local/rill/data"
    assert mounts["backups"] == "/usr/local/rill/backups"
    for doc in rendered.docs:
        if doc["kind"] == "StatefulSet":
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_a_restore_without_a_backup_volume_is_refused(render):
    with pytest.raises(Exception, match="restoreBackupId needs backup.existingClaim"):
        render({"backup": {"restoreBackupId": "3"}})
