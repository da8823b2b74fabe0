#!/usr/bin/env bash
# First-page latency of process instance searches through a real `rill standalone`'s
# REST API, over a history filled by `history-bench` (docs/benchmarks.md, "History
# search"). The store is filled offline into partition 1 of a fresh data directory (the
# broker's own writer, see bench/src/bin/history-bench.rs); the standalone then serves it.
#
#   bench/history-rest.sh [INSTANCES] [REPEAT]      # defaults: 1000000 200
#
# Needs the binaries built: cargo build --release -p rill -p rill-bench (or set BIN to
# the directory holding `rill` and `history-bench`, e.g. target/debug).
set -euo pipefail
instances="${1:-1000000}"
repeat="${2:-200}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${BIN:-${CARGO_TARGET_DIR:-$root/target}/release}"
data="$(mktemp -d /var/tmp/history-rest.XXXXXX)"
port=$((20000 + RANDOM % 10000))
pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$data"; }
trap cleanup EXIT

"$bin/history-bench" --instances "$instances" --repeat 20 --dir "$data/partition-1"
# The filled dates lie in the past: a long retention keeps them.
"$bin/rill" standalone --data-dir "$data" --set cluster.partitions-count=1 \
  --set history.retention=3650days --set gateway.host=127.0.0.1 \
  --set gateway.rest-port="$port" --set monitoring.port=$((port + 1)) \
  --set gateway.grpc-port=$((port + 2)) >"$data/rill.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$((port + 1))/ready" >/dev/null && break
  sleep 0.1
done

# One shape: a JSON search body; prints p50, p99 and max of the request's total time.
shape() {
  local name="$1" body="$2" times
  times="$(for i in $(seq 1 $((repeat + 10))); do
    process="process-$((i % 20))"
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' \
      "http://127.0.0.1:$port/v2/process-instances/search" \
      -H 'content-type: application/json' -d "${body//PROCESS/$process}"
  done | tail -n "$repeat")"
  if grep -qv '^200 ' <<<"$times"; then
    echo "$name: a search failed: $(grep -v '^200 ' <<<"$times" | head -1)" >&2
    exit 1
  fi
  sort -n -k2 <<<"$times" | awk -v name="$name" '{ t[NR] = $2 * 1000 } END {
    printf "%-48s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n", name,
      t[int((NR - 1) * 0.5 + 0.5) + 1], t[int((NR - 1) * 0.99 + 0.5) + 1], t[NR] }'
}

echo "REST, first page (100 items) of ${instances} instances, ${repeat} requests each:"
shape "process + ACTIVE, default sort" '{"filter": {"processDefinitionId": "PROCESS", "state": "ACTIVE"}}'
shape "process + COMPLETED, default sort" '{"filter": {"processDefinitionId": "PROCESS", "state": "COMPLETED"}}'
shape "process + COMPLETED, startDate ASC" '{"filter": {"processDefinitionId": "PROCESS", "state": "COMPLETED"}, "sort": [{"field": "startDate", "order": "ASC"}]}'
shape "process + TERMINATED, startDate DESC" '{"filter": {"processDefinitionId": "PROCESS", "state": "TERMINATED"}, "sort": [{"field": "startDate", "order": "DESC"}]}'
