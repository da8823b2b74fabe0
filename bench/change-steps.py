#!/usr/bin/env python3
"""Follows a cluster change to its end and prints how long each step took.

    python3 bench/change-steps.py MANAGEMENT_URL STARTED_EPOCH [LOG_DIR]

Polls `GET /actuator/cluster` every 0.1 s until no change is pending. Zeebe's shape has
each completed step's `completedAt` (while the change runs) and no start time: a step
starts when the one before it completed, the first when the change started. With
LOG_DIR, the phases of replica moves that the brokers logged (`broker-*.log`: snapshot
built, sent, received, installed; learner added, caught up; voters changed) follow,
in seconds after the change started.
"""
import datetime
import glob
import json
import re
import sys
import time
import urllib.request

PHASES = re.compile(
    r"replica move:|snapshot (built|sent|received|installed)|sending a snapshot")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def at(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def describe(op):
    fields = [f"{key} {op[key]}" for key in ("brokerId", "partitionId") if key in op]
    return " ".join([op["operation"]] + fields)


def main():
    management, started = sys.argv[1], float(sys.argv[2])
    log_dir = sys.argv[3] if len(sys.argv) > 3 else None
    steps, change_start = [], None
    while True:
        url = f"{management}/actuator/cluster"
        cluster = json.load(urllib.request.urlopen(url, timeout=10))
        pending = cluster.get("pendingChange")
        if pending is None:
            break
        change_start = at(pending["startedAt"])
        steps = pending.get("completed", []) + pending.get("pending", [])
        time.sleep(0.1)
    ended = time.time()
    last = cluster["lastChange"]
    change_start = change_start or at(last["startedAt"])
    print(f"change {last['id']}: {last['status']} in {ended - started:.1f} s "
          f"(recorded: {at(last['completedAt']) - change_start:.1f} s)")
    previous = change_start
    for op in steps:
        # A step not yet seen completed ended with the change.
        done = at(op.get("completedAt") or last["completedAt"])
        print(f"  {describe(op):<38} {done - previous:6.1f} s  (done at +{done - change_start:.1f} s)")
        previous = done
    for broker in cluster["brokers"]:
        partitions = sorted(p["id"] for p in broker["partitions"])
        print(f"  broker {broker['id']}: partitions {partitions}")
    if log_dir is None:
        return
    events = []
    for path in sorted(glob.glob(f"{log_dir}/broker-*.log")):
        broker = path.rsplit("-", 1)[1].split(".")[0]
        with open(path, errors="replace") as log:
            for line in log:
                line = ANSI.sub("", line)
                if not PHASES.search(line):
                    continue
                when = at(line.split()[0])
                if when >= change_start - 1:
                    events.append((when, broker, line.split(": ", 1)[-1].strip()))
    print("phases (from the brokers' logs, seconds after the change started):")
    for when, broker, message in sorted(events):
        print(f"  +{when - change_start:6.1f} s  broker {broker}: {message[:160]}")


if __name__ == "__main__":
    main()
