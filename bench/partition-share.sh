#!/usr/bin/env bash
# How new instances spread over partitions after partitions are added: issue 26's bar
# (after scaling 3 → 6 partitions, each takes 12–22 % of new instances).
#
#   cargo build --release -p rill
#   bench/partition-share.sh
#   FROM=3 TO=6 INSTANCES=3000 REPLICATION=3 bench/partition-share.sh
#
# BROKERS brokers start with FROM partitions, a process (start → end) is deployed, and
# `rill cluster scale --partitions TO` runs. Once the change completes, INSTANCES
# instances are created through every broker's embedded gateway in turn, and the share
# of each partition (from the partition bits of the instance key) is reported.
#
# Environment:
#   BROKERS (3), FROM (3), TO (6), REPLICATION (1), INSTANCES (3000), STARTERS (4)
#   BASE_PORT (28800): broker i uses BASE_PORT+10*i+1..5
#   CARGO_TARGET_DIR as for cargo; RILL for another binary
#   OUT: where data and logs go (a new directory under /var/tmp); removed unless KEEP=1
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
rill=${RILL:-$target/release/rill}
brokers=${BROKERS:-3}
from=${FROM:-3}
to=${TO:-6}
replication=${REPLICATION:-1}
instances=${INSTANCES:-3000}
starters=${STARTERS:-4}
base=${BASE_PORT:-28800}
out=${OUT:-$(mktemp -d /var/tmp/rill-partition-share.XXXXXX)}
mkdir -p "$out"
[[ -x $rill ]] || { echo "missing $rill: cargo build --release -p rill" >&2; exit 1; }

contacts=$(for i in $(seq 0 $((brokers - 1))); do printf '127.0.0.1:%d,' $((base + 2 + 10 * i)); done)
contacts=${contacts%,}
pids=()
finish() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ ${KEEP:-0} != 1 ]]; then rm -rf "$out"; fi
}
trap finish EXIT

for i in $(seq 0 $((brokers - 1))); do
  RILL_LOG=warn "$rill" broker --data-dir "$out/broker-$i" \
    --set cluster.node-id="$i" --set cluster.size="$brokers" \
    --set cluster.replication-factor="$replication" --set cluster.partitions-count="$from" \
    --set cluster.host=127.0.0.1 \
    --set cluster.command-port=$((base + 1 + 10 * i)) \
    --set cluster.internal-port=$((base + 2 + 10 * i)) \
    --set cluster.initial-contact-points="$contacts" \
    --set gateway.rest-port=$((base + 3 + 10 * i)) \
    --set gateway.grpc-port=$((base + 5 + 10 * i)) \
    --set monitoring.port=$((base + 4 + 10 * i)) \
    >"$out/broker-$i.log" 2>&1 &
  pids+=($!)
done
for i in $(seq 0 $((brokers - 1))); do
  for _ in $(seq 1 240); do
    curl -fs "http://127.0.0.1:$((base + 4 + 10 * i))/ready" >/dev/null && break
    sleep 0.25
  done
  curl -fs "http://127.0.0.1:$((base + 4 + 10 * i))/ready" >/dev/null ||
    { echo "broker $i is not ready; see $out/broker-$i.log" >&2; exit 1; }
done

management=http://127.0.0.1:$((base + 4))
echo "== rill cluster scale --partitions $to"
started=$(date +%s.%N)
"$rill" cluster scale --partitions "$to" --management "$management" >"$out/change.txt"
while curl -fs "$management/actuator/cluster" | python3 -c \
    "import json,sys; sys.exit(0 if 'pendingChange' in json.load(sys.stdin) else 1)"; do
  sleep 0.2
done
echo "change done in $(python3 -c "print(f'{$(date +%s.%N) - $started:.1f}')") s"

apis=$(for i in $(seq 0 $((brokers - 1))); do printf 'http://127.0.0.1:%d ' $((base + 3 + 10 * i)); done)
# shellcheck disable=SC2086
python3 - "$instances" "$starters" "$to" $apis <<'EOF'
import collections, concurrent.futures, json, sys, time, urllib.request
instances, starters, partitions, apis = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
bpmn = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"
  targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="share" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:endEvent id="end"><bpmn:incoming>f1</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>
"""
boundary = "rillbench"
body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"resources\"; filename=\"share.bpmn\"\r\n"
        "Content-Type: application/xml\r\n\r\n").encode() + bpmn + f"\r\n--{boundary}--\r\n".encode()
request = urllib.request.Request(f"{apis[0]}/v2/deployments", data=body, method="POST",
    headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
urllib.request.urlopen(request, timeout=60).read()

def create(n):
    data = json.dumps({"processDefinitionId": "share"}).encode()
    for attempt in range(40):
        try:
            request = urllib.request.Request(f"{apis[n % len(apis)]}/v2/process-instances", data=data,
                method="POST", headers={"Content-Type": "application/json"})
            answer = json.loads(urllib.request.urlopen(request, timeout=60).read())
            return int(answer["processInstanceKey"]) >> 51
        except Exception as e:  # the deployment still spreading, back-pressure: again
            time.sleep(0.1 * (attempt + 1))
            error = e
    raise SystemExit(f"cannot create an instance: {error}")

with concurrent.futures.ThreadPoolExecutor(starters) as pool:
    counts = collections.Counter(pool.map(create, range(instances)))
print(f"{instances} instances over {len(apis)} gateways:")
for partition in range(1, partitions + 1):
    print(f"  partition {partition}: {counts[partition]:5d} ({100 * counts[partition] / instances:.1f} %)")
EOF
