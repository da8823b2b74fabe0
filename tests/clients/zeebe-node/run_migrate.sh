#!/usr/bin/env bash
# Runs migrate_flow.mjs (process instance migration with @camunda8/sdk's
# ZeebeGrpcClient, unmodified from npm) against a running Rill gateway's gRPC port.
#
#   RILL_GRPC_ADDRESS=127.0.0.1:26500 tests/clients/zeebe-node/run_migrate.sh
#
# The SDK is installed with npm into $RILL_ZEEBE_NODE_DIR (default target/zeebe-node-clients).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
work="${RILL_ZEEBE_NODE_DIR:-$root/target/zeebe-node-clients}"
address="${RILL_GRPC_ADDRESS:-127.0.0.1:26500}"

mkdir -p "$work"
cp "$here/package.json" "$here/migrate_flow.mjs" "$work/"
(cd "$work" && npm install --silent --no-audit --no-fund >/dev/null)

node "$work/migrate_flow.mjs" "$address"
