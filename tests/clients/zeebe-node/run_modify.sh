#!/usr/bin/env bash
# Runs modify_flow.mjs (process instance modification with @camunda8/sdk's
# ZeebeGrpcClient, unmodified from npm) against a running Rill gateway's gRPC port.
#
#   RILL_GRPC_ADDRESS=127.0.0.1:26500 tests/clients/zeebe-node/run_modify.sh
#
# The SDK is installed with npm into $RILL_ZEEBE_NODE_DIR (default target/zeebe-node-clients).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
. "$here/../lib.sh"
work="${RILL_ZEEBE_NODE_DIR:-$root/target/zeebe-node-clients}"
address="${RILL_GRPC_ADDRESS:-127.0.0.1:26500}"

npm_install "$work" "$here/package.json" "$here/modify_flow.mjs"

flow node "$work/modify_flow.mjs" "$address"
