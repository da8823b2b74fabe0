"""Authentication: basic by default, the admin password generated into a Secret that
upgrades and reinstalls keep, or read from the user's Secret; brokers, separate gateways
and the scale Jobs get it only through secretKeyRef; the NOTES say how to read it."""

import base64
import re
import shutil

import helm_python as helm
import pytest

from conftest import CHART, NAMESPACE, RELEASE, Rendered, SecretKeyRef, container_env, scale_jobs

BROKER = f"{RELEASE}-broker"
GATEWAY = f"{RELEASE}-gateway"
ADMIN_SECRET = f"{RELEASE}-admin"
METHOD = "RILL_SECURITY__AUTHENTICATION__METHOD"
USERNAME = "RILL_SECURITY__INITIALIZATION__USERS__0__USERNAME"
PASSWORD = "RILL_SECURITY__INITIALIZATION__USERS__0__PASSWORD"


def workload_envs(rendered):
    """{workload name: env} of the brokers and, when it runs apart, the gateway."""
    envs = {}
    for kind in ("StatefulSet", "Deployment"):
        for workload in rendered.all(kind):
            (container,) = workload["spec"]["template"]["spec"]["containers"]
            envs[workload["metadata"]["name"]] = container_env(container)
    return envs


def security_env(env):
    return {name: entry for name, entry in env.items() if name.startswith("RILL_SECURITY__")}


def expect_basic(env, username, secret, key):
    assert security_env(env) == {
        METHOD: {"name": METHOD, "value": "basic"},
        USERNAME: {"name": USERNAME, "value": username},
        PASSWORD: {"name": PASSWORD, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}},
    }


def generated_password(rendered):
    secret = rendered.one("Secret", ADMIN_SECRET)
    return base64.b64decode(secret["data"]["password"]).decode()


def notes(deployed, values, **kind):
    manifests = deployed.config.render(deployed.chart, values, name=RELEASE, namespace=NAMESPACE, **kind)
    return manifests["rill/templates/NOTES.txt"]


def test_the_default_is_basic_with_a_generated_password(render):
    rendered = render({})
    for env in workload_envs(rendered).values():
        expect_basic(env, "admin", ADMIN_SECRET, "password")
    secret = rendered.one("Secret", ADMIN_SECRET)
    assert secret["type"] == "Opaque"
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert list(secret["data"]) == ["password"]
    password = generated_password(rendered)
    assert re.fullmatch(r"[A-Za-z0-9]{32}", password), password
    # Each rendering without a cluster draws its own password.
    assert generated_password(render({})) != password


def test_the_password_appears_in_no_other_object(render):
    rendered = render({"gateway": {"embedded": False}})
    password = generated_password(rendered)
    encoded = base64.b64encode(password.encode()).decode()
    for doc in rendered.docs:
        if doc["kind"] == "Secret":
            continue
        text = repr(doc)
        assert password not in text and encoded not in text, doc["metadata"]["name"]


def test_separate_gateways_check_the_same_user(render):
    rendered = render({"gateway": {"embedded": False}, "authentication": {"username": "ops"}})
    envs = workload_envs(rendered)
    assert set(envs) == {BROKER, GATEWAY}
    for env in envs.values():
        expect_basic(env, "ops", ADMIN_SECRET, "password")


def test_an_existing_secret_is_used_and_none_is_generated(render):
    rendered = render({"gateway": {"embedded": False},
                       "authentication": {"existingSecret": "team-rill", "passwordKey": "admin.pw"}})
    assert rendered.all("Secret") == []
    for env in workload_envs(rendered).values():
        expect_basic(env, "admin", "team-rill", "admin.pw")


def test_the_generated_secret_stores_the_password_under_password_key(render):
    rendered = render({"authentication": {"passwordKey": "admin-password"}})
    assert list(rendered.one("Secret", ADMIN_SECRET)["data"]) == ["admin-password"]
    expect_basic(workload_envs(rendered)[BROKER], "admin", ADMIN_SECRET, "admin-password")


def test_method_none_renders_no_authentication_and_no_secret(render):
    rendered = render({"gateway": {"embedded": False}, "authentication": {"method": "none"}})
    assert rendered.all("Secret") == []
    for name, env in workload_envs(rendered).items():
        assert security_env(env) == {}, name


