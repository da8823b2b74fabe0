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
. "$here/../lib.sh"
work="${RILL_NODE_DIR:-$root/target/node-clients}"

npm_install "$work" "$here/package.json" "$here/sdk_flow.mjs"

rest_address

client_auth

flow env CAMUNDA_REST_ADDRESS="$address" "${auth[@]}" node "$work/sdk_flow.mjs" "$root/examples"
