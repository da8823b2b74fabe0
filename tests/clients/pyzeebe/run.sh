#!/usr/bin/env bash
# Runs flow.py with pyzeebe (Zeebe's Python gRPC client, unmodified, from PyPI) against
# a running Rill gateway's gRPC port.
#
#   RILL_GRPC_ADDRESS=127.0.0.1:26500 tests/clients/pyzeebe/run.sh
#
# pyzeebe is installed into a virtualenv under $RILL_PYZEEBE_VENV (default
# target/pyzeebe-clients) from requirements.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
. "$here/../lib.sh"
venv="${RILL_PYZEEBE_VENV:-$root/target/pyzeebe-clients}"
address="${RILL_GRPC_ADDRESS:-127.0.0.1:26500}"

pip_install "$venv" "$here/requirements.txt"

flow "$venv/bin/python" "$here/flow.py" "$address" "$root/examples"
