"""Peer: PyPI `dbos` (durable execution) on a local PostgreSQL, same shape as rill-bench.

A workflow of two steps; each step is a GET of the shared HTTP stub with a random `v`.
S starter threads enqueue workflows on a DBOS queue (a durable write each); the queue
runs them with `worker_concurrency` W, as W job workers would. An instance has
completed when its workflow function returns (DBOS then records the result; counting a
little early favours the peer).

Usage: python bench.py --db URL --stub URL [--instances N] [--starters S] [--workers W]
       [--json FILE]
"""

import argparse
import http.client
import json
import os
import random
import threading
import time
import urllib.parse

from dbos import DBOS, DBOSConfig

parser = argparse.ArgumentParser()
parser.add_argument("--db", required=True, help="PostgreSQL URL of the (fresh) system database")
parser.add_argument("--stub", required=True)
parser.add_argument("--instances", type=int, default=100_000)
parser.add_argument("--starters", type=int, default=8)
parser.add_argument("--workers", type=int, default=16)
parser.add_argument("--polling-interval", type=float, default=0.01,
                    help="seconds between the queue's polls for runnable workflows")
parser.add_argument("--json")
args = parser.parse_args()

stub = urllib.parse.urlsplit(args.stub)
local = threading.local()


def stub_connection() -> http.client.HTTPConnection:
    # One keep-alive connection per thread, as a pooled HTTP client would hold.
    conn = getattr(local, "conn", None)
    if conn is None:
        conn = local.conn = http.client.HTTPConnection(stub.hostname, stub.port, timeout=30)
    return conn


@DBOS.step()
def rest_call() -> int:
    conn = stub_connection()
    conn.request("GET", f"{stub.path or '/'}?v={random.getrandbits(52)}")
    response = conn.getresponse()
    response.read()
    return response.status


lock = threading.Lock()
latencies: list[float] = []
done = threading.Event()
milestones = []
m = 1000
while m < args.instances:
    milestones.append(m)
    m *= 10
milestones.append(args.instances)
reached = []
first_start = 0.0
cpu0 = 0.0


def postgres_cpu_seconds() -> float:
    """CPU seconds of every process named postgres (the server and its backends)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if name.startswith("postgres"):
            fields = stat[stat.rfind(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])
    return total / ticks


pg_cpu0 = 0.0


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    rank = max(1, min(len(values), int(-(-p * len(values) // 100))))
    return values[rank - 1]


def record(t0: float) -> None:
    now = time.monotonic()
    with lock:
        latencies.append((now - t0) * 1000)
        n = len(latencies)
        if len(reached) < len(milestones) and n == milestones[len(reached)]:
            elapsed = now - first_start
            ordered = sorted(latencies)
            times = os.times()
            reached.append({
                "instances": n,
                "elapsed_s": elapsed,
                "instances_per_s": n / elapsed,
                "jobs_per_s": 2 * n / elapsed,
                "latency": {
                    "p50_ms": percentile(ordered, 50),
                    "p99_ms": percentile(ordered, 99),
                    "max_ms": ordered[-1],
                },
                "cpu_s": times.user + times.system - cpu0,
                "postgres_cpu_s": postgres_cpu_seconds() - pg_cpu0,
            })
        if n >= args.instances:
            done.set()


@DBOS.workflow()
def two_rest_calls(t0: float) -> None:
    rest_call()
    rest_call()
    record(t0)


def main() -> None:
    global first_start, cpu0, pg_cpu0
    config: DBOSConfig = {
        "name": "rill-bench-peer",
        "system_database_url": args.db,
        "log_level": "WARNING",
        # Enough connections for the starters and the workers.
        "sys_db_pool_size": args.starters + args.workers + 4,
    }
    DBOS(config=config)
    DBOS.launch()
    queue = DBOS.register_queue(
        "bench",
        worker_concurrency=args.workers,
        polling_interval_sec=args.polling_interval,
    )

    next_index = [0]
    index_lock = threading.Lock()

    def starter() -> None:
        while True:
            with index_lock:
                if next_index[0] >= args.instances:
                    return
                next_index[0] += 1
            queue.enqueue(two_rest_calls, time.monotonic())

    times = os.times()
    cpu0 = times.user + times.system
    pg_cpu0 = postgres_cpu_seconds()
    first_start = time.monotonic()
    threads = [threading.Thread(target=starter) for _ in range(args.starters)]
    for t in threads:
        t.start()
    last, last_change = -1, time.monotonic()
    while not done.wait(5):
        with lock:
            n = len(latencies)
        print(f"  {time.monotonic() - first_start:6.1f} s: {n} completed", flush=True)
        if n != last:
            last, last_change = n, time.monotonic()
        elif time.monotonic() - last_change > 60:
            raise SystemExit(f"no progress for 60 s ({n} of {args.instances})")
    for t in threads:
        t.join()

    for m in reached:
        print(
            f"{m['instances']:>9} {m['elapsed_s']:8.2f} s {m['instances_per_s']:8.0f} inst/s "
            f"{m['jobs_per_s']:8.0f} jobs/s  p50 {m['latency']['p50_ms']:.1f} ms  "
            f"p99 {m['latency']['p99_ms']:.1f} ms  max {m['latency']['max_ms']:.1f} ms  "
            f"cpu {m['cpu_s']:.1f} s  postgres cpu {m['postgres_cpu_s']:.1f} s",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "system": "dbos",
                "durable": True,
                "instances": args.instances,
                "starters": args.starters,
                "workers": args.workers,
                "milestones": reached,
            }, f, indent=2)
    DBOS.destroy(workflow_completion_timeout_sec=0)


if __name__ == "__main__":
    main()
