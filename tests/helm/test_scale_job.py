"""The scale Jobs' script, as the chart renders it, run with /bin/sh and the real `rill` CLI.

Against real `rill broker` processes on loopback, with basic authentication on as the
chart's default sets it (the admin user, its password from the release's Secret, which the
Jobs read through their secretKeyRef): an upgrade 3 -> 4 brokers (the
pre-upgrade Job starts the change, broker 3 starts as the StatefulSet would start it, the
post-upgrade Job waits for it, and a gateway apart given the new brokers' addresses, as
the chart gives them, reaches broker 3), then 4 -> 3 (the pre-upgrade Job moves broker 3's
replicas off and waits), then replication factor 3 -> 2. Against a small fake management
endpoint: what the script does when the change does not end, the brokers refuse it,
another change is running, or no broker answers. The Jobs' settings come from a rendered
upgrade (conftest's fake API server); only the management addresses point here.
"""

import base64
import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import CHART, ROOT, SecretKeyRef, container_env, rill_binary, scale_jobs

pytestmark = pytest.mark.skipif(rill_binary() is None, reason="no rill binary: set RILL_BIN")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def path_with_rill(tmp_path):
    """A PATH on which `rill` is the binary under test, as in the image."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(rill_binary(), bin_dir / "rill")
    return f"{bin_dir}:/usr/bin:/bin"


# The Jobs' own bound in these tests (the chart's default is ten minutes): a Job that
# cannot finish fails with its own message well before the test's limit below.
JOB_TIMEOUT = 60


def run_job(job, path, management, secrets=None, **extra):
    """Runs a rendered Job's command under /bin/sh with its environment, the variables it
    reads from Secrets taken from `secrets` ({(name, key): value}, the cluster's). Fails,
    with what the Job printed, if it outlives its own RILL_SCALE_TIMEOUT by more than 20 s."""
    mode, env, rendered = job
    command = rendered["spec"]["template"]["spec"]["containers"][0]["command"]
    resolved = {}
    for name, value in env.items():
        if isinstance(value, SecretKeyRef):
            found = (secrets or {}).get((value.name, value.key))
            assert found is not None, (f"the {mode} Job reads {name} from Secret {value.name}, key {value.key}, "
                                       "which is not in the cluster: its pod would not start")
            value = found
        resolved[name] = value
    environment = {**resolved, "PATH": path, "RILL_SCALE_MANAGEMENT": management,
                   "RILL_SCALE_INTERVAL": "1", "RILL_SCALE_TIMEOUT": str(JOB_TIMEOUT), **extra}
    limit = int(environment["RILL_SCALE_TIMEOUT"]) + 20
    try:
        return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the {mode} Job ran past {limit}s:\n{text_of(expired.stdout)}\n{text_of(expired.stderr)}",
                    pytrace=False)


def text_of(output):
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output


# --- Against real brokers ----------------------------------------------------------------

class Broker:
    """A `rill broker` (or, with role="gateway", a gateway apart) on loopback."""

    def __init__(self, directory, node, size, contact_points, internal_port, command_port=None, role="broker",
                 auth=None):
        self.monitoring = f"http://127.0.0.1:{free_port()}"
        self.rest = f"http://127.0.0.1:{free_port()}"
        self.command = f"127.0.0.1:{command_port or free_port()}"
        self.log = directory / f"{role}-{node}.log"
        options = [
            "monitoring.host=127.0.0.1", f"monitoring.port={self.monitoring.rsplit(':', 1)[1]}",
        ]
        if role == "broker":
            options += [
                f"cluster.node-id={node}", f"cluster.size={size}", "cluster.partitions-count=3",
                "cluster.replication-factor=3", "cluster.host=127.0.0.1",
                f"cluster.internal-port={internal_port}", f"cluster.command-port={self.command.rsplit(':', 1)[1]}",
                f"cluster.initial-contact-points={contact_points}",
                "raft.heartbeat-interval=100ms", "raft.election-timeout=1s", "gateway.enabled=false",
            ]
        else:
            options += [
                f"gateway.contact-points={contact_points}", "gateway.host=127.0.0.1",
                f"gateway.rest-port={self.rest.rsplit(':', 1)[1]}", f"gateway.grpc-port={free_port()}",
            ]
        arguments = [str(rill_binary()), role, "--data-dir", str(directory / f"data-{role}-{node}")]
        for option in options:
            arguments += ["--set", option]
        # `auth`: the pod's security settings, {RILL_SECURITY__…: value}.
        self.auth = auth or {}
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(arguments, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                            env={**os.environ, "RILL_LOG": "info,openraft=warn", **self.auth})

    def get(self, url):
        """GET url with the admin user's credentials, when this process has any."""
        request = urllib.request.Request(url)
        username = self.auth.get("RILL_SECURITY__INITIALIZATION__USERS__0__USERNAME")
        if username is not None:
            password = self.auth["RILL_SECURITY__INITIALIZATION__USERS__0__PASSWORD"]
            token = base64.b64encode(f"{username}:{password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.load(answer)

    def ready(self):
        try:
            with urllib.request.urlopen(f"{self.monitoring}/ready", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_ready(brokers, timeout=90):
    deadline = time.monotonic() + timeout
    while not all(b.ready() for b in brokers):
        for b in brokers:
            assert b.process.poll() is None, b.log.read_text()
        assert time.monotonic() < deadline, "brokers not ready:\n" + brokers[0].log.read_text()[-4000:]
        time.sleep(0.5)


def configuration(broker):
    return broker.get(f"{broker.monitoring}/actuator/cluster")


def converged(broker, done, timeout=15):
    """The configuration `broker` reports once `done(configuration)` holds. A Job reads
    the first broker that answers; the others learn the result by gossip, a moment later."""
    deadline = time.monotonic() + timeout
    while True:
        seen = configuration(broker)
        if done(seen):
            return seen
        assert time.monotonic() < deadline, f"{broker.monitoring} still reports {seen}"
        time.sleep(0.2)


# The admin password of the release under test: in its Secret before the install (as an
# earlier install of the release leaves it), so the chart keeps it.
ADMIN_PASSWORD = "scale-job-test-password"


def security_settings(rendered, secrets):
    """The security settings of the release's brokers, the password resolved from the
    cluster's Secret as the kubelet resolves the secretKeyRef."""
    (container,) = rendered.one("StatefulSet", "rill-broker")["spec"]["template"]["spec"]["containers"]
    settings = {}
    for name, entry in container_env(container).items():
        if name.startswith("RILL_SECURITY__"):
            if "value" in entry:
                settings[name] = entry["value"]
            else:
                ref = entry["valueFrom"]["secretKeyRef"]
                settings[name] = secrets[(ref["name"], ref["key"])]
    return settings


def test_the_jobs_scale_real_brokers_up_and_down(release, path_with_rill, tmp_path):
    deployed = release(secrets={"rill-admin": {"password": ADMIN_PASSWORD}})
    auth = security_settings(deployed.upgrade({}), deployed.secrets())
    assert auth == {
        "RILL_SECURITY__AUTHENTICATION__METHOD": "basic",
        "RILL_SECURITY__INITIALIZATION__USERS__0__USERNAME": "admin",
        "RILL_SECURITY__INITIALIZATION__USERS__0__PASSWORD": ADMIN_PASSWORD,
    }
    internal = [free_port() for _ in range(3)]
    contact_points = ",".join(f"127.0.0.1:{p}" for p in internal)
    brokers = [Broker(tmp_path, i, 3, contact_points, internal[i], auth=auth) for i in range(3)]
    # A gateway apart, with every broker of the new clusterSize as contact points (the
    # chart's Deployment after the upgrade), broker 3's not there yet.
    command_3 = free_port()
    gateway_points = ",".join([b.command for b in brokers] + [f"127.0.0.1:{command_3}"])
    gateway = Broker(tmp_path, 0, 0, gateway_points, 0, role="gateway", auth=auth)
    try:
        wait_ready(brokers)
        # The management API is locked: without the credentials nothing is read or changed.
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{brokers[0].monitoring}/actuator/cluster", timeout=5)
        assert refused.value.code == 401
        # The first address is a broker that is not there: the script goes on to the next.
        management = f"http://127.0.0.1:{free_port()} " + " ".join(b.monitoring for b in brokers)
        up = deployed.upgrade({"clusterSize": 4})
        jobs = scale_jobs(up)
        for _, env, _ in jobs.values():
            assert env["RILL_USERNAME"] == "admin"
            assert env["RILL_PASSWORD"] == SecretKeyRef("rill-admin", "password")

        # A wrong password gets the brokers' 401, and the Job fails on it.
        wrong = run_job(jobs["pre-upgrade"], path_with_rill, " ".join(b.monitoring for b in brokers),
                        {("rill-admin", "password"): "not-the-password"}, RILL_SCALE_TIMEOUT="2")
        assert wrong.returncode == 1
        assert "401" in wrong.stderr, wrong.stderr
        assert "pendingChange" not in configuration(brokers[0])

        started = run_job(jobs["pre-upgrade"], path_with_rill, management, deployed.secrets())
        assert started.returncode == 0, started.stderr
        assert "started:" in started.stderr and "BROKER_ADD broker 3" in started.stderr
        assert "pendingChange" in configuration(brokers[0])

        # The upgrade grows the StatefulSet: pod 3 starts with the settings of the others.
        deployed.deploy(up)
        brokers.append(Broker(tmp_path, 3, 3, contact_points, free_port(), command_port=command_3, auth=auth))
        waited = run_job(jobs["post-upgrade"], path_with_rill, management, deployed.secrets())
        assert waited.returncode == 0, waited.stderr + brokers[3].log.read_text()[-4000:]
        assert "the cluster has 4 broker(s), 3 partition(s), replication factor 3" in waited.stderr
        after = converged(brokers[1], lambda c: "pendingChange" not in c and len(c["brokers"]) == 4)
        by_id = {b["id"]: b for b in after["brokers"]}
        assert sorted(by_id) == [0, 1, 2, 3]
        assert by_id[3]["partitions"], after
        wait_ready(brokers)
        # The gateway reaches broker 3 and the partitions it took.
        deadline = time.monotonic() + 30
        while True:
            seen = {b["nodeId"]: b["partitions"] for b in gateway.get(f"{gateway.rest}/v2/topology")["brokers"]}
            if seen.get(3):
                break
            assert time.monotonic() < deadline, f"the gateway does not see broker 3: {seen}"
            time.sleep(0.5)

        down = deployed.upgrade({"clusterSize": 3})
        shrink = scale_jobs(down)
        assert set(shrink) == {"pre-upgrade"}
        applied = run_job(shrink["pre-upgrade"], path_with_rill, management, deployed.secrets())
        assert applied.returncode == 0, applied.stderr
        assert "BROKER_REMOVE broker 3" in applied.stderr
        assert "the cluster has 3 broker(s), 3 partition(s), replication factor 3" in applied.stderr
        final = configuration(brokers[0])
        assert sorted(b["id"] for b in final["brokers"]) == [0, 1, 2]
        assert "pendingChange" not in final

        # Asked again, there is nothing to do.
        again = run_job(shrink["pre-upgrade"], path_with_rill, management, deployed.secrets())
        assert again.returncode == 0, again.stderr
        assert "nothing to change" in again.stderr

        # Fewer replicas of each partition, with the same brokers.
        deployed.deploy(down)
        fewer = scale_jobs(deployed.upgrade({"clusterSize": 3, "replicationFactor": 2}))
        assert set(fewer) == {"pre-upgrade"}
        lowered = run_job(fewer["pre-upgrade"], path_with_rill, management, deployed.secrets())
        assert lowered.returncode == 0, lowered.stderr
        assert "the cluster has 3 broker(s), 3 partition(s), replication factor 2" in lowered.stderr
        # Two replicas of each of the 3 partitions, as broker 2 sees it too.
        converged(brokers[2], lambda c: "pendingChange" not in c
                  and sum(len(b["partitions"]) for b in c["brokers"]) == 6)
    finally:
        for b in brokers + [gateway]:
            b.stop()


# --- Against a fake management endpoint -------------------------------------------------

def topology(brokers, partitions, pending=False):
    body = {
        "version": 3,
        "brokers": [
            {"id": b, "state": "ACTIVE", "version": 1, "lastUpdatedAt": "2026-12-03T00:00:00Z",
             "partitions": [{"id": p, "state": "ACTIVE", "priority": 1}
                            for p in range(1, partitions + 1) if (p - 1 - b) % brokers < 3]}
            for b in range(brokers)
        ],
    }
    if pending:
        body["pendingChange"] = {"id": 2, "status": "IN_PROGRESS", "completed": [],
                                 "pending": [{"operation": "PARTITION_JOIN", "brokerId": 3, "partitionId": 1}]}
    return body


class FakeManagement:
    """GET /actuator/cluster answers `self.topology`; PATCH answers `self.patch_answer`."""

    def __init__(self):
        self.topology = topology(3, 3)
        self.patch_answer = (202, {"changeId": 4, "plannedChanges": [{"operation": "BROKER_ADD", "brokerId": 3}]})
        self.patches = []
        self.authorizations = set()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.authorizations.add(self.headers.get("Authorization"))
                self.answer(200, server.topology)

            def do_PATCH(self):
                server.authorizations.add(self.headers.get("Authorization"))
                length = int(self.headers.get("Content-Length", 0))
                server.patches.append((self.path, json.loads(self.rfile.read(length))))
                self.answer(*server.patch_answer)

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
def fake():
    server = FakeManagement()
    yield server
    server.close()


def resolved_jobs(deployed, rendered):
    """The scale Jobs of an upgrade, with the variables they read from Secrets resolved
    from the cluster's (the admin password the install generated)."""
    secrets = deployed.secrets()
    jobs = {}
    for hook, (mode, env, job) in scale_jobs(rendered).items():
        env = {name: secrets[(v.name, v.key)] if isinstance(v, SecretKeyRef) else v for name, v in env.items()}
        jobs[hook] = (mode, env, job)
    return jobs


@pytest.fixture
def up_jobs(release):
    deployed = release()
    return resolved_jobs(deployed, deployed.upgrade({"clusterSize": 5, "partitionCount": 6}))


def test_waiting_ends_with_a_clear_failure_at_the_timeout(fake, up_jobs, path_with_rill):
    fake.topology = topology(5, 6, pending=True)
    done = run_job(up_jobs["post-upgrade"], path_with_rill, fake.url, RILL_SCALE_TIMEOUT="2")
    assert done.returncode == 1
    assert "the change did not complete within 2s; it goes on in the cluster" in done.stderr
    assert "change 2 in progress" in done.stderr


def test_a_refused_change_fails_the_job_with_the_brokers_message_and_starts_nothing(fake, up_jobs, path_with_rill):
    fake.patch_answer = (400, {"type": "about:blank", "title": "INVALID_REQUEST", "status": 400,
                               "message": "partitions.count: 6 is more than this version adds"})
    done = run_job(up_jobs["pre-upgrade"], path_with_rill, fake.url)
    assert done.returncode == 1
    assert "the brokers refuse to scale to 5 broker(s), 6 partition(s)" in done.stderr
    assert "partitions.count: 6 is more than this version adds" in done.stderr
    assert [path for path, _ in fake.patches] == ["/actuator/cluster?dryRun=true"]
    assert fake.patches[0][1] == {"brokers": {"count": 5}, "partitions": {"count": 6, "replicationFactor": 3}}
    # Every call carried the admin user's credentials, the password from the release's Secret.
    env = up_jobs["pre-upgrade"][1]
    assert len(env["RILL_PASSWORD"]) == 32
    token = base64.b64encode(f"admin:{env['RILL_PASSWORD']}".encode()).decode()
    assert fake.authorizations == {f"Basic {token}"}


def test_starting_leaves_a_change_in_progress_alone(fake, up_jobs, path_with_rill):
    fake.topology = topology(3, 3, pending=True)
    done = run_job(up_jobs["pre-upgrade"], path_with_rill, fake.url)
    assert done.returncode == 0, done.stderr
    assert "a change is already in progress; leaving it to complete" in done.stderr
    assert fake.patches == []


def test_a_race_with_another_change_is_retried_until_the_timeout(fake, path_with_rill, release):
    fake.patch_answer = (409, {"status": 409, "message": "change 7 is in progress"})
    deployed = release({"clusterSize": 4})
    down = resolved_jobs(deployed, deployed.upgrade({"clusterSize": 3}))
    fake.topology = topology(4, 3)
    done = run_job(down["pre-upgrade"], path_with_rill, fake.url, RILL_SCALE_TIMEOUT="3")
    assert done.returncode == 1
    assert "another change was started first; waiting for it" in done.stderr
    assert "kept answering that another change is in progress for 3s" in done.stderr


def test_waiting_reports_a_cluster_that_ended_elsewhere(fake, up_jobs, path_with_rill):
    fake.topology = topology(4, 3)
    done = run_job(up_jobs["post-upgrade"], path_with_rill, fake.url)
    assert done.returncode == 1
    assert "the cluster has 4 broker(s), 3 partition(s), replication factor 3, not 5 broker(s), 6 partition(s)" \
        in done.stderr


def test_no_broker_answering_fails_after_the_timeout(up_jobs, path_with_rill):
    dead = f"http://127.0.0.1:{free_port()}"
    done = run_job(up_jobs["pre-upgrade"], path_with_rill, dead, RILL_SCALE_TIMEOUT="2")
    assert done.returncode == 1
    assert f"no broker's management API answered within 2s ({dead})" in done.stderr


def test_a_broker_that_never_answers_is_given_up_on(up_jobs, path_with_rill):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"http://127.0.0.1:{silent.getsockname()[1]}"
        done = run_job(up_jobs["post-upgrade"], path_with_rill, address,
                       RILL_SCALE_TIMEOUT="3", RILL_SCALE_REQUEST_TIMEOUT="1")
    assert done.returncode == 1
    assert f"no broker's management API answered within 3s ({address}): no answer within 1s" in done.stderr


def test_script_is_plain_posix_sh():
    source = (CHART / "files" / "scale.sh").read_text()
    dash = shutil.which("dash")
    if dash:
        check = subprocess.run([dash, "-n", "-c", source], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
    for bashism in ("[[", "function ", "<<<", "pipefail"):
        assert bashism not in source


def test_a_path_without_the_cli_fails_at_once(up_jobs, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    started = time.monotonic()
    done = run_job(up_jobs["pre-upgrade"], f"{empty}:/usr/bin:/bin", "http://127.0.0.1:9",
                   RILL_SCALE_TIMEOUT="30")
    assert done.returncode == 127
    assert "the rill CLI is not on PATH" in done.stderr
    assert time.monotonic() - started < 10


# --- With OpenID Connect, against a real provider -----------------------------------------

OIDC_PROVIDER = ROOT / "tests" / "clients" / "oidc-provider" / "run.sh"


@pytest.fixture
def oidc_provider(tmp_path):
    """npm oidc-provider (tests/clients/oidc-provider) on loopback: its issuer URL. Its
    client `rill-client` has the secret `rill-client-secret` and gets tokens for `rill-api`."""
    keys = tmp_path / "provider-key.json"
    subprocess.run(["bash", str(OIDC_PROVIDER), "keys", str(keys), "helm-key"], check=True, timeout=620,
                   capture_output=True)
    log = tmp_path / "provider.log"
    with open(log, "w") as out:
        provider = subprocess.Popen(["bash", str(OIDC_PROVIDER), "provider", str(free_port()), str(keys)],
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while "issuer http://" not in log.read_text():
            assert provider.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield log.read_text().split("issuer ", 1)[1].split()[0]
    finally:
        provider.kill()
        provider.wait()


def test_the_jobs_oidc_client_gets_a_token_that_real_brokers_accept(release, path_with_rill, tmp_path,
                                                                      oidc_provider):
    """The chart's oidc settings on a real broker, and the scale Jobs' client credentials
    with the real `rill` CLI: it gets a token from the provider and the management API
    takes it. The chart accepts only an https issuer, which no test here can serve: the
    rendered issuer is swapped for the loopback provider's, as the one setting not taken
    from the chart."""
    values = {"authentication": {"method": "oidc", "oidc": {
        "issuerUri": "https://login.example.com", "audiences": ["rill-api"], "clientIdClaim": "client_id",
        "client": {"id": "rill-client", "existingSecret": "rill-oidc-client", "secretKey": "secret",
                   "tokenUrl": f"{oidc_provider}/token", "audience": "rill-api"}}}}
    deployed = release(values, secrets={"rill-oidc-client": {"secret": "rill-client-secret"}})
    rendered = deployed.upgrade({**values, "clusterSize": 4})
    auth = security_settings(rendered, deployed.secrets())
    assert auth.pop("RILL_SECURITY__AUTHENTICATION__OIDC__ISSUER_URI") == "https://login.example.com"
    auth["RILL_SECURITY__AUTHENTICATION__OIDC__ISSUER_URI"] = oidc_provider

    monitoring_port = free_port()
    log = tmp_path / "standalone.log"
    arguments = [str(rill_binary()), "standalone", "--data-dir", str(tmp_path / "data")]
    for option in ["monitoring.host=127.0.0.1", f"monitoring.port={monitoring_port}", "gateway.host=127.0.0.1",
                   f"gateway.rest-port={free_port()}", f"gateway.grpc-port={free_port()}"]:
        arguments += ["--set", option]
    with open(log, "w") as out:
        standalone = subprocess.Popen(arguments, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env={**os.environ, "RILL_LOG": "info,openraft=warn", **auth})
    management = f"http://127.0.0.1:{monitoring_port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert standalone.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(f"{management}/ready", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{management}/actuator/cluster", timeout=5)
        assert refused.value.code == 401

        for hook, (_, env, _) in scale_jobs(rendered).items():
            resolved = {name: deployed.secrets()[(value.name, value.key)] if isinstance(value, SecretKeyRef)
                        else value for name, value in env.items()}
            credentials = {name: value for name, value in resolved.items()
                           if name.startswith("RILL_") and not name.startswith("RILL_SCALE_")}
            assert set(credentials) == {"RILL_CLIENT_ID", "RILL_CLIENT_SECRET", "RILL_OAUTH_URL",
                                        "RILL_TOKEN_AUDIENCE"}, hook
            shown = subprocess.run(["rill", "cluster", "status", "--management", management],
                                   env={"PATH": path_with_rill, **credentials}, capture_output=True, text=True,
                                   timeout=60)
            assert shown.returncode == 0, (hook, shown.stdout, shown.stderr)
            assert "BROKER" in shown.stdout, shown.stdout
        assert "rill-client-secret" not in log.read_text()
    finally:
        standalone.terminate()
        try:
            standalone.wait(timeout=20)
        except subprocess.TimeoutExpired:
            standalone.kill()
            standalone.wait()
