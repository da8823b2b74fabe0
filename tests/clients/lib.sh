# Shared by the client scripts (sourced). Each step is bounded, so a client that hangs
# fails within tens of seconds with what it printed, instead of holding the test until
# the test runner's own limit:
#   RILL_CLIENT_INSTALL_TIMEOUT  pip or npm install (default 600 s: a cold cache)
#   RILL_CLIENT_FLOW_TIMEOUT     the flow against Rill (default 90 s)
clients_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# bounded SECONDS WHAT COMMAND...: runs COMMAND, killed (with its children) after
# SECONDS, saying what did not finish.
bounded() {
  local limit="$1" what="$2"
  shift 2
  local code=0
  timeout --kill-after=5 "$limit" "$@" || code=$?
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    echo "$what did not finish within ${limit}s (killed)" >&2
  fi
  return "$code"
}

pip_install() { # VENV REQUIREMENTS
  [ -x "$1/bin/python" ] || python3 -m venv "$1"
  # `python -m pip`, not bin/pip: a venv's scripts name its old path in their first
  # line, so bin/pip breaks when a target directory is copied or moved.
  bounded "${RILL_CLIENT_INSTALL_TIMEOUT:-600}" "pip install -r $2" \
    "$1/bin/python" -m pip install --quiet --disable-pip-version-check -r "$2"
}

npm_install() { # DIR FILES...
  local work="$1"
  shift
  mkdir -p "$work"
  cp "$@" "$work/"
  (cd "$work" && bounded "${RILL_CLIENT_INSTALL_TIMEOUT:-600}" "npm install in $work" \
    npm install --silent --no-audit --no-fund >/dev/null)
}

flow() { # COMMAND...
  bounded "${RILL_CLIENT_FLOW_TIMEOUT:-90}" "the client flow ($*)" "$@"
}

# Sets $address to $RILL_REST_ADDRESS, or starts the engine-backed example gateway
# (stopped when the script exits) and sets it to that gateway's address.
rest_address() {
  address="${RILL_REST_ADDRESS:-}"
  [ -n "$address" ] && return 0
  local log target
  log="$(mktemp)"
  cargo build --quiet --manifest-path "$clients_root/Cargo.toml" -p rill-gateway --example engine_gateway
  target="$("$clients_root/scripts/target-dir")"
  "$target/debug/examples/engine_gateway" 0 </dev/null >"$log" 2>&1 &
  gateway_pid=$!
  trap 'kill "$gateway_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    address="$(sed -n 's/^listening on //p' "$log")"
    [ -n "$address" ] && return 0
    sleep 0.1
  done
  cat "$log"
  echo "gateway did not start" >&2
  exit 1
}

# client_auth: sets `auth` to the SDK environment of Camunda's REST SDKs: OAUTH
# (client credentials) with RILL_CLIENT_OAUTH_URL (the provider's token endpoint),
# RILL_CLIENT_ID, RILL_CLIENT_SECRET and RILL_CLIENT_AUDIENCE when the URL is set;
# BASIC with RILL_CLIENT_USERNAME and RILL_CLIENT_PASSWORD when both are set; NONE
# otherwise.
client_auth() {
  if [ -n "${RILL_CLIENT_OAUTH_URL:-}" ]; then
    auth=(CAMUNDA_AUTH_STRATEGY=OAUTH
      "CAMUNDA_OAUTH_URL=$RILL_CLIENT_OAUTH_URL"
      "CAMUNDA_CLIENT_ID=${RILL_CLIENT_ID:?RILL_CLIENT_ID is not set}"
      "CAMUNDA_CLIENT_SECRET=${RILL_CLIENT_SECRET:?RILL_CLIENT_SECRET is not set}"
      "CAMUNDA_TOKEN_AUDIENCE=${RILL_CLIENT_AUDIENCE:?RILL_CLIENT_AUDIENCE is not set}")
  elif [ -n "${RILL_CLIENT_USERNAME:-}" ]; then
    auth=(CAMUNDA_AUTH_STRATEGY=BASIC
      "CAMUNDA_BASIC_AUTH_USERNAME=$RILL_CLIENT_USERNAME"
      "CAMUNDA_BASIC_AUTH_PASSWORD=${RILL_CLIENT_PASSWORD:?RILL_CLIENT_PASSWORD is not set}")
  else
    auth=(CAMUNDA_AUTH_STRATEGY=NONE)
  fi
}
