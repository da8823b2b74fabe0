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
venv="${RILL_PYZEEBE_VENV:-$root/target/pyzeebe-clients}"
address="${RILL_GRPC_ADDRESS:-127.0.0.1:26500}"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"

"$venv/bin/python" "$here/flow.py" "$address" "$root/examples"