def test_upgrades_keep_the_generated_password(release):
    deployed = release()
    first = deployed.secrets()[(ADMIN_SECRET, "password")]
    assert re.fullmatch(r"[A-Za-z0-9]{32}", first)
    for values in ({}, {"clusterSize": 4}, {"authentication": {"username": "ops"}}):
        upgraded = deployed.deploy(deployed.upgrade(values))
        assert generated_password(upgraded) == first, values
    assert deployed.secrets()[(ADMIN_SECRET, "password")] == first


def test_a_reinstall_reads_back_the_secret_the_uninstall_kept(release):
    deployed = release(secrets={ADMIN_SECRET: {"password": "kept-from-before"}})
    assert deployed.secrets()[(ADMIN_SECRET, "password")] == "kept-from-before"


def test_an_existing_secret_without_the_password_key_is_refused(release):
    values = {"authentication": {"existingSecret": "team-rill", "passwordKey": "pw"}}
    with pytest.raises(helm.HelmError) as refused:
        release(values, secrets={"team-rill": {"password": "p", "user": "u"}})
    assert "authentication.existingSecret team-rill has no key pw (authentication.passwordKey): " \
        "it has password, user" in str(refused.value)
    deployed = release(values, secrets={"team-rill": {"pw": "p"}})
    assert deployed.secrets()[("team-rill", "pw")] == "p"


def test_a_kept_secret_without_the_key_gets_a_new_password(release):
    deployed = release(secrets={ADMIN_SECRET: {"other": "x"}})
    assert re.fullmatch(r"[A-Za-z0-9]{32}", deployed.secrets()[(ADMIN_SECRET, "password")])


def cli_credentials(env):
    return {name: env[name] for name in ("RILL_USERNAME", "RILL_PASSWORD") if name in env}


def test_scale_jobs_send_the_admin_credentials(release):
    deployed = release()
    jobs = scale_jobs(deployed.upgrade({"clusterSize": 4}))
    assert set(jobs) == {"pre-upgrade", "post-upgrade"}
    for _, env, job in jobs.values():
        assert cli_credentials(env) == {"RILL_USERNAME": "admin",
                                        "RILL_PASSWORD": SecretKeyRef(ADMIN_SECRET, "password")}


def test_scale_jobs_with_an_existing_secret(release):
    values = {"authentication": {"username": "ops", "existingSecret": "team-rill", "passwordKey": "pw"}}
    deployed = release(values, secrets={"team-rill": {"pw": "p"}})
    (_, env, _), = scale_jobs(deployed.upgrade({**values, "clusterSize": 2, "replicationFactor": 1})).values()
    assert cli_credentials(env) == {"RILL_USERNAME": "ops", "RILL_PASSWORD": SecretKeyRef("team-rill", "pw")}


def test_the_jobs_before_an_upgrade_use_the_running_brokers_credentials(release):
    """The pre-upgrade Job talks to the brokers as they run; the post-upgrade one to the
    brokers as this release configures them."""
    # Turned on with a scale-up: the running brokers need none (and the Secret does not
    # exist before the upgrade); after it they need the new Secret's password.
    deployed = release({"authentication": {"method": "none"}})
    jobs = scale_jobs(deployed.upgrade({"clusterSize": 4}))
    assert cli_credentials(jobs["pre-upgrade"][1]) == {}
    assert cli_credentials(jobs["post-upgrade"][1]) == {
        "RILL_USERNAME": "admin", "RILL_PASSWORD": SecretKeyRef(ADMIN_SECRET, "password")}

    # Turned off with a scale-up: the other way round.
    deployed = release()
    jobs = scale_jobs(deployed.upgrade({"clusterSize": 4, "authentication": {"method": "none"}}))
    assert cli_credentials(jobs["pre-upgrade"][1]) == {
        "RILL_USERNAME": "admin", "RILL_PASSWORD": SecretKeyRef(ADMIN_SECRET, "password")}
    assert cli_credentials(jobs["post-upgrade"][1]) == {}

    # Another user and Secret with a scale-down: the running brokers still have the old.
    deployed = release({"clusterSize": 4})
    (_, env, _), = scale_jobs(deployed.upgrade({
        "clusterSize": 3, "authentication": {"username": "ops", "existingSecret": "team-rill"}})).values()
    assert cli_credentials(env) == {"RILL_USERNAME": "admin",
                                    "RILL_PASSWORD": SecretKeyRef(ADMIN_SECRET, "password")}


def test_no_job_credentials_without_authentication(release):
    deployed = release({"authentication": {"method": "none"}})
    for _, env, _ in scale_jobs(deployed.upgrade({"clusterSize": 4, "authentication": {"method": "none"}})).values():
        assert cli_credentials(env) == {}


