#!/usr/bin/env bash
# The two-REST-calls benchmark with history off, then with Elasticsearch export to a fresh
# `rill-es-test-server` on this machine, alternated PAIRS times; prints each pair's ratio
# and the median (issue 7's bar: history on reaches at least 80% of history off).
#
#   cargo build --release -p rill -p rill-bench -p rill-es-test-server
#   bench/es-export.sh                    # 5 pairs of 20,000 instances
#   PAIRS=3 INSTANCES=10000 bench/es-export.sh
#
# Environment: PAIRS (5), INSTANCES (20000), ES_PORT (29200, below the ephemeral port range), CARGO_TARGET_DIR as for
# cargo, OUT for the results (a new directory under /var/tmp).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
bench=$target/release/rill-bench
server=$target/release/rill-es-test-server
pairs=${PAIRS:-5}
instances=${INSTANCES:-20000}
port=${ES_PORT:-29200}
out=${OUT:-$(mktemp -d /var/tmp/rill-es-bench.XXXXXX)}
mkdir -p "$out"

for binary in "$target/release/rill" "$bench" "$server"; do
  [[ -x $binary ]] || { echo "missing $binary: cargo build --release -p rill -p rill-bench -p rill-es-test-server" >&2; exit 1; }
done

es_pid=
stop_server() {
  if [[ -n $es_pid ]]; then kill "$es_pid" 2>/dev/null || true; wait "$es_pid" 2>/dev/null || true; fi
  es_pid=
}
trap stop_server EXIT

cpu_seconds() { # utime + stime of a process, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

ratios=()
for pair in $(seq 1 "$pairs"); do
  "$bench" --instances "$instances" --json "$out/off-$pair.json" >"$out/off-$pair.txt" 2>&1
  "$server" --port "$port" >"$out/server-$pair.log" 2>&1 &
  es_pid=$!
  for _ in $(seq 1 40); do curl -fs "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
  curl -fs "http://127.0.0.1:$port/" >/dev/null \
    || { echo "the test server did not start; see $out/server-$pair.log" >&2; exit 1; }
  "$bench" --instances "$instances" --json "$out/on-$pair.json" \
    --set exporters.elasticsearch.url="http://127.0.0.1:$port" >"$out/on-$pair.txt" 2>&1
  server_cpu=$(cpu_seconds "$es_pid")
  documents=$(curl -fs "http://127.0.0.1:$port/zeebe-record*/_count" | python3 -c "import json,sys; print(json.load(sys.stdin)['count'])")
  stop_server
  report=$(python3 - "$out" "$pair" "$server_cpu" "$documents" <<'EOF'
import json, sys
out, pair, server_cpu, documents = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
def last(name):
    return json.load(open(f"{out}/{name}-{pair}.json"))["median"][-1]
off, on = last("off"), last("on")
ratio = on["instances_per_s"] / off["instances_per_s"]
print(f"pair {pair}: history off {off['instances_per_s']:.0f} instances/s (broker CPU {off['broker_cpu_s']:.1f} s), "
      f"export {on['instances_per_s']:.0f} instances/s (broker CPU {on['broker_cpu_s']:.1f} s, "
      f"test server CPU {server_cpu:.1f} s, {documents} documents): {ratio:.2f}")
print(f"{ratio:.3f}")
EOF
  )
  echo "${report%$'\n'*}"
  ratios+=("${report##*$'\n'}")
done
python3 -c "
import statistics, sys
r = sorted(float(x) for x in sys.argv[1:])
print(f'export / history off: median {statistics.median(r):.2f} of {len(r)} pairs (min {r[0]:.2f}, max {r[-1]:.2f})')
" "${ratios[@]}"
echo "results in $out"
