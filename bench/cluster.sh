#!/usr/bin/env bash
# The two-REST-calls benchmark on three brokers with replication factor 3 on this one
# machine, then on one broker with the same partitions, in the same run; prints the
# ratio (issue 6's bar: the cluster reaches at least half the single-broker figure).
#
#   cargo build --release -p rill -p rill-bench
#   bench/cluster.sh                      # 20,000 instances, 3 partitions
#   INSTANCES=5000 PARTITIONS=1 bench/cluster.sh
#
# Both sides run at saturation: STARTERS create requests in flight (64; rill-bench's own
# default is 8). A closed loop with few requests in flight measures latency, not capacity,
# and a cluster answers each command a replication round later than one broker; the sweep
# that chose 64 is in docs/benchmarks.md.
#
# Environment:
#   INSTANCES (20000), PARTITIONS (3), STARTERS (64)
#   RUNS (1): the median of RUNS runs on each side; every run starts from empty data
#     directories on both sides (three fresh brokers, one fresh standalone)
#   EXPORT (off | jsonl)
#   BENCH_ARGS: more rill-bench arguments for both sides (e.g. "--workers 1"; the
#     starters are STARTERS)
#   BROKER_SET: more KEY=VALUE settings for every broker, the single one too
#   CLUSTER_SET: settings for the three cluster brokers only. By default each one's thread
#     pools are sized to its share of the machine (one cpu and one io thread), as an
#     operator would size three brokers on two cores; CLUSTER_SET= keeps the defaults (2 + 2)
#   BASE_PORT (28500): brokers use BASE_PORT+10*i+1..4, below the kernel's ephemeral port
#     range, so no outgoing connection holds one of them
#   CARGO_TARGET_DIR as for cargo; RILL and RILL_BENCH for other binaries
#   OUT: where results go (a new directory under /var/tmp); each cluster run's brokers
#     keep their data and logs in OUT/run-N, with each broker's /metrics from the end of
#     the run
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
rill=${RILL:-$target/release/rill}
bench=${RILL_BENCH:-$target/release/rill-bench}
instances=${INSTANCES:-20000}
partitions=${PARTITIONS:-3}
runs=${RUNS:-1}
starters=${STARTERS:-64}
export_mode=${EXPORT:-off}
base=${BASE_PORT:-28500}
out=${OUT:-$(mktemp -d /var/tmp/rill-cluster-bench.XXXXXX)}
mkdir -p "$out"

for binary in "$rill" "$bench"; do
  [[ -x $binary ]] || { echo "missing $binary: cargo build --release -p rill -p rill-bench" >&2; exit 1; }
done

contacts="127.0.0.1:$((base + 2)),127.0.0.1:$((base + 12)),127.0.0.1:$((base + 22))"
pids=()
stop_brokers() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_brokers EXIT

common=()
for setting in ${BROKER_SET:-}; do common+=(--set "$setting"); done
cluster_only=()
for setting in ${CLUSTER_SET-threads.cpu-thread-count=1 threads.io-thread-count=1}; do
  cluster_only+=(--set "$setting")
done

# The same load for both sides.
load=(--instances "$instances" --starters "$starters")
for arg in ${BENCH_ARGS:-}; do load+=("$arg"); done

