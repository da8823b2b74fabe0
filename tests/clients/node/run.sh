#!/usr/bin/env bash
# Runs sdk_flow.mjs with Camunda's unmodified npm SDK against a Rill gateway.
#
#   tests/clients/node/run.sh                                     # starts the example gateway
#   RILL_REST_ADDRESS=http://host:8080 tests/clients/node/run.sh  # uses a running one
#
# The SDK is installed with npm into $RILL_NODE_DIR (default target/node-clients).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
work="${RILL_NODE_DIR:-$root/target/node-clients}"

mkdir -p "$work"
cp "$here/package.json" "$here/sdk_flow.mjs" "$work/"
(cd "$work" && npm install --silent --no-audit --no-fund >/dev/null)

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

CAMUNDA_REST_ADDRESS="$address" node "$work/sdk_flow.mjs" "$root/examples"
