#!/usr/bin/env bash
# Runs flow.mjs with zeebe-node 8.3 (unmodified, from npm) against a running Rill
# gateway's gRPC port.
#
#   RILL_GRPC_ADDRESS=127.0.0.1:26500 tests/clients/zeebe-node-8.3/run.sh
#
# The client is installed with npm into $RILL_ZEEBE_NODE_83_DIR (default
# target/zeebe-node-8.3-clients).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
. "$here/../lib.sh"
work="${RILL_ZEEBE_NODE_83_DIR:-$root/target/zeebe-node-8.3-clients}"
address="${RILL_GRPC_ADDRESS:-127.0.0.1:26500}"

npm_install "$work" "$here/package.json" "$here/flow.mjs"

flow node "$work/flow.mjs" "$address" "$root/examples"
