"""Backups in the chart: the backup volume as the filesystem store, an S3 bucket with
credentials from a Secret, and the restore init container that lays out a backup before
the brokers start (docs/operations.md)."""

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


def test_a_restore_without_a_backup_store_is_refused(render):
    with pytest.raises(Exception, match="restoreBackupId needs a backup store"):
        render({"backup": {"restoreBackupId": "3"}})


S3 = {
    "bucket": "rill-backups",
    "basePath": "prod",
    "endpoint": "http://minio.minio:9000",
    "region": "eu-west-1",
    "existingSecret": "rill-s3",
}


def test_an_s3_bucket_is_every_brokers_store_with_credentials_from_a_secret(render):
    spec = pod_spec(render({"backup": {"s3": S3}}))
    (broker,) = spec["containers"]
    assert env_value(broker, "RILL_BACKUP__STORE") == "s3"
    assert env_value(broker, "RILL_BACKUP__S3__BUCKET") == "rill-backups"
    assert env_value(broker, "RILL_BACKUP__S3__BASE_PATH") == "prod"
    assert env_value(broker, "RILL_BACKUP__S3__ENDPOINT") == "http://minio.minio:9000"
    assert env_value(broker, "RILL_BACKUP__S3__REGION") == "eu-west-1"
    env = container_env(broker)
    # The secret never appears in the manifest: the variables point into the Secret.
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {
        "name": "rill-s3", "key": "AWS_ACCESS_KEY_ID"}
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "rill-s3", "key": "AWS_SECRET_ACCESS_KEY"}
    assert "RILL_BACKUP__S3__SECRET_KEY" not in env
    assert all(v["name"] != "backups" for v in spec["volumes"])


def test_an_s3_bucket_without_a_secret_leaves_the_credentials_to_the_environment(render):
    values = {"backup": {"s3": {"bucket": "b"}},
              "envFrom": [{"secretRef": {"name": "aws"}}]}
    (broker,) = pod_spec(render(values))["containers"]
    env = container_env(broker)
    assert env_value(broker, "RILL_BACKUP__STORE") == "s3"
    assert "AWS_ACCESS_KEY_ID" not in env and "RILL_BACKUP__S3__ENDPOINT" not in env
    assert broker["envFrom"] == [{"secretRef": {"name": "aws"}}]


def test_a_restore_from_s3_reads_the_bucket_as_the_broker_does(render):
    rendered = render({"backup": {"s3": S3, "restoreBackupId": 42}})
    spec = pod_spec(rendered)
    (restore,) = spec["initContainers"]
    (broker,) = spec["containers"]
    restore_env = container_env(restore)
    broker_env = container_env(broker)
    for name in ["RILL_BACKUP__STORE", "RILL_BACKUP__S3__BUCKET", "RILL_BACKUP__S3__BASE_PATH",
                 "RILL_BACKUP__S3__ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]:
        assert restore_env[name] == broker_env[name], name
    assert all(m["name"] != "backups" for m in restore["volumeMounts"])
    for doc in rendered.docs:
        if doc["kind"] == "StatefulSet":
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_a_volume_and_a_bucket_together_are_refused(render):
    with pytest.raises(Exception, match="choose one backup store"):
        render({"backup": {"existingClaim": "v", "s3": {"bucket": "b"}}})