@pytest.mark.parametrize("values, words", [
    ({"authentication": {"method": "oidc"}}, ["authentication.oidc.issuerUri is empty"]),
    ({"authentication": {"method": "ldap"}}, ["/authentication/method"]),
    ({"authentication": {"username": "a:b"}}, ["/authentication/username"]),
    ({"authentication": {"username": "$(whoami)"}}, ["/authentication/username"]),
    ({"authentication": {"username": ""}}, ["/authentication/username"]),
    ({"authentication": {"passwordKey": ""}}, ["/authentication/passwordKey"]),
    ({"authentication": {"existingSecret": "Not_A_Name"}}, ["/authentication/existingSecret"]),
    ({"authentication": {"password": "hunter2"}}, ["password"]),
    ({"authentication": {"method": "none", "existingSecret": "team-rill"}},
     ["authentication.existingSecret is team-rill but authentication.method is none"]),
], ids=["oidc", "unknown-method", "colon", "shell", "empty-username", "empty-key", "bad-secret-name",
        "plain-password", "secret-without-basic"])
def test_invalid_authentication_values_are_refused(render, values, words):
    with pytest.raises(helm.HelmError) as refused:
        render(values)
    for word in words:
        assert word in str(refused.value), str(refused.value)


def test_notes_say_how_to_read_the_password_and_use_it(release):
    deployed = release()
    text = notes(deployed, {}, is_upgrade=True)
    read = (f"export RILL_PASSWORD=\"$(kubectl --namespace {NAMESPACE} get secret {ADMIN_SECRET} "
            "-o jsonpath='{.data.password}' | base64 -d)\"")
    assert read in text, text
    assert 'curl -u "admin:$RILL_PASSWORD" http://localhost:8080/v2/topology' in text, text
    assert "WARNING: authentication.method is none" not in text

    scaled = notes(deployed, {"clusterSize": 4}, is_upgrade=True)
    assert "RILL_USERNAME='admin' rill cluster status --management http://localhost:9600" in scaled, scaled


def test_notes_name_an_existing_secret_and_its_key(release):
    deployed = release()
    text = notes(deployed, {"authentication": {"username": "ops", "existingSecret": "team-rill",
                                               "passwordKey": "admin.pw"}}, is_upgrade=True)
    assert "get secret team-rill -o jsonpath='{.data.admin\\.pw}' | base64 -d" in text, text
    assert 'curl -u "ops:$RILL_PASSWORD" http' in text, text


def test_notes_warn_without_authentication(release):
    deployed = release()
    text = notes(deployed, {"authentication": {"method": "none"}}, is_upgrade=True)
    assert "WARNING: authentication.method is none" in text
    assert "RILL_PASSWORD" not in text
    assert "curl http://localhost:8080/v2/topology" in text


@pytest.fixture
def chart_before_authentication(tmp_path):
    """The chart as `helm upgrade --reuse-values` renders it for a release installed with a
    chart from before authentication: the new templates with the old values, which have
    no `authentication` section."""
    copy = tmp_path / "rill"
    shutil.copytree(CHART, copy, symlinks=False)
    values = (copy / "values.yaml").read_text()
    start = values.index("# --- Authentication")
    end = values.index("# --- TLS")
    (copy / "values.yaml").write_text(values[:start] + values[end:])
    with helm.Chart.load(str(copy)) as loaded:
        yield lambda values: Rendered(loaded.render(values, name=RELEASE, namespace=NAMESPACE, is_upgrade=True),
                                      values, loaded.merge_values(values))


def test_reused_values_from_before_authentication_must_choose_a_method(chart_before_authentication):
    with pytest.raises(helm.HelmError) as refused:
        chart_before_authentication({})
    assert "authentication.method is not set" in str(refused.value)
    assert "--reset-then-reuse-values" in str(refused.value)

    # `--set authentication.method=basic` alone: the other values take their defaults.
    rendered = chart_before_authentication({"authentication": {"method": "basic"}})
    expect_basic(workload_envs(rendered)[BROKER], "admin", ADMIN_SECRET, "password")
    assert re.fullmatch(r"[A-Za-z0-9]{32}", generated_password(rendered))

    rendered = chart_before_authentication({"authentication": {"method": "none"}})
    assert security_env(workload_envs(rendered)[BROKER]) == {}
    assert rendered.all("Secret") == []


