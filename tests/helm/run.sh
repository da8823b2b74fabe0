#!/usr/bin/env bash
# Tests the Helm chart, the container files, the Grafana dashboard and the alert rules,
# with no cluster and no helm binary: helm-python-sdk renders and lints the chart with
# Helm's own Go SDK, kubernetes-validate checks the manifests against Kubernetes' schemas.
#
#   tests/helm/run.sh                 # all tests
#   tests/helm/run.sh -k schema       # pytest arguments pass through
#
# The virtualenv lives outside the repository, in $RILL_HELM_VENV (default
# ${XDG_CACHE_HOME:-~/.cache}/rill-helm-venv), and is rebuilt when requirements.txt
# changes. Tests that feed the rendered configuration to the real `rill` binary use
# $RILL_BIN (an absolute path: the tests hand it to other processes), or cargo's
# debug/rill when it exists (scripts/target-dir finds cargo's target directory).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}"
venv="${RILL_HELM_VENV:-$cache/rill-helm-venv}"
stamp="$venv/.requirements.sha256"
wanted="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
  echo "tests/helm: preparing $venv" >&2
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  echo "$wanted" >"$stamp"
fi

if [ -z "${RILL_BIN:-}" ]; then
  built="$("$root/scripts/target-dir")/debug/rill"
  if [ -x "$built" ]; then
    export RILL_BIN="$built"
  fi
fi

cd "$root"
exec "$venv/bin/python" -m pytest "$here" -q -rs -p no:cacheprovider "$@"
