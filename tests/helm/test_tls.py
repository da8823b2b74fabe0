"""TLS from Secrets (cert-manager's tls.crt / tls.key / ca.crt): the pods mount them as
directories (so renewals reach them), Rill's settings point at the files, probes and
scrapes switch to HTTPS, the scale Jobs trust the monitoring CA, and a Secret missing
from the values is refused at render time."""

import pytest

from conftest import NAMESPACE, RELEASE, container_env, load_values, scale_jobs

BROKER = f"{RELEASE}-broker"
GATEWAY = f"{RELEASE}-gateway"


def pod_spec(rendered, kind, name):
    return rendered.one(kind, name)["spec"]["template"]["spec"]


def env_of(spec):
    (container,) = spec["containers"]
    return {name: entry.get("value") for name, entry in container_env(container).items()}


def secret_mounts(spec):
    """{mount path: Secret name} of the Secrets the pod mounts."""
    secrets = {v["name"]: v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
    (container,) = spec["containers"]
    mounts = {}
    for mount in container.get("volumeMounts", []):
        if mount["name"] in secrets:
            # A subPath mount would never see a renewed certificate.
            assert "subPath" not in mount, mount
            assert mount.get("readOnly") is True, mount
            mounts[mount["mountPath"]] = secrets[mount["name"]]
    return mounts


def expect_tls(env, section, with_ca=False):
    prefix = f"RILL_{section.upper()}__TLS"
    assert env[f"{prefix}__ENABLED"] == "true"
    assert env[f"{prefix}__CERTIFICATE"] == f"/usr/local/rill/tls/{section}/tls.crt"
    assert env[f"{prefix}__PRIVATE_KEY"] == f"/usr/local/rill/tls/{section}/tls.key"
    if with_ca:
        assert env[f"{prefix}__CA"] == f"/usr/local/rill/tls/{section}/ca.crt"


def test_brokers_and_gateways_read_their_certificates_from_the_secrets(render):
    rendered = render(load_values("tls"))
    brokers = pod_spec(rendered, "StatefulSet", BROKER)
    env = env_of(brokers)
    expect_tls(env, "cluster", with_ca=True)
    expect_tls(env, "monitoring")
    # The gateways run apart: the brokers serve no client API.
    assert "RILL_GATEWAY__TLS__ENABLED" not in env
    assert secret_mounts(brokers) == {
        "/usr/local/rill/tls/cluster": "rill-cluster-tls",
        "/usr/local/rill/tls/monitoring": "rill-monitoring-tls",
    }

    gateways = pod_spec(rendered, "Deployment", GATEWAY)
    env = env_of(gateways)
    expect_tls(env, "gateway")
    expect_tls(env, "cluster", with_ca=True)
    expect_tls(env, "monitoring")
    assert secret_mounts(gateways) == {
        "/usr/local/rill/tls/gateway": "rill-gateway-tls",
        "/usr/local/rill/tls/cluster": "rill-cluster-tls",
        "/usr/local/rill/tls/monitoring": "rill-monitoring-tls",
    }


def test_embedded_gateways_serve_the_gateway_certificate(render):
    values = load_values("tls")
    values["gateway"] = {"embedded": True}
    brokers = pod_spec(render(values), "StatefulSet", BROKER)
    expect_tls(env_of(brokers), "gateway")
    assert secret_mounts(brokers)["/usr/local/rill/tls/gateway"] == "rill-gateway-tls"


def test_probes_and_scrapes_use_https_on_a_tls_monitoring_port(render):
    rendered = render(load_values("tls"))
    for kind, name in [("StatefulSet", BROKER), ("Deployment", GATEWAY)]:
        (container,) = pod_spec(rendered, kind, name)["containers"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"]["scheme"] == "HTTPS", (name, probe)
    (endpoint,) = rendered.one("ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"]["ca"]["secret"] == {"name": "rill-monitoring-tls", "key": "ca.crt"}

    plain = render({})
    (container,) = pod_spec(plain, "StatefulSet", BROKER)["containers"]
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTP"
    env = env_of(pod_spec(plain, "StatefulSet", BROKER))
    assert not [name for name in env if "__TLS__" in name], "TLS is off by default"
    assert secret_mounts(pod_spec(plain, "StatefulSet", BROKER)) == {}


def test_scale_jobs_reach_a_tls_management_api_with_its_ca(release):
    values = load_values("tls")
    deployed = release(values)
    upgraded = deployed.upgrade({**values, "clusterSize": 4})
    jobs = scale_jobs(upgraded)
    assert jobs, "growing the cluster runs scale Jobs"
    for _, env, job in jobs.values():
        spec = job["spec"]["template"]["spec"]
        addresses = env["RILL_SCALE_MANAGEMENT"].split()
        assert addresses and all(a.startswith("https://") for a in addresses), addresses
        assert env["RILL_CA_CERTIFICATE"] == "/usr/local/rill/tls/monitoring/ca.crt"
        assert secret_mounts(spec) == {"/usr/local/rill/tls/monitoring": "rill-monitoring-tls"}


@pytest.mark.parametrize("section", ["gateway", "cluster", "monitoring"])
def test_tls_on_without_a_secret_is_refused(render, section):
    with pytest.raises(Exception, match=f"tls.{section}.secretName is empty"):
        render({"tls": {section: {"enabled": True}}})


def test_notes_show_https_commands_with_the_ca(release):
    values = load_values("tls")
    deployed = release(values)
    manifests = deployed.config.render(deployed.chart, {**values, "clusterSize": 4}, name=RELEASE,
                                       namespace=NAMESPACE, is_upgrade=True)
    notes = manifests["rill/templates/NOTES.txt"]
    assert (f'curl -u "admin:$RILL_PASSWORD" --cacert ca.crt --connect-to {GATEWAY}:8080:localhost:8080 '
            f"https://{GATEWAY}:8080/v2/topology") in notes, notes
    assert "RILL_USERNAME='admin' rill cluster status --management https://localhost:9600 --ca-certificate ca.crt" \
        in notes, notes