# --- OpenID Connect -------------------------------------------------------------------

OIDC_CLIENT_SECRET = "rill-ops-client"
OIDC = {
    "method": "oidc",
    "oidc": {
        "issuerUri": "https://login.example.com/realms/camunda",
        "audiences": ["rill-api", "zeebe-api"],
        "clientIdClaim": "azp",
        "groupsClaim": "groups",
        "client": {"id": "rill-ops", "existingSecret": OIDC_CLIENT_SECRET,
                   "tokenUrl": "https://login.example.com/realms/camunda/protocol/openid-connect/token",
                   "audience": "rill-api"},
    },
}


def oidc_values(**changes):
    values = {**OIDC, "oidc": {**OIDC["oidc"], "client": {**OIDC["oidc"]["client"]}}}
    for key, value in changes.items():
        if key in ("id", "existingSecret", "secretKey", "tokenUrl", "audience"):
            values["oidc"]["client"][key] = value
        else:
            values["oidc"][key] = value
    return {"authentication": values}


def oidc_job_credentials(secret=OIDC_CLIENT_SECRET, key="client-secret", audience="rill-api"):
    expected = {
        "RILL_CLIENT_ID": "rill-ops",
        "RILL_CLIENT_SECRET": SecretKeyRef(secret, key),
        "RILL_OAUTH_URL": "https://login.example.com/realms/camunda/protocol/openid-connect/token",
    }
    if audience:
        expected["RILL_TOKEN_AUDIENCE"] = audience
    return expected


def oauth_env(env):
    names = ("RILL_CLIENT_ID", "RILL_CLIENT_SECRET", "RILL_OAUTH_URL", "RILL_TOKEN_AUDIENCE",
             "RILL_USERNAME", "RILL_PASSWORD")
    return {name: env[name] for name in names if name in env}


def test_oidc_settings_reach_brokers_and_gateways_and_no_password_is_made(render):
    rendered = render({**oidc_values(), "gateway": {"embedded": False}})
    envs = workload_envs(rendered)
    assert set(envs) == {BROKER, GATEWAY}
    for env in envs.values():
        assert {name: entry["value"] for name, entry in security_env(env).items()} == {
            METHOD: "oidc",
            "RILL_SECURITY__AUTHENTICATION__OIDC__ISSUER_URI": "https://login.example.com/realms/camunda",
            "RILL_SECURITY__AUTHENTICATION__OIDC__AUDIENCES": "rill-api,zeebe-api",
            "RILL_SECURITY__AUTHENTICATION__OIDC__USERNAME_CLAIM": "sub",
            "RILL_SECURITY__AUTHENTICATION__OIDC__CLIENT_ID_CLAIM": "azp",
            "RILL_SECURITY__AUTHENTICATION__OIDC__GROUPS_CLAIM": "groups",
            "RILL_SECURITY__AUTHENTICATION__OIDC__CLOCK_SKEW": "60s",
        }
    assert not [doc for doc in rendered.docs if doc["kind"] == "Secret"]


def test_unset_oidc_claims_are_not_sent(render):
    rendered = render(oidc_values(clientIdClaim="", groupsClaim="", clockSkew="5s"))
    env = workload_envs(rendered)[BROKER]
    assert "RILL_SECURITY__AUTHENTICATION__OIDC__CLIENT_ID_CLAIM" not in env
    assert "RILL_SECURITY__AUTHENTICATION__OIDC__GROUPS_CLAIM" not in env
    assert env["RILL_SECURITY__AUTHENTICATION__OIDC__CLOCK_SKEW"]["value"] == "5s"


def test_scale_jobs_get_tokens_with_the_oidc_client(release):
    deployed = release(oidc_values(), secrets={OIDC_CLIENT_SECRET: {"client-secret": "s"}})
    jobs = scale_jobs(deployed.upgrade({**oidc_values(), "clusterSize": 4}))
    assert set(jobs) == {"pre-upgrade", "post-upgrade"}
    for _, env, _ in jobs.values():
        assert oauth_env(env) == oidc_job_credentials()

    # Without an audience, none is asked for.
    values = oidc_values(audience="", secretKey="token.secret")
    deployed = release(values, secrets={OIDC_CLIENT_SECRET: {"token.secret": "s"}})
    (_, env, _), = scale_jobs(deployed.upgrade({**values, "clusterSize": 2, "replicationFactor": 1})).values()
    assert oauth_env(env) == oidc_job_credentials(key="token.secret", audience="")


