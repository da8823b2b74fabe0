#!/usr/bin/env bash
# Runs sdk_flow.py with Camunda's unmodified Python SDK against a Rill gateway.
#
#   tests/clients/python/run.sh                 # starts the engine-backed example gateway
#   RILL_REST_ADDRESS=http://host:8080 tests/clients/python/run.sh   # uses a running one
#
# With RILL_CLIENT_USERNAME and RILL_CLIENT_PASSWORD set, the SDK authenticates as its
# README shows for basic authentication (CAMUNDA_AUTH_STRATEGY=BASIC).
#
# The SDK is installed into a virtualenv under $RILL_PY_VENV (default
# target/python-clients) from requirements.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
. "$here/../lib.sh"
venv="${RILL_PY_VENV:-$root/target/python-clients}"

pip_install "$venv" "$here/requirements.txt"

rest_address

client_auth

flow env CAMUNDA_REST_ADDRESS="$address" "${auth[@]}" \
  "$venv/bin/python" "$here/sdk_flow.py" "$root/examples"