cpu_seconds() { # utime + stime of a process, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

# One cluster run: three brokers on empty data directories in $out/run-$1, the load on
# broker 0's gateway, then each broker's CPU and /metrics, and the brokers stopped.
cluster_run() {
  local run=$1 dir=$out/run-$1
  mkdir -p "$dir"
  for i in 0 1 2; do
    extra=("${common[@]}" "${cluster_only[@]}")
    if [[ $export_mode == jsonl ]]; then
      extra+=(--set "exporters.jsonl.path=$dir/broker-$i/records.jsonl")
    fi
    RILL_LOG=warn "$rill" broker --data-dir "$dir/broker-$i" \
      --set cluster.node-id=$i --set cluster.size=3 --set cluster.replication-factor=3 \
      --set cluster.partitions-count="$partitions" --set cluster.host=127.0.0.1 \
      --set cluster.command-port=$((base + 1 + 10 * i)) \
      --set cluster.internal-port=$((base + 2 + 10 * i)) \
      --set cluster.initial-contact-points="$contacts" \
      --set gateway.rest-port=$((base + 3 + 10 * i)) \
      --set gateway.grpc-port=$((base + 5 + 10 * i)) \
      --set monitoring.port=$((base + 4 + 10 * i)) \
      "${extra[@]}" >"$dir/broker-$i.log" 2>&1 &
    pids+=($!)
  done

  # Ready = every partition has a leader, as each broker sees it.
  for i in 0 1 2; do
    for _ in $(seq 1 240); do
      if curl -fs "http://127.0.0.1:$((base + 4 + 10 * i))/ready" >/dev/null; then break; fi
      sleep 0.25
    done
    curl -fs "http://127.0.0.1:$((base + 4 + 10 * i))/ready" >/dev/null \
      || { echo "broker $i is not ready; see $dir/broker-$i.log" >&2; exit 1; }
  done

  local cpu_before=0 cpu_after=0 cpu
  for pid in "${pids[@]}"; do cpu_before=$(echo "$cpu_before + $(cpu_seconds "$pid")" | bc); done
  echo "== three brokers, replication factor 3, $partitions partition(s), $starters starters, export $export_mode, run $run/$runs"
  "$bench" --url "http://127.0.0.1:$((base + 3))" --broker-pid "${pids[0]}" \
    "${load[@]}" --json "$out/cluster-$run.json" | tee "$dir/cluster.txt"
  for i in 0 1 2; do
    cpu=$(cpu_seconds "${pids[$i]}")
    echo "broker $i: $cpu s CPU in all (leader of: $(curl -fs "http://127.0.0.1:$((base + 3 + 10 * i))/v2/topology" \
      | python3 -c "import json,sys; t=json.load(sys.stdin); print(' '.join(str(p['partitionId']) for b in t['brokers'] if b['nodeId']==$i for p in b['partitions'] if p['role']=='leader'))" 2>/dev/null))"
    cpu_after=$(echo "$cpu_after + $cpu" | bc)
    curl -fs "http://127.0.0.1:$((base + 4 + 10 * i))/metrics" >"$dir/broker-$i.metrics" || true
  done
  echo "$cpu_after - $cpu_before" | bc >"$out/cluster-$run.cpu"
  stop_brokers
}

for run in $(seq 1 "$runs"); do cluster_run "$run"; done

echo "== one broker, $partitions partition(s), $starters starters, export $export_mode"
"$bench" --partitions "$partitions" --export "$export_mode" --runs "$runs" \
  "${load[@]}" "${common[@]}" --json "$out/single.json" | tee "$out/single.txt"

python3 - "$out" "$runs" <<'EOF'
import json, sys
out, runs = sys.argv[1], int(sys.argv[2])
# Each cluster run is its own report; the median run by rate stands for the cluster.
cluster_runs = list(
    (json.load(open(f"{out}/cluster-{r}.json"))["median"][-1],
     float(open(f"{out}/cluster-{r}.cpu").read()))
    for r in range(1, runs + 1))
cluster_runs.sort(key=lambda run: run[0]["instances_per_s"])
cluster, cluster_cpu = cluster_runs[len(cluster_runs) // 2]
single = json.load(open(f"{out}/single.json"))["median"][-1]
print()
if runs > 1:
    print("three brokers, each run: " + " / ".join(
        f"{c['instances_per_s']:.0f}" for c, _ in cluster_runs) + " instances/s")
print(f"three brokers: {cluster['instances_per_s']:.0f} instances/s, "
      f"p99 {cluster['latency']['p99_ms']:.1f} ms, CPU of all three brokers {cluster_cpu:.1f} s")
print(f"one broker:    {single['instances_per_s']:.0f} instances/s, "
      f"p99 {single['latency']['p99_ms']:.1f} ms, broker CPU {single['broker_cpu_s']:.1f} s")
print(f"three ÷ one:   {cluster['instances_per_s'] / single['instances_per_s']:.2f}")
EOF
echo "results in $out"
