#!/usr/bin/env bash
# Runs sdk_flow.py with Camunda's unmodified Python SDK against a Rill gateway.
#
#   tests/clients/python/run.sh                 # starts the engine-backed example gateway
#   RILL_REST_ADDRESS=http://host:8080 tests/clients/python/run.sh   # uses a running one
#
# The SDK is installed into a virtualenv under $RILL_PY_VENV (default
# target/python-clients) from requirements.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${RILL_PY_VENV:-$root/target/python-clients}"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"

gateway_pid=""
cleanup() { if [ -n "$gateway_pid" ]; then kill "$gateway_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

address="${RILL_REST_ADDRESS:-}"
if [ -z "$address" ]; then
  log="$(mktemp)"
  cargo build --quiet -p rill-gateway --example engine_gateway
  target="${CARGO_TARGET_DIR:-$root/target}"
  "$target/debug/examples/engine_gateway" 0 </dev/null >"$log" 2>&1 &
  gateway_pid=$!
  for _ in $(seq 1 100); do
    address="$(sed -n 's/^listening on //p' "$log")"
    [ -n "$address" ] && break
    sleep 0.1
  done
  [ -n "$address" ] || { cat "$log"; echo "gateway did not start" >&2; exit 1; }
fi

CAMUNDA_REST_ADDRESS="$address" CAMUNDA_AUTH_STRATEGY=NONE \
  "$venv/bin/python" "$here/sdk_flow.py" "$root/examples"
