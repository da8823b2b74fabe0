#!/usr/bin/env bash
# How long a cluster change takes when a replica that moves holds a large state: the
# snapshot transfer of issue 26's bar (≤ 30 s for a partition of 1 GB).
#
#   cargo build --release -p rill
#   bench/scale-transfer.sh                                # 1 GB per partition, 2 → 3 brokers
#   STATE_MB=256 bench/scale-transfer.sh
#   CHANGE="--brokers 3 --partitions 3" bench/scale-transfer.sh
#
# Two brokers hold two partitions with replication factor 2. Instances that wait on a job
# nobody takes are created, each with PAYLOAD_KB of random (incompressible) variables,
# until each partition holds about STATE_MB. A third broker starts (node id 2, the
# settings of the others: what a StatefulSet scale-up gives it), then `rill cluster
# scale $CHANGE` runs. With round-robin placement partition 2 moves from brokers {0, 1}
# to {1, 2}: broker 2 receives its snapshot and the log after it, then broker 0 leaves.
# Reported: the load, the size of the moved replica on disk (log, state, snapshots), and
# the change's duration from the request to the management API showing it completed,
# with each step's time and the phases of the replica move the brokers logged
# (`bench/change-steps.py`).
#
# Environment:
#   STATE_MB (1024), PAYLOAD_KB (1024), CHANGE ("--brokers 3"), STARTERS (4)
#   SETTINGS: more settings for every broker, e.g. "raft.log-retention-entries=50" (with
#     STATE_MB below 1024 the default retention of 1000 entries of about 1 MB keeps the
#     whole log, and the new replica gets the log instead of a snapshot)
#   BROKER_LOG: the brokers' RILL_LOG (warn, and info for rill_raft and rill_broker)
#   BASE_PORT (28700): broker i uses BASE_PORT+10*i+1..5
#   CARGO_TARGET_DIR as for cargo; RILL for another binary
#   OUT: where data, logs and results go (a new directory under /var/tmp); removed
#     at the end unless KEEP=1 (a run writes about 4 × STATE_MB of data per broker)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
rill=${RILL:-$target/release/rill}
state_mb=${STATE_MB:-1024}
payload_kb=${PAYLOAD_KB:-1024}
change=${CHANGE:---brokers 3}
starters=${STARTERS:-4}
base=${BASE_PORT:-28700}
out=${OUT:-$(mktemp -d /var/tmp/rill-scale-transfer.XXXXXX)}
mkdir -p "$out"
[[ -x $rill ]] || { echo "missing $rill: cargo build --release -p rill" >&2; exit 1; }

contacts="127.0.0.1:$((base + 2)),127.0.0.1:$((base + 12))"
extra=()
for setting in ${SETTINGS:-}; do extra+=(--set "$setting"); done
pids=()
finish() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ ${KEEP:-0} != 1 ]]; then rm -rf "$out"/broker-*; fi
}
trap finish EXIT

start_broker() { # node id
  local i=$1
  RILL_LOG=${BROKER_LOG:-warn,rill_raft=info,rill_broker=info} "$rill" broker --data-dir "$out/broker-$i" \
    --set cluster.node-id="$i" --set cluster.size=2 --set cluster.replication-factor=2 \
    --set cluster.partitions-count=2 --set cluster.host=127.0.0.1 \
    --set cluster.command-port=$((base + 1 + 10 * i)) \
    --set cluster.internal-port=$((base + 2 + 10 * i)) \
    --set cluster.initial-contact-points="$contacts" \
    --set gateway.rest-port=$((base + 3 + 10 * i)) \
    --set gateway.grpc-port=$((base + 5 + 10 * i)) \
    --set monitoring.port=$((base + 4 + 10 * i)) \
    --set data.snapshot-period=30s \
    --set gateway.max-message-size=$((payload_kb * 2 + 64))KB "${extra[@]}" \
    >"$out/broker-$i.log" 2>&1 &
  pids+=($!)
}

wait_ready() { # node id
  for _ in $(seq 1 240); do
    if curl -fs "http://127.0.0.1:$((base + 4 + 10 * $1))/ready" >/dev/null; then return; fi
    sleep 0.25
  done
  echo "broker $1 is not ready; see $out/broker-$1.log" >&2
  exit 1
}

start_broker 0
start_broker 1
wait_ready 0
wait_ready 1

api=http://127.0.0.1:$((base + 3))
management=http://127.0.0.1:$((base + 4))
instances=$((state_mb * 1024 * 2 / payload_kb))
echo "== loading $instances instances of $payload_kb KB (about $state_mb MB per partition)"
python3 - "$api" "$instances" "$payload_kb" "$starters" <<'EOF'
import base64, concurrent.futures, json, os, sys, time, urllib.request
api, instances, payload_kb, starters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
bpmn = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="hold" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="wait"><bpmn:extensionElements><zeebe:taskDefinition type="nobody" />
      </bpmn:extensionElements><bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing></bpmn:serviceTask>
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>
"""
boundary = "rillbench"
body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"resources\"; filename=\"hold.bpmn\"\r\n"
        "Content-Type: application/xml\r\n\r\n").encode() + bpmn + f"\r\n--{boundary}--\r\n".encode()
request = urllib.request.Request(f"{api}/v2/deployments", data=body, method="POST",
    headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
urllib.request.urlopen(request, timeout=60).read()
time.sleep(2)  # the deployment reaches the other partition

def create(_):
    blob = base64.b64encode(os.urandom(payload_kb * 1024 * 3 // 4)).decode()
    data = json.dumps({"processDefinitionId": "hold", "variables": {"document": blob}}).encode()
    for attempt in range(20):
        try:
            request = urllib.request.Request(f"{api}/v2/process-instances", data=data, method="POST",
                                             headers={"Content-Type": "application/json"})
            urllib.request.urlopen(request, timeout=60).read()
            return
        except Exception as e:  # back-pressure or a leader change: try again
            time.sleep(0.2 * (attempt + 1))
            error = e
    raise SystemExit(f"cannot create an instance: {error}")

started = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(starters) as pool:
    list(pool.map(create, range(instances)))
elapsed = time.monotonic() - started
print(f"loaded {instances} instances in {elapsed:.1f} s ({instances * payload_kb / 1024 / elapsed:.1f} MB/s)")
EOF

# The moved replica's size: partition 2's log, state and snapshots on broker 1 (it stays).
sleep 35 # a snapshot after the load, so the log behind it is purged
sizes() { # directory of a replica
  local parts=""
  for part in log state snapshots; do
    parts+="${parts:+, }$part $(du -sm "$1/$part" 2>/dev/null | cut -f1) MB"
  done
  echo "$(du -sm "$1" 2>/dev/null | cut -f1) MB on disk ($parts)"
}
echo "partition 2 on broker 1: $(sizes "$out/broker-1/partition-2")"

start_broker 2
sleep 2
echo "== rill cluster scale $change"
started=$(date +%s.%N)
# shellcheck disable=SC2086
"$rill" cluster scale $change --management "$management" >"$out/change.txt"
python3 "$root/bench/change-steps.py" "$management" "$started" "$out"
echo "partition 2 on broker 1: $(sizes "$out/broker-1/partition-2")"
echo "partition 2 on broker 2: $(sizes "$out/broker-2/partition-2")"
