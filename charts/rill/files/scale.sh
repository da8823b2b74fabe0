#!/bin/sh
# Scales a running Rill cluster to the release's values through the cluster management
# API on the brokers' monitoring port (the chart's upgrade hook Jobs; docs/kubernetes.md,
# "Scale out"). Plain POSIX sh with the `rill` CLI: the image has no curl or jq.
#
#   scale.sh start   before brokers are added: starts the change and returns once the
#                    cluster recorded it (the new brokers do not exist yet; the change
#                    waits for them)
#   scale.sh apply   before brokers are removed: starts the change and waits until it is
#                    done, so their replicas have moved off before their pods go
#   scale.sh wait    after brokers are added: waits until no change is in progress
#
# "apply" and "wait" end by checking that the cluster has RILL_SCALE_BROKERS brokers,
# RILL_SCALE_PARTITIONS partitions and RILL_SCALE_REPLICATION_FACTOR replicas of each;
# "start" does nothing when it has them already. RILL_SCALE_MANAGEMENT lists monitoring
# addresses (http://host:9600), tried in turn; RILL_SCALE_TIMEOUT bounds the whole run
# in seconds, RILL_SCALE_REQUEST_TIMEOUT each call of the CLI; RILL_SCALE_INTERVAL is
# the pause between polls.
set -eu

mode="${1:-}"
case "$mode" in
  start | apply | wait) ;;
  *)
    echo "rill scale: usage: scale.sh start|apply|wait" >&2
    exit 64
    ;;
esac
brokers="$RILL_SCALE_BROKERS"
partitions="$RILL_SCALE_PARTITIONS"
replication="$RILL_SCALE_REPLICATION_FACTOR"
timeout="${RILL_SCALE_TIMEOUT:-600}"
interval="${RILL_SCALE_INTERVAL:-5}"
deadline=$(($(date +%s) + timeout))
wanted="$brokers broker(s), $partitions partition(s), replication factor $replication"

say() {
  echo "rill scale: $*" >&2
}

# Without the CLI every call would read as "no broker answers" until the timeout.
if ! command -v rill >/dev/null 2>&1; then
  say "FAILED: the rill CLI is not on PATH ($PATH): the image is not Rill's, or PATH was changed"
  exit 127
fi

fail() {
  say "FAILED: $*"
  if [ -n "${table:-}" ]; then
    printf '%s\n' "$table" >&2
  fi
  exit 1
}

# The CLI waits as long as a broker keeps the connection open: bound each call.
rill_cli() {
  timeout "${RILL_SCALE_REQUEST_TIMEOUT:-60}" rill cluster "$@" 2>&1 || {
    code=$?
    if [ "$code" -eq 124 ]; then
      echo "no answer within ${RILL_SCALE_REQUEST_TIMEOUT:-60}s"
    fi
    return "$code"
  }
}

expired() {
  [ "$(date +%s)" -ge "$deadline" ]
}

# Reads the configuration from the first broker that answers, into $table and $at;
# retries until the deadline while none does (brokers restarting).
read_status() {
  while :; do
    for address in $RILL_SCALE_MANAGEMENT; do
      if out=$(rill_cli status --management "$address"); then
        table="$out"
        at="$address"
        return 0
      fi
      last_error="$out"
    done
    if expired; then
      fail "no broker's management API answered within ${timeout}s ($RILL_SCALE_MANAGEMENT): $last_error"
    fi
    say "no broker answers yet ($last_error); retrying"
    sleep "$interval"
  done
}

in_progress() {
  printf '%s\n' "$table" | grep -q '^change [0-9]* in progress'
}

# "<brokers> <partitions> <replicas per partition, or 'uneven'>" from the status table.
shape() {
  printf '%s\n' "$table" | awk '
    /^BROKER / { listing = 1; next }
    /^change [0-9]+ in progress/ || /^no change in progress/ { listing = 0 }
    listing && $1 ~ /^[0-9]+$/ {
      count++
      for (i = 3; i <= NF; i++) {
        split($i, replica, ":")
        replicas[replica[1] + 0]++
        if (replica[1] + 0 > highest) highest = replica[1] + 0
      }
    }
    END {
      factor = replicas[1] + 0
      for (p = 1; p <= highest; p++) if (replicas[p] + 0 != factor) factor = "uneven"
      print count + 0, highest + 0, factor
    }'
}

reached() {
  [ "$(shape)" = "$brokers $partitions $replication" ]
}

wait_until_idle() {
  while in_progress; do
    if expired; then
      fail "the change did not complete within ${timeout}s; it goes on in the cluster: watch it with \`rill cluster status --management $at\`"
    fi
    say "$(printf '%s\n' "$table" | grep '^change [0-9]* in progress')"
    sleep "$interval"
    read_status
  done
}

check_reached() {
  if ! reached; then
    set -- $(shape)
    fail "the cluster has $1 broker(s), $2 partition(s), replication factor $3, not $wanted: another change ran (see \"last change\" below); run the upgrade again"
  fi
  say "the cluster has $wanted"
}

# Starts the change; answers 0 once recorded, 1 when another change came first.
start_change() {
  set -- --brokers "$brokers" --partitions "$partitions" --replication-factor "$replication"
  if ! plan=$(rill_cli scale "$@" --dry-run --management "$at"); then
    case "$plan" in
      *409*) return 1 ;;
    esac
    fail "the brokers refuse to scale to $wanted: $plan"
  fi
  printf '%s\n' "$plan" >&2
  if ! started=$(rill_cli scale "$@" --management "$at"); then
    case "$started" in
      *409*) return 1 ;;
    esac
    fail "the change to $wanted could not be started: $started"
  fi
  printf '%s\n' "$started" >&2
  return 0
}

# PID 1 of the Job's pod: without a handler, SIGTERM (the Job's deadline) would be ignored.
trap 'say "stopped"; exit 143' TERM INT

say "mode $mode, to $wanted"
read_status
case "$mode" in
  wait)
    wait_until_idle
    check_reached
    ;;
  start | apply)
    while :; do
      if in_progress; then
        if [ "$mode" = start ]; then
          # It may be this upgrade's own change, started by an earlier attempt that
          # failed before the new brokers were created: they are about to be, and the
          # post-upgrade hook checks where the change ends.
          say "a change is already in progress; leaving it to complete:"
          printf '%s\n' "$table" >&2
          exit 0
        fi
        say "a change is already in progress; waiting for it first"
        wait_until_idle
      fi
      if reached; then
        say "nothing to change: the cluster has $wanted"
        exit 0
      fi
      if start_change; then
        break
      fi
      if expired; then
        fail "the brokers kept answering that another change is in progress for ${timeout}s"
      fi
      say "another change was started first; waiting for it"
      sleep "$interval"
      read_status
    done
    if [ "$mode" = apply ]; then
      read_status
      wait_until_idle
      check_reached
    fi
    ;;
esac