def test_jobs_switching_between_basic_and_oidc_use_what_the_brokers_run(release):
    # basic -> oidc: the pre-upgrade Job still talks to brokers with basic.
    deployed = release(secrets={OIDC_CLIENT_SECRET: {"client-secret": "s"}})
    jobs = scale_jobs(deployed.upgrade({**oidc_values(), "clusterSize": 4}))
    assert oauth_env(jobs["pre-upgrade"][1]) == {
        "RILL_USERNAME": "admin", "RILL_PASSWORD": SecretKeyRef(ADMIN_SECRET, "password")}
    assert oauth_env(jobs["post-upgrade"][1]) == oidc_job_credentials()

    # oidc -> basic: the running brokers take tokens of the oidc client.
    deployed = release(oidc_values(), secrets={OIDC_CLIENT_SECRET: {"client-secret": "s"}})
    upgrade = {"clusterSize": 4, "authentication": {**oidc_values()["authentication"], "method": "basic"}}
    jobs = scale_jobs(deployed.upgrade(upgrade))
    assert oauth_env(jobs["pre-upgrade"][1]) == oidc_job_credentials()
    assert oauth_env(jobs["post-upgrade"][1]) == {
        "RILL_USERNAME": "admin", "RILL_PASSWORD": SecretKeyRef(ADMIN_SECRET, "password")}


@pytest.mark.parametrize("changes, words", [
    ({"issuerUri": ""}, ["authentication.oidc.issuerUri is empty"]),
    ({"issuerUri": "http://keycloak:8080/realms/camunda"}, ["is not https://", "loopback"]),
    ({"issuerUri": "login.example.com"}, ["/authentication/oidc/issuerUri"]),
    ({"audiences": []}, ["authentication.oidc.audiences is empty"]),
    ({"audiences": ["a,b"]}, ["/authentication/oidc/audiences"]),
    ({"id": ""}, ["authentication.oidc.client.id is empty", "client credentials"]),
    ({"existingSecret": ""}, ["authentication.oidc.client.existingSecret is empty"]),
    ({"tokenUrl": ""}, ["authentication.oidc.client.tokenUrl is empty"]),
    ({"clockSkew": "a minute"}, ["/authentication/oidc/clockSkew"]),
], ids=["no-issuer", "http-issuer", "not-a-url", "no-audience", "comma", "no-client", "no-secret",
        "no-token-url", "bad-skew"])
def test_invalid_oidc_values_are_refused(render, changes, words):
    with pytest.raises(helm.HelmError) as refused:
        render(oidc_values(**changes))
    for word in words:
        assert word in str(refused.value), str(refused.value)


def test_an_admin_secret_with_oidc_is_refused(render):
    values = oidc_values()
    values["authentication"]["existingSecret"] = "team-rill"
    with pytest.raises(helm.HelmError) as refused:
        render(values)
    assert "authentication.method is oidc: nothing would read the password" in str(refused.value)


def test_an_oidc_client_secret_without_its_key_is_refused(release):
    with pytest.raises(helm.HelmError) as refused:
        release(oidc_values(), secrets={OIDC_CLIENT_SECRET: {"secret": "s"}})
    assert ("authentication.oidc.client.existingSecret rill-ops-client has no key client-secret"
            in str(refused.value)), str(refused.value)


def test_notes_say_how_to_get_a_token(release):
    deployed = release(oidc_values(), secrets={OIDC_CLIENT_SECRET: {"client-secret": "s"}})
    text = notes(deployed, oidc_values(), is_upgrade=True)
    assert "access tokens of https://login.example.com/realms/camunda" in text, text
    assert (f"get secret {OIDC_CLIENT_SECRET} -o jsonpath='{{.data.client-secret}}' | base64 -d" in text), text
    assert ("curl -s https://login.example.com/realms/camunda/protocol/openid-connect/token "
            "-d grant_type=client_credentials -d client_id=rill-ops") in text, text
    assert "-d audience=rill-api" in text, text
    assert 'curl -H "Authorization: Bearer $RILL_TOKEN" http://localhost:8080/v2/topology' in text, text
    assert "RILL_PASSWORD" not in text and "WARNING: authentication.method is none" not in text
    scaled = notes(deployed, {**oidc_values(), "clusterSize": 4}, is_upgrade=True)
    assert "RILL_CLIENT_ID='rill-ops' RILL_OAUTH_URL=" in scaled, scaled
