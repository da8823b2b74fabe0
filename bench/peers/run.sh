#!/usr/bin/env bash
# Rill and its peers, one after the other on this machine, with the same shape
# (instances, starters, workers) and the same HTTP stub; prints each figure and the
# ratio Rill / peer.
#
#   bench/peers/run.sh                       # 100,000 instances, 8 starters, 16 workers
#   INSTANCES=2000 bench/peers/run.sh        # a quick run
#   bench/peers/run.sh --export jsonl        # extra arguments go to rill-bench
#
# Environment: INSTANCES, STARTERS, WORKERS; PEERS (default "dbos bpmn-engine");
# OUT (results, default /var/tmp/rill-bench-peers); SKIP_BUILD=1 to use the built
# binaries as they are; CARGO_TARGET_DIR as for cargo; RILL_BENCH to use another
# rill-bench binary (its sibling `rill` is the broker started).
#
# Installs what is missing: Debian's PostgreSQL (apt), PyPI dbos (in a venv under
# $OUT), npm bpmn-engine (bench/peers/bpmn-engine/node_modules).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
instances=${INSTANCES:-100000}
starters=${STARTERS:-8}
workers=${WORKERS:-16}
peers=${PEERS:-"dbos bpmn-engine"}
out=${OUT:-/var/tmp/rill-bench-peers}
target=${CARGO_TARGET_DIR:-$root/target}
bench=${RILL_BENCH:-$target/release/rill-bench}
mkdir -p "$out"

say() { printf '\n== %s\n' "$*" >&2; }

# --- install -------------------------------------------------------------------------
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  say "building rill and rill-bench (release)"
  (cd "$root" && cargo build --release -p rill -p rill-bench)
fi
[[ -x "$bench" ]] || { echo "missing $bench (build it, or set CARGO_TARGET_DIR)" >&2; exit 1; }

pg_cluster() { pg_lsclusters --no-header 2>/dev/null | awk 'NR==1 {print $1, $2}'; }
if [[ " $peers " == *" dbos "* ]]; then
  if ! command -v pg_lsclusters >/dev/null || [[ -z "$(pg_cluster)" ]]; then
    say "installing PostgreSQL (Debian)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  read -r pg_version pg_name < <(pg_cluster)
  if ! pg_lsclusters --no-header | awk 'NR==1 {print $4}' | grep -q online; then
    pg_ctlcluster "$pg_version" "$pg_name" start
  fi
  runuser -u postgres -- psql -qc "ALTER USER postgres PASSWORD 'bench'" >/dev/null
  if [[ ! -x "$out/venv/bin/python" ]]; then
    say "installing dbos (PyPI) into $out/venv"
    python3 -m venv "$out/venv"
  fi
  "$out/venv/bin/pip" install -q -r "$here/dbos/requirements.txt"
fi
if [[ " $peers " == *" bpmn-engine "* ]]; then
  say "installing bpmn-engine (npm)"
  (cd "$here/bpmn-engine" && npm ci --no-audit --no-fund --silent)
fi

# --- the shared stub -----------------------------------------------------------------
"$bench" stub --listen 127.0.0.1:0 >"$out/stub.url" &
stub_pid=$!
trap 'kill "$stub_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s "$out/stub.url" ]] && break; sleep 0.1; done
stub=$(head -n1 "$out/stub.url")
say "HTTP stub at $stub"

# --- the runs ------------------------------------------------------------------------
say "Rill: $instances instances, $starters starters, $workers workers"
"$bench" --instances "$instances" --starters "$starters" --workers "$workers" \
  --stub-url "$stub" --json "$out/rill.json" "$@"

for peer in $peers; do
  case "$peer" in
    dbos)
      say "DBOS on PostgreSQL $pg_version: $instances instances, $starters starters, $workers workers"
      # A clean database before each run, as for Rill.
      runuser -u postgres -- psql -qc "DROP DATABASE IF EXISTS dbos_bench" -c "CREATE DATABASE dbos_bench"
      "$out/venv/bin/python" "$here/dbos/bench.py" \
        --db "postgresql://postgres:bench@localhost:5432/dbos_bench" --stub "$stub" \
        --instances "$instances" --starters "$starters" --workers "$workers" \
        --json "$out/dbos.json"
      ;;
    bpmn-engine)
      say "bpmn-engine (in memory): $instances instances, $starters starters, $workers workers"
      node "$here/bpmn-engine/bench.mjs" --bpmn "$root/bench/processes/two-rest-calls.bpmn" \
        --stub "$stub" --instances "$instances" --starters "$starters" --workers "$workers" \
        --json "$out/bpmn-engine.json"
      ;;
    *) echo "unknown peer $peer" >&2; exit 2 ;;
  esac
done

# --- the comparison ------------------------------------------------------------------
say "summary (instances/s at $instances instances, since the first start)"
python3 - "$out" $peers <<'EOF'
import json, sys
out, peers = sys.argv[1], sys.argv[2:]
rill = json.load(open(f"{out}/rill.json"))["median"][-1]
print(f"{'system':<14} {'inst/s':>8} {'p99 ms':>9}  Rill / system")
print(f"{'rill':<14} {rill['instances_per_s']:8.0f} {rill['latency']['p99_ms']:9.1f}")
for peer in peers:
    last = json.load(open(f"{out}/{peer}.json"))["milestones"][-1]
    ratio = rill["instances_per_s"] / last["instances_per_s"]
    print(f"{peer:<14} {last['instances_per_s']:8.0f} {last['latency']['p99_ms']:9.1f}  {ratio:.1f}")
EOF
