#!/usr/bin/env bash
# The S3-compatible server of Rill's S3 backup tests: moto's server mode (PyPI
# moto[server], unmodified, pinned in requirements.txt) with request signatures checked,
# installed into a virtualenv under $RILL_S3_VENV (default target/s3-server).
#
#   tests/clients/s3-server/run.sh PORT BUCKET...
#
# The server runs in the foreground (this script becomes python) and prints
# `s3 http://127.0.0.1:PORT ACCESS_KEY SECRET_KEY` once it serves BUCKET... with those
# credentials (an IAM user allowed s3:*); a request signed with other keys is refused.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
. "$here/../lib.sh"
venv="${RILL_S3_VENV:-$root/target/s3-server}"

# Tests start servers in parallel: one installs, the others wait for it. The version is
# pinned, so an install with the same requirements is kept.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.install.lock"
flock 9
if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
  pip_install "$venv" "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
exec 9>&-

exec "$venv/bin/python" "$here/server.py" "$@"
